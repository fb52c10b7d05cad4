/* adam: the kernel against a double-precision reference of torch.optim.Adam
 * / AdamW over 5 steps (written with mhat / vhat as in the papers; L2 and
 * decoupled weight decay, betas, eps, grad_scale variants; strided views),
 * the codelet (CPU, or CUDA in the _cuda build) against direct kernel calls
 * on whole tensors and channel parts, the host bias corrections, and bad
 * arguments -> STARNN_EINVAL. */
#include "codelets/adam.h"
#include "codelets/amp.h"
#include "codelets/fill.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

#define STEPS 5

/* One step of Adam in double, m and v from zero at t = 1. */
static void reference_step(size_t n, const struct starnn_adam_params *p, double gs, int t, double *w,
                           const float *grad, double *m, double *v)
{
	double b1 = p->beta1, b2 = p->beta2, lr = p->lr, wd = p->weight_decay;
	for (size_t i = 0; i < n; i++) {
		double g = gs * grad[i];
		if (p->decoupled)
			w[i] *= 1.0 - lr * wd;
		else
			g += wd * w[i];
		m[i] = b1 * m[i] + (1 - b1) * g;
		v[i] = b2 * v[i] + (1 - b2) * g * g;
		double mhat = m[i] / (1 - pow(b1, t)), vhat = v[i] / (1 - pow(b2, t));
		w[i] -= lr * mhat / (sqrt(vhat) + (double)p->eps);
	}
}

struct variant {
	const char *name;
	struct starnn_adam_params p;
	float grad_scale;
};

static const struct variant variants[] = {
	{"defaults", {1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0}, 1.0f},
	{"L2 weight decay", {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 0}, 1.0f},
	{"AdamW", {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 1}, 1.0f},
	{"betas, eps, grad_scale", {5e-3f, 0.8f, 0.99f, 1e-3f, 0, 0}, 1.0f / 256},
	{"beta1 0, AdamW, grad_scale", {1e-3f, 0.0f, 0.9f, 1e-6f, 0.01f, 1}, 4.0f},
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

static void kernel_vs_reference(const struct variant *vr, size_t cols)
{
	/* w, grad, m, v: 3 rows of cols inside rows of cols + 1, 2, 3, 4;
	 * padding must stay untouched. */
	size_t rows = 3, ldw = cols + 1, ldg = cols + 2, ldm = cols + 3, ldv = cols + 4, n = rows * cols;
	float *w = test_random(rows * ldw, -1, 1), *m = test_random(rows * ldm, 5, 6), *v = test_random(rows * ldv, 5, 6);
	for (size_t r = 0; r < rows; r++) {
		for (size_t c = 0; c < cols; c++)
			m[r * ldm + c] = v[r * ldv + c] = 0; /* the state starts at zero */
	}
	float *wexp = malloc(rows * ldw * sizeof *wexp), *mexp = malloc(rows * ldm * sizeof *mexp);
	float *vexp = malloc(rows * ldv * sizeof *vexp);
	memcpy(wexp, w, rows * ldw * sizeof *w);
	memcpy(mexp, m, rows * ldm * sizeof *m);
	memcpy(vexp, v, rows * ldv * sizeof *v);
	double *rw = malloc(n * sizeof *rw), *rm = calloc(n, sizeof *rm), *rv = calloc(n, sizeof *rv);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			rw[r * cols + c] = w[r * ldw + c];

	for (int t = 1; t <= STEPS; t++) {
		float *g = test_random(rows * ldg, -1.0f / vr->grad_scale, 1.0f / vr->grad_scale);
		float *gd = malloc(n * sizeof *gd);
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				gd[r * cols + c] = g[r * ldg + c];
		struct starnn_adam_step s;
		starnn_adam_step_init(&s, &vr->p, t, vr->grad_scale);
		starnn_adam_cpu(rows, cols, &s, w, ldw, g, ldg, m, ldm, v, ldv);
		reference_step(n, &vr->p, vr->grad_scale, t, rw, gd, rm, rv);
		free(g), free(gd);
	}
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			wexp[r * ldw + c] = (float)rw[r * cols + c];
			mexp[r * ldm + c] = (float)rm[r * cols + c];
			vexp[r * ldv + c] = (float)rv[r * cols + c];
		}
	/* fp32 vs double over 5 steps: a few ulps. Updates are ~lr per step, so
	 * an error in the update direction would show far above 1e-6. */
	char what[128];
	snprintf(what, sizeof what, "adam_cpu %s (%zu cols, %s): w after %d steps", vr->name, cols,
	         starnn_simd_name(starnn_simd_level()), STEPS);
	test_close(what, w, wexp, rows * ldw, 1e-5f, 1e-7f);
	snprintf(what, sizeof what, "adam_cpu %s (%zu cols): m after %d steps", vr->name, cols, STEPS);
	/* m sums terms (1 - beta1) * g of either sign, |.| <= 0.1 after the
	 * grad scale: where they cancel, a few ulps of those terms (~6e-9 each)
	 * are the absolute error; 5e-8 covers 5 steps. */
	test_close(what, m, mexp, rows * ldm, 1e-5f, 5e-8f);
	snprintf(what, sizeof what, "adam_cpu %s (%zu cols): v after %d steps", vr->name, cols, STEPS);
	test_close(what, v, vexp, rows * ldv, 1e-5f, 1e-12f);
	free(w), free(m), free(v), free(wexp), free(mexp), free(vexp), free(rw), free(rm), free(rv);
}

