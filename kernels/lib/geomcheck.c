/* geomcheck.c: prints the launch plans of geometry.h for the shapes read
 * from standard input, one "sms batch in out" per line, as
 *   fwd P C dx P C dw P C db P C out1 P C inf R g1 N g8 N g1024 N
 * (parts and chunk of each split, the wide InfluenceDot chunk rows, and
 * dainx_g_grid1d of batch·in items at 256, batch at 8 and batch at 1024 per
 * block). cuda/geometry_test.go compiles it with the host C compiler and
 * compares every line with the Go backend's choices. */
#include <inttypes.h>
#include <stdio.h>

#include "geometry.h"

int main(void) {
	int sms;
	int64_t b, i, o, p, c;
	while (scanf("%d %" SCNd64 " %" SCNd64 " %" SCNd64, &sms, &b, &i, &o) == 4) {
		dainx_g_plan_forward(b, i, o, sms, &p, &c);
		printf("fwd %" PRId64 " %" PRId64, p, c);
		dainx_g_plan_dx(b, i, o, sms, &p, &c);
		printf(" dx %" PRId64 " %" PRId64, p, c);
		dainx_g_plan_dw(b, i, o, sms, &p, &c);
		printf(" dw %" PRId64 " %" PRId64, p, c);
		dainx_g_plan_db(b, o, sms, &p, &c);
		printf(" db %" PRId64 " %" PRId64, p, c);
		dainx_g_plan_out1(b, i, sms, &p, &c);
		printf(" out1 %" PRId64 " %" PRId64, p, c);
		printf(" inf %" PRId64, dainx_g_influence_chunk(b, o));
		printf(" g1 %" PRId64 " g8 %" PRId64 " g1024 %" PRId64 "\n", dainx_g_grid1d(b * i, DAINX_G_THREADS, sms),
		       dainx_g_grid1d(b, DAINX_G_WARPS_PER_BLOCK, sms), dainx_g_grid1d(b, DAINX_G_MSE_THREADS, sms));
	}
	return 0;
}
