// shim.h: just enough of CUDA to run the kernels of kernels/ on the host,
// one host thread per CUDA thread and one block at a time. See run.sh.
#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <vector>
#include <thread>
#include <functional>
#include <deque>
#include <cstdio>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct uint3_ { unsigned x, y, z; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct uint4 { uint32_t x, y, z, w; };
struct uint2 { uint32_t x, y; };
struct float4 { float x, y, z, w; };
inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return {a, b, c, d}; }
inline uint2 make_uint2(uint32_t a, uint32_t b) { return {a, b}; }
inline thread_local uint3_ threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline uint32_t __umulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
// __fadd_rn, __fmul_rn: one rounded float32 operation each, never fused
// (the host build has no FMA contraction across these calls).
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline std::barrier<>* g_block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> g_warp_barriers;
inline double g_xchg[1024];
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline int emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline double emu_shfl(double v, int mask) {
    int t = emu_tid(); int lane = t & 31; auto& b = *g_warp_barriers[t >> 5];
    g_xchg[t] = v; b.arrive_and_wait(); double r = g_xchg[(t & ~31) | (lane ^ mask)]; b.arrive_and_wait(); return r;
}
inline float emu_shfl_xor(float v, int mask) { return (float)emu_shfl((double)v, mask); }
inline double emu_shfl_xor_d(double v, int mask) { return emu_shfl(v, mask); }
// __syncwarp (dainx::sync_warp on the host): the calling thread's warp
// meets; every lane of the warp must call it, as the full mask requires.
inline void __syncwarp(unsigned = 0xffffffffu) { g_warp_barriers[emu_tid() >> 5]->arrive_and_wait(); }

// g_emu_errors counts violations of the PTX rules the emulator checks (an
// mma operand that is not TF32, a misaligned 16-byte cp.async, cp.async
// copies left pending at the end of a block); emu_test fails if it is not
// zero.
inline std::atomic<int> g_emu_errors{0};

// emu_tf32 is cvt.rna.tf32.f32: a rounded to 10 explicit mantissa bits, to
// nearest with ties away from zero (add half an ulp of TF32 to the
// magnitude bits, then truncate), NaN kept NaN, overflow to infinity.
inline uint32_t emu_tf32(float a) {
    uint32_t u; memcpy(&u, &a, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x7fffffu) ? (u | 0x7fc00000u) & 0xffffe000u : u;
    return (u + 0x1000u) & 0xffffe000u;
}

// emu_mma_tf32 is mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for
// the calling lane: every lane of the warp deposits its fragments, the warp
// meets, each lane assembles A (16×8) and B (8×8) from the fragment layouts
// of the PTX ISA (g = lane/4, t = lane mod 4: a0 (g,t), a1 (g+8,t),
// a2 (g,t+4), a3 (g+8,t+4); b0 (t,g), b1 (t+4,g); d0 (g,2t), d1 (g,2t+1),
// d2 (g+8,2t), d3 (g+8,2t+1)) and computes its four D elements in float64,
// rounded once to float32. Operands whose 13 low bits are not zero (not
// TF32, a missing cvt) count as errors.
inline uint32_t g_mma_xchg[1024][6];
inline void emu_mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    int t = emu_tid(); auto& bar = *g_warp_barriers[t >> 5];
    for (int i = 0; i < 4; ++i) g_mma_xchg[t][i] = a[i];
    g_mma_xchg[t][4] = b[0]; g_mma_xchg[t][5] = b[1];
    bar.arrive_and_wait();
    double A[16][8], B[8][8];
    auto f = [](uint32_t u) { float x; memcpy(&x, &u, 4); return (double)x; };
    for (int l = 0; l < 32; ++l) {
        const uint32_t* x = g_mma_xchg[(t & ~31) | l];
        for (int i = 0; i < 6; ++i) if (x[i] & 0x1fffu) { g_emu_errors++; break; }
        int gl = l >> 2, tl = l & 3;
        A[gl][tl] = f(x[0]); A[gl + 8][tl] = f(x[1]); A[gl][tl + 4] = f(x[2]); A[gl + 8][tl + 4] = f(x[3]);
        B[tl][gl] = f(x[4]); B[tl + 4][gl] = f(x[5]);
    }
    int lane = t & 31, g = lane >> 2, tq = lane & 3;
    for (int c = 0; c < 4; ++c) {
        int r = g + (c >> 1) * 8, col = 2 * tq + (c & 1);
        double s = d[c];
        for (int k = 0; k < 8; ++k) s += A[r][k] * B[k][col];
        d[c] = (float)s;
    }
    bar.arrive_and_wait();
}