static void step_init(void)
{
	/* Bias corrections in double: t = 1000 with beta2 = 0.999 gives
	 * 1 - 0.999^1000 = 0.6323..., and beta1 = 0 gives step_size = lr. */
	struct starnn_adam_params p = {1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0};
	struct starnn_adam_step s;
	starnn_adam_step_init(&s, &p, 1000, 1.0f);
	float bc2 = (float)sqrt(1.0 - pow((double)0.999f, 1000.0)), ss = (float)((double)1e-3f / (1.0 - pow((double)0.9f, 1000.0)));
	TEST_ASSERT(s.bc2_sqrt == bc2 && s.step_size == ss && s.decay == 1.0f,
	            "adam step 1000: bc2_sqrt %.9g (expected %.9g), step_size %.9g (expected %.9g), decay %g",
	            (double)s.bc2_sqrt, (double)bc2, (double)s.step_size, (double)ss, (double)s.decay);
	p.beta1 = 0, p.decoupled = 1, p.weight_decay = 0.5f;
	starnn_adam_step_init(&s, &p, 1, 1.0f);
	TEST_ASSERT(s.step_size == 1e-3f && s.decay == (float)(1.0 - (double)1e-3f * 0.5),
	            "adam beta1 = 0, AdamW: step_size %.9g, decay %.9g", (double)s.step_size, (double)s.decay);
}

