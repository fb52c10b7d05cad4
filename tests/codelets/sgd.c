/* sgd: the kernel against a double-precision reference of torch.optim.SGD
 * over 5 steps (momentum, dampening, Nesterov, weight decay, grad_scale
 * variants; strided views), the codelet (CPU, or CUDA in the _cuda build)
 * on whole tensors and channel parts against the same reference, sgd_amp,
 * every instruction-set level bitwise equal, and bad arguments ->
 * STARNN_EINVAL. Except on CUDA (which contracts), the codelets' results
 * are also the CPU kernels' bit for bit (OpenCL: docs/opencl.md).
 *
 * Tolerances: the reference carries, next to the exact w and momentum
 * buffer in double, a first-order bound of the fp32 kernels' error on each
 * (ref_step): per element and step, g = gs grad + wd w (3 roundings, plus
 * wd times w's error), b = mom b + keep g (3, plus mom times b's error and
 * keep times g's; keep = 1 - dampening in fp32 off by what it is off by),
 * Nesterov's g + mom b (2), w - lr d (2), each 2^-24 of what it rounds.
 * FMA contraction (CUDA, other processors) only drops roundings. A hard
 * bound: the weights' last rounding dominates (|lr d| << |w|), so a
 * correct kernel may come close to 1 of it; a 2^-12 relative error in the
 * update is far outside. Exact results stay exact: padding, the buffer
 * without momentum, skipped amp steps, the instruction-set levels against
 * each other. */
#include "codelets/amp.h"
#include "codelets/fill.h"
#include "codelets/kernels/sgd.h"
#include "codelets/sgd.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

#define STEPS 5

/* The exact w and buf of n elements (dense rows x cols) and the bounds of
 * the fp32 ones' errors. */
struct sgd_ref {
	size_t n;
	double *w, *b, *ew, *eb;
};

static struct sgd_ref ref_new(size_t n, const float *w, const float *b)
{
	struct sgd_ref r = {.n = n};
	double **a[] = {&r.w, &r.b, &r.ew, &r.eb};
	for (size_t i = 0; i < 4; i++)
		*a[i] = calloc(n + 1, sizeof(double));
	for (size_t i = 0; i < n; i++)
		r.w[i] = w[i], r.b[i] = b[i];
	return r;
}

static void ref_free(struct sgd_ref *r)
{
	free(r->w), free(r->b), free(r->ew), free(r->eb);
}

/* torch.optim.SGD._single_tensor_sgd in double on the columns [c0, c1) of
 * rows x cols, with the error bounds (see the file's comment), first order,
 * grown by (1 + 8u) per step for the second-order terms. */
static void ref_step(struct sgd_ref *r, const struct starnn_sgd_params *p, double gs, int step, const float *grad,
                     size_t rows, size_t cols, size_t c0, size_t c1)
{
	const double u = TEST_U32, slack = 1 + 8 * u;
	double lr = p->lr, mom = p->momentum, wd = p->weight_decay, keep = 1.0 - (double)p->dampening;
	double e_keep = fabs((double)(1.0f - p->dampening) - keep);
	for (size_t row = 0; row < rows; row++)
		for (size_t c = c0; c < c1; c++) {
			size_t i = row * cols + c;
			double w = r->w[i], ew = r->ew[i];
			double gsg = gs * grad[i], g = gsg + wd * w;
			double eg = u * (fabs(gsg) + fabs(wd * w) + fabs(g)) + wd * ew, d = g, ed = eg;
			if (mom != 0) {
				double b = r->b[i], eb = r->eb[i], b1, eb1;
				if (step == 1) {
					b1 = g, eb1 = eg;
				} else {
					b1 = mom * b + keep * g;
					eb1 = mom * eb + keep * eg + e_keep * fabs(g) +
					      u * (mom * fabs(b) + keep * fabs(g) + fabs(b1));
				}
				r->b[i] = b1, r->eb[i] = slack * eb1;
				if (p->nesterov)
					d = g + mom * b1, ed = eg + mom * eb1 + u * (mom * fabs(b1) + fabs(d));
				else
					d = b1, ed = eb1;
			}
			double w1 = w - lr * d;
			r->w[i] = w1;
			r->ew[i] = slack * (ew + lr * ed + u * (lr * fabs(d) + fabs(w1)));
		}
}

