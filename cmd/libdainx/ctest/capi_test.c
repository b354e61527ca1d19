/* capi_test.c: tests of libdainx's C API (run by run.sh, which makes the
 * tensor and the binary's outputs it compares against).
 *
 *   capi_test TENSOR OPTIONS BIN_AUG BIN_REPORT OPTIONS_SEED8 BIN_AUG_SEED8
 *
 * 1. dainx_augment's cells, values and RMSEs equal those of `dainx augment`
 *    run on the same file with the same flags (BIN_AUG, BIN_REPORT).
 * 2. Every bad input returns DAINX_EINPUT with a message naming the cell or
 *    option, leaves *out untouched, and the process goes on.
 * 3. Two threads calling dainx_augment at once (seeds 7 and 8) both succeed
 *    and get what the binary got for their seed; the last error is per
 *    thread.
 * 4. The host's SIGINT handler is still its own after the calls, SIGTERM is
 *    still SIG_DFL, and a raised SIGINT reaches the host's handler.
 * 5. dainx_read/dainx_write round-trip tsv, tns, bin and gzip, and report
 *    file errors.
 * 6. dainx_predict on hostile model files (dims 4e12, truncated, a header
 *    that lies about sizes) is DAINX_EINPUT naming the file; the host goes
 *    on (issue 31).
 * 7. A bayes-fm model (issue 47) saved through "model-out" predicts the
 *    run's rmse_after, and dainx_fold_in grows it (test_bayes); an ensemble
 *    Θ′ saved and predicted alike, its fold-in refused (test_ensemble).
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dainx.h>

static int failures;

#define CHECK(cond, ...)                                         \
	do {                                                         \
		if (!(cond)) {                                           \
			failures++;                                          \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, "\n");                               \
		}                                                        \
	} while (0)

/* field returns the text of the JSON number after "key": (static buffer). */
static const char *field(const char *report, const char *key) {
	static __thread char buf[64];
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(report, pat);
	if (!p) return "";
	p += strlen(pat);
	while (*p == ' ') p++;
	size_t n = strcspn(p, ",\n}");
	if (n >= sizeof buf) n = sizeof buf - 1;
	memcpy(buf, p, n);
	buf[n] = 0;
	return buf;
}

static dainx_result *read_or_die(const char *path) {
	dainx_result *r = NULL;
	if (dainx_read(path, NULL, &r) != DAINX_OK) {
		fprintf(stderr, "FAIL: dainx_read %s: %s\n", path, dainx_last_error());
		exit(1);
	}
	return r;
}

/* same_cells reports whether a and b hold the same cells in the same order,
 * bit for bit. */
static int same_cells(const dainx_result *a, const dainx_result *b) {
	int64_t n = dainx_result_count(a);
	int32_t o = dainx_result_order(a);
	if (n != dainx_result_count(b) || o != dainx_result_order(b)) return 0;
	return n == 0 || (memcmp(dainx_result_indices(a), dainx_result_indices(b), (size_t)n * o * 4) == 0 &&
	                  memcmp(dainx_result_values(a), dainx_result_values(b), (size_t)n * 8) == 0);
}

static dainx_result *tensor; /* the input */

/* ---- 1. equal to the binary ---- */

static void test_equal_binary(const char *opts, const char *bin_aug, const char *bin_report) {
	dainx_result *aug = NULL;
	int rc = dainx_augment(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                       dainx_result_order(tensor), opts, &aug);
	CHECK(rc == DAINX_OK, "dainx_augment: %d %s", rc, dainx_last_error());
	if (rc != DAINX_OK) return;
	dainx_result *want = read_or_die(bin_aug);
	CHECK(same_cells(aug, want), "cells differ from the binary's (%lld vs %lld)", (long long)dainx_result_count(aug),
	      (long long)dainx_result_count(want));
	FILE *f = fopen(bin_report, "r");
	static char rep[1 << 20];
	size_t n = f ? fread(rep, 1, sizeof rep - 1, f) : 0;
	rep[n] = 0;
	if (f) fclose(f);
	const char *keys[] = {"rmse_before", "rmse_after", "n_train", "n_val", "n_test", "n_aug", "best_epoch",
	                      "best_epoch_after", "sample_draws"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		char a[64];
		snprintf(a, sizeof a, "%s", field(dainx_result_report(aug), keys[i]));
		CHECK(a[0] && strcmp(a, field(rep, keys[i])) == 0, "report %s: library %s, binary %s", keys[i], a,
		      field(rep, keys[i]));
	}
	char before[64];
	snprintf(before, sizeof before, "%s", field(dainx_result_report(aug), "rmse_before"));
	printf("ok   equal to the binary: %lld new cells, rmse %s -> %s\n", (long long)dainx_result_count(aug), before,
	       field(dainx_result_report(aug), "rmse_after"));
	dainx_result_free(want);
	dainx_result_free(aug);
}

