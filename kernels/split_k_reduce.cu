// split_k_reduce: sums the partial results of a split reduction
// (linear_backward_dw, linear_backward_db) into the output.
//
//   dst[i] (= or += by accumulate) Σ_{z=0}^{S−1} part[z·n + i]
//
// Shapes: part S×n, dst n.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over n,
//   64-bit offsets); no shared memory.
// Atomics: none; deterministic (z summed in increasing order).
// Reference: compute/ref.LinearBackward (dw, db).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
split_k_reduce(float* __restrict__ dst, const float* __restrict__ part, int32_t n, int32_t parts,
               int32_t accumulate) {
    for (int64_t i = dainx::global_index(); i < n; i += dainx::grid_stride()) {  // guard
        float v = 0.f;
        for (int z = 0; z < parts; ++z) v += part[(int64_t)z * n + i];
        dst[i] = accumulate ? dst[i] + v : v;
    }
}
