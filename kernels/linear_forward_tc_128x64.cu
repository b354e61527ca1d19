// linear_forward_tc_128x64: linear_forward_tc with the 128×64 tile of the
// tensor-core family (warps 4×2 of 32×32, BK = 16, 4 cp.async stages;
// gemm_tc.cuh Tc128x64): the forward GEMM + bias + optional ReLU,   y[b,o] =
// φ(Σ_i x[b,i]·w[o,i] + bias[o]), or the split-K parts (=), TF32 or 3xTF32
// (kEpiX3), bit for bit the result of linear_forward_tc (same k-order per
// output); only the tiling differs. The flags are linear_forward_tc's.
//
// Serial split-K: with kEpiSerial (32) and S > 1 the parts take turns on
//   a semaphore per output tile and the last applies the epilogue, in one
//   kernel with the bits of the split and split_k_reduce (splitk.cuh); part
//   is then one slice (the output's size, P columns for dw) preceded by
//   gridDim.x·gridDim.y uint32 semaphores, zero at launch and left zero.
// Shapes: x B×I, w O×I, bias O, y B×O, part S×B×O (unused if S = 1).
// Launch: block 256 threads; grid (⌈B/128⌉, ⌈O/64⌉, S) with S = ⌈I/kchunk⌉;
//   dynamic shared memory 61 440 bytes (Tc128x64::SMEM_BYTES), above 48 KiB:
//   the caller raises the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
//   first and skips the variant where the device's opt-in limit is lower.
//   Any B, I, O ≥ 1; edges are guarded. 64-bit offsets. Compute capability
//   8.0 or later.
// Atomics: none; deterministic (fixed order per element).
// Reference: compute/ref.LinearForward; DAIN eq. 4.
#include "linear_tc.cuh"

extern "C" __global__ void __launch_bounds__(256)
linear_forward_tc_128x64(float* __restrict__ y, float* __restrict__ part, const float* __restrict__ x,
    const float* __restrict__ w, const float* __restrict__ bias, int32_t batch, int32_t in,
    int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    extern __shared__ __align__(16) float dsmem[];
    linear_forward_tc_body<Tc128x64>(dsmem, y, part, x, w, bias, batch, in, out, kchunk, flags);
}
