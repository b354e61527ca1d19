// linear_backward_dw_tc_128x128: linear_backward_dw_tc with the 128×128 tile
// of the tensor-core family (warps 2×4 of 64×32, BK = 16, 4 cp.async stages;
// gemm_tc.cuh Tc128x128): the weight gradient and, with kEpiBias, the bias
// gradient,   dw[o,i] (= or += by kEpiAccumulate) Σ_b dy[b,o]·x[b,i], db[o]
// likewise, or the split-K parts, TF32 or 3xTF32 (kEpiX3), bit for bit the
// result of linear_backward_dw_tc (same k-order per output); only the tiling
// differs. The flags are linear_backward_dw_tc's.
//
// Serial split-K: with kEpiSerial (32) and S > 1 the parts take turns on
//   a semaphore per output tile and the last applies the epilogue, in one
//   kernel with the bits of the split and split_k_reduce (splitk.cuh); part
//   is then one slice (the output's size, P columns for dw) preceded by
//   gridDim.x·gridDim.y uint32 semaphores, zero at launch and left zero.
// Shapes: dy B×O, x B×I, dw O×I, db O, part S×O×P, P = I + 1 with kEpiBias, else I.
// Launch: block 256 threads; grid (⌈O/128⌉, ⌈I/128⌉, S) with S = ⌈B/kchunk⌉;
//   dynamic shared memory 81 920 bytes (Tc128x128::SMEM_BYTES), above 48 KiB:
//   the caller raises the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
//   first and skips the variant where the device's opt-in limit is lower.
//   Any B, I, O ≥ 1; edges are guarded. 64-bit offsets. Compute capability
//   8.0 or later.
// Atomics: none; deterministic (fixed order per element).
// Reference: compute/ref.LinearBackward (dw, db).
#include "linear_tc.cuh"

extern "C" __global__ void __launch_bounds__(256)
linear_backward_dw_tc_128x128(float* __restrict__ dw, float* __restrict__ db, float* __restrict__ part,
    const float* __restrict__ dy, const float* __restrict__ x, int32_t batch, int32_t in,
    int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    extern __shared__ __align__(16) float dsmem[];
    __shared__ float red[2 * Tc128x128::BM];
    linear_backward_dw_tc_body<Tc128x128>(dsmem, red, dw, db, part, dy, x, batch, in, out, kchunk, flags);
}