/* ---- 2. bad input ---- */

static const char *QUIET = "{\"quiet\":true,\"backend\":\"cpu\",\"epochs\":1,\"layers\":\"12,4\"}";

static void expect_error(const char *name, const int32_t *idx, const double *val, int64_t nnz, int32_t order,
                         const char *opts, const char *want) {
	dainx_result *sentinel = (dainx_result *)(uintptr_t)0x1234, *out = sentinel;
	int rc = dainx_augment(idx, val, nnz, order, opts, &out);
	const char *msg = dainx_last_error();
	CHECK(rc == DAINX_EINPUT, "%s: rc %d (%s), want DAINX_EINPUT", name, rc, msg);
	CHECK(out == sentinel, "%s: *out was touched", name);
	CHECK(strstr(msg, want) != NULL, "%s: message '%s' lacks \"%s\"", name, msg, want);
	if (rc == DAINX_EINPUT && out == sentinel && strstr(msg, want)) printf("ok   %-28s %s\n", name, msg);
}

static void test_bad_input(void) {
	int32_t idx[] = {0, 0, 0, 1, 2, 3, 2, 1, 0, 3, 3, 3};
	double val[] = {1, 2, 3, 4};
	int32_t bad[12];
	double badv[4];
	memcpy(bad, idx, sizeof idx);
	bad[4] = -5;
	expect_error("negative index", bad, val, 4, 3, QUIET, "cell 1 (1, -5, 3): index -5 in mode 2 is negative");
	memcpy(bad, idx, sizeof idx);
	bad[11] = 2147483647;
	expect_error("index outside int32 sizes", bad, val, 4, 3, QUIET, "cell 3 (3, 3, 2147483647)");
	memcpy(badv, val, sizeof val);
	badv[2] = NAN;
	expect_error("NaN value", idx, badv, 4, 3, QUIET, "cell 2 (2, 1, 0): value NaN is not finite");
	badv[2] = INFINITY;
	expect_error("infinite value", idx, badv, 4, 3, QUIET, "not finite");
	memcpy(bad, idx, sizeof idx);
	bad[9] = 1, bad[10] = 2, bad[11] = 3;
	expect_error("duplicate cell", bad, val, 4, 3, QUIET, "cell 3 (1, 2, 3) duplicates cell 1");
	expect_error("nnz 0", idx, val, 0, 3, QUIET, "nnz 0");
	expect_error("nnz < 0", idx, val, -7, 3, QUIET, "nnz -7");
	expect_error("order 0", idx, val, 4, 0, QUIET, "order 0");
	expect_error("order < 0", idx, val, 4, -2, QUIET, "order -2");
	expect_error("idx NULL", NULL, val, 4, 3, QUIET, "idx is NULL");
	expect_error("val NULL", idx, NULL, 4, 3, QUIET, "val is NULL");
	expect_error("options not JSON", idx, val, 4, 3, "{\"ratio\":", "not a JSON object");
	expect_error("options an array", idx, val, 4, 3, "[1,2]", "not a JSON object");
	expect_error("options null", idx, val, 4, 3, "null", "not a JSON object");
	expect_error("unknown option", idx, val, 4, 3, "{\"bogus\":1}", "option \"bogus\": unknown");
	expect_error("option -ratio (dash)", idx, val, 4, 3, "{\"-ratio\":1}", "option \"-ratio\": unknown");
	expect_error("bad number", idx, val, 4, 3, "{\"ratio\":\"abc\"}", "option \"ratio\": invalid value");
	expect_error("bool for a number", idx, val, 4, 3, "{\"epochs\":true}", "option \"epochs\": want a number");
	expect_error("number for a bool", idx, val, 4, 3, "{\"quiet\":1}", "option \"quiet\": want true or false");
	expect_error("array value", idx, val, 4, 3, "{\"layers\":[12,4]}", "option \"layers\": want a JSON number");
	expect_error("input option", idx, val, 4, 3, "{\"input\":\"x.tsv\"}", "option \"input\"");
	expect_error("bad backend", idx, val, 4, 3, "{\"backend\":\"tpu\",\"quiet\":true}", "-backend \"tpu\"");
	expect_error("bad precision", idx, val, 4, 3, "{\"precision\":\"fp16\",\"quiet\":true}", "fp16");
	expect_error("bad method", idx, val, 4, 3, "{\"method\":\"magic\"}", "magic");
	expect_error("epochs 0", idx, val, 4, 3, "{\"epochs\":0}", "epochs 0");
	expect_error("negative ratio", idx, val, 4, 3, "{\"ratio\":-1}", "ratio -1");
	expect_error("layers vs order", idx, val, 4, 3, "{\"layers\":\"10,4\",\"quiet\":true}", "-layers 10,4");
	expect_error("output dir missing", idx, val, 4, 3, "{\"output\":\"/nonexistent/dir/x.tsv\",\"quiet\":true}",
	             "directory /nonexistent/dir does not exist");
	dainx_result *r = NULL;
	CHECK(dainx_augment(idx, val, 4, 3, QUIET, NULL) == DAINX_EINPUT, "out NULL accepted");
	/* Too few cells for a split with every part non-empty: a run failure. */
	int rc = dainx_augment(idx, val, 2, 3, QUIET, &r);
	CHECK(rc == DAINX_ERUN && strstr(dainx_last_error(), "every part must be non-empty"), "2 cells: rc %d %s", rc,
	      dainx_last_error());
	if (rc == DAINX_ERUN) printf("ok   %-28s %s\n", "2 cells (run failure)", dainx_last_error());
	dainx_result_free(NULL); /* allowed */
}

