/* convt2d (transposed convolution 2x2, stride 2, bias): the CPU kernels
 * against loops written from the definition (double accumulation) on dense
 * and strided operands, including shapes that take several row tiles; the
 * backward kernels against central finite differences of
 * L = sum(R * y); the codelets (CPU, CUDA in the _cuda build, OpenCL in the
 * _opencl build) against
 * direct kernel calls on shapes across the UNet's range, on channel views
 * (the decoder writes into half of a concatenation) and on micro-batches
 * accumulating the weight gradient; the shape checks; the fp16 / bf16
 * codelets against the fp32 ones and (CUDA: in both modes of
 * STARNN_CUDA_HALF_CONV, native 16-bit cuBLAS and widen) against the CPU
 * fp32 kernels (half_mode_vs_cpu), and that convt2d refuses a bad value of
 * that variable.
 * Tolerances: kernels and codelets against the definition summed in
 * double, each output within the rounding bound of its own sum
 * (test_close_sum in tests/testlib.h: lambda sqrt(n) u sum|terms|, which
 * any summation order meets); finite differences
 * |d| <= 2e-3 + 1e-3 |ref| (L is linear in each parameter; step 0.05, the
 * error is L's float rounding / step). Everything CPU runs for both
 * kernel sets (GEMM based and oneDNN) where starnn has oneDNN. *
 * Length (about 1,200 lines): one test program per operation
 * (codelets/ops.list); convt2d's routes (oneDNN, starnn's direct kernels,
 * the weights' blocked copies) in three dtypes and several layouts.
 */
#include <config.h>

#include <float.h>
#include <math.h>

#include "codelets/axpy.h"
#include "codelets/conv2d.h"
#include "codelets/conv2d_internal.h"
#include "codelets/convert.h"
#include "codelets/convt2d.h"
#include "codelets/copy.h"
#include "codelets/sgd.h"
#include "runtime/core/choice.h"
#include "tests/testlib.h"
#include "tests/codelets/halfcheck.h"

struct shape {
	size_t n, c, o, h, w;
};

/* The routes in force (the setters', and the test hooks' variables), for
 * the kernels called directly as the codelets would call them. */
static const struct starnn_conv2d_routes *rt(void)
{
	static struct starnn_conv2d_routes r;
	starnn_conv2d_routes_in_force(&r);
	return &r;
}

/* The CPU kernels under test: GEMM based, or oneDNN (both when starnn has
 * oneDNN; oneDNN's weight gradient leaves the bias to
 * starnn_convt2d_bias_grad_cpu). */
static enum starnn_conv2d_backend kernels = STARNN_CONV2D_IM2COL;
#define KNAME (kernels == STARNN_CONV2D_DNNL ? "oneDNN" : "gemm")

static int fwd_kernel(struct shape s, const float *x, size_t lx, const float *wt, size_t lw, const float *b, float *y,
                      size_t ly)
{
	if (kernels == STARNN_CONV2D_DNNL)
		return starnn_convt2d_fwd_dnnl(s.n, s.c, s.o, s.h, s.w, 1, 1, STARNN_FP32, rt(), x, lx, wt, lw, b, y, ly);
	return starnn_convt2d_fwd_cpu(s.n, s.c, s.o, s.h, s.w, x, lx, wt, lw, b, y, ly);
}

static int bwd_data_kernel(struct shape s, const float *wt, size_t lw, const float *dy, size_t ly, float beta,
                           float *dx, size_t lx)
{
	if (kernels == STARNN_CONV2D_DNNL)
		return starnn_convt2d_bwd_data_dnnl(s.n, s.c, s.o, s.h, s.w, 1, 1, STARNN_FP32, rt(), wt, lw, dy, ly, beta, dx, lx);
	return starnn_convt2d_bwd_data_cpu(s.n, s.c, s.o, s.h, s.w, wt, lw, dy, ly, beta, dx, lx);
}

static int bwd_weight_kernel(struct shape s, const float *x, size_t lx, const float *dy, size_t ly, float beta,
                             float *dw, size_t lw, float *db)
{
	if (kernels == STARNN_CONV2D_DNNL) /* the bias gradient in the same primitive */
		return starnn_convt2d_bwd_weight_dnnl(s.n, s.c, s.o, s.h, s.w, 1, 1, STARNN_FP32, rt(), x, lx, dy, ly, beta, dw, lw,
		                                      db);
	return starnn_convt2d_bwd_weight_cpu(s.n, s.c, s.o, s.h, s.w, x, lx, dy, ly, beta, dw, lw, db);
}

/* Strided layouts: every matrix gets `pad` spare elements per row. */
struct bufs {
	size_t lx, ly, lw;
	float *x, *wt, *b, *y, *dy, *dx, *dw, *db;
};

/* The definitions in double, with the magnitude of each output's terms
 * (tests/testlib.h: test_close_sum). ref starts as a copy of the output
 * buffer (its padding stays as it is). Terms per output: fwd c + 1 (the
 * bias), bwd_data 4o + 1, bwd_weight n h w + 1, bias n 4 h w + 1 (the
 * 1: beta times the old value). */
TEST_REFERENCE
static void ref_init(struct test_sums *r, const float *cur)
{
	for (size_t i = 0; i < r->n; i++)
		test_sums_copy(r, i, cur[i]);
}

TEST_REFERENCE
static void naive_fwd(struct shape s, const struct bufs *t, struct test_sums *y)
{
	test_host_begin();
	ref_init(y, t->y);
	for (size_t r = 0; r < s.n; r++)
		for (size_t o = 0; o < s.o; o++)
			for (size_t p = 0; p < 2 * s.h; p++)
				for (size_t q = 0; q < 2 * s.w; q++) {
					double acc = t->b[o], mag = fabs(acc);
					for (size_t c = 0; c < s.c; c++) {
						double term = (double)t->x[r * t->lx + (c * s.h + p / 2) * s.w + q / 2] *
						              t->wt[c * t->lw + o * 4 + (p % 2) * 2 + q % 2];
						acc += term, mag += fabs(term);
					}
					size_t i = r * t->ly + (o * 2 * s.h + p) * 2 * s.w + q;
					y->val[i] = acc, y->mag[i] = mag;
				}
	test_host_end();
}

/* beta * old + acc, with its magnitude. */
TEST_REFERENCE
static void ref_set(struct test_sums *r, size_t i, float beta, double acc, double mag)
{
	double old = beta == 0.0f ? 0.0 : beta * r->val[i];
	r->val[i] = old + acc, r->mag[i] = fabs(old) + mag;
}

TEST_REFERENCE
static void naive_bwd_data(struct shape s, const struct bufs *t, float beta, struct test_sums *dx)
{
	test_host_begin();
	ref_init(dx, t->dx);
	for (size_t r = 0; r < s.n; r++)
		for (size_t c = 0; c < s.c; c++)
			for (size_t i = 0; i < s.h; i++)
				for (size_t j = 0; j < s.w; j++) {
					double acc = 0, mag = 0;
					for (size_t o = 0; o < s.o; o++)
						for (size_t a = 0; a < 2; a++)
							for (size_t b = 0; b < 2; b++) {
								double term = (double)t->wt[c * t->lw + o * 4 + a * 2 + b] *
								              t->dy[r * t->ly + (o * 2 * s.h + 2 * i + a) * 2 * s.w + 2 * j + b];
								acc += term, mag += fabs(term);
							}
					ref_set(dx, r * t->lx + (c * s.h + i) * s.w + j, beta, acc, mag);
				}
	test_host_end();
}

TEST_REFERENCE
static void naive_bwd_weight(struct shape s, const struct bufs *t, float beta, struct test_sums *dw,
                             struct test_sums *db)
{
	test_host_begin();
	ref_init(dw, t->dw);
	ref_init(db, t->db);
	for (size_t c = 0; c < s.c; c++)
		for (size_t o = 0; o < s.o; o++)
			for (size_t a = 0; a < 2; a++)
				for (size_t b = 0; b < 2; b++) {
					double acc = 0, mag = 0;
					for (size_t r = 0; r < s.n; r++)
						for (size_t i = 0; i < s.h; i++)
							for (size_t j = 0; j < s.w; j++) {
								double term = (double)t->x[r * t->lx + (c * s.h + i) * s.w + j] *
								              t->dy[r * t->ly + (o * 2 * s.h + 2 * i + a) * 2 * s.w + 2 * j + b];
								acc += term, mag += fabs(term);
							}
					ref_set(dw, c * t->lw + o * 4 + a * 2 + b, beta, acc, mag);
				}
	for (size_t o = 0; o < s.o; o++) {
		double acc = 0, mag = 0;
		for (size_t r = 0; r < s.n; r++)
			for (size_t k = 0; k < 4 * s.h * s.w; k++) {
				double term = t->dy[r * t->ly + o * 4 * s.h * s.w + k];
				acc += term, mag += fabs(term);
			}
		ref_set(db, o, beta, acc, mag);
	}
	test_host_end();
}

/* Terms per output of each pass (the longest sum). */
static size_t terms_fwd(struct shape s) { return s.c + 1; }
static size_t terms_bwd_data(struct shape s) { return 4 * s.o + 1; }
static size_t terms_bwd_weight(struct shape s) { return s.n * s.h * s.w + 1; }
static size_t terms_bias(struct shape s) { return s.n * 4 * s.h * s.w + 1; }

static struct bufs make_bufs(struct shape s, size_t pad)
{
	struct bufs t;
	t.lx = s.c * s.h * s.w + pad;
	t.ly = s.o * 4 * s.h * s.w + pad;
	t.lw = s.o * 4 + pad;
	t.x = test_random(s.n * t.lx, -1, 1);
	t.wt = test_random(s.c * t.lw, -1, 1);
	t.b = test_random(s.o, -1, 1);
	t.y = test_random(s.n * t.ly, -1, 1);
	t.dy = test_random(s.n * t.ly, -1, 1);
	t.dx = test_random(s.n * t.lx, -1, 1);
	t.dw = test_random(s.c * t.lw, -1, 1);
	t.db = test_random(s.o, -1, 1);
	return t;
}

