/* maxpool (2x2, stride 2): the CPU kernels against naive loops on dense and
 * strided data (ties, negative values, -inf, NaN, odd sizes), the backward
 * against central finite differences (distinct values, away from ties), the
 * codelets (CPU, or CUDA in the _cuda build) against the naive loops on
 * shapes across the UNet's range and on batch / channel partitions, the
 * 16-bit variants, and the shape checks.
 *
 * Tolerances: everything is exact but the finite differences. The forward
 * selects and copies; the backward routes dy and computes beta * dx + v
 * with beta 0, 0.5 or 1: powers of two, so beta * dx is exact and the sum
 * is rounded once, whether or not a compiler fuses it into an FMA (nvcc
 * does): the same bits on CPU and CUDA (it was 1e-6 on CUDA). The 16-bit
 * variants pick and route the same values and round that one fp32 sum
 * once: exactly the fp32 result rounded to the type. Finite differences:
 * the objective is linear in each x between ties (values 1e-2 apart, step
 * 1e-3), so the difference quotient is exact but for the double sums of
 * the objective, bounded per element (fd_bound).
 *
 * Bits: except on CUDA, the codelets' results are also the CPU kernels'
 * bit for bit, in fp32, fp16 and bf16, on data with ties, NaN, +-Inf and
 * -0, with betas that round (same_bits_as_cpu). */
#include "codelets/axpy.h"
#include "codelets/kernels/maxpool.h"
#include "codelets/maxpool.h"
#include "tests/testlib.h"
#include "tests/codelets/halfcheck.h"
#include "tests/codelets/simdcheck.h"

/* The definition: the window in row-major order, the first strict maximum,
 * a NaN replacing whatever came before (PyTorch's CPU rule). Returns the
 * offset (di * 2 + dj) of the chosen element. */
static int naive_pick(const float *x, size_t w, size_t i, size_t j, float *val)
{
	float best = -INFINITY;
	int arg = 0;
	for (int di = 0; di < 2; di++)
		for (int dj = 0; dj < 2; dj++) {
			float v = x[(2 * i + di) * w + 2 * j + dj];
			if (isnan(v) || v > best) {
				best = v;
				arg = di * 2 + dj;
			}
		}
	*val = best;
	return arg;
}

/* x, dx: n x (c h w) with ld lx; y, dy: n x (c ho wo) with ld ly. */
static void naive_fwd(size_t n, size_t c, size_t h, size_t w, const float *x, size_t lx, float *y, size_t ly)
{
	size_t ho = h / 2, wo = w / 2;
	for (size_t r = 0; r < n; r++)
		for (size_t ch = 0; ch < c; ch++)
			for (size_t i = 0; i < ho; i++)
				for (size_t j = 0; j < wo; j++)
					naive_pick(x + r * lx + ch * h * w, w, i, j, &y[r * ly + (ch * ho + i) * wo + j]);
}

static void naive_bwd(size_t n, size_t c, size_t h, size_t w, const float *x, size_t lx, const float *dy, size_t ly,
                      float beta, float *dx)
{
	size_t ho = h / 2, wo = w / 2;
	for (size_t r = 0; r < n; r++)
		for (size_t ch = 0; ch < c; ch++) {
			float *d = dx + r * lx + ch * h * w;
			for (size_t k = 0; k < h * w; k++)
				d[k] = beta == 0.0f ? 0.0f : beta * d[k];
			for (size_t i = 0; i < ho; i++)
				for (size_t j = 0; j < wo; j++) {
					float v;
					int k = naive_pick(x + r * lx + ch * h * w, w, i, j, &v);
					d[(2 * i + k / 2) * w + 2 * j + k % 2] += dy[r * ly + (ch * ho + i) * wo + j];
				}
		}
}

/* Values on a coarse grid of negatives and positives: many ties. */
static float *tie_data(size_t n)
{
	float *p = test_random(n, 0, 1);
	for (size_t i = 0; i < n; i++)
		p[i] = floorf(p[i] * 5.0f) * 0.5f - 1.5f; /* -1.5 .. 0.5 */
	return p;
}

