// gemm_simt.cuh: the fp32 SIMT members of the GEMM family, larger tiles of
// common.cuh's gemm_64x64 with 8×8 outputs per thread, for the
// linear_*_128x64 and linear_*_128x128 kernels (compute.FP32). No
// __global__ functions live here.
//
// SimtTile<BM, BN> computes a BM×BN tile of
//   C(m,n) = Σ_{k ∈ [k_begin, k_end)} A(m,k)·B(k,n)
// with (BM/8)·(BN/8) threads; thread t (tx = t mod (BN/8), ty = t / (BN/8))
// owns rows m0 + 8·ty + i and columns n0 + 8·tx + j, i, j ∈ [0, 8). Each
// output is one fmaf chain over k in ascending order, exactly as in
// gemm_64x64, so every member gives the same bits as linear_forward,
// linear_backward_dx and linear_backward_dw.
//
// Operands (layouts kKContig / kRContig of common.cuh) are staged through
// registers into double-buffered k-major shared tiles S[k][r] of BK = 16
// rows padded to BM+4 / BN+4 floats, zero outside the operand, so any
// M, N, K ≥ 0 works. Static shared memory 2·16·(BM+4 + BN+4)·4 bytes.
//
// With sum_a, asum gets this thread's shares of the row sums of A, split
// as gemm_64x64 splits them (four groups of four k per stage of 16, added
// in group order by simt_row_sums), so the bias gradient is bit-identical
// too. Offsets are 64-bit.
#pragma once

#include "common.cuh"

namespace dainx {

// SimtTile is one fp32 tiling of the family.
template <int BM_, int BN_>
struct SimtTile {
    static constexpr int BM = BM_, BN = BN_, BK = 16, TM = 8, TN = 8;
    static constexpr int TX = BN / TN;
    static constexpr int THREADS = (BM / TM) * TX;
    static constexpr int NA = 4 * BM / THREADS;  // row-sum shares per thread
    static constexpr int PA = BM * BK / THREADS; // A elements staged per thread
    static constexpr int PB = BN * BK / THREADS; // B elements staged per thread
    static_assert(BM * BK % THREADS == 0 && BN * BK % THREADS == 0 && 4 * BM % THREADS == 0, "shares");
};

using Simt128x64 = SimtTile<128, 64>;    // 128 threads, 17 408 + 8 704 B
using Simt128x128 = SimtTile<128, 128>;  // 256 threads, 33 792 B

// simt_load reads the N = R·16/T elements of thread tid of the tile rows
// [r0, r0+R) × k [k0, k0+16) of the Rmax×K operand P (k < kmax) into v, zero
// outside; consecutive threads read consecutive addresses.
template <int L, int R, int T>
__device__ __forceinline__ void simt_load(float (&v)[R * 16 / T], const float* __restrict__ P, int64_t ld,
                                          int Rmax, int kmax, int r0, int k0, int tid) {
#pragma unroll
    for (int j = 0; j < R * 16 / T; ++j) {
        const int e = tid + T * j;
        const int r = L == kKContig ? e / 16 : e % R;
        const int k = L == kKContig ? e % 16 : e / R;
        const int gr = r0 + r, gk = k0 + k;
        v[j] = (gr < Rmax && gk < kmax) ? (L == kKContig ? P[(int64_t)gr * ld + gk] : P[(int64_t)gk * ld + gr]) : 0.f;  // guard
    }
}

// simt_store writes v (from simt_load) into the k-major tile S (row stride
// R + 4).
template <int L, int R, int T>
__device__ __forceinline__ void simt_store(float* S, const float (&v)[R * 16 / T], int tid) {
#pragma unroll
    for (int j = 0; j < R * 16 / T; ++j) {
        const int e = tid + T * j;
        const int r = L == kKContig ? e / 16 : e % R;
        const int k = L == kKContig ? e % 16 : e / R;
        S[k * (R + 4) + r] = v[j];
    }
}

// gemm_simt accumulates into acc (which it first clears) the C::BM×C::BN
// tile of C at (m0, n0), summing k over [k_begin, k_end); acc[i][j] is
// C(m0 + 8·ty + i, n0 + 8·tx + j). Must be called by all C::THREADS threads.
template <class C, int LA, int LB>
__device__ __forceinline__ void gemm_simt(float (&acc)[8][8], float (&asum)[C::NA],
                                          const float* __restrict__ A, int64_t lda,
                                          const float* __restrict__ B, int64_t ldb,
                                          int M, int N, int m0, int n0, int k_begin, int k_end,
                                          bool sum_a) {
    constexpr int BM = C::BM, BN = C::BN, T = C::THREADS;
    __shared__ __align__(16) float As[2][16 * (BM + 4)];
    __shared__ __align__(16) float Bs[2][16 * (BN + 4)];
    const int tid = threadIdx.x;
    const int tx = tid % C::TX, ty = tid / C::TX;
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;
#pragma unroll
    for (int q = 0; q < C::NA; ++q) asum[q] = 0.f;
    if (k_begin >= k_end) return;  // uniform across the block

    float va[C::PA], vb[C::PB];
    simt_load<LA, BM, T>(va, A, lda, M, k_end, m0, k_begin, tid);
    simt_load<LB, BN, T>(vb, B, ldb, N, k_end, n0, k_begin, tid);
    simt_store<LA, BM, T>(As[0], va, tid);
    simt_store<LB, BN, T>(Bs[0], vb, tid);
    __syncthreads();

    int buf = 0;
    for (int k0 = k_begin; k0 < k_end; k0 += 16) {
        const bool more = k0 + 16 < k_end;
        if (more) {  // prefetch the next stage into registers
            simt_load<LA, BM, T>(va, A, lda, M, k_end, m0, k0 + 16, tid);
            simt_load<LB, BN, T>(vb, B, ldb, N, k_end, n0, k0 + 16, tid);
        }
        if (sum_a) {  // rows beyond M and k beyond k_end were staged as 0
#pragma unroll
            for (int q = 0; q < C::NA; ++q) {
                const int p = tid + T * q;
#pragma unroll
                for (int j = 0; j < 4; ++j) asum[q] += As[buf][((p / BM) * 4 + j) * (BM + 4) + p % BM];
            }
        }
#pragma unroll
        for (int kk = 0; kk < 16; ++kk) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][kk * (BM + 4) + ty * 8]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][kk * (BM + 4) + ty * 8 + 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][kk * (BN + 4) + tx * 8]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][kk * (BN + 4) + tx * 8 + 4]);
            const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (more) {  // the other buffer was last read before the previous barrier
            simt_store<LA, BM, T>(As[buf ^ 1], va, tid);
            simt_store<LB, BN, T>(Bs[buf ^ 1], vb, tid);
        }
        __syncthreads();
        buf ^= 1;
    }
}

// simt_row_sums adds the four groups of row sums gemm_simt left in asum,
// in group order, through red (4·C::BM floats of shared memory), and
// returns the sum of row t of the tile to threads t < C::BM (0 to the
// others). Must be called by all threads of the block (it synchronises).
template <class C>
__device__ __forceinline__ float simt_row_sums(const float (&asum)[C::NA], float* red) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int q = 0; q < C::NA; ++q) red[tid + C::THREADS * q] = asum[q];
    __syncthreads();
    float v = 0.f;
    if (tid < C::BM)
        for (int g = 0; g < 4; ++g) v += red[g * C::BM + tid];
    return v;
}

}  // namespace dainx
