// linear_forward_tc: linear_forward on tensor cores (TF32 or 3xTF32), a
// fused Linear layer, GEMM + bias + optional ReLU, optionally split over the
// input width (split-K).
//
//   gridDim.z = 1:  y[b,o] = φ(Σ_i x[b,i]·w[o,i] + bias[o])             (=)
//   gridDim.z = S:  part[z,b,o] = Σ_{i ∈ chunk z} x[b,i]·w[o,i]          (=)
//                   then split_k_reduce adds the S parts in order, the
//                   bias, and applies φ into y.
//   φ = ReLU (v < 0 ? 0 : v, so NaN and −0 pass through) if flags has
//   kEpiRelu (2), else identity; products in TF32, or 3xTF32 if flags has
//   kEpiX3 (16) (gemm_tc.cuh); chunk z = [z·kchunk, min(I, (z+1)·kchunk)).
//
// Serial split-K: with kEpiSerial (32) and S > 1 the parts take turns on
//   a semaphore per output tile and the last applies the epilogue, in one
//   kernel with the bits of the split and split_k_reduce (splitk.cuh); part
//   is then one slice (the output's size, P columns for dw) preceded by
//   gridDim.x·gridDim.y uint32 semaphores, zero at launch and left zero.
// Shapes: x B×I, w O×I (PyTorch's nn.Linear layout), bias O, y B×O,
//   part S×B×O (unused if S = 1).
// Launch: block 128 threads; grid (⌈B/64⌉, ⌈O/64⌉, S) with S = ⌈I/kchunk⌉;
//   static shared memory 40 960 bytes (gemm_tc.cuh). Any B, I, O ≥ 1;
//   edges are guarded. 64-bit offsets. Compute capability 8.0 or later.
// Atomics: none; deterministic (fixed order per element).
// Reference: compute/ref.LinearForward; DAIN eq. 4, Z_m = φ(W_m Z_{m−1} + b_m).
#include "linear_tc.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kTcThreads)
linear_forward_tc(float* __restrict__ y, float* __restrict__ part, const float* __restrict__ x,
                  const float* __restrict__ w, const float* __restrict__ bias, int32_t batch, int32_t in,
                  int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    __shared__ __align__(16) float smem[Tc64x64::SMEM_FLOATS];
    linear_forward_tc_body<Tc64x64>(smem, y, part, x, w, bias, batch, in, out, kchunk, flags);
}
