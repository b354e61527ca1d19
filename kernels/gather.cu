// gather: the batch input of an embedding model, one embedding row per mode.
//
//   layout 0 (ModeMajor): x[b, n·E + e] = table[cells[b,n]·E + e]     (=)
//   layout 1 (RankMajor): x[b, e·N + n] = table[cells[b,n]·E + e]     (=)
//
// Shapes: cells B×N int32 global embedding rows, table R×E, x B×(N·E).
// Guard: a row outside [0, R) writes NaN instead of reading out of bounds.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over the
//   B·N·E elements, 64-bit offsets); no shared memory.
// Atomics: none; deterministic.
// Reference: compute/ref.Gather; DAIN eq. 4 (the concatenated embedding
//   [E¹_{i₁}, …, E^N_{i_N}] of a cell).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
gather(float* __restrict__ x, const float* __restrict__ table, const int32_t* __restrict__ cells,
       int32_t batch, int32_t order, int32_t width, int32_t rows, int32_t layout) {
    const int64_t total = (int64_t)batch * order * width;
    for (int64_t t = dainx::global_index(); t < total; t += dainx::grid_stride()) {  // guard
        const int64_t k = t / width;  // cell-mode pair b·N + n
        const int e = (int)(t - k * width);
        const int32_t row = cells[k];
        const float v = (row >= 0 && row < rows) ? table[(int64_t)row * width + e] : __int_as_float(0x7fc00000);
        int64_t dst = t;
        if (layout == 1) {
            const int64_t b = k / order;
            const int n = (int)(k - b * order);
            dst = b * order * width + (int64_t)e * order + n;
        }
        x[dst] = v;
    }
}