/* ---- 3. threads ---- */

struct job {
	const char *opts;
	dainx_result *out;
	int rc;
	char err_before[64], err_after_bad[256];
};

static void *run_job(void *p) {
	struct job *j = p;
	snprintf(j->err_before, sizeof j->err_before, "%s", dainx_last_error());
	j->rc = dainx_augment(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                      dainx_result_order(tensor), j->opts, &j->out);
	int32_t idx[] = {0, -1};
	double val[] = {1};
	dainx_result *r = NULL;
	dainx_augment(idx, val, 1, 2, "{}", &r); /* fails on this thread only */
	snprintf(j->err_after_bad, sizeof j->err_after_bad, "%s", dainx_last_error());
	return NULL;
}

static void test_threads(const char *opts7, const char *bin_aug7, const char *opts8, const char *bin_aug8) {
	dainx_augment(NULL, NULL, 1, 1, NULL, NULL); /* main thread's error: out is NULL */
	struct job jobs[2] = {{.opts = opts7}, {.opts = opts8}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run_job, &jobs[i]);
	for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
	const char *want[2] = {bin_aug7, bin_aug8};
	for (int i = 0; i < 2; i++) {
		CHECK(jobs[i].rc == DAINX_OK, "thread %d: rc %d", i, jobs[i].rc);
		CHECK(jobs[i].err_before[0] == 0, "thread %d: last error '%s' before any call", i, jobs[i].err_before);
		CHECK(strstr(jobs[i].err_after_bad, "negative") != NULL, "thread %d: own error '%s'", i, jobs[i].err_after_bad);
		if (jobs[i].rc == DAINX_OK) {
			dainx_result *w = read_or_die(want[i]);
			CHECK(same_cells(jobs[i].out, w), "thread %d: cells differ from the binary's", i);
			dainx_result_free(w);
			dainx_result_free(jobs[i].out);
		}
	}
	CHECK(strstr(dainx_last_error(), "out is NULL") != NULL, "main thread's error overwritten: '%s'",
	      dainx_last_error());
	printf("ok   two threads at once: both equal the binary's cells; errors per thread\n");
}

/* ---- 4. signals ---- */

static volatile sig_atomic_t got_sigint;
static void on_sigint(int sig) {
	(void)sig;
	got_sigint = 1;
}

static void test_signals(void) {
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	CHECK(sa.sa_handler == on_sigint, "SIGINT handler replaced");
	sigaction(SIGTERM, NULL, &sa);
	CHECK(sa.sa_handler == SIG_DFL, "SIGTERM handler installed by the library");
	sigaction(SIGQUIT, NULL, &sa);
	CHECK(sa.sa_handler == SIG_DFL, "SIGQUIT handler installed by the library");
	raise(SIGINT);
	CHECK(got_sigint == 1, "SIGINT did not reach the host's handler");
	printf("ok   signals: the host's SIGINT handler kept and called; SIGTERM, SIGQUIT untouched\n");
}

/* ---- 5. files ---- */

static void test_files(const char *dir) {
	const char *names[] = {"rt.tsv", "rt.tns", "rt.bin", "rt.tsv.gz", "rt.tns.gz"};
	char path[4096];
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		int rc = dainx_write(path, dainx_result_indices(tensor), dainx_result_values(tensor),
		                     dainx_result_count(tensor), dainx_result_order(tensor), NULL);
		CHECK(rc == DAINX_OK, "write %s: %s", names[i], dainx_last_error());
		dainx_result *r = NULL;
		rc = dainx_read(path, NULL, &r);
		CHECK(rc == DAINX_OK, "read %s: %s", names[i], dainx_last_error());
		if (rc == DAINX_OK) {
			CHECK(same_cells(r, tensor), "%s: round trip changed the cells", names[i]);
			dainx_result_free(r);
		}
	}
	snprintf(path, sizeof path, "%s/rt.txt", dir);
	CHECK(dainx_write(path, dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                  dainx_result_order(tensor), "{\"format\":\"tns\",\"index-base\":1}") == DAINX_OK,
	      "write with options: %s", dainx_last_error());
	dainx_result *r = NULL;
	CHECK(dainx_read(path, "{\"format\":\"tns\"}", &r) == DAINX_OK && same_cells(r, tensor),
	      "read with options: %s", dainx_last_error());
	dainx_result_free(r);
	r = NULL;
	CHECK(dainx_read("/nonexistent.tsv", NULL, &r) == DAINX_EINPUT && r == NULL, "missing file");
	snprintf(path, sizeof path, "%s/bad.tsv", dir);
	FILE *f = fopen(path, "w");
	fputs("0\t1\t2\t1.5\n3\t4\tx\t2\n", f);
	fclose(f);
	CHECK(dainx_read(path, NULL, &r) == DAINX_EINPUT && strstr(dainx_last_error(), "bad.tsv:2") != NULL,
	      "bad line: %s", dainx_last_error());
	CHECK(dainx_read(path, "{\"format\":\"xml\"}", &r) == DAINX_EINPUT, "bad format option");
	printf("ok   files: tsv, tns, bin, gzip round trips; missing file and bad line are errors\n");
}

