// splitk.cuh: serial split-K for the tile bodies of the Linear GEMMs
// (linear_tc.cuh, linear_simt.cuh): one kernel instead of a split GEMM and
// split_k_reduce, with the same bits. No __global__ functions live here.
//
// With kEpiSerial in flags and S = gridDim.z > 1 parts, the S blocks of an
// output tile (blockIdx.z = z) take turns on the tile's semaphore: part 0
// writes 0 + its sum into the workspace part (R×P, laid out as one part of
// the two-kernel split), part z waits until the semaphore reads z, adds its
// sum to the workspace, and signals z + 1; the last part adds its sum and
// applies the GEMM's epilogue into the output exactly as split_k_reduce
// does, then sets the semaphore back to 0. So each output is
// ((0 + p₀) + p₁) + … + p_{S−1} in z order: the bits of split_k_reduce.
//
// The semaphores: gridDim.x·gridDim.y uint32 just before part (block
// (x, y)'s at index −1 − (y·gridDim.x + x) counted back from part), zero at
// launch and zero again at the end, so a graph replays the launch. Blocks
// start in increasing linear index (z slowest), so the part a block waits
// for has started before it (the assumption CUTLASS's serial split-K makes).
#pragma once

#include "common.cuh"

namespace dainx {

constexpr int kEpiSerial = 32;  // split GEMMs: serial split-K (splitk.cuh)

// serial_sem returns the semaphore of the calling block's output tile.
__device__ __forceinline__ uint32_t* serial_sem(float* part) {
    return reinterpret_cast<uint32_t*>(part) - 1 - ((int64_t)blockIdx.y * gridDim.x + blockIdx.x);
}

// serial_wait makes the calling block wait until *sem == z: thread 0 polls
// it with acquire loads at GPU scope, then the block synchronises, so every
// thread sees the writes of the block that set z.
__device__ __forceinline__ void serial_wait(const uint32_t* sem, uint32_t z) {
    if (threadIdx.x == 0) {
#ifdef __CUDA_ARCH__
        uint32_t s;
        do {
            asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(s) : "l"(sem) : "memory");
        } while (s != z);
#else
        // Host compilers: nvcc's host pass, and the emulator of
        // scripts/kernel-emu, which runs blocks one at a time in order, so
        // the turn must have come already.
        if (__atomic_load_n(sem, __ATOMIC_ACQUIRE) != z) __builtin_trap();
#endif
    }
    __syncthreads();
}

// serial_signal sets *sem = v once every thread of the block has made its
// writes: the block synchronises, then thread 0 stores v with release
// semantics at GPU scope (cumulative: the block's writes are visible to the
// block that acquires v).
__device__ __forceinline__ void serial_signal(uint32_t* sem, uint32_t v) {
    __syncthreads();
    if (threadIdx.x == 0) {
#ifdef __CUDA_ARCH__
        asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(sem), "r"(v) : "memory");
#else
        __atomic_store_n(sem, v, __ATOMIC_RELEASE);
#endif
    }
}

// SplitK is a block's part in a GEMM split over k: the two-kernel split
// (each part to its own slice of part) or the serial one.
struct SplitK {
    bool serial;  // S > 1 and kEpiSerial
    bool last;    // this block applies the epilogue (no split, or the serial split's last part)
    int z;

    __device__ __forceinline__ explicit SplitK(int32_t flags) {
        const bool split = gridDim.z > 1;
        serial = split && (flags & kEpiSerial) != 0;
        z = (int)blockIdx.z;
        last = !split || (serial && z == (int)gridDim.z - 1);
    }
    // begin waits for this part's turn (serial parts after the first).
    __device__ __forceinline__ void begin(float* part) const {
        if (serial && z > 0) serial_wait(serial_sem(part), (uint32_t)z);
    }
    // sum returns the running sum of output element off of the workspace
    // with this part's v added ((0 + p₀) + … in z order); v itself when
    // the split is not serial.
    __device__ __forceinline__ float sum(const float* part, int64_t off, float v) const {
        return serial ? (z == 0 ? 0.f : part[off]) + v : v;
    }
    // put stores v, this part's sum for output element out[o] (workspace
    // element pz[p]): the running sum into pz while a later part follows,
    // else into out (added to it with accumulate).
    __device__ __forceinline__ void put(float* out, int64_t o, float* pz, int64_t p, float v, bool accumulate) const {
        v = sum(pz, p, v);
        if (last) {
            out[o] = accumulate ? out[o] + v : v;
        } else {
            pz[p] = v;
        }
    }
    // end passes the turn on (or resets the semaphore after the last part).
    __device__ __forceinline__ void end(float* part) const {
        if (serial) serial_signal(serial_sem(part), last ? 0u : (uint32_t)z + 1);
    }
};

// dw_epilogue is the end of a dW tile body (linear_backward_dw and its
// variants) after its GEMM: it stores the block's dw outputs (for_each(f)
// calls f(m, n, v) for each of the thread's outputs, unguarded) and, with
// sum_db (uniform across the block), the bias gradient of the tile's rows
// (row_sums() returns the calling thread's row sum, rows m0 + threadIdx.x
// < m0 + bm), into dw and db (= or += by kEpiAccumulate), the split's
// parts (S×O×P) or the serial workspace; P = pcols.
template <class ForEach, class RowSums>
__device__ __forceinline__ void dw_epilogue(ForEach for_each, RowSums row_sums, float* dw, float* db, float* part, int m0,
                                            int bm, int32_t in, int32_t out, int pcols, bool sum_db, int32_t flags) {
    const SplitK sk(flags);
    sk.begin(part);
    const bool accumulate = sk.last && (flags & kEpiAccumulate) != 0;
    float* pz = sk.serial ? part : part + (int64_t)blockIdx.z * out * pcols;
    for_each([&](int m, int n, float v) {
        if (m >= out || n >= in) return;  // guard
        sk.put(dw, (int64_t)m * in + n, pz, (int64_t)m * pcols + n, v, accumulate);
    });
    if (sum_db) {
        const float v = row_sums();
        const int m = m0 + threadIdx.x;
        if ((int)threadIdx.x < bm && m < out) sk.put(db, m, pz, (int64_t)m * pcols + in, v, accumulate);  // guard
    }
    sk.end(part);
}

}  // namespace dainx