static void kernels_vs_naive(size_t n, size_t c, size_t h, size_t w, size_t pad)
{
	size_t ho = h / 2, wo = w / 2, lx = c * h * w + pad, ly = c * ho * wo + pad;
	float *x = tie_data(n * lx), *y = test_random(n * ly, -1, 1), *yref = malloc(n * ly * sizeof *yref);
	memcpy(yref, y, n * ly * sizeof *y);
	if (n * c * h * w > 5) { /* a few special values */
		x[1] = -INFINITY;
		x[3] = NAN;
		x[4] = INFINITY;
	}
	starnn_maxpool_fwd_cpu(n, c, h, w, x, lx, y, ly);
	naive_fwd(n, c, h, w, x, lx, yref, ly);
	char what[96];
	snprintf(what, sizeof what, "fwd_cpu %zux%zux%zux%zu pad %zu", n, c, h, w, pad);
	/* NaN == NaN here (both NaN at the same places), and equal infinities
	 * are equal (test_close would see inf - inf = NaN). */
	int nan_ok = 1;
	for (size_t i = 0; i < n * ly; i++)
		if (isnan(y[i]) != isnan(yref[i]))
			nan_ok = 0;
		else if (isnan(y[i]) || (isinf(y[i]) && y[i] == yref[i]))
			y[i] = yref[i] = 0;
	TEST_ASSERT(nan_ok, "%s: NaN in different places", what);
	test_close(what, y, yref, n * ly, 0, 0); /* padding untouched too */

	float *dy = test_random(n * ly, -1, 1);
	for (int t = 0; t < 2; t++) {
		float beta = t ? 0.5f : 0.0f;
		float *dx = test_random(n * lx, -1, 1), *dref = malloc(n * lx * sizeof *dref);
		if (beta == 0.0f) /* must not be read */
			for (size_t r = 0; r < n; r++)
				for (size_t k = 0; k < c * h * w; k++)
					dx[r * lx + k] = NAN;
		memcpy(dref, dx, n * lx * sizeof *dx);
		starnn_maxpool_bwd_cpu(n, c, h, w, x, lx, dy, ly, beta, dx, lx);
		naive_bwd(n, c, h, w, x, lx, dy, ly, beta, dref);
		snprintf(what, sizeof what, "bwd_cpu beta %g %zux%zux%zux%zu pad %zu", beta, n, c, h, w, pad);
		for (size_t i = 0; i < n * lx; i++) /* the padding keeps its NaN on both sides */
			if (isnan(dx[i]) && isnan(dref[i]))
				dx[i] = dref[i] = 0;
		test_close(what, dx, dref, n * lx, 0, 0);
		free(dx), free(dref);
	}
	free(x), free(y), free(yref), free(dy);
}

/* The rule on hand-made windows: ties, NaN, -inf. */
static void special_windows(void)
{
	/* 4 windows side by side in a 2 x 8 plane. */
	float x[16] = {
		1, 2, /**/ 3, NAN, /**/ -INFINITY, -INFINITY, /**/ -1, -1,
		2, 2, /**/ NAN, 9, /**/ -INFINITY, -INFINITY, /**/ -1, -2,
	};
	float y[4], dy[4] = {10, 20, 30, 40}, dx[16];
	starnn_maxpool_fwd_cpu(1, 1, 2, 8, x, 16, y, 4);
	TEST_ASSERT(y[0] == 2 && isnan(y[1]) && y[2] == -INFINITY && y[3] == -1, "special windows fwd: %g %g %g %g",
	            y[0], y[1], y[2], y[3]);
	starnn_maxpool_bwd_cpu(1, 1, 2, 8, x, 16, dy, 4, 0.0f, dx, 16);
	/* first max of the tie 2/2/2 (position 1), the last NaN (position 2 of
	 * window 1), the first -inf, the first -1. */
	float want[16] = {0, 10, 0, 0, 30, 0, 40, 0, 0, 0, 20, 0, 0, 0, 0, 0};
	test_close("special windows bwd", dx, want, 16, 0, 0);
}

/* ------------------------------------------------------ finite differences */

struct fd_ctx {
	size_t n, c, h, w;
	const float *r; /* the objective's weights on y */
	float *y;
};

static double objective(const float *x, void *vctx)
{
	struct fd_ctx *ctx = vctx;
	size_t ny = ctx->n * ctx->c * (ctx->h / 2) * (ctx->w / 2);
	starnn_maxpool_fwd_cpu(ctx->n, ctx->c, ctx->h, ctx->w, x, ctx->c * ctx->h * ctx->w, ctx->y,
	                       ctx->c * (ctx->h / 2) * (ctx->w / 2));
	double s = 0;
	for (size_t i = 0; i < ny; i++)
		s += (double)ctx->r[i] * ctx->y[i];
	return s;
}

