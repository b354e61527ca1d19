// compact_rows: sums a batch gradient at the gathered input into the
// compact rows distinct_rows found, the sparse adjoint of gather:
//
//   grad[u·E+e] = Σ_{j=starts[u]}^{starts[u+1]−1} dx[pos(perm[j], e)]    (=)
//
// for u < U = count[0] (read on the device) and e < E, summed in float32 in
// increasing j from 0.0f, one thread an element: the order of the CPU
// backend, so the result is bit for bit the CPU's, and deterministic.
//   layout 0 (ModeMajor): pos(k, e) = k·E + e
//   layout 1 (RankMajor): pos(k, e) = (k/N)·N·E + e·N + k mod N
//
// Shapes: dx B×(N·E), perm K = B·N, starts K+1, count 1, grad K×E (rows U
//   to K−1 are not written; a count above K is taken as K).
// Launch: block 256 threads; 1-D grid of any size, sized for K·E elements
//   since U is on the device (grid-stride loop over the U·E elements,
//   64-bit offsets); no shared memory.
// Atomics: none; deterministic.
// Reference: compute/ref.CompactRows; the embedding part of the gradient of
//   DAIN eq. 1 through eq. 4, compacted to the rows a batch touched.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
compact_rows(float* __restrict__ grad, const float* __restrict__ dx, const int32_t* __restrict__ starts,
             const int32_t* __restrict__ perm, const int32_t* __restrict__ count, int32_t k, int32_t order,
             int32_t width, int32_t layout) {
    const int32_t u_count = count[0] < k ? count[0] : k;
    const int64_t total = u_count > 0 ? (int64_t)u_count * width : 0;
    for (int64_t t = dainx::global_index(); t < total; t += dainx::grid_stride()) {  // guard
        const int64_t u = t / width;
        const int e = (int)(t - u * width);
        const int j1 = starts[u + 1];
        float s = 0.f;
        for (int j = starts[u]; j < j1; ++j) {
            const int64_t p = perm[j];
            int64_t src = p * width + e;
            if (layout == 1) {
                const int64_t b = p / order;
                const int n = (int)(p - b * order);
                src = b * order * width + (int64_t)e * order + n;
            }
            s += dx[src];
        }
        grad[t] = s;
    }
}
