#!/usr/bin/env bash
# kernel-emu/run.sh: a host emulation of the CUDA kernels, for checking
# their index arithmetic, guards, barriers and warp reductions on a machine
# with no GPU. It is a development aid, not part of CI and no substitute for
# the conformance suite on a GPU (no memory model, no timing, float atomics
# in host order).
#
# It copies kernels/*.cu into a temporary directory with a patched
# common.cuh (the PTX inline assembly replaced by host equivalents), compiles
# them as C++20 with shim.h, which runs every CUDA thread of a block as a
# host thread (std::barrier for __syncthreads and per-warp shuffles), and
# runs emu_test.cpp: each kernel against a float64 loop, plus Philox
# known-answer values. Needs g++ ≥ 12 and python3. Run from the repository
# root; takes about a minute.
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
        '__device__ __forceinline__ void atomic_add(float* p, float v) { std::atomic_ref<float>(*p).fetch_add(v); }\n')
s = s.replace('#include <cstdint>', '#include <cstdint>\n#include "shim.h"', 1)
open(sys.argv[2], 'w').write(s)
s = open(sys.argv[3]).read()
s = cut(s, '// tf32 returns a rounded', '// End of the PTX wrappers.',
        '__device__ __forceinline__ uint32_t tf32(float a) { return emu_tf32(a); }\n'
        '__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) { emu_mma_tf32(d, a, b); }\n'
        '__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) { emu_cp_async4(dst, src, valid); }\n'
        '__device__ __forceinline__ void cp_async_commit() { emu_cp_commit(); }\n'
        'template <int N> __device__ __forceinline__ void cp_async_wait() { emu_cp_wait(N); }\n')
open(sys.argv[4], 'w').write(s)
PY
g++ -std=c++20 -O1 -pthread -w -o "$tmp/emu_test" "$tmp/emu_test.cpp"
"$tmp/emu_test"