struct variant {
	const char *name;
	struct starnn_sgd_params p;
	float grad_scale;
};

static const struct variant variants[] = {
	{"plain", {0.1f, 0, 0, 0, 0}, 1.0f},
	{"weight decay, grad_scale", {0.05f, 0, 0, 1e-2f, 0}, 1.0f / 1024},
	{"momentum, weight decay", {0.1f, 0.9f, 0, 1e-2f, 0}, 1.0f},
	{"momentum, dampening, grad_scale", {0.1f, 0.9f, 0.1f, 0, 0}, 0.5f},
	{"nesterov, weight decay", {0.03f, 0.8f, 0, 5e-3f, 1}, 1.0f},
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

static void kernel_vs_reference(const struct variant *v, size_t cols)
{
	/* w, grad, buf: 3 rows of cols inside rows of cols + 2, 3, 4. */
	size_t rows = 3, ldw = cols + 2, ldg = cols + 3, ldb = cols + 4, n = rows * cols;
	float *w = test_random(rows * ldw, -1, 1), *buf = test_random(rows * ldb, -1, 1);
	float *w0 = malloc(rows * ldw * sizeof *w0), *b0 = malloc(rows * ldb * sizeof *b0);
	memcpy(w0, w, rows * ldw * sizeof *w);
	memcpy(b0, buf, rows * ldb * sizeof *buf);
	float *wd = malloc(n * sizeof *wd), *bd = malloc(n * sizeof *bd);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			wd[r * cols + c] = w[r * ldw + c], bd[r * cols + c] = buf[r * ldb + c];
	struct sgd_ref ref = ref_new(n, wd, bd); /* without momentum buf stays as it is */

	for (int step = 1; step <= STEPS; step++) {
		/* the gradient of a mixed-precision step is grad_scale^-1 larger */
		float *g = test_random(rows * ldg, -1.0f / v->grad_scale, 1.0f / v->grad_scale);
		float *gd = malloc(n * sizeof *gd);
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				gd[r * cols + c] = g[r * ldg + c];
		struct starnn_sgd_step s = {v->p, v->grad_scale, step == 1};
		starnn_sgd_cpu(rows, cols, &s, w, ldw, g, ldg, buf, ldb);
		ref_step(&ref, &v->p, v->grad_scale, step, gd, rows, cols, 0, cols);
		free(g), free(gd);
	}
	char what[128];
	snprintf(what, sizeof what, "sgd_cpu %s (%zu cols, %s): w after %d steps", v->name, cols,
	         starnn_simd_name(starnn_simd_level()), STEPS);
	test_close_strided(what, w, rows, cols, ldw, ref.w, ref.ew, w0);
	snprintf(what, sizeof what, "sgd_cpu %s (%zu cols): buf after %d steps", v->name, cols, STEPS);
	test_close_strided(what, buf, rows, cols, ldb, ref.b, ref.eb, b0);
	ref_free(&ref);
	free(w), free(buf), free(w0), free(b0), free(wd), free(bd);
}

/* A codelet's result against the CPU kernel's on host copies, bit for bit
 * (not on CUDA, which contracts). */
static void same_as_cpu(const char *what, const float *got, const float *want, size_t n)
{
	if (!TEST_ON_CUDA)
		test_same_bits(what, got, want, n, sizeof(float));
}

/* STEPS codelet updates against the double reference (and the CPU
 * kernel's bits on host copies: wc, bc). */
static void codelet_vs_reference(const struct variant *v, int64_t n, int64_t c, int64_t h, int64_t wd)
{
	int64_t shape[4] = {n, c, h, wd};
	size_t numel = (size_t)(n * c * h * wd), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * wd);
	float *w = test_random(numel, -1, 1), *b = test_random(numel, -1, 1);
	starnn_tensor *tw = test_tensor("w", 4, shape, w), *tg = test_tensor("grad", 4, shape, NULL);
	starnn_tensor *tb = test_tensor("buf", 4, shape, b);
	struct sgd_ref ref = ref_new(numel, w, b);
	float *wc = malloc(numel * sizeof *wc), *bc = malloc(numel * sizeof *bc);
	memcpy(wc, w, numel * sizeof *w), memcpy(bc, b, numel * sizeof *b);
	for (int step = 1; step <= STEPS; step++) {
		float *g = test_random(numel, -1, 1);
		TEST_OK(starnn_tensor_write(tg, g));
		TEST_OK(starnn_sgd(tw, tg, tb, &v->p, step, v->grad_scale));
		ref_step(&ref, &v->p, v->grad_scale, step, g, rows, cols, 0, cols);
		struct starnn_sgd_step s = {v->p, v->grad_scale, step == 1};
		starnn_sgd_cpu(rows, cols, &s, wc, cols, g, cols, bc, cols);
		free(g);
	}
	float *gw = test_read(tw), *gb = test_read(tb);
	char what[160];
	snprintf(what, sizeof what, "sgd codelet %s [%lld,%lld,%lld,%lld]: w", v->name, (long long)n, (long long)c,
	         (long long)h, (long long)wd);
	test_close_bound(what, gw, ref.w, ref.ew, numel);
	snprintf(what, sizeof what, "sgd codelet %s: buf", v->name);
	test_close_bound(what, gb, ref.b, ref.eb, numel);
	snprintf(what, sizeof what, "sgd codelet %s [%lld,%lld,%lld,%lld]: w, the CPU kernel's bits", v->name,
	         (long long)n, (long long)c, (long long)h, (long long)wd);
	same_as_cpu(what, gw, wc, numel);
	snprintf(what, sizeof what, "sgd codelet %s: buf, the CPU kernel's bits", v->name);
	same_as_cpu(what, gb, bc, numel);
	free(gw), free(gb);

	if (c >= 2) {
		/* One more step on channel parts (strided views), with other
		 * hyper-parameters per part as per-layer groups would have. */
		int64_t sizes[2] = {1, c - 1};
		float *g = test_random(numel, -1, 1);
		TEST_OK(starnn_tensor_write(tg, g));
		TEST_OK(starnn_tensor_split(tw, 1, 2, sizes, NULL));
		TEST_OK(starnn_tensor_split(tg, 1, 2, sizes, NULL));
		TEST_OK(starnn_tensor_split(tb, 1, 2, sizes, NULL));
		struct starnn_sgd_params p1 = v->p;
		p1.lr *= 0.5f;
		TEST_OK(starnn_sgd(tw->parts[0], tg->parts[0], tb->parts[0], &v->p, STEPS + 1, v->grad_scale));
		TEST_OK(starnn_sgd(tw->parts[1], tg->parts[1], tb->parts[1], &p1, STEPS + 1, v->grad_scale));
		ref_step(&ref, &v->p, v->grad_scale, STEPS + 1, g, rows, cols, 0, inner);
		ref_step(&ref, &p1, v->grad_scale, STEPS + 1, g, rows, cols, inner, cols);
		struct starnn_sgd_step s0 = {v->p, v->grad_scale, 0}, s1 = {p1, v->grad_scale, 0};
		starnn_sgd_cpu(rows, inner, &s0, wc, cols, g, cols, bc, cols);
		starnn_sgd_cpu(rows, cols - inner, &s1, wc + inner, cols, g + inner, cols, bc + inner, cols);
		gw = test_read(tw);
		gb = test_read(tb);
		snprintf(what, sizeof what, "sgd codelet %s on channel parts: w", v->name);
		test_close_bound(what, gw, ref.w, ref.ew, numel);
		snprintf(what, sizeof what, "sgd codelet %s on channel parts: buf", v->name);
		test_close_bound(what, gb, ref.b, ref.eb, numel);
		snprintf(what, sizeof what, "sgd codelet %s on channel parts: w, the CPU kernel's bits", v->name);
		same_as_cpu(what, gw, wc, numel);
		snprintf(what, sizeof what, "sgd codelet %s on channel parts: buf, the CPU kernel's bits", v->name);
		same_as_cpu(what, gb, bc, numel);
		free(gw), free(gb), free(g);
	}
	starnn_tensor_destroy(tw), starnn_tensor_destroy(tg), starnn_tensor_destroy(tb);
	ref_free(&ref);
	free(w), free(b), free(wc), free(bc);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b, *c, *t, *h;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&c, "c", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&t, "t", STARNN_FP32, 2, 4, 3));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, 3, 4));
	struct starnn_sgd_params ok = {0.1f, 0.9f, 0, 0, 1}, p;
	TEST_ASSERT(starnn_sgd(a, t, c, &ok, 1, 1.0f) == STARNN_EINVAL, "sgd with a 4x3 grad for 3x4 w must fail");
	TEST_ASSERT(starnn_sgd(a, b, t, &ok, 1, 1.0f) == STARNN_EINVAL, "sgd with a 4x3 buf for 3x4 w must fail");
	TEST_ASSERT(starnn_sgd(a, h, c, &ok, 1, 1.0f) == STARNN_EINVAL, "sgd with an fp16 grad must fail");
	TEST_ASSERT(starnn_sgd(a, b, a, &ok, 1, 1.0f) == STARNN_EINVAL, "sgd with buf == w must fail");
	TEST_ASSERT(starnn_sgd(a, b, c, &ok, 0, 1.0f) == STARNN_EINVAL, "sgd at step 0 must fail");
	TEST_ASSERT(starnn_sgd(a, b, NULL, &ok, 1, 1.0f) == STARNN_EINVAL, "sgd without buf must fail");
	TEST_ASSERT(starnn_sgd(a, b, c, &ok, 1, NAN) == STARNN_EINVAL, "sgd with grad_scale NaN must fail");
	p = ok, p.dampening = 0.1f;
	TEST_ASSERT(starnn_sgd(a, b, c, &p, 1, 1.0f) == STARNN_EINVAL, "Nesterov with dampening must fail");
	p = ok, p.momentum = 0;
	TEST_ASSERT(starnn_sgd(a, b, c, &p, 1, 1.0f) == STARNN_EINVAL, "Nesterov without momentum must fail");
	p = ok, p.lr = -1e-3f;
	TEST_ASSERT(starnn_sgd(a, b, c, &p, 1, 1.0f) == STARNN_EINVAL, "sgd with a negative lr must fail");
	p = ok, p.weight_decay = -1e-3f;
	TEST_ASSERT(starnn_sgd(a, b, c, &p, 1, 1.0f) == STARNN_EINVAL, "sgd with a negative weight decay must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(c), starnn_tensor_destroy(t);
	starnn_tensor_destroy(h);
}