/* STEPS codelet updates against the same kernel calls on host copies. */
static void codelet_vs_kernel(const struct variant *vr, int64_t n, int64_t c, int64_t h, int64_t wd)
{
	int64_t shape[4] = {n, c, h, wd};
	size_t numel = (size_t)(n * c * h * wd), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * wd);
	float *w = test_random(numel, -1, 1), *m = calloc(numel, sizeof *m), *v = calloc(numel, sizeof *v);
	starnn_tensor *tw = test_tensor("w", 4, shape, w), *tg = test_tensor("grad", 4, shape, NULL);
	starnn_tensor *tm = test_tensor("m", 4, shape, NULL), *tv = test_tensor("v", 4, shape, NULL);
	for (int t = 1; t <= STEPS; t++) {
		float *g = test_random(numel, -1, 1);
		TEST_OK(starnn_tensor_write(tg, g));
		TEST_OK(starnn_adam(tw, tg, tm, tv, &vr->p, t, vr->grad_scale));
		struct starnn_adam_step s;
		starnn_adam_step_init(&s, &vr->p, t, vr->grad_scale);
		starnn_adam_cpu(rows, cols, &s, w, cols, g, cols, m, cols, v, cols);
		free(g);
	}
	/* CPU: the same kernel, bit-exact. CUDA: FMA contraction differs. */
	float rtol = TEST_ON_CUDA ? 1e-5f : 0, atol = TEST_ON_CUDA ? 1e-7f : 0;
	float *gw = test_read(tw), *gm = test_read(tm), *gv = test_read(tv);
	char what[128];
	snprintf(what, sizeof what, "adam codelet %s: w", vr->name);
	test_close(what, gw, w, numel, rtol, atol);
	/* m sums terms (1 - beta1) g of magnitude ~0.1 with mixed signs: where
	 * they cancel, FMA rounding on the GPU shows as ~1e-8 absolute (seen on
	 * an H200: 2e-8 on m = 6e-4), so m gets the same atol as w, ~10 ulps of
	 * its terms. */
	snprintf(what, sizeof what, "adam codelet %s: m", vr->name);
	test_close(what, gm, m, numel, rtol, atol);
	snprintf(what, sizeof what, "adam codelet %s: v", vr->name);
	test_close(what, gv, v, numel, rtol, atol * 1e-5f);
	free(gw), free(gm), free(gv);

	if (c >= 2) {
		/* One more step on channel parts (strided views). */
		int64_t sizes[2] = {c - 1, 1};
		float *g = test_random(numel, -1, 1);
		TEST_OK(starnn_tensor_write(tg, g));
		starnn_tensor *ts[4] = {tw, tg, tm, tv};
		for (int i = 0; i < 4; i++)
			TEST_OK(starnn_tensor_split(ts[i], 1, 2, sizes, NULL));
		for (int k = 0; k < 2; k++)
			TEST_OK(starnn_adam(tw->parts[k], tg->parts[k], tm->parts[k], tv->parts[k], &vr->p, STEPS + 1,
			                    vr->grad_scale));
		struct starnn_adam_step s;
		starnn_adam_step_init(&s, &vr->p, STEPS + 1, vr->grad_scale);
		size_t c0 = (size_t)(c - 1) * inner;
		starnn_adam_cpu(rows, c0, &s, w, cols, g, cols, m, cols, v, cols);
		starnn_adam_cpu(rows, cols - c0, &s, w + c0, cols, g + c0, cols, m + c0, cols, v + c0, cols);
		gw = test_read(tw);
		gv = test_read(tv);
		snprintf(what, sizeof what, "adam codelet %s on channel parts: w", vr->name);
		test_close(what, gw, w, numel, rtol, atol);
		snprintf(what, sizeof what, "adam codelet %s on channel parts: v", vr->name);
		test_close(what, gv, v, numel, rtol, atol * 1e-5f);
		free(gw), free(gv), free(g);
	}
	starnn_tensor_destroy(tw), starnn_tensor_destroy(tg), starnn_tensor_destroy(tm), starnn_tensor_destroy(tv);
	free(w), free(m), free(v);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b, *c, *d, *t, *h;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&c, "c", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&d, "d", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&t, "t", STARNN_FP32, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, 3, 4));
	struct starnn_adam_params ok = {1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0}, p;
	TEST_ASSERT(starnn_adam(a, t, c, d, &ok, 1, 1.0f) == STARNN_EINVAL, "adam with a 4x3 grad for 3x4 w must fail");
	TEST_ASSERT(starnn_adam(a, b, c, t, &ok, 1, 1.0f) == STARNN_EINVAL, "adam with a 4x3 v for 3x4 w must fail");
	TEST_ASSERT(starnn_adam(a, b, h, d, &ok, 1, 1.0f) == STARNN_EINVAL, "adam with an fp16 m must fail");
	TEST_ASSERT(starnn_adam(a, b, c, c, &ok, 1, 1.0f) == STARNN_EINVAL, "adam with m == v must fail");
	TEST_ASSERT(starnn_adam(a, b, c, d, &ok, 0, 1.0f) == STARNN_EINVAL, "adam at step 0 must fail");
	TEST_ASSERT(starnn_adam(a, b, c, d, &ok, 1, INFINITY) == STARNN_EINVAL, "adam with an infinite grad_scale must fail");
	p = ok, p.beta1 = 1.0f;
	TEST_ASSERT(starnn_adam(a, b, c, d, &p, 1, 1.0f) == STARNN_EINVAL, "adam with beta1 = 1 must fail");
	p = ok, p.beta2 = -0.5f;
	TEST_ASSERT(starnn_adam(a, b, c, d, &p, 1, 1.0f) == STARNN_EINVAL, "adam with beta2 < 0 must fail");
	p = ok, p.eps = -1e-8f;
	TEST_ASSERT(starnn_adam(a, b, c, d, &p, 1, 1.0f) == STARNN_EINVAL, "adam with eps < 0 must fail");
	p = ok, p.lr = NAN;
	TEST_ASSERT(starnn_adam(a, b, c, d, &p, 1, 1.0f) == STARNN_EINVAL, "adam with lr NaN must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(c), starnn_tensor_destroy(d);
	starnn_tensor_destroy(t), starnn_tensor_destroy(h);
}

/* adam_amp: the step read from the loss-scale state and the overflow flag
 * inside the task against adam with the same values on the host: scale
 * S = 1 / grad_scale (a power of two, so the unscaled gradient is the
 * same), step = applied + 1; steps 2 and 4 of 5 overflow and must leave
 * everything untouched and not count. Bit for bit on CPU; 1e-6 relative on
 * CUDA (the kernel computes the step's constants itself). */
