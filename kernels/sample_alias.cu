// sample_alias: one draw per row from a Vose alias table, written to column
// col of the M×N matrix out; counter-based, so the result depends only on
// (key, ctr, m, col), never on the launch shape.
//
//   c = ctr + m;  (r₀, r₁, _, _) = Philox4x32-10((lo c, hi c, col, 0), (lo key, hi key))
//   j = ⌊r₀·I / 2³²⌋;  out[m·N + col] = r₁ < thresh[j] ? j : alias[j]    (=, column col)
//
// Shapes: out M×N int32, thresh I (uint32 bit patterns of ⌊p·2³²⌋ in
//   int32 storage), alias I int32; I ≥ 1.
// Launch: block 256 threads; 1-D grid of any size (grid-stride loop over M,
//   64-bit offsets); no shared memory.
// Atomics: none; deterministic and bit-identical to compute.AliasDraw.
// Reference: compute/ref.SampleAlias, compute.AliasDraw; DAIN Algorithm 1,
//   lines 10–12 (weighted sampling on α⁽ⁿ⁾); Vose, IEEE TSE 17(9), 1991;
//   Salmon et al., SC 2011.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
sample_alias(int32_t* __restrict__ out, const int32_t* __restrict__ thresh, const int32_t* __restrict__ alias,
             int32_t count, int32_t order, int32_t col, int32_t size, uint64_t key, uint64_t ctr) {
    const uint2 k = make_uint2((uint32_t)key, (uint32_t)(key >> 32));
    for (int64_t m = dainx::global_index(); m < count; m += dainx::grid_stride()) {  // guard
        const uint64_t c = ctr + (uint64_t)m;
        const uint4 r = dainx::philox4x32_10(make_uint4((uint32_t)c, (uint32_t)(c >> 32), (uint32_t)col, 0u), k);
        const uint32_t j = __umulhi(r.x, (uint32_t)size);  // (uint64(r₀)·I) >> 32
        out[m * order + col] = r.y < (uint32_t)thresh[j] ? (int32_t)j : alias[j];
    }
}
