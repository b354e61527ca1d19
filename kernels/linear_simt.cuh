// linear_simt.cuh: the bodies of the fp32 SIMT tile variants of the Linear
// kernels (linear_forward_128x64, linear_forward_128x128,
// linear_backward_dx_128x64, …), templated on the tiling C of
// gemm_simt.cuh. Their contracts are those of linear_forward,
// linear_backward_dx and linear_backward_dw; a variant differs only in its
// tile (grid ⌈M/C::BM⌉ × ⌈N/C::BN⌉ × S, block C::THREADS threads) and gives
// the same bits. No __global__ functions live here.
#pragma once

#include "gemm_simt.cuh"
#include "splitk.cuh"

namespace dainx {

// simt_for_each calls f(m, n, v) for the 8×8 outputs of the calling thread,
// m and n unguarded.
template <class C, class F>
__device__ __forceinline__ void simt_for_each(const float (&acc)[8][8], int m0, int n0, F f) {
    const int tx = threadIdx.x % C::TX, ty = threadIdx.x / C::TX;
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) f(m0 + ty * 8 + i, n0 + tx * 8 + j, acc[i][j]);
}

// linear_forward_simt is linear_forward for tiling C.
template <class C>
__device__ __forceinline__ void linear_forward_simt(float* __restrict__ y, float* __restrict__ part,
                                                    const float* __restrict__ x, const float* __restrict__ w,
                                                    const float* __restrict__ bias, int32_t batch, int32_t in,
                                                    int32_t out, int32_t kchunk, int32_t flags) {
    const int m0 = blockIdx.x * C::BM, n0 = blockIdx.y * C::BN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)in);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)in);
    float acc[8][8], asum[C::NA];
    gemm_simt<C, kKContig, kKContig>(acc, asum, x, in, w, in, batch, out, m0, n0, k_begin, k_end, false);
    const SplitK sk(flags);
    sk.begin(part);
    float* dst = sk.last ? y : sk.serial ? part : part + (int64_t)blockIdx.z * batch * out;
    const bool relu = (flags & kEpiRelu) != 0;
    simt_for_each<C>(acc, m0, n0, [&](int m, int n, float v) {
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

// linear_backward_dx_simt is linear_backward_dx for tiling C.
template <class C>
__device__ __forceinline__ void linear_backward_dx_simt(float* __restrict__ dx, float* __restrict__ part,
                                                        const float* __restrict__ dy, const float* __restrict__ w,
                                                        const float* __restrict__ x, int32_t batch, int32_t in,
                                                        int32_t out, int32_t kchunk, int32_t flags) {
    const int m0 = blockIdx.x * C::BM, n0 = blockIdx.y * C::BN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)out);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)out);
    float acc[8][8], asum[C::NA];
    gemm_simt<C, kKContig, kRContig>(acc, asum, dy, out, w, in, batch, in, m0, n0, k_begin, k_end, false);
    const SplitK sk(flags);
    sk.begin(part);
    float* dst = sk.last ? dx : sk.serial ? part : part + (int64_t)blockIdx.z * batch * in;
    const bool mask = sk.last && (flags & kEpiMask) != 0;
    simt_for_each<C>(acc, m0, n0, [&](int m, int n, float v) {
        if (m >= batch || n >= in) return;  // guard
        const int64_t off = (int64_t)m * in + n;
        v = sk.sum(part, off, v);
        if (mask && !(x[off] > 0.f)) v = 0.f;
        dst[off] = v;
    });
    sk.end(part);
}

// linear_backward_dw_simt is linear_backward_dw for tiling C; red holds
// 4·C::BM floats.
template <class C>
__device__ __forceinline__ void linear_backward_dw_simt(float* red, float* __restrict__ dw, float* __restrict__ db,
                                                        float* __restrict__ part, const float* __restrict__ dy,
                                                        const float* __restrict__ x, int32_t batch, int32_t in,
                                                        int32_t out, int32_t kchunk, int32_t flags) {
    const int m0 = blockIdx.x * C::BM, n0 = blockIdx.y * C::BN;
    const int k_begin = (int)min64((int64_t)blockIdx.z * kchunk, (int64_t)batch);
    const int k_end = (int)min64((int64_t)k_begin + kchunk, (int64_t)batch);
    const bool with_db = (flags & kEpiBias) != 0;
    const bool sum_db = with_db && blockIdx.y == 0;  // uniform across the block
    const int pcols = in + (with_db ? 1 : 0);
    float acc[8][8], asum[C::NA];
    gemm_simt<C, kRContig, kRContig>(acc, asum, dy, out, x, in, out, in, m0, n0, k_begin, k_end, sum_db);
    dw_epilogue([&](auto f) { simt_for_each<C>(acc, m0, n0, f); }, [&] { return simt_row_sums<C>(asum, red); },
                dw, db, part, m0, C::BM, in, out, pcols, sum_db, flags);
}

}  // namespace dainx
