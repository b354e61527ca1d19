/* shim_foldin.c: the public dainx_fold_in of dainx.h (issue 34), checking
 * its pointers before the Go side (export_foldin.go) runs. */
#include <string.h>

#include "shim.h"
#include "_cgo_export.h"

int dainx_fold_in(const char *model, const int32_t *idx, const double *val, int64_t nnz, int32_t order,
                  const char *options, dainx_progress progress, void *user, dainx_result **out) {
	if (out == NULL || model == NULL) {
		const char *msg = out == NULL ? "dainx_fold_in: out is NULL" : "dainx_fold_in: model is NULL";
		dainx__set_error(msg, strlen(msg));
		return DAINX_EINPUT;
	}
	if (nnz > 0 && order > 0 && (idx == NULL || val == NULL)) {
		const char *msg = idx == NULL ? "dainx_fold_in: idx is NULL" : "dainx_fold_in: val is NULL";
		dainx__set_error(msg, strlen(msg));
		return DAINX_EINPUT;
	}
	return dainxGoFoldIn((char *)model, (int32_t *)idx, (double *)val, nnz, order, (char *)options, progress, user, out);
}
