/* augment.c: DAIN through libdainx from C. Reads a tensor file (DAIN TSV,
 * FROSTT .tns or SPLATT .bin), runs dainx_augment on its cells and prints the
 * test RMSE before and after augmentation; with a third argument it writes
 * the new cells there.
 *
 *   cc augment.c $(pkg-config --cflags --libs dainx) -o augment
 *   ./augment tensor.tsv '{"seed":7,"layers":"48,16","epochs":3,"quiet":true}' [new.tsv]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dainx.h>

/* number returns the JSON number after "key": in report (0 if absent). */
static double number(const char *report, const char *key) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(report, pat);
	return p ? strtod(p + strlen(pat), NULL) : 0;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s TENSOR [OPTIONS-JSON [OUTPUT]]\n", argv[0]);
		return 2;
	}
	dainx_result *t = NULL, *aug = NULL;
	if (dainx_read(argv[1], NULL, &t) != DAINX_OK) {
		fprintf(stderr, "augment: %s\n", dainx_last_error());
		return 1;
	}
	printf("libdainx %s: %lld cells of order %d\n", dainx_version(), (long long)dainx_result_count(t),
	       dainx_result_order(t));
	int rc = dainx_augment(dainx_result_indices(t), dainx_result_values(t), dainx_result_count(t),
	                       dainx_result_order(t), argc > 2 ? argv[2] : NULL, &aug);
	if (rc != DAINX_OK) {
		fprintf(stderr, "augment: %s\n", dainx_last_error());
		dainx_result_free(t);
		return 1;
	}
	const char *rep = dainx_result_report(aug);
	printf("%lld new cells; test RMSE %.6f -> %.6f\n", (long long)dainx_result_count(aug),
	       number(rep, "rmse_before"), number(rep, "rmse_after"));
	if (argc > 3 && dainx_write(argv[3], dainx_result_indices(aug), dainx_result_values(aug),
	                            dainx_result_count(aug), dainx_result_order(aug), NULL) != DAINX_OK) {
		fprintf(stderr, "augment: %s\n", dainx_last_error());
		rc = 1;
	}
	dainx_result_free(aug);
	dainx_result_free(t);
	return rc;
}
