/* bench-conv: single-thread GFLOP/s of the CPU convolution kernels, kernel
 * against kernel in the same run, at the shapes of the reference UNet.
 *
 * For each 3x3 shape (N, C, O, H = W) and pass (fwd, bwd_data, bwd_weight)
 * it times, on the calling thread only (no StarPU tasks):
 *   im2col   starnn_conv2d_*_cpu: im2col + OpenBLAS sgemm (fp32)
 *   dnnl     starnn_conv2d_*_dnnl in fp32: oneDNN primitives, including the
 *            reorders from / to NCHW that every call makes
 *   bf16     starnn_conv2d_*_dnnl in bf16 (x, w, y 16-bit, fp32
 *            accumulation; dw fp32): the amp-bf16 route
 *   widen    the fp32 im2col kernel on bf16 data widened to fp32 first and
 *            the result rounded back (what a 16-bit conv costs without
 *            oneDNN): the conversions are timed too
 * and prints GFLOP/s (2*N*C*O*9*H*W per pass / best time of a few runs)
 * and the ratios dnnl/im2col and bf16/dnnl. The reported time is the best
 * of --reps runs (the machine may be shared: the minimum is the least
 * disturbed), each kernel alternating with the others. Where oneDNN has
 * no bf16 kernels (AVX2-only processors: starnn_conv2d_dnnl_bf16) the bf16
 * column and its ratio show "-".
 *
 * The dnnl columns are oneDNN's own passes (the weight gradient's gemm
 * and direct routes, codelets/kernels/conv2d.h, are turned off for them).
 *
 * --wgrad: the fp32 weight gradient on its three routes instead, with x and
 * dy in the layout the UNet keeps them in here (oneDNN's nChw8c /
 * nChw16c where the channels are a multiple of the block, else NCHW), at
 * every 3x3 shape of the two tools/bench/unet configurations (128x128,
 * f = 16, micro-batches of 2; 384x384, f = 32, batch 1): oneDNN's
 * primitive (with its reorder of dw to OIHW; in tiles on images over 160
 * pixels a side, codelets/cpu/conv2d_dnnl.c) against the gemm route
 * (blocked -> NCHW copies, im2col + sgemm, dw in OIHW) and the direct
 * kernel (x and dy read in place, dw in OIHW; "-" where it does not run:
 * no AVX2), the ratios, and which one STARNN_CONV2D_WGRAD=auto takes.
 *
 * --wgrad-bf16: the bf16 weight gradient on oneDNN's convolution (with its
 * reorder of dw) and on the gemm route (codelets/conv2d.h: im2col and one
 * bf16 matmul of oneDNN into dw in OIHW), x and dy in oneDNN's bf16 pick
 * here (NHWC on AMX; at batch 1 the UNet keeps nChw16c instead), at the
 * same shapes and at the 128x128 centre's whole-batch ones; which one auto
 * takes.
 *
 * --convt: the fp32 passes of the transposed 2x2 / stride-2 convolutions
 * (codelets/convt2d.h) at the up-sampling shapes of the same two
 * configurations, x in oneDNN's blocked layout and y / dy a half of a
 * concatenation (rows twice its size apart), as in the UNet: oneDNN (the
 * forward as a 1x1 convolution spread into y, the backward passes its
 * deconvolution; with their reorders of w / dw and copies of the strided
 * dy) against the direct kernels (STARNN_CONVT2D=direct; "-" where they do
 * not run), and the ratio.
 *
 * --convt-bf16: the bf16 weight gradient of the same transposed
 * convolutions in the layouts amp-bf16 keeps on AMX (128x128: x and the
 * half of a concatenation dy in NHWC; 384x384, batch 1: nChw16c): starnn's
 * route (one bf16 GEMM on dy gathered, codelets/cpu/conv2d_dnnl.c) against
 * oneDNN's fp32 deconvolution on fp32 copies in the same layouts (the route the bf16
 * pass took before, less the widening reorders it also paid), and the
 * ratio.
 *
 * --nchw-in: the fp32 forward of the first layer (13 input frames in NCHW,
 * y in oneDNN's blocked layout) of the two configurations: oneDNN (with
 * its copy of x into padded nChw8c) against the direct kernel
 * (STARNN_CONV2D_NCHW_IN=direct; "-" where it does not run), and the ratio.
 *
 * Each mode hands the kernels the routes it compares (codelets/kernels/conv2d.h:
 * struct starnn_conv2d_routes); the others are those in force (auto; the
 * test hooks' variables in a build with them), and:
 *   --algo auto|direct|winograd  oneDNN's algorithm for the fp32 3x3 passes
 *            (the Winograd route, docs/convolutions.md; default auto)
 *
 * Usage: tools/bench/conv [--reps N] [--quick] [--algo A]
 *                         [--wgrad | --wgrad-bf16 | --convt | --convt-bf16 | --nchw-in]
 *   --quick  the 128x128 shapes only */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "codelets/conv2d_routes.h"
#include "codelets/convert.h"
#include "codelets/kernels/convert.h"
#include "codelets/kernels/conv2d.h"
#include "codelets/kernels/convt2d.h"
#include "runtime/starnn.h"

/* The routes every kernel call gets, each mode changing the one it
 * compares (main: those in force, then the options). */
static struct starnn_conv2d_routes routes;

/* routes with the weight gradient's (transposed convolutions', first
 * layer's) route set to m */
