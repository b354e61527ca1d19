#!/usr/bin/env bash
# kernel-emu/run.sh: a host emulation of the CUDA kernels, for checking
# their index arithmetic, guards, barriers, warp reductions and tensor-core
# fragment layouts on a machine with no GPU. It is a development aid, not
# part of CI and no substitute for the conformance suite on a GPU.
#
# It copies kernels/*.cu and *.cuh into a temporary directory with patched
# headers (the PTX inline assembly of common.cuh and gemm_tc.cuh replaced by
# host equivalents), compiles them as C++20 with shim.h, which runs every
# CUDA thread of a block as a host thread (std::barrier for __syncthreads
# and per-warp exchanges), and runs emu_test.cpp: each kernel against a
# float64 loop, plus Philox known-answer values. EMU_ONLY=tc runs only the
# tensor-core kernels. Needs g++ ≥ 12 and python3. Run from the repository
# root; takes about two minutes on two cores.
#
# What it models:
#   - mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: the warp's lanes
#     exchange fragments and each lane computes its D elements from A and B
#     assembled by the fragment layouts of the PTX ISA; an operand whose 13
#     low bits are not zero (not rounded to TF32) is counted as an error;
#   - cvt.rna.tf32.f32, bit for bit (ties away from zero);
#   - cp.async.ca (4 bytes) and cp.async.cg (16 bytes, alignment checked),
#     with src-size zero-fill: copies are queued per thread, grouped by
#     commit_group and performed only when wait_group lets them complete, so
#     a kernel that reads a stage before waiting for it reads stale data;
#     copies still queued when a block ends are counted as errors.
# What it cannot model:
#   - the tensor cores' own accumulation: the emulator adds the eight
#     products and C exactly (float64) and rounds once, where the hardware
#     may truncate or order differently; so results can differ from a GPU's
#     in the last bits, and accuracy is checked against float64 with a
#     tolerance, not bit for bit;
#   - operands that are not TF32 in hardware (the emulator flags them; the
#     hardware ignores or truncates the low bits);
#   - the memory model: host threads share memory coherently, so a missing
#     __syncthreads between a thread's wait_group and another thread's read,
#     or a missing memory fence, is found only by chance; shared-memory bank
#     conflicts, occupancy, register limits and timing are not modelled;
#   - float atomics, which run in host order; blocks run one at a time, in
#     order, so a last-block reduction (linear_forward_out1_mse) always finds
#     the last block to be gridDim.x − 1;
#   - launch limits (grid dimensions, 48 KiB of static shared memory):
#     check-kernels (ptxas) and the conformance suite on a GPU check those.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp kernels/*.cu kernels/*.cuh "$here/shim.h" "$here/emu_test.cpp" "$tmp/"
python3 - kernels/common.cuh "$tmp/common.cuh" kernels/gemm_tc.cuh "$tmp/gemm_tc.cuh" <<'PY'
import sys
s = open(sys.argv[1]).read()
def cut(s, start, end, repl):
    i, j = s.index(start), s.index(end)
    return s[:i] + repl + s[j:]
s = cut(s, '// shfl_xor returns v of lane', '// warp_sum returns the sum',
        '__device__ __forceinline__ float shfl_xor(float v, int mask) { return emu_shfl_xor(v, mask); }\n'
        '__device__ __forceinline__ double shfl_xor_d(double v, int mask) { return emu_shfl_xor_d(v, mask); }\n')
s = cut(s, '// atomic_add adds v', '// min64 returns',
        '__device__ __forceinline__ void atomic_add(float* p, float v) { std::atomic_ref<float>(*p).fetch_add(v); }\n'
        '__device__ __forceinline__ uint32_t atomic_add_u32(uint32_t* p, uint32_t v) { return std::atomic_ref<uint32_t>(*p).fetch_add(v); }\n'
        '__device__ __forceinline__ void fence_gpu() { std::atomic_thread_fence(std::memory_order_seq_cst); }\n')
s = s.replace('#include <cstdint>', '#include <cstdint>\n#include "shim.h"', 1)
open(sys.argv[2], 'w').write(s)
s = open(sys.argv[3]).read()
s = cut(s, '// tf32 returns a rounded', '// End of the PTX wrappers.',
        '__device__ __forceinline__ uint32_t tf32(float a) { return emu_tf32(a); }\n'
        '__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) { emu_mma_tf32(d, a, b); }\n'
        '__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) { emu_cp_async4(dst, src, valid); }\n'
        '__device__ __forceinline__ void cp_async16(float* dst, const float* src, int bytes) { emu_cp_async16(dst, src, bytes); }\n'
        '__device__ __forceinline__ void cp_async_commit() { emu_cp_commit(); }\n'
        'template <int N> __device__ __forceinline__ void cp_async_wait() { emu_cp_wait(N); }\n')
open(sys.argv[4], 'w').write(s)
PY
# The tile variants of the GEMM family take their stages from dynamic shared
# memory; the emulation gives them a static array as large as the largest.
sed -i 's/extern __shared__ __align__(16) float dsmem\[\];/alignas(16) static float dsmem[32768];/' "$tmp"/*.cu
g++ -std=c++20 -O1 -pthread -w -o "$tmp/emu_test" "$tmp/emu_test.cpp"
"$tmp/emu_test"
