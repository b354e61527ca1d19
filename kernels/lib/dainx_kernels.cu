// dainx_kernels.cu: the C launchers of libdainx_kernels (dainx_kernels.h).
// Each mirrors the op of the Go backend (cuda/ops.go) with the same launch
// geometry (geometry.h; cuda/geometry_test.go checks the two agree), the
// kernels being the same sources (kernels/*.cu) compiled under prefixed
// names (dainx_kern_NAME, generated wrappers: kernelgen -c).
#include <cmath>
#include <cstdint>
#include <cuda_runtime.h>

#include "dainx_kern.h"
#include "dainx_kernels.h"
#include "geometry.h"

namespace {

// Epilogue flags (kernels/common.cuh kEpi*).
constexpr int32_t kAcc = 1, kRelu = 2, kMask = 4, kBias = 8, kX3 = 16;

const dim3 kBlock1D(DAINX_G_THREADS);
const dim3 kTcBlock(DAINX_G_TC_THREADS);
const dim3 kColBlock(32, 8, 1);  // linear_backward_db, linear_backward_out1

// sms returns the number of SMs of the current device, or a CUDA error.
int sms(int* n) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess && *n < 1) *n = 1;
    return (int)e;
}

// sms_or_guess is sms for the scratch queries, which return a size: with no
// usable device they assume one SM, the largest split (an upper bound).
int sms_or_guess() {
    int n = 1;
    if (sms(&n) != 0) {
        cudaGetLastError();  // clear the failed query
        return 1;
    }
    return n;
}

dim3 grid1d(int64_t n, int64_t per_block, int s) { return dim3((unsigned)dainx_g_grid1d(n, per_block, s)); }

// gemm_grid is the grid of a 64×64-tiled GEMM with m rows, n columns and z
// splits, or x = 0 when n is too wide for gridDim.y.
dim3 gemm_grid(int64_t m, int64_t n, int64_t z) {
    int64_t gy = (n + DAINX_G_TILE - 1) / DAINX_G_TILE;
    if (gy > DAINX_G_MAX_GRID_YZ) return dim3(0, 0, 0);
    return dim3((unsigned)((m + DAINX_G_TILE - 1) / DAINX_G_TILE), (unsigned)gy, (unsigned)z);
}

bool bad_prec(int p) { return p != DAINX_K_FP32 && p != DAINX_K_TF32 && p != DAINX_K_3XTF32; }
bool bad_layout(int32_t l) { return l != DAINX_K_MODE_MAJOR && l != DAINX_K_RANK_MAJOR; }
int32_t tc_flags(int p) { return p == DAINX_K_3XTF32 ? kX3 : 0; }

// reduce queues split_k_reduce over part (parts×rows×pcols) into dst
// (rows×cols) and dst2 (rows), with the epilogue of flags.
int reduce(float* dst, float* dst2, const float* part, const float* bias, const float* x, int64_t rows, int64_t cols,
           int64_t pcols, int64_t parts, int32_t flags, int s, cudaStream_t st) {
    return (int)dainx_kern_split_k_reduce_launch(grid1d(rows * pcols, DAINX_G_THREADS, s), kBlock1D, 0, st, dst, dst2,
                                                 part, bias, x, (int32_t)rows, (int32_t)cols, (int32_t)pcols,
                                                 (int32_t)parts, flags);
}

// forward_gemm launches linear_forward or linear_forward_tc.
int forward_gemm(dim3 grid, int64_t chunk, float* y, float* part, const float* x, const float* w, const float* bias,
                 int32_t batch, int32_t in, int32_t out, int32_t flags, int prec, cudaStream_t st) {
    if (prec != DAINX_K_FP32)
        return (int)dainx_kern_linear_forward_tc_launch(grid, kTcBlock, 0, st, y, part, x, w, bias, batch, in, out,
                                                        (int32_t)chunk, flags | tc_flags(prec));
    return (int)dainx_kern_linear_forward_launch(grid, kBlock1D, 0, st, y, part, x, w, bias, batch, in, out,
                                                 (int32_t)chunk, flags);
}