// cp.async: a copy is queued when issued, its group closed by commit, and
// performed only when wait_group lets it complete; so a kernel that reads a
// stage before waiting for it reads the previous contents.
// A copy of size floats reads the first n of them (src-size = 4n bytes)
// and zero-fills the rest; 16-byte copies must have 16-byte aligned
// addresses (checked).
struct EmuCopy { float* dst; const float* src; int size, n; };
inline thread_local std::vector<EmuCopy> emu_cp_open;
inline thread_local std::deque<std::vector<EmuCopy>> emu_cp_groups;
inline void emu_cp_async4(float* dst, const float* src, bool valid) { emu_cp_open.push_back({dst, src, 1, valid ? 1 : 0}); }
inline void emu_cp_async16(float* dst, const float* src, int bytes) {
    if (((uintptr_t)dst & 15) || ((uintptr_t)src & 15) || bytes < 0 || bytes > 16 || bytes % 4) g_emu_errors++;
    emu_cp_open.push_back({dst, src, 4, bytes / 4});
}
inline void emu_cp_commit() { emu_cp_groups.push_back(std::move(emu_cp_open)); emu_cp_open.clear(); }
inline void emu_cp_wait(int n) {
    while ((int)emu_cp_groups.size() > n) {
        for (auto& c : emu_cp_groups.front())
            for (int i = 0; i < c.size; ++i) c.dst[i] = i < c.n ? c.src[i] : 0.f;
        emu_cp_groups.pop_front();
    }
}
// emu_cp_block_end counts copies still queued when a thread leaves a block.
inline void emu_cp_block_end() {
    size_t n = emu_cp_open.size();
    for (auto& g : emu_cp_groups) n += g.size();
    if (n) g_emu_errors++;
    emu_cp_open.clear(); emu_cp_groups.clear();
}

// launch runs kernel f over grid × block, one block at a time, one host
// thread per CUDA thread; the same host threads run every block in turn,
// meeting at a barrier between blocks (so a block's static __shared__ arrays
// are reused, as on a GPU, but never by two blocks at once). As on a GPU,
// every thread of a block must reach the same number of __syncthreads.
template <class F>
void launch(dim3 grid, dim3 block, F f) {
    gridDim = grid; blockDim = block;
    int n = block.x * block.y * block.z;
    std::barrier<> bb(n); g_block_barrier = &bb;
    g_warp_barriers.clear();
    for (int w = 0; w < (n + 31) / 32; ++w) g_warp_barriers.emplace_back(new std::barrier<>(std::min(32, n - 32 * w)));
    std::vector<std::thread> ts;
    for (int t = 0; t < n; ++t) ts.emplace_back([=, &bb] {
        threadIdx = {(unsigned)(t % block.x), (unsigned)((t / block.x) % block.y), (unsigned)(t / (block.x * block.y))};
        for (unsigned bz = 0; bz < grid.z; ++bz) for (unsigned by = 0; by < grid.y; ++by) for (unsigned bx = 0; bx < grid.x; ++bx) {
            blockIdx = {bx, by, bz};
            f();
            emu_cp_block_end();
            bb.arrive_and_wait();
        }
    });
    for (auto& t : ts) t.join();
}