static void free_bufs(struct bufs *t)
{
	free(t->x), free(t->wt), free(t->b), free(t->y), free(t->dy), free(t->dx), free(t->dw), free(t->db);
}

static float *dupf(const float *p, size_t n)
{
	float *q = malloc(n * sizeof *q);
	memcpy(q, p, n * sizeof *q);
	return q;
}

/* Sets the first `cols` of each of `rows` rows (ld) to NaN: outputs that
 * beta == 0 must not read. */
static void poison(float *p, size_t rows, size_t cols, size_t ld)
{
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			p[r * ld + c] = NAN;
}

static void kernels_vs_naive(struct shape s, size_t pad)
{
	struct bufs t = make_bufs(s, pad);
	size_t ny = s.n * t.ly, nx = s.n * t.lx, nw = s.c * t.lw;
	char what[128], sh[64];
	snprintf(sh, sizeof sh, "n%zu c%zu o%zu %zux%zu pad %zu", s.n, s.c, s.o, s.h, s.w, pad);

	struct test_sums yref = test_sums_new(ny);
	naive_fwd(s, &t, &yref);
	TEST_OK(fwd_kernel(s, t.x, t.lx, t.wt, t.lw, t.b, t.y, t.ly));
	snprintf(what, sizeof what, "%s fwd %s", KNAME, sh);
	test_close_sum(what, t.y, yref.val, yref.mag, ny, terms_fwd(s), TEST_U32);

	for (int k = 0; k < 2; k++) {
		float beta = k ? 0.75f : 0.0f;
		if (beta == 0.0f) {
			poison(t.dx, s.n, s.c * s.h * s.w, t.lx);
			poison(t.dw, s.c, s.o * 4, t.lw);
			poison(t.db, 1, s.o, s.o);
		}
		struct test_sums dxref = test_sums_new(nx), dwref = test_sums_new(nw), dbref = test_sums_new(s.o);
		naive_bwd_data(s, &t, beta, &dxref);
		naive_bwd_weight(s, &t, beta, &dwref, &dbref);
		TEST_OK(bwd_data_kernel(s, t.wt, t.lw, t.dy, t.ly, beta, t.dx, t.lx));
		TEST_OK(bwd_weight_kernel(s, t.x, t.lx, t.dy, t.ly, beta, t.dw, t.lw, t.db));
		/* Padding: random on both sides, compared exactly (untouched). */
		snprintf(what, sizeof what, "%s bwd_data beta %g %s", KNAME, beta, sh);
		test_close_sum(what, t.dx, dxref.val, dxref.mag, nx, terms_bwd_data(s), TEST_U32);
		snprintf(what, sizeof what, "%s bwd_weight beta %g %s", KNAME, beta, sh);
		test_close_sum(what, t.dw, dwref.val, dwref.mag, nw, terms_bwd_weight(s), TEST_U32);
		snprintf(what, sizeof what, "%s bwd_bias beta %g %s", KNAME, beta, sh);
		test_close_sum(what, t.db, dbref.val, dbref.mag, s.o, terms_bias(s), TEST_U32);
		test_sums_free(&dxref), test_sums_free(&dwref), test_sums_free(&dbref);
	}
	test_sums_free(&yref);
	free_bufs(&t);
}

/* ------------------------------------------------------ direct kernels */

/* The direct kernels (codelets/convt2d.h) on x / dx in blocks of
 * xb and dy in blocks of yb, samples pad floats more than their size
 * apart, against the naive sums: each pass where it applies (the weight
 * gradient: dy in blocks, o % 8 == 0; the data gradient: dx in blocks,
 * c % 8 == 0), with beta 0 (stale NaN in dx / dw / db) and 0.75. */
static void direct_vs_naive(struct shape s, size_t xb, size_t yb, size_t pad)
{
	const int wg = starnn_convt2d_direct_ok(s.o, yb), dg = starnn_convt2d_direct_ok(s.c, xb);
	if (!wg && !dg)
		return;
	struct bufs t = make_bufs(s, 0);
	const size_t hw = s.h * s.w, lx = s.c * hw + pad, ly = s.o * 4 * hw + pad, nx = s.n * t.lx, nw = s.c * t.lw;
	const size_t ny = s.n * t.ly;
	float *xB = test_random(s.n * lx, -1, 1), *dyB = test_random(s.n * ly, -1, 1), *dxB = test_random(s.n * lx, -1, 1);
	float *yB = test_random(s.n * ly, -1, 1);
	float *work = malloc(starnn_convt2d_direct_workspace(s.c, s.o) * sizeof *work);
	test_to_blocked(s.n, s.c, hw, xb, t.x, t.lx, xB, lx);
	test_to_blocked(s.n, s.o, 4 * hw, yb, t.dy, t.ly, dyB, ly);
	char what[160], sh[96];
	snprintf(sh, sizeof sh, "n%zu c%zu o%zu %zux%zu, x blocks of %zu, dy blocks of %zu, pad %zu", s.n, s.c, s.o, s.h,
	         s.w, xb, yb, pad);
	if (wg) { /* the forward pass has the weight gradient's vector side: y */
		struct test_sums ref = test_sums_new(ny);
		poison(yB, s.n, s.o * 4 * hw, ly);
		naive_fwd(s, &t, &ref);
		starnn_convt2d_fwd_direct_cpu(s.n, s.c, s.o, s.h, s.w, xb, yb, xB, lx, t.wt, t.lw, t.b, yB, ly, work);
		float *got = dupf(t.y, ny);
		test_from_blocked(s.n, s.o, 4 * hw, yb, yB, ly, got, t.ly);
		snprintf(what, sizeof what, "direct fwd %s", sh);
		test_close_sum(what, got, ref.val, ref.mag, ny, terms_fwd(s), TEST_U32);
		free(got), test_sums_free(&ref);
	}
	for (int k = 0; k < 2; k++) {
		const float beta = k ? 0.75f : 0.0f;
		if (beta == 0.0f) {
			poison(t.dw, s.c, s.o * 4, t.lw);
			poison(t.db, 1, s.o, s.o);
			poison(dxB, s.n, s.c * hw, lx);
		} else {
			test_to_blocked(s.n, s.c, hw, xb, t.dx, t.lx, dxB, lx);
		}
		if (dg) {
			struct test_sums ref = test_sums_new(nx);
			naive_bwd_data(s, &t, beta, &ref);
			starnn_convt2d_bwd_data_direct_cpu(s.n, s.c, s.o, s.h, s.w, xb, yb, t.wt, t.lw, dyB, ly, beta, dxB, lx,
			                                   work);
			float *got = dupf(t.dx, nx);
			test_from_blocked(s.n, s.c, hw, xb, dxB, lx, got, t.lx);
			snprintf(what, sizeof what, "direct bwd_data beta %g %s", beta, sh);
			test_close_sum(what, got, ref.val, ref.mag, nx, terms_bwd_data(s), TEST_U32);
			free(got), test_sums_free(&ref);
		}
		if (wg) {
			struct test_sums dwref = test_sums_new(nw), dbref = test_sums_new(s.o);
			naive_bwd_weight(s, &t, beta, &dwref, &dbref);
			starnn_convt2d_bwd_weight_direct_cpu(s.n, s.c, s.o, s.h, s.w, xb, yb, xB, lx, dyB, ly, beta, t.dw, t.lw,
			                                     t.db, work);
			snprintf(what, sizeof what, "direct bwd_weight beta %g %s", beta, sh);
			test_close_sum(what, t.dw, dwref.val, dwref.mag, nw, terms_bwd_weight(s), TEST_U32);
			snprintf(what, sizeof what, "direct bwd_bias beta %g %s", beta, sh);
			test_close_sum(what, t.db, dbref.val, dbref.mag, s.o, terms_bias(s), TEST_U32);
			test_sums_free(&dwref), test_sums_free(&dbref);
		}
	}
	free(xB), free(dyB), free(dxB), free(yB), free(work);
	free_bufs(&t);
}

/* Every layout pairing of the direct kernels on shapes that reach their
 * edges, what they decline, and the route's setting. */
static void direct_kernels(void)
{
	if (!starnn_convt2d_direct_ok(8, 8)) {
		printf("note: the direct convt2d kernels need an x86 processor with AVX2: not checked here\n");
		return;
	}
	const struct shape shapes[] = {
		{2, 3, 8, 4, 6},    /* one channel group of the weight gradient, two of its lanes repeated */
		{1, 5, 16, 7, 5},   /* a last group of 2 */
		{2, 16, 8, 40, 12}, /* several strips of rows, a short last one */
		{2, 8, 3, 4, 6},    /* one block of dx, paired with itself */
		{1, 24, 5, 7, 5},   /* a pair and an odd block; 35 pixels: a last group of 5 */
		{3, 16, 8, 1, 1},   /* one pixel */
		{1, 32, 16, 16, 16},
		{2, 64, 32, 8, 8},
		{1, 11, 8, 5, 7},   /* forward: rows of 7 in groups of 3 + 3 + 1 */
		{1, 4096, 8, 3, 5}, /* forward: strips of 6 pixels */
	};
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
		const struct shape s = shapes[i];
		const size_t blocks[] = {1, 8, 16, 48};
		for (size_t a = 0; a < 5; a++)
			for (size_t b = 0; b < 5; b++) {
				const size_t xb = a < 4 ? blocks[a] : s.c, yb = b < 4 ? blocks[b] : s.o;
				if (s.c % xb || s.o % yb || (a == 4 && xb == 1) || (b == 4 && yb == 1))
					continue;
				direct_vs_naive(s, xb, yb, (a + b) % 2 ? 5 : 0);
			}
	}
	TEST_ASSERT(!starnn_convt2d_direct_ok(12, 12) && !starnn_convt2d_direct_ok(16, 1) &&
	                    !starnn_convt2d_direct_ok(16, 4) && starnn_convt2d_direct_ok(48, 48),
	            "direct_ok: 12 channels, NCHW or blocks of 4 accepted, or NHWC of 48 declined");
	TEST_OK(starnn_convt2d_route_set(STARNN_CONVT2D_DIRECT));