static void finite_differences(size_t n, size_t c, size_t h, size_t w)
{
	size_t nx = n * c * h * w, ny = n * c * (h / 2) * (w / 2);
	/* Distinct values 0.01 apart, shuffled: no ties, margins >> step. */
	float *x = malloc(nx * sizeof *x);
	for (size_t i = 0; i < nx; i++)
		x[i] = (float)i * 0.01f - 1.0f;
	for (size_t i = nx - 1; i > 0; i--) {
		size_t j = (size_t)test_uniform(0, (float)(i + 1));
		if (j > i)
			j = i;
		float t = x[i];
		x[i] = x[j], x[j] = t;
	}
	float *r = test_random(ny, -1, 1), *dx = malloc(nx * sizeof *dx);
	double *fd = malloc(nx * sizeof *fd), *bound = malloc(nx * sizeof *bound);
	struct fd_ctx ctx = {n, c, h, w, r, malloc(ny * sizeof(float))};
	starnn_maxpool_bwd_cpu(n, c, h, w, x, c * h * w, r, c * (h / 2) * (w / 2), 0.0f, dx, c * h * w);
	/* fd_bound: L = sum r y (exact products of floats) in double at the two
	 * points, each within ny 2^-53 sum |r y| (|y| <= max|x| + h), over the
	 * step taken, and the quotient's own rounding; the analytic dx (r or
	 * 0, a copy) is exact. */
	const double h1 = 1e-3;
	double sry = 0, xmax = 0;
	for (size_t i = 0; i < nx; i++)
		xmax = fmax(xmax, fabs((double)x[i]));
	for (size_t i = 0; i < ny; i++)
		sry += fabs((double)r[i]) * (xmax + h1);
	for (size_t i = 0; i < nx; i++) {
		float xi = x[i], xp = (float)(xi + h1), xm = (float)(xi - h1);
		fd[i] = test_fd(objective, x, i, h1, &ctx);
		bound[i] = 2 * (double)ny * TEST_U64 * sry / ((double)xp - (double)xm) + 2 * TEST_U64 * fabs(fd[i]);
	}
	char what[64];
	snprintf(what, sizeof what, "bwd vs finite differences %zux%zux%zux%zu", n, c, h, w);
	test_close_bound(what, dx, fd, bound, nx);
	free(x), free(r), free(dx), free(fd), free(bound), free(ctx.y);
}

/* ----------------------------------------------------------------- codelets */

