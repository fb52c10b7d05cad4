/* bias_add / bias_grad: the CPU kernels against naive loops (strided rows,
 * padding untouched, beta = 0 ignoring NaN in db, beta != 0 accumulating);
 * the codelets (CPU, or CUDA in the _cuda build) on [N, C], [N, C, H, W]
 * and channel parts of a 4-D tensor (ld > cols), including the
 * accumulation of micro-batch gradients; bias_grad against central finite
 * differences of L = sum(w .* bias_add(b, y)) with respect to b; the 16-bit
 * variants; bad shapes -> EINVAL.
 *
 * Tolerances. bias_add is one fp32 add per element, the same IEEE operation
 * on CPU and GPU (nothing to contract): compared exactly. bias_grad is a sum
 * of n * inner terms (plus beta * db) in fp32 partial sums (CPU: 8 float
 * lanes gathered in double; CUDA: per-thread float sums and shuffle trees),
 * checked against the sum in double within its rounding bound
 * (tests/testlib.h, test_close_sum); a micro-batch accumulation through a
 * stored fp32 db is one more rounded addition of the same sum, inside the
 * same bound. The finite differences: L is linear in b, so the difference
 * quotient is exact but for the rounding of each y0 + b (at most 2^-24 |y0
 * + b| each, deterministic) and the double sums, divided by the step taken
 * (fd_bound). 16-bit bias_add: the fp32 add, then one rounding to fp16 /
 * bf16 (plus 2^-25 absolute for fp16's subnormal spacing).
 *
 * Except on CUDA (which sums in another order), the codelets' results are
 * also the CPU kernels' bit for bit (test_same_bits): the OpenCL kernels
 * run the CPU kernels' loops in their order (docs/opencl.md). */
#include "codelets/bias.h"
#include "codelets/kernels/bias.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

#define PAD_VALUE 1.0e6f

/* db = beta * old + sum over rows and inner of dy, per channel, in double,
 * with the magnitude of its terms (old not read when beta == 0). */
static void channel_sums(size_t n, size_t ch, size_t inner, const float *dy, size_t ld, float beta, const float *old,
                         struct test_sums *r)
{
	for (size_t c = 0; c < ch; c++) {
		double s = beta == 0.0f ? 0.0 : (double)beta * old[c];
		double m = fabs(s);
		for (size_t k = 0; k < n; k++)
			for (size_t i = 0; i < inner; i++) {
				double v = dy[k * ld + c * inner + i];
				s += v, m += fabs(v);
			}
		r->val[c] = s, r->mag[c] = m;
	}
}

/* got (ch values of db) against starnn_bias_grad_cpu on the host copy dy,
 * from db's old values old (not read when beta == 0): bit for bit, except
 * on CUDA. */
static void same_as_grad_cpu(const char *what, const float *got, size_t n, size_t ch, size_t inner, const float *dy,
                             size_t ld, float beta, const float *old)
{
	if (TEST_ON_CUDA)
		return;
	float *want = malloc(ch * sizeof *want);
	for (size_t c = 0; c < ch; c++)
		want[c] = beta == 0.0f ? NAN : old[c];
	starnn_bias_grad_cpu(n, ch, inner, dy, ld, beta, want);
	test_same_bits(what, got, want, ch, 4);
	free(want);
}

static void kernels_vs_naive(size_t n, size_t ch, size_t inner)
{
	size_t cols = ch * inner, ld = cols + 5, len = n * ld;
	float *y = test_random(len, -1, 1), *b = test_random(ch, -1, 1);
	for (size_t r = 0; r < n; r++)
		for (size_t k = cols; k < ld; k++)
			y[r * ld + k] = PAD_VALUE;
	float *ref = malloc(len * sizeof *ref);
	memcpy(ref, y, len * sizeof *ref);
	for (size_t r = 0; r < n; r++)
		for (size_t c = 0; c < ch; c++)
			for (size_t i = 0; i < inner; i++)
				ref[r * ld + c * inner + i] += b[c];
	starnn_bias_add_cpu(n, ch, inner, b, y, ld);
	char what[128];
	snprintf(what, sizeof what, "bias_add_cpu n %zu c %zu inner %zu", n, ch, inner);
	test_close(what, y, ref, len, 0, 0); /* one float add per element: exact */

	/* bias_grad of y: the sum in double, with its magnitude. */
	struct test_sums dref = test_sums_new(ch);
	float *db = malloc(ch * sizeof *db), *old = malloc(ch * sizeof *old);
	static const float betas[] = {0.0f, 1.0f, -0.5f};
	for (size_t v = 0; v < 3; v++) {
		float beta = betas[v];
		for (size_t c = 0; c < ch; c++)
			old[c] = (float)c - 2.0f, db[c] = beta == 0.0f ? NAN : old[c];
		channel_sums(n, ch, inner, y, ld, beta, old, &dref);
		starnn_bias_grad_cpu(n, ch, inner, y, ld, beta, db);
		snprintf(what, sizeof what, "bias_grad_cpu n %zu c %zu inner %zu beta %g", n, ch, inner, beta);
		test_close_sum(what, db, dref.val, dref.mag, ch, n * inner + 1, TEST_U32);
	}
	test_sums_free(&dref);
	free(y), free(b), free(ref), free(db), free(old);
}