#ifdef STARNN_HAVE_DNNL /* (the route of the oneDNN backend; without it, never taken) */
	TEST_ASSERT(starnn_convt2d_direct(16, 8, STARNN_FP32, rt()) && !starnn_convt2d_direct(16, 8, STARNN_BF16, rt()) &&
	                    !starnn_convt2d_direct(16, 1, STARNN_FP32, rt()),
	            "direct route: fp32 blocked not taken, or bf16 / NCHW taken");
#else
	TEST_ASSERT(!starnn_convt2d_direct(16, 8, STARNN_FP32, rt()), "no oneDNN: the direct route taken");
#endif
	TEST_OK(starnn_convt2d_route_set(STARNN_CONVT2D_DNNL));
	TEST_ASSERT(!starnn_convt2d_direct(16, 8, STARNN_FP32, rt()), "dnnl route: the direct kernel taken");
	TEST_OK(starnn_convt2d_route_set(STARNN_CONVT2D_AUTO));
	TEST_ASSERT(starnn_convt2d_route_set((enum starnn_convt2d_route)5) == STARNN_EINVAL, "route 5 accepted");
}

/* ------------------------------------------------------ finite differences */

enum fd_var { FD_X, FD_W, FD_B };
struct fd_ctx {
	struct shape s;
	struct bufs *t;
	enum fd_var var;
};

/* L = sum(R * y), R = t->dy; the perturbed array is passed as p. */
static double objective(const float *p, void *vctx)
{
	struct fd_ctx *ctx = vctx;
	struct bufs *t = ctx->t;
	struct shape s = ctx->s;
	starnn_convt2d_fwd_cpu(s.n, s.c, s.o, s.h, s.w, ctx->var == FD_X ? p : t->x, t->lx,
	                       ctx->var == FD_W ? p : t->wt, t->lw, ctx->var == FD_B ? p : t->b, t->y, t->ly);
	double l = 0;
	for (size_t r = 0; r < s.n; r++)
		for (size_t k = 0; k < s.o * 4 * s.h * s.w; k++)
			l += (double)t->dy[r * t->ly + k] * t->y[r * t->ly + k];
	return l;
}

static void finite_differences(struct shape s)
{
	struct bufs t = make_bufs(s, 0);
	size_t nx = s.n * t.lx, nw = s.c * t.lw;
	TEST_OK(bwd_data_kernel(s, t.wt, t.lw, t.dy, t.ly, 0.0f, t.dx, t.lx));
	TEST_OK(bwd_weight_kernel(s, t.x, t.lx, t.dy, t.ly, 0.0f, t.dw, t.lw, t.db));
	float *fx = malloc(nx * sizeof *fx), *fw = malloc(nw * sizeof *fw), *fb = malloc(s.o * sizeof *fb);
	struct fd_ctx ctx = {s, &t, FD_X};
	for (size_t i = 0; i < nx; i++)
		fx[i] = (float)test_fd(objective, t.x, i, 0.05, &ctx);
	ctx.var = FD_W;
	for (size_t i = 0; i < nw; i++)
		fw[i] = (float)test_fd(objective, t.wt, i, 0.05, &ctx);
	ctx.var = FD_B;
	for (size_t i = 0; i < s.o; i++)
		fb[i] = (float)test_fd(objective, t.b, i, 0.05, &ctx);
	char what[96];
	snprintf(what, sizeof what, "%s bwd_data vs fd n%zu c%zu o%zu %zux%zu", KNAME, s.n, s.c, s.o, s.h, s.w);
	test_close(what, t.dx, fx, nx, 1e-3f, 2e-3f);
	snprintf(what, sizeof what, "%s bwd_weight vs fd n%zu c%zu o%zu %zux%zu", KNAME, s.n, s.c, s.o, s.h, s.w);
	test_close(what, t.dw, fw, nw, 1e-3f, 2e-3f);
	snprintf(what, sizeof what, "%s bias grad vs fd n%zu c%zu o%zu %zux%zu", KNAME, s.n, s.c, s.o, s.h, s.w);
	test_close(what, t.db, fb, s.o, 1e-3f, 2e-3f);
	free(fx), free(fw), free(fb);
	free_bufs(&t);
}

/* ----------------------------------------------------------------- codelets */

static void codelets_vs_kernels(struct shape s)
{
	int64_t n = (int64_t)s.n, c = (int64_t)s.c, o = (int64_t)s.o, h = (int64_t)s.h, w = (int64_t)s.w;
	struct bufs t = make_bufs(s, 0);
	size_t nx = s.n * t.lx, ny = s.n * t.ly, nw = s.c * t.lw;
	/* the references: the definitions in double with the rounding bound of
	 * each sum (the codelets split the work and sum in their own order on
	 * every worker type and backend; cuBLAS on CUDA in fp32, FMA math) */
	char what[128], sh[64];
	snprintf(sh, sizeof sh, "n%zu c%zu o%zu %zux%zu", s.n, s.c, s.o, s.h, s.w);

	/* x is channels [1, c+1) of a bigger tensor, y channels [2, o+2) of a
	 * concatenation: both strided views, as in the UNet's decoder. */
	int64_t xbig_s[4] = {n, c + 1, h, w}, ybig_s[4] = {n, o + 3, 2 * h, 2 * w};
	int64_t ws[4] = {c, o, 2, 2}, bs[1] = {o}, xs[4] = {n, c, h, w}, ys[4] = {n, o, 2 * h, 2 * w};
	starnn_tensor *xbig = test_tensor("xbig", 4, xbig_s, NULL), *ybig = test_tensor("ybig", 4, ybig_s, NULL);
	starnn_tensor *tw = test_tensor("w", 4, ws, t.wt), *tb = test_tensor("b", 1, bs, t.b);
	starnn_tensor *tdy = test_tensor("dy", 4, ys, t.dy), *tdx = test_tensor("dx", 4, xs, t.dx);
	starnn_tensor *tdw = test_tensor("dw", 4, ws, t.dw), *tdb = test_tensor("db", 1, bs, t.db);
	starnn_tensor *tx = test_tensor("x", 4, xs, t.x);
	starnn_tensor **xp, **yp;
	int64_t xsz[2] = {1, c}, ysz[3] = {2, o, 1};
	TEST_OK(starnn_tensor_split(xbig, 1, 2, xsz, &xp));
	TEST_OK(starnn_tensor_split(ybig, 1, 3, ysz, &yp));
	TEST_OK(starnn_add(1.0f, tx, 0.0f, tx, xp[1])); /* x into the view */

	struct test_sums yref = test_sums_new(ny), dxref = test_sums_new(nx), dwref = test_sums_new(nw);
	struct test_sums dbref = test_sums_new(s.o);
	naive_fwd(s, &t, &yref);
	naive_bwd_data(s, &t, 1.0f, &dxref);
	naive_bwd_weight(s, &t, 1.0f, &dwref, &dbref);

	TEST_OK(starnn_convt2d_fwd(xp[1], tw, tb, yp[1]));
	TEST_OK(starnn_convt2d_bwd_data(tw, tdy, 1.0f, tdx));
	/* The weight gradient over two micro-batches (when n >= 2): beta 1 on
	 * the first accumulates into the initial dw, beta 1 on the second
	 * accumulates the rest. */
	if (n >= 2) {
		starnn_tensor **xb, **dyb;
		TEST_OK(starnn_tensor_split(tx, 0, 2, NULL, &xb));
		TEST_OK(starnn_tensor_split(tdy, 0, 2, NULL, &dyb));
		TEST_OK(starnn_convt2d_bwd_weight(xb[0], dyb[0], 1.0f, tdw, tdb));
		TEST_OK(starnn_convt2d_bwd_weight(xb[1], dyb[1], 1.0f, tdw, tdb));
	} else {
		TEST_OK(starnn_convt2d_bwd_weight(tx, tdy, 1.0f, tdw, tdb));
	}

	float *gbig = test_read(ybig), *gy = calloc(ny, sizeof *gy);
	size_t inner = 4 * s.h * s.w, lbig = (size_t)(o + 3) * inner;
	for (size_t r = 0; r < s.n; r++)
		memcpy(gy + r * t.ly, gbig + r * lbig + 2 * inner, t.ly * sizeof *gy);
	snprintf(what, sizeof what, "fwd codelet on views %s", sh);
	test_close_sum(what, gy, yref.val, yref.mag, ny, terms_fwd(s), TEST_U32);
	/* The channels around the view stay zero. */
	double around = 0;
	for (size_t r = 0; r < s.n; r++)
		for (size_t k = 0; k < lbig; k++)
			if (k < 2 * inner || k >= (size_t)(o + 2) * inner)
				around += fabs(gbig[r * lbig + k]);
	TEST_ASSERT(around == 0, "fwd codelet wrote outside its view (%g)", around);

	float *gdx = test_read(tdx), *gdw = test_read(tdw), *gdb = test_read(tdb);
	snprintf(what, sizeof what, "bwd_data codelet beta 1 %s", sh);
	test_close_sum(what, gdx, dxref.val, dxref.mag, nx, terms_bwd_data(s), TEST_U32);
	/* two micro-batches: each sum is dw0 + part 0 + part 1 */
	snprintf(what, sizeof what, "bwd_weight codelet beta 1 %s", sh);
	test_close_sum(what, gdw, dwref.val, dwref.mag, nw, terms_bwd_weight(s) + 1, TEST_U32);
	snprintf(what, sizeof what, "bias grad codelet beta 1 %s", sh);
	test_close_sum(what, gdb, dbref.val, dbref.mag, s.o, terms_bias(s) + 1, TEST_U32);
	free(gbig), free(gy), free(gdx), free(gdw), free(gdb);

	/* beta = 0 overwrites. */
	TEST_OK(starnn_convt2d_bwd_data(tw, tdy, 0.0f, tdx));
	TEST_OK(starnn_convt2d_bwd_weight(tx, tdy, 0.0f, tdw, tdb));
	naive_bwd_data(s, &t, 0.0f, &dxref);
	naive_bwd_weight(s, &t, 0.0f, &dwref, &dbref);
	gdx = test_read(tdx), gdw = test_read(tdw), gdb = test_read(tdb);
	snprintf(what, sizeof what, "bwd_data codelet beta 0 %s", sh);
	test_close_sum(what, gdx, dxref.val, dxref.mag, nx, terms_bwd_data(s), TEST_U32);
	snprintf(what, sizeof what, "bwd_weight codelet beta 0 %s", sh);
	test_close_sum(what, gdw, dwref.val, dwref.mag, nw, terms_bwd_weight(s), TEST_U32);
	snprintf(what, sizeof what, "bias grad codelet beta 0 %s", sh);
	test_close_sum(what, gdb, dbref.val, dbref.mag, s.o, terms_bias(s), TEST_U32);
	free(gdx), free(gdw), free(gdb);

	starnn_tensor_destroy(xbig), starnn_tensor_destroy(ybig), starnn_tensor_destroy(tw), starnn_tensor_destroy(tb);
	starnn_tensor_destroy(tdy), starnn_tensor_destroy(tdx), starnn_tensor_destroy(tdw), starnn_tensor_destroy(tdb);
	starnn_tensor_destroy(tx);
	test_sums_free(&yref), test_sums_free(&dxref), test_sums_free(&dwref), test_sums_free(&dbref);
	free_bufs(&t);
}

