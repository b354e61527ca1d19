// common.cuh: device helpers shared by the kernels of dainx. No __global__
// functions live here; every kernel has its own .cu file (file stem = kernel
// name), which includes this header.
//
// Contents:
//   - grid-stride index helpers with 64-bit offsets;
//   - warp_sum, a butterfly warp reduction (every lane gets the same sum, in
//     a fixed order: deterministic), atomic_add (float red.add),
//     atomic_add_u32 and fence_gpu (a last-block-reduces count);
//   - philox4x32_10, identical to compute.Philox (Salmon et al., SC 2011);
//   - gemm_64x64, the shared-memory SGEMM main loop used by linear_forward,
//     linear_backward_dx and linear_backward_dw;
//   - epilogue flag bits of the GEMM kernels and split_k_reduce; sync_warp.
#pragma once

#include <cstdint>

namespace dainx {

// ---------------------------------------------------------------------------
// Indexing

// global_index returns blockIdx.x·blockDim.x + threadIdx.x as a 64-bit value.
__device__ __forceinline__ int64_t global_index() {
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// grid_stride returns gridDim.x·blockDim.x as a 64-bit value.
__device__ __forceinline__ int64_t grid_stride() {
    return (int64_t)gridDim.x * blockDim.x;
}

// ---------------------------------------------------------------------------
// Warp shuffles, reductions and atomics
//
// These wrap PTX directly instead of calling __shfl_xor_sync and atomicAdd:
// the CUDA headers declare those static, and nvcc names static functions in
// the -lineinfo debug strings with a hash of the source file's absolute path,
// which would make the committed PTX depend on where the repository is
// checked out.

// shfl_xor returns v of lane (lane ^ mask) of a full warp.
__device__ __forceinline__ float shfl_xor(float v, int mask) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
    return r;
}

// shfl_xor_d is shfl_xor for a double, moved as two 32-bit halves.
__device__ __forceinline__ double shfl_xor_d(double v, int mask) {
    uint32_t lo, hi;
    asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "d"(v));
    asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(lo) : "r"(mask));
    asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(hi) : "r"(mask));
    double r;
    asm("mov.b64 %0, {%1, %2};" : "=d"(r) : "r"(lo), "r"(hi));
    return r;
}

// warp_sum returns the sum of v over the 32 lanes of a full warp to every
// lane. The butterfly order is fixed, so the result does not depend on
// timing.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += shfl_xor(v, o);
    return v;
}

// warp_sum_d is warp_sum in double precision.
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += shfl_xor_d(v, o);
    return v;
}

