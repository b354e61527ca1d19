/*
 * dainx.h: the C API of libdainx, DAIN (influence-guided data augmentation
 * for neural tensor completion; Oh, Kim, Rossi, Kumar, CIKM 2021) as a
 * library. `dainx_augment` is `dainx augment` on cells held in memory: the
 * same code, the same flags (as JSON options), the same results for the
 * same cells, seed and flags.
 *
 * Build and link:   make lib   (build/lib/libdainx.so, build/include/dainx.h,
 *                               build/lib/pkgconfig/dainx.pc)
 *                   cc prog.c $(pkg-config --cflags --libs dainx)
 *
 * Conventions of every function below:
 *   - Indices are int32, 0-based, row-major: cell k of an order-N tensor is
 *     idx[k*N .. k*N+N-1]. Values are doubles (the pipeline computes in
 *     float32; values are converted on the way in and out).
 *   - A function returning int returns 0 on success, or DAINX_EINPUT /
 *     DAINX_ERUN; then dainx_last_error() holds the message on the calling
 *     thread and no output argument has been touched.
 *   - Ownership: the library never keeps or frees the caller's arrays; it
 *     only reads them during the call. Every dainx_result it returns belongs
 *     to the caller, who frees it with dainx_result_free; the pointers the
 *     accessors return live as long as the result. Strings returned by
 *     dainx_version and dainx_last_error belong to the library.
 *   - Thread safety: every function may be called from several threads at
 *     once. Each dainx_augment call opens and closes its own backend (the
 *     CPU, or a CUDA device's primary context, shared with the host's CUDA
 *     runtime).
 *   - Robustness: bad input is an error, never a crash; a failure inside the
 *     library (a Go panic) is returned as DAINX_ERUN. The library installs no
 *     handler for SIGINT, SIGTERM or any other asynchronous signal of its
 *     host (the Go runtime handles only synchronous signals, SIGPIPE and
 *     SIGURG, and passes on those it does not cause). Running out of memory
 *     is fatal, as in any Go program; dainx refuses, before training, a
 *     tensor whose tables would need more than half of the machine's memory.
 */
#ifndef DAINX_H
#define DAINX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define DAINX_OK 0
#define DAINX_EINPUT 1 /* bad cells, bad options, or a configuration that cannot work */
#define DAINX_ERUN 2   /* the run failed: device error, too few new cells reachable, internal error */
#define DAINX_ECANCELLED 3 /* dainx_augment_progress: the progress callback asked the run to stop */

/* dainx_version returns the library's version (the git revision it was built
 * from, as `dainx version` prints it). Static storage; never NULL. */
const char *dainx_version(void);

/* dainx_last_error returns the message of the calling thread's last failed
 * call, or "" if none has failed on this thread. A successful call does not
 * clear it. The string stays valid until the next failing call on the same
 * thread. Never NULL. */
const char *dainx_last_error(void);

/* A result: cells (indices and values) and a JSON report. Opaque. */
typedef struct dainx_result dainx_result;

/* dainx_augment runs `dainx augment` on an in-memory COO tensor.
 *
 * idx: nnz*order int32, row-major, 0-based; val: nnz doubles. The mode sizes
 * are the largest index of each mode + 1, as when the binary reads a file;
 * indices should be dense (0..n-1 in each mode).
 *
 * options: NULL or "", or a JSON object whose keys are `dainx augment` flag
 * names without the dash (so "model-out", "scores-out", "split-out",
 * "importance-out" save what the command line saves) and whose values are what the flag accepts, as JSON
 * numbers, strings or booleans, e.g.
 *   {"ratio":0.5,"seed":7,"layers":"48,16","epochs":3,"backend":"cpu","quiet":true}
 * Every flag is accepted except "input" (the cells come from idx and val);
 * unknown keys are an error. Defaults are the flags' defaults: progress goes
 * to standard error unless "quiet" is true; "backend" is "auto" (CUDA when
 * a driver and device exist, else the CPU); "output" and "report" also
 * write the new cells and the report to files ("format" and "index-base"
 * then apply to "output", whose format is otherwise chosen by extension).
 * The defaults the command takes from the environment are the library's
 * too: "graphs" ("on" or "off": replay each training step as a CUDA graph;
 * off when DAINX_CUDA_GRAPHS=0, else on), "gemm-tune" ("off", "model" or
 * "time": how the CUDA backend picks its GEMM kernels; DAINX_GEMM_TUNE,
 * else off) and "gemm-serial" ("on" or "off": serial split-K with the
 * tuner on; on when DAINX_GEMM_SERIAL=1, else off); the report records
 * "graphs" (and "gemm_tune" on CUDA). docs/environment.md lists every
 * variable.
 *
 * On success returns 0 and sets *out to a new result: the n_aug new cells
 * (same order as the input) with their predicted values, and the JSON
 * report `dainx augment` prints (rmse_before, rmse_after, n_train, …;
 * without "input"). Free it with dainx_result_free.
 *
 * Errors (non-zero, *out untouched, dainx_last_error() set):
 *   DAINX_EINPUT: idx, val or out NULL; nnz <= 0; order <= 0; a negative
 *     index, an index of 2147483647 (mode sizes must fit in int32), a NaN or
 *     infinite value, a duplicate cell (each names the cell by its 0-based
 *     row and indices); malformed options, an unknown option, a bad value
 *     (each names the option); layers that do not fit the order.
 *   DAINX_ERUN: the run failed (CUDA error, a split with an empty part, too
 *     few new cells reachable, an internal error).
 * Safe to call from several threads at once; each call uses its own
 * backend. It blocks until the run is done (minutes for large tensors). */