size_t part_bytes(int64_t parts, int64_t rows, int64_t cols) {
    return parts > 1 ? (size_t)(4 * parts * rows * cols) : 0;
}

}  // namespace

extern "C" const char* dainx_k_strerror(int code) {
    switch (code) {
        case DAINX_K_OK:
            return "no error";
        case DAINX_K_EINVAL:
            return "dainx_k: invalid argument (NULL pointer, bad size or flag)";
        case DAINX_K_ESCRATCH:
            return "dainx_k: scratch memory missing or smaller than dainx_k_<op>_scratch_bytes";
    }
    return code > 0 ? cudaGetErrorString((cudaError_t)code) : "dainx_k: unknown error";
}

extern "C" int dainx_k_gather(float* x, const float* table, const int32_t* cells, int32_t batch, int32_t order,
                              int32_t width, int32_t rows, int32_t layout, cudaStream_t stream) {
    if (batch < 0 || order < 1 || width < 1 || rows < 0 || bad_layout(layout)) return DAINX_K_EINVAL;
    if (batch == 0) return DAINX_K_OK;
    if (!x || !table || !cells) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    return (int)dainx_kern_gather_launch(grid1d((int64_t)batch * order * width, DAINX_G_THREADS, s), kBlock1D, 0,
                                         stream, x, table, cells, batch, order, width, rows, layout);
}

extern "C" int dainx_k_scatter_rows(float* dtable, const float* dx, const int32_t* cells, int32_t batch,
                                    int32_t order, int32_t width, int32_t rows, int32_t layout, cudaStream_t stream) {
    if (batch < 0 || order < 1 || width < 1 || rows < 0 || bad_layout(layout)) return DAINX_K_EINVAL;
    if (batch == 0) return DAINX_K_OK;
    if (!dtable || !dx || !cells) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    return (int)dainx_kern_scatter_rows_launch(grid1d((int64_t)batch * order * width, DAINX_G_THREADS, s), kBlock1D,
                                               0, stream, dtable, dx, cells, batch, order, width, rows, layout);
}

static size_t forward_scratch(int64_t batch, int64_t in, int64_t out, int s) {
    if (batch <= 0 || out <= 1) return 0;
    int64_t parts, chunk;
    dainx_g_plan_forward(batch, in, out, s, &parts, &chunk);
    return part_bytes(parts, batch, out);
}

extern "C" size_t dainx_k_linear_forward_scratch_bytes(int32_t batch, int32_t in, int32_t out) {
    if (batch < 0 || in < 1 || out < 1) return 0;
    return forward_scratch(batch, in, out, sms_or_guess());
}

extern "C" int dainx_k_linear_forward(float* y, const float* x, const float* w, const float* bias, int32_t batch,
                                      int32_t in, int32_t out, int relu, int precision, void* scratch,
                                      size_t scratch_bytes, cudaStream_t stream) {
    if (batch < 0 || in < 1 || out < 1 || bad_prec(precision)) return DAINX_K_EINVAL;
    if (batch == 0) return DAINX_K_OK;
    if (!y || !x || !w || !bias) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    const int32_t flags = relu ? kRelu : 0;
    if (out == 1)
        return (int)dainx_kern_linear_forward_out1_launch(grid1d(batch, DAINX_G_WARPS_PER_BLOCK, s), kBlock1D, 0,
                                                          stream, y, x, w, bias, batch, in, flags);
    int64_t parts, chunk;
    dainx_g_plan_forward(batch, in, out, s, &parts, &chunk);
    const dim3 g = gemm_grid(batch, out, parts);
    if (g.x == 0) return DAINX_K_EINVAL;
    float* part = nullptr;
    if (parts > 1) {
        if (!scratch || scratch_bytes < part_bytes(parts, batch, out)) return DAINX_K_ESCRATCH;
        part = (float*)scratch;
    }
    if ((e = forward_gemm(g, chunk, y, part, x, w, bias, batch, in, out, flags, precision, stream))) return e;
    if (parts > 1) return reduce(y, nullptr, part, bias, nullptr, batch, out, out, parts, flags, s, stream);
    return DAINX_K_OK;
}