// atomic_add adds v to *p atomically (relaxed, GPU scope), discarding the
// old value: PTX red.add.f32 on a generic address, what atomicAdd compiles
// to when its result is unused.
__device__ __forceinline__ void atomic_add(float* p, float v) {
    asm volatile("red.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}

// atomic_add_u32 adds v to *p atomically (GPU scope) and returns the old
// value: PTX atom.add.u32 on a generic address.
__device__ __forceinline__ uint32_t atomic_add_u32(uint32_t* p, uint32_t v) {
    uint32_t old;
    asm volatile("atom.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}

// fence_gpu orders this thread's earlier memory writes before its later
// ones for every thread of the GPU (PTX membar.gl, what __threadfence
// compiles to).
__device__ __forceinline__ void fence_gpu() { asm volatile("membar.gl;" ::: "memory"); }

// min64 returns the smaller of a and b.
__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// ---------------------------------------------------------------------------
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011). Bit-identical to compute.Philox in
// compute/philox.go: per round
//   (hi0, lo0) = M0·c0, (hi1, lo1) = M1·c2   (32×32 → 64-bit products)
//   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);  k += (W0, W1)

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

// philox4x32_10 returns the four 32-bit words of Philox4x32 with 10 rounds
// for counter c and key k.
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        const uint32_t hi0 = __umulhi(kPhiloxM0, c.x);
        const uint32_t lo0 = kPhiloxM0 * c.x;
        const uint32_t hi1 = __umulhi(kPhiloxM1, c.z);
        const uint32_t lo1 = kPhiloxM1 * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += kPhiloxW0;
        k.y += kPhiloxW1;
    }
    return c;
}

// ---------------------------------------------------------------------------
// SGEMM main loop: C(m,n) = Σ_{k ∈ [k_begin, k_end)} A(m,k)·B(k,n) for one
// 64×64 tile of C, with BK = 16, 256 threads, 4×4 outputs per thread,
// operand tiles staged through registers into double-buffered shared memory.
//
// An operand P is an R×K matrix (R = M for A, N for B) read through one of
// two layouts, so that every product the Linear layers need is a pointer
// plus a leading dimension, with no transposed copy:
//   kKContig: P(r,k) = P[r·ld + k]   (k contiguous: x and w in y = x·wᵀ)
//   kRContig: P(r,k) = P[k·ld + r]   (r contiguous: w in dy·w, dy and x in dyᵀ·x)
//
// Thread t (tx = t mod 16, ty = t / 16) owns C rows m0 + 4·ty + i and
// columns n0 + 4·tx + j, i, j ∈ [0, 4): acc[i][j]. Out-of-range elements of
// A and B are read as 0, so any M, N, K ≥ 0 works; the caller's epilogue
// guards its stores. Offsets are 64-bit.
//
// Static shared memory: 2·2·BK·(64+4)·4 bytes = 17 408 bytes per block.

constexpr int kGemmBM = 64;        // tile rows (M)
constexpr int kGemmBN = 64;        // tile columns (N)
constexpr int kGemmBK = 16;        // k per stage
constexpr int kGemmThreads = 256;  // threads per block, 16×16
constexpr int kGemmPad = 4;        // row padding (floats) of the staged tiles

enum GemmLayout { kKContig = 0, kRContig = 1 };

// GemmStage holds one thread's share (4 values) of a BK×64 operand tile on
// its way from global to shared memory.
template <int L>
struct GemmStage {
    float v[4];

    // load reads the share of thread tid of the tile rows [r0, r0+64) × k
    // [k0, k0+BK) of the R×K operand P (k < kmax), zero outside.
    __device__ __forceinline__ void load(const float* __restrict__ P, int64_t ld, int R, int kmax,
                                         int r0, int k0, int tid) {
        if (L == kKContig) {
            const int r = r0 + (tid >> 2);
            const int k = k0 + (tid & 3) * 4;
#pragma unroll
            for (int j = 0; j < 4; ++j)
                v[j] = (r < R && k + j < kmax) ? P[(int64_t)r * ld + (k + j)] : 0.f;  // guard
        } else {
            const int r = r0 + (tid & 63);
            const int k = k0 + (tid >> 6);
#pragma unroll
            for (int j = 0; j < 4; ++j)
                v[j] = (r < R && k + 4 * j < kmax) ? P[(int64_t)(k + 4 * j) * ld + r] : 0.f;  // guard
        }
    }

    // store writes the share into the k-major shared tile S[k][r].
    __device__ __forceinline__ void store(float (*S)[kGemmBM + kGemmPad], int tid) const {
        if (L == kKContig) {
            const int r = tid >> 2, k = (tid & 3) * 4;
#pragma unroll
            for (int j = 0; j < 4; ++j) S[k + j][r] = v[j];
        } else {
            const int r = tid & 63, k = tid >> 6;
#pragma unroll
            for (int j = 0; j < 4; ++j) S[k + 4 * j][r] = v[j];
        }
    }
};

// gemm_64x64 accumulates into acc (which it first clears) the tile of C at
// rows [m0, m0+64) and columns [n0, n0+64), summing k over [k_begin, k_end).
// With sum_a (uniform across the block), asum also gets this thread's share
// of the row sums of A, Σ_k A(m,k): thread t adds, stage by stage, the k
// rows 4·(t/64) … 4·(t/64)+3 of row m = m0 + (t mod 64) of each staged A
// tile; gemm_row_sums adds the four shares (linear_backward_dw forms the
// bias gradient so, in the same pass as the weight gradient). Must be
// called by all 256 threads of the block (it synchronises).
template <int LA, int LB>
__device__ __forceinline__ void gemm_64x64(float (&acc)[4][4], float& asum,
                                           const float* __restrict__ A, int64_t lda,
                                           const float* __restrict__ B, int64_t ldb,
                                           int M, int N, int m0, int n0, int k_begin, int k_end,
                                           bool sum_a = false) {
    __shared__ __align__(16) float As[2][kGemmBK][kGemmBM + kGemmPad];
    __shared__ __align__(16) float Bs[2][kGemmBK][kGemmBN + kGemmPad];
    const int tid = threadIdx.x;
    const int tx = tid & 15, ty = tid >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    asum = 0.f;
    if (k_begin >= k_end) return;  // uniform across the block

    GemmStage<LA> sa;
    GemmStage<LB> sb;
    sa.load(A, lda, M, k_end, m0, k_begin, tid);
    sb.load(B, ldb, N, k_end, n0, k_begin, tid);
    sa.store(As[0], tid);
    sb.store(Bs[0], tid);
    __syncthreads();

    int buf = 0;
    for (int k0 = k_begin; k0 < k_end; k0 += kGemmBK) {
        const bool more = k0 + kGemmBK < k_end;
        if (more) {  // prefetch the next stage into registers
            sa.load(A, lda, M, k_end, m0, k0 + kGemmBK, tid);
            sb.load(B, ldb, N, k_end, n0, k0 + kGemmBK, tid);
        }
        if (sum_a) {  // rows beyond M and k beyond k_end were staged as 0
#pragma unroll
            for (int j = 0; j < 4; ++j) asum += As[buf][(tid >> 6) * 4 + j][tid & 63];
        }
#pragma unroll
        for (int kk = 0; kk < kGemmBK; ++kk) {
            const float4 a = *reinterpret_cast<const float4*>(&As[buf][kk][ty * 4]);
            const float4 b = *reinterpret_cast<const float4*>(&Bs[buf][kk][tx * 4]);
            const float av[4] = {a.x, a.y, a.z, a.w};
            const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (more) {  // the other buffer was last read before the previous barrier
            sa.store(As[buf ^ 1], tid);
            sb.store(Bs[buf ^ 1], tid);
        }
        __syncthreads();
        buf ^= 1;
    }
}

// gemm_row_sums adds the shares asum of the row sums of A that nthreads / 64
// groups of 64 threads hold (thread t holds row t mod 64 of group t / 64),
// in group order, through red (nthreads floats of shared memory), and
// returns the sum of row t to threads t < 64 (0 to the others). Must be
// called by all threads of the block (it synchronises).
__device__ __forceinline__ float gemm_row_sums(float asum, float* red, int nthreads) {
    const int tid = threadIdx.x;
    red[tid] = asum;
    __syncthreads();
    float v = 0.f;
    if (tid < 64)
        for (int g = 0; g < nthreads; g += 64) v += red[g + tid];
    return v;
}

// ---------------------------------------------------------------------------
// GEMM epilogue flags: the bits of the flags argument of the Linear GEMM
// kernels and split_k_reduce.

constexpr int kEpiAccumulate = 1;  // add to the output instead of overwriting it
constexpr int kEpiRelu = 2;        // apply ReLU (v < 0 ? 0 : v) after the bias
constexpr int kEpiMask = 4;        // multiply by [x > 0] (ReLU mask of the layer below)
constexpr int kEpiBias = 8;        // dW kernels: also form the bias gradient db
constexpr int kEpiX3 = 16;         // tensor-core kernels: 3xTF32 instead of TF32

// ---------------------------------------------------------------------------
// Warp barrier (at the end of the file, so that adding it moved no line of
// the helpers above, whose lines the PTX's line info of every kernel names)

// sync_warp is __syncwarp() for a full warp: every lane waits for the
// others, and their shared and global memory accesses before it are
// visible to one another after it (PTX bar.warp.sync). Inline assembly in
// device code, as the shuffles above (__syncwarp is a static function of
// the CUDA headers); elsewhere (nvcc's host pass, the host emulator of
// scripts/kernel-emu) __syncwarp itself.
__device__ __forceinline__ void sync_warp() {
#ifdef __CUDA_ARCH__
    asm volatile("bar.warp.sync -1;" ::: "memory");
#else
    __syncwarp();
#endif
}

}  // namespace dainx
