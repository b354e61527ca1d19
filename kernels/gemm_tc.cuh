// gemm_tc.cuh: the tensor-core GEMM main loop of linear_forward_tc,
// linear_backward_dx_tc and linear_backward_dw_tc (the TF32 and 3xTF32
// precision modes, compute.TF32 and compute.TF32x3). No __global__
// functions live here.
//
// A block of TcTile<BM, BN, WM, WN, BK, STAGES>::THREADS threads computes a
// BM×BN tile of
//   C(m,n) = Σ_{k ∈ [k_begin, k_end)} A(m,k)·B(k,n)
// with PTX mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (compute
// capability 8.0 and later). Each warp owns a WM×WN sub-tile of (WM/16) ×
// (WN/8) MMA tiles of 16×8. The family (Tc64x64, Tc128x64, Tc128x128 below;
// docs/gpu-tuning.md) differs only in these numbers: every member feeds each
// accumulator the same products in the same order, so all give the same
// bits. The description below is of Tc64x64 (4 warps of 32×32, BK = 16, 4
// stages, 40 960 bytes of static shared memory); the others scale it.
//
// Operands are read through the two layouts of common.cuh (kKContig:
// P(r,k) = P[r·ld + k]; kRContig: P(r,k) = P[k·ld + r]) and staged into
// shared memory in the same orientation as in global memory, so that every
// global read is coalesced and no transpose is needed:
//   kKContig: S[r·20 + k], 64 rows of BK = 16 k, padded to 20 floats;
//   kRContig: S[k·72 + r], 16 k-rows of 64 r, padded to 72 floats.
// The paddings make the fragment reads free of bank conflicts: the 32 lanes
// of a warp read (g, t) = (lane/4, lane mod 4) at g·20 + t or t·72 + g,
// which fall in 32 distinct banks.
//
// Pipeline: kTcStages = 4 stages of BK = 16, filled with cp.async: 16-byte
// cp.async.cg copies when the operand allows them (its address a multiple
// of 16 bytes, its leading dimension and, for kKContig, k_begin multiples of
// 4), else 4-byte cp.async.ca copies, so any alignment and leading dimension
// works; zero-filled outside the operand (src-size below the copy size), so
// any M, N, K ≥ 0 works. One commit group per stage and one __syncthreads
// per stage: at iteration kt the block waits for stage kt, then refills the
// stage it finished at kt − 1 with k-tile kt + 3.
// Shared memory: 2 operands × 4 stages × 1 280 floats = 40 960 bytes,
// static (under the 48 KiB that needs no opt-in).
//
// Rounding: each operand element a is rounded to TF32 with cvt.rna (to
// nearest, ties away from zero, 10 explicit mantissa bits) when it is
// loaded into a fragment. With x3 (3xTF32) it is split into h = tf32(a)
// and l = tf32(a − h), and the accumulator takes l·h' + h·l' + h·h' (small
// terms first; the l·l' term, below 2⁻²² of the product, is dropped).
// Accumulation is float32 in the tensor cores, in a fixed order:
// deterministic.
//
// With sum_a the block also sums the rows of A, Σ_k A(m,k), in float32 from
// the staged (unrounded) tiles, as gemm_64x64 does for linear_backward_dw:
// thread t adds k rows 8·(t/64) … 8·(t/64)+7 of row t mod 64 of every stage,
// and gemm_row_sums (common.cuh) adds the two halves. Offsets are 64-bit.
#pragma once

#include "common.cuh"

