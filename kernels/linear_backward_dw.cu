// linear_backward_dw: the weight gradient of a Linear layer and, with
// kEpiBias, its bias gradient in the same pass; optionally split over the
// batch (split-K).
//
//   gridDim.z = 1:  dw[o,i] (= or += by kEpiAccumulate) Σ_b dy[b,o]·x[b,i]
//                   db[o]   (= or += by kEpiAccumulate) Σ_b dy[b,o]
//   gridDim.z = S:  part[z,o,c] = Σ_{b ∈ chunk z} dy[b,o]·x̂[b,c]          (=)
//                   then split_k_reduce adds the S parts in order into dw
//                   (c < I) and db (c = I).
//   x̂ is x with a column of ones appended at c = I when flags has
//   kEpiBias (8): the GEMM's column I is then the bias gradient, summed in
//   the same order as the weights. chunk z = [z·kchunk, min(B, (z+1)·kchunk)).
//
// Shapes: dy B×O, x B×I, dw O×I, db O (written only with kEpiBias), part
//   S×O×P with P = I + 1 with kEpiBias, else I (unused if S = 1).
// Launch: block 256 threads (16×16); grid (⌈O/64⌉, ⌈P/64⌉, S) with
//   S = ⌈B/kchunk⌉ and kchunk a multiple of 16; static shared memory
//   17 408 bytes (common.cuh gemm_64x64). Any B ≥ 1, I, O ≥ 1. 64-bit
//   offsets.
// Atomics: none; deterministic (fixed chunks, reduced in a fixed order).
// Reference: compute/ref.LinearBackward (dw, db); with dy = 2e, the per-cell
//   products summed here form the validation gradient sum G of DAIN eq. 5.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kGemmThreads)
linear_backward_dw(float* __restrict__ dw, float* __restrict__ db, float* __restrict__ part,
                   const float* __restrict__ dy, const float* __restrict__ x, int32_t batch, int32_t in,
                   int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    const int m0 = blockIdx.x * kGemmBM, n0 = blockIdx.y * kGemmBN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)batch);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)batch);
    const bool with_db = (flags & kEpiBias) != 0;
    const int pcols = in + (with_db ? 1 : 0);
    float acc[4][4];
    // C(o,i) = Σ_b A(o,b)·B(b,i), A(o,b) = dy[b·O + o], B(b,i) = x[b·I + i]
    // (B(b,I) = 1 with the bias).
    gemm_64x64<kRContig, kRContig>(acc, dy, out, x, in, out, in, m0, n0, k_begin, k_end, with_db);
    const bool split = gridDim.z > 1;
    const bool accumulate = !split && (flags & kEpiAccumulate) != 0;
    float* __restrict__ pz = part + (int64_t)blockIdx.z * out * pcols;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty * 4 + i;
        if (m >= out) continue;  // guard
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx * 4 + j;
            if (n >= pcols) continue;  // guard
            const float v = acc[i][j];
            if (split) {
                pz[(int64_t)m * pcols + n] = v;
            } else if (n < in) {
                const int64_t off = (int64_t)m * in + n;
                dw[off] = accumulate ? dw[off] + v : v;
            } else {
                db[m] = accumulate ? db[m] + v : v;
            }
        }
    }
}
