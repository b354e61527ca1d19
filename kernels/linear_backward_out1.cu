// linear_backward_out1: every gradient of a Linear layer with one output
// (DAIN's output layer) in one pass over x, optionally split over the batch.
//
//   dx[b,i] = dy[b]·w[i] · m[b,i]                              (=, dx ≠ null)
//   gridDim.y = 1:  dw[i] (= or += by kEpiAccumulate) Σ_b dy[b]·x[b,i]
//                   db[0] (= or += by kEpiAccumulate) Σ_b dy[b]
//                   (each only when its pointer is not null)
//   gridDim.y = S:  part[z,i] = Σ_{b ∈ chunk z} dy[b]·x[b,i],
//                   part[z,I] = Σ_{b ∈ chunk z} dy[b]                   (=)
//                   then split_k_reduce (R = 1, C = I, P = I + 1) adds the
//                   S parts in order into dw and db (part is null when only
//                   dx is wanted: the split then only spreads the rows).
//   m[b,i] = [x[b,i] > 0] if flags has kEpiMask (4), else 1;
//   chunk z = [z·kchunk, min(B, (z+1)·kchunk)).
//
// Thread (tx, ty) of block (bx, z) owns column i = 32·bx + tx and the rows
// b ≡ ty (mod 8) of chunk z; the 8 row phases are added in order through
// shared memory. Every block sums dy over its rows (the same in each
// column block); column block 0 writes it.
//
// Shapes: dy B×1, x B×I, w 1×I, dx B×I, dw 1×I, db 1, part S×(I+1)
//   (unused if S = 1).
// Launch: block (32, 8, 1); grid (⌈I/32⌉, S, 1) with S = ⌈B/kchunk⌉;
//   static shared memory 2·8·33·4 = 2 112 bytes. Any B, I ≥ 1; 64-bit
//   offsets.
// Atomics: none; deterministic (fixed phases and order).
// Reference: compute/ref.LinearBackward with out = 1.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
linear_backward_out1(float* __restrict__ dx, float* __restrict__ dw, float* __restrict__ db,
                     float* __restrict__ part, const float* __restrict__ dy, const float* __restrict__ x,
                     const float* __restrict__ w, int32_t batch, int32_t in, int32_t kchunk, int32_t flags) {
    using namespace dainx;
    __shared__ float sw[8][33], sb[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    const int64_t b_begin = min64((int64_t)blockIdx.y * kchunk, (int64_t)batch);
    const int64_t b_end = min64(b_begin + kchunk, (int64_t)batch);
    const bool mask = (flags & kEpiMask) != 0;
    const bool want_w = dw != nullptr, want_x = dx != nullptr;
    const float wc = c < in ? w[c] : 0.f;  // guard
    float accw = 0.f, accb = 0.f;
    for (int64_t b = b_begin + threadIdx.y; b < b_end; b += 8) {
        const float d = dy[b];
        accb += d;
        if (c < in) {  // guard
            const int64_t off = b * in + c;
            const float xv = (want_w || mask) ? x[off] : 0.f;
            if (want_w) accw = fmaf(d, xv, accw);
            if (want_x) dx[off] = (mask && !(xv > 0.f)) ? 0.f : d * wc;
        }
    }
    sw[threadIdx.y][threadIdx.x] = accw;
    sb[threadIdx.y][threadIdx.x] = accb;
    __syncthreads();
    if (threadIdx.y != 0) return;
    float vw = 0.f, vb = 0.f;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
        vw += sw[r][threadIdx.x];
        vb += sb[r][threadIdx.x];
    }
    const bool bias_lane = blockIdx.x == 0 && threadIdx.x == 0;
    if (gridDim.y > 1) {
        if (part == nullptr) return;  // dx only
        float* __restrict__ pz = part + (int64_t)blockIdx.y * (in + 1);
        if (c < in) pz[c] = vw;  // guard
        if (bias_lane) pz[in] = vb;
        return;
    }
    const bool accumulate = (flags & kEpiAccumulate) != 0;
    if (want_w && c < in) dw[c] = accumulate ? dw[c] + vw : vw;  // guard
    if (db != nullptr && bias_lane) db[0] = accumulate ? db[0] + vb : vb;
}