/* test_influence: the result's cell scores and entity importance equal
 * what the options "scores-out" and "importance-out" write, α = |S|, each
 * mode's importance sums to 1; a method without them gives none. */
static void test_influence(const char *opts7, const char *opts8, const char *dir) {
	char opts[4096], sp[1024], ip[1024];
	snprintf(sp, sizeof sp, "%s/scores.tsv", dir);
	snprintf(ip, sizeof ip, "%s/imp.tsv", dir);
	snprintf(opts, sizeof opts, "%.*s,\"scores-out\":\"%s\",\"importance-out\":\"%s\"}", (int)strlen(opts7) - 1, opts7, sp, ip);
	dainx_result *r = NULL;
	int rc = dainx_augment(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                       dainx_result_order(tensor), opts, &r);
	CHECK(rc == DAINX_OK, "dainx_augment with scores-out: %d %s", rc, dainx_last_error());
	if (rc != DAINX_OK) return;
	int32_t order = dainx_result_order(r);
	int64_t n = dainx_result_score_count(r);
	const int32_t *si = dainx_result_score_indices(r);
	const double *sv = dainx_result_score_values(r);
	const float *alpha = dainx_result_alpha(r), *score = dainx_result_scores(r);
	CHECK(n > 0 && si && sv && alpha && score, "no scores (%lld)", (long long)n);
	FILE *f = fopen(sp, "r");
	CHECK(f != NULL, "no %s", sp);
	char line[1024];
	int64_t k = -1, bad = 0;
	while (f && fgets(line, sizeof line, f)) {
		if (k++ < 0) continue; /* header */
		if (k > n) { bad++; break; }
		char *p = line;
		for (int32_t m = 0; m < order; m++) bad += strtol(p, &p, 10) != si[(k - 1) * order + m];
		bad += strtod(p, &p) != sv[k - 1];
		bad += strtof(p, &p) != alpha[k - 1];
		bad += strtof(p, &p) != score[k - 1];
		bad += alpha[k - 1] != fabsf(score[k - 1]);
	}
	if (f) fclose(f);
	CHECK(k == n && bad == 0, "scores: %lld lines for %lld cells, %lld mismatches", (long long)k, (long long)n, (long long)bad);
	f = fopen(ip, "r");
	CHECK(f != NULL, "no %s", ip);
	int64_t lines = 0;
	double sum[8] = {0};
	bad = 0;
	while (f && fgets(line, sizeof line, f)) {
		if (lines++ == 0) continue;
		char *p = line;
		long mode = strtol(p, &p, 10), idx = strtol(p, &p, 10);
		double x = strtod(p, &p);
		const double *imp = NULL;
		int64_t len = dainx_result_importance(r, (int32_t)mode - 1, &imp);
		bad += !(idx >= 0 && idx < len && imp[idx] == x);
		if (mode >= 1 && mode <= 8) sum[mode - 1] += x;
	}
	if (f) fclose(f);
	int64_t total = 0;
	for (int32_t m = 0; m < order; m++) {
		total += dainx_result_importance(r, m, NULL);
		CHECK(fabs(sum[m] - 1) < 1e-9, "mode %d: importance sums to %g", m + 1, sum[m]);
	}
	CHECK(lines - 1 == total && bad == 0, "importance: %lld lines for %lld entities, %lld mismatches", (long long)lines - 1, (long long)total, (long long)bad);
	const double *none = (const double *)1;
	CHECK(dainx_result_importance(r, order, &none) == 0 && none == NULL, "mode out of range");
	dainx_result_free(r);
	r = NULL;
	rc = dainx_augment(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                   dainx_result_order(tensor), opts8, &r);
	CHECK(rc == DAINX_OK && dainx_result_score_count(r) == 0 && dainx_result_alpha(r) == NULL &&
	          dainx_result_importance(r, 0, NULL) == 0,
	      "method random: scores or importance present (%s)", dainx_last_error());
	dainx_result_free(r);
	printf("ok   influence: %lld cell scores and %lld entity importances equal the files\n", (long long)n, (long long)total);
}

