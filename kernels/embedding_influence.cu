// embedding_influence: the embedding part of the TracIn score of each cell,
// against the R×E gradient sum of the embedding table; one warp per cell.
//
//   score[b] += eta · Σ_n Σ_e dx[b, pos(n,e)]·gtable[cells[b,n]·E + e]   (+=)
//   pos(n,e) = n·E + e (layout 0, ModeMajor) or e·N + n (layout 1, RankMajor)
//
// Shapes: dx B×(N·E), cells B×N int32 global rows, gtable R×E, score B.
// Guard: a row outside [0, R) contributes 0.
// Launch: block 256 threads (8 warps, one cell each); 1-D grid of any size
//   (warp-stride loop over cells, 64-bit offsets); no shared memory.
// Atomics: none; deterministic (butterfly warp sums).
// Reference: compute/ref.EmbeddingInfluence; DAIN eq. 5 for the embedding
//   rows (sparse per-cell gradients); Pruthi et al., TracIn, NeurIPS 2020.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
embedding_influence(float* __restrict__ score, const float* __restrict__ dx, const int32_t* __restrict__ cells,
                    const float* __restrict__ gtable, int32_t batch, int32_t order, int32_t width,
                    int32_t rows, int32_t layout, float eta) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    const int ne = order * width;
    for (int64_t b = dainx::global_index() >> 5; b < batch; b += warps) {  // guard (warp-uniform)
        const float* __restrict__ xb = dx + b * ne;
        const int32_t* __restrict__ cb = cells + b * order;
        float s = 0.f;
        for (int k = lane; k < ne; k += 32) {
            const int n = k / width;
            const int e = k - n * width;
            const int32_t row = cb[n];
            if (row < 0 || row >= rows) continue;  // guard
            const int p = layout == 1 ? e * order + n : k;
            s = fmaf(xb[p], gtable[(int64_t)row * width + e], s);
        }
        s = dainx::warp_sum(s);
        if (lane == 0) score[b] += eta * s;
    }
}