/* The codelets: bias_add against the kernel (exact), bias_grad against the
 * double sums. y is [n, ch, h, w] (ndim 4) or
 * [n, ch] (ndim 2); with view, y is channel part 1 of a parent of ch + 2
 * channels (ld > cols, the part starting at a channel offset). */
static void codelets_vs_kernels(int ndim, int64_t n, int64_t ch, int64_t h, int64_t w, int view)
{
	int64_t extra = view ? 2 : 0;
	int64_t shape[4] = {n, ch + extra, h, w};
	size_t inner = ndim == 4 ? (size_t)(h * w) : 1;
	size_t ld = (size_t)(ch + extra) * inner, len = (size_t)n * ld, cols = (size_t)ch * inner;
	size_t off = view ? inner : 0; /* part 1 starts after 1 channel */
	float *hy = test_random(len, -1, 1), *hb = test_random((size_t)ch, -1, 1);
	starnn_tensor *py = test_tensor("y", ndim, shape, hy), *y = py;
	if (view) {
		int64_t sizes[3] = {1, ch, 1};
		TEST_OK(starnn_tensor_split(py, 1, 3, sizes, NULL));
		y = py->parts[1];
	}
	TEST_ASSERT(y->cols == cols && y->ld == ld, "y view: cols %zu (want %zu), ld %zu (want %zu)", y->cols, cols,
	            y->ld, ld);
	int64_t bshape[1] = {ch};
	starnn_tensor *b = test_tensor("b", 1, bshape, hb), *db = test_tensor("db", 1, bshape, NULL);

	/* bias_add on the codelet vs the kernel. */
	float *ref = malloc(len * sizeof *ref);
	memcpy(ref, hy, len * sizeof *ref);
	starnn_bias_add_cpu((size_t)n, (size_t)ch, inner, hb, ref + off, ld);
	TEST_OK(starnn_bias_add(b, y));
	float *got = test_read(py);
	char what[160];
	snprintf(what, sizeof what, "bias_add codelet %dD [%lld,%lld,%lld,%lld]%s", ndim, (long long)n, (long long)ch,
	         (long long)h, (long long)w, view ? " channel part" : "");
	test_close(what, got, ref, len, 0, 0); /* same float add on CPU and GPU */
	if (!TEST_ON_CUDA)
		test_same_bits(what, got, ref, len, 4);

	/* bias_grad of the new y: beta = 0 over db full of NaN (W mode). */
	float *nan = malloc((size_t)ch * sizeof *nan);
	for (int64_t c = 0; c < ch; c++)
		nan[c] = NAN;
	TEST_OK(starnn_tensor_write(db, nan));
	struct test_sums dref = test_sums_new((size_t)ch);
	channel_sums((size_t)n, (size_t)ch, inner, ref + off, ld, 0.0f, NULL, &dref);
	TEST_OK(starnn_bias_grad(y, 0.0f, db));
	float *gdb = test_read(db);
	size_t nterms = (size_t)n * inner + 1;
	snprintf(what, sizeof what, "bias_grad codelet beta 0 %dD [%lld,%lld,%lld,%lld]%s", ndim, (long long)n,
	         (long long)ch, (long long)h, (long long)w, view ? " channel part" : "");
	test_close_sum(what, gdb, dref.val, dref.mag, (size_t)ch, nterms, TEST_U32);
	same_as_grad_cpu(what, gdb, (size_t)n, (size_t)ch, inner, ref + off, ld, 0.0f, NULL);

	/* Micro-batch accumulation: db = 0.5 * db + grad(rows [0, n1)), then
	 * db += grad(rows [n1, n)) through a batch split of y (of its parent
	 * for a view: the parts' channel parts). */
	if (n >= 2 && !view) {
		TEST_OK(starnn_tensor_split(py, 0, 2, NULL, NULL));
		TEST_OK(starnn_bias_grad(py->parts[0], 0.5f, db));
		TEST_OK(starnn_bias_grad(py->parts[1], 1.0f, db));
		/* vs the whole batch: 0.5 * (the stored db) + sum over all
		 * rows; the stored partial is one more rounded addition */
		struct test_sums acc = test_sums_new((size_t)ch);
		channel_sums((size_t)n, (size_t)ch, inner, ref, ld, 0.5f, gdb, &acc);
		/* the CPU kernel on the same two parts, in the same order */
		size_t n0 = py->parts[0]->rows;
		float *want = malloc((size_t)ch * sizeof *want);
		memcpy(want, gdb, (size_t)ch * sizeof *want);
		starnn_bias_grad_cpu(n0, (size_t)ch, inner, ref, ld, 0.5f, want);
		free(gdb);
		gdb = test_read(db);
		same_as_grad_cpu("bias_grad micro-batch accumulation vs the CPU kernel", gdb, (size_t)n - n0, (size_t)ch,
		                 inner, ref + n0 * ld, ld, 1.0f, want);
		free(want);
		test_close_sum("bias_grad micro-batch accumulation vs 0.5 db + whole batch", gdb, acc.val, acc.mag,
		               (size_t)ch, nterms, TEST_U32);
		test_sums_free(&acc);
	}
	test_sums_free(&dref);
	starnn_tensor_destroy(py), starnn_tensor_destroy(b), starnn_tensor_destroy(db);
	free(hy), free(hb), free(ref), free(got), free(nan), free(gdb);
}