namespace dainx {

// TcTile is one member of the closed family of tensor-core tilings (see
// docs/gpu-tuning.md): a BM×BN tile of C per block of (BM/WM)·(BN/WN) warps,
// each warp a WM×WN sub-tile of (WM/16)×(WN/8) MMA tiles, BK k per stage,
// STAGES cp.async stages. Every member visits each output's k in the same
// order (k-steps of 8, ascending), so the members are bit-identical.
template <int BM_, int BN_, int WM_, int WN_, int BK_, int STAGES_>
struct TcTile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, BK = BK_, STAGES = STAGES_;
    static constexpr int WARPS_N = BN / WN;
    static constexpr int THREADS = (BM / WM) * WARPS_N * 32;
    static constexpr int MI = WM / 16;  // MMA tiles per warp along M
    static constexpr int NJ = WN / 8;   // MMA tiles per warp along N
    static constexpr int NA = 2 * BM / THREADS;  // row-sum shares per thread
    static constexpr int LDK = BK + 4;           // row stride of a kKContig stage
    static constexpr int LDRA = BM + 8;          // row stride of a kRContig A stage
    static constexpr int LDRB = BN + 8;          // row stride of a kRContig B stage
    static constexpr int STAGE_A = BM * LDK > BK * LDRA ? BM * LDK : BK * LDRA;  // floats
    static constexpr int STAGE_B = BN * LDK > BK * LDRB ? BN * LDK : BK * LDRB;  // floats
    static constexpr int SMEM_FLOATS = STAGES * (STAGE_A + STAGE_B);
    static constexpr int SMEM_BYTES = 4 * SMEM_FLOATS;
    static_assert(BK % 16 == 0 && WM % 16 == 0 && WN % 8 == 0, "tile shape");
    static_assert(BM * BK % (4 * THREADS) == 0 && BN * BK % (4 * THREADS) == 0, "stage share");
    static_assert(NA >= 1 && 2 * BM % THREADS == 0, "row-sum shares");
};

// The family. Tc64x64 is the tiling of today (static shared memory);
// the others need dynamic shared memory above 48 KiB (opt-in).
using Tc64x64 = TcTile<64, 64, 32, 32, 16, 4>;     // 128 threads, 40 960 B
using Tc128x64 = TcTile<128, 64, 32, 32, 16, 4>;   // 256 threads, 61 440 B
using Tc128x128 = TcTile<128, 128, 64, 32, 16, 4>; // 256 threads, 81 920 B

constexpr int kTcThreads = Tc64x64::THREADS;  // threads per block of Tc64x64
constexpr int kTcBM = Tc64x64::BM;            // tile rows (M) of Tc64x64
constexpr int kTcBN = Tc64x64::BN;            // tile columns (N) of Tc64x64
constexpr int kTcSmemFloats = Tc64x64::SMEM_FLOATS;

// ---------------------------------------------------------------------------
// PTX wrappers. scripts/kernel-emu/run.sh replaces this block, from here to
// the end marker, with host emulations.

// tf32 returns a rounded to TF32 (cvt.rna.tf32.f32), as the bits of a float
// whose 13 low mantissa bits are zero.
__device__ __forceinline__ uint32_t tf32(float a) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(a));
    return r;
}

// mma_tf32 does d += A·B for one 16×8×8 tile held in fragments, in the
// layouts of the PTX ISA (Matrix Fragments for mma.m16n8k8, .tf32), with
// g = lane / 4 and t = lane mod 4:
//   a[0] = A(g, t), a[1] = A(g+8, t), a[2] = A(g, t+4), a[3] = A(g+8, t+4)
//   b[0] = B(t, g), b[1] = B(t+4, g)
//   d[0] = D(g, 2t), d[1] = D(g, 2t+1), d[2] = D(g+8, 2t), d[3] = D(g+8, 2t+1)
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// cp_async4 copies the float at src into shared memory at dst
// asynchronously (cp.async.ca, 4 bytes), or writes 0 there without reading
// src when valid is false.
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) {
    uint32_t s;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(s) : "l"(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(src), "r"(valid ? 4 : 0) : "memory");
}

