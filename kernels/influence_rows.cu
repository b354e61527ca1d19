// influence_rows: the row reduction that finishes the TracIn score for a
// Linear layer of large O, after linear_forward has computed
// t[b,o] = Σ_i gw[o,i]·x[b,i] + gb[o]; one warp per cell.
//
//   score[b] += eta · Σ_o dy[b,o]·t[b,o]                                 (+=)
//
// Shapes: dy B×O, t B×O, score B.
// Launch: block 256 threads (8 warps, one cell each); 1-D grid of any size
//   (warp-stride loop over cells, 64-bit offsets); no shared memory.
// Atomics: none; deterministic (butterfly warp sums).
// Reference: compute/ref.InfluenceDot; DAIN eq. 5 (eq:instance:importance)
//   for a hidden layer; Pruthi et al., TracIn, NeurIPS 2020, eq. 3.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
influence_rows(float* __restrict__ score, const float* __restrict__ dy, const float* __restrict__ t,
               int32_t batch, int32_t out, float eta) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t b = dainx::global_index() >> 5; b < batch; b += warps) {  // guard (warp-uniform)
        float s = 0.f;
        for (int o = lane; o < out; o += 32) s = fmaf(dy[b * out + o], t[b * out + o], s);
        s = dainx::warp_sum(s);
        if (lane == 0) score[b] += eta * s;
    }
}
