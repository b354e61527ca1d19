/* shim.h: the private side of libdainx's C API, shared by shim.c and the
 * cgo preamble of export.go (declarations only). */
#ifndef DAINX_SHIM_H
#define DAINX_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include "dainx.h"

/* The result type of dainx.h: every array is malloc'd, freed by
 * dainx_result_free. */
struct dainx_result {
	int64_t count;
	int32_t order;
	int32_t *idx;  /* count*order, NULL when count is 0 */
	double *val;   /* count, NULL when count is 0 */
	char *report;  /* NUL-terminated */
	/* The training cells' scores (dainx_augment of a method that scores
	 * cells), all NULL and n_scores 0 otherwise. */
	int64_t n_scores;
	int32_t *score_idx; /* n_scores*order */
	double *score_val;  /* n_scores */
	float *alpha;       /* n_scores */
	float *score;       /* n_scores */
	/* Entity importance: mode n's dims[n] values are imp[imp_off[n] ..
	 * imp_off[n+1]-1]; imp_off NULL when the method draws no entity. */
	int64_t *imp_off;   /* order+1 */
	double *imp;
};

/* dainx__set_error stores msg (n bytes, not NUL-terminated) as the calling
 * thread's last error, truncated to the buffer. */
void dainx__set_error(const char *msg, size_t n);

/* dainx__result_new allocates a result for count cells of order indices and
 * a report of report_len bytes (+1 for the NUL); NULL when out of memory. */
dainx_result *dainx__result_new(int64_t count, int32_t order, size_t report_len);

/* dainx__result_scores allocates r's score arrays for n cells; 0 on
 * success, -1 when out of memory (r unchanged then). */
int dainx__result_scores(dainx_result *r, int64_t n);

/* dainx__result_importance allocates r's importance arrays for modes of
 * lens[0..order-1] entities; 0 on success, -1 when out of memory. */
int dainx__result_importance(dainx_result *r, const int64_t *lens);

/* dainx__call_progress calls f(event, user): cgo cannot call a C function
 * pointer itself. */
int dainx__call_progress(dainx_progress f, void *user, const char *event);

#endif
