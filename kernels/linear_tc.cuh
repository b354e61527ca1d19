// linear_tc.cuh: the bodies of the tensor-core Linear kernels
// (linear_forward_tc, linear_backward_dx_tc, linear_backward_dw_tc and
// their tile variants *_tc_128x64, *_tc_128x128), templated on the tiling C
// of gemm_tc.cuh. The contracts are those of the three kernels' headers; a
// variant differs only in its tile (grid ⌈M/C::BM⌉ × ⌈N/C::BN⌉ × S, block
// C::THREADS threads, C::SMEM_BYTES of shared memory) and gives the same
// bits. No __global__ functions live here.
#pragma once

#include "gemm_tc.cuh"
#include "splitk.cuh"

namespace dainx {

// linear_forward_tc_body is linear_forward_tc for tiling C; smem holds
// C::SMEM_FLOATS floats.
template <class C>
__device__ __forceinline__ void linear_forward_tc_body(float* smem, float* __restrict__ y, float* __restrict__ part,
                                                       const float* __restrict__ x, const float* __restrict__ w,
                                                       const float* __restrict__ bias, int32_t batch, int32_t in,
                                                       int32_t out, int32_t kchunk, int32_t flags) {
    const int m0 = blockIdx.x * C::BM, n0 = blockIdx.y * C::BN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)in);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)in);
    float acc[C::MI][C::NJ][4], asum[C::NA];
    // C(b,o) = Σ_i A(b,i)·B(i,o), A(b,i) = x[b·I + i], B(i,o) = w[o·I + i].
    if (flags & kEpiX3)
        gemm_tc<C, kKContig, kKContig, true>(acc, asum, smem, x, in, w, in, batch, out, m0, n0, k_begin, k_end, false);
    else
        gemm_tc<C, kKContig, kKContig, false>(acc, asum, smem, x, in, w, in, batch, out, m0, n0, k_begin, k_end, false);
    const SplitK sk(flags);
    sk.begin(part);
    float* dst = sk.last ? y : sk.serial ? part : part + (int64_t)blockIdx.z * batch * out;
    const bool relu = (flags & kEpiRelu) != 0;
    tc_for_each<C>(acc, m0, n0, [&](int m, int n, float v) {
        if (m >= batch || n >= out) return;  // guard
        const int64_t off = (int64_t)m * out + n;
        v = sk.sum(part, off, v);
        if (sk.last) {
            v += bias[n];
            if (relu && v < 0.f) v = 0.f;
        }
        dst[off] = v;
    });
    sk.end(part);
}

// linear_backward_dx_tc_body is linear_backward_dx_tc for tiling C; smem
// holds C::SMEM_FLOATS floats.
template <class C>
__device__ __forceinline__ void linear_backward_dx_tc_body(float* smem, float* __restrict__ dx, float* __restrict__ part,
                                                           const float* __restrict__ dy, const float* __restrict__ w,
                                                           const float* __restrict__ x, int32_t batch, int32_t in,
                                                           int32_t out, int32_t kchunk, int32_t flags) {
    const int m0 = blockIdx.x * C::BM, n0 = blockIdx.y * C::BN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)out);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)out);
    float acc[C::MI][C::NJ][4], asum[C::NA];
    // C(b,i) = Σ_o A(b,o)·B(o,i), A(b,o) = dy[b·O + o], B(o,i) = w[o·I + i].
    if (flags & kEpiX3)
        gemm_tc<C, kKContig, kRContig, true>(acc, asum, smem, dy, out, w, in, batch, in, m0, n0, k_begin, k_end, false);
    else
        gemm_tc<C, kKContig, kRContig, false>(acc, asum, smem, dy, out, w, in, batch, in, m0, n0, k_begin, k_end, false);
    const SplitK sk(flags);
    sk.begin(part);
    float* dst = sk.last ? dx : sk.serial ? part : part + (int64_t)blockIdx.z * batch * in;
    const bool mask = sk.last && (flags & kEpiMask) != 0;
    tc_for_each<C>(acc, m0, n0, [&](int m, int n, float v) {
        if (m >= batch || n >= in) return;  // guard
        const int64_t off = (int64_t)m * in + n;
        v = sk.sum(part, off, v);
        if (mask && !(x[off] > 0.f)) v = 0.f;
        dst[off] = v;
    });
    sk.end(part);
}

// linear_backward_dw_tc_body is linear_backward_dw_tc for tiling C; smem
// holds C::SMEM_FLOATS floats, red 2·C::BM floats.
template <class C>
__device__ __forceinline__ void linear_backward_dw_tc_body(float* smem, float* red, float* __restrict__ dw,
                                                           float* __restrict__ db, float* __restrict__ part,
                                                           const float* __restrict__ dy, const float* __restrict__ x,
                                                           int32_t batch, int32_t in, int32_t out, int32_t kchunk,
                                                           int32_t flags) {
    const int m0 = blockIdx.x * C::BM, n0 = blockIdx.y * C::BN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)batch);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)batch);
    const bool with_db = (flags & kEpiBias) != 0;
    const bool sum_db = with_db && blockIdx.y == 0;  // uniform across the block
    const int pcols = in + (with_db ? 1 : 0);
    float acc[C::MI][C::NJ][4], asum[C::NA];
    // C(o,i) = Σ_b A(o,b)·B(b,i), A(o,b) = dy[b·O + o], B(b,i) = x[b·I + i].
    if (flags & kEpiX3)
        gemm_tc<C, kRContig, kRContig, true>(acc, asum, smem, dy, out, x, in, out, in, m0, n0, k_begin, k_end, sum_db);
    else
        gemm_tc<C, kRContig, kRContig, false>(acc, asum, smem, dy, out, x, in, out, in, m0, n0, k_begin, k_end, sum_db);
    dw_epilogue([&](auto f) { tc_for_each<C>(acc, m0, n0, f); }, [&] { return tc_row_sums<C>(asum, red); },
                dw, db, part, m0, C::BM, in, out, pcols, sum_db, flags);
}

}  // namespace dainx
