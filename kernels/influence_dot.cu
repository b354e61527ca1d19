// influence_dot: the TracIn score of each cell against the gradient sum
// G = (gw, gb) of a Linear layer, without forming the per-cell gradient
// ∇_w ℓ_z = dy_zᵀ·x_z; one warp per cell, for small O.
//
//   score[b] += eta · Σ_o dy[b,o]·(Σ_i gw[o,i]·x[b,i] + gb[o])           (+=)
//
// Shapes: dy B×O, x B×I, gw O×I, gb O, score B.
// Launch: block 256 threads (8 warps, one cell each); 1-D grid of any size
//   (warp-stride loop over cells, 64-bit offsets); no shared memory. Cost
//   O·I per cell: for large O use linear_forward (t = x·gwᵀ + gb) then
//   influence_rows.
// Atomics: none; deterministic (butterfly warp sums).
// Reference: compute/ref.InfluenceDot; DAIN eq. 5 (eq:instance:importance)
//   for the last layer, where O = 1 and dy = 2e; Pruthi et al., TracIn,
//   NeurIPS 2020, eq. 3.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
influence_dot(float* __restrict__ score, const float* __restrict__ dy, const float* __restrict__ x,
              const float* __restrict__ gw, const float* __restrict__ gb, int32_t batch, int32_t in,
              int32_t out, float eta) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t b = dainx::global_index() >> 5; b < batch; b += warps) {  // guard (warp-uniform)
        const float* __restrict__ xb = x + b * in;
        float t = 0.f;
        for (int o = 0; o < out; ++o) {
            const float* __restrict__ go = gw + (int64_t)o * in;
            float s = 0.f;
            for (int i = lane; i < in; i += 32) s = fmaf(go[i], xb[i], s);
            s = dainx::warp_sum(s);
            t += dy[b * out + o] * (s + gb[o]);
        }
        if (lane == 0) score[b] += eta * t;
    }
}
