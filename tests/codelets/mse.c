/* mse_fwd / mse_bwd: kernels against double loops on strided views, the
 * beta (accumulate) flag, mse_bwd against central finite differences of
 * mse_fwd, the codelets (CPU, or CUDA in the _cuda build) against direct
 * kernel calls on whole tensors and on batch / channel parts (micro-batch
 * losses accumulated with beta = 1 add up to the batch loss), and bad
 * arguments -> STARNN_EINVAL. */
#include "codelets/amp.h"
#include "codelets/mse.h"
#include "runtime/half.h"
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
	float *d = test_random(rows * ldd, -1, 1), *dref = malloc(rows * ldd * sizeof *dref);
	memcpy(dref, d, rows * ldd * sizeof *d);
	float scale = 1.0f / 24;

	double s = naive_loss(rows, cols, p, ldp, t, ldt, scale);
	float loss = NAN, ref = (float)s;
	starnn_mse_fwd_cpu(rows, cols, p, ldp, t, ldt, scale, 0.0f, &loss); /* beta 0: NaN not read */
	test_close("mse_fwd_cpu strided beta=0", &loss, &ref, 1, 1e-6f, 0);
	loss = 0.75f;
	ref = (float)(0.75 + s);
	starnn_mse_fwd_cpu(rows, cols, p, ldp, t, ldt, scale, 1.0f, &loss);
	test_close("mse_fwd_cpu strided beta=1", &loss, &ref, 1, 1e-6f, 0);

	starnn_mse_bwd_cpu(rows, cols, p, ldp, t, ldt, scale, d, ldd);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			dref[r * ldd + c] = (float)(2.0 * scale * ((double)p[r * ldp + c] - (double)t[r * ldt + c]));
	test_close("mse_bwd_cpu strided (padding untouched)", d, dref, rows * ldd, 1e-6f, 1e-9f);

	/* Finite differences of mse_fwd along every element of the view. */
	struct fd_ctx ctx = {rows, cols, ldp, ldt, t, scale};
	float *fd = malloc(rows * cols * sizeof *fd), *an = malloc(rows * cols * sizeof *an);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			fd[r * cols + c] = (float)test_fd(loss_of, p, r * ldp + c, 1e-2, &ctx);
			an[r * cols + c] = d[r * ldd + c];
		}
	/* The loss is quadratic: central differences are exact up to the fp32
	 * rounding of the loss (~1e-7 * 1.5 / 0.02 ~ 1e-5). */
	test_close("mse_bwd_cpu vs finite differences of mse_fwd_cpu", an, fd, rows * cols, 1e-4f, 2e-5f);
	free(p), free(t), free(d), free(dref), free(fd), free(an);
}

/* The codelets against the CPU kernels on the same data. */
static void codelets_vs_kernels(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w}, one = 1;
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * w);
	float *p = test_random(numel, -1, 1), *t = test_random(numel, -1, 1);
	starnn_tensor *tp = test_tensor("pred", 4, shape, p), *tt = test_tensor("target", 4, shape, t);
	starnn_tensor *tl = test_tensor("loss", 1, &one, NULL), *td = test_tensor("dpred", 4, shape, NULL);
	float scale = 1.0f / (float)numel;
	/* CPU bit-exact; CUDA: another double summation order, one rounding. */
	float rtol = TEST_ON_CUDA ? 1e-6f : 0;

	float ref = 0, *got, *dref = malloc(numel * sizeof *dref);
	starnn_mse_fwd_cpu(rows, cols, p, cols, t, cols, scale, 0.0f, &ref);
	TEST_OK(starnn_mse_fwd(tp, tt, tl, scale, 0.0f));
	got = test_read(tl);
	test_close("mse_fwd codelet", got, &ref, 1, rtol, 0);
	free(got);

	starnn_mse_bwd_cpu(rows, cols, p, cols, t, cols, 0.5f * scale, dref, cols);
	TEST_OK(starnn_mse_bwd(tp, tt, td, 0.5f * scale));
	got = test_read(td);
	test_close("mse_bwd codelet", got, dref, numel, rtol, 0);
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
		float pref = 0;
		starnn_mse_fwd_cpu(r0, cols, p, cols, t, cols, scale, 0.0f, &pref);
		starnn_mse_fwd_cpu(rows - r0, cols, p + r0 * cols, cols, t + r0 * cols, cols, scale, 1.0f, &pref);
		got = test_read(tl);
		test_close("mse_fwd over batch parts, accumulated", got, &pref, 1, rtol, 0);
		test_close("mse_fwd batch parts vs whole batch", got, &ref, 1, 1e-6f, 0);
		free(got);
		starnn_mse_bwd_cpu(rows, cols, p, cols, t, cols, scale, dref, cols);
		got = test_read(td);
		test_close("mse_bwd over batch parts", got, dref, numel, rtol, 0);
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
		float cref = 0;
		starnn_mse_fwd_cpu(rows, cols - inner, p + inner, cols, t + inner, cols, scale, 0.0f, &cref);
		starnn_mse_fwd_cpu(rows, inner, p, cols, t, cols, scale, 1.0f, &cref);
		got = test_read(tl);
		test_close("mse_fwd over channel parts (strided), accumulated", got, &cref, 1, rtol, 0);
		free(got);
		starnn_mse_bwd_cpu(rows, inner, p, cols, t, cols, scale, dref, cols);
		starnn_mse_bwd_cpu(rows, cols - inner, p + inner, cols, t + inner, cols, 2.0f * scale, dref + inner, cols);
		got = test_read(td2);
		test_close("mse_bwd over channel parts (strided)", got, dref, numel, rtol, 0);
		free(got);
		starnn_tensor_destroy(tp2), starnn_tensor_destroy(tt2), starnn_tensor_destroy(td2);
	}
	starnn_tensor_destroy(tp), starnn_tensor_destroy(tt), starnn_tensor_destroy(tl), starnn_tensor_destroy(td);
	free(p), free(t), free(dref);
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

