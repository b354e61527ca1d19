// linear_backward_dx_tc: linear_backward_dx on tensor cores (TF32 or
// 3xTF32), the input gradient of a Linear layer with the ReLU mask of the
// layer below, optionally split over the output width (split-K).
//
//   gridDim.z = 1:  dx[b,i] = (Σ_o dy[b,o]·w[o,i]) · m[b,i]             (=)
//   gridDim.z = S:  part[z,b,i] = Σ_{o ∈ chunk z} dy[b,o]·w[o,i]         (=)
//                   then split_k_reduce adds the S parts in order and
//                   applies the mask into dx.
//   m[b,i] = [x[b,i] > 0] if flags has kEpiMask (4) (NaN gives 0), else 1;
//   products in TF32, or 3xTF32 if flags has kEpiX3 (16) (gemm_tc.cuh);
//   chunk z = [z·kchunk, min(O, (z+1)·kchunk)).
//
// Serial split-K: with kEpiSerial (32) and S > 1 the parts take turns on
//   a semaphore per output tile and the last applies the epilogue, in one
//   kernel with the bits of the split and split_k_reduce (splitk.cuh); part
//   is then one slice (the output's size, P columns for dw) preceded by
//   gridDim.x·gridDim.y uint32 semaphores, zero at launch and left zero.
// Shapes: dy B×O, w O×I, x B×I (read only with the mask), dx B×I,
//   part S×B×I (unused if S = 1).
// Launch: block 128 threads; grid (⌈B/64⌉, ⌈I/64⌉, S) with S = ⌈O/kchunk⌉;
//   static shared memory 40 960 bytes (gemm_tc.cuh). Any B, I, O ≥ 1;
//   edges are guarded. 64-bit offsets. Compute capability 8.0 or later.
// Atomics: none; deterministic.
// Reference: compute/ref.LinearBackward (dx); backpropagation through DAIN
//   eq. 4.
#include "linear_tc.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kTcThreads)
linear_backward_dx_tc(float* __restrict__ dx, float* __restrict__ part, const float* __restrict__ dy,
                      const float* __restrict__ w, const float* __restrict__ x, int32_t batch, int32_t in,
                      int32_t out, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    __shared__ __align__(16) float smem[Tc64x64::SMEM_FLOATS];
    linear_backward_dx_tc_body<Tc64x64>(smem, dx, part, dy, w, x, batch, in, out, kchunk, flags);
}
