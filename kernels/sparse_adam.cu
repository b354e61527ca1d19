// sparse_adam: Adam on the rows of an embedding table a batch touched
// (PyTorch's SparseAdam, TensorFlow's LazyAdam), in place: for u < U =
// count[0] (read on the device), r = rows[u], e < E and i = r·E + e,
//
//   g′ = g[u·E+e] + l2·p[i] if l2 ≠ 0 (coupled L2), else g[u·E+e]
//   m[i] = β₁·m[i] + omb1·g′                                             (=)
//   v[i] = β₂·v[i] + omb2·g′²                                            (=)
//   p[i] −= step·m[i] / (√v[i]·rc2 + ε)                                   (−=)
//
// with the constants and the arithmetic of adam, expression for expression,
// so that an element gets the bits adam would give it with the same
// gradient. Rows not listed are not touched (their moments do not decay,
// and L2 does not decay them either).
//
// Shapes: p, m, v R×E (the table); g K×E and rows K (compact, as
//   distinct_rows and compact_rows leave them); count 1 (a count above K is
//   taken as K). Guard: a listed row outside [0, R) is skipped.
// Launch: block 256 threads; 1-D grid of any size, sized for K·E elements
//   since U is on the device (grid-stride loop over the U·E elements,
//   64-bit offsets); no shared memory.
// Atomics: none; deterministic (the rows of a list are distinct).
// Reference: compute/ref.SparseAdam (compute/ref.Adam on each listed row);
//   minimises DAIN eq. 1.
#include "adam.cuh"

extern "C" __global__ void __launch_bounds__(256)
sparse_adam(float* __restrict__ p, float* __restrict__ m, float* __restrict__ v, const float* __restrict__ g,
            const int32_t* __restrict__ rows, const int32_t* __restrict__ count, int32_t k, int32_t width,
            int32_t table_rows, float beta1, float beta2, float omb1, float omb2, float step, float rc2, float eps,
            float l2) {
    dainx::sparse_adam_rows(p, m, v, g, rows, count, k, width, table_rows, beta1, beta2, omb1, omb2, step, rc2, eps,
                            l2);
}
