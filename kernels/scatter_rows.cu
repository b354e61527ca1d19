// scatter_rows: the adjoint of gather, adding a batch gradient into the
// embedding table.
//
//   layout 0 (ModeMajor): dtable[cells[b,n]·E + e] += dx[b, n·E + e]   (+=)
//   layout 1 (RankMajor): dtable[cells[b,n]·E + e] += dx[b, e·N + n]   (+=)
//
// Shapes: cells B×N int32 global embedding rows, dx B×(N·E), dtable R×E.
// Guard: a row outside [0, R) is skipped.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over the
//   B·N·E elements, 64-bit offsets); no shared memory.
// Atomics: red.add.f32 on dtable; duplicate rows make the result depend on the
//   order of the additions (float rounding only).
// Reference: compute/ref.ScatterRows; the embedding part of the gradient of
//   DAIN eq. 1 through eq. 4.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
scatter_rows(float* __restrict__ dtable, const float* __restrict__ dx, const int32_t* __restrict__ cells,
             int32_t batch, int32_t order, int32_t width, int32_t rows, int32_t layout) {
    const int64_t total = (int64_t)batch * order * width;
    for (int64_t t = dainx::global_index(); t < total; t += dainx::grid_stride()) {  // guard
        const int64_t k = t / width;
        const int e = (int)(t - k * width);
        const int32_t row = cells[k];
        if (row < 0 || row >= rows) continue;  // guard
        int64_t src = t;
        if (layout == 1) {
            const int64_t b = k / order;
            const int n = (int)(k - b * order);
            src = b * order * width + (int64_t)e * order + n;
        }
        dainx::atomic_add(&dtable[(int64_t)row * width + e], dx[src]);
    }
}
