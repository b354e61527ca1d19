// mse_grad: the residual gradient and squared error of a batch.
//
//   delta[b] = scale·(pred[b] − y[b])                                   (=)
//   sq[0]    = Σ_b (pred[b] − y[b])²   if sq ≠ NULL, summed in double   (=)
//
// Shapes: pred, y, delta B; sq 1 or NULL.
// Launch: block 1024 threads; grid 1 when sq ≠ NULL (the block reduces the
//   whole batch), any 1-D grid when sq = NULL (grid-stride loop, 64-bit
//   offsets); static shared memory 32·8 = 256 bytes.
// Atomics: none; deterministic for a fixed block size.
// Reference: compute/ref.MSEGrad; the gradient of DAIN eq. 1 (scale 2/B for
//   the batch mean, 2 for the per-cell loss of eq. 5).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
mse_grad(float* __restrict__ delta, float* __restrict__ sq, const float* __restrict__ pred,
         const float* __restrict__ y, int32_t n, float scale) {
    __shared__ double partial[32];
    double s = 0.0;
    for (int64_t i = dainx::global_index(); i < n; i += dainx::grid_stride()) {  // guard
        const float e = pred[i] - y[i];
        delta[i] = scale * e;
        s += (double)e * (double)e;
    }
    if (sq == nullptr) return;  // uniform across the grid
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    s = dainx::warp_sum_d(s);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    if (warp != 0) return;
    s = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0;
    s = dainx::warp_sum_d(s);
    if (lane == 0) sq[0] = (float)s;
}