/* sgd_amp: the step read from the loss-scale state and the overflow flag
 * inside the task, and sgd with the same values on the host, both against
 * the double reference: scale S = 1 / grad_scale (a power of two, so the
 * unscaled gradient is the same), step = applied + 1; steps 2 and 4 of 5
 * overflow and must leave everything exactly as it was and not count. */
static void amp_variant(const struct variant *v)
{
	int64_t shape[2] = {3, 45}, four = 4, one = 1;
	size_t n = 135;
	float *w0 = test_random(n, -1, 1), *z = calloc(n, sizeof *z);
	starnn_tensor *w1 = test_tensor("w1", 2, shape, w0), *w2 = test_tensor("w2", 2, shape, w0);
	starnn_tensor *g = test_tensor("g", 2, shape, NULL), *state, *flag;
	starnn_tensor *b1 = test_tensor("b1", 2, shape, z), *b2 = test_tensor("b2", 2, shape, z);
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	struct sgd_ref ref = ref_new(n, w0, z);
	float *wprev = test_read(w1), *bprev = test_read(b1);
	float *wc = malloc(n * sizeof *wc), *bc = malloc(n * sizeof *bc); /* sgd_amp's CPU kernel on host copies */
	memcpy(wc, w0, n * sizeof *wc), memcpy(bc, z, n * sizeof *bc);
	int64_t applied = 0;
	for (int step = 1; step <= 5; step++) {
		int overflow = step == 2 || step == 4;
		float *gv = test_random(n, -1, 1);
		TEST_OK(starnn_tensor_write(g, gv));
		float st[4] = {1.0f / v->grad_scale, 3.0f, 7.0f, (float)applied};
		TEST_OK(starnn_tensor_write(state, st));
		TEST_OK(starnn_fill(overflow ? 1.0f : 0.0f, flag));
		TEST_OK(starnn_sgd_amp(w1, g, b1, &v->p, state, flag));
		const float fl = overflow ? 1.0f : 0.0f;
		starnn_sgd_amp_cpu(1, n, &v->p, st, &fl, wc, n, gv, n, bc, n);
		if (!overflow) {
			TEST_OK(starnn_sgd(w2, g, b2, &v->p, applied + 1, v->grad_scale));
			applied++;
			ref_step(&ref, &v->p, v->grad_scale, (int)applied, gv, 1, n, 0, n);
		}
		float *a = test_read(w1), *b = test_read(w2), *c = test_read(b1), *d = test_read(b2);
		char what[128];
		const char *sk = overflow ? " (skipped)" : "";
		if (overflow) {
			snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: weights unchanged", v->name, step, sk);
			test_close(what, a, wprev, n, 0, 0);
			snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: momentum buffer unchanged", v->name, step, sk);
			test_close(what, c, bprev, n, 0, 0);
		}
		snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: weights", v->name, step, sk);
		test_close_bound(what, a, ref.w, ref.ew, n);
		snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: momentum buffer", v->name, step, sk);
		test_close_bound(what, c, ref.b, ref.eb, n);
		snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: weights, the CPU kernel's bits", v->name, step, sk);
		same_as_cpu(what, a, wc, n);
		snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: momentum buffer, the CPU kernel's bits", v->name, step,
		         sk);
		same_as_cpu(what, c, bc, n);
		snprintf(what, sizeof what, "sgd '%s' with the same values, step %d: weights", v->name, step);
		test_close_bound(what, b, ref.w, ref.ew, n);
		snprintf(what, sizeof what, "sgd '%s' with the same values, step %d: momentum buffer", v->name, step);
		test_close_bound(what, d, ref.b, ref.eb, n);
		free(wprev), free(bprev);
		wprev = a, bprev = c;
		free(b), free(d), free(gv);
	}
	TEST_ASSERT(starnn_sgd_amp(w1, g, b1, &v->p, flag, state) == STARNN_EINVAL, "sgd_amp with state and flag swapped must fail");
	TEST_ASSERT(starnn_sgd_amp(w1, g, b1, &v->p, NULL, flag) == STARNN_EINVAL, "sgd_amp without a state must fail");
	starnn_tensor_destroy(w1), starnn_tensor_destroy(w2), starnn_tensor_destroy(g);
	starnn_tensor_destroy(state), starnn_tensor_destroy(flag);
	starnn_tensor_destroy(b1), starnn_tensor_destroy(b2);
	ref_free(&ref);
	free(w0), free(z), free(wprev), free(bprev), free(wc), free(bc);
}