/* test_predict: a model saved through the option "model-out", predicted by
 * dainx_predict on the test cells "split-out" wrote, gives the report's
 * rmse_after; a missing model and an out-of-range cell are DAINX_EINPUT. */
static void test_predict(const char *opts7, const char *dir) {
	char opts[4096], m[1024], test[1024];
	snprintf(m, sizeof m, "%s/m", dir);
	snprintf(test, sizeof test, "%s/split/test.tsv", dir);
	snprintf(opts, sizeof opts, "%.*s,\"model-out\":\"%s\",\"split-out\":\"%s/split\"}", (int)strlen(opts7) - 1, opts7, m, dir);
	dainx_result *r = NULL, *t = NULL, *p = NULL;
	int rc = dainx_augment(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                       dainx_result_order(tensor), opts, &r);
	CHECK(rc == DAINX_OK, "dainx_augment with model-out: %d %s", rc, dainx_last_error());
	if (rc != DAINX_OK) return;
	double after = strtod(field(dainx_result_report(r), "rmse_after"), NULL);
	t = read_or_die(test);
	rc = dainx_predict(m, dainx_result_indices(t), dainx_result_count(t), dainx_result_order(t), "{\"backend\":\"cpu\"}", &p);
	CHECK(rc == DAINX_OK, "dainx_predict: %d %s", rc, dainx_last_error());
	if (rc == DAINX_OK) {
		double se = 0;
		const double *want = dainx_result_values(t), *got = dainx_result_values(p);
		for (int64_t k = 0; k < dainx_result_count(t); k++) se += (got[k] - want[k]) * (got[k] - want[k]);
		double rmse = sqrt(se / (double)dainx_result_count(t));
		/* the run differences values in float32: agreement to float32 rounding */
		CHECK(fabs(rmse - after) <= 1e-6 * after, "predicted test RMSE %.17g, the run's rmse_after %.17g", rmse, after);
		printf("ok   predict: a saved model's test RMSE %.6f is the run's rmse_after\n", rmse);
		dainx_result_free(p);
	}
	p = NULL;
	snprintf(m, sizeof m, "%s/none", dir);
	CHECK(dainx_predict(m, dainx_result_indices(t), dainx_result_count(t), dainx_result_order(t), NULL, &p) == DAINX_EINPUT &&
	          p == NULL && strstr(dainx_last_error(), "none") != NULL,
	      "missing model: %s", dainx_last_error());
	int32_t far[3] = {0, 1 << 30, 0};
	snprintf(m, sizeof m, "%s/m", dir);
	CHECK(dainx_predict(m, far, 1, 3, NULL, &p) == DAINX_EINPUT && strstr(dainx_last_error(), "outside") != NULL,
	      "out-of-range cell: %s", dainx_last_error());
	dainx_result_free(t);
	dainx_result_free(r);
}

/* test_bayes (issue 47): a bayes-fm Θ′ ("final-model": "bayes-fm", as
 * -preset accurate chooses it) saved through "model-out" is predicted by
 * dainx_predict to the run's rmse_after, and dainx_fold_in adds a new
 * entity of mode 1 (its cells' values copied from entity 0's) without
 * moving the known cells' predictions. */
/* saved_rmse runs dainx_augment with "final-model" final (bayes-fm with
 * samples sweeps), saving the model to m and the split to dir/split, reads
 * the split's test cells into *t, predicts them from m into *p and
 * returns their RMSE, with the run's rmse_after in *after; NAN after a
 * failed call (already CHECKed). */
static double saved_rmse(const char *dir, const char *m, const char *split, const char *final, int samples,
                         dainx_result **r, dainx_result **t, dainx_result **p, double *after) {
	char opts[2048], test[1024];
	snprintf(test, sizeof test, "%s/%s/test.tsv", dir, split);
	snprintf(opts, sizeof opts,
	         "{\"backend\":\"cpu\",\"layers\":\"12,8\",\"epochs\":2,\"batch\":64,\"quiet\":true,\"final-model\":\"%s\","
	         "\"bayes-samples\":%d,\"bayes-priors\":\"mode\",\"model-out\":\"%s\",\"split-out\":\"%s/%s\"}", final, samples, m, dir, split);
	int rc = dainx_augment(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                       dainx_result_order(tensor), opts, r);
	CHECK(rc == DAINX_OK, "dainx_augment with final-model %s and model-out: %d %s", final, rc, dainx_last_error());
	if (rc != DAINX_OK) return NAN;
	*after = strtod(field(dainx_result_report(*r), "rmse_after"), NULL);
	*t = read_or_die(test);
	int64_t n = dainx_result_count(*t);
	rc = dainx_predict(m, dainx_result_indices(*t), n, dainx_result_order(*t), NULL, p);
	CHECK(rc == DAINX_OK, "dainx_predict of a %s model: %d %s", final, rc, dainx_last_error());
	if (rc != DAINX_OK) return NAN;
	double se = 0;
	const double *want = dainx_result_values(*t), *got = dainx_result_values(*p);
	for (int64_t k = 0; k < n; k++) se += (got[k] - want[k]) * (got[k] - want[k]);
	return sqrt(se / (double)n);
}