static void bad_shapes(void)
{
	starnn_tensor *x, *w, *b, *y, *w3, *b2, *ybad, *xh, *bw2;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 4, 2, 3, 4, 5));
	TEST_OK(starnn_tensor_new(&w, "w", STARNN_FP32, 4, 3, 6, 2, 2));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 1, 6));
	TEST_OK(starnn_tensor_new(&y, "y", STARNN_FP32, 4, 2, 6, 8, 10));
	TEST_OK(starnn_tensor_new(&w3, "w3", STARNN_FP32, 4, 3, 6, 3, 3));
	TEST_OK(starnn_tensor_new(&b2, "b2", STARNN_FP32, 1, 5));
	TEST_OK(starnn_tensor_new(&ybad, "ybad", STARNN_FP32, 4, 2, 6, 8, 9));
	TEST_OK(starnn_tensor_new(&xh, "xh", STARNN_FP16, 4, 2, 3, 4, 5));
	TEST_OK(starnn_tensor_new(&bw2, "bw2", STARNN_FP32, 2, 1, 6));
	TEST_ASSERT(starnn_convt2d_fwd(x, w3, b, y) == STARNN_EINVAL, "3x3 kernel accepted");
	TEST_ASSERT(starnn_convt2d_fwd(x, w, b2, y) == STARNN_EINVAL, "bias of the wrong size accepted");
	TEST_ASSERT(starnn_convt2d_fwd(x, w, bw2, y) == STARNN_EINVAL, "2-D bias accepted");
	TEST_ASSERT(starnn_convt2d_fwd(x, w, b, ybad) == STARNN_EINVAL, "output of the wrong width accepted");
	TEST_ASSERT(starnn_convt2d_fwd(xh, w, b, y) == STARNN_EINVAL, "fp16 input accepted");
	TEST_ASSERT(starnn_convt2d_fwd(y, w, b, x) == STARNN_EINVAL, "swapped input / output accepted");
	TEST_ASSERT(starnn_convt2d_fwd(x, w, NULL, y) == STARNN_EINVAL, "missing bias accepted");
	TEST_ASSERT(starnn_convt2d_bwd_data(w, ybad, 0.0f, x) == STARNN_EINVAL, "bwd_data: wrong dy accepted");
	TEST_ASSERT(starnn_convt2d_bwd_data(w3, y, 0.0f, x) == STARNN_EINVAL, "bwd_data: wrong weight accepted");
	TEST_ASSERT(starnn_convt2d_bwd_weight(x, y, 0.0f, w, b2) == STARNN_EINVAL, "bwd_weight: wrong db accepted");
	TEST_ASSERT(starnn_convt2d_bwd_weight(x, ybad, 0.0f, w, b) == STARNN_EINVAL, "bwd_weight: wrong dy accepted");
	TEST_ASSERT(starnn_convt2d_bwd_weight(x, y, 0.0f, w, NULL) == STARNN_EINVAL, "bwd_weight: missing db accepted");
	TEST_OK(starnn_convt2d_fwd(x, w, b, y)); /* the good ones pass */
	TEST_OK(starnn_convt2d_bwd_data(w, y, 0.0f, x));
	TEST_OK(starnn_convt2d_bwd_weight(x, y, 0.0f, w, b));
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(x), starnn_tensor_destroy(w), starnn_tensor_destroy(b), starnn_tensor_destroy(y);
	starnn_tensor_destroy(w3), starnn_tensor_destroy(b2), starnn_tensor_destroy(ybad), starnn_tensor_destroy(xh);
	starnn_tensor_destroy(bw2);
}

/* ------------------------------------------------------ mixed precision
 * starnn_convt2d_*_mp on fp16 / bf16 data against the fp32 codelets on the
 * same values (tolerances: tests/codelets/halfcheck.h): forward, backward
 * data with beta 0 and 1, backward weight + bias with beta 0 and 1. */
static void half_vs_fp32(int64_t n, int64_t c, int64_t o, int64_t h, int64_t w, starnn_dtype dt)
{
	int64_t xs[4] = {n, c, h, w}, ys[4] = {n, o, 2 * h, 2 * w}, ws[4] = {c, o, 2, 2}, bs[1] = {o};
	size_t nx = (size_t)(n * c * h * w), ny = (size_t)(n * o * 4 * h * w), nw = (size_t)(c * o * 4);
	float *x = hc_random(dt, nx, -1, 1), *wt = hc_random(dt, nw, -0.5f, 0.5f), *b = test_random((size_t)o, -1, 1);
	float *dy = hc_random(dt, ny, -1, 1), *dx0 = hc_random(dt, nx, -1, 1), *dw0 = test_random(nw, -1, 1);
	float *db0 = test_random((size_t)o, -1, 1);
	starnn_tensor *t32[9], *t16[9];
	const starnn_dtype dts[9] = {dt, dt, STARNN_FP32, dt, dt, dt, dt, STARNN_FP32, STARNN_FP32};
	for (int k = 0; k < 2; k++) {
		starnn_tensor **t = k ? t16 : t32;
		starnn_dtype d[9];
		for (int i = 0; i < 9; i++)
			d[i] = k ? dts[i] : STARNN_FP32;
		/* x, w, b, y, dy, dx (beta 1), dx (beta 0), dw (beta 1), db (beta 1) */
		t[0] = hc_tensor("x", d[0], 4, xs, x), t[1] = hc_tensor("w", d[1], 4, ws, wt);
		t[2] = hc_tensor("b", d[2], 1, bs, b), t[3] = hc_tensor("y", d[3], 4, ys, NULL);
		t[4] = hc_tensor("dy", d[4], 4, ys, dy), t[5] = hc_tensor("dx", d[5], 4, xs, dx0);
		t[6] = hc_tensor("dxz", d[6], 4, xs, NULL), t[7] = hc_tensor("dw", d[7], 4, ws, dw0);
		t[8] = hc_tensor("db", d[8], 1, bs, db0);
		TEST_OK(starnn_convt2d_fwd_mp(t[0], t[1], t[2], t[3]));
		TEST_OK(starnn_convt2d_bwd_data_mp(t[1], t[4], 1.0f, t[5]));
		TEST_OK(starnn_convt2d_bwd_data_mp(t[1], t[4], 0.0f, t[6]));
		TEST_OK(starnn_convt2d_bwd_weight_mp(t[0], t[4], 1.0f, t[7], t[8]));
	}
	const char *names[9] = {"", "", "", "convt2d_fwd_mp y", "", "convt2d_bwd_data_mp beta 1",
	                        "convt2d_bwd_data_mp beta 0", "convt2d_bwd_weight_mp dw", "convt2d_bwd_weight_mp db"};
	size_t sizes[9] = {0, 0, 0, ny, 0, nx, nx, nw, (size_t)o};
	for (int i = 3; i < 9; i++) {
		if (i == 4)
			continue;
		float *r = test_read(t32[i]), *g = test_read(t16[i]);
		char what[128];
		snprintf(what, sizeof what, "%s %lldx%lldx%lldx%lldx%lld", names[i], (long long)n, (long long)c,
		         (long long)o, (long long)h, (long long)w);
		if (dts[i] == STARNN_FP32)
			hc_close32(what, dt, g, r, sizes[i]);
		else
			hc_close(what, dt, g, r, sizes[i]);
		free(r), free(g);
	}
	TEST_ASSERT(starnn_convt2d_fwd_mp(t16[0], t32[1], t16[2], t16[3]) == STARNN_EINVAL,
	            "convt2d_fwd_mp: 16-bit x with fp32 w");
	TEST_ASSERT(starnn_convt2d_bwd_weight_mp(t16[0], t16[4], 0.0f, t16[1], t16[8]) == STARNN_EINVAL,
	            "convt2d_bwd_weight_mp: 16-bit dw");
	TEST_ASSERT(starnn_convt2d_fwd(t16[0], t16[1], t16[2], t16[3]) == STARNN_EINVAL, "convt2d_fwd: 16-bit");
	for (int i = 0; i < 9; i++) {
		starnn_tensor_destroy(t32[i]);
		starnn_tensor_destroy(t16[i]);
	}
	free(x), free(wt), free(b), free(dy), free(dx0), free(dw0), free(db0);
}

/* A 16-bit tensor of shape sh holding v (NULL: zeros), or, with view, the
 * part of channels [1, 1 + sh[1]) of a new larger tensor *big. */
static starnn_tensor *half_in(const char *name, starnn_dtype dt, const int64_t *sh, const float *v, int view,
                              starnn_tensor **big)
{
	*big = NULL;
	if (!view)
		return hc_tensor(name, dt, 4, sh, v);
	int64_t bs[4] = {sh[0], sh[1] + 3, sh[2], sh[3]}, sizes[3] = {1, sh[1], 2};
	starnn_tensor **parts;
	*big = hc_tensor(name, dt, 4, bs, NULL);
	TEST_OK(starnn_tensor_split(*big, 1, 3, sizes, &parts));
	if (v) {
		starnn_tensor *t = hc_tensor("src", STARNN_FP32, 4, sh, v);
		TEST_OK(starnn_convert(t, parts[1]));
		starnn_tensor_destroy(t);
	}
	return parts[1];
}