/* Every instruction-set level gives the generic level's results bit for
 * bit (3 strided rows of 1000: vector loops and tails), first step and
 * later ones. */
static void levels_agree(const struct variant *v)
{
	size_t rows = 3, cols = 1000, ld = 1003, n = rows * ld;
	float *w0 = test_random(n, -1, 1), *g = test_random(n, -1, 1), *b0 = test_random(n, -0.1f, 0.1f), *res[3][2];
	for (int first = 0; first <= 1; first++) {
		struct starnn_sgd_step s = {v->p, v->grad_scale, first};
		int nlev = 0;
		SC_FOR_EACH_LEVEL(lv) {
			float *w = malloc(n * sizeof *w), *b = malloc(n * sizeof *b);
			memcpy(w, w0, n * sizeof *w), memcpy(b, b0, n * sizeof *b);
			starnn_sgd_cpu(rows, cols, &s, w, ld, g, ld, b, ld);
			res[nlev][0] = w, res[nlev][1] = b;
			if (nlev > 0)
				for (int i = 0; i < 2; i++)
					sc_same(v->name, res[nlev][i], res[0][i], n, sizeof(float));
			nlev++;
		}
		sc_level_done();
		for (int l = 0; l < nlev; l++)
			free(res[l][0]), free(res[l][1]);
	}
	free(w0), free(g), free(b0);
}

int main(void)
{
	test_init();
	for (size_t i = 0; i < NVARIANTS; i++) {
		if (!TEST_ON_DEVICE) {
			SC_FOR_EACH_LEVEL(lv) {
				kernel_vs_reference(&variants[i], 7);
				kernel_vs_reference(&variants[i], 300);
			}
			sc_level_done();
			levels_agree(&variants[i]);
		}
		codelet_vs_reference(&variants[i], 1, 1, 1, 1);
		codelet_vs_reference(&variants[i], 4, 3, 5, 7);
		codelet_vs_reference(&variants[i], 2, 16, 32, 32);
	}
	bad_arguments();
	for (size_t i = 0; i < NVARIANTS; i++)
		amp_variant(&variants[i]);
	return test_finish();
}
