// distinct_rows: groups the K global rows of a batch by row, for the sparse
// embedding gradient (compact_rows, then sparse_adam):
//
//   count[0]  = U, the number of distinct values of cells                (=)
//   rows[u]   = the u-th smallest of them, u < U                          (=)
//   starts[u] = #{k : cells[k] < rows[u]}, u ≤ U (starts[U] = K)          (=)
//   perm[j]   = the positions k of cells ordered by (cells[k], k)         (=)
//
// One block sorts the keys cells[k]·2³² + k, which are distinct (so the
// order is the stable one), with a bitonic network over P keys, P the
// least power of two ≥ K (the padding keys 2⁶⁴−1 sort last): all in shared
// memory when P ≤ 4096; otherwise each 4096-key tile is sorted in shared
// memory into the scratch keys, and each later merge stage runs its steps
// of distance ≥ 4096 on keys and the rest tile by tile in shared memory.
// Warp w owns the pairs [w·32q, (w+1)·32q) of a step, q = max(1, P/2048)
// (or the tile's 2), so the steps of distance ≤ 32q stay inside a warp and
// end with a warp barrier, the others with a block barrier. Then thread t
// counts the row starts among the sorted keys [t·c, (t+1)·c), c =
// ⌈K/1024⌉, a block scan numbers them and the thread writes their rows and
// starts. Integer work: the result is exact, the same on every launch and
// bit for bit compute/ref's (and the CPU backend's radix sort's).
//
// Shapes: cells, rows, perm K ≤ 2³⁰; starts K+1; count 1; keys scratch of
//   the caller, P uint64 (8P bytes, 8-byte aligned) when P > 4096, else
//   unused (may be NULL). rows[U:] and starts[U+1:] are not written. A
//   negative row (a caller bug) sorts after every other.
// Launch: grid 1, block 1024 threads (other blocks return at once); static
//   shared memory 4096·8 + 1024·4 + 32·4 = 36 992 bytes. It reads nothing
//   back to the host: U stays on the device (capturable in a CUDA graph).
// Atomics: none; deterministic.
// Reference: compute/ref.DistinctRows (a stable sort of the positions).
#include "common.cuh"

namespace dainx {

constexpr int kDistinctThreads = 1024;  // the block
constexpr int kDistinctTile = 4096;     // keys sorted in shared memory at a time

// distinct_step runs step (k, j) of the bitonic network on the n keys s (n
// a power of two) whose first has index base in the whole sequence: the
// pair (i, i+j), i mod 2j < j, is put in ascending order where (base+i) & k
// is 0 and in descending order elsewhere. Warp w handles the pairs
// (w·q + r)·32 + lane, r < q = max(1, n/2048).
__device__ __forceinline__ void distinct_step(uint64_t* s, int n, int base, int k, int j) {
    const int q = n > 2 * kDistinctThreads ? n / (2 * kDistinctThreads) : 1;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int r = 0; r < q; ++r) {
        const int t = (w * q + r) * 32 + lane;
        if (t >= n / 2) break;  // guard (n < 2048)
        const int i = ((t & ~(j - 1)) << 1) | (t & (j - 1));
        const uint64_t a = s[i], b = s[i + j];
        if ((a > b) == (((base + i) & k) == 0)) {
            s[i] = b;
            s[i + j] = a;
        }
    }
}

// distinct_merge runs the steps j = j0, j0/2, …, j1 of stage k on s (as
// distinct_step), each followed by a warp barrier when it and the step
// after it stay inside warps (distance ≤ 32q), else by a block barrier;
// next is the distance of the step that follows j1 on s with the same
// mapping (0: none, so a block barrier ends the call). Must be called by
// the whole block with the same arguments.
__device__ __forceinline__ void distinct_merge(uint64_t* s, int n, int base, int k, int j0, int j1, int next) {
    const int local = 32 * (n > 2 * kDistinctThreads ? n / (2 * kDistinctThreads) : 1);
    for (int j = j0; j >= j1; j >>= 1) {
        distinct_step(s, n, base, k, j);
        const int after = j > j1 ? j >> 1 : next;
        if (j <= local && after > 0 && after <= local) {
            sync_warp();
        } else {
            __syncthreads();
        }
    }
}

// distinct_sort runs every stage of the network on the n keys s (base as
// distinct_step): s ends sorted ascending where base & n is 0 (always for
// base 0), descending elsewhere. It ends with a block barrier.
__device__ __forceinline__ void distinct_sort(uint64_t* s, int n, int base) {
    for (int k = 2; k <= n; k <<= 1) distinct_merge(s, n, base, k, k >> 1, 1, k < n ? k : 0);
}