static void half_out_destroy(starnn_tensor *t, starnn_tensor *big)
{
	starnn_tensor_destroy(big ? big : t);
}


static float *nans(size_t n)
{
	float *v = malloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = NAN;
	return v;
}

/* The 16-bit codelets in the current CUDA mode (starnn_cuda_half_conv:
 * native 16-bit cuBLAS or widened) against direct calls of the CPU fp32
 * kernels on the same (16-bit) values: forward with bias, backward data
 * with beta 0 and 1, backward weight (dw and db) with beta 0 and 1. The
 * beta 0 outputs start as NaN (must not be read). With view, x and dx are
 * channel parts of larger 16-bit tensors and y and dy of a concatenation
 * (ld > cols, as in the UNet's decoder). Native cuBLAS sums in another
 * order on tensor cores: the tolerances are those of hc_check_scaled /
 * hc_check_rel32 (tests/codelets/halfcheck.h). A wrong element, a missing
 * bias (|b| ~ 1 against outputs of a few units), a lost or doubled
 * accumulation fails. On CPU the mode is ignored and the test checks itself
 * against the widened route. */
static void half_mode_vs_cpu(struct shape s, starnn_dtype dt, int view)
{
	int64_t xs[4] = {(int64_t)s.n, (int64_t)s.c, (int64_t)s.h, (int64_t)s.w};
	int64_t ys[4] = {(int64_t)s.n, (int64_t)s.o, 2 * (int64_t)s.h, 2 * (int64_t)s.w};
	int64_t ws[4] = {(int64_t)s.c, (int64_t)s.o, 2, 2}, bs[1] = {(int64_t)s.o};
	const size_t xc = s.c * s.h * s.w, yc = s.o * 4 * s.h * s.w, wc = s.o * 4;
	const size_t nx = s.n * xc, ny = s.n * yc, nw = s.c * wc;
	float *x = hc_random(dt, nx, -1, 1), *w = hc_random(dt, nw, -0.5f, 0.5f), *b = test_random(s.o, -1, 1);
	float *dy = hc_random(dt, ny, -1, 1), *dx0 = hc_random(dt, nx, -1, 1), *dw0 = test_random(nw, -1, 1);
	float *db0 = test_random(s.o, -1, 1), *nx_nan = nans(nx), *nw_nan = nans(nw), *no_nan = nans(s.o);

	/* references: the CPU fp32 kernels on the 16-bit values */
	float *ry = malloc(ny * sizeof *ry), *rdx1 = dupf(dx0, nx), *rdx0 = malloc(nx * sizeof *rdx0);
	float *rdw0 = malloc(nw * sizeof *rdw0), *rdw1 = dupf(dw0, nw), *rdb0 = malloc(s.o * sizeof *rdb0);
	float *rdb1 = dupf(db0, s.o);
	TEST_OK(starnn_convt2d_fwd_cpu(s.n, s.c, s.o, s.h, s.w, x, xc, w, wc, b, ry, yc));
	TEST_OK(starnn_convt2d_bwd_data_cpu(s.n, s.c, s.o, s.h, s.w, w, wc, dy, yc, 1.0f, rdx1, xc));
	TEST_OK(starnn_convt2d_bwd_data_cpu(s.n, s.c, s.o, s.h, s.w, w, wc, dy, yc, 0.0f, rdx0, xc));
	TEST_OK(starnn_convt2d_bwd_weight_cpu(s.n, s.c, s.o, s.h, s.w, x, xc, dy, yc, 0.0f, rdw0, wc, rdb0));
	TEST_OK(starnn_convt2d_bwd_weight_cpu(s.n, s.c, s.o, s.h, s.w, x, xc, dy, yc, 1.0f, rdw1, wc, rdb1));

	starnn_tensor *bx, *bdx, *bdxz, *by, *bdy;
	starnn_tensor *xh = half_in("x", dt, xs, x, view, &bx), *dxh = half_in("dx", dt, xs, dx0, view, &bdx);
	starnn_tensor *dxzh = half_in("dxz", dt, xs, nx_nan, view, &bdxz), *yh = half_in("y", dt, ys, NULL, view, &by);
	starnn_tensor *dyh = half_in("dy", dt, ys, dy, view, &bdy), *wh = hc_tensor("w", dt, 4, ws, w);
	starnn_tensor *b32 = hc_tensor("b", STARNN_FP32, 1, bs, b);
	starnn_tensor *dw = hc_tensor("dw", STARNN_FP32, 4, ws, nw_nan), *db = hc_tensor("db", STARNN_FP32, 1, bs, no_nan);
	starnn_tensor *dwacc = hc_tensor("dwacc", STARNN_FP32, 4, ws, dw0);
	starnn_tensor *dbacc = hc_tensor("dbacc", STARNN_FP32, 1, bs, db0);
	TEST_OK(starnn_convt2d_fwd_mp(xh, wh, b32, yh));
	TEST_OK(starnn_convt2d_bwd_data_mp(wh, dyh, 1.0f, dxh));
	TEST_OK(starnn_convt2d_bwd_data_mp(wh, dyh, 0.0f, dxzh));
	TEST_OK(starnn_convt2d_bwd_weight_mp(xh, dyh, 0.0f, dw, db));
	TEST_OK(starnn_convt2d_bwd_weight_mp(xh, dyh, 1.0f, dwacc, dbacc));

	char sh[96], lab[200];
	snprintf(sh, sizeof sh, "n%zu c%zu o%zu %zux%zu%s vs CPU fp32", s.n, s.c, s.o, s.h, s.w, view ? " views" : "");
	const char *mode = starnn_cuda_half_conv_name(starnn_cuda_half_conv());
	snprintf(lab, sizeof lab, "convt2d_fwd_mp %s", sh);
	hc_check_scaled(lab, dt, mode, yh, ys, ry, ny);
	snprintf(lab, sizeof lab, "convt2d_bwd_data_mp beta 1 %s", sh);
	hc_check_scaled(lab, dt, mode, dxh, xs, rdx1, nx);
	snprintf(lab, sizeof lab, "convt2d_bwd_data_mp beta 0 %s", sh);
	hc_check_scaled(lab, dt, mode, dxzh, xs, rdx0, nx);
	snprintf(lab, sizeof lab, "convt2d_bwd_weight_mp dw beta 0 %s", sh);
	hc_check_rel32(lab, dt, mode, dw, rdw0, nw);
	snprintf(lab, sizeof lab, "convt2d_bwd_weight_mp db beta 0 %s", sh);
	hc_check_rel32(lab, dt, mode, db, rdb0, s.o);
	snprintf(lab, sizeof lab, "convt2d_bwd_weight_mp dw beta 1 %s", sh);
	hc_check_rel32(lab, dt, mode, dwacc, rdw1, nw);
	snprintf(lab, sizeof lab, "convt2d_bwd_weight_mp db beta 1 %s", sh);
	hc_check_rel32(lab, dt, mode, dbacc, rdb1, s.o);
	if (view) {
		/* the channels around y's part stay zero */
		float *g = test_read(by);
		size_t lbig = (s.o + 3) * 4 * s.h * s.w, inner = 4 * s.h * s.w;
		double around = 0;
		for (size_t r = 0; r < s.n; r++)
			for (size_t k = 0; k < lbig; k++)
				if (k < inner || k >= (s.o + 1) * inner)
					around += fabs(g[r * lbig + k]);
		TEST_ASSERT(around == 0, "convt2d_fwd_mp %s (%s): wrote outside its view (%g)", sh, starnn_dtype_name(dt),
		            around);
		free(g);
	}

	half_out_destroy(xh, bx), half_out_destroy(dxh, bdx), half_out_destroy(dxzh, bdxz);
	half_out_destroy(yh, by), half_out_destroy(dyh, bdy);
	starnn_tensor *all[] = {wh, b32, dw, db, dwacc, dbacc};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(x), free(w), free(b), free(dy), free(dx0), free(dw0), free(db0), free(nx_nan), free(nw_nan), free(no_nan);
	free(ry), free(rdx1), free(rdx0), free(rdw0), free(rdw1), free(rdb0), free(rdb1);
}

/* STARNN_CUDA_HALF_CONV (one switch for conv2d and convt2d; a test hook,
 * read only in builds with them): a bad value makes the convt2d submit
 * functions refuse with a message; the setter overrides it. The settings
 * are read at start-up (starnn_init), so again here. */
static void cuda_half_switch(void)
{
#ifdef STARNN_TEST_HOOKS
	const char *old = getenv("STARNN_CUDA_HALF_CONV");
	char *saved = old ? strdup(old) : NULL;
	setenv("STARNN_CUDA_HALF_CONV", "fast", 1);
	TEST_ASSERT(starnn_settings_load() == STARNN_EINVAL, "STARNN_CUDA_HALF_CONV=fast accepted");
	starnn_tensor *x, *w, *b, *y;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP16, 4, 1, 3, 2, 2));
	TEST_OK(starnn_tensor_new(&w, "w", STARNN_FP16, 4, 3, 2, 2, 2));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 1, 2));
	TEST_OK(starnn_tensor_new(&y, "y", STARNN_FP16, 4, 1, 2, 4, 4));
	TEST_ASSERT(starnn_convt2d_fwd_mp(x, w, b, y) == STARNN_EINVAL,
	            "convt2d_fwd_mp submitted with STARNN_CUDA_HALF_CONV=fast");
	TEST_ASSERT(strstr(starnn_last_error(), "STARNN_CUDA_HALF_CONV") != NULL, "no variable in the message: %s",
	            starnn_last_error());
	TEST_ASSERT(starnn_convt2d_bwd_data_mp(w, y, 0.0f, x) == STARNN_EINVAL,
	            "convt2d_bwd_data_mp submitted with STARNN_CUDA_HALF_CONV=fast");
	TEST_OK(starnn_cuda_half_conv_set(STARNN_CUDA_HALF_WIDEN));
	TEST_OK(starnn_convt2d_fwd_mp(x, w, b, y));
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(x), starnn_tensor_destroy(w), starnn_tensor_destroy(b), starnn_tensor_destroy(y);
	if (saved)
		setenv("STARNN_CUDA_HALF_CONV", saved, 1);
	else
		unsetenv("STARNN_CUDA_HALF_CONV");
	free(saved);
	TEST_OK(starnn_settings_load());