/* L(b) = sum(w .* (y0 + b)), on the CPU kernel, in double. */
struct fd_ctx {
	size_t n, ch, inner;
	const float *y0, *w;
	float *y;
};

static double objective(const float *b, void *vctx)
{
	struct fd_ctx *x = vctx;
	size_t len = x->n * x->ch * x->inner;
	memcpy(x->y, x->y0, len * sizeof *x->y);
	starnn_bias_add_cpu(x->n, x->ch, x->inner, b, x->y, x->ch * x->inner);
	double s = 0;
	for (size_t i = 0; i < len; i++)
		s += (double)x->w[i] * x->y[i];
	return s;
}

static void finite_differences(int64_t n, int64_t ch, int64_t h, int64_t w)
{
	size_t inner = (size_t)(h * w), len = (size_t)(n * ch) * inner;
	float *y0 = test_random(len, -1, 1), *wt = test_random(len, -1, 1), *b = test_random((size_t)ch, -1, 1);
	float *y = malloc(len * sizeof *y);
	struct fd_ctx ctx = {(size_t)n, (size_t)ch, inner, y0, wt, y};
	int64_t shape[4] = {n, ch, h, w}, bshape[1] = {ch};
	starnn_tensor *tw = test_tensor("w", 4, shape, wt), *db = test_tensor("db", 1, bshape, NULL);
	TEST_OK(starnn_bias_grad(tw, 0.0f, db)); /* dL/db = bias_grad(w) */
	float *g = test_read(db);
	struct test_sums gw = test_sums_new((size_t)ch);
	channel_sums((size_t)n, (size_t)ch, inner, wt, (size_t)ch * inner, 0.0f, NULL, &gw);
	double step = 0.05, worst = 0;
	/* sum |w y| over all elements, |y| <= |y0| + |b| + h: the double sums */
	double wy = 0;
	for (size_t i = 0; i < len; i++)
		wy += fabs((double)wt[i]) * (fabs((double)y0[i]) + 1.0 + step);
	for (int64_t c = 0; c < ch; c++) {
		double fd = test_fd(objective, b, (size_t)c, step, &ctx);
		/* L is linear in b: fd = sum_c w + (sum_c w_i (e+_i - e-_i) +
		 * delta) / (x+ - x-), e+-_i the rounding of y0_i + x+- (at most
		 * 2^-24 |y0_i + x+-| each), delta that of the two double sums of
		 * len terms (at most 2 len 2^-53 sum |w y|); g[c] the fp32 sum of
		 * the same w within its own bound. */
		float bc = b[c], xp = (float)(bc + step), xm = (float)(bc - step);
		double e = 0;
		for (size_t k = 0; k < (size_t)n; k++)
			for (size_t i = 0; i < inner; i++) {
				size_t j = k * (size_t)ch * inner + (size_t)c * inner + i;
				e += fabs((double)wt[j]) * (fabs((double)y0[j] + xp) + fabs((double)y0[j] + xm));
			}
		double fd_bound = (TEST_U32 * e + 2.0 * (double)len * TEST_U64 * wy) / ((double)xp - (double)xm) +
		                  4 * TEST_U64 * fabs(fd);
		double bound = fd_bound + test_sum_bound(gw.mag[c], gw.val[c], (size_t)n * inner, TEST_U32, TEST_U32);
		double d = fabs(fd - g[c]);
		worst = fmax(worst, isnan(d) ? INFINITY : d / bound);
		TEST_ASSERT(d <= bound, "bias_grad vs finite differences [%lld]: %.9g vs %.9g (bound %.3g)",
		            (long long)c, (double)g[c], fd, bound);
	}
	if (getenv("STARNN_TEST_VERBOSE"))
		printf("     bias_grad vs finite differences [%lld,%lld,%lld,%lld]: worst error %.3g of its bound\n",
		       (long long)n, (long long)ch, (long long)h, (long long)w, worst);
	test_sums_free(&gw);
	starnn_tensor_destroy(tw), starnn_tensor_destroy(db);
	free(y0), free(wt), free(b), free(y), free(g);
}

