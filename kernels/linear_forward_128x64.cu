// linear_forward_128x64: linear_forward with the 128×64 tile of the fp32
// SIMT family (gemm_simt.cuh Simt128x64, 8×8 outputs per thread): the
// forward GEMM + bias + optional ReLU: y[b,o] = φ(Σ_i x[b,i]·w[o,i] +
// bias[o]), or the split-K parts (=). Bit for bit the result of
// linear_forward (the same fmaf chain per output); only the tiling differs.
// The flags are linear_forward's.
//
// Serial split-K: with kEpiSerial (32) and S > 1 the parts take turns on
//   a semaphore per output tile and the last applies the epilogue, in one
//   kernel with the bits of the split and split_k_reduce (splitk.cuh); part
//   is then one slice (the output's size, P columns for dw) preceded by
//   gridDim.x·gridDim.y uint32 semaphores, zero at launch and left zero.
// Shapes: x B×I, w O×I, bias O, y B×O, part S×B×O (unused if S = 1).
// Launch: block 128 threads; grid (⌈B/128⌉, ⌈O/64⌉, S) with S = ⌈I/kchunk⌉;
// static shared memory (gemm_simt.cuh). Any B, I, O ≥ 1; edges are guarded.
// 64-bit offsets.
// Atomics: none; deterministic (fixed order per element).
// Reference: compute/ref.LinearForward; DAIN eq. 4.
#include "linear_simt.cuh"

extern "C" __global__ void __launch_bounds__(128)
linear_forward_128x64(float* __restrict__ y, float* __restrict__ part, const float* __restrict__ x,
    const float* __restrict__ w, const float* __restrict__ bias, int32_t batch, int32_t in,
    int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    linear_forward_simt<Simt128x64>(y, part, x, w, bias, batch, in, out, kchunk, flags);
}