// distinct_scan returns the sum of v over the threads before this one (in
// thread order) and sets *total to the sum over the block, through part
// (1024 ints) and wsum (32 ints) of shared memory. Must be called by all
// 1024 threads of the block.
__device__ __forceinline__ int distinct_scan(int v, int* part, int* wsum, int* total) {
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    part[tid] = v;
    sync_warp();
    for (int d = 1; d < 32; d <<= 1) {  // inclusive scan within each warp
        const int a = lane >= d ? part[tid - d] : 0;
        sync_warp();
        part[tid] += a;
        sync_warp();
    }
    __syncthreads();
    if (w == 0) {  // inclusive scan of the warp totals
        wsum[lane] = part[lane * 32 + 31];
        sync_warp();
        for (int d = 1; d < 32; d <<= 1) {
            const int a = lane >= d ? wsum[lane - d] : 0;
            sync_warp();
            wsum[lane] += a;
            sync_warp();
        }
    }
    __syncthreads();
    *total = wsum[31];
    return part[tid] - v + (w > 0 ? wsum[w - 1] : 0);
}

}  // namespace dainx

extern "C" __global__ void __launch_bounds__(1024)
distinct_rows(int32_t* __restrict__ rows, int32_t* __restrict__ starts, int32_t* __restrict__ perm,
              int32_t* __restrict__ count, uint32_t* __restrict__ keys, const int32_t* __restrict__ cells,
              int32_t k) {
    using namespace dainx;
    __shared__ uint64_t sh[kDistinctTile];
    __shared__ int part[kDistinctThreads];
    __shared__ int wsum[32];
    if (blockIdx.x != 0) return;  // guard (uniform across the block)
    const int tid = threadIdx.x;
    const uint64_t pad = ~(uint64_t)0;
    int p = 1;
    while (p < k) p <<= 1;
    const uint64_t* sorted = sh;
    if (p <= kDistinctTile) {
        for (int i = tid; i < p; i += kDistinctThreads)
            sh[i] = i < k ? (uint64_t)(uint32_t)cells[i] << 32 | (uint32_t)i : pad;
        __syncthreads();
        distinct_sort(sh, p, 0);
    } else {
        uint64_t* g = reinterpret_cast<uint64_t*>(keys);
        // Every tile sorted, in the direction of its stage-4096 block. Each
        // thread stores the keys it loaded, so a tile's store and the next
        // tile's load need no barrier between them.
        for (int base = 0; base < p; base += kDistinctTile) {
            for (int i = tid; i < kDistinctTile; i += kDistinctThreads) {
                const int x = base + i;
                sh[i] = x < k ? (uint64_t)(uint32_t)cells[x] << 32 | (uint32_t)x : pad;
            }
            __syncthreads();
            distinct_sort(sh, kDistinctTile, base);
            for (int i = tid; i < kDistinctTile; i += kDistinctThreads) g[base + i] = sh[i];
        }
        __syncthreads();
        for (int st = 2 * kDistinctTile; st <= p; st <<= 1) {
            distinct_merge(g, p, 0, st, st >> 1, kDistinctTile, 0);  // distances ≥ 4096, on keys
            for (int base = 0; base < p; base += kDistinctTile) {      // the rest, tile by tile
                for (int i = tid; i < kDistinctTile; i += kDistinctThreads) sh[i] = g[base + i];
                __syncthreads();
                distinct_merge(sh, kDistinctTile, base, st, kDistinctTile / 2, 1, 0);
                for (int i = tid; i < kDistinctTile; i += kDistinctThreads) g[base + i] = sh[i];
            }
            __syncthreads();
        }
        sorted = g;
    }

    // Number the rows: thread tid takes the sorted keys [lo, hi).
    const int c = (k + kDistinctThreads - 1) / kDistinctThreads;
    const int lo = tid * c < k ? tid * c : k, hi = lo + c < k ? lo + c : k;
    int fresh = 0;
    for (int j = lo; j < hi; ++j) fresh += j == 0 || (sorted[j] >> 32) != (sorted[j - 1] >> 32);
    int total;
    int u = distinct_scan(fresh, part, wsum, &total);
    for (int j = lo; j < hi; ++j) {
        const uint32_t r = (uint32_t)(sorted[j] >> 32);
        if (j == 0 || r != (uint32_t)(sorted[j - 1] >> 32)) {
            rows[u] = (int32_t)r;
            starts[u] = j;
            ++u;
        }
    }
    for (int j = tid; j < k; j += kDistinctThreads) perm[j] = (int32_t)(uint32_t)sorted[j];
    if (tid == 0) {
        count[0] = total;
        starts[total] = k;
    }
}