static void bad_shapes(void)
{
	starnn_tensor *y, *y2, *v, *b, *b4, *b2d, *h, *row;
	TEST_OK(starnn_tensor_new(&y, "y", STARNN_FP32, 4, 2, 3, 4, 5));
	TEST_OK(starnn_tensor_new(&y2, "y2", STARNN_FP32, 2, 2, 3));
	TEST_OK(starnn_tensor_new(&v, "v", STARNN_FP32, 1, 3));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 1, 3));
	TEST_OK(starnn_tensor_new(&b4, "b4", STARNN_FP32, 1, 4));
	TEST_OK(starnn_tensor_new(&b2d, "b2d", STARNN_FP32, 2, 2, 3));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 1, 3));
	TEST_OK(starnn_tensor_new(&row, "row", STARNN_FP32, 2, 1, 3));
	int rc;
	TEST_ASSERT((rc = starnn_bias_add(b, y)) == 0, "valid bias_add refused (%d): %s", rc, starnn_last_error());
	TEST_ASSERT((rc = starnn_bias_grad(y2, 1.0f, b)) == 0, "valid bias_grad refused (%d): %s", rc,
	            starnn_last_error());
	TEST_ASSERT(starnn_bias_add(b4, y) == STARNN_EINVAL, "4 biases for 3 channels must fail");
	TEST_ASSERT(strstr(starnn_last_error(), "y[2,3,4,5]") && strstr(starnn_last_error(), "b4[4]"),
	            "message should name both shapes: %s", starnn_last_error());
	TEST_ASSERT(starnn_bias_grad(y, 0.0f, b4) == STARNN_EINVAL, "db of 4 for 3 channels must fail");
	TEST_ASSERT(starnn_bias_add(b2d, y) == STARNN_EINVAL, "a 2 x 3 bias must fail");
	TEST_ASSERT(starnn_bias_add(b, v) == STARNN_EINVAL, "a 1-D y must fail");
	TEST_ASSERT(starnn_bias_add(h, y) == STARNN_EINVAL, "an fp16 bias must fail");
	TEST_ASSERT(starnn_bias_add(row, row) == STARNN_EINVAL, "b aliasing y must fail");
	TEST_ASSERT(starnn_bias_grad(NULL, 0.0f, b) == STARNN_EINVAL, "NULL dy must fail");
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(y), starnn_tensor_destroy(y2), starnn_tensor_destroy(v), starnn_tensor_destroy(b);
	starnn_tensor_destroy(b4), starnn_tensor_destroy(b2d), starnn_tensor_destroy(h), starnn_tensor_destroy(row);
}


/* ------------------------------------------------ mixed precision (fp16 / bf16) */

/* Rounds x to dtype dt in place (so that fp32 and 16-bit tensors hold the
 * same values). */
