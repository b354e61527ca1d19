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
            bb.arrive_and_wait();
        }
    });
    for (auto& t : ts) t.join();
}
