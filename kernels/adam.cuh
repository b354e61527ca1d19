// adam.cuh: the element update shared by adam, adam_at, sparse_adam and
// sparse_adam_at, so that each of them gives an element the same bits for
// the same gradient and constants (PyTorch's formulation of Adam):
//
//   m = β₁·m + omb1·g;  v = β₂·v + omb2·g²;  p −= step·m / (√v·rc2 + ε)
#pragma once

#include "common.cuh"

namespace dainx {

// adam_update applies one Adam step to the element p, m, v with gradient g.
__device__ __forceinline__ void adam_update(float& p, float& m, float& v, float g, float beta1, float beta2, float omb1,
                                            float omb2, float step, float rc2, float eps) {
    const float mi = beta1 * m + omb1 * g;
    const float vi = beta2 * v + omb2 * g * g;
    m = mi;
    v = vi;
    p -= step * mi / (sqrtf(vi) * rc2 + eps);
}

}  // namespace dainx