static void amp_variant(const struct variant *v)
{
	int64_t shape[2] = {3, 45}, four = 4, one = 1;
	size_t n = 135;
	float *w0 = test_random(n, -1, 1);
	starnn_tensor *w1 = test_tensor("w1", 2, shape, w0), *w2 = test_tensor("w2", 2, shape, w0);
	starnn_tensor *g = test_tensor("g", 2, shape, NULL), *state, *flag;
	starnn_tensor *m1 = test_tensor("m1", 2, shape, NULL), *m2 = test_tensor("m2", 2, shape, NULL);
	starnn_tensor *v1 = test_tensor("v1", 2, shape, NULL), *v2 = test_tensor("v2", 2, shape, NULL);
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	int64_t applied = 0;
	float rtol = TEST_ON_CUDA ? 1e-6f : 0.0f;
	for (int step = 1; step <= 5; step++) {
		int overflow = step == 2 || step == 4;
		float *gv = test_random(n, -1, 1);
		TEST_OK(starnn_tensor_write(g, gv));
		float st[4] = {1.0f / v->grad_scale, 3.0f, 7.0f, (float)applied};
		TEST_OK(starnn_tensor_write(state, st));
		TEST_OK(starnn_fill(overflow ? 1.0f : 0.0f, flag));
		TEST_OK(starnn_adam_amp(w1, g, m1, v1, &v->p, state, flag));
		if (!overflow) {
			TEST_OK(starnn_adam(w2, g, m2, v2, &v->p, applied + 1, v->grad_scale));
			applied++;
		}
		float *a = test_read(w1), *b = test_read(w2), *c = test_read(v1), *d = test_read(v2);
		char what[128];
		snprintf(what, sizeof what, "adam_amp '%s' step %d%s: weights", v->name, step, overflow ? " (skipped)" : "");
		test_close(what, a, b, n, rtol, 0);
		snprintf(what, sizeof what, "adam_amp '%s' step %d%s: second moment", v->name, step, overflow ? " (skipped)" : "");
		test_close(what, c, d, n, rtol, 0);
		free(a), free(b), free(c), free(d), free(gv);
	}
	TEST_ASSERT(starnn_adam_amp(w1, g, m1, v1, &v->p, flag, state) == STARNN_EINVAL, "adam_amp with state and flag swapped must fail");
	TEST_ASSERT(starnn_adam_amp(w1, g, m1, v1, &v->p, state, NULL) == STARNN_EINVAL, "adam_amp without a flag must fail");
	starnn_tensor_destroy(w1), starnn_tensor_destroy(w2), starnn_tensor_destroy(g);
	starnn_tensor_destroy(state), starnn_tensor_destroy(flag);
	starnn_tensor_destroy(m1), starnn_tensor_destroy(m2), starnn_tensor_destroy(v1), starnn_tensor_destroy(v2);
	free(w0);
}

/* Every instruction-set level gives the generic level's results bit for
 * bit (3 strided rows of 1000: vector loops and tails). */
static void levels_agree(const struct variant *vr)
{
	size_t rows = 3, cols = 1000, ld = 1003, n = rows * ld;
	float *w0 = test_random(n, -1, 1), *g = test_random(n, -1, 1), *m0 = test_random(n, -0.1f, 0.1f);
	float *v0 = test_random(n, 0, 0.1f), *res[3][3];
	struct starnn_adam_step s;
	starnn_adam_step_init(&s, &vr->p, 3, vr->grad_scale);
	int nlev = 0;
	SC_FOR_EACH_LEVEL(lv) {
		float *w = malloc(n * sizeof *w), *m = malloc(n * sizeof *m), *v = malloc(n * sizeof *v);
		memcpy(w, w0, n * sizeof *w), memcpy(m, m0, n * sizeof *m), memcpy(v, v0, n * sizeof *v);
		starnn_adam_cpu(rows, cols, &s, w, ld, g, ld, m, ld, v, ld);
		res[nlev][0] = w, res[nlev][1] = m, res[nlev][2] = v;
		if (nlev > 0)
			for (int i = 0; i < 3; i++)
				sc_same(vr->name, res[nlev][i], res[0][i], n, sizeof(float));
		nlev++;
	}
	sc_level_done();
	for (int l = 0; l < nlev; l++)
		free(res[l][0]), free(res[l][1]), free(res[l][2]);
	free(w0), free(g), free(m0), free(v0);
}

int main(void)
{
	test_init();
	if (!TEST_ON_CUDA)
		step_init();
	for (size_t i = 0; i < NVARIANTS; i++) {
		if (!TEST_ON_CUDA) {
			SC_FOR_EACH_LEVEL(lv) {
				kernel_vs_reference(&variants[i], 7);
				kernel_vs_reference(&variants[i], 300);
			}
			sc_level_done();
			levels_agree(&variants[i]);
		}
		codelet_vs_kernel(&variants[i], 1, 1, 1, 1);
		codelet_vs_kernel(&variants[i], 4, 3, 5, 7);
		codelet_vs_kernel(&variants[i], 2, 16, 32, 32);
	}
	bad_arguments();
	for (size_t i = 0; i < NVARIANTS; i++)
		amp_variant(&variants[i]);
	return test_finish();
}