static void test_bayes(const char *dir) {
	char opts[2048], m[1024], m2[1024];
	snprintf(m, sizeof m, "%s/bayes", dir);
	snprintf(m2, sizeof m2, "%s/bayes2", dir);
	dainx_result *r = NULL, *t = NULL, *p = NULL, *f = NULL, *p2 = NULL;
	double after = 0, rmse = saved_rmse(dir, m, "bsplit", "bayes-fm", 12, &r, &t, &p, &after);
	if (!isnan(rmse)) {
		int64_t n = dainx_result_count(t);
		int32_t order = dainx_result_order(t);
		const double *got = dainx_result_values(p);
		CHECK(fabs(rmse - after) <= 1e-12 * after, "bayes-fm: predicted test RMSE %.17g, the run's rmse_after %.17g", rmse, after);
		/* A new entity of mode 1: the largest index + 1, with the test
		 * cells of the entity 0 of mode 1 re-indexed to it. */
		const int32_t *idx = dainx_result_indices(tensor);
		int32_t top = 0;
		for (int64_t k = 0; k < dainx_result_count(tensor); k++)
			if (idx[k * order] > top) top = idx[k * order];
		int32_t cells[3 * 64];
		double vals[64];
		int64_t nn = 0;
		for (int64_t k = 0; k < dainx_result_count(tensor) && nn < 64; k++) {
			if (idx[k * order] != 0) continue;
			for (int j = 0; j < order; j++) cells[nn * order + j] = idx[k * order + j];
			cells[nn * order] = top + 1;
			vals[nn++] = dainx_result_values(tensor)[k];
		}
		snprintf(opts, sizeof opts, "{\"model-out\":\"%s\",\"seed\":2,\"quiet\":true}", m2);
		int rc = dainx_fold_in(m, cells, vals, nn, order, opts, NULL, NULL, &f);
		CHECK(rc == DAINX_OK, "dainx_fold_in of a bayes-fm model: %d %s", rc, dainx_last_error());
		if (rc == DAINX_OK) {
			rc = dainx_predict(m2, dainx_result_indices(t), n, order, NULL, &p2);
			CHECK(rc == DAINX_OK, "dainx_predict after fold-in: %d %s", rc, dainx_last_error());
			int moved = 0;
			for (int64_t k = 0; rc == DAINX_OK && k < n; k++) moved += dainx_result_values(p2)[k] != got[k];
			CHECK(moved == 0, "fold-in moved %d known cells' predictions", moved);
			printf("ok   bayes-fm: the saved model's test RMSE %.6f is rmse_after; a folded-in entity leaves the known cells' predictions as they were\n", rmse);
		}
	}
	dainx_result_free(p2);
	dainx_result_free(f);
	dainx_result_free(p);
	dainx_result_free(t);
	dainx_result_free(r);
}

/* test_ensemble (issue 47): an ensemble Θ′ ("final-model": "ensemble")
 * saved through "model-out" (its members and their stack) is predicted by
 * dainx_predict to the run's rmse_after, and dainx_fold_in refuses it. */
static void test_ensemble(const char *dir) {
	char opts[2048], m[1024], m2[1024];
	snprintf(m, sizeof m, "%s/ens", dir);
	snprintf(m2, sizeof m2, "%s/ens2", dir);
	dainx_result *r = NULL, *t = NULL, *p = NULL, *f = NULL;
	double after = 0, rmse = saved_rmse(dir, m, "esplit", "ensemble", 8, &r, &t, &p, &after);
	if (!isnan(rmse)) {
		int64_t n = dainx_result_count(t);
		int32_t order = dainx_result_order(t);
		CHECK(fabs(rmse - after) <= 1e-12 * after, "ensemble: predicted test RMSE %.17g, the run's rmse_after %.17g", rmse, after);
		snprintf(opts, sizeof opts, "{\"model-out\":\"%s\",\"quiet\":true}", m2);
		int rc = dainx_fold_in(m, dainx_result_indices(t), dainx_result_values(t), n, order, opts, NULL, NULL, &f);
		CHECK(rc != DAINX_OK && strstr(dainx_last_error(), "ensemble") != NULL, "dainx_fold_in of an ensemble: %d %s", rc, dainx_last_error());
		printf("ok   ensemble: the saved stack's test RMSE %.6f is rmse_after; fold-in refuses it\n", rmse);
	}
	dainx_result_free(f);
	dainx_result_free(p);
	dainx_result_free(t);
	dainx_result_free(r);
}