/* Relative tolerance of one rounding to dt, doubled: fp16 2^-10, bf16 2^-7. */
static float half_rtol(starnn_dtype dt)
{
	return dt == STARNN_FP16 ? 9.765625e-4f : dt == STARNN_BF16 ? 7.8125e-3f : 1e-6f;
}

static starnn_tensor *tensor_dt(const char *name, starnn_dtype dt, int ndim, const int64_t *shape, const float *data)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, dt, ndim, shape));
	if (data)
		TEST_OK(starnn_tensor_write_f32(t, data));
	return t;
}


/* mse_fwd_mp / mse_bwd_mp with pred of dt against the fp32 codelets on the
 * same (rounded) pred: the loss sums the same values in double (1e-6
 * relative); the gradient is rounded once to dt (half_rtol, and for fp16
 * 2^-24 absolute: below 2^-14 fp16 is subnormal with a fixed spacing of
 * 2^-24, which is what loss scaling is for); the scaled backward (a loss-scale state of 1024) equals
 * 1024 x the unscaled one within the same tolerance, and for fp32 exactly.
 * With view, pred is a channel view (ld > cols). */
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
	snprintf(what, sizeof what, "mse_fwd_mp %s [%lld,%lld,%lld,%lld]%s", dn, (long long)n, (long long)c,
	         (long long)h, (long long)w, view ? " view" : "");
	test_close(what, lg, lr, 1, 1e-6f, 0);
	snprintf(what, sizeof what, "mse_bwd_mp %s%s", dn, view ? " view" : "");
	float atol = dt == STARNN_FP16 ? 5.9604645e-8f : 1e-30f;
	test_close(what, dg, dr, numel, half_rtol(dt), atol);
	for (size_t i = 0; i < numel; i++)
		dr[i] *= 1024.0f;
	snprintf(what, sizeof what, "mse_bwd_mp %s scaled by the state (1024)%s", dn, view ? " view" : "");
	test_close(what, dsg, dr, numel, half_rtol(dt), atol);
	/* The scaled fp32 backward is exactly 1024 x the fp32 one. */
	starnn_tensor *d32s = tensor_dt("d32s", STARNN_FP32, 4, shape, NULL);
	TEST_OK(starnn_mse_bwd_mp(pred32, tt, d32s, scale, state));
	float *d32g = test_read(d32s);
	test_close("mse_bwd_mp fp32 scaled by the state", d32g, dr, numel, 0, 0);
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
	if (!TEST_ON_CUDA)
		kernels_vs_naive();
	codelets_vs_kernels(1, 1, 1, 1);
	codelets_vs_kernels(1, 3, 5, 7);
	codelets_vs_kernels(4, 3, 5, 7);
	codelets_vs_kernels(2, 12, 64, 64);
	codelets_vs_kernels(2, 8, 128, 160); /* > 1024 blocks x 256 threads on CUDA */
	bad_arguments();
	half_variants();
	return test_finish();
}