static void round_to(starnn_dtype dt, float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = dt == STARNN_FP16 ? starnn_half_to_float(starnn_float_to_half(x[i]))
		       : dt == STARNN_BF16 ? starnn_bf16_to_float(starnn_float_to_bf16(x[i]))
		                           : x[i];
}

/* Unit roundoff of dt. */
static double unit_roundoff(starnn_dtype dt)
{
	return dt == STARNN_FP16 ? TEST_U16 : dt == STARNN_BF16 ? TEST_UBF16 : TEST_U32;
}

static starnn_tensor *tensor_dt(const char *name, starnn_dtype dt, int ndim, const int64_t *shape, const float *data)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, dt, ndim, shape));
	if (data)
		TEST_OK(starnn_tensor_write_f32(t, data));
	return t;
}

/* bias_add_mp / bias_grad_mp on y, dy of dt, and the fp32 codelets on the
 * same (rounded) values, against double references: bias_add_mp is the fp32
 * add then one rounding to dt: |got - (y + b)| <= (2^-24 + u_dt (1 +
 * 2^-24)) |y + b|, plus 2^-25 absolute for fp16 (subnormals below 2^-14 are
 * spaced 2^-24); the fp32 add exactly as in C. bias_grad_mp (fp32 sums of
 * the widened values, fp32 result) within the rounding bound of each sum.
 * With view, y and dy are channel views (ld > cols). */
