// adam_at: adam with the step's two bias-correction constants read from
// device memory when the kernel runs, not passed by value at launch, so
// that one launch captured in a CUDA graph replays every training step with
// that step's constants (the host writes them into sc before each replay):
//
//   g′ = g[i] + l2·p[i] if l2 ≠ 0 (coupled L2), else g[i]
//   m[i] = β₁·m[i] + omb1·g′                                             (=)
//   v[i] = β₂·v[i] + omb2·g′²                                            (=)
//   p[i] −= sc[0]·m[i] / (√v[i]·sc[1] + ε)                               (−=)
//   sc[0] = step = lr/(1−β₁ᵗ), sc[1] = rc2 = 1/√(1−β₂ᵗ), float32, formed in
//   float64 on the host and rounded once (compute.AdamScalars); l2 =
//   float32(AdamStep.L2), 0 for none; with the same constants every
//   element gets adam's bits (adam.cuh).
//
// Shapes: p, m, v, g all n; sc 2.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop, 64-bit
//   offsets); no shared memory.
// Atomics: none; deterministic.
// Reference: compute/ref.Adam; minimises DAIN eq. 1.
#include "adam.cuh"

extern "C" __global__ void __launch_bounds__(256)
adam_at(float* __restrict__ p, float* __restrict__ m, float* __restrict__ v, const float* __restrict__ g,
        const float* __restrict__ sc, int32_t n, float beta1, float beta2, float omb1, float omb2, float eps,
        float l2) {
    const float step = sc[0], rc2 = sc[1];
    for (int64_t i = dainx::global_index(); i < n; i += dainx::grid_stride()) {  // guard
        dainx::adam_update(p[i], m[i], v[i], g[i], beta1, beta2, omb1, omb2, step, rc2, eps, l2);
    }
}
