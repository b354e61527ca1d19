/* shim.c: the C side of libdainx: the public functions of dainx.h, the
 * per-thread error message and the result type. The Go side (export.go)
 * runs on the calling thread, so the thread-specific buffer it fills
 * through dainx__set_error is the caller's.
 *
 * The buffer is a pthread key's value (malloc'd on a thread's first
 * failure, freed when the thread exits), not a __thread array: a shared
 * library that is dlopen'd (Python's ctypes) cannot count on space in the
 * static TLS block, and glibc refuses to load one whose initial-exec TLS
 * does not fit ("cannot allocate memory in static TLS block"). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "_cgo_export.h"

#define DAINX_ERRMAX 8192

static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;

static void make_key(void) { pthread_key_create(&error_key, free); }

void dainx__set_error(const char *msg, size_t n) {
	pthread_once(&error_once, make_key);
	char *buf = pthread_getspecific(error_key);
	if (buf == NULL) {
		buf = malloc(DAINX_ERRMAX);
		if (buf == NULL || pthread_setspecific(error_key, buf) != 0) {
			free(buf);
			return; /* out of memory: the return code still says what happened */
		}
	}
	if (n >= DAINX_ERRMAX) {
		n = DAINX_ERRMAX - 1;
		/* do not end inside a UTF-8 sequence */
		while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80) n--;
	}
	memcpy(buf, msg, n);
	buf[n] = 0;
}

static void set_error(const char *msg) { dainx__set_error(msg, strlen(msg)); }

const char *dainx_last_error(void) {
	pthread_once(&error_once, make_key);
	const char *buf = pthread_getspecific(error_key);
	return buf ? buf : "";
}

const char *dainx_version(void) { return dainxGoVersion(); }

dainx_result *dainx__result_new(int64_t count, int32_t order, size_t report_len) {
	dainx_result *r = calloc(1, sizeof *r);
	if (r == NULL) return NULL;
	r->count = count;
	r->order = order;
	r->report = malloc(report_len + 1);
	if (count > 0) {
		r->idx = malloc((size_t)count * (size_t)order * sizeof(int32_t));
		r->val = malloc((size_t)count * sizeof(double));
	}
	if (r->report == NULL || (count > 0 && (r->idx == NULL || r->val == NULL))) {
		dainx_result_free(r);
		return NULL;
	}
	r->report[report_len] = 0;
	return r;
}

int dainx_augment(const int32_t *idx, const double *val, int64_t nnz, int32_t order, const char *options,
                  dainx_result **out) {
	if (out == NULL) {
		set_error("dainx_augment: out is NULL");
		return DAINX_EINPUT;
	}
	if (nnz > 0 && order > 0 && (idx == NULL || val == NULL)) {
		set_error(idx == NULL ? "dainx_augment: idx is NULL" : "dainx_augment: val is NULL");
		return DAINX_EINPUT;
	}
	return dainxGoAugment((int32_t *)idx, (double *)val, nnz, order, (char *)options, NULL, NULL, out);
}

int dainx_augment_progress(const int32_t *idx, const double *val, int64_t nnz, int32_t order,
                           const char *options, dainx_progress progress, void *user, dainx_result **out) {
	if (out == NULL) {
		set_error("dainx_augment_progress: out is NULL");
		return DAINX_EINPUT;
	}
	if (nnz > 0 && order > 0 && (idx == NULL || val == NULL)) {
		set_error(idx == NULL ? "dainx_augment_progress: idx is NULL" : "dainx_augment_progress: val is NULL");
		return DAINX_EINPUT;
	}
	return dainxGoAugment((int32_t *)idx, (double *)val, nnz, order, (char *)options, progress, user, out);
}

int dainx__call_progress(dainx_progress f, void *user, const char *event) { return f(event, user); }

int dainx_read(const char *path, const char *options, dainx_result **out) {
	if (out == NULL || path == NULL) {
		set_error(out == NULL ? "dainx_read: out is NULL" : "dainx_read: path is NULL");
		return DAINX_EINPUT;
	}
	return dainxGoRead((char *)path, (char *)options, out);
}