#else
	printf("STARNN_CUDA_HALF_CONV: not read in a build without test hooks (configure --enable-test-hooks)\n");
#endif
}

/* The weight gradient in oneDNN's deconvolution layout (runtime/core/tensor.h:
 * wl; codelets/convt2d.h): a dw not yet written takes the layout
 * starnn_convt2d_dnnl_dw_layout names (a layout of PyTorch's [c, o, 2, 2],
 * IOhw16o16i on AVX-512) and holds, read back, the bits of the same pass
 * into a dw kept in rows, written anew and accumulated; on the routes of
 * their own (STARNN_CONVT2D=direct) it stays in rows. */
static void dw_layouts(void)
{
	const int b = starnn_conv2d_dnnl_block(STARNN_FP32);
	if (b < 8)
		return;
	const int64_t n = 2, c = 64, o = 32, h = 8, w = 8;
	float *xv = test_random((size_t)(n * c * h * w), -1, 1), *dyv = test_random((size_t)(n * o * 4 * h * w), -1, 1);
	for (int route = 0; route < 2; route++) {
		TEST_OK(starnn_convt2d_route_set(route ? STARNN_CONVT2D_DIRECT : STARNN_CONVT2D_DNNL));
		starnn_tensor *x = test_tensor("x", 4, (int64_t[]){n, c, h, w}, NULL);
		starnn_tensor *dy = test_tensor("dy", 4, (int64_t[]){n, o, 2 * h, 2 * w}, NULL);
		TEST_OK(starnn_tensor_set_cblock(x, b));
		TEST_OK(starnn_tensor_set_cblock(dy, b));
		TEST_OK(starnn_tensor_write(x, xv));
		TEST_OK(starnn_tensor_write(dy, dyv));
		const int64_t ws[4] = {c, o, 2, 2};
		starnn_tensor *dwa = test_tensor("dwa", 4, ws, NULL), *dwp = test_tensor("dwp", 4, ws, NULL);
		starnn_tensor *dba = test_tensor("dba", 1, &o, NULL), *dbp = test_tensor("dbp", 1, &o, NULL);
		TEST_OK(starnn_tensor_set_wlayout(dwp, NULL));
		struct starnn_blocked_weights L;
		const int blocked = starnn_convt2d_dnnl_dw_layout((size_t)n, (size_t)c, (size_t)o, (size_t)h, (size_t)w,
		                                                  (size_t)b, (size_t)b, STARNN_FP32, rt(), &L);
		char l[24];
		for (int pass = 0; pass < 2; pass++) {
			TEST_OK(starnn_convt2d_bwd_weight(x, dy, pass ? 1.0f : 0.0f, dwa, dba));
			TEST_OK(starnn_convt2d_bwd_weight(x, dy, pass ? 1.0f : 0.0f, dwp, dbp));
			const size_t nw = (size_t)(c * o * 4);
			float *a = test_read(dwa), *p = test_read(dwp);
			TEST_ASSERT(memcmp(a, p, nw * sizeof *a) == 0, "convt2d dw (%s route), beta %d: in %s, not the bits of rows",
			            route ? "direct" : "oneDNN", pass, starnn_wlayout_name(&dwa->wl, l, sizeof l));
			free(a), free(p);
		}
		TEST_ASSERT(dwa->wl_fixed && dwa->wl.ob == (blocked ? L.ob : 0) && dwa->wl.o == (blocked ? (uint32_t)c : 0),
		            "convt2d dw (%s route): in %s, starnn_convt2d_dnnl_dw_layout says %s", route ? "direct" : "oneDNN",
		            starnn_wlayout_name(&dwa->wl, l, sizeof l), blocked ? "a blocked layout" : "rows");
		if (route)
			TEST_ASSERT(!blocked || !starnn_convt2d_direct_ok((size_t)o, (size_t)b),
			            "the direct kernels write rows, yet a blocked layout is named");
		else if (b == 16)
			TEST_ASSERT(blocked && L.ob == 16 && L.ib == 16 && L.i_inner == 0,
			            "oneDNN's AVX-512 deconvolution weight gradient: IOhw16o16i expected");
		starnn_tensor *all[] = {x, dy, dwa, dwp, dba, dbp};
		for (size_t i = 0; i < sizeof all / sizeof *all; i++)
			starnn_tensor_destroy(all[i]);
	}
	TEST_OK(starnn_convt2d_route_set(STARNN_CONVT2D_AUTO));
	/* dy a channel part of a concatenation (samples further apart than a
	 * sample), 2 samples: dw in oneDNN's layout is summed sample by sample
	 * (no copy of dy), against the whole-batch pass into dw kept in rows */
	starnn_tensor *x = test_tensor("x", 4, (int64_t[]){n, c, h, w}, NULL);
	starnn_tensor *big = test_tensor("cat", 4, (int64_t[]){n, 2 * o, 2 * h, 2 * w}, NULL), **halves;
	TEST_OK(starnn_tensor_set_cblock(x, b));
	TEST_OK(starnn_tensor_set_cblock(big, b));
	TEST_OK(starnn_tensor_write(x, xv));
	TEST_OK(starnn_tensor_split(big, 1, 2, NULL, &halves));
	starnn_tensor *dyd = test_tensor("dyd", 4, (int64_t[]){n, o, 2 * h, 2 * w}, NULL);
	TEST_OK(starnn_tensor_set_cblock(dyd, b));
	TEST_OK(starnn_tensor_write(dyd, dyv));
	TEST_OK(starnn_copy(dyd, halves[0]));
	const int64_t ws[4] = {c, o, 2, 2};
	starnn_tensor *dwa = test_tensor("dwa", 4, ws, NULL), *dwp = test_tensor("dwp", 4, ws, NULL);
	starnn_tensor *dba = test_tensor("dba", 1, &o, NULL), *dbp = test_tensor("dbp", 1, &o, NULL);
	TEST_OK(starnn_tensor_set_wlayout(dwp, NULL));
	for (int pass = 0; pass < 2; pass++) {
		TEST_OK(starnn_convt2d_bwd_weight(x, halves[0], pass ? 1.0f : 0.0f, dwa, dba));
		TEST_OK(starnn_convt2d_bwd_weight(x, halves[0], pass ? 1.0f : 0.0f, dwp, dbp));
		float *a = test_read(dwa), *p = test_read(dwp), *da = test_read(dba), *dp = test_read(dbp);
		/* two fp32 sums of the same N terms in different orders differ by
		 * at most 2 N eps sum|term| (each within N eps sum|term| of the
		 * exact sum), times the passes summed (beta 1: twice the terms) */
		const double eps = FLT_EPSILON / 2, k = pass + 1;
		const size_t N = (size_t)(n * h * w), Nb = (size_t)(n * 4 * h * w);
		size_t bad = 0;
		for (size_t ci = 0; ci < (size_t)c; ci++)
			for (size_t oi = 0; oi < (size_t)o; oi++)
				for (size_t t = 0; t < 4; t++) {
					double sa = 0; /* sum of |x dy| over the samples and pixels of this weight */
					for (size_t s0 = 0; s0 < (size_t)n; s0++)
						for (size_t i = 0; i < (size_t)h; i++)
							for (size_t j = 0; j < (size_t)w; j++)
								sa += fabs((double)xv[((s0 * c + ci) * h + i) * w + j] *
								           dyv[((s0 * o + oi) * 2 * h + 2 * i + t / 2) * 2 * w + 2 * j + t % 2]);
					const size_t e = (ci * o + oi) * 4 + t;
					bad += fabs((double)a[e] - p[e]) > 2 * k * (double)N * eps * k * sa;
				}
		for (size_t oi = 0; oi < (size_t)o; oi++) {
			double sa = 0;
			for (size_t q = 0; q < (size_t)(n * 4 * h * w); q++)
				sa += fabs((double)dyv[(q / (4 * h * w) * o + oi) * 4 * h * w + q % (4 * h * w)]);
			bad += fabs((double)da[oi] - dp[oi]) > 2 * k * (double)Nb * eps * k * sa;
		}
		TEST_ASSERT(bad == 0, "convt2d dw from a strided dy, beta %d: %zu elements beyond the bound of two summation "
		            "orders from the rows' pass (%s)", pass, bad, starnn_wlayout_name(&dwa->wl, (char[24]){0}, 24));
		free(a), free(p), free(da), free(dp);
	}
	TEST_ASSERT(b != 16 || dwa->wl.ob == 16, "convt2d dw from a strided dy: not in oneDNN's layout (the path untested)");
	/* fp16 x and dy, widened to fp32 in the task: dw in the fp32 primitive's layout */
	{
		starnn_tensor *xh, *dyh;
		TEST_OK(starnn_tensor_create(&xh, "xh", STARNN_FP16, 4, (int64_t[]){n, c, h, w}));
		TEST_OK(starnn_tensor_create(&dyh, "dyh", STARNN_FP16, 4, (int64_t[]){n, o, 2 * h, 2 * w}));
		TEST_OK(starnn_tensor_set_cblock(xh, b));
		TEST_OK(starnn_tensor_set_cblock(dyh, b));
		TEST_OK(starnn_tensor_write_f32(xh, xv));
		TEST_OK(starnn_tensor_write_f32(dyh, dyv));
		starnn_tensor *ha = test_tensor("dwha", 4, ws, NULL), *hp = test_tensor("dwhp", 4, ws, NULL);
		starnn_tensor *hba = test_tensor("dbha", 1, &o, NULL), *hbp = test_tensor("dbhp", 1, &o, NULL);
		TEST_OK(starnn_tensor_set_wlayout(hp, NULL));
		TEST_OK(starnn_convt2d_bwd_weight_mp(xh, dyh, 0.0f, ha, hba));
		TEST_OK(starnn_convt2d_bwd_weight_mp(xh, dyh, 0.0f, hp, hbp));
		float *a = test_read(ha), *p = test_read(hp);
		TEST_ASSERT(memcmp(a, p, (size_t)(c * o * 4) * sizeof *a) == 0 && (b != 16 || ha->wl.ob == 16),
		            "convt2d dw from fp16 x, dy (widened): in %s, not the bits of rows, or not in oneDNN's layout",
		            starnn_wlayout_name(&ha->wl, (char[24]){0}, 24));
		free(a), free(p);
		starnn_tensor *hs[] = {xh, dyh, ha, hp, hba, hbp};
		for (size_t i = 0; i < sizeof hs / sizeof *hs; i++)
			starnn_tensor_destroy(hs[i]);
	}
	starnn_tensor *rest[] = {x, big, dyd, dwa, dwp, dba, dbp};
	for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
		starnn_tensor_destroy(rest[i]);
	free(xv), free(dyv);
}

