// linear_backward_db: the bias gradient of a Linear layer, a column sum,
// optionally split over the batch.
//
//   gridDim.y = 1:  db[o] (= or += by accumulate) Σ_b dy[b,o]
//   gridDim.y = S:  part[z, o] = Σ_{b ∈ chunk z} dy[b,o]                (=)
//                   then split_k_reduce sums the S parts into db.
//   chunk z = [z·kchunk, min(B, (z+1)·kchunk))
//
// Shapes: dy B×O, db O, part S×O (unused if S = 1).
// Launch: block (32, 8, 1): threadIdx.x picks the column, threadIdx.y the
//   row phase; grid (⌈O/32⌉, S, 1) with S = ⌈B/kchunk⌉; static shared memory
//   8·33·4 = 1 056 bytes. Any B ≥ 0, O ≥ 1. 64-bit offsets.
// Atomics: none; deterministic (fixed phases, summed in a fixed order).
// Reference: compute/ref.LinearBackward (db); the bias part of G in DAIN
//   eq. 5.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
linear_backward_db(float* __restrict__ db, float* __restrict__ part, const float* __restrict__ dy,
                   int32_t batch, int32_t out, int32_t kchunk, int32_t accumulate) {
    __shared__ float s[8][33];
    const int o = blockIdx.x * 32 + threadIdx.x;
    const int64_t b_begin = dainx::min64((int64_t)blockIdx.y * kchunk, (int64_t)batch);
    const int64_t b_end = dainx::min64(b_begin + kchunk, (int64_t)batch);
    float acc = 0.f;
    if (o < out) {  // guard
        for (int64_t b = b_begin + threadIdx.y; b < b_end; b += 8) acc += dy[b * out + o];
    }
    s[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y != 0 || o >= out) return;  // guard
    float v = 0.f;
#pragma unroll
    for (int r = 0; r < 8; ++r) v += s[r][threadIdx.x];
    if (gridDim.y > 1) {
        part[(int64_t)blockIdx.y * out + o] = v;
    } else {
        db[o] = accumulate ? db[o] + v : v;
    }
}