// cp_async16 copies the 16 bytes at src into shared memory at dst
// asynchronously (cp.async.cg), reading only the first bytes (0, 4, 8, 12
// or 16) of them and writing zeros for the rest. dst and src are 16-byte
// aligned.
__device__ __forceinline__ void cp_async16(float* dst, const float* src, int bytes) {
    uint32_t s;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(s) : "l"(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
}

// cp_async_commit closes the group of the cp.async copies issued since the
// last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// cp_async_wait waits until at most N of this thread's committed groups are
// still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// End of the PTX wrappers.
// ---------------------------------------------------------------------------

// tc_clamp4 returns v clamped to [0, 4].
__device__ __forceinline__ int tc_clamp4(int v) { return v < 0 ? 0 : (v > 4 ? 4 : v); }

// tc_load_stage issues the copies of one k-tile [k0, k0+BK) ∩ [·, kmax) of
// rows [r0, r0+R) of the Rmax×K operand P into the stage S (row stride LDK
// for kKContig, LDR for kRContig), zero outside. With VEC each of the T
// threads copies R·BK/(4T) groups of 4 elements along the contiguous
// dimension (16-byte copies; the caller has checked the alignment), else
// R·BK/T elements (4-byte copies); consecutive threads take consecutive
// addresses of the contiguous dimension.
template <int L, bool VEC, int R, int BK, int T, int LDK, int LDR>
__device__ __forceinline__ void tc_load_stage(float* S, const float* __restrict__ P, int64_t ld, int Rmax,
                                              int kmax, int r0, int k0, int tid) {
    if (VEC) {
#pragma unroll
        for (int j = 0; j < R * BK / (4 * T); ++j) {
            const int e = tid + T * j;
            int r, k, s, n;
            if (L == kKContig) {
                r = e / (BK / 4);
                k = (e % (BK / 4)) * 4;
                s = r * LDK + k;
                n = r0 + r < Rmax ? tc_clamp4(kmax - (k0 + k)) : 0;  // guard
            } else {
                k = e / (R / 4);
                r = (e % (R / 4)) * 4;
                s = k * LDR + r;
                n = k0 + k < kmax ? tc_clamp4(Rmax - (r0 + r)) : 0;  // guard
            }
            const int64_t off = L == kKContig ? (int64_t)(r0 + r) * ld + (k0 + k) : (int64_t)(k0 + k) * ld + (r0 + r);
            cp_async16(S + s, n > 0 ? P + off : P, 4 * n);
        }
    } else {
#pragma unroll
        for (int j = 0; j < R * BK / T; ++j) {
            const int e = tid + T * j;
            int r, k, s;
            if (L == kKContig) {
                r = e / BK;
                k = e % BK;
                s = r * LDK + k;
            } else {
                k = e / R;
                r = e % R;
                s = k * LDR + r;
            }
            const int gr = r0 + r, gk = k0 + k;
            const bool valid = gr < Rmax && gk < kmax;  // guard
            const float* src = valid ? (L == kKContig ? P + (int64_t)gr * ld + gk : P + (int64_t)gk * ld + gr) : P;
            cp_async4(S + s, src, valid);
        }
    }
}

// tc_vec reports whether the operand P of layout L can be staged with
// 16-byte copies from k_begin on.
template <int L>
__device__ __forceinline__ bool tc_vec(const float* P, int64_t ld, int k_begin) {
    return ((uintptr_t)P & 15) == 0 && (ld & 3) == 0 && (L == kRContig || (k_begin & 3) == 0);
}

// tc_load issues the copies of k-tile k0 of both operands into stage s.
template <class C, int LA, int LB>
__device__ __forceinline__ void tc_load(float* As, float* Bs, int s, const float* __restrict__ A, int64_t lda,
                                        const float* __restrict__ B, int64_t ldb, int M, int N, int kmax,
                                        int m0, int n0, int k0, int tid, bool va, bool vb) {
    if (va)
        tc_load_stage<LA, true, C::BM, C::BK, C::THREADS, C::LDK, C::LDRA>(As + s * C::STAGE_A, A, lda, M, kmax, m0, k0, tid);
    else
        tc_load_stage<LA, false, C::BM, C::BK, C::THREADS, C::LDK, C::LDRA>(As + s * C::STAGE_A, A, lda, M, kmax, m0, k0, tid);
    if (vb)
        tc_load_stage<LB, true, C::BN, C::BK, C::THREADS, C::LDK, C::LDRB>(Bs + s * C::STAGE_B, B, ldb, N, kmax, n0, k0, tid);
    else
        tc_load_stage<LB, false, C::BN, C::BK, C::THREADS, C::LDK, C::LDRB>(Bs + s * C::STAGE_B, B, ldb, N, kmax, n0, k0, tid);
}

// tc_at reads element (r, k) of an operand stage S in layout L (row strides
// LDK and LDR).
template <int L, int LDK, int LDR>
__device__ __forceinline__ float tc_at(const float* S, int r, int k) {
    return L == kKContig ? S[r * LDK + k] : S[k * LDR + r];
}

// tc_split rounds v to TF32 into hi and, with X3, its remainder into lo.
template <bool X3>
__device__ __forceinline__ void tc_split(float v, uint32_t& hi, uint32_t& lo) {
    hi = tf32(v);
    if (X3) lo = tf32(v - __int_as_float((int)hi));
}

// gemm_tc accumulates into acc (which it first clears) the C::BM×C::BN tile
// of C at rows [m0, m0+BM) and columns [n0, n0+BN), summing k over
// [k_begin, k_end), using smem (C::SMEM_FLOATS floats, 16-byte aligned) for
// the stages. acc[i][j][c] is element c of MMA tile (i, j) of the warp (see
// tc_for_each). With sum_a (uniform across the block) asum gets this
// thread's shares of the row sums of A: share j of thread t is row
// p mod BM, half p / BM, p = t + THREADS·j, where half h adds, in ascending
// order, the k whose offset from k_begin is 8h … 8h+7 modulo 16, the same
// split for every member of the family (see tc_row_sums). Must be called by
// all C::THREADS threads of the block.
template <class C, int LA, int LB, bool X3>
__device__ __forceinline__ void gemm_tc(float (&acc)[C::MI][C::NJ][4], float (&asum)[C::NA], float* smem,
                                        const float* __restrict__ A, int64_t lda,
                                        const float* __restrict__ B, int64_t ldb,
                                        int M, int N, int m0, int n0, int k_begin, int k_end,
                                        bool sum_a) {
    constexpr int BK = C::BK, ST = C::STAGES;
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp / C::WARPS_N) * C::WM, wn = (warp % C::WARPS_N) * C::WN;
#pragma unroll
    for (int i = 0; i < C::MI; ++i)
#pragma unroll
        for (int j = 0; j < C::NJ; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;
#pragma unroll
    for (int j = 0; j < C::NA; ++j) asum[j] = 0.f;
    if (k_begin >= k_end) return;  // uniform across the block
    float* As = smem;
    float* Bs = smem + ST * C::STAGE_A;
    const int ktiles = (k_end - k_begin + BK - 1) / BK;
    const bool va = tc_vec<LA>(A, lda, k_begin), vb = tc_vec<LB>(B, ldb, k_begin);

#pragma unroll
    for (int s = 0; s < ST - 1; ++s) {
        if (s < ktiles) tc_load<C, LA, LB>(As, Bs, s, A, lda, B, ldb, M, N, k_end, m0, n0, k_begin + s * BK, tid, va, vb);
        cp_async_commit();  // possibly empty: one group per stage keeps the count uniform
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<ST - 2>();  // this thread's copies of k-tile kt have landed
        __syncthreads();          // everyone's have; everyone is done with k-tile kt − 1
        const int nt = kt + ST - 1;
        if (nt < ktiles)
            tc_load<C, LA, LB>(As, Bs, nt % ST, A, lda, B, ldb, M, N, k_end, m0, n0, k_begin + nt * BK, tid, va, vb);
        cp_async_commit();
        const float* as = As + (kt % ST) * C::STAGE_A;
        const float* bs = Bs + (kt % ST) * C::STAGE_B;
        if (sum_a) {  // rows beyond M and k beyond k_end were staged as 0
#pragma unroll
            for (int q = 0; q < C::NA; ++q) {
                const int p = tid + C::THREADS * q;
#pragma unroll
                for (int b = 0; b < BK; b += 16)
#pragma unroll
                    for (int j = 0; j < 8; ++j) asum[q] += tc_at<LA, C::LDK, C::LDRA>(as, p % C::BM, b + (p / C::BM) * 8 + j);
            }
        }
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            // B fragments of the whole warp tile first, then one A fragment
            // at a time (fewer live registers); each acc[i][j] still takes
            // its products in the same order.
            uint32_t bh[C::NJ][2], bl[C::NJ][2];
#pragma unroll
            for (int j = 0; j < C::NJ; ++j) {
                const int n = wn + j * 8 + g;
                tc_split<X3>(tc_at<LB, C::LDK, C::LDRB>(bs, n, kk + t), bh[j][0], bl[j][0]);
                tc_split<X3>(tc_at<LB, C::LDK, C::LDRB>(bs, n, kk + t + 4), bh[j][1], bl[j][1]);
            }
#pragma unroll
            for (int i = 0; i < C::MI; ++i) {
                uint32_t ah[4], al[4];
                const int r = wm + i * 16 + g;
                tc_split<X3>(tc_at<LA, C::LDK, C::LDRA>(as, r, kk + t), ah[0], al[0]);
                tc_split<X3>(tc_at<LA, C::LDK, C::LDRA>(as, r + 8, kk + t), ah[1], al[1]);
                tc_split<X3>(tc_at<LA, C::LDK, C::LDRA>(as, r, kk + t + 4), ah[2], al[2]);
                tc_split<X3>(tc_at<LA, C::LDK, C::LDRA>(as, r + 8, kk + t + 4), ah[3], al[3]);
#pragma unroll
                for (int j = 0; j < C::NJ; ++j) {
                    if (X3) {
                        mma_tf32(acc[i][j], al, bh[j]);
                        mma_tf32(acc[i][j], ah, bl[j]);
                    }
                    mma_tf32(acc[i][j], ah, bh[j]);
                }
            }
        }
    }
    cp_async_wait<0>();
}

