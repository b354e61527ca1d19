// adam: one fused Adam step (Kingma & Ba, ICLR 2015) in PyTorch's
// formulation, in place.
//
//   g′ = g[i] + l2·p[i] if l2 ≠ 0 (coupled L2), else g[i]
//   m[i] = β₁·m[i] + omb1·g′                                             (=)
//   v[i] = β₂·v[i] + omb2·g′²                                            (=)
//   p[i] −= step·m[i] / (√v[i]·rc2 + ε)                                   (−=)
//   omb1 = 1−β₁, omb2 = 1−β₂, step = lr/(1−β₁ᵗ), rc2 = 1/√(1−β₂ᵗ), formed in
//   float64 on the host and rounded once (1−float32(β₂) would carry 216 ulps
//   of β₂'s rounding error); l2 = float32(AdamStep.L2), 0 for none
//
// Shapes: p, m, v, g all n.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop, 64-bit
//   offsets); no shared memory.
// Atomics: none; deterministic.
// Reference: compute/ref.Adam; minimises DAIN eq. 1.
#include "adam.cuh"

extern "C" __global__ void __launch_bounds__(256)
adam(float* __restrict__ p, float* __restrict__ m, float* __restrict__ v, const float* __restrict__ g,
     int32_t n, float beta1, float beta2, float omb1, float omb2, float step, float rc2, float eps, float l2) {
    for (int64_t i = dainx::global_index(); i < n; i += dainx::grid_stride()) {  // guard
        dainx::adam_update(p[i], m[i], v[i], g[i], beta1, beta2, omb1, omb2, step, rc2, eps, l2);
    }
}