static void codelets_vs_naive(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t xs[4] = {n, c, h, w}, ys[4] = {n, c, h / 2, w / 2};
	size_t nx = (size_t)(n * c * h * w), ny = (size_t)(n * c * (h / 2) * (w / 2));
	size_t lx = nx / (size_t)n, ly = ny / (size_t)n;
	float *x = tie_data(nx), *dy = test_random(ny, -1, 1), *dx0 = test_random(nx, -1, 1);
	starnn_tensor *tx = test_tensor("x", 4, xs, x), *ty = test_tensor("y", 4, ys, NULL);
	starnn_tensor *tdy = test_tensor("dy", 4, ys, dy), *tdx = test_tensor("dx", 4, xs, dx0);
	float *yref = malloc(ny * sizeof *yref), *dref = malloc(nx * sizeof *dref);
	naive_fwd((size_t)n, (size_t)c, (size_t)h, (size_t)w, x, lx, yref, ly);
	memcpy(dref, dx0, nx * sizeof *dref);
	naive_bwd((size_t)n, (size_t)c, (size_t)h, (size_t)w, x, lx, dy, ly, 0.5f, dref);

	TEST_OK(starnn_maxpool_fwd(tx, ty));
	TEST_OK(starnn_maxpool_bwd(tx, tdy, 0.5f, tdx));
	float *gy = test_read(ty), *gdx = test_read(tdx);
	char what[96];
	snprintf(what, sizeof what, "fwd codelet %lldx%lldx%lldx%lld", (long long)n, (long long)c, (long long)h,
	         (long long)w);
	test_close(what, gy, yref, ny, 0, 0);
	snprintf(what, sizeof what, "bwd codelet beta 0.5 %lldx%lldx%lldx%lld", (long long)n, (long long)c, (long long)h,
	         (long long)w);
	test_close(what, gdx, dref, nx, 0, 0); /* beta 0.5: one rounding, exact on CUDA too */
	free(gy), free(gdx);

	/* On partitions: channel halves for the forward (the parts are strided
	 * views), micro-batches with beta = 0 for the backward. */
	if (c >= 2) {
		int64_t sizes[2] = {1, c - 1};
		starnn_tensor **xp, **yp;
		TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &xp));
		TEST_OK(starnn_tensor_split(ty, 1, 2, sizes, &yp));
		TEST_OK(starnn_scale(0.0f, ty));
		for (int p = 0; p < 2; p++)
			TEST_OK(starnn_maxpool_fwd(xp[p], yp[p]));
		gy = test_read(ty);
		snprintf(what, sizeof what, "fwd codelet on channel parts, c %lld", (long long)c);
		test_close(what, gy, yref, ny, 0, 0);
		free(gy);
	}
	if (n >= 2) {
		starnn_tensor **xp, **dyp, **dxp;
		TEST_OK(starnn_tensor_split(tx, 0, 2, NULL, &xp));
		TEST_OK(starnn_tensor_split(tdy, 0, 2, NULL, &dyp));
		TEST_OK(starnn_tensor_split(tdx, 0, 2, NULL, &dxp));
		for (int p = 0; p < 2; p++)
			TEST_OK(starnn_maxpool_bwd(xp[p], dyp[p], 0.0f, dxp[p]));
		naive_bwd((size_t)n, (size_t)c, (size_t)h, (size_t)w, x, lx, dy, ly, 0.0f, dref);
		gdx = test_read(tdx);
		snprintf(what, sizeof what, "bwd codelet beta 0 on batch parts, n %lld", (long long)n);
		test_close(what, gdx, dref, nx, 0, 0);
		free(gdx);
	}
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tdy), starnn_tensor_destroy(tdx);
	free(x), free(dy), free(dx0), free(yref), free(dref);
}

/* The _mp codelets (fp32, fp16, bf16 data) against the _mp CPU kernels on
 * the same bit patterns: the forward and the backward with beta, bit for
 * bit (OpenCL runs the CPU kernels' selects and arithmetic; not CUDA). */
static void same_bits_as_cpu(starnn_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, float beta)
{
	if (TEST_ON_CUDA)
		return;
	int64_t xs[4] = {n, c, h, w}, ys[4] = {n, c, h / 2, w / 2};
	size_t nx = (size_t)(n * c * h * w), ny = (size_t)(n * c * (h / 2) * (w / 2)), es = sc_es(dt);
	float *t = tie_data(nx);
	void *x = sc_rounded(dt, t, nx), *dy = sc_random(dt, ny, -1, 1), *dx0 = sc_random(dt, nx, -1, 1);
	if (nx > 10)
		sc_put(dt, x, 1, -INFINITY), sc_put(dt, x, 3, NAN), sc_put(dt, x, 4, INFINITY), sc_put(dt, x, 9, -0.0f);
	sc_put(dt, dy, 0, -0.0f), sc_put(dt, dx0, 0, -0.0f);
	if (w & 1) /* in the odd last column: beta * -0 + 0 is +0 */
		sc_put(dt, dx0, (size_t)w - 1, -0.0f);
	starnn_tensor *tx, *ty, *tdy, *tdx;
	TEST_OK(starnn_tensor_create(&tx, "x", dt, 4, xs));
	TEST_OK(starnn_tensor_create(&ty, "y", dt, 4, ys));
	TEST_OK(starnn_tensor_create(&tdy, "dy", dt, 4, ys));
	TEST_OK(starnn_tensor_create(&tdx, "dx", dt, 4, xs));
	TEST_OK(starnn_tensor_write(tx, x));
	TEST_OK(starnn_tensor_write(tdy, dy));
	TEST_OK(starnn_tensor_write(tdx, dx0));
	TEST_OK(starnn_maxpool_fwd_mp(tx, ty));
	TEST_OK(starnn_maxpool_bwd_mp(tx, tdy, beta, tdx));
	void *gy = malloc(ny * es), *gdx = malloc(nx * es), *wy = sc_random(dt, ny, -1, 1), *wdx = sc_dup(dt, dx0, nx);
	TEST_OK(starnn_tensor_read(ty, gy));
	TEST_OK(starnn_tensor_read(tdx, gdx));
	size_t lx = nx / (size_t)n, ly = ny / (size_t)n;
	starnn_maxpool_fwd_mp_cpu(dt, (size_t)n, (size_t)c, (size_t)h, (size_t)w, x, lx, wy, ly);
	starnn_maxpool_bwd_mp_cpu(dt, (size_t)n, (size_t)c, (size_t)h, (size_t)w, x, lx, dy, ly, beta, wdx, lx);
	char what[128];
	snprintf(what, sizeof what, "fwd codelet %s %lldx%lldx%lldx%lld vs the CPU kernel's bits", starnn_dtype_name(dt),
	         (long long)n, (long long)c, (long long)h, (long long)w);
	test_same_bits(what, gy, wy, ny, es);
	snprintf(what, sizeof what, "bwd codelet %s %lldx%lldx%lldx%lld beta %g vs the CPU kernel's bits",
	         starnn_dtype_name(dt), (long long)n, (long long)c, (long long)h, (long long)w, beta);
	test_same_bits(what, gdx, wdx, nx, es);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tdy), starnn_tensor_destroy(tdx);
	free(t), free(x), free(dy), free(dx0), free(gy), free(gdx), free(wy), free(wdx);
}

