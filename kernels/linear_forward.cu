// linear_forward: a fused Linear layer, GEMM + bias + optional ReLU.
//
//   y[b,o] = φ(Σ_i x[b,i]·w[o,i] + bias[o])                            (=)
//   φ = ReLU (v < 0 ? 0 : v, so NaN and −0 pass through) if relu ≠ 0,
//   else identity
//
// Shapes: x B×I, w O×I (PyTorch's nn.Linear layout), bias O, y B×O.
// Launch: block 256 threads (16×16); grid (⌈B/64⌉, ⌈O/64⌉, 1); static shared
//   memory 17 408 bytes (common.cuh gemm_64x64). Any B, I, O ≥ 1; edges are
//   guarded. 64-bit offsets.
// Atomics: none; deterministic (k summed in a fixed order per element).
// Reference: compute/ref.LinearForward; DAIN eq. 4, Z_m = φ(W_m Z_{m−1} + b_m).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(dainx::kGemmThreads)
linear_forward(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ w,
               const float* __restrict__ bias, int32_t batch, int32_t in, int32_t out, int32_t relu) {
    using namespace dainx;
    const int m0 = blockIdx.x * kGemmBM, n0 = blockIdx.y * kGemmBN;
    float acc[4][4];
    // C(b,o) = Σ_i A(b,i)·B(i,o), A(b,i) = x[b·I + i], B(i,o) = w[o·I + i].
    gemm_64x64<kKContig, kKContig>(acc, x, in, w, in, batch, out, m0, n0, 0, in);
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty * 4 + i;
        if (m >= batch) continue;  // guard
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx * 4 + j;
            if (n >= out) continue;  // guard
            float v = acc[i][j] + bias[n];
            if (relu && v < 0.f) v = 0.f;
            y[(int64_t)m * out + n] = v;
        }
    }
}
