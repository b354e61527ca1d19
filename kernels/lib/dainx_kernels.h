/*
 * dainx_kernels.h: dainx's CUDA kernels as a library (libdainx_kernels.a,
 * `make kernels-lib`), for CUDA programs that hold their tensors on the GPU.
 *
 * Every op has a C launcher dainx_k_<op> that takes the caller's device
 * pointers, sizes and stream, checks its arguments, chooses the grid, block
 * and split-K itself (the same choices as dainx's Go backend: geometry.h,
 * checked against cuda/plan.go by cuda/geometry_test.go), queues the
 * kernels on the stream and returns. Ops whose split-K or chunking needs
 * temporary device memory take it from the caller: dainx_k_<op>_scratch_bytes
 * says how much for the same sizes on the current device; pass at least
 * that (the memory is only used by work queued on `stream`, so it may be
 * reused once that work is done, or by later work on the same stream).
 *
 * The kernels are built as a fatbin with SASS for sm_80 (A100) and sm_90
 * (H100) and PTX for compute_90; other GPUs of compute capability ≥ 8.0 JIT
 * the PTX. The library uses the CUDA runtime and the current device and
 * context: a program that shares its device with libdainx (which uses the
 * device's primary context) shares its pointers too.
 *
 * Conventions:
 *   - All float data are float32, row-major; indices int32. B is the batch
 *     (rows), I a layer's input width, O its output width, N the order (modes),
 *     E the embedding width, R the rows of an embedding table.
 *   - "=" overwrites the output, "+=" accumulates into it.
 *   - Return value: DAINX_K_OK (0); DAINX_K_EINVAL (a NULL pointer, a
 *     negative or too large size, an unknown flag); DAINX_K_ESCRATCH (scratch
 *     NULL or smaller than dainx_k_<op>_scratch_bytes); or a positive
 *     cudaError_t from the device query or a launch (cudaGetLastError()
 *     after the launch, so an earlier unchecked error of the host's surfaces
 *     here too). Errors during execution surface at the next synchronisation,
 *     as with any kernel. Nothing is queued after the first failing launch.
 *   - Thread safety: the launchers keep no state; calls from several host
 *     threads are safe (ordered by their streams, as for any CUDA call).
 *   - Sizes of 0 cells (batch, count, n = 0) queue nothing and return 0,
 *     except dainx_k_linear_backward, which zeroes dw and db when it does not
 *     accumulate, as the Go backend does.
 */
#ifndef DAINX_KERNELS_H
#define DAINX_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DAINX_K_OK 0
#define DAINX_K_EINVAL (-1)
#define DAINX_K_ESCRATCH (-2)

/* GEMM precision of the Linear ops. */
#define DAINX_K_FP32 0   /* float32 SIMT GEMMs (exact float32 products) */
#define DAINX_K_TF32 1   /* tensor cores, TF32 products (10-bit mantissa) */
#define DAINX_K_3XTF32 2 /* tensor cores, split operands, about float32 accuracy */

/* Layout of an embedding batch x (B×(N·E)). */
#define DAINX_K_MODE_MAJOR 0 /* x[b, n·E + e]: mode n's row, then the next mode */
#define DAINX_K_RANK_MAJOR 1 /* x[b, e·N + n]: CoSTCo's R×N matrix per cell */

/* dainx_k_strerror: a static description of a return value. */
const char *dainx_k_strerror(int code);

/* gather (=): the batch input of an embedding model, one embedding row per
 * mode: x[b, pos(n,e)] = table[cells[b,n]·E + e], pos by layout. DAIN eq. 4.
 * cells B×N int32 (global rows in [0, R); a row outside gives NaN),
 * table R×E, x B×(N·E). */
int dainx_k_gather(float *x, const float *table, const int32_t *cells, int32_t batch, int32_t order,
                   int32_t width, int32_t rows, int32_t layout, cudaStream_t stream);

/* scatter_rows (+=): the adjoint of gather, dtable[cells[b,n]·E + e] +=
 * dx[b, pos(n,e)]; rows outside [0, R) are skipped. Atomic adds: duplicate
 * rows are added in an unspecified order. dx B×(N·E), dtable R×E. */
int dainx_k_scatter_rows(float *dtable, const float *dx, const int32_t *cells, int32_t batch, int32_t order,
                         int32_t width, int32_t rows, int32_t layout, cudaStream_t stream);

/* linear_forward (=): y = φ(x·wᵀ + bias), φ = ReLU if relu, else identity.
 * DAIN eq. 4. x B×I, w O×I (PyTorch's nn.Linear layout), bias O, y B×O.
 * O = 1 runs a warp-per-row product (float32 in every precision); otherwise
 * a 64×64-tiled GEMM, split over I when the output has fewer tiles than the
 * GPU has SMs (then the parts are added in a fixed order: deterministic).
 * Scratch: dainx_k_linear_forward_scratch_bytes(B, I, O) (0 without a
 * split; scratch may then be NULL). */
