// mul: the elementwise product of two vectors.
//
//   dst[i] = a[i]·b[i]                                                  (=)
//
// Shapes: dst, a, b n; dst overlaps neither a nor b.
// Launch: block 256 threads; any 1-D grid (grid-stride loop, 64-bit
//   offsets); no shared memory.
// Atomics: none; one float32 rounding per element, so the result is the
//   same bits on every backend.
// Reference: compute/ref.Mul; weights a batch's loss gradient per cell
//   (nn.TrainConfig.NewWeight: delta[b] = w[b]·scale·(pred[b] − y[b])).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
mul(float* __restrict__ dst, const float* __restrict__ a, const float* __restrict__ b, int32_t n) {
    for (int64_t i = dainx::global_index(); i < n; i += dainx::grid_stride()) {  // guard
        dst[i] = a[i] * b[i];
    }
}
