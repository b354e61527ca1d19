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
};

/* dainx__set_error stores msg (n bytes, not NUL-terminated) as the calling
 * thread's last error, truncated to the buffer. */
void dainx__set_error(const char *msg, size_t n);

/* dainx__result_new allocates a result for count cells of order indices and
 * a report of report_len bytes (+1 for the NUL); NULL when out of memory. */
dainx_result *dainx__result_new(int64_t count, int32_t order, size_t report_len);

#endif
