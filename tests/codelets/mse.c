/* mse_fwd / mse_bwd: kernels against double loops on strided views, the
 * beta (accumulate) flag, mse_bwd against central finite differences of
 * mse_fwd, the codelets (CPU, or CUDA in the _cuda build) on whole tensors
 * and on batch / channel parts (micro-batch losses accumulated with beta =
 * 1 add up to the batch loss), the 16-bit variants, and bad arguments ->
 * STARNN_EINVAL. Except on CUDA (another summation order, a contracting
 * compiler), the codelets' results are also the CPU kernels' bit for bit,
 * the losses included (OpenCL: docs/opencl.md).
 *
 * Tolerances, all against references in double from the definitions:
 * - the loss: both the CPU and the CUDA kernels accumulate (p - t)^2 in
 *   double (p - t exact in double, the square one double rounding, each in
 *   its own order), scale it in double and round once to float: within
 *   lambda sqrt(n) 2^-53 mag + 2^-24 |exact| (test_close_sum_out with u =
 *   TEST_U64, uout = TEST_U32; the terms are >= 0 so mag = |exact|): a
 *   hard bound, a correct kernel may reach ~1 of it. A loss accumulated
 *   over tasks (beta = 1) is rounded once per task: parts_bound.
 * - the gradient 2 scale (p - t): k = 2 scale is exact (a power-of-two
 *   multiple), then two fp32 roundings (p - t, then k x), nothing to
 *   contract into an FMA: |got - exact| <= 2u (1 + u) |exact|, u = 2^-24
 *   (grad_bound), on CPU and CUDA alike; padding compared exactly.
 * - 16-bit gradient: the same in fp32 (times a power-of-two loss scale,
 *   exact), then one rounding to fp16 / bf16, plus 2^-25 absolute for fp16
 *   (its subnormals below 2^-14 are spaced 2^-24).
 * - finite differences: the central difference of a quadratic is exact at
 *   the midpoint of the steps actually taken; what remains is the float
 *   rounding of the two losses (their bound above) over the step, the
 *   midpoint's offset times the curvature 2 scale, and the gradient's own
 *   rounding (fd_check). */
#include "codelets/amp.h"
#include "codelets/kernels/mse.h"
#include "codelets/mse.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

static double naive_loss(size_t rows, size_t cols, const float *p, size_t ldp, const float *t, size_t ldt, double scale)
{
	double s = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			double d = (double)p[r * ldp + c] - (double)t[r * ldt + c];
			s += d * d;
		}
	return scale * s;
}

/* A double sum of nterms terms of magnitude mag, then the float roundings of
 * the partials stored between tasks (exact values stored[0..k-1], the last
 * one the result): each adds 2^-24 of what it rounds. */
static double parts_bound(double mag, size_t nterms, const double *stored, int k)
{
	double b = TEST_SUM_LAMBDA * sqrt((double)(nterms ? nterms : 1)) * TEST_U64 * mag;
	for (int j = 0; j < k; j++)
		b += TEST_U32 * (fabs(stored[j]) + b);
	return b;
}

/* The bound of the fp32 gradient k (p - t), k = 2 scale exact: two
 * roundings; times the unit roundoff ud of a narrower output type (ud = 0
 * for fp32) and its subnormal spacing. */
static double grad_bound(double exact, double ud, double sub)
{
	double e32 = 2 * TEST_U32 * (1 + TEST_U32);
	return (e32 + ud * (1 + e32)) * fabs(exact) + sub;
}

/* d[r * ldd + c] = 2 scale (p - t) in double with its bound (grad_bound) in
 * bound[]; elements outside the rows x cols block keep old with bound 0. */
static void naive_grad(size_t rows, size_t cols, const float *p, size_t ldp, const float *t, size_t ldt, float scale,
                       const float *old, size_t ldd, double ud, double sub, double *exact, double *bound)
{
	if (old)
		for (size_t i = 0; i < rows * ldd; i++)
			exact[i] = old[i], bound[i] = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			double e = 2.0 * (double)scale * ((double)p[r * ldp + c] - (double)t[r * ldt + c]);
			exact[r * ldd + c] = e, bound[r * ldd + c] = grad_bound(e, ud, sub);
		}
}

