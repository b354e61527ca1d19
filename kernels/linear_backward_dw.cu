// linear_backward_dw: the weight gradient of a Linear layer, optionally
// split over the batch (split-K).
//
//   gridDim.z = 1:  dw[o,i] (= or += by accumulate) Σ_b dy[b,o]·x[b,i]
//   gridDim.z = S:  part[z, o, i] = Σ_{b ∈ chunk z} dy[b,o]·x[b,i]     (=)
//                   then split_k_reduce sums the S parts into dw.
//   chunk z = [z·kchunk, min(B, (z+1)·kchunk))
//
// Shapes: dy B×O, x B×I, dw O×I, part S×O×I (unused if S = 1).
// Launch: block 256 threads (16×16); grid (⌈O/64⌉, ⌈I/64⌉, S) with
//   S = ⌈B/kchunk⌉ and kchunk a multiple of 16; static shared memory
//   17 408 bytes (common.cuh gemm_64x64). Any B ≥ 0, I, O ≥ 1. 64-bit offsets.
// Atomics: none; deterministic (fixed chunks, reduced in a fixed order).
// Reference: compute/ref.LinearBackward (dw); with dy = 2e, the per-cell
//   products summed here form the validation gradient sum G of DAIN eq. 5.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kGemmThreads)
linear_backward_dw(float* __restrict__ dw, float* __restrict__ part, const float* __restrict__ dy,
                   const float* __restrict__ x, int32_t batch, int32_t in, int32_t out, int32_t kchunk,
                   int32_t accumulate) {
    using namespace dainx;
    const int m0 = blockIdx.x * kGemmBM, n0 = blockIdx.y * kGemmBN;
    const int k_begin = (int)dainx::min64((int64_t)blockIdx.z * kchunk, (int64_t)batch);
    const int k_end = (int)dainx::min64((int64_t)k_begin + kchunk, (int64_t)batch);
    float acc[4][4];
    // C(o,i) = Σ_b A(o,b)·B(b,i), A(o,b) = dy[b·O + o], B(b,i) = x[b·I + i].
    gemm_64x64<kRContig, kRContig>(acc, dy, out, x, in, out, in, m0, n0, k_begin, k_end);
    const bool split = gridDim.z > 1;
    float* __restrict__ dst = split ? part + (int64_t)blockIdx.z * out * in : dw;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty * 4 + i;
        if (m >= out) continue;  // guard
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx * 4 + j;
            if (n >= in) continue;  // guard
            const int64_t off = (int64_t)m * in + n;
            dst[off] = (!split && accumulate) ? dst[off] + acc[i][j] : acc[i][j];
        }
    }
}
