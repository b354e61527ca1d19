// linear_forward_out1_mse: DAIN's output layer (a Linear layer with one
// output) fused with the gradient and squared error of the MSE loss, so a
// training step launches one kernel where linear_forward_out1 and mse_grad
// launch two:
//
//   pred[b]  = φ(Σ_i x[b,i]·w[i] + bias[0])                             (=)
//   delta[b] = scale·(pred[b] − y[b])                                   (=)
//   sq[0]    = Σ_b (pred[b] − y[b])²   if sq ≠ NULL, summed in double   (=)
//   φ = ReLU (v < 0 ? 0 : v) if flags has kEpiRelu (2), else identity.
//
// pred and delta are bit for bit those of linear_forward_out1 followed by
// mse_grad (the same lane order and warp butterfly per row, the same
// formula). sq is summed in another fixed order: each warp adds the squares
// of its rows in row order, each block its warps in warp order into
// part[blockIdx.x], and the last block to finish (counted on *count with an
// atomic, which that block resets to 0) adds the gridDim.x parts in block
// order and rounds once. So sq may differ from mse_grad's in the last bit,
// and is the same on every launch with the same grid.
//
// Shapes: x B×I, w 1×I, bias 1, y, pred, delta B; sq 1 or NULL; part at
//   least gridDim.x doubles and count 1 word (zero before the first launch;
//   each launch leaves it zero), scratch of the caller, neither touched when
//   sq = NULL.
// Launch: block 256 threads (8 warps); 1-D grid of any size (grid-stride
//   loop over rows, one warp each); static shared memory 8·8 + 4 bytes.
//   Launches sharing part and count must not overlap (one stream).
// Atomics: one atom.add.u32 per block on count, for ordering only;
//   deterministic for a fixed grid.
// Reference: compute/ref.LinearForward with out = 1, then
//   compute/ref.MSEGrad; DAIN eq. 4 and the gradient of eq. 1.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
linear_forward_out1_mse(float* __restrict__ pred, float* __restrict__ delta, float* __restrict__ sq,
                        double* __restrict__ part, uint32_t* __restrict__ count, const float* __restrict__ x,
                        const float* __restrict__ w, const float* __restrict__ bias,
                        const float* __restrict__ y, int32_t batch, int32_t in, int32_t flags,
                        float scale) {
    using namespace dainx;
    __shared__ double warp_part[8];
    __shared__ int last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t warps = grid_stride() >> 5;
    const float b0 = bias[0];
    double s = 0.0;  // this warp's squares, the same in every lane
    for (int64_t row = global_index() >> 5; row < batch; row += warps) {  // guard (warp-uniform)
        const float* __restrict__ xr = x + row * in;
        float s0 = 0.f, s1 = 0.f;
        int i = lane;
        for (; i + 32 < in; i += 64) {  // two independent chains, as linear_forward_out1
            s0 = fmaf(xr[i], w[i], s0);
            s1 = fmaf(xr[i + 32], w[i + 32], s1);
        }
        if (i < in) s0 = fmaf(xr[i], w[i], s0);  // guard
        float v = warp_sum(s0 + s1) + b0;
        if ((flags & kEpiRelu) && v < 0.f) v = 0.f;
        const float e = v - y[row];
        if (lane == 0) {
            pred[row] = v;
            delta[row] = scale * e;
        }
        s += (double)e * (double)e;
    }
    if (sq == nullptr) return;  // uniform across the grid
    if (lane == 0) warp_part[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double b = 0.0;
        for (int k = 0; k < (int)(blockDim.x >> 5); ++k) b += warp_part[k];
        part[blockIdx.x] = b;
        fence_gpu();  // part[blockIdx.x] is visible before the count says so
        last = atomic_add_u32(count, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || threadIdx.x != 0) return;
    fence_gpu();
    double t = 0.0;
    for (uint32_t k = 0; k < gridDim.x; ++k) t += ((volatile double*)part)[k];
    sq[0] = (float)t;
    *count = 0;  // ready for the next launch
}