int dainx_write(const char *path, const int32_t *idx, const double *val, int64_t nnz, int32_t order,
                const char *options) {
	if (path == NULL) {
		set_error("dainx_write: path is NULL");
		return DAINX_EINPUT;
	}
	if (nnz > 0 && order > 0 && (idx == NULL || val == NULL)) {
		set_error(idx == NULL ? "dainx_write: idx is NULL" : "dainx_write: val is NULL");
		return DAINX_EINPUT;
	}
	return dainxGoWrite((char *)path, (int32_t *)idx, (double *)val, nnz, order, (char *)options);
}

int dainx_predict(const char *model, const int32_t *idx, int64_t nnz, int32_t order, const char *options,
                  dainx_result **out) {
	if (out == NULL || model == NULL) {
		set_error(out == NULL ? "dainx_predict: out is NULL" : "dainx_predict: model is NULL");
		return DAINX_EINPUT;
	}
	if (nnz > 0 && order > 0 && idx == NULL) {
		set_error("dainx_predict: idx is NULL");
		return DAINX_EINPUT;
	}
	return dainxGoPredict((char *)model, (int32_t *)idx, nnz, order, (char *)options, out);
}

int64_t dainx_result_count(const dainx_result *r) { return r ? r->count : 0; }
int32_t dainx_result_order(const dainx_result *r) { return r ? r->order : 0; }
const int32_t *dainx_result_indices(const dainx_result *r) { return r ? r->idx : NULL; }
const double *dainx_result_values(const dainx_result *r) { return r ? r->val : NULL; }
const char *dainx_result_report(const dainx_result *r) { return r ? r->report : ""; }

int64_t dainx_result_score_count(const dainx_result *r) { return r ? r->n_scores : 0; }
const int32_t *dainx_result_score_indices(const dainx_result *r) { return r ? r->score_idx : NULL; }
const double *dainx_result_score_values(const dainx_result *r) { return r ? r->score_val : NULL; }
const float *dainx_result_alpha(const dainx_result *r) { return r ? r->alpha : NULL; }
const float *dainx_result_scores(const dainx_result *r) { return r ? r->score : NULL; }

int64_t dainx_result_importance(const dainx_result *r, int32_t mode, const double **imp) {
	if (imp != NULL) *imp = NULL;
	if (r == NULL || r->imp_off == NULL || mode < 0 || mode >= r->order) return 0;
	if (imp != NULL) *imp = r->imp + r->imp_off[mode];
	return r->imp_off[mode + 1] - r->imp_off[mode];
}

int dainx__result_scores(dainx_result *r, int64_t n) {
	if (n <= 0) return 0;
	int32_t *idx = malloc((size_t)n * (size_t)r->order * sizeof(int32_t));
	double *val = malloc((size_t)n * sizeof(double));
	float *alpha = malloc((size_t)n * sizeof(float));
	float *score = malloc((size_t)n * sizeof(float));
	if (idx == NULL || val == NULL || alpha == NULL || score == NULL) {
		free(idx);
		free(val);
		free(alpha);
		free(score);
		return -1;
	}
	r->n_scores = n;
	r->score_idx = idx;
	r->score_val = val;
	r->alpha = alpha;
	r->score = score;
	return 0;
}

int dainx__result_importance(dainx_result *r, const int64_t *lens) {
	int64_t *off = malloc(((size_t)r->order + 1) * sizeof(int64_t));
	if (off == NULL) return -1;
	off[0] = 0;
	for (int32_t n = 0; n < r->order; n++) off[n + 1] = off[n] + lens[n];
	double *imp = malloc((size_t)(off[r->order] > 0 ? off[r->order] : 1) * sizeof(double));
	if (imp == NULL) {
		free(off);
		return -1;
	}
	r->imp_off = off;
	r->imp = imp;
	return 0;
}

void dainx_result_free(dainx_result *r) {
	if (r == NULL) return;
	free(r->idx);
	free(r->val);
	free(r->report);
	free(r->score_idx);
	free(r->score_val);
	free(r->alpha);
	free(r->score);
	free(r->imp_off);
	free(r->imp);
	free(r);
}