static size_t backward_scratch(int64_t batch, int64_t in, int64_t out, bool dx, bool dw, bool db, int s) {
    if (batch <= 0) return 0;
    int64_t parts, chunk;
    if (out == 1) {
        if (!dw && !db) return 0;
        dainx_g_plan_out1(batch, in, s, &parts, &chunk);
        return part_bytes(parts, 1, in + 1);
    }
    size_t need = 0, b;
    if (dw) {
        dainx_g_plan_dw(batch, in, out, s, &parts, &chunk);
        need = part_bytes(parts, out, db ? in + 1 : in);
    } else if (db) {
        dainx_g_plan_db(batch, out, s, &parts, &chunk);
        need = part_bytes(parts, 1, out);
    }
    if (dx) {
        dainx_g_plan_dx(batch, in, out, s, &parts, &chunk);
        if ((b = part_bytes(parts, batch, in)) > need) need = b;
    }
    return need;  // the parts run one after the other on the stream: one buffer
}

extern "C" size_t dainx_k_linear_backward_scratch_bytes(int32_t batch, int32_t in, int32_t out, int want_dx,
                                                        int want_dw, int want_db) {
    if (batch < 0 || in < 1 || out < 1) return 0;
    return backward_scratch(batch, in, out, want_dx, want_dw, want_db, sms_or_guess());
}

extern "C" int dainx_k_linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                                       const float* w, int32_t batch, int32_t in, int32_t out, int mask_x,
                                       int accumulate, int precision, void* scratch, size_t scratch_bytes,
                                       cudaStream_t stream) {
    if (batch < 0 || in < 1 || out < 1 || in == INT32_MAX || bad_prec(precision)) return DAINX_K_EINVAL;
    if (batch == 0) {
        cudaError_t e = cudaSuccess;
        if (!accumulate && dw) e = cudaMemsetAsync(dw, 0, 4 * (size_t)out * in, stream);
        if (!accumulate && db && e == cudaSuccess) e = cudaMemsetAsync(db, 0, 4 * (size_t)out, stream);
        return (int)e;
    }
    if (!dy || !x || (dx && !w)) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    const int32_t acc = accumulate ? kAcc : 0, mask = mask_x ? kMask : 0;
    if (scratch_bytes > 0 && !scratch) return DAINX_K_ESCRATCH;
    if (backward_scratch(batch, in, out, dx, dw, db, s) > (scratch ? scratch_bytes : 0)) return DAINX_K_ESCRATCH;
    float* part = (float*)scratch;
    int64_t parts, chunk;
    if (out == 1) {
        if (!dx && !dw && !db) return DAINX_K_OK;
        if (!w) return DAINX_K_EINVAL;
        const int64_t cols = (in + 31) / 32;
        dainx_g_plan_out1(batch, in, s, &parts, &chunk);
        const bool red = parts > 1 && (dw || db);
        if ((e = (int)dainx_kern_linear_backward_out1_launch(dim3((unsigned)cols, (unsigned)parts, 1), kColBlock, 0,
                                                             stream, dx, dw, db, red ? part : nullptr, dy, x, w, batch,
                                                             in, (int32_t)chunk, acc | mask)))
            return e;
        if (red) return reduce(dw, db, part, nullptr, nullptr, 1, in, (int64_t)in + 1, parts, acc, s, stream);
        return DAINX_K_OK;
    }
    if (dw) {
        const int64_t pcols = db ? (int64_t)in + 1 : in;
        const int32_t flags = db ? (acc | kBias) : acc;
        dainx_g_plan_dw(batch, in, out, s, &parts, &chunk);
        const dim3 g = gemm_grid(out, in, parts);
        if (g.x == 0) return DAINX_K_EINVAL;
        float* p = parts > 1 ? part : nullptr;
        if (precision != DAINX_K_FP32)
            e = (int)dainx_kern_linear_backward_dw_tc_launch(g, kTcBlock, 0, stream, dw, db, p, dy, x, batch, in, out,
                                                             (int32_t)chunk, flags | tc_flags(precision));
        else
            e = (int)dainx_kern_linear_backward_dw_launch(g, kBlock1D, 0, stream, dw, db, p, dy, x, batch, in, out,
                                                          (int32_t)chunk, flags);
        if (e) return e;
        if (parts > 1 && (e = reduce(dw, db, part, nullptr, nullptr, out, in, pcols, parts, acc, s, stream)))
            return e;
    } else if (db) {
        const int64_t cols = (out + 31) / 32;
        dainx_g_plan_db(batch, out, s, &parts, &chunk);
        float* p = parts > 1 ? part : nullptr;
        if ((e = (int)dainx_kern_linear_backward_db_launch(dim3((unsigned)cols, (unsigned)parts, 1), kColBlock, 0,
                                                           stream, db, p, dy, batch, out, (int32_t)chunk, acc)))
            return e;
        if (parts > 1 && (e = reduce(db, nullptr, part, nullptr, nullptr, 1, out, out, parts, acc, s, stream)))
            return e;
    }
    if (dx) {
        dainx_g_plan_dx(batch, in, out, s, &parts, &chunk);
        const dim3 g = gemm_grid(batch, in, parts);
        if (g.x == 0) return DAINX_K_EINVAL;
        float* p = parts > 1 ? part : nullptr;
        if (precision != DAINX_K_FP32)
            e = (int)dainx_kern_linear_backward_dx_tc_launch(g, kTcBlock, 0, stream, dx, p, dy, w, x, batch, in, out,
                                                             (int32_t)chunk, mask | tc_flags(precision));
        else
            e = (int)dainx_kern_linear_backward_dx_launch(g, kBlock1D, 0, stream, dx, p, dy, w, x, batch, in, out,
                                                          (int32_t)chunk, mask);
        if (e) return e;
        if (parts > 1) return reduce(dx, nullptr, part, nullptr, x, batch, in, in, parts, mask, s, stream);
    }
    return DAINX_K_OK;
}