static void bad_shapes(void)
{
	starnn_tensor *x, *y, *yodd, *y2, *x1, *y1, *h16, *dxbad;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 4, 2, 3, 8, 6));
	TEST_OK(starnn_tensor_new(&y, "y", STARNN_FP32, 4, 2, 3, 4, 3));
	TEST_OK(starnn_tensor_new(&yodd, "y", STARNN_FP32, 4, 2, 3, 4, 4));
	TEST_OK(starnn_tensor_new(&y2, "y", STARNN_FP32, 4, 2, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&x1, "x1", STARNN_FP32, 4, 2, 3, 1, 6));
	TEST_OK(starnn_tensor_new(&y1, "y1", STARNN_FP32, 4, 2, 3, 1, 3));
	TEST_OK(starnn_tensor_new(&h16, "h", STARNN_FP16, 4, 2, 3, 4, 3));
	TEST_OK(starnn_tensor_new(&dxbad, "dx", STARNN_FP32, 4, 2, 3, 8, 7));
	TEST_ASSERT(starnn_maxpool_fwd(x, yodd) == STARNN_EINVAL, "wrong output width accepted");
	TEST_ASSERT(starnn_maxpool_fwd(x, y2) == STARNN_EINVAL, "wrong channel count accepted");
	TEST_ASSERT(starnn_maxpool_fwd(x1, y1) == STARNN_EINVAL, "height 1 accepted");
	TEST_ASSERT(starnn_maxpool_fwd(x, h16) == STARNN_EINVAL, "fp16 accepted");
	TEST_ASSERT(starnn_maxpool_fwd(y, x) == STARNN_EINVAL, "swapped arguments accepted");
	TEST_ASSERT(starnn_maxpool_bwd(x, y, 0.0f, dxbad) == STARNN_EINVAL, "dx of a wrong shape accepted");
	TEST_ASSERT(starnn_maxpool_bwd(x, yodd, 1.0f, x) == STARNN_EINVAL, "dy of a wrong shape accepted");
	TEST_OK(starnn_maxpool_fwd(x, y)); /* the good one passes */
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(x), starnn_tensor_destroy(y), starnn_tensor_destroy(yodd), starnn_tensor_destroy(y2);
	starnn_tensor_destroy(x1), starnn_tensor_destroy(y1), starnn_tensor_destroy(h16), starnn_tensor_destroy(dxbad);
}

/* ------------------------------------------------------ mixed precision
 * starnn_maxpool_*_mp on fp16 / bf16 data against the fp32 codelets on the
 * same values: the forward and the backward with beta 0 are exact (the same
 * values are picked and routed), the backward with beta 1 rounds one exact
 * fp32 sum once: exactly the fp32 result rounded to dt (half_exact). */