/* The backward-data pass reading its weights from the whole blocked copy
 * of w that the optimizers keep (codelets/convt2d.h:
 * starnn_convt2d_bwd_data_dnnl_sliced): at batch 1 and 2 (channel and
 * batch parts), fp32, fp16 and bf16 (native or widened to fp32: then the
 * copy is fp32, of the widened weights), dx bit for bit the pass with
 * packing off, after w is written by a tensor write and by SGD (fp32) or a
 * narrowing convert from fp32 masters (16-bit), which keep the copy: no
 * pack task; the pass does read the copy (garbage written into it shows
 * in dx). */
/* Whether each of n values a is within the bound of two fp32 sums of
 * K terms in different orders of its reference r: 2 K eps sum|term|
 * (mag: the terms' absolute sums); the count of those that are not. */
static size_t outside_bound(size_t n, const float *a, const float *r, const double *mag, size_t K)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += fabs((double)a[i] - (double)r[i]) > 2.0 * (double)K * (FLT_EPSILON / 2) * mag[i];
	return bad;
}

/* Both backward passes together (starnn_convt2d_bwd, _mp) at batch 1, a
 * size the passes alone split in two (channel parts): dx, dw and db
 * against the passes submitted apart, each value within the bound of two
 * summation orders of its own terms (naive loops give the terms' absolute
 * sums); on AVX-512 the whole weight gradient is in oneDNN's layout (one
 * task wrote it), where the pass alone leaves it in rows. NULL tensors
 * are refused. */
static void bwd_both(void)
{
	const int b = starnn_conv2d_dnnl_block(STARNN_FP32);
	const int64_t c = 128, o = 64, h = 48, w = 48;
	const size_t nx = (size_t)(c * h * w), ny = (size_t)(o * 4 * h * w), nw = (size_t)(c * o * 4);
	float *xv = test_random(nx, -1, 1), *dyv = test_random(ny, -1, 1), *wv = test_random(nw, -1, 1);
	starnn_tensor *x = test_tensor("x", 4, (int64_t[]){1, c, h, w}, NULL);
	starnn_tensor *dy = test_tensor("dy", 4, (int64_t[]){1, o, 2 * h, 2 * w}, NULL);
	starnn_tensor *tw = test_tensor("w", 4, (int64_t[]){c, o, 2, 2}, wv);
	starnn_tensor *dx[2], *dw[2], *db[2];
	for (int k = 0; k < 2; k++) {
		dx[k] = test_tensor(k ? "dx_both" : "dx", 4, (int64_t[]){1, c, h, w}, NULL);
		dw[k] = test_tensor(k ? "dw_both" : "dw", 4, (int64_t[]){c, o, 2, 2}, NULL);
		db[k] = test_tensor(k ? "db_both" : "db", 1, &o, NULL);
		if (b > 1)
			TEST_OK(starnn_tensor_set_cblock(dx[k], b));
	}
	if (b > 1) {
		TEST_OK(starnn_tensor_set_cblock(x, b));
		TEST_OK(starnn_tensor_set_cblock(dy, b));
	}
	TEST_OK(starnn_tensor_write_f32(x, xv));
	TEST_OK(starnn_tensor_write_f32(dy, dyv));
	TEST_OK(starnn_convt2d_bwd_data(tw, dy, 0.0f, dx[0]));
	TEST_OK(starnn_convt2d_bwd_weight(x, dy, 0.0f, dw[0], db[0]));
	TEST_OK(starnn_convt2d_bwd_mp(x, dy, tw, 0.0f, dx[1], 0.0f, dw[1], db[1]));
	/* the terms' absolute sums: dx[c, i, j] = sum over o, ki, kj of
	 * w[c, o, ki, kj] dy[o, 2i + ki, 2j + kj]; dw[c, o, ki, kj] = sum over
	 * i, j of x[c, i, j] dy[o, 2i + ki, 2j + kj]; db[o] = sum of dy[o] */
	double *mx = calloc(nx, sizeof *mx), *mw = calloc(nw, sizeof *mw), *mb = calloc((size_t)o, sizeof *mb);
	for (int64_t ci = 0; ci < c; ci++)
		for (int64_t oi = 0; oi < o; oi++)
			for (int64_t t = 0; t < 4; t++) {
				const int64_t ki = t / 2, kj = t % 2;
				const double wa = fabs(wv[(ci * o + oi) * 4 + t]);
				double sw = 0;
				for (int64_t i = 0; i < h; i++)
					for (int64_t j = 0; j < w; j++) {
						const double d = fabs(dyv[(oi * 2 * h + 2 * i + ki) * 2 * w + 2 * j + kj]);
						mx[(ci * h + i) * w + j] += wa * d;
						sw += fabs(xv[(ci * h + i) * w + j]) * d;
					}
				mw[(ci * o + oi) * 4 + t] = sw;
			}
	for (size_t i = 0; i < ny; i++)
		mb[i / (size_t)(4 * h * w)] += fabs(dyv[i]);
	float *a = test_read(dx[1]), *r = test_read(dx[0]);
	size_t bad = outside_bound(nx, a, r, mx, (size_t)(4 * o));
	TEST_ASSERT(bad == 0, "convt2d_bwd: %zu of %zu dx values outside two summation orders of the passes apart", bad, nx);
	free(a), free(r);
	a = test_read(dw[1]), r = test_read(dw[0]);
	bad = outside_bound(nw, a, r, mw, (size_t)(h * w));
	TEST_ASSERT(bad == 0, "convt2d_bwd: %zu of %zu dw values outside two summation orders of the pass apart", bad, nw);
	free(a), free(r);
	a = test_read(db[1]), r = test_read(db[0]);
	bad = outside_bound((size_t)o, a, r, mb, (size_t)(4 * h * w));
	TEST_ASSERT(bad == 0, "convt2d_bwd: %zu of %lld db values outside two summation orders of the pass apart", bad,
	            (long long)o);
	free(a), free(r);
	struct starnn_blocked_weights L;
	char l[24], l0[24];
	if (b == 16 && starnn_split_width() > 1 &&
	    starnn_convt2d_dnnl_dw_layout(1, (size_t)c, (size_t)o, (size_t)h, (size_t)w, 16, 16, STARNN_FP32, rt(), &L))
		TEST_ASSERT(dw[1]->wl.ob == L.ob && dw[0]->wl.ob == 0,
		            "convt2d_bwd at batch 1: dw in %s (oneDNN's layout expected: one task writes it), the pass "
		            "alone in %s (rows expected: two channel parts)",
		            starnn_wlayout_name(&dw[1]->wl, l, sizeof l), starnn_wlayout_name(&dw[0]->wl, l0, sizeof l0));
	TEST_ASSERT(starnn_convt2d_bwd_mp(x, dy, tw, 0.0f, NULL, 0.0f, dw[1], db[1]) == STARNN_EINVAL,
	            "convt2d_bwd: no dx accepted");
	/* a bad weight-gradient side refuses the call before the data
	 * gradient is submitted (dx += ... would change dx) */
	int64_t o1 = o + 1;
	starnn_tensor *dbad = test_tensor("db_bad", 1, &o1, NULL);
	float *before = test_read(dx[1]);
	TEST_ASSERT(starnn_convt2d_bwd(x, dy, tw, 1.0f, dx[1], 0.0f, dw[1], dbad) == STARNN_EINVAL,
	            "convt2d_bwd: a bias gradient of the wrong size accepted");
	float *after = test_read(dx[1]);
	TEST_ASSERT(memcmp(before, after, nx * sizeof *after) == 0, "convt2d_bwd: a refused call changed dx");
	free(before), free(after);
	starnn_tensor_destroy(dbad);
	TEST_ASSERT(starnn_convt2d_bwd(x, dy, tw, 0.0f, dx[1], 0.0f, dw[1], NULL) == STARNN_EINVAL,
	            "convt2d_bwd: no db accepted");
	free(xv), free(dyv), free(wv), free(mx), free(mw), free(mb);
	starnn_tensor *all[] = {x, dy, tw, dx[0], dx[1], dw[0], dw[1], db[0], db[1]};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
}

static void pass_copies(int fwd, starnn_dtype dt, int64_t n);
static void bwd_data_copies(starnn_dtype dt, int64_t n)
{
	pass_copies(0, dt, n);
}

/* The same for the forward, whose copy is in the layout of its 1x1
 * convolution [4o, c] (a layout of w's transpose: runtime/core/tensor.h trans),
 * its channel parts at batch 1 reading slices of output channels. */
static void fwd_copies(starnn_dtype dt, int64_t n)
{
	pass_copies(1, dt, n);
}

