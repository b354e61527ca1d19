// entity_importance: aggregates cell importance into entity importance.
//
//   imp[cells[t,n]] += |score[t]|   for every t < T, n < N              (+=)
//
// Shapes: cells T×N int32 global rows, score T, imp R.
// Guard: a row outside [0, R) is skipped.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over the
//   T·N pairs, 64-bit offsets); no shared memory.
// Atomics: red.add.f32 on imp; the result depends on the order of additions
//   (float rounding only).
// Reference: compute/ref.EntityImportance; DAIN eq. 6 (eq:entity_importance)
//   applied to α_z = |score_z| of eq. 5.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
entity_importance(float* __restrict__ imp, const float* __restrict__ score, const int32_t* __restrict__ cells,
                  int32_t count, int32_t order, int32_t rows) {
    const int64_t total = (int64_t)count * order;
    for (int64_t k = dainx::global_index(); k < total; k += dainx::grid_stride()) {  // guard
        const int32_t row = cells[k];
        if (row < 0 || row >= rows) continue;  // guard
        dainx::atomic_add(&imp[row], fabsf(score[k / order]));
    }
}
