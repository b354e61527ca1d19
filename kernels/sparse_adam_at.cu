// sparse_adam_at: sparse_adam with the step's two bias-correction constants
// read from device memory when the kernel runs (sc[0] = step = lr/(1−β₁ᵗ),
// sc[1] = rc2 = 1/√(1−β₂ᵗ), as adam_at), so that one launch captured in a
// CUDA graph replays every training step with that step's constants: for
// u < U = count[0] (read on the device), r = rows[u], e < E, i = r·E + e,
//
//   g′ = g[u·E+e] + l2·p[i] if l2 ≠ 0 (coupled L2), else g[u·E+e]
//   m[i] = β₁·m[i] + omb1·g′                                             (=)
//   v[i] = β₂·v[i] + omb2·g′²                                            (=)
//   p[i] −= sc[0]·m[i] / (√v[i]·sc[1] + ε)                               (−=)
//
// with adam's arithmetic (adam.cuh). Rows not listed are not touched.
//
// Shapes: p, m, v R×E (the table); g K×E and rows K (compact); count 1 (a
//   count above K is taken as K); sc 2. Guard: a listed row outside [0, R)
//   is skipped.
// Launch: block 256 threads; 1-D grid of any size, sized for K·E elements
//   since U is on the device (grid-stride loop, 64-bit offsets); no shared
//   memory.
// Atomics: none; deterministic (the rows of a list are distinct).
// Reference: compute/ref.SparseAdam; minimises DAIN eq. 1.
#include "adam.cuh"

extern "C" __global__ void __launch_bounds__(256)
sparse_adam_at(float* __restrict__ p, float* __restrict__ m, float* __restrict__ v, const float* __restrict__ g,
               const int32_t* __restrict__ rows, const int32_t* __restrict__ count, const float* __restrict__ sc,
               int32_t k, int32_t width, int32_t table_rows, float beta1, float beta2, float omb1, float omb2,
               float eps, float l2) {
    dainx::sparse_adam_rows(p, m, v, g, rows, count, k, width, table_rows, beta1, beta2, omb1, omb2, sc[0], sc[1], eps,
                            l2);
}