static void half_vs_fp32(starnn_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, float beta, int view)
{
	int64_t shape[4] = {n, c, h, w}, full[4] = {n, c + 2, h, w}, bs = c;
	size_t numel = (size_t)(n * c * h * w), nfull = (size_t)(n * (c + 2) * h * w);
	float *y = test_random(nfull, -4, 4), *b = test_random((size_t)c, -1, 1), *db = test_random((size_t)c, -1, 1);
	round_to(dt, y, nfull);
	float *dense = malloc(numel * sizeof *dense);
	size_t inner = (size_t)(h * w), row = (size_t)c * inner, frow = (size_t)(c + 2) * inner;
	for (int64_t r = 0; r < n; r++) /* the view is channels [0, c) of the full tensor */
		memcpy(dense + (size_t)r * row, y + (size_t)r * frow, row * sizeof *dense);
	starnn_tensor *yf = tensor_dt("yf", STARNN_FP32, 4, shape, dense), *yh, *yfull = NULL;
	starnn_tensor *dyf = tensor_dt("dyf", STARNN_FP32, 4, shape, dense), *dyh, *dyfull = NULL;
	if (view) {
		int64_t sizes[2] = {c, 2};
		starnn_tensor **p1, **p2;
		yfull = tensor_dt("yfull", dt, 4, full, y);
		dyfull = tensor_dt("dyfull", dt, 4, full, y);
		TEST_OK(starnn_tensor_split(yfull, 1, 2, sizes, &p1));
		TEST_OK(starnn_tensor_split(dyfull, 1, 2, sizes, &p2));
		yh = p1[0], dyh = p2[0];
	} else {
		yh = tensor_dt("yh", dt, 4, shape, dense);
		dyh = tensor_dt("dyh", dt, 4, shape, dense);
	}
	starnn_tensor *tb = tensor_dt("b", STARNN_FP32, 1, &bs, b);
	starnn_tensor *dbf = tensor_dt("dbf", STARNN_FP32, 1, &bs, db), *dbh = tensor_dt("dbh", STARNN_FP32, 1, &bs, db);
	TEST_OK(starnn_bias_add(tb, yf));
	TEST_OK(starnn_bias_add_mp(tb, yh));
	TEST_OK(starnn_bias_grad(dyf, beta, dbf));
	TEST_OK(starnn_bias_grad_mp(dyh, beta, dbh));
	float *ref = test_read(yf), *got = test_read(yh), *gref = test_read(dbf), *ggot = test_read(dbh);
	double *exact = malloc(numel * sizeof *exact), *bound = malloc(numel * sizeof *bound);
	float *ref32 = malloc(numel * sizeof *ref32);
	double ud = unit_roundoff(dt), sub = dt == STARNN_FP16 ? 0x1p-25 : 0;
	for (size_t i = 0; i < numel; i++) {
		exact[i] = (double)dense[i] + b[(i / inner) % (size_t)c];
		bound[i] = (TEST_U32 + ud * (1 + TEST_U32)) * fabs(exact[i]) + sub;
		ref32[i] = dense[i] + b[(i / inner) % (size_t)c];
	}
	char what[128];
	snprintf(what, sizeof what, "bias_add_mp %s [%lld,%lld,%lld,%lld]%s", starnn_dtype_name(dt), (long long)n,
	         (long long)c, (long long)h, (long long)w, view ? " channel view" : "");
	test_close_bound(what, got, exact, bound, numel);
	test_close("bias_add fp32 on the same values", ref, ref32, numel, 0, 0);
	struct test_sums gx = test_sums_new((size_t)c);
	channel_sums((size_t)n, (size_t)c, inner, dense, (size_t)c * inner, beta, db, &gx);
	snprintf(what, sizeof what, "bias_grad_mp %s [%lld,%lld,%lld,%lld] beta %g%s", starnn_dtype_name(dt),
	         (long long)n, (long long)c, (long long)h, (long long)w, beta, view ? " channel view" : "");
	test_close_sum(what, ggot, gx.val, gx.mag, (size_t)c, (size_t)n * inner + 1, TEST_U32);
	if (!TEST_ON_CUDA) { /* the CPU kernels' bits, on the 16-bit patterns of the same values */
		uint16_t *h16 = malloc(numel * sizeof *h16);
		for (size_t i = 0; i < numel; i++)
			h16[i] = dt == STARNN_FP16 ? starnn_float_to_half(dense[i]) : starnn_float_to_bf16(dense[i]);
		float *want = malloc((numel > (size_t)c ? numel : (size_t)c) * sizeof *want);
		memcpy(want, db, (size_t)c * sizeof *want);
		starnn_bias_grad_half_cpu(dt, (size_t)n, (size_t)c, inner, h16, row, beta, want);
		test_same_bits(what, ggot, want, (size_t)c, 4);
		starnn_bias_add_half_cpu(dt, (size_t)n, (size_t)c, inner, b, h16, row);
		for (size_t i = 0; i < numel; i++)
			want[i] = dt == STARNN_FP16 ? starnn_half_to_float(h16[i]) : starnn_bf16_to_float(h16[i]);
		snprintf(what, sizeof what, "bias_add_mp %s [%lld,%lld,%lld,%lld]%s vs the CPU kernel",
		         starnn_dtype_name(dt), (long long)n, (long long)c, (long long)h, (long long)w,
		         view ? " channel view" : "");
		test_same_bits(what, got, want, numel, 4);
		free(h16), free(want);
	}
	snprintf(what, sizeof what, "bias_grad fp32 on the same %s values, beta %g", starnn_dtype_name(dt), beta);
	test_close_sum(what, gref, gx.val, gx.mag, (size_t)c, (size_t)n * inner + 1, TEST_U32);
	test_sums_free(&gx);
	free(exact), free(bound), free(ref32);
	starnn_tensor_destroy(yf), starnn_tensor_destroy(dyf), starnn_tensor_destroy(tb);
	starnn_tensor_destroy(dbf), starnn_tensor_destroy(dbh);
	if (view)
		starnn_tensor_destroy(yfull), starnn_tensor_destroy(dyfull);
	else
		starnn_tensor_destroy(yh), starnn_tensor_destroy(dyh);
	free(y), free(b), free(db), free(dense), free(ref), free(got), free(gref), free(ggot);
}

/* bias_grad_mp / bias_add_mp on 16-bit data of a wide range of magnitudes
 * (2^-12 .. 2^12: the fp32 partial sums round, so the order of the sums
 * shows) against the 16-bit CPU kernels, bit for bit (not on CUDA). */