extern "C" int dainx_k_mse_grad(float* delta, float* sq, const float* pred, const float* y, int32_t n, float scale,
                                cudaStream_t stream) {
    if (n < 0) return DAINX_K_EINVAL;
    if (n == 0) return sq ? (int)cudaMemsetAsync(sq, 0, 4, stream) : DAINX_K_OK;
    if (!delta || !pred || !y) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    const dim3 grid = sq ? dim3(1) : grid1d(n, DAINX_G_MSE_THREADS, s);
    return (int)dainx_kern_mse_grad_launch(grid, dim3(DAINX_G_MSE_THREADS), 0, stream, delta, sq, pred, y, n, scale);
}

extern "C" int dainx_k_adam(float* p, const float* g, float* m, float* v, int32_t n, double lr, double beta1,
                            double beta2, double eps, int64_t t, cudaStream_t stream) {
    if (n < 0 || t < 1 || !(lr > 0) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps >= 0))
        return DAINX_K_EINVAL;
    if (n == 0) return DAINX_K_OK;
    if (!p || !g || !m || !v) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    const double c1 = 1 - std::pow(beta1, (double)t), c2 = 1 - std::pow(beta2, (double)t);
    return (int)dainx_kern_adam_launch(grid1d(n, DAINX_G_THREADS, s), kBlock1D, 0, stream, p, m, v, g, n,
                                       (float)beta1, (float)beta2, (float)(1 - beta1), (float)(1 - beta2),
                                       (float)(lr / c1), (float)(1 / std::sqrt(c2)), (float)eps, 0.f /* no L2 */);
}

extern "C" size_t dainx_k_influence_dot_scratch_bytes(int32_t batch, int32_t in, int32_t out) {
    if (batch <= 0 || in < 1 || out <= DAINX_G_INFLUENCE_DIRECT) return 0;
    int64_t chunk = dainx_g_influence_chunk(batch, out);
    return (size_t)(4 * dainx_g_min64(chunk, batch) * out);
}

