// linear_backward_dw_tc: linear_backward_dw on tensor cores (TF32 or
// 3xTF32), the weight gradient of a Linear layer and, with kEpiBias, its
// bias gradient in the same pass; optionally split over the batch (split-K).
//
//   gridDim.z = 1:  dw[o,i] (= or += by kEpiAccumulate) Σ_b dy[b,o]·x[b,i]
//                   db[o]   (= or += by kEpiAccumulate) Σ_b dy[b,o]
//   gridDim.z = S:  part[z,o,i] = Σ_{b ∈ chunk z} dy[b,o]·x[b,i]
//                   part[z,o,I] = Σ_{b ∈ chunk z} dy[b,o]                (=)
//                   then split_k_reduce adds the S parts in order into dw
//                   (c < I) and db (c = I).
//   Products in TF32, or 3xTF32 if flags has kEpiX3 (16) (gemm_tc.cuh). The
//   bias gradient (kEpiBias, 8) is summed in float32 by the blocks of the
//   first column of tiles (blockIdx.y = 0) from the dy tiles they stage
//   anyway (gemm_tc.cuh sum_a), in a fixed order.
//   chunk z = [z·kchunk, min(B, (z+1)·kchunk)).
//
// Serial split-K: with kEpiSerial (32) and S > 1 the parts take turns on
//   a semaphore per output tile and the last applies the epilogue, in one
//   kernel with the bits of the split and split_k_reduce (splitk.cuh); part
//   is then one slice (the output's size, P columns for dw) preceded by
//   gridDim.x·gridDim.y uint32 semaphores, zero at launch and left zero.
// Shapes: dy B×O, x B×I, dw O×I, db O (written only with kEpiBias), part
//   S×O×P with P = I + 1 with kEpiBias, else I (unused if S = 1).
// Launch: block 128 threads; grid (⌈O/64⌉, ⌈I/64⌉, S) with S = ⌈B/kchunk⌉;
//   static shared memory 40 960 + 512 bytes (gemm_tc.cuh, gemm_row_sums).
//   Any B, I, O ≥ 1. 64-bit offsets. Compute capability 8.0 or later.
// Atomics: none; deterministic (fixed chunks, reduced in a fixed order).
// Reference: compute/ref.LinearBackward (dw, db); with dy = 2e, the per-cell
//   products summed here form the validation gradient sum G of DAIN eq. 5.
#include "linear_tc.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kTcThreads)
linear_backward_dw_tc(float* __restrict__ dw, float* __restrict__ db, float* __restrict__ part,
                      const float* __restrict__ dy, const float* __restrict__ x, int32_t batch, int32_t in,
                      int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    __shared__ __align__(16) float smem[Tc64x64::SMEM_FLOATS];
    __shared__ float red[2 * Tc64x64::BM];
    linear_backward_dw_tc_body<Tc64x64>(smem, red, dw, db, part, dy, x, batch, in, out, kchunk, flags);
}