int dainx_augment(const int32_t *idx, const double *val, int64_t nnz,
                  int32_t order, const char *options, dainx_result **out);

/* A progress callback of dainx_augment_progress: event is a JSON object
 * (valid only during the call), user the caller's pointer. Return 0 to go
 * on, non-zero to stop the run (it stops at the next training step or
 * stage boundary and returns DAINX_ECANCELLED). Events, by "event":
 *   "epoch": a finished training epoch: "stage" ("train" for Θ, "predict"
 *     for the CoSTCo value predictor, "retrain" for Θ′), "model" (Θ, Θc,
 *     Θ'), "epoch" (1-based), "epochs" (asked for), "train_mse",
 *     "val_mse", "best" (the lowest validation MSE so far), "seconds" (the
 *     epoch's), "elapsed" (since the run began) and "message" (the line
 *     the command prints for it);
 *   "log": "message", any other progress line (none with "quiet");
 *   "tick": "elapsed", about every 250 ms while the run goes on, so that a
 *     caller can stop it between epochs (e.g. on Ctrl-C).
 * The callback is always called on the thread that called
 * dainx_augment_progress, never after it has returned, never twice at
 * once. */
typedef int (*dainx_progress)(const char *event, void *user);

/* dainx_augment_progress is dainx_augment with progress as events to
 * progress (which may be NULL: then it is dainx_augment, except that
 * progress lines are dropped instead of written to standard error) and a
 * way to stop: a non-zero return of the callback ends the run with
 * DAINX_ECANCELLED ("dainx: cancelled"); "output", "report" and the other
 * files written at the end are then not written (nor half-written), a
 * "checkpoint" holds the last completed point, from which "resume" goes
 * on. */
int dainx_augment_progress(const int32_t *idx, const double *val, int64_t nnz, int32_t order,
                           const char *options, dainx_progress progress, void *user, dainx_result **out);

/* dainx_read reads a tensor file as `dainx augment -input` does: DAIN TSV,
 * FROSTT .tns or SPLATT .bin, gzip detected by content. options: NULL or a
 * JSON object with "format" ("tsv", "tns" or "bin"; default by extension:
 * .tns[.gz] tns, .bin bin, else tsv) and "index-base" (default the format's
 * own: tsv 0, tns 1, bin 0). On success *out holds the cells (count = nnz,
 * 0-based indices, file order) and its report is {"dims":[...],"format":"..."}.
 * Errors: DAINX_EINPUT for a missing file or bad content ("file:line:
 * reason"), DAINX_ERUN for an I/O failure. */
int dainx_read(const char *path, const char *options, dainx_result **out);

/* dainx_write writes nnz cells (idx nnz*order int32 0-based, val nnz
 * doubles) to path as `dainx augment -output` does: text (tsv, tns) is
 * gzipped when the name ends in .gz; the file is written to a temporary
 * name and renamed, never half-written. options as for dainx_read. The
 * cells are checked as dainx_augment checks them (DAINX_EINPUT). */
int dainx_write(const char *path, const int32_t *idx, const double *val,
                int64_t nnz, int32_t order, const char *options);

