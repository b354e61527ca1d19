// linear_backward_dx: the input gradient of a Linear layer, with the ReLU
// mask of the layer below, optionally split over the output width (split-K).
//
//   gridDim.z = 1:  dx[b,i] = (Σ_o dy[b,o]·w[o,i]) · m[b,i]             (=)
//   gridDim.z = S:  part[z,b,i] = Σ_{o ∈ chunk z} dy[b,o]·w[o,i]         (=)
//                   then split_k_reduce adds the S parts in order and
//                   applies the mask into dx.
//   m[b,i] = [x[b,i] > 0] if flags has kEpiMask (4) (x is a ReLU output;
//   NaN gives 0), else 1; chunk z = [z·kchunk, min(O, (z+1)·kchunk)).
//
// Shapes: dy B×O, w O×I, x B×I (read only with the mask), dx B×I,
//   part S×B×I (unused if S = 1).
// Launch: block 256 threads (16×16); grid (⌈B/64⌉, ⌈I/64⌉, S) with
//   S = ⌈O/kchunk⌉; static shared memory 17 408 bytes (common.cuh
//   gemm_64x64). Any B, I, O ≥ 1; edges are guarded. 64-bit offsets.
// Atomics: none; deterministic.
// Reference: compute/ref.LinearBackward (dx); backpropagation through DAIN
//   eq. 4.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kGemmThreads)
linear_backward_dx(float* __restrict__ dx, float* __restrict__ part, const float* __restrict__ dy,
                   const float* __restrict__ w, const float* __restrict__ x, int32_t batch, int32_t in,
                   int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    const int m0 = blockIdx.x * kGemmBM, n0 = blockIdx.y * kGemmBN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)out);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)out);
    float acc[4][4], asum;
    // C(b,i) = Σ_o A(b,o)·B(o,i), A(b,o) = dy[b·O + o], B(o,i) = w[o·I + i].
    gemm_64x64<kKContig, kRContig>(acc, asum, dy, out, w, in, batch, in, m0, n0, k_begin, k_end);
    const bool split = gridDim.z > 1;
    float* __restrict__ dst = split ? part + (int64_t)blockIdx.z * batch * in : dx;
    const bool mask = !split && (flags & kEpiMask) != 0;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty * 4 + i;
        if (m >= batch) continue;  // guard
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx * 4 + j;
            if (n >= in) continue;  // guard
            const int64_t off = (int64_t)m * in + n;
            float v = acc[i][j];
            if (mask && !(x[off] > 0.f)) v = 0.f;
            dst[off] = v;
        }
    }
}