// tc_row_sums adds the two halves of the row sums of A that gemm_tc left in
// asum, through red (2·C::BM floats of shared memory), and returns the sum
// of row t of the tile to threads t < C::BM (0 to the others). Must be
// called by all threads of the block (it synchronises).
template <class C>
__device__ __forceinline__ float tc_row_sums(const float (&asum)[C::NA], float* red) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int q = 0; q < C::NA; ++q) red[tid + C::THREADS * q] = asum[q];
    __syncthreads();
    float v = 0.f;
    if (tid < C::BM) {
        v += red[tid];
        v += red[C::BM + tid];
    }
    return v;
}

// tc_for_each calls f(m, n, v) for every accumulator of the calling thread:
// the C element (m, n) of the block's tile at (m0, n0), m and n unguarded.
template <class C, class F>
__device__ __forceinline__ void tc_for_each(const float (&acc)[C::MI][C::NJ][4], int m0, int n0, F f) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = m0 + (warp / C::WARPS_N) * C::WM, wn = n0 + (warp % C::WARPS_N) * C::WN;
#pragma unroll
    for (int i = 0; i < C::MI; ++i)
#pragma unroll
        for (int j = 0; j < C::NJ; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) f(wm + i * 16 + g + (c >> 1) * 8, wn + j * 8 + 2 * t + (c & 1), acc[i][j][c]);
}

}  // namespace dainx