static void half_bits(starnn_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, float beta)
{
	if (TEST_ON_CUDA)
		return;
	int64_t shape[4] = {n, c, h, w}, bs = c;
	size_t numel = (size_t)(n * c * h * w), inner = (size_t)(h * w), row = (size_t)c * inner;
	uint16_t *y = malloc(numel * sizeof *y), *got = malloc(numel * sizeof *got);
	for (size_t i = 0; i < numel; i++) {
		float v = ldexpf(test_uniform(-1, 1), (int)test_uniform(-12, 12));
		y[i] = dt == STARNN_FP16 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
	}
	float *b = test_random((size_t)c, -1, 1), *db = test_random((size_t)c, -1, 1);
	float *want = malloc((size_t)c * sizeof *want);
	memcpy(want, db, (size_t)c * sizeof *want);
	starnn_tensor *ty, *tb = test_tensor("b", 1, &bs, b), *tdb = test_tensor("db", 1, &bs, db);
	TEST_OK(starnn_tensor_create(&ty, "y", dt, 4, shape));
	TEST_OK(starnn_tensor_write(ty, y));
	TEST_OK(starnn_bias_grad_mp(ty, beta, tdb));
	TEST_OK(starnn_bias_add_mp(tb, ty));
	float *gdb = test_read(tdb);
	TEST_OK(starnn_tensor_read(ty, got));
	starnn_bias_grad_half_cpu(dt, (size_t)n, (size_t)c, inner, y, row, beta, want);
	starnn_bias_add_half_cpu(dt, (size_t)n, (size_t)c, inner, b, y, row);
	char what[128];
	snprintf(what, sizeof what, "bias_grad_mp %s [%lld,%lld,%lld,%lld] beta %g, wide range, vs the CPU kernel",
	         starnn_dtype_name(dt), (long long)n, (long long)c, (long long)h, (long long)w, beta);
	test_same_bits(what, gdb, want, (size_t)c, 4);
	snprintf(what, sizeof what, "bias_add_mp %s [%lld,%lld,%lld,%lld], wide range, vs the CPU kernel",
	         starnn_dtype_name(dt), (long long)n, (long long)c, (long long)h, (long long)w);
	test_same_bits(what, got, y, numel, 2);
	starnn_tensor_destroy(ty), starnn_tensor_destroy(tb), starnn_tensor_destroy(tdb);
	free(y), free(got), free(b), free(db), free(want), free(gdb);
}

static void half_variants(void)
{
	for (int d = 0; d < 2; d++) {
		starnn_dtype dt = d ? STARNN_BF16 : STARNN_FP16;
		half_bits(dt, 3, 4, 33, 31, 0.0f); /* inner > the CPU kernels' 512 chunk */
		half_bits(dt, 2, 5, 40, 40, -0.7f);
		half_bits(dt, 64, 3, 1, 1, 1.0f);
	}
	starnn_dtype dts[2] = {STARNN_FP16, STARNN_BF16};
	for (int d = 0; d < 2; d++)
		for (int view = 0; view < 2; view++) {
			half_vs_fp32(dts[d], 4, 3, 5, 7, 0.0f, view);
			half_vs_fp32(dts[d], 4, 3, 5, 7, 1.0f, view);
			half_vs_fp32(dts[d], 32, 64, 1, 1, 0.0f, view);
			half_vs_fp32(dts[d], 2, 300, 3, 3, 0.5f, view);
			half_vs_fp32(dts[d], 2, 4, 33, 31, 0.0f, view); /* inner > the CPU kernels' 512 chunk */
		}
	starnn_tensor *yh, *bh, *b;
	TEST_OK(starnn_tensor_new(&yh, "yh", STARNN_BF16, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&bh, "bh", STARNN_BF16, 1, 3));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 1, 4));
	TEST_ASSERT(starnn_bias_add_mp(bh, yh) == STARNN_EINVAL, "bias_add_mp with a bf16 bias must fail");
	TEST_ASSERT(starnn_bias_add_mp(b, yh) == STARNN_EINVAL, "bias_add_mp with 4 biases for 3 channels must fail");
	TEST_ASSERT(starnn_bias_grad_mp(yh, 0.0f, bh) == STARNN_EINVAL, "bias_grad_mp into a bf16 db must fail");
	starnn_tensor_destroy(yh), starnn_tensor_destroy(bh), starnn_tensor_destroy(b);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		kernels_vs_naive(1, 1, 1);
		kernels_vs_naive(3, 5, 1);
		kernels_vs_naive(2, 3, 7);
		kernels_vs_naive(4, 16, 33);
		kernels_vs_naive(2, 300, 9); /* more channels than one accumulator block */
		kernels_vs_naive(2, 4, 4099);
		finite_differences(2, 3, 4, 5);
		finite_differences(3, 7, 1, 1);
	}
	for (int view = 0; view < 2; view++) {
		codelets_vs_kernels(4, 1, 1, 1, 1, view);
		codelets_vs_kernels(4, 4, 3, 5, 7, view);
		codelets_vs_kernels(2, 5, 9, 1, 1, view);
		codelets_vs_kernels(4, 3, 16, 32, 32, view);
		codelets_vs_kernels(4, 2, 300, 3, 3, view);
	}
	bad_shapes();
	half_variants();
	return test_finish();
}
