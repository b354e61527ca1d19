// pairwise_forward: the terms of an order-2 factorization machine over the
// gathered embeddings of each cell (Rendle, "Factorization Machines", ICDM
// 2010, eq. 1), one warp per cell.
//
//   y[b] += Σ_n x[b,n,E−1] + Σ_{n<n′} Σ_{k<K} x[b,n,k]·x[b,n′,k]        (+=)
//   K = E−1 factor columns, column E−1 the entity's bias;
//   x[b,n,e] = x[b·N·E + n·E + e] (ModeMajor, as gather writes it)
//
// Lane l takes the factor columns k = l, l+32, …; for each, the running
// prefix p = x[b,0,k] and, for n = 1…N−1, s = fma(x[b,n,k], p, s), then
// p += x[b,n,k]: the pair sum formed directly, without Lemma 3.1's
// difference of squares (which cancels). The lanes' sums are added by a
// butterfly (warp_sum); lane 0 sums the bias column in increasing n and
// adds bias + pairs to y[b].
//
// Shapes: x B×(N·E), y B; N ≥ 1, E ≥ 2.
// Launch: block 256 threads (8 warps, one cell each); 1-D grid of any size
//   (warp-stride loop over cells, 64-bit offsets); no shared memory.
// Atomics: none; deterministic (a fixed order in each lane, butterfly warp
//   sums).
// Reference: compute/ref.PairwiseForward; Rendle, ICDM 2010, eq. 1 and
//   Lemma 3.1.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
pairwise_forward(float* __restrict__ y, const float* __restrict__ x, int32_t batch, int32_t order, int32_t width) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    const int64_t ne = (int64_t)order * width;
    const int k = width - 1;
    for (int64_t b = dainx::global_index() >> 5; b < batch; b += warps) {  // guard (warp-uniform)
        const float* __restrict__ xb = x + b * ne;
        float s = 0.f;
        for (int f = lane; f < k; f += 32) {
            float p = xb[f];
            for (int n = 1; n < order; ++n) {
                const float v = xb[(int64_t)n * width + f];
                s = fmaf(v, p, s);
                p += v;
            }
        }
        s = dainx::warp_sum(s);
        if (lane == 0) {
            float bias = 0.f;
            for (int n = 0; n < order; ++n) bias += xb[(int64_t)n * width + k];
            y[b] += bias + s;
        }
    }
}