static const struct starnn_conv2d_routes *with_wgrad(struct starnn_conv2d_routes *r, enum starnn_conv2d_wgrad m)
{
	*r = routes;
	r->wgrad = m;
	return r;
}

static const struct starnn_conv2d_routes *with_convt(struct starnn_conv2d_routes *r, enum starnn_convt2d_route m)
{
	*r = routes;
	r->convt = m;
	return r;
}

static const struct starnn_conv2d_routes *with_nchw_in(struct starnn_conv2d_routes *r, enum starnn_conv2d_nchw_in m)
{
	*r = routes;
	r->nchw_in = m;
	return r;
}

struct shape {
	const char *name;
	size_t n, c, o, hw;
};

static const struct shape shapes[] = {
	/* 384x384, f = 32, batch 1 */
	{"384 enc0b", 1, 32, 32, 384},
	{"384 enc1b", 1, 64, 64, 192},
	{"384 enc2b", 1, 128, 128, 96},
	{"384 enc3b", 1, 256, 256, 48},
	{"384 dec0a", 1, 64, 32, 384},
	/* 128x128, f = 16, batch 4 */
	{"128 enc0b", 4, 16, 16, 128},
	{"128 enc1b", 4, 32, 32, 64},
	{"128 enc2b", 4, 64, 64, 32},
	{"128 dec0a", 4, 32, 16, 128},
};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The best seconds of run(ctx, k) for each route k < nroutes over reps
 * runs each, the routes alternated (this machine's speed drifts), after one
 * untimed warm-up round (primitives, pages); 1 with the error printed when
 * a run fails. */
static int best_times(int reps, int nroutes, int (*run)(void *ctx, int k), void *ctx, double *best)
{
	for (int k = 0; k < nroutes; k++)
		best[k] = 1e30;
	for (int r = -1; r < reps; r++)
		for (int k = 0; k < nroutes; k++) {
			double t = now();
			int rc = run(ctx, k);
			t = now() - t;
			if (rc != 0) {
				fprintf(stderr, "bench-conv: %s\n", starnn_last_error());
				return 1;
			}
			if (r >= 0 && t < best[k])
				best[k] = t;
		}
	return 0;
}

static float *random_f32(size_t n, unsigned *seed)
{
	float *p = malloc(n * sizeof *p);
	if (!p) {
		fprintf(stderr, "bench-conv: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(rand_r(seed) % 2001 - 1000) / 1000.0f;
	return p;
}

static uint16_t *to_bf16(const float *x, size_t n)
{
	uint16_t *p = malloc(n * sizeof *p);
	if (!p) {
		fprintf(stderr, "bench-conv: out of memory\n");
		exit(1);
	}
	starnn_convert_fp32_to_bf16_cpu(1, n, x, n, p, n);
	return p;
}

enum { IM2COL, DNNL, BF16, WIDEN, NKERNELS };
static const char *const kname[NKERNELS] = {"im2col", "dnnl", "bf16", "widen"};

struct bufs {
	float *x, *w, *b, *y, *dy, *dx, *dw, *work, *wx, *wy, *wdy, *ww;
	uint16_t *hx, *hw, *hy, *hdy, *hdx;
};

static int run(int k, int pass, const struct starnn_conv2d_geom *g, struct bufs *B)
{
	const size_t ldx = g->c * g->h * g->w, ldy = g->o * g->h * g->w, ldw = g->c * 9;
	const size_t nx = g->n * ldx, ny = g->n * ldy, nw = g->o * ldw;
	switch (k) {
	case IM2COL:
		if (pass == 0)
			starnn_conv2d_fwd_cpu(g, B->x, ldx, B->w, ldw, B->b, B->y, ldy, B->work);
		else if (pass == 1)
			starnn_conv2d_bwd_data_cpu(g, B->dy, ldy, B->w, ldw, 0.0f, B->dx, ldx, B->work);
		else
			starnn_conv2d_bwd_weight_cpu(g, B->x, ldx, B->dy, ldy, 0.0f, B->dw, ldw, B->work);
		return 0;
	case DNNL:
		if (pass == 0)
			return starnn_conv2d_fwd_dnnl(g, STARNN_FP32, &routes, B->x, ldx, B->w, ldw, B->b, B->y, ldy);
		if (pass == 1)
			return starnn_conv2d_bwd_data_dnnl(g, STARNN_FP32, &routes, B->dy, ldy, B->w, ldw, 0.0f, B->dx, ldx);
		return starnn_conv2d_bwd_weight_dnnl(g, STARNN_FP32, &routes, B->x, ldx, B->dy, ldy, 0.0f, B->dw, ldw, NULL);
	case BF16:
		if (pass == 0)
			return starnn_conv2d_fwd_dnnl(g, STARNN_BF16, &routes, B->hx, ldx, B->hw, ldw, B->b, B->hy, ldy);
		if (pass == 1)
			return starnn_conv2d_bwd_data_dnnl(g, STARNN_BF16, &routes, B->hdy, ldy, B->hw, ldw, 0.0f, B->hdx, ldx);
		return starnn_conv2d_bwd_weight_dnnl(g, STARNN_BF16, &routes, B->hx, ldx, B->hdy, ldy, 0.0f, B->dw, ldw,
		                                     NULL);
	default: /* WIDEN */
		if (pass == 0) {
			starnn_convert_bf16_to_fp32_cpu(1, nx, B->hx, nx, B->wx, nx);
			starnn_convert_bf16_to_fp32_cpu(1, nw, B->hw, nw, B->ww, nw);
			starnn_conv2d_fwd_cpu(g, B->wx, ldx, B->ww, ldw, B->b, B->wy, ldy, B->work);
			starnn_convert_fp32_to_bf16_cpu(1, ny, B->wy, ny, B->hy, ny);
		} else if (pass == 1) {
			starnn_convert_bf16_to_fp32_cpu(1, ny, B->hdy, ny, B->wdy, ny);
			starnn_convert_bf16_to_fp32_cpu(1, nw, B->hw, nw, B->ww, nw);
			starnn_conv2d_bwd_data_cpu(g, B->wdy, ldy, B->ww, ldw, 0.0f, B->wx, ldx, B->work);
			starnn_convert_fp32_to_bf16_cpu(1, nx, B->wx, nx, B->hdx, nx);
		} else {
			starnn_convert_bf16_to_fp32_cpu(1, nx, B->hx, nx, B->wx, nx);
			starnn_convert_bf16_to_fp32_cpu(1, ny, B->hdy, ny, B->wdy, ny);
			starnn_conv2d_bwd_weight_cpu(g, B->wx, ldx, B->wdy, ldy, 0.0f, B->dw, ldw, B->work);
		}
		return 0;
	}
}

struct kernels_ctx {
	int pass, have_bf16;
	const struct starnn_conv2d_geom *g;
	struct bufs *B;
};

/* (bf16 where the processor has no native bf16: not run, printed "-") */
static int kernels_run(void *ctx, int k)
{
	const struct kernels_ctx *c = ctx;
	return k == BF16 && !c->have_bf16 ? 0 : run(k, c->pass, c->g, c->B);
}

/* The 3x3 layers of the two tools/bench/unet configurations, as the
 * weight-gradient tasks see them (N: the micro-batch). */
static const struct shape wgrad_shapes[] = {
	{"128 enc0a", 2, 13, 16, 128},   {"128 enc0b", 2, 16, 16, 128},   {"128 enc1a", 2, 16, 32, 64},
	{"128 enc1b", 2, 32, 32, 64},    {"128 enc2a", 2, 32, 64, 32},    {"128 enc2b", 2, 64, 64, 32},
	{"128 enc3a", 2, 64, 128, 16},   {"128 enc3b", 2, 128, 128, 16},  {"128 ctr1", 2, 128, 512, 8},
	{"128 ctr2", 2, 512, 512, 8},    {"128 dec3a", 2, 256, 128, 16},  {"128 dec2a", 2, 128, 64, 32},
	{"128 dec1a", 2, 64, 32, 64},    {"128 dec0a", 2, 32, 16, 128},   {"384 enc0a", 1, 13, 32, 384},
	{"384 enc0b", 1, 32, 32, 384},   {"384 enc1a", 1, 32, 64, 192},   {"384 enc1b", 1, 64, 64, 192},
	{"384 enc2a", 1, 64, 128, 96},   {"384 enc2b", 1, 128, 128, 96},  {"384 enc3a", 1, 128, 256, 48},
	{"384 enc3b", 1, 256, 256, 48},  {"384 ctr1", 1, 256, 1024, 24},  {"384 ctr2", 1, 1024, 1024, 24},
	{"384 dec3a", 1, 512, 256, 48},  {"384 dec2a", 1, 256, 128, 96},  {"384 dec1a", 1, 128, 64, 192},
	{"384 dec0a", 1, 64, 32, 384},
};

struct wgrad_ctx {
	const struct starnn_conv2d_geom *g;
	const float *x, *dy;
	float *dw, *db;
};

static int wgrad_run(void *ctx, int k)
{
	static const enum starnn_conv2d_wgrad route[3] = {STARNN_CONV2D_WGRAD_DNNL, STARNN_CONV2D_WGRAD_GEMM,
	                                                  STARNN_CONV2D_WGRAD_DIRECT};
	const struct wgrad_ctx *c = ctx;
	const struct starnn_conv2d_geom *g = c->g;
	struct starnn_conv2d_routes r;
	return starnn_conv2d_bwd_weight_dnnl(g, STARNN_FP32, with_wgrad(&r, route[k]), c->x, g->c * g->h * g->w, c->dy,
	                                     g->o * g->h * g->w, 0.0f, c->dw, g->c * 9, c->db);
}

/* --wgrad (see the top): best seconds of each route, alternated. */
static int wgrad_bench(int reps, int quick)
{
	const int blk = starnn_conv2d_dnnl_block(STARNN_FP32);
	printf("# bench-conv --wgrad: one thread, fp32 3x3 weight gradient (and bias gradient), GFLOP/s = "
	       "2*N*C*O*9*H*W / best of %d run(s)\n",
	       reps);
	printf("# activations: channels in blocks of %d where they divide them (oneDNN's fp32 pick here), else NCHW\n",
	       blk > 1 ? blk : 1);
	printf("%-10s %5s %5s %5s %4s %9s %9s %9s %10s %12s %6s\n", "shape", "N", "C", "O", "HW", "dnnl", "gemm", "direct",
	       "gemm/dnnl", "direct/dnnl", "auto");
	unsigned seed = 1;
	for (size_t s = 0; s < sizeof wgrad_shapes / sizeof *wgrad_shapes; s++) {
		const struct shape *sh = &wgrad_shapes[s];
		if (quick && sh->n != 2) /* the 128x128 configuration only */
			continue;
		size_t xb = blk > 1 && sh->c % (size_t)blk == 0 ? (size_t)blk : 1;
		size_t yb = blk > 1 && sh->o % (size_t)blk == 0 ? (size_t)blk : 1;
		struct starnn_conv2d_geom g = {sh->n, sh->c, sh->o, sh->hw, sh->hw, 3, xb, yb, 0, 0, 0};
		const size_t ldx = g.c * g.h * g.w, ldy = g.o * g.h * g.w, ldw = g.c * 9;
		float *x = random_f32(g.n * ldx, &seed), *dy = random_f32(g.n * ldy, &seed);
		float *dw = random_f32(g.o * ldw, &seed), *db = random_f32(g.o, &seed);
		double best[3];
		int nroutes = starnn_conv2d_wgrad_direct_ok(&g) ? 3 : 2; /* else "-" */
		struct wgrad_ctx ctx = {&g, x, dy, dw, db};
		if (best_times(reps, nroutes, wgrad_run, &ctx, best))
			return 1;
		struct starnn_conv2d_routes r;
		double flops = starnn_conv2d_flops(&g, STARNN_CONV2D_BWD_WEIGHT);
		const enum starnn_conv2d_wgrad a =
			starnn_conv2d_dnnl_wgrad_route(&g, STARNN_FP32, with_wgrad(&r, STARNN_CONV2D_WGRAD_AUTO));
		char dr[16] = "-", drr[16] = "-";
		if (nroutes == 3) {
			snprintf(dr, sizeof dr, "%.1f", flops / best[2] * 1e-9);
			snprintf(drr, sizeof drr, "%.2f", best[0] / best[2]);
		}
		printf("%-10s %5zu %5zu %5zu %4zu %9.1f %9.1f %9s %10.2f %12s %6s\n", sh->name, g.n, g.c, g.o, g.h,
		       flops / best[0] * 1e-9, flops / best[1] * 1e-9, dr, best[0] / best[1], drr,
		       a == STARNN_CONV2D_WGRAD_GEMM ? "gemm" : a == STARNN_CONV2D_WGRAD_DIRECT ? "direct" : "dnnl");
		fflush(stdout);
		free(x), free(dy), free(dw), free(db);
	}
	return 0;
}

/* --wgrad-bf16 (see the top), every buffer on a 64-byte boundary as
 * starnn's tensors are. */
struct wgrad16_ctx {
	const struct starnn_conv2d_geom *g;
	const uint16_t *x, *dy;
	float *dw, *db;
};

static int wgrad16_run(void *ctx, int k)
{
	const struct wgrad16_ctx *c = ctx;
	const struct starnn_conv2d_geom *g = c->g;
	struct starnn_conv2d_routes r;
	with_wgrad(&r, k ? STARNN_CONV2D_WGRAD_GEMM : STARNN_CONV2D_WGRAD_DNNL);
	return starnn_conv2d_bwd_weight_dnnl(g, STARNN_BF16, &r, c->x, g->c * g->h * g->w, c->dy, g->o * g->h * g->w,
	                                     0.0f, c->dw, g->c * 9, c->db);
}

static void *aligned64(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "bench-conv: out of memory\n");
		exit(1);
	}
	return p;
}

static int wgrad16_bench(int reps, int quick)
{
	if (!starnn_conv2d_dnnl_bf16()) {
		fprintf(stderr, "bench-conv: oneDNN has no bf16 convolutions on this processor: nothing to compare\n");
		return 77;
	}
	const int blk = starnn_conv2d_dnnl_block(STARNN_BF16);
	printf("# bench-conv --wgrad-bf16: one thread, bf16 3x3 weight gradient (and bias gradient, fp32), GFLOP/s = "
	       "2*N*C*O*9*H*W / best of %d run(s)\n",
	       reps);
	printf("# activations: %s\n", blk == STARNN_CONV2D_NHWC ? "NHWC where the channels are a multiple of 8 (oneDNN's "
	                                                         "bf16 pick here: AMX), else NCHW"
	                                                       : "channels in oneDNN's bf16 block where they divide them");
	printf("%-14s %5s %5s %5s %4s %9s %9s %10s %6s\n", "shape", "N", "C", "O", "HW", "dnnl", "gemm", "gemm/dnnl",
	       "auto");
	/* the 128x128 centre's whole-batch tasks (codelets/conv2d_routes.h:
	 * starnn_conv2d_wgrad_whole) too */
	static const struct shape whole[] = {{"128 ctr1 whole", 4, 128, 512, 8},
	                                     {"128 ctr2 whole", 4, 512, 512, 8},
	                                     {"128 dec3a whole", 4, 256, 128, 16}};
	const size_t nw = sizeof wgrad_shapes / sizeof *wgrad_shapes, nall = nw + sizeof whole / sizeof *whole;
	unsigned seed = 1;
	for (size_t s = 0; s < nall; s++) {
		const struct shape *sh = s < nw ? &wgrad_shapes[s] : &whole[s - nw];
		if (quick && sh->n == 1) /* the 128x128 configuration only */
			continue;
		const size_t b = blk == STARNN_CONV2D_NHWC ? 0 : blk > 1 ? (size_t)blk : 1;
		size_t xb = b ? (sh->c % b ? 1 : b) : (sh->c % 8 ? 1 : sh->c);
		size_t yb = b ? (sh->o % b ? 1 : b) : (sh->o % 8 ? 1 : sh->o);
		struct starnn_conv2d_geom g = {sh->n, sh->c, sh->o, sh->hw, sh->hw, 3, xb, yb, 0, 0, 0};
		const size_t nx = g.n * g.c * g.h * g.w, ny = g.n * g.o * g.h * g.w, ndw = g.o * g.c * 9;
		float *xf = random_f32(nx, &seed), *dyf = random_f32(ny, &seed);
		uint16_t *x = aligned64(nx * sizeof *x), *dy = aligned64(ny * sizeof *dy);
		starnn_narrow_row_cpu(STARNN_BF16, nx, xf, x);
		starnn_narrow_row_cpu(STARNN_BF16, ny, dyf, dy);
		float *dw = aligned64(ndw * sizeof *dw), *db = aligned64(g.o * sizeof *db);
		double best[2];
		struct wgrad16_ctx ctx = {&g, x, dy, dw, db};
		if (best_times(reps, 2, wgrad16_run, &ctx, best))
			return 1;
		struct starnn_conv2d_routes r;
		const double flops = starnn_conv2d_flops(&g, STARNN_CONV2D_BWD_WEIGHT);
		const enum starnn_conv2d_wgrad a =
			starnn_conv2d_dnnl_wgrad_route(&g, STARNN_BF16, with_wgrad(&r, STARNN_CONV2D_WGRAD_AUTO));
		printf("%-14s %5zu %5zu %5zu %4zu %9.1f %9.1f %10.2f %6s\n", sh->name, g.n, g.c, g.o, g.h,
		       flops / best[0] * 1e-9, flops / best[1] * 1e-9, best[0] / best[1],
		       a == STARNN_CONV2D_WGRAD_GEMM ? "gemm" : "dnnl");
		fflush(stdout);
		free(xf), free(dyf), free(x), free(dy), free(dw), free(db);
	}
	return 0;
}

/* The "direct" and "direct/dnnl" columns from the best seconds of oneDNN
 * (best[0]) and the direct kernel (best[1]); "-" where it did not run. */
static void direct_columns(double flops, const double best[2], int direct, char dr[16], char rr[16])
{
	strcpy(dr, "-"), strcpy(rr, "-");
	if (direct) {
		snprintf(dr, 16, "%.1f", flops / best[1] * 1e-9);
		snprintf(rr, 16, "%.2f", best[0] / best[1]);
	}
}

/* The transposed convolutions of the two configurations (N, C -> O, input
 * H = W). */
static const struct shape convt_shapes[] = {
	{"128 up3", 2, 512, 128, 8},  {"128 up2", 2, 128, 64, 16},  {"128 up1", 2, 64, 32, 32},
	{"128 up0", 2, 32, 16, 64},   {"384 up3", 1, 1024, 256, 24}, {"384 up2", 1, 256, 128, 48},
	{"384 up1", 1, 128, 64, 96},  {"384 up0", 1, 64, 32, 192},
};

/* A transposed convolution's sizes as the UNet has them: x [n, c, h, h]
 * rows ldx apart, dy a half of a concatenation (rows twice its size
 * apart), w / dw [c, o, 2, 2]. */
struct convt_dims {
	size_t n, c, o, h, hw, ldx, ldy, ldw;
};

static struct convt_dims convt_dims_of(const struct shape *sh)
{
	const size_t hw = sh->hw * sh->hw;
	return (struct convt_dims){sh->n, sh->c, sh->o, sh->hw, hw, sh->c * hw, 2 * sh->o * 4 * hw, 4 * sh->o};
}

/* The transposed-convolution shapes from *s on (the batch-2 ones only
 * under --quick): the next in *sh and *d, *s its index; 0 after the last. */
static int next_convt_shape(size_t *s, int quick, const struct shape **sh, struct convt_dims *d)
{
	for (; *s < sizeof convt_shapes / sizeof *convt_shapes; ++*s)
		if (!quick || convt_shapes[*s].n == 2) {
			*sh = &convt_shapes[*s];
			*d = convt_dims_of(*sh);
			return 1;
		}
	return 0;
}

struct convt_ctx {
	size_t n, c, o, h, b, ldx, ldy, ldw;
	int pass;
	const float *x, *w;
	float *dy, *dx, *dw, *db;
};

static int convt_run(void *ctx, int k)
{
	const struct convt_ctx *a = ctx;
	struct starnn_conv2d_routes rs;
	const struct starnn_conv2d_routes *r = with_convt(&rs, k ? STARNN_CONVT2D_DIRECT : STARNN_CONVT2D_DNNL);
	if (a->pass == 2)
		return starnn_convt2d_bwd_weight_dnnl(a->n, a->c, a->o, a->h, a->h, a->b, a->b, STARNN_FP32, r, a->x,
		                                      a->ldx, a->dy, a->ldy, 0.0f, a->dw, a->ldw, a->db);
	if (a->pass == 1)
		return starnn_convt2d_bwd_data_dnnl(a->n, a->c, a->o, a->h, a->h, a->b, a->b, STARNN_FP32, r, a->w, a->ldw,
		                                    a->dy, a->ldy, 0.0f, a->dx, a->ldx);
	return starnn_convt2d_fwd_dnnl(a->n, a->c, a->o, a->h, a->h, a->b, a->b, STARNN_FP32, r, a->x, a->ldx, a->w,
	                               a->ldw, a->db, a->dy, a->ldy);
}

/* --convt (see the top): best seconds of oneDNN and the direct kernels,
 * alternated, per pass. */
static int convt_bench(int reps, int quick)
{
	const int blk = starnn_conv2d_dnnl_block(STARNN_FP32);
	const size_t b = blk > 1 ? (size_t)blk : 1;
	printf("# bench-conv --convt: one thread, fp32 transposed 2x2 / stride-2 convolutions, GFLOP/s = "
	       "2*N*C*O*4*H*W / best of %d run(s)\n",
	       reps);
	printf("# x in blocks of %zu channels, dy half of a concatenation in blocks of %zu\n", b, b);
	printf("%-10s %5s %5s %5s %4s %-10s %9s %9s %13s\n", "shape", "N", "C", "O", "HW", "pass", "dnnl", "direct",
	       "direct/dnnl");
	unsigned seed = 1;
	const struct shape *sh;
	struct convt_dims d;
	for (size_t s = 0; next_convt_shape(&s, quick, &sh, &d); s++) {
		const size_t n = d.n, c = d.c, o = d.o, h = d.h, hw = d.hw, ldx = d.ldx, ldy = d.ldy, ldw = d.ldw;
		float *x = random_f32(n * ldx, &seed), *dy = random_f32(n * ldy, &seed), *dx = random_f32(n * ldx, &seed);
		float *w = random_f32(c * ldw, &seed), *dw = random_f32(c * ldw, &seed), *db = random_f32(o, &seed);
		const int direct = starnn_convt2d_direct_ok(o, b) && starnn_convt2d_direct_ok(c, b);
		static const char *const pname[3] = {"fwd", "bwd_data", "bwd_weight"};
		for (int p = 0; p < 3; p++) {
			double best[2];
			struct convt_ctx ctx = {n, c, o, h, b, ldx, ldy, ldw, p, x, w, dy, dx, dw, db};
			if (best_times(reps, 1 + direct, convt_run, &ctx, best))
				return 1;
			const double flops = 2.0 * n * c * o * 4 * hw;
			char dr[16], rr[16];
			direct_columns(flops, best, direct, dr, rr);
			printf("%-10s %5zu %5zu %5zu %4zu %-10s %9.1f %9s %13s\n", sh->name, n, c, o, h, pname[p],
			       flops / best[0] * 1e-9, dr, rr);
			fflush(stdout);
		}
		free(x), free(dy), free(dx), free(w), free(dw), free(db);
	}
	return 0;
}

struct convt16_ctx {
	size_t n, c, o, h, xb, yb, ldx, ldy, ldw;
	const float *x, *dy;
	const uint16_t *hx, *hdy;
	float *dw, *db;
};

static int convt16_run(void *ctx, int k)
{
	const struct convt16_ctx *a = ctx;
	struct starnn_conv2d_routes rs;
	const struct starnn_conv2d_routes *r = with_convt(&rs, STARNN_CONVT2D_DNNL); /* (the fp32 deconvolution) */
	if (k == 0)
		return starnn_convt2d_bwd_weight_dnnl(a->n, a->c, a->o, a->h, a->h, a->xb, a->yb, STARNN_FP32, r, a->x,
		                                      a->ldx, a->dy, a->ldy, 0.0f, a->dw, a->ldw, a->db);
	return starnn_convt2d_bwd_weight_dnnl(a->n, a->c, a->o, a->h, a->h, a->xb, a->yb, STARNN_BF16, r, a->hx, a->ldx,
	                                      a->hdy, a->ldy, 0.0f, a->dw, a->ldw, a->db);
}

/* --convt-bf16 (see the top): best seconds of oneDNN fp32 and starnn's
 * bf16 route, alternated. */
static int convt16_bench(int reps, int quick)
{
	if (!starnn_conv2d_dnnl_bf16()) {
		printf("# bench-conv --convt-bf16: no native bf16 convolutions here (oneDNN implements them on AVX-512 "
		       "and newer): nothing to time\n");
		return 0;
	}
	const int amx = starnn_conv2d_dnnl_block(STARNN_BF16) == STARNN_CONV2D_NHWC;
	printf("# bench-conv --convt-bf16: one thread, transposed 2x2 / stride-2 weight gradients (with the bias), "
	       "GFLOP/s = 2*N*C*O*4*H*W / best of %d run(s)\n",
	       reps);
	printf("# bf16: one bf16 GEMM (%s) on dy gathered; fp32: oneDNN's deconvolution on fp32 copies in the same "
	       "layouts\n",
	       amx ? "AMX" : "AVX512-BF16, no AMX here");
	printf("%-10s %5s %5s %5s %4s %-7s %9s %9s %10s\n", "shape", "N", "C", "O", "HW", "layout", "fp32", "bf16",
	       "bf16/fp32");
	unsigned seed = 1;
	const struct shape *sh;
	struct convt_dims d;
	for (size_t s = 0; next_convt_shape(&s, quick, &sh, &d); s++) {
		const size_t n = d.n, c = d.c, o = d.o, h = d.h, hw = d.hw, ldx = d.ldx, ldy = d.ldy, ldw = d.ldw;
		/* amp-bf16 on AMX: NHWC where the batch comes in parts, else the
		 * fp32 block (nChw16c; codelets/conv2d_routes.h, starnn_conv2d_act_cblock) */
		const int nhwc = n > 1, fb = starnn_conv2d_dnnl_block(STARNN_FP32);
		const size_t xb = nhwc ? c : fb > 1 && c % (size_t)fb == 0 ? (size_t)fb : 1,
		             yb = nhwc ? o : fb > 1 && o % (size_t)fb == 0 ? (size_t)fb : 1;
		char lname[16];
		if (nhwc)
			snprintf(lname, sizeof lname, "NHWC");
		else if (xb > 1 && yb > 1)
			snprintf(lname, sizeof lname, "nChw%zuc", xb);
		else
			snprintf(lname, sizeof lname, "NCHW");
		float *x = random_f32(n * ldx, &seed), *dy = random_f32(n * ldy, &seed);
		float *dw = random_f32(c * ldw, &seed), *db = random_f32(o, &seed);
		uint16_t *hx = to_bf16(x, n * ldx), *hdy = to_bf16(dy, n * ldy);
		double best[2];
		struct convt16_ctx ctx = {n, c, o, h, xb, yb, ldx, ldy, ldw, x, dy, hx, hdy, dw, db};
		if (best_times(reps, 2, convt16_run, &ctx, best))
			return 1;
		const double flops = 2.0 * n * c * o * 4 * hw;
		printf("%-10s %5zu %5zu %5zu %4zu %-7s %9.1f %9.1f %10.2f\n", sh->name, n, c, o, h, lname,
		       flops / best[0] * 1e-9, flops / best[1] * 1e-9, best[0] / best[1]);
		fflush(stdout);
		free(x), free(dy), free(dw), free(db), free(hx), free(hdy);
	}
	return 0;
}

struct nchw_in_ctx {
	const struct starnn_conv2d_geom *g;
	const float *x, *w, *bias;
	float *y;
};

static int nchw_in_run(void *ctx, int k)
{
	const struct nchw_in_ctx *a = ctx;
	const struct starnn_conv2d_geom *g = a->g;
	const size_t hw = g->h * g->w;
	struct starnn_conv2d_routes r;
	with_nchw_in(&r, k ? STARNN_CONV2D_NCHW_IN_DIRECT : STARNN_CONV2D_NCHW_IN_DNNL);
	return starnn_conv2d_fwd_dnnl(g, STARNN_FP32, &r, a->x, g->c * hw, a->w, g->c * 9, a->bias, a->y, g->o * hw);
}

/* --nchw-in (see the top): the first layer's forward, oneDNN against the
 * direct kernel, alternated. */
static int nchw_in_bench(int reps, int quick)
{
	static const struct shape first[] = {{"128 first", 2, 13, 16, 128}, {"384 first", 1, 13, 32, 384}};
	const int blk = starnn_conv2d_dnnl_block(STARNN_FP32);
	const size_t b = blk > 1 ? (size_t)blk : 1;
	printf("# bench-conv --nchw-in: one thread, fp32 3x3 forward from NCHW x into blocks of %zu, GFLOP/s = "
	       "2*N*C*O*9*H*W / best of %d run(s)\n",
	       b, reps);
	printf("%-10s %5s %5s %5s %4s %9s %9s %13s\n", "shape", "N", "C", "O", "HW", "dnnl", "direct", "direct/dnnl");
	unsigned seed = 1;
	for (size_t s = 0; s < sizeof first / sizeof *first; s++) {
		const struct shape *sh = &first[s];
		if (quick && sh->n != 2)
			continue;
		const size_t n = sh->n, c = sh->c, o = sh->o, h = sh->hw, hw = h * h;
		const struct starnn_conv2d_geom g = {n, c, o, h, h, 3, 1, b, 0, 0, 0};
		float *x = random_f32(n * c * hw, &seed), *y = random_f32(n * o * hw, &seed);
		float *w = random_f32(o * c * 9, &seed), *bias = random_f32(o, &seed);
		const int direct = starnn_conv2d_fwd_nchw_direct_ok(&g);
		double best[2];
		struct nchw_in_ctx ctx = {&g, x, w, bias, y};
		if (best_times(reps, 1 + direct, nchw_in_run, &ctx, best))
			return 1;
		const double flops = 2.0 * n * c * o * 9 * hw;
		char dr[16], rr[16];
		direct_columns(flops, best, direct, dr, rr);
		printf("%-10s %5zu %5zu %5zu %4zu %9.1f %9s %13s\n", sh->name, n, c, o, h, flops / best[0] * 1e-9, dr, rr);
		fflush(stdout);
		free(x), free(y), free(w), free(bias);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int reps = 3, quick = 0, wgrad = 0, wgrad16 = 0, convt = 0, convt16 = 0, nchw_in = 0;
	if (starnn_conv2d_settings_check() < 0) {
		fprintf(stderr, "bench-conv: %s\n", starnn_last_error());
		return 2;
	}
	starnn_conv2d_routes_in_force(&routes);
	static const char *const algos[] = {"auto", "direct", "winograd"};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--algo") && i + 1 < argc) {
			const char *a = argv[++i];
			int m = 0;
			while (m < 3 && strcmp(a, algos[m]))
				m++;
			if (m == 3) {
				fprintf(stderr, "bench-conv: --algo %s: expected auto, direct or winograd\n", a);
				return 2;
			}
			routes.algo = (enum starnn_conv2d_algo)m;
		}
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--wgrad"))
			wgrad = 1;
		else if (!strcmp(argv[i], "--wgrad-bf16"))
			wgrad16 = 1;
		else if (!strcmp(argv[i], "--convt"))
			convt = 1;
		else if (!strcmp(argv[i], "--convt-bf16"))
			convt16 = 1;
		else if (!strcmp(argv[i], "--nchw-in"))
			nchw_in = 1;
		else {
			fprintf(stderr,
			        "usage: %s [--reps N] [--quick] [--algo auto|direct|winograd] [--wgrad | --wgrad-bf16 | --convt | "
			        "--convt-bf16 | --nchw-in]\n",
			        argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > 100) {
		fprintf(stderr, "bench-conv: --reps must be 1..100\n");
		return 2;
	}
	if (starnn_conv2d_cpu_backend_set(STARNN_CONV2D_DNNL) != 0) { /* built without oneDNN */
		fprintf(stderr, "bench-conv: this starnn has no oneDNN (configure found no libdnnl-dev): nothing to "
		                "compare\n");
		return 77;
	}
	starnn_blas_autoselect(argv);
	openblas_set_num_threads(1);
	if (wgrad + wgrad16 + convt + convt16 + nchw_in > 1) {
		fprintf(stderr, "bench-conv: one of --wgrad, --wgrad-bf16, --convt, --convt-bf16, --nchw-in\n");
		return 2;
	}
	if (nchw_in)
		return nchw_in_bench(reps, quick);
	if (wgrad)
		return wgrad_bench(reps, quick);
	if (wgrad16)
		return wgrad16_bench(reps, quick);
	if (convt)
		return convt_bench(reps, quick);
	if (convt16)
		return convt16_bench(reps, quick);
	routes.wgrad = STARNN_CONV2D_WGRAD_DNNL; /* the dnnl columns: oneDNN's passes */
	const char *core = starnn_blas_core();
	printf("# bench-conv: one thread, 3x3 convolutions, GFLOP/s = 2*N*C*O*9*H*W / best of %d run(s)\n", reps);
	printf("# OpenBLAS core %s; oneDNN includes its NCHW <-> blocked reorders\n", core ? core : "unknown");
	printf("%-10s %-10s %9s %9s %9s %9s %12s %10s\n", "shape", "pass", kname[0], kname[1], kname[2], kname[3],
	       "dnnl/im2col", "bf16/dnnl");
	const int have_bf16 = starnn_conv2d_dnnl_bf16();
	if (!have_bf16)
		printf("# no native bf16 convolutions here (oneDNN implements them on AVX-512 and newer): bf16 shows -\n");
	unsigned seed = 1;
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		const struct shape *sh = &shapes[s];
		if (quick && sh->hw != 128 && sh->n != 4)
			continue;
		struct starnn_conv2d_geom g = {sh->n, sh->c, sh->o, sh->hw, sh->hw, 3, 1, 1, 0, 0, 0};
		size_t nx = g.n * g.c * g.h * g.w, ny = g.n * g.o * g.h * g.w, nw = g.o * g.c * 9;
		size_t work = 0;
		for (int p = 0; p < 3; p++) {
			size_t n = starnn_conv2d_cpu_workspace(&g, (enum starnn_conv2d_pass)p);
			work = n > work ? n : work;
		}
		struct bufs B = {0};
		B.x = random_f32(nx, &seed), B.w = random_f32(nw, &seed), B.b = random_f32(g.o, &seed);
		B.y = random_f32(ny, &seed), B.dy = random_f32(ny, &seed), B.dx = random_f32(nx, &seed);
		B.dw = random_f32(nw, &seed), B.work = random_f32(work + 1, &seed);
		B.wx = random_f32(nx, &seed), B.wy = random_f32(ny, &seed), B.wdy = random_f32(ny, &seed);
		B.ww = random_f32(nw, &seed);
		B.hx = to_bf16(B.x, nx), B.hw = to_bf16(B.w, nw), B.hy = to_bf16(B.y, ny), B.hdy = to_bf16(B.dy, ny);
		B.hdx = to_bf16(B.dx, nx);
		double flops = starnn_conv2d_flops(&g, STARNN_CONV2D_FWD);
		static const char *const pname[3] = {"fwd", "bwd_data", "bwd_weight"};
		for (int p = 0; p < 3; p++) {
			double best[NKERNELS];
			struct kernels_ctx ctx = {p, have_bf16, &g, &B};
			if (best_times(reps, NKERNELS, kernels_run, &ctx, best))
				return 1;
			printf("%-10s %-10s", sh->name, pname[p]);
			for (int k = 0; k < NKERNELS; k++)
				if (k == BF16 && !have_bf16)
					printf(" %9s", "-");
				else
					printf(" %9.1f", flops / best[k] * 1e-9);
			printf(" %12.2f", best[IM2COL] / best[DNNL]);
			if (have_bf16)
				printf(" %10.2f\n", best[DNNL] / best[BF16]);
			else
				printf(" %10s\n", "-");
			fflush(stdout);
		}
		float *fp[] = {B.x, B.w, B.b, B.y, B.dy, B.dx, B.dw, B.work, B.wx, B.wy, B.wdy, B.ww};
		for (size_t i = 0; i < sizeof fp / sizeof *fp; i++)
			free(fp[i]);
		uint16_t *hp[] = {B.hx, B.hw, B.hy, B.hdy, B.hdx};
		for (size_t i = 0; i < sizeof hp / sizeof *hp; i++)
			free(hp[i]);
	}
	return 0;
}