static void pass_copies(int fwd, starnn_dtype dt, int64_t n)
{
	const int b = starnn_conv2d_dnnl_block(STARNN_FP32);
	if (b < 16)
		return;
	const int64_t c = 128, o = 64, h = 48;
	char what[96];
	snprintf(what, sizeof what, "convt2d %s %s, batch %lld, from the blocked copy", fwd ? "fwd" : "bwd_data",
	         starnn_dtype_name(dt), (long long)n);
	/* fwd: dy is x [n, c, h, w], dxa / dxr are y [n, o, 2h, 2w] */
	const int64_t in_c = fwd ? c : o, in_h = fwd ? h : 2 * h, out_c = fwd ? o : c, out_h = fwd ? 2 * h : h;
	const size_t nx = (size_t)(n * out_c * out_h * out_h);
	float *wv = test_random((size_t)(c * o * 4), -1, 1), *dyv = test_random((size_t)(n * in_c * in_h * in_h), -1, 1);
	float *bv = test_random((size_t)o, -1, 1);
	starnn_tensor *tw, *dy, *dxa, *dxr, *tb = test_tensor("b", 1, &o, bv);
	TEST_OK(starnn_tensor_create(&tw, "w", dt, 4, (int64_t[]){c, o, 2, 2}));
	TEST_OK(starnn_tensor_create(&dy, "dy", dt, 4, (int64_t[]){n, in_c, in_h, in_h}));
	TEST_OK(starnn_tensor_create(&dxa, "dxa", dt, 4, (int64_t[]){n, out_c, out_h, out_h}));
	TEST_OK(starnn_tensor_create(&dxr, "dxr", dt, 4, (int64_t[]){n, out_c, out_h, out_h}));
	TEST_OK(starnn_tensor_set_cblock(dy, b));
	TEST_OK(starnn_tensor_set_cblock(dxa, b));
	TEST_OK(starnn_tensor_set_cblock(dxr, b));
	TEST_OK(starnn_tensor_write_f32(tw, wv));
	TEST_OK(starnn_tensor_write_f32(dy, dyv));
	float *a = malloc(nx * sizeof *a), *r = malloc(nx * sizeof *r);
	starnn_tensor *g = NULL, *buf = NULL;
	for (int round = 0; round < 4; round++) {
		starnn_conv2d_pack_set(STARNN_CONV2D_PACK_OFF);
		TEST_OK(fwd ? starnn_convt2d_fwd_mp(dy, tw, tb, dxr) : starnn_convt2d_bwd_data_mp(tw, dy, 0.0f, dxr));
		starnn_conv2d_pack_set(STARNN_CONV2D_PACK_ON);
		const uint64_t packs = starnn_conv2d_pack_count();
		TEST_OK(fwd ? starnn_convt2d_fwd_mp(dy, tw, tb, dxa) : starnn_convt2d_bwd_data_mp(tw, dy, 0.0f, dxa));
		TEST_OK(starnn_tensor_read_f32(dxa, a));
		TEST_OK(starnn_tensor_read_f32(dxr, r));
		if (round < 3) {
			TEST_ASSERT(memcmp(a, r, nx * sizeof *a) == 0, "%s, round %d: dx not the bits of packing off", what,
			            round);
			TEST_ASSERT(tw->nderived == 1 && tw->derived[0].d, "%s: no whole copy of w kept", what);
			TEST_ASSERT(starnn_conv2d_pack_count() - packs == (round == 2 ? 0u : 1u),
			            "%s, round %d: %llu pack tasks (the copy is made again after a write of w, kept by SGD)",
			            what, round, (unsigned long long)(starnn_conv2d_pack_count() - packs));
		} else {
			TEST_ASSERT(memcmp(a, r, nx * sizeof *a) != 0, "%s: garbage in the copy left dx unchanged (not read)",
			            what);
		}
		if (round == 0) { /* w written by a write: the copy is made again */
			for (size_t i = 0; i < (size_t)(c * o * 4); i++)
				wv[i] *= -0.5f;
			TEST_OK(starnn_tensor_write_f32(tw, wv));
		} else if (round == 1 && dt == STARNN_FP32) { /* by SGD, which writes the copy too */
			g = test_tensor("g", 4, (int64_t[]){c, o, 2, 2}, wv);
			buf = test_tensor("buf", 4, (int64_t[]){c, o, 2, 2}, NULL);
			struct starnn_sgd_params sp = {0.1f, 0.0f, 0.0f, 0.0f, 0};
			TEST_OK(starnn_sgd(tw, g, buf, &sp, 1, 1.0f));
		} else if (round == 1) { /* 16-bit w: by a narrowing convert from fp32 masters, which writes the copy */
			for (size_t i = 0; i < (size_t)(c * o * 4); i++)
				wv[i] *= 0.75f;
			g = test_tensor("master", 4, (int64_t[]){c, o, 2, 2}, wv);
			TEST_OK(starnn_convert(g, tw));
		} else if (round == 2) { /* garbage into the copy's data, w's version unchanged */
			starnn_tensor *cp = tw->derived[0].d;
			unsigned char *bytes = malloc(cp->cols);
			TEST_OK(starnn_tensor_read(cp, bytes));
			const size_t at = (size_t)((unsigned char *)starnn_blocked_weights_data(&tw->derived[0].layout, cp->host) -
			                           (unsigned char *)cp->host);
			for (size_t i = at; i < cp->cols; i++)
				bytes[i] = (unsigned char)(i * 37u + 11u);
			TEST_OK(starnn_tensor_write(cp, bytes));
			free(bytes);
		}
	}
	free(a), free(r), free(wv), free(dyv), free(bv);
	starnn_tensor *all[] = {tw, dy, dxa, dxr, g, buf, tb};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
}

int main(void)
{
	test_init();
	cuda_half_switch();
	/* CPU: both kernel sets where starnn has oneDNN, directly and through
	 * the codelets; CUDA: cuBLAS. */
	enum starnn_conv2d_backend sets[2] = {STARNN_CONV2D_IM2COL, STARNN_CONV2D_DNNL};
	int nsets = TEST_ON_DEVICE ? 1 : 1 + (starnn_conv2d_cpu_backend_set(STARNN_CONV2D_DNNL) == 0);
	for (int set = 0; set < nsets; set++) {
		kernels = sets[set];
		if (!TEST_ON_DEVICE) {
			TEST_OK(starnn_conv2d_cpu_backend_set(kernels));
			hc_exact_cpu = kernels == STARNN_CONV2D_IM2COL;
			printf("CPU kernels: %s\n", KNAME);
		}
		if (!TEST_ON_DEVICE) {
			kernels_vs_naive((struct shape){1, 1, 1, 1, 1}, 0);
			kernels_vs_naive((struct shape){2, 3, 5, 4, 6}, 3);
			kernels_vs_naive((struct shape){3, 16, 8, 7, 5}, 1);
			kernels_vs_naive((struct shape){1, 5, 32, 40, 64}, 2);  /* several row tiles, a short last one */
			kernels_vs_naive((struct shape){2, 64, 32, 16, 16}, 0); /* K = 64 */
			kernels_vs_naive((struct shape){1, 7, 3, 3, 9}, 4);
			finite_differences((struct shape){2, 3, 2, 3, 4});
			finite_differences((struct shape){1, 5, 3, 2, 2});
			if (set == 0)
				direct_kernels();
			else {
				dw_layouts();
				bwd_both();
				for (int64_t nb = 1; nb <= 2; nb++) {
					for (int t = 0; t < 3; t++) {
						bwd_data_copies((starnn_dtype)t, nb);
						fwd_copies((starnn_dtype)t, nb);
					}
				}
			}
		}
		codelets_vs_kernels((struct shape){1, 3, 5, 1, 1});
		codelets_vs_kernels((struct shape){2, 5, 3, 3, 7});
		codelets_vs_kernels((struct shape){4, 16, 8, 8, 8});
		codelets_vs_kernels((struct shape){8, 8, 4, 16, 16});
		codelets_vs_kernels((struct shape){1, 32, 16, 32, 32});
		codelets_vs_kernels((struct shape){3, 7, 6, 12, 5});
		/* large enough for the submit functions to split: channels at batch 1,
		 * the batch (uneven parts) at batch 3 */
		codelets_vs_kernels((struct shape){1, 128, 64, 48, 48});
		codelets_vs_kernels((struct shape){3, 64, 64, 32, 32});
		bad_shapes();
		for (int t = 0; t < 2; t++) {
			starnn_dtype dt = t ? STARNN_BF16 : STARNN_FP16;
			half_vs_fp32(2, 5, 3, 3, 7, dt);
			half_vs_fp32(4, 16, 8, 8, 8, dt);
			half_vs_fp32(1, 32, 16, 32, 32, dt);
			half_vs_fp32(1, 128, 64, 48, 48, dt); /* channel splits */
		}
		/* CUDA: both modes of the 16-bit codelets (CPU: the mode is ignored,
		 * once, with the GEMM kernels); odd channels, batch 1 and > 1, views,
		 * the submit functions' splits (batch: x, y, dx, dy parts; channels:
		 * w, b, dw, db parts with ld > cols) */
		const enum starnn_cuda_half_conv modes[2] = {STARNN_CUDA_HALF_WIDEN, STARNN_CUDA_HALF_NATIVE};
		const struct shape mode_shapes[] = {
			{1, 3, 5, 1, 1},   {2, 5, 3, 3, 7},      {3, 7, 6, 12, 5}, {1, 13, 7, 9, 11},
			{3, 64, 64, 32, 32}, /* batch splits (bwd_weight: channels) */
			{1, 128, 64, 48, 48}, /* channel splits */
		};
		const int views[] = {0, 1, 1, 0, 1, 0};
		for (int m = 0; m < (TEST_ON_CUDA ? 2 : 1) && set == 0; m++) {
			TEST_OK(starnn_cuda_half_conv_set(modes[m]));
			for (int t = 0; t < 2; t++)
				for (size_t i = 0; i < sizeof mode_shapes / sizeof *mode_shapes; i++)
					half_mode_vs_cpu(mode_shapes[i], t ? STARNN_BF16 : STARNN_FP16, views[i]);
		}
		TEST_OK(starnn_cuda_half_conv_set(STARNN_CUDA_HALF_WIDEN));
	}
	return test_finish();
}
