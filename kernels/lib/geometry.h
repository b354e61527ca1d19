/*
 * geometry.h: the launch geometry of dainx's kernels (block sizes, grids,
 * split-K and scratch) as pure C functions of the sizes and the number of
 * SMs. The C launchers of libdainx_kernels (dainx_kernels.cu) use these; the
 * Go backend states the same rules in cuda/ops.go and cuda/plan.go, and
 * cuda/geometry_test.go checks, over thousands of shapes and SM counts, that
 * both choose the same grid, parts, chunk and scratch (it compiles
 * kernels/lib/geomcheck.c with the host C compiler; no GPU needed). Change
 * one side and that test fails until the other side says the same.
 *
 * Every function is static inline and depends on nothing but <stdint.h>.
 */
#ifndef DAINX_GEOMETRY_H
#define DAINX_GEOMETRY_H

#include <stdint.h>

#define DAINX_G_THREADS 256          /* block of the elementwise, row and SIMT GEMM kernels */
#define DAINX_G_MSE_THREADS 1024     /* block of mse_grad */
#define DAINX_G_WARPS_PER_BLOCK 8    /* DAINX_G_THREADS / 32: warp-per-row kernels */
#define DAINX_G_TC_THREADS 128       /* block of the tensor-core GEMMs (4 warps) */
#define DAINX_G_TILE 64              /* rows and columns of C per GEMM block */
#define DAINX_G_MAX_GRID_YZ 65535    /* limit of gridDim.y and gridDim.z */
#define DAINX_G_INFLUENCE_DIRECT 8   /* widest layer influence_dot takes (one warp per cell) */
#define DAINX_G_INFLUENCE_SCRATCH (16 << 20) /* floats of the wide InfluenceDot scratch */

/* Minimum split-K chunks: forward and dx GEMMs (over a layer width) 128;
 * dw GEMM (over the batch) 256; db column sums 1024; out1 backward 64. */
#define DAINX_G_CHUNK_FORWARD 128
#define DAINX_G_CHUNK_DX 128
#define DAINX_G_CHUNK_DW 256
#define DAINX_G_CHUNK_DB 1024
#define DAINX_G_CHUNK_OUT1 64

static inline int64_t dainx_g_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t dainx_g_max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* dainx_g_grid1d: blocks of a grid-stride grid over n items, per_block per
 * block: enough to cover n, at most 32 per SM (at least 1024), at least 1. */
static inline int64_t dainx_g_grid1d(int64_t n, int64_t per_block, int sms) {
	int64_t blocks = (n + per_block - 1) / per_block;
	int64_t limit = (int64_t)sms * 32;
	if (limit < 1024) limit = 1024;
	return dainx_g_max64(dainx_g_min64(blocks, limit), 1);
}

/* dainx_g_tiles: 64×64 tiles of an m×n output. */
static inline int64_t dainx_g_tiles(int64_t m, int64_t n) {
	return ((m + DAINX_G_TILE - 1) / DAINX_G_TILE) * ((n + DAINX_G_TILE - 1) / DAINX_G_TILE);
}

/* dainx_g_split: how to cut a reduction of length k over `blocks`
 * independent blocks into *parts chunks of *chunk terms (a multiple of 16,
 * at least min_chunk) so that about two blocks per SM are busy, when the
 * blocks alone are fewer than the SMs. *parts = 1 means no split. */
static inline void dainx_g_split(int64_t blocks, int64_t k, int64_t min_chunk, int sms, int64_t *parts,
                                 int64_t *chunk) {
	int64_t target = 2 * (int64_t)sms;
	if (blocks >= sms || k <= min_chunk) {
		*parts = 1;
		*chunk = k > 1 ? k : 1;
		return;
	}
	int64_t p = (target + blocks - 1) / blocks;
	int64_t c = (k + p - 1) / p;
	c = dainx_g_max64((c + 15) / 16 * 16, min_chunk);
	if ((k + c - 1) / c > DAINX_G_MAX_GRID_YZ) c = ((k + DAINX_G_MAX_GRID_YZ - 1) / DAINX_G_MAX_GRID_YZ + 15) / 16 * 16;
	*parts = (k + c - 1) / c;
	*chunk = c;
}

/* Per-op plans (cuda/plan.go says the same). */

/* Forward GEMM y = x·wᵀ (B×O, over I): split over I. */
static inline void dainx_g_plan_forward(int64_t batch, int64_t in, int64_t out, int sms, int64_t *parts,
                                        int64_t *chunk) {
	dainx_g_split(dainx_g_tiles(batch, out), in, DAINX_G_CHUNK_FORWARD, sms, parts, chunk);
}

/* dx GEMM dx = dy·w (B×I, over O): split over O. */
static inline void dainx_g_plan_dx(int64_t batch, int64_t in, int64_t out, int sms, int64_t *parts,
                                   int64_t *chunk) {
	dainx_g_split(dainx_g_tiles(batch, in), out, DAINX_G_CHUNK_DX, sms, parts, chunk);
}

/* dw GEMM dw = dyᵀ·x (O×I, over B): split over B. */
static inline void dainx_g_plan_dw(int64_t batch, int64_t in, int64_t out, int sms, int64_t *parts,
                                   int64_t *chunk) {
	dainx_g_split(dainx_g_tiles(out, in), batch, DAINX_G_CHUNK_DW, sms, parts, chunk);
}

/* db column sums alone (dw not wanted): ⌈O/32⌉ column blocks, split over B. */
static inline void dainx_g_plan_db(int64_t batch, int64_t out, int sms, int64_t *parts, int64_t *chunk) {
	dainx_g_split((out + 31) / 32, batch, DAINX_G_CHUNK_DB, sms, parts, chunk);
}

/* Backward of a one-output layer: ⌈I/32⌉ column blocks, split over B. */
static inline void dainx_g_plan_out1(int64_t batch, int64_t in, int sms, int64_t *parts, int64_t *chunk) {
	dainx_g_split((in + 31) / 32, batch, DAINX_G_CHUNK_OUT1, sms, parts, chunk);
}

/* Rows per chunk of the wide InfluenceDot path (out > 8): its B×O scratch
 * is bounded by DAINX_G_INFLUENCE_SCRATCH floats, at least one tile high. */
static inline int64_t dainx_g_influence_chunk(int64_t batch, int64_t out) {
	return dainx_g_max64(dainx_g_min64(batch, DAINX_G_INFLUENCE_SCRATCH / out), DAINX_G_TILE);
}

#endif /* DAINX_GEOMETRY_H */