extern "C" int dainx_k_influence_dot(float* score, const float* dy, const float* x, const float* gw,
                                     const float* gb, int32_t batch, int32_t in, int32_t out, float eta,
                                     int precision, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
    if (batch < 0 || in < 1 || out < 1 || bad_prec(precision)) return DAINX_K_EINVAL;
    if (batch == 0) return DAINX_K_OK;
    if (!score || !dy || !x || !gw || !gb) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    if (out <= DAINX_G_INFLUENCE_DIRECT)
        return (int)dainx_kern_influence_dot_launch(grid1d(batch, DAINX_G_WARPS_PER_BLOCK, s), kBlock1D, 0, stream,
                                                    score, dy, x, gw, gb, batch, in, out, eta);
    if (!scratch || scratch_bytes < dainx_k_influence_dot_scratch_bytes(batch, in, out)) return DAINX_K_ESCRATCH;
    float* t = (float*)scratch;
    const int64_t chunk = dainx_g_influence_chunk(batch, out);
    for (int64_t off = 0; off < batch; off += chunk) {
        const int64_t rows = dainx_g_min64(chunk, batch - off);
        const dim3 g = gemm_grid(rows, out, 1);
        if (g.x == 0) return DAINX_K_EINVAL;
        if ((e = forward_gemm(g, in, t, nullptr, x + off * in, gw, gb, (int32_t)rows, in, out, 0, precision, stream)))
            return e;
        if ((e = (int)dainx_kern_influence_rows_launch(grid1d(rows, DAINX_G_WARPS_PER_BLOCK, s), kBlock1D, 0, stream,
                                                       score + off, dy + off * out, t, (int32_t)rows, out, eta)))
            return e;
    }
    return DAINX_K_OK;
}

extern "C" int dainx_k_embedding_influence(float* score, const float* dx, const int32_t* cells, const float* gtable,
                                           int32_t batch, int32_t order, int32_t width, int32_t rows, int32_t layout,
                                           float eta, cudaStream_t stream) {
    if (batch < 0 || order < 1 || width < 1 || rows < 0 || bad_layout(layout) ||
        (int64_t)order * width > INT32_MAX)
        return DAINX_K_EINVAL;
    if (batch == 0) return DAINX_K_OK;
    if (!score || !dx || !cells || !gtable) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    return (int)dainx_kern_embedding_influence_launch(grid1d(batch, DAINX_G_WARPS_PER_BLOCK, s), kBlock1D, 0, stream,
                                                      score, dx, cells, gtable, batch, order, width, rows, layout,
                                                      eta);
}

extern "C" int dainx_k_entity_importance(float* imp, const float* score, const int32_t* cells, int32_t count,
                                         int32_t order, int32_t rows, cudaStream_t stream) {
    if (count < 0 || order < 1 || rows < 0) return DAINX_K_EINVAL;
    if (count == 0) return DAINX_K_OK;
    if (!imp || !score || !cells) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    return (int)dainx_kern_entity_importance_launch(grid1d((int64_t)count * order, DAINX_G_THREADS, s), kBlock1D, 0,
                                                    stream, imp, score, cells, count, order, rows);
}

extern "C" int dainx_k_sample_alias(int32_t* out, const int32_t* thresh, const int32_t* alias, int32_t count,
                                    int32_t order, int32_t col, int32_t size, uint64_t key, uint64_t ctr,
                                    cudaStream_t stream) {
    if (count < 0 || order < 1 || col < 0 || col >= order || size < 1) return DAINX_K_EINVAL;
    if (count == 0) return DAINX_K_OK;
    if (!out || !thresh || !alias) return DAINX_K_EINVAL;
    int s, e = sms(&s);
    if (e) return e;
    return (int)dainx_kern_sample_alias_launch(grid1d(count, DAINX_G_THREADS, s), kBlock1D, 0, stream, out, thresh,
                                               alias, count, order, col, size, key, ctr);
}