static void half_exact(const char *what, starnn_dtype dt, const float *got, const float *ref, size_t n)
{
	float *r = malloc((n + 1) * sizeof *r);
	for (size_t i = 0; i < n; i++)
		r[i] = hc_round1(dt, ref[i]);
	char label[160];
	snprintf(label, sizeof label, "%s (%s)", what, starnn_dtype_name(dt));
	test_close(label, got, r, n, 0, 0);
	free(r);
}

static void half_vs_fp32(int64_t n, int64_t c, int64_t h, int64_t w, starnn_dtype dt)
{
	int64_t xs[4] = {n, c, h, w}, ys[4] = {n, c, h / 2, w / 2};
	size_t nx = (size_t)(n * c * h * w), ny = (size_t)(n * c * (h / 2) * (w / 2));
	float *x = hc_random(dt, nx, -1, 1), *dy = hc_random(dt, ny, -1, 1), *dx0 = hc_random(dt, nx, -1, 1);
	starnn_tensor *t[2][5];
	for (int k = 0; k < 2; k++) {
		starnn_dtype d = k ? dt : STARNN_FP32;
		t[k][0] = hc_tensor("x", d, 4, xs, x), t[k][1] = hc_tensor("y", d, 4, ys, NULL);
		t[k][2] = hc_tensor("dy", d, 4, ys, dy), t[k][3] = hc_tensor("dx", d, 4, xs, dx0);
		t[k][4] = hc_tensor("dxz", d, 4, xs, NULL);
		TEST_OK(starnn_maxpool_fwd_mp(t[k][0], t[k][1]));
		TEST_OK(starnn_maxpool_bwd_mp(t[k][0], t[k][2], 1.0f, t[k][3]));
		TEST_OK(starnn_maxpool_bwd_mp(t[k][0], t[k][2], 0.0f, t[k][4]));
	}
	const char *names[5] = {"", "maxpool_fwd_mp", "", "maxpool_bwd_mp beta 1", "maxpool_bwd_mp beta 0"};
	for (int i = 1; i < 5; i++) {
		if (i == 2)
			continue;
		float *r = test_read(t[0][i]), *g = test_read(t[1][i]);
		char what[96];
		snprintf(what, sizeof what, "%s %lldx%lldx%lldx%lld", names[i], (long long)n, (long long)c, (long long)h,
		         (long long)w);
		half_exact(what, dt, g, r, i == 1 ? ny : nx);
		free(r), free(g);
	}
	TEST_ASSERT(starnn_maxpool_fwd_mp(t[1][0], t[0][1]) == STARNN_EINVAL, "maxpool_fwd_mp: mixed dtypes");
	TEST_ASSERT(starnn_maxpool_fwd(t[1][0], t[1][1]) == STARNN_EINVAL, "maxpool_fwd: 16-bit");
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 5; i++)
			starnn_tensor_destroy(t[k][i]);
	free(x), free(dy), free(dx0);
}

/* ----------------------------------- instruction-set levels, 16-bit kernels
 * The _mp kernels on data of dt against the fp32 kernels on the same values
 * widened (outputs bitwise the fp32 results rounded once), at every
 * instruction-set level, and every level bitwise equal to the generic
 * level. Data with ties, NaN and +-Inf; rows padded (padding untouched);
 * widths beyond the kernels' block of 128 windows, odd sizes. */
