// split_k_reduce: sums the partial results of a split GEMM (linear_forward,
// linear_backward_dx, linear_backward_dw and their tensor-core versions,
// linear_backward_out1, linear_backward_db) in a fixed order and applies the
// GEMM's epilogue.
//
//   v[r,c] = Σ_{z=0}^{S−1} part[z,r,c]   (z increasing), r < R, c < P
//   c < C:  dst[r,c]  (= or += by kEpiAccumulate) ε(v[r,c])   (dst ≠ null)
//   c = C:  dst2[r]   (= or += by kEpiAccumulate) v[r,C]      (P = C + 1,
//                                                             dst2 ≠ null)
//   ε(v) = φ(v + bias[c]) with bias (bias ≠ null) and φ = ReLU if flags has
//   kEpiRelu (2); times [x[r,c] > 0] if flags has kEpiMask (4).
//
// Shapes: part S×R×P, dst R×C, dst2 R, bias C, x R×C; P is C or C + 1.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over
//   R·P, 64-bit offsets); no shared memory.
// Atomics: none; deterministic (z summed in increasing order).
// Reference: compute/ref.LinearForward (y), compute/ref.LinearBackward (dx,
//   dw, db).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
split_k_reduce(float* __restrict__ dst, float* __restrict__ dst2, const float* __restrict__ part,
               const float* __restrict__ bias, const float* __restrict__ x, int32_t rows, int32_t cols,
               int32_t pcols, int32_t parts, int32_t flags) {
    using namespace dainx;
    const int64_t n = (int64_t)rows * pcols;
    const bool accumulate = (flags & kEpiAccumulate) != 0;
    for (int64_t i = global_index(); i < n; i += grid_stride()) {  // guard
        const int64_t r = i / pcols;
        const int c = (int)(i - r * pcols);
        float v = 0.f;
        for (int z = 0; z < parts; ++z) v += part[(int64_t)z * n + i];
        if (c < cols) {
            if (dst == nullptr) continue;
            const int64_t off = r * cols + c;
            if (bias != nullptr) v += bias[c];
            if ((flags & kEpiRelu) && v < 0.f) v = 0.f;
            if ((flags & kEpiMask) && !(x[off] > 0.f)) v = 0.f;
            dst[off] = accumulate ? dst[off] + v : v;
        } else if (dst2 != nullptr) {
            dst2[r] = accumulate ? dst2[r] + v : v;
        }
    }
}