size_t dainx_k_linear_forward_scratch_bytes(int32_t batch, int32_t in, int32_t out);
int dainx_k_linear_forward(float *y, const float *x, const float *w, const float *bias, int32_t batch, int32_t in,
                           int32_t out, int relu, int precision, void *scratch, size_t scratch_bytes,
                           cudaStream_t stream);

/* linear_backward: the gradients of linear_forward. dy B×O, x B×I (the
 * layer's input), w O×I; outputs, each skipped when NULL:
 *   dx B×I (=)       dx = (dy·w) ⊙ [x > 0 if mask_x]   (mask_x: x is a ReLU output)
 *   dw O×I (= or +=) dw = dyᵀ·x                        (+= if accumulate)
 *   db O   (= or +=) db = Σ_b dy[b,:]                  (+= if accumulate)
 * Deterministic: every split is reduced in a fixed order. The dw, db of a batch of validation cells form TracIn's
 * gradient sum G (DAIN eq. 5). Scratch: dainx_k_linear_backward_scratch_bytes
 * with the same sizes and which outputs are wanted (1/0). */
size_t dainx_k_linear_backward_scratch_bytes(int32_t batch, int32_t in, int32_t out, int want_dx, int want_dw,
                                             int want_db);
int dainx_k_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                            int32_t batch, int32_t in, int32_t out, int mask_x, int accumulate, int precision,
                            void *scratch, size_t scratch_bytes, cudaStream_t stream);

/* mse_grad (=): delta[b] = scale·(pred[b] − y[b]); and, when sq is not NULL,
 * sq[0] = Σ_b (pred[b] − y[b])², summed in double by one block in a fixed
 * order. scale = 2/B gives the gradient of DAIN eq. 1's batch mean. pred,
 * y, delta n floats; sq 1 float or NULL. */
int dainx_k_mse_grad(float *delta, float *sq, const float *pred, const float *y, int32_t n, float scale,
                     cudaStream_t stream);

/* adam (in place): one Adam step (PyTorch's formulation) at step t ≥ 1:
 * m = β₁m + (1−β₁)g, v = β₂v + (1−β₂)g², p −= lr/(1−β₁ᵗ) · m/(√v/√(1−β₂ᵗ) + ε);
 * the bias corrections are formed in double and rounded once. p, g, m, v n
 * floats (m, v start at 0). */
int dainx_k_adam(float *p, const float *g, float *m, float *v, int32_t n, double lr, double beta1, double beta2,
                 double eps, int64_t t, cudaStream_t stream);

/* influence_dot (+=): TracIn's score of each cell against the gradient sum
 * G = (gw, gb) of a Linear layer, without forming per-cell gradients:
 * score[b] += eta · Σ_o dy[b,o]·(Σ_i gw[o,i]·x[b,i] + gb[o]). DAIN eq. 5
 * (TracIn, Pruthi et al. 2020), dy = 2e for the per-cell squared error.
 * dy B×O, x B×I, gw O×I, gb O, score B. O ≤ 8 takes one warp per cell
 * (float32); wider layers a GEMM (in `precision`) into scratch, in chunks of
 * rows, then a row reduction. Scratch: dainx_k_influence_dot_scratch_bytes. */
size_t dainx_k_influence_dot_scratch_bytes(int32_t batch, int32_t in, int32_t out);
int dainx_k_influence_dot(float *score, const float *dy, const float *x, const float *gw, const float *gb,
                          int32_t batch, int32_t in, int32_t out, float eta, int precision, void *scratch,
                          size_t scratch_bytes, cudaStream_t stream);

/* embedding_influence (+=): the embedding part of TracIn's score:
 * score[b] += eta · Σ_n Σ_e dx[b, pos(n,e)]·gtable[cells[b,n]·E + e].
 * dx B×(N·E), cells B×N, gtable R×E, score B; rows outside [0, R) add 0. */
int dainx_k_embedding_influence(float *score, const float *dx, const int32_t *cells, const float *gtable,
                                int32_t batch, int32_t order, int32_t width, int32_t rows, int32_t layout,
                                float eta, cudaStream_t stream);

/* entity_importance (+=): imp[cells[t,n]] += |score[t]| for t < T, n < N
 * (DAIN eq. 6). cells T×N global rows, score T, imp R; rows outside [0, R)
 * are skipped. Atomic adds (order unspecified). */
int dainx_k_entity_importance(float *imp, const float *score, const int32_t *cells, int32_t count, int32_t order,
                              int32_t rows, cudaStream_t stream);

/* sample_alias (=, column col of out): one draw per row m < M from a Vose
 * alias table with Philox4x32-10 on counter ctr + m and key: j uniform in
 * [0, I), out[m·N + col] = r < thresh[j] ? j : alias[j]. Bit-identical to
 * dainx's CPU draws. out M×N int32, thresh I (uint32 bit patterns of
 * ⌊p·2³²⌋), alias I; I ≥ 1, 0 ≤ col < N. DAIN Algorithm 1, lines 10–12. */
int dainx_k_sample_alias(int32_t *out, const int32_t *thresh, const int32_t *alias, int32_t count, int32_t order,
                         int32_t col, int32_t size, uint64_t key, uint64_t ctr, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* DAINX_KERNELS_H */
