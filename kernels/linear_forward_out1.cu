// linear_forward_out1: a Linear layer with one output (DAIN's output layer),
// a matrix–vector product with one warp per row.
//
//   y[b] = φ(Σ_i x[b,i]·w[i] + bias[0])                                 (=)
//   φ = ReLU (v < 0 ? 0 : v) if flags has kEpiRelu (2), else identity.
//
// Lane l sums i ≡ l (mod 32) in increasing order, then the warp adds the
// 32 lane sums with the butterfly of warp_sum.
//
// Shapes: x B×I, w 1×I, bias 1, y B×1.
// Launch: block 256 threads (8 warps); 1-D grid of any size (grid-stride
//   loop over rows, one warp each); no shared memory. Any B, I ≥ 1; 64-bit
//   offsets.
// Atomics: none; deterministic (fixed order per row).
// Reference: compute/ref.LinearForward with out = 1; DAIN eq. 4.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
linear_forward_out1(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ w,
                    const float* __restrict__ bias, int32_t batch, int32_t in, int32_t flags) {
    using namespace dainx;
    const int lane = threadIdx.x & 31;
    const int64_t warps = grid_stride() >> 5;
    const float b0 = bias[0];
    for (int64_t row = global_index() >> 5; row < batch; row += warps) {  // guard (warp-uniform)
        const float* __restrict__ xr = x + row * in;
        float s0 = 0.f, s1 = 0.f;
        int i = lane;
        for (; i + 32 < in; i += 64) {  // two independent chains
            s0 = fmaf(xr[i], w[i], s0);
            s1 = fmaf(xr[i + 32], w[i + 32], s1);
        }
        if (i < in) s0 = fmaf(xr[i], w[i], s0);  // guard
        float v = warp_sum(s0 + s1) + b0;
        if ((flags & kEpiRelu) && v < 0.f) v = 0.f;
        if (lane == 0) y[row] = v;
    }
}
