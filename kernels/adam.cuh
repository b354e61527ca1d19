// adam.cuh: the element update shared by adam, adam_at, sparse_adam and
// sparse_adam_at, so that each of them gives an element the same bits for
// the same gradient and constants (PyTorch's formulation of Adam):
//
//   g′ = g + l2·p if l2 ≠ 0 (coupled L2, p before the step), else g
//   m = β₁·m + omb1·g′;  v = β₂·v + omb2·g′²;  p −= step·m / (√v·rc2 + ε)
//
// g + l2·p is rounded twice (__fmul_rn, __fadd_rn: never contracted into
// an FMA), as the CPU backend forms it; with l2 = 0 the gradient is used
// as it is, so the bits are those of the update without L2.
#pragma once

#include "common.cuh"

namespace dainx {

// adam_update applies one Adam step to the element p, m, v with gradient g
// (g + l2·p when l2 ≠ 0).
__device__ __forceinline__ void adam_update(float& p, float& m, float& v, float g, float beta1, float beta2, float omb1,
                                            float omb2, float step, float rc2, float eps, float l2) {
    if (l2 != 0.f) g = __fadd_rn(g, __fmul_rn(l2, p));
    const float mi = beta1 * m + omb1 * g;
    const float vi = beta2 * v + omb2 * g * g;
    m = mi;
    v = vi;
    p -= step * mi / (sqrtf(vi) * rc2 + eps);
}

// sparse_adam_rows applies adam_update to the rows of a table that a
// batch touched: for u < min(count[0], k), r = rows[u] in [0, table_rows)
// (other rows skipped), e < width: element r·width + e of p, m, v with
// gradient g[u·width + e] (L2 decays these rows only); a grid-stride loop
// over the U·width elements.
__device__ __forceinline__ void sparse_adam_rows(float* __restrict__ p, float* __restrict__ m, float* __restrict__ v,
                                                 const float* __restrict__ g, const int32_t* __restrict__ rows,
                                                 const int32_t* __restrict__ count, int32_t k, int32_t width,
                                                 int32_t table_rows, float beta1, float beta2, float omb1, float omb2,
                                                 float step, float rc2, float eps, float l2) {
    const int32_t u_count = count[0] < k ? count[0] : k;
    const int64_t total = u_count > 0 ? (int64_t)u_count * width : 0;
    for (int64_t t = global_index(); t < total; t += grid_stride()) {  // guard
        const int64_t u = t / width;
        const int e = (int)(t - u * width);
        const int32_t r = rows[u];
        if (r < 0 || r >= table_rows) continue;  // guard
        const int64_t i = (int64_t)r * width + e;
        adam_update(p[i], m[i], v[i], g[t], beta1, beta2, omb1, omb2, step, rc2, eps, l2);
    }
}

}  // namespace dainx
