// pairwise_backward: the gradient of Σ_b dy[b]·f_b(x), f_b the term of an
// order-2 factorization machine that pairwise_forward adds for cell b, one
// thread per element of x.
//
//   dx[b,n,k]   += dy[b]·Σ_{n′≠n} x[b,n′,k]   for k < K = E−1            (+=)
//   dx[b,n,E−1] += dy[b]                                                 (+=)
//   x[b,n,e] = x[b·N·E + n·E + e] (ModeMajor)
//
// The sum over n′ ≠ n is formed directly in increasing n′ (no subtraction
// of x[b,n,k] from the column sum, which would cancel), then
// dx = fma(dy[b], sum, dx).
//
// Shapes: x and dx B×(N·E), dy B; N ≥ 1, E ≥ 2.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over
//   the B·N·E elements, 64-bit offsets); no shared memory.
// Atomics: none; deterministic (each element written by one thread).
// Reference: compute/ref.PairwiseBackward; Rendle, "Factorization
//   Machines", ICDM 2010, eq. 1 and Lemma 3.1.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
pairwise_backward(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, int32_t batch,
                  int32_t order, int32_t width) {
    const int64_t ne = (int64_t)order * width;
    const int64_t total = (int64_t)batch * ne;
    for (int64_t i = dainx::global_index(); i < total; i += dainx::grid_stride()) {  // guard
        const int64_t b = i / ne;
        const int r = (int)(i - b * ne);
        const int n = r / width;
        const int e = r - n * width;
        const float d = dy[b];
        if (e == width - 1) {
            dx[i] += d;
            continue;
        }
        const float* __restrict__ xb = x + b * ne;
        float s = 0.f;
        for (int n2 = 0; n2 < order; ++n2) {
            if (n2 != n) s += xb[(int64_t)n2 * width + e];
        }
        dx[i] = fmaf(d, s, dx[i]);
    }
}