struct fd_ctx {
	size_t rows, cols, ldp, ldt;
	const float *target;
	float scale;
};

/* The objective of the finite differences: mse_fwd itself. */
static double loss_of(const float *pred, void *ctx)
{
	const struct fd_ctx *c = ctx;
	float loss = 0;
	starnn_mse_fwd_cpu(c->rows, c->cols, pred, c->ldp, c->target, c->ldt, c->scale, 0.0f, &loss);
	return loss;
}

static void kernels_vs_naive(void)
{
	/* pred: 4 rows of 6 inside rows of 11; target inside rows of 9; dpred
	 * inside rows of 13 (its padding must stay untouched). */
	size_t rows = 4, cols = 6, ldp = 11, ldt = 9, ldd = 13;
	float *p = test_random(rows * ldp, -2, 2), *t = test_random(rows * ldt, -2, 2);
	float *d = test_random(rows * ldd, -1, 1);
	float scale = 1.0f / 24;

	size_t nt = rows * cols + 1; /* the squares and the scaling */
	double s = naive_loss(rows, cols, p, ldp, t, ldt, scale), ex, mg;
	float loss = NAN;
	starnn_mse_fwd_cpu(rows, cols, p, ldp, t, ldt, scale, 0.0f, &loss); /* beta 0: NaN not read */
	test_close_sum_out("mse_fwd_cpu strided beta=0", &loss, &s, &s, 1, nt, TEST_U64, TEST_U32);
	loss = 0.75f;
	ex = mg = 0.75 + s;
	starnn_mse_fwd_cpu(rows, cols, p, ldp, t, ldt, scale, 1.0f, &loss);
	test_close_sum_out("mse_fwd_cpu strided beta=1", &loss, &ex, &mg, 1, nt + 1, TEST_U64, TEST_U32);

	double *dex = malloc(rows * ldd * sizeof *dex), *dbd = malloc(rows * ldd * sizeof *dbd);
	naive_grad(rows, cols, p, ldp, t, ldt, scale, d, ldd, 0, 0, dex, dbd);
	starnn_mse_bwd_cpu(rows, cols, p, ldp, t, ldt, scale, d, ldd);
	test_close_bound("mse_bwd_cpu strided (padding untouched)", d, dex, dbd, rows * ldd);

	/* Finite differences of mse_fwd along every element of the view: the
	 * difference quotient of the quadratic is exact at the midpoint m of
	 * the steps taken, 2 scale (m - t); the float losses L+- are within
	 * B(L) = lambda sqrt(n) 2^-53 L + 2^-24 L (1 + ...) of the exact ones. */
	struct fd_ctx ctx = {rows, cols, ldp, ldt, t, scale};
	double worst = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			size_t i = r * ldp + c;
			double step = 1e-2, fd = test_fd(loss_of, p, i, step, &ctx);
			float xi = p[i], xp = (float)(xi + step), xm = (float)(xi - step);
			p[i] = xp;
			double lp = naive_loss(rows, cols, p, ldp, t, ldt, scale);
			p[i] = xm;
			double lm = naive_loss(rows, cols, p, ldp, t, ldt, scale);
			p[i] = xi;
			double dx = (double)xp - (double)xm, mid = 0.5 * ((double)xp + (double)xm);
			double bound = (test_sum_bound(lp, lp, nt, TEST_U64, TEST_U32) +
			                test_sum_bound(lm, lm, nt, TEST_U64, TEST_U32)) / dx +
			               2.0 * scale * fabs(mid - (double)xi) + dbd[r * ldd + c] + 2 * TEST_U64 * fabs(fd);
			double err = fabs(fd - (double)d[r * ldd + c]);
			worst = fmax(worst, isnan(err) ? INFINITY : err / bound);
			TEST_ASSERT(err <= bound, "mse_bwd_cpu vs finite differences of mse_fwd_cpu [%zu,%zu]: %.9g vs %.9g (bound %.3g)",
			            r, c, (double)d[r * ldd + c], fd, bound);
		}
	if (getenv("STARNN_TEST_VERBOSE"))
		printf("     mse_bwd_cpu vs finite differences of mse_fwd_cpu: worst error %.3g of its bound\n", worst);
	free(p), free(t), free(d), free(dex), free(dbd);
}