/* slurp reads a whole file (NULL on failure); *n gets its size. */
static char *slurp(const char *path, size_t *n) {
	FILE *f = fopen(path, "rb");
	if (f == NULL) return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)len + 1);
	if (b == NULL || fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		fclose(f);
		return NULL;
	}
	fclose(f);
	b[len] = 0;
	*n = (size_t)len;
	return b;
}

/* put writes n bytes of b as dir/name, making dir. */
static void put(const char *dir, const char *name, const char *b, size_t n) {
	char p[1024];
	snprintf(p, sizeof p, "mkdir -p '%s'", dir);
	if (system(p) != 0) return;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "wb");
	if (f == NULL) return;
	fwrite(b, 1, n, f);
	fclose(f);
}

/* test_hostile_model: models whose files lie (dims of 4e12, a truncated
 * safetensors file, a header length past the end, data_offsets that
 * contradict the shape) are DAINX_EINPUT naming the file, and the host
 * goes on; nnz 0 checks a good model and reports its order. Uses the model
 * test_predict saved in dir/m. */
static void test_hostile_model(const char *dir) {
	char m[1024], h[1024], want[1100];
	size_t nj = 0, ns = 0;
	snprintf(m, sizeof m, "%s/m/model.json", dir);
	char *js = slurp(m, &nj);
	snprintf(m, sizeof m, "%s/m/model.safetensors", dir);
	char *st = slurp(m, &ns);
	CHECK(js != NULL && st != NULL && ns > 16, "no saved model in %s/m", dir);
	if (js == NULL || st == NULL || ns <= 16) {
		free(js);
		free(st);
		return;
	}
	int32_t cell[3] = {0, 0, 0};
	dainx_result *p = NULL;
	snprintf(m, sizeof m, "%s/m", dir);
	int rc = dainx_predict(m, NULL, 0, 0, NULL, &p);
	CHECK(rc == DAINX_OK && p != NULL && dainx_result_count(p) == 0 && strstr(dainx_result_report(p), "\"order\":3") != NULL,
	      "nnz 0 (check the model): %d %s", rc, rc ? dainx_last_error() : dainx_result_report(p));
	dainx_result_free(p);
	p = NULL;

	static const char dims[] = "{\"format\":\"dainx-model\",\"format_version\":1,\"kind\":\"mlp\",\"order\":3,"
	                           "\"dims\":[40,4000000000000,40],\"embedding_width\":16,\"layers\":[48,16],"
	                           "\"layout\":\"mode-major\",\"index_base\":0}";
	char *lying = malloc(ns), *offs = NULL;
	memcpy(lying, st, ns);
	/* same length: the first tensor's end offset becomes 9s */
	offs = strstr(lying + 8, "\"data_offsets\":[0,");
	if (offs != NULL)
		for (char *q = offs + strlen("\"data_offsets\":[0,"); *q >= '0' && *q <= '9'; q++) *q = '9';
	char *longhead = malloc(ns);
	memcpy(longhead, st, ns);
	for (int i = 0; i < 8; i++) longhead[i] = 0;
	longhead[7] = 0x40; /* 2^62 */
	struct {
		const char *name, *file, *data;
		size_t n;
		const char *want;
	} cases[] = {
	    {"dims", "model.json", dims, sizeof dims - 1, "model.json: dims[1] = 4000000000000: above the limit 2147483647"},
	    {"truncated", "model.safetensors", st, ns - 9, "(truncated?)"},
	    {"header length", "model.safetensors", longhead, ns, "runs past the end"},
	    {"offsets", "model.safetensors", lying, ns, "data_offsets [0, 9"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(h, sizeof h, "%s/hostile-%s", dir, cases[i].name);
		put(h, "model.json", js, nj);
		put(h, "model.safetensors", st, ns);
		put(h, cases[i].file, cases[i].data, cases[i].n);
		p = NULL;
		rc = dainx_predict(h, cell, 1, 3, NULL, &p);
		snprintf(want, sizeof want, "%s/%s", h, cases[i].file);
		CHECK(rc == DAINX_EINPUT && p == NULL && strstr(dainx_last_error(), want) != NULL &&
		          strstr(dainx_last_error(), cases[i].want) != NULL && strchr(dainx_last_error(), '\n') == NULL,
		      "hostile model (%s): rc %d, %s", cases[i].name, rc, dainx_last_error());
	}
	/* the host goes on: the good model still predicts */
	rc = dainx_predict(m, cell, 1, 3, NULL, &p);
	CHECK(rc == DAINX_OK, "good model after the hostile ones: %d %s", rc, dainx_last_error());
	dainx_result_free(p);
	free(lying);
	free(longhead);
	free(js);
	free(st);
	printf("ok   hostile models: dims 4e12, truncated, header length and offsets that lie are DAINX_EINPUT naming the file\n");
}

/* progress_state counts the events of dainx_augment_progress. */
struct progress_state {
	pthread_t caller;
	int epochs, logs, ticks, wrong_thread, bad_json, stop_at; /* stop_at: return 1 at this epoch event (0: never) */
};

static int on_progress(const char *event, void *user) {
	struct progress_state *st = user;
	if (!pthread_equal(pthread_self(), st->caller)) st->wrong_thread++;
	if (event[0] != '{' || event[strlen(event) - 1] != '}') st->bad_json++;
	if (strstr(event, "\"event\":\"epoch\"")) {
		st->epochs++;
		if (!strstr(event, "\"stage\":") || !strstr(event, "\"val_mse\":")) st->bad_json++;
		if (st->stop_at && st->epochs == st->stop_at) return 1;
	} else if (strstr(event, "\"event\":\"log\"")) {
		st->logs++;
	} else if (strstr(event, "\"event\":\"tick\"")) {
		st->ticks++;
	} else {
		st->bad_json++;
	}
	return 0;
}

static void test_progress(const char *opts7, const char *bin_aug7) {
	/* Events on the caller's thread, the same cells as dainx_augment. */
	struct progress_state st = {.caller = pthread_self()};
	char opts[4096];
	snprintf(opts, sizeof opts, "%.*s,\"quiet\":false}", (int)strlen(opts7) - 1, opts7);
	dainx_result *r = NULL, *want = read_or_die(bin_aug7);
	int rc = dainx_augment_progress(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                                dainx_result_order(tensor), opts, on_progress, &st, &r);
	CHECK(rc == DAINX_OK, "dainx_augment_progress: %d %s", rc, dainx_last_error());
	if (rc == DAINX_OK) {
		CHECK(same_cells(r, want), "dainx_augment_progress: not the binary's cells");
		int epochs = atoi(field(opts7, "epochs"));
		/* Θ, Θc and Θ' each train at most `epochs` epochs (early stopping may cut one short). */
		CHECK(st.epochs >= 3 && st.epochs <= 3 * epochs, "%d epoch events for 3 models of %d epochs", st.epochs, epochs);
		CHECK(st.logs > 0, "no log event without quiet");
		CHECK(st.wrong_thread == 0 && st.bad_json == 0, "%d events on another thread, %d malformed", st.wrong_thread,
		      st.bad_json);
		printf("ok   progress: %d epoch, %d log, %d tick events on the caller's thread; the same cells\n", st.epochs,
		       st.logs, st.ticks);
		dainx_result_free(r);
	}
	dainx_result_free(want);
	/* A non-zero return stops the run: DAINX_ECANCELLED, *out untouched, no later event. */
	struct progress_state stop = {.caller = pthread_self(), .stop_at = 2};
	r = NULL;
	rc = dainx_augment_progress(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                            dainx_result_order(tensor), opts7, on_progress, &stop, &r);
	CHECK(rc == DAINX_ECANCELLED && r == NULL && strstr(dainx_last_error(), "cancelled") != NULL,
	      "cancel at epoch 2: rc %d, %s", rc, dainx_last_error());
	CHECK(stop.epochs == 2, "%d epoch events after a cancel at the second", stop.epochs);
	printf("ok   progress: a non-zero return cancels (DAINX_ECANCELLED)\n");
	/* A NULL callback is allowed. */
	rc = dainx_augment_progress(dainx_result_indices(tensor), dainx_result_values(tensor), dainx_result_count(tensor),
	                            dainx_result_order(tensor), QUIET, NULL, NULL, &r);
	CHECK(rc == DAINX_OK, "NULL callback: %d %s", rc, dainx_last_error());
	dainx_result_free(r);
}

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: %s TENSOR OPTS7 BIN_AUG7 BIN_REPORT7 OPTS8 BIN_AUG8 TMPDIR\n", argv[0]);
		return 2;
	}
	struct sigaction sa = {0};
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);

	CHECK(dainx_last_error()[0] == 0, "last error set before any call");
	printf("libdainx %s\n", dainx_version());
	tensor = read_or_die(argv[1]);
	test_equal_binary(argv[2], argv[3], argv[4]);
	test_bad_input();
	test_threads(argv[2], argv[3], argv[5], argv[6]);
	test_files(argv[7]);
	test_influence(argv[2], argv[5], argv[7]);
	test_predict(argv[2], argv[7]);
	test_bayes(argv[7]);
	test_ensemble(argv[7]);
	test_hostile_model(argv[7]);
	test_progress(argv[2], argv[3]);
	test_signals();
	dainx_result_free(tensor);
	if (failures) {
		fprintf(stderr, "capi_test: %d failures\n", failures);
		return 1;
	}
	printf("capi_test: all passed\n");
	return 0;
}