static void mp_kernels(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, size_t pad, float beta)
{
	const size_t ho = h / 2, wo = w / 2, lx = c * h * w + pad, ly = c * ho * wo + pad, es = sc_es(dt);
	char what[160];
	snprintf(what, sizeof what, "maxpool %s kernels %zux%zux%zux%zu pad %zu beta %g", starnn_dtype_name(dt), n, c,
	         h, w, pad, beta);
	float *t = tie_data(n * lx);
	void *x = sc_rounded(dt, t, n * lx);
	if (n * lx > 10)
		sc_put(dt, x, 1, -INFINITY), sc_put(dt, x, 3, NAN), sc_put(dt, x, 4, INFINITY), sc_put(dt, x, 9, -0.0f);
	void *y0 = sc_random(dt, n * ly, -1, 1), *dy = sc_random(dt, n * ly, -1, 1), *dx0 = sc_random(dt, n * lx, -1, 1);
	float *x32 = sc_widen(dt, x, n * lx), *dy32 = sc_widen(dt, dy, n * ly);
	void *ya[3] = {0}, *dxa[3] = {0};
	int nlev = 0;
	SC_FOR_EACH_LEVEL(lv) {
		float *yr = sc_widen(dt, y0, n * ly), *dxr = sc_widen(dt, dx0, n * lx);
		starnn_maxpool_fwd_cpu(n, c, h, w, x32, lx, yr, ly);
		starnn_maxpool_bwd_cpu(n, c, h, w, x32, lx, dy32, ly, beta, dxr, lx);
		void *yg = sc_dup(dt, y0, n * ly), *dxg = sc_dup(dt, dx0, n * lx);
		starnn_maxpool_fwd_mp_cpu(dt, n, c, h, w, x, lx, yg, ly);
		starnn_maxpool_bwd_mp_cpu(dt, n, c, h, w, x, lx, dy, ly, beta, dxg, lx);
		void *yw = sc_rounded(dt, yr, n * ly), *dxw = sc_rounded(dt, dxr, n * lx);
		char w2[200];
		snprintf(w2, sizeof w2, "%s: fwd vs fp32 kernel rounded", what);
		sc_same(w2, yg, yw, n * ly, es);
		snprintf(w2, sizeof w2, "%s: bwd vs fp32 kernel rounded", what);
		sc_same(w2, dxg, dxw, n * lx, es);
		ya[nlev] = yg, dxa[nlev] = dxg;
		if (nlev > 0) {
			snprintf(w2, sizeof w2, "%s: fwd vs generic level", what);
			sc_same(w2, ya[nlev], ya[0], n * ly, es);
			snprintf(w2, sizeof w2, "%s: bwd vs generic level", what);
			sc_same(w2, dxa[nlev], dxa[0], n * lx, es);
		}
		nlev++;
		free(yr), free(dxr), free(yw), free(dxw);
	}
	sc_level_done();
	for (int i = 0; i < nlev; i++)
		free(ya[i]), free(dxa[i]);
	free(t), free(x), free(y0), free(dy), free(dx0), free(x32), free(dy32);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		/* the fp32 kernels' checks at every instruction-set level */
		SC_FOR_EACH_LEVEL(lv) {
			special_windows();
			kernels_vs_naive(1, 1, 2, 2, 0);
			kernels_vs_naive(2, 3, 5, 7, 3); /* odd sizes, strided */
			kernels_vs_naive(3, 5, 6, 10, 0);
			kernels_vs_naive(1, 2, 64, 64, 5);
			kernels_vs_naive(2, 1, 3, 2, 1);
			kernels_vs_naive(1, 2, 5, 531, 2);
		}
		sc_level_done();
		finite_differences(2, 3, 6, 8);
		finite_differences(1, 2, 5, 7);
		for (int t = 0; t < 3; t++) {
			starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_FP16 : STARNN_BF16;
			for (int b = 0; b < 3; b++) {
				float beta = b == 0 ? 0.0f : b == 1 ? 1.0f : 0.5f;
				mp_kernels(dt, 2, 2, 5, 531, 3, beta); /* 265 windows a row: 3 blocks */
				mp_kernels(dt, 1, 3, 6, 8, 0, beta);
				mp_kernels(dt, 2, 1, 3, 2, 1, beta);
				mp_kernels(dt, 1, 1, 7, 256, 4, beta);
			}
		}
	}
	codelets_vs_naive(1, 1, 2, 2);
	codelets_vs_naive(2, 3, 5, 7);
	codelets_vs_naive(4, 5, 16, 10);
	codelets_vs_naive(8, 16, 64, 64);
	codelets_vs_naive(3, 32, 9, 33);
	for (int t = 0; t < 3; t++) {
		starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_FP16 : STARNN_BF16;
		static const float betas[4] = {0.0f, 1.0f, 0.5f, -1.3f};
		for (int b = 0; b < 4; b++) {
			same_bits_as_cpu(dt, 2, 3, 5, 7, betas[b]); /* odd sizes */
			same_bits_as_cpu(dt, 1, 2, 6, 8, betas[b]);
			same_bits_as_cpu(dt, 3, 4, 9, 33, betas[b]);
		}
	}
	bad_shapes();
	for (int t = 0; t < 2; t++) {
		starnn_dtype dt = t ? STARNN_BF16 : STARNN_FP16;
		half_vs_fp32(2, 3, 5, 7, dt);
		half_vs_fp32(4, 16, 64, 64, dt);
	}
	return test_finish();
}