/* The codelets against the double references. */
/* A codelet's result against the CPU kernel's on host copies, bit for bit
 * (not on CUDA). */
static void same_as_cpu(const char *what, const void *got, const void *want, size_t n, size_t es)
{
	if (!TEST_ON_CUDA)
		test_same_bits(what, got, want, n, es);
}

static void codelets_vs_naive(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w}, one = 1;
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * w);
	float *p = test_random(numel, -1, 1), *t = test_random(numel, -1, 1);
	starnn_tensor *tp = test_tensor("pred", 4, shape, p), *tt = test_tensor("target", 4, shape, t);
	starnn_tensor *tl = test_tensor("loss", 1, &one, NULL), *td = test_tensor("dpred", 4, shape, NULL);
	float scale = 1.0f / (float)numel;
	size_t nt = numel + 1;
	double *dex = malloc(numel * sizeof *dex), *dbd = malloc(numel * sizeof *dbd);
	char what[128];

	double loss = naive_loss(rows, cols, p, cols, t, cols, scale);
	float *got;
	TEST_OK(starnn_mse_fwd(tp, tt, tl, scale, 0.0f));
	got = test_read(tl);
	snprintf(what, sizeof what, "mse_fwd codelet [%lld,%lld,%lld,%lld]", (long long)n, (long long)c, (long long)h,
	         (long long)w);
	test_close_sum_out(what, got, &loss, &loss, 1, nt, TEST_U64, TEST_U32);
	/* the CPU kernels' results on host copies */
	float lc = 0.0f, *dc = malloc(numel * sizeof *dc);
	starnn_mse_fwd_cpu(rows, cols, p, cols, t, cols, scale, 0.0f, &lc);
	same_as_cpu("mse_fwd codelet, the CPU kernel's bits", got, &lc, 1, 4);
	free(got);

	naive_grad(rows, cols, p, cols, t, cols, 0.5f * scale, NULL, cols, 0, 0, dex, dbd);
	TEST_OK(starnn_mse_bwd(tp, tt, td, 0.5f * scale));
	got = test_read(td);
	snprintf(what, sizeof what, "mse_bwd codelet [%lld,%lld,%lld,%lld]", (long long)n, (long long)c, (long long)h,
	         (long long)w);
	test_close_bound(what, got, dex, dbd, numel);
	starnn_mse_bwd_cpu(rows, cols, p, cols, t, cols, 0.5f * scale, dc, cols);
	same_as_cpu("mse_bwd codelet, the CPU kernel's bits", got, dc, numel, 4);
	free(got);

	if (n >= 2) {
		/* Micro-batches: the partial losses add up to the batch loss. */
		TEST_OK(starnn_tensor_split(tp, 0, 2, NULL, NULL));
		TEST_OK(starnn_tensor_split(tt, 0, 2, NULL, NULL));
		TEST_OK(starnn_tensor_split(td, 0, 2, NULL, NULL));
		TEST_OK(starnn_mse_fwd(tp->parts[0], tt->parts[0], tl, scale, 0.0f));
		TEST_OK(starnn_mse_fwd(tp->parts[1], tt->parts[1], tl, scale, 1.0f));
		for (int k = 0; k < 2; k++)
			TEST_OK(starnn_mse_bwd(tp->parts[k], tt->parts[k], td->parts[k], scale));
		size_t r0 = tp->parts[0]->rows;
		double stored[2] = {naive_loss(r0, cols, p, cols, t, cols, scale), loss};
		double bound = parts_bound(loss, nt + 1, stored, 2);
		got = test_read(tl);
		test_close_bound("mse_fwd over batch parts, accumulated, vs the whole batch", got, &loss, &bound, 1);
		starnn_mse_fwd_cpu(r0, cols, p, cols, t, cols, scale, 0.0f, &lc);
		starnn_mse_fwd_cpu(rows - r0, cols, p + r0 * cols, cols, t + r0 * cols, cols, scale, 1.0f, &lc);
		same_as_cpu("mse_fwd over batch parts, accumulated, the CPU kernel's bits", got, &lc, 1, 4);
		free(got);
		naive_grad(rows, cols, p, cols, t, cols, scale, NULL, cols, 0, 0, dex, dbd);
		got = test_read(td);
		test_close_bound("mse_bwd over batch parts", got, dex, dbd, numel);
		starnn_mse_bwd_cpu(rows, cols, p, cols, t, cols, scale, dc, cols);
		same_as_cpu("mse_bwd over batch parts, the CPU kernel's bits", got, dc, numel, 4);
		free(got);
	}
	if (c >= 2) {
		/* Channel parts: strided views (ld = cols > part cols). */
		int64_t sizes[2] = {1, c - 1};
		starnn_tensor *tp2, *tt2, *td2;
		TEST_OK(starnn_tensor_create(&tp2, "pred2", STARNN_FP32, 4, shape));
		TEST_OK(starnn_tensor_create(&tt2, "target2", STARNN_FP32, 4, shape));
		TEST_OK(starnn_tensor_create(&td2, "dpred2", STARNN_FP32, 4, shape));
		TEST_OK(starnn_tensor_write(tp2, p));
		TEST_OK(starnn_tensor_write(tt2, t));
		TEST_OK(starnn_tensor_split(tp2, 1, 2, sizes, NULL));
		TEST_OK(starnn_tensor_split(tt2, 1, 2, sizes, NULL));
		TEST_OK(starnn_tensor_split(td2, 1, 2, sizes, NULL));
		TEST_OK(starnn_mse_fwd(tp2->parts[1], tt2->parts[1], tl, scale, 0.0f));
		TEST_OK(starnn_mse_fwd(tp2->parts[0], tt2->parts[0], tl, scale, 1.0f));
		TEST_OK(starnn_mse_bwd(tp2->parts[0], tt2->parts[0], td2->parts[0], scale));
		TEST_OK(starnn_mse_bwd(tp2->parts[1], tt2->parts[1], td2->parts[1], 2.0f * scale));
		double stored[2] = {naive_loss(rows, cols - inner, p + inner, cols, t + inner, cols, scale), loss};
		double bound = parts_bound(loss, nt + 1, stored, 2);
		got = test_read(tl);
		test_close_bound("mse_fwd over channel parts (strided), accumulated", got, &loss, &bound, 1);
		starnn_mse_fwd_cpu(rows, cols - inner, p + inner, cols, t + inner, cols, scale, 0.0f, &lc);
		starnn_mse_fwd_cpu(rows, inner, p, cols, t, cols, scale, 1.0f, &lc);
		same_as_cpu("mse_fwd over channel parts (strided), accumulated, the CPU kernel's bits", got, &lc, 1, 4);
		free(got);
		naive_grad(rows, inner, p, cols, t, cols, scale, NULL, cols, 0, 0, dex, dbd);
		naive_grad(rows, cols - inner, p + inner, cols, t + inner, cols, 2.0f * scale, NULL, cols, 0, 0, dex + inner,
		           dbd + inner);
		got = test_read(td2);
		test_close_bound("mse_bwd over channel parts (strided)", got, dex, dbd, numel);
		starnn_mse_bwd_cpu(rows, inner, p, cols, t, cols, scale, dc, cols);
		starnn_mse_bwd_cpu(rows, cols - inner, p + inner, cols, t + inner, cols, 2.0f * scale, dc + inner, cols);
		same_as_cpu("mse_bwd over channel parts (strided), the CPU kernel's bits", got, dc, numel, 4);
		free(got);
		starnn_tensor_destroy(tp2), starnn_tensor_destroy(tt2), starnn_tensor_destroy(td2);
	}
	starnn_tensor_destroy(tp), starnn_tensor_destroy(tt), starnn_tensor_destroy(tl), starnn_tensor_destroy(td);
	free(p), free(t), free(dex), free(dbd), free(dc);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b, *two, *h, *l;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&two, "two", STARNN_FP32, 1, 2));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&l, "l", STARNN_FP32, 1, 1));
	TEST_ASSERT(starnn_mse_fwd(a, b, l, 1.0f, 0.0f) == STARNN_EINVAL, "mse_fwd with pred 3x4, target 4x3 must fail");
	TEST_ASSERT(starnn_mse_fwd(a, a, two, 1.0f, 0.0f) == STARNN_EINVAL, "mse_fwd into a 2-element loss must fail");
	TEST_ASSERT(starnn_mse_fwd(a, h, l, 1.0f, 0.0f) == STARNN_EINVAL, "mse_fwd with an fp16 target must fail");
	TEST_ASSERT(starnn_mse_fwd(a, a, l, INFINITY, 0.0f) == STARNN_EINVAL, "mse_fwd with an infinite scale must fail");
	TEST_ASSERT(starnn_mse_bwd(a, a, b, 1.0f) == STARNN_EINVAL, "mse_bwd into a 4x3 gradient of 3x4 must fail");
	TEST_ASSERT(starnn_mse_bwd(a, b, a, 1.0f) == STARNN_EINVAL, "mse_bwd with mismatched target must fail");
	TEST_ASSERT(starnn_mse_bwd(a, l, a, 1.0f) == STARNN_EINVAL, "mse_bwd with a 1-element target must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(two), starnn_tensor_destroy(h);
	starnn_tensor_destroy(l);
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


/* mse_fwd_mp / mse_bwd_mp with pred of dt, and the fp32 codelets on the
 * same (rounded) pred, against the double references: the loss sums in
 * double and rounds once (as mse_fwd); the gradient is the fp32 one rounded
 * once to dt (grad_bound with u_dt, and for fp16 2^-25 absolute: below
 * 2^-14 fp16 is subnormal with a fixed spacing of 2^-24, which is what loss
 * scaling is for); the scaled backward (a loss-scale state of 1024, a power
 * of two: exact) against 1024 x the exact gradient within the same bound,
 * and for fp32 exactly 1024 x the fp32 backward. With view, pred is a
 * channel view (ld > cols). */
static void half_vs_fp32(starnn_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, int view)
{
	int64_t shape[4] = {n, c, h, w}, full[4] = {n, c + 1, h, w}, four = 4, one = 1;
	size_t numel = (size_t)(n * c * h * w), nfull = (size_t)(n * (c + 1) * h * w);
	size_t row = (size_t)(c * h * w), frow = (size_t)((c + 1) * h * w);
	float *pf = test_random(nfull, -2, 2), *t = test_random(numel, -2, 2), *dense = malloc(numel * sizeof *dense);
	round_to(dt, pf, nfull);
	for (int64_t r = 0; r < n; r++)
		memcpy(dense + (size_t)r * row, pf + (size_t)r * frow, row * sizeof *dense);
	starnn_tensor *pred32 = tensor_dt("p32", STARNN_FP32, 4, shape, dense), *tt = tensor_dt("t", STARNN_FP32, 4, shape, t);
	starnn_tensor *ph, *pfull = NULL;
	if (view) {
		int64_t sizes[2] = {c, 1};
		starnn_tensor **parts;
		pfull = tensor_dt("pfull", dt, 4, full, pf);
		TEST_OK(starnn_tensor_split(pfull, 1, 2, sizes, &parts));
		ph = parts[0];
	} else {
		ph = tensor_dt("ph", dt, 4, shape, dense);
	}
	starnn_tensor *l32 = tensor_dt("l32", STARNN_FP32, 1, &one, NULL), *lh = tensor_dt("lh", STARNN_FP32, 1, &one, NULL);
	starnn_tensor *d32 = tensor_dt("d32", STARNN_FP32, 4, shape, NULL), *dh = tensor_dt("dh", dt, 4, shape, NULL);
	starnn_tensor *ds = tensor_dt("ds", dt, 4, shape, NULL), *state = tensor_dt("state", STARNN_FP32, 1, &four, NULL);
	TEST_OK(starnn_amp_state_init(state, 1024.0f));
	float scale = 1.0f / (float)numel;
	TEST_OK(starnn_mse_fwd(pred32, tt, l32, scale, 0.0f));
	TEST_OK(starnn_mse_fwd_mp(ph, tt, lh, scale, 0.0f));
	TEST_OK(starnn_mse_bwd(pred32, tt, d32, scale));
	TEST_OK(starnn_mse_bwd_mp(ph, tt, dh, scale, NULL));
	TEST_OK(starnn_mse_bwd_mp(ph, tt, ds, scale, state));
	float *lr = test_read(l32), *lg = test_read(lh), *dr = test_read(d32), *dg = test_read(dh), *dsg = test_read(ds);
	char what[128];
	const char *dn = starnn_dtype_name(dt);
	double loss = naive_loss((size_t)n, row, dense, row, t, row, scale);
	snprintf(what, sizeof what, "mse_fwd_mp %s [%lld,%lld,%lld,%lld]%s", dn, (long long)n, (long long)c,
	         (long long)h, (long long)w, view ? " view" : "");
	test_close_sum_out(what, lg, &loss, &loss, 1, numel + 1, TEST_U64, TEST_U32);
	snprintf(what, sizeof what, "mse_fwd fp32 on the same %s values", dn);
	test_close_sum_out(what, lr, &loss, &loss, 1, numel + 1, TEST_U64, TEST_U32);
	double *dex = malloc(numel * sizeof *dex), *dbd = malloc(numel * sizeof *dbd);
	double ud = unit_roundoff(dt), sub = dt == STARNN_FP16 ? 0x1p-25 : 0;
	naive_grad((size_t)n, row, dense, row, t, row, scale, NULL, row, 0, 0, dex, dbd);
	snprintf(what, sizeof what, "mse_bwd fp32 on the same %s values", dn);
	test_close_bound(what, dr, dex, dbd, numel);
	naive_grad((size_t)n, row, dense, row, t, row, scale, NULL, row, ud, sub, dex, dbd);
	snprintf(what, sizeof what, "mse_bwd_mp %s%s", dn, view ? " view" : "");
	test_close_bound(what, dg, dex, dbd, numel);
	for (size_t i = 0; i < numel; i++)
		dr[i] *= 1024.0f, dex[i] *= 1024.0, dbd[i] = grad_bound(dex[i], ud, sub);
	snprintf(what, sizeof what, "mse_bwd_mp %s scaled by the state (1024)%s", dn, view ? " view" : "");
	test_close_bound(what, dsg, dex, dbd, numel);
	free(dex), free(dbd);
	/* The scaled fp32 backward is exactly 1024 x the fp32 one. */
	starnn_tensor *d32s = tensor_dt("d32s", STARNN_FP32, 4, shape, NULL);
	TEST_OK(starnn_mse_bwd_mp(pred32, tt, d32s, scale, state));
	float *d32g = test_read(d32s);
	test_close("mse_bwd_mp fp32 scaled by the state", d32g, dr, numel, 0, 0);
	if (!TEST_ON_CUDA) {
		/* The CPU kernels on host copies (pred's dt bits: the values are dt's), bit for bit. */
		const size_t es = dt == STARNN_FP32 ? 4 : 2;
		uint16_t *hb = malloc(numel * sizeof *hb), *dhc = malloc(numel * sizeof *dhc), *dsc = malloc(numel * sizeof *dsc);
		for (size_t i = 0; i < numel; i++)
			hb[i] = dt == STARNN_FP16 ? starnn_float_to_half(dense[i]) : starnn_float_to_bf16(dense[i]);
		float lc32 = 0.0f, lch = 0.0f, *st = test_read(state), *d32c = malloc(numel * sizeof *d32c);
		float *d32sc = malloc(numel * sizeof *d32sc);
		uint16_t *dhb = malloc(numel * sizeof *dhb), *dsb = malloc(numel * sizeof *dsb);
		float *d32b = test_read(d32);
		TEST_OK(starnn_tensor_read(dh, dhb));
		TEST_OK(starnn_tensor_read(ds, dsb));
		starnn_mse_fwd_cpu((size_t)n, row, dense, row, t, row, scale, 0.0f, &lc32);
		starnn_mse_fwd_half_cpu(dt, (size_t)n, row, hb, row, t, row, scale, 0.0f, &lch);
		starnn_mse_bwd_cpu((size_t)n, row, dense, row, t, row, scale, d32c, row);
		starnn_mse_bwd_half_cpu(dt, (size_t)n, row, hb, row, t, row, scale, NULL, dhc, row);
		starnn_mse_bwd_half_cpu(dt, (size_t)n, row, hb, row, t, row, scale, st, dsc, row);
		starnn_mse_bwd_half_cpu(STARNN_FP32, (size_t)n, row, dense, row, t, row, scale, st, d32sc, row);
		snprintf(what, sizeof what, "mse_fwd_mp %s%s: the CPU kernel's bits", dn, view ? " view" : "");
		test_same_bits(what, lg, &lch, 1, 4);
		test_same_bits("mse_fwd fp32 (same values): the CPU kernel's bits", lr, &lc32, 1, 4);
		test_same_bits("mse_bwd fp32 (same values): the CPU kernel's bits", d32b, d32c, numel, 4);
		snprintf(what, sizeof what, "mse_bwd_mp %s%s: the CPU kernel's bits", dn, view ? " view" : "");
		test_same_bits(what, dhb, dhc, numel, es);
		snprintf(what, sizeof what, "mse_bwd_mp %s scaled%s: the CPU kernel's bits", dn, view ? " view" : "");
		test_same_bits(what, dsb, dsc, numel, es);
		test_same_bits("mse_bwd_mp fp32 scaled: the CPU kernel's bits", d32g, d32sc, numel, 4);
		free(hb), free(dhc), free(dsc), free(st), free(d32c), free(d32sc), free(dhb), free(dsb), free(d32b);
	}
	starnn_tensor *all[] = {pred32, tt, l32, lh, d32, dh, ds, state, d32s};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	starnn_tensor_destroy(view ? pfull : ph);
	free(pf), free(t), free(dense), free(lr), free(lg), free(dr), free(dg), free(dsg), free(d32g);
}

static void half_variants(void)
{
	starnn_dtype dts[2] = {STARNN_FP16, STARNN_BF16};
	for (int d = 0; d < 2; d++)
		for (int view = 0; view < 2; view++) {
			half_vs_fp32(dts[d], 1, 1, 1, 1, view);
			half_vs_fp32(dts[d], 4, 3, 5, 7, view);
			half_vs_fp32(dts[d], 2, 12, 32, 32, view);
		}
	starnn_tensor *ph, *t, *d32, *state;
	TEST_OK(starnn_tensor_new(&ph, "ph", STARNN_FP16, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&t, "t", STARNN_FP32, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&d32, "d32", STARNN_FP32, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&state, "s", STARNN_FP32, 1, (int64_t)3));
	TEST_ASSERT(starnn_mse_bwd_mp(ph, t, d32, 1.0f, NULL) == STARNN_EINVAL, "mse_bwd_mp fp16 pred into fp32 dpred must fail");
	TEST_ASSERT(starnn_mse_bwd_mp(ph, ph, ph, 1.0f, NULL) == STARNN_EINVAL, "mse_bwd_mp with an fp16 target must fail");
	TEST_ASSERT(starnn_mse_bwd_mp(t, t, d32, 1.0f, state) == STARNN_EINVAL, "mse_bwd_mp with a 3-element state must fail");
	starnn_tensor_destroy(ph), starnn_tensor_destroy(t), starnn_tensor_destroy(d32), starnn_tensor_destroy(state);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE)
		kernels_vs_naive();
	codelets_vs_naive(1, 1, 1, 1);
	codelets_vs_naive(1, 3, 5, 7);
	codelets_vs_naive(4, 3, 5, 7);
	codelets_vs_naive(2, 12, 64, 64);
	codelets_vs_naive(2, 8, 128, 160); /* > 1024 blocks x 256 threads on CUDA */
	bad_arguments();
	half_variants();
	return test_finish();
}