/* dainx_predict predicts nnz cells (idx nnz*order int32, 0-based,
 * row-major) with a model saved by `dainx augment -model-out DIR` (or the
 * option "model-out"): model is DIR (its model.json, the retrained model
 * Θ′) or a NAME.json / NAME.safetensors path (docs/model-format.md).
 * options: NULL, "" or a JSON object with "backend" ("cpu", the default,
 * "cuda" or "auto") and "batch" (cells per forward pass; 0, the default, is the model's saved capacity). On success
 * *out holds the query cells with their predicted values (on the CPU, bit
 * for bit what the model gave during `dainx augment`) and a JSON report
 * ({"model", "n_cells", "kind", "role", "trained_by", "version", …}).
 * The report also gives the model's "order" and "dims". nnz 0 (idx may
 * be NULL; order 0 or the model's) only loads and checks the model: a
 * result with no cells and the report. "batch" is at most 16777216.
 * The model's files are untrusted: every size in model.json and the
 * safetensors header is checked against limits, against each other and
 * against the file's size before anything is allocated, so a hostile or
 * truncated model is DAINX_EINPUT, never a crash of the host.
 * Errors: DAINX_EINPUT for a missing or malformed model (the message names
 * the file and what is wrong), an order other than the model's, an index
 * outside the model's modes (naming the cell); DAINX_ERUN otherwise. */
int dainx_predict(const char *model, const int32_t *idx, int64_t nnz, int32_t order, const char *options,
                  dainx_result **out);

/* dainx_fold_in adds new entities to a model saved by `dainx augment
 * -model-out` (or by a fold-in), as `dainx fold-in -model MODEL` does:
 * idx (nnz*order int32, 0-based, row-major) and val (nnz doubles) are
 * cells indexed as the model's modes, where an index at or above a mode's
 * size is a new entity (at most one new entity per cell); their rows are
 * trained on the cells with every known row and every layer frozen (bit
 * for bit), or with "tune": "all" the known rows the cells touch too.
 * options: a JSON object of the command's flags without the dash:
 * "model-out" (required: the directory of the model written, not the
 * model read), "tune", "epochs", "batch", "lr", "patience", "l2",
 * "val-frac", "seed", "backend", "quiet", "report". progress and user as
 * for dainx_augment_progress (both NULL: progress lines to standard
 * error unless "quiet"); epochs come as events of stage "fold-in".
 * On success *out holds no cells and the JSON report (new entities per
 * mode, cells, epochs, validation RMSE, …), and "model-out" holds the
 * model. Errors: DAINX_EINPUT for a missing or malformed model, cells of
 * another order, an index that would add more new entities than there
 * are cells, no new entity with "tune": "new", bad options;
 * DAINX_ECANCELLED when progress asked to stop (nothing written);
 * DAINX_ERUN otherwise. */
int dainx_fold_in(const char *model, const int32_t *idx, const double *val, int64_t nnz, int32_t order,
                  const char *options, dainx_progress progress, void *user, dainx_result **out);

/* Accessors. r must be a result from this library (not NULL, except for
 * dainx_result_free). The arrays are owned by r. */
int64_t        dainx_result_count(const dainx_result *r);   /* new cells (or cells read) */
int32_t        dainx_result_order(const dainx_result *r);   /* N, indices per cell */
const int32_t *dainx_result_indices(const dainx_result *r); /* count*order, 0-based, row-major; NULL if count is 0 */
const double  *dainx_result_values(const dainx_result *r);  /* count; NULL if count is 0 */
const char    *dainx_result_report(const dainx_result *r);  /* the JSON report, NUL-terminated */
void           dainx_result_free(dainx_result *r);          /* NULL is fine */

/* The influence outputs of a dainx_augment result (what the options
 * "scores-out" and "importance-out" write to files), for a method that
 * computes them (dain and its ablations, near-cells, degree for the
 * importance); counts are 0 and pointers NULL otherwise, and for results
 * of dainx_read.
 *
 * Cell scores: one per training cell, in the training set's order (the
 * "split-out" option's train.tsv): the cell's indices (score_count*order,
 * 0-based, row-major) and value, α_z (the importance the entity
 * aggregation used: |S_z|, or max(S_z, 0) with "sign":"positive") and
 * the signed TracIn sum S_z (Oh et al., eq. 5 without |·|). */
int64_t        dainx_result_score_count(const dainx_result *r);
const int32_t *dainx_result_score_indices(const dainx_result *r);
const double  *dainx_result_score_values(const dainx_result *r);
const float   *dainx_result_alpha(const dainx_result *r);
const float   *dainx_result_scores(const dainx_result *r);
/* Entity importance of mode (0-based): returns the mode's entity count and
 * sets *imp (if imp is not NULL) to its importances, which sum to 1 (the
 * distribution the alias tables draw from; eq. 6 with -temperature and
 * -mix applied); 0 and NULL when there is none or mode is out of range. */
int64_t        dainx_result_importance(const dainx_result *r, int32_t mode, const double **imp);

#ifdef __cplusplus
}
#endif

#endif /* DAINX_H */
