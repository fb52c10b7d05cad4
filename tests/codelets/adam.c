/* adam: the kernel against a double-precision reference of torch.optim.Adam
 * / AdamW over 5 steps (written with mhat / vhat as in the papers; L2 and
 * decoupled weight decay, betas, eps, grad_scale variants; strided views),
 * the codelet (CPU, or CUDA in the _cuda build) on whole tensors and channel
 * parts against the same reference, the host bias corrections, adam_amp,
 * every instruction-set level bitwise equal, and bad arguments ->
 * STARNN_EINVAL. adam_cast / adam_amp_cast (the update writing the fp16 /
 * bf16 compute copy): the same bits as adam / adam_amp followed by a
 * convert task, and the copy those of runtime/base/half.h's rounding of the
 * updated weights (rows of 4500: whole chunks and a tail); skipped amp
 * steps leave the copy as it was. Except on CUDA (which contracts and
 * computes adam_amp's constants itself), the codelets' results are also
 * the CPU kernels' bit for bit (OpenCL: docs/opencl.md).
 *
 * Tolerances: the reference carries, next to the exact w, m, v in double,
 * a first-order bound of the kernels' error on each (ref_step): the fp32
 * update rounds a few times per element per step, each rounding 2^-24 of
 * what it rounds (g: 3, m: 3, v: 4, sqrt, / bc2, + eps, step x m, / denom,
 * w decay, the difference: 1 each), the host constants step_size, bc2_sqrt,
 * decay each one rounding of a double value, 1 - beta in fp32 off by what
 * it is off by (0 for beta in [0.5, 1]: Sterbenz), and the errors of the
 * stored m, v, w carried into the next step by their factors (beta1, beta2,
 * decay, the derivatives of the square root and the quotient). FMA
 * contraction (CUDA, other processors) only drops roundings; sqrtf and
 * the division are correctly rounded on both (nvcc's defaults). The state
 * starting at zero, this is a hard bound: no correct fp32 implementation
 * of the formula exceeds it, and an error of 2^-12 relative in any factor
 * is far outside it. Exact results stay exact: the host constants, skipped
 * amp steps, the instruction-set levels against each other. */
#include "codelets/adam.h"
#include "codelets/amp.h"
#include "codelets/convert.h"
#include "codelets/fill.h"
#include "codelets/kernels/adam.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

#define STEPS 5

/* The exact state of n elements and the bounds of the fp32 state's errors. */
struct adam_ref {
	size_t n;
	double *w, *m, *v, *ew, *em, *ev;
};

static struct adam_ref ref_new(size_t n, const float *w)
{
	struct adam_ref r = {.n = n};
	double **a[] = {&r.w, &r.m, &r.v, &r.ew, &r.em, &r.ev};
	for (size_t i = 0; i < 6; i++)
		*a[i] = calloc(n + 1, sizeof(double));
	for (size_t i = 0; i < n; i++)
		r.w[i] = w[i];
	return r;
}

static void ref_free(struct adam_ref *r)
{
	free(r->w), free(r->m), free(r->v), free(r->ew), free(r->em), free(r->ev);
}

/* The relative error of 1 - b^t in double (pow within an ulp or so, then the
 * subtraction: cancellation for b^t near 1) and of one more rounding to fp32. */
static double bc_err(double b, int t)
{
	double bt = pow(b, t);
	return TEST_U32 + TEST_U64 * (4 + 8 * bt / (1 - bt)); /* pow: within 2 ulp (CUDA) */
}

/* One step of Adam in double, m and v from zero at t = 1, with the bounds of
 * the fp32 kernels' errors (see the file's comment); first order, each
 * bound grown by (1 + 16u) for the second-order terms. */
static void ref_step(struct adam_ref *r, const struct starnn_adam_params *p, double gs, int t, const float *grad)
{
	const double u = TEST_U32, ud = TEST_U64, slack = 1 + 16 * u;
	double b1 = p->beta1, b2 = p->beta2, lr = p->lr, wd = p->weight_decay, eps = p->eps;
	double l2 = p->decoupled ? 0 : wd, dec = p->decoupled ? 1.0 - lr * wd : 1.0;
	double omb1 = 1 - b1, omb2 = 1 - b2;
	double e_omb1 = fabs((double)(1.0f - p->beta1) - omb1), e_omb2 = fabs((double)(1.0f - p->beta2) - omb2);
	double step = lr / (1 - pow(b1, t)), bc2 = sqrt(1 - pow(b2, t));
	double e_step = bc_err(b1, t), e_bc2 = bc_err(b2, t), e_dec = p->decoupled ? u * dec + 2 * ud : 0;
	for (size_t i = 0; i < r->n; i++) {
		double w = r->w[i], m = r->m[i], v = r->v[i], ew = r->ew[i], em = r->em[i], ev = r->ev[i];
		double gsg = gs * grad[i], g = gsg + l2 * w;
		double eg = u * (fabs(gsg) + fabs(l2 * w) + fabs(g)) + l2 * ew;
		double m1 = b1 * m + omb1 * g, v1 = b2 * v + omb2 * g * g;
		double em1 = b1 * em + omb1 * eg + e_omb1 * fabs(g) + u * (b1 * fabs(m) + omb1 * fabs(g) + fabs(m1));
		double ev1 = b2 * ev + omb2 * 2 * fabs(g) * eg + e_omb2 * g * g + u * (b2 * v + 2 * omb2 * g * g + v1);
		em1 *= slack, ev1 *= slack;
		double sq = sqrt(v1), esq = (sq > 0 ? fmin(ev1 / sq, sqrt(ev1)) : sqrt(ev1)) + u * sq;
		double den = sq / bc2 + eps, eden = esq / bc2 + sq / bc2 * (e_bc2 + u) + u * den;
		double upd = step * m1 / den, eupd = step * em1 / den + fabs(upd) * (e_step + 2 * u + eden / den);
		double w1 = w * dec - upd;
		double ew1 = dec * ew + fabs(w) * e_dec + (p->decoupled ? u * fabs(w * dec) : 0) + eupd + u * fabs(w1);
		r->w[i] = w1, r->m[i] = m1, r->v[i] = v1;
		r->ew[i] = slack * ew1, r->em[i] = em1, r->ev[i] = ev1;
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
	float *w0 = malloc(rows * ldw * sizeof *w0), *m0 = malloc(rows * ldm * sizeof *m0);
	float *v0 = malloc(rows * ldv * sizeof *v0), *wd = malloc(n * sizeof *wd);
	memcpy(w0, w, rows * ldw * sizeof *w);
	memcpy(m0, m, rows * ldm * sizeof *m);
	memcpy(v0, v, rows * ldv * sizeof *v);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			wd[r * cols + c] = w[r * ldw + c];
	struct adam_ref ref = ref_new(n, wd);

	for (int t = 1; t <= STEPS; t++) {
		float *g = test_random(rows * ldg, -1.0f / vr->grad_scale, 1.0f / vr->grad_scale);
		float *gd = malloc(n * sizeof *gd);
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				gd[r * cols + c] = g[r * ldg + c];
		struct starnn_adam_step s;
		starnn_adam_step_init(&s, &vr->p, t, vr->grad_scale);
		starnn_adam_cpu(rows, cols, &s, w, ldw, g, ldg, m, ldm, v, ldv);
		ref_step(&ref, &vr->p, vr->grad_scale, t, gd);
		free(g), free(gd);
	}
	char what[128];
	snprintf(what, sizeof what, "adam_cpu %s (%zu cols, %s): w after %d steps", vr->name, cols,
	         starnn_simd_name(starnn_simd_level()), STEPS);
	test_close_strided(what, w, rows, cols, ldw, ref.w, ref.ew, w0);
	snprintf(what, sizeof what, "adam_cpu %s (%zu cols): m after %d steps", vr->name, cols, STEPS);
	test_close_strided(what, m, rows, cols, ldm, ref.m, ref.em, m0);
	snprintf(what, sizeof what, "adam_cpu %s (%zu cols): v after %d steps", vr->name, cols, STEPS);
	test_close_strided(what, v, rows, cols, ldv, ref.v, ref.ev, v0);
	ref_free(&ref);
	free(w), free(m), free(v), free(w0), free(m0), free(v0), free(wd);
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

/* STEPS codelet updates against the double reference. */
/* A codelet's result against the CPU kernel's on host copies, bit for bit
 * (not on CUDA). */
static void same_as_cpu(const char *what, const void *got, const void *want, size_t n, size_t es)
{
	if (!TEST_ON_CUDA)
		test_same_bits(what, got, want, n, es);
}

static void codelet_vs_reference(const struct variant *vr, int64_t n, int64_t c, int64_t h, int64_t wd)
{
	int64_t shape[4] = {n, c, h, wd};
	size_t numel = (size_t)(n * c * h * wd);
	float *w = test_random(numel, -1, 1);
	starnn_tensor *tw = test_tensor("w", 4, shape, w), *tg = test_tensor("grad", 4, shape, NULL);
	starnn_tensor *tm = test_tensor("m", 4, shape, NULL), *tv = test_tensor("v", 4, shape, NULL);
	struct adam_ref ref = ref_new(numel, w);
	/* the CPU kernel on host copies (m and v start at 0, as the tensors) */
	float *wc = malloc(numel * sizeof *wc), *mc = calloc(numel, sizeof *mc), *vc = calloc(numel, sizeof *vc);
	memcpy(wc, w, numel * sizeof *w);
	struct starnn_adam_step s;
	for (int t = 1; t <= STEPS; t++) {
		float *g = test_random(numel, -1, 1);
		TEST_OK(starnn_tensor_write(tg, g));
		TEST_OK(starnn_adam(tw, tg, tm, tv, &vr->p, t, vr->grad_scale));
		ref_step(&ref, &vr->p, vr->grad_scale, t, g);
		starnn_adam_step_init(&s, &vr->p, t, vr->grad_scale);
		starnn_adam_cpu(1, numel, &s, wc, numel, g, numel, mc, numel, vc, numel);
		free(g);
	}
	float *gw = test_read(tw), *gm = test_read(tm), *gv = test_read(tv);
	char what[160];
	snprintf(what, sizeof what, "adam codelet %s [%lld,%lld,%lld,%lld]: w", vr->name, (long long)n, (long long)c,
	         (long long)h, (long long)wd);
	test_close_bound(what, gw, ref.w, ref.ew, numel);
	snprintf(what, sizeof what, "adam codelet %s: m", vr->name);
	test_close_bound(what, gm, ref.m, ref.em, numel);
	snprintf(what, sizeof what, "adam codelet %s: v", vr->name);
	test_close_bound(what, gv, ref.v, ref.ev, numel);
	snprintf(what, sizeof what, "adam codelet %s [%lld,%lld,%lld,%lld]: w, m, v, the CPU kernel's bits", vr->name,
	         (long long)n, (long long)c, (long long)h, (long long)wd);
	same_as_cpu(what, gw, wc, numel, 4);
	same_as_cpu(what, gm, mc, numel, 4);
	same_as_cpu(what, gv, vc, numel, 4);
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
		ref_step(&ref, &vr->p, vr->grad_scale, STEPS + 1, g);
		starnn_adam_step_init(&s, &vr->p, STEPS + 1, vr->grad_scale);
		starnn_adam_cpu(1, numel, &s, wc, numel, g, numel, mc, numel, vc, numel);
		gw = test_read(tw);
		gv = test_read(tv);
		snprintf(what, sizeof what, "adam codelet %s on channel parts: w, v, the CPU kernel's bits", vr->name);
		same_as_cpu(what, gw, wc, numel, 4);
		same_as_cpu(what, gv, vc, numel, 4);
		snprintf(what, sizeof what, "adam codelet %s on channel parts: w", vr->name);
		test_close_bound(what, gw, ref.w, ref.ew, numel);
		snprintf(what, sizeof what, "adam codelet %s on channel parts: v", vr->name);
		test_close_bound(what, gv, ref.v, ref.ev, numel);
		free(gw), free(gv), free(g);
	}
	starnn_tensor_destroy(tw), starnn_tensor_destroy(tg), starnn_tensor_destroy(tm), starnn_tensor_destroy(tv);
	ref_free(&ref);
	free(w), free(wc), free(mc), free(vc);
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
 * inside the task, and adam with the same values on the host, both against
 * the double reference: scale S = 1 / grad_scale (a power of two, so the
 * unscaled gradient is the same), step = applied + 1; steps 2 and 4 of 5
 * overflow and must leave everything exactly as it was and not count (the
 * CUDA kernel computes the step's constants itself: within the same
 * bound, one rounding of a double value each). */
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
	struct adam_ref ref = ref_new(n, w0);
	float *wprev = test_read(w1), *vprev = test_read(v1);
	float *wc = malloc(n * sizeof *wc), *mc = calloc(n, sizeof *mc), *vc = calloc(n, sizeof *vc);
	memcpy(wc, w0, n * sizeof *wc); /* adam_amp's CPU kernel on host copies */
	int64_t applied = 0;
	for (int step = 1; step <= 5; step++) {
		int overflow = step == 2 || step == 4;
		float *gv = test_random(n, -1, 1);
		TEST_OK(starnn_tensor_write(g, gv));
		float st[4] = {1.0f / v->grad_scale, 3.0f, 7.0f, (float)applied};
		TEST_OK(starnn_tensor_write(state, st));
		TEST_OK(starnn_fill(overflow ? 1.0f : 0.0f, flag));
		TEST_OK(starnn_adam_amp(w1, g, m1, v1, &v->p, state, flag));
		const float fl = overflow ? 1.0f : 0.0f;
		starnn_adam_amp_cpu(1, n, &v->p, st, &fl, wc, n, gv, n, mc, n, vc, n);
		if (!overflow) {
			TEST_OK(starnn_adam(w2, g, m2, v2, &v->p, applied + 1, v->grad_scale));
			applied++;
			ref_step(&ref, &v->p, v->grad_scale, (int)applied, gv);
		}
		float *a = test_read(w1), *b = test_read(w2), *c = test_read(v1), *d = test_read(v2);
		char what[128];
		const char *sk = overflow ? " (skipped)" : "";
		if (overflow) {
			snprintf(what, sizeof what, "adam_amp '%s' step %d%s: weights unchanged", v->name, step, sk);
			test_close(what, a, wprev, n, 0, 0);
			snprintf(what, sizeof what, "adam_amp '%s' step %d%s: second moment unchanged", v->name, step, sk);
			test_close(what, c, vprev, n, 0, 0);
		}
		snprintf(what, sizeof what, "adam_amp '%s' step %d%s: weights", v->name, step, sk);
		test_close_bound(what, a, ref.w, ref.ew, n);
		snprintf(what, sizeof what, "adam_amp '%s' step %d%s: second moment", v->name, step, sk);
		test_close_bound(what, c, ref.v, ref.ev, n);
		snprintf(what, sizeof what, "adam_amp '%s' step %d%s: weights, second moment, the CPU kernel's bits",
		         v->name, step, sk);
		same_as_cpu(what, a, wc, n, 4);
		same_as_cpu(what, c, vc, n, 4);
		snprintf(what, sizeof what, "adam '%s' with the same values, step %d: weights", v->name, step);
		test_close_bound(what, b, ref.w, ref.ew, n);
		snprintf(what, sizeof what, "adam '%s' with the same values, step %d: second moment", v->name, step);
		test_close_bound(what, d, ref.v, ref.ev, n);
		free(wprev), free(vprev);
		wprev = a, vprev = c;
		free(b), free(d), free(gv);
	}
	TEST_ASSERT(starnn_adam_amp(w1, g, m1, v1, &v->p, flag, state) == STARNN_EINVAL, "adam_amp with state and flag swapped must fail");
	TEST_ASSERT(starnn_adam_amp(w1, g, m1, v1, &v->p, state, NULL) == STARNN_EINVAL, "adam_amp without a flag must fail");
	starnn_tensor_destroy(w1), starnn_tensor_destroy(w2), starnn_tensor_destroy(g);
	starnn_tensor_destroy(state), starnn_tensor_destroy(flag);
	starnn_tensor_destroy(m1), starnn_tensor_destroy(m2), starnn_tensor_destroy(v1), starnn_tensor_destroy(v2);
	ref_free(&ref);
	free(w0), free(wprev), free(vprev), free(wc), free(mc), free(vc);
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

/* The bits of n elements of a 16-bit tensor, and of fp32 values rounded
 * to its dtype by runtime/base/half.h. */
static uint16_t *bits16(starnn_tensor *t)
{
	uint16_t *b = malloc(starnn_tensor_numel(t) * sizeof *b);
	TEST_ASSERT(b != NULL, "out of memory");
	TEST_OK(starnn_tensor_read(t, b));
	return b;
}

static uint16_t *narrowed(starnn_dtype dt, const float *x, size_t n)
{
	uint16_t *b = malloc(n * sizeof *b);
	TEST_ASSERT(b != NULL, "out of memory");
	for (size_t i = 0; i < n; i++)
		b[i] = dt == STARNN_BF16 ? starnn_float_to_bf16(x[i]) : starnn_float_to_half(x[i]);
	return b;
}

/* adam_cast against adam + convert, and adam_amp_cast against adam_amp +
 * convert (steps 2 and 4 of 5 skipped), bit for bit: w, m, v, and h. */
static void cast_variant(const struct variant *v, starnn_dtype hdt, int amp)
{
	int64_t shape[2] = {3, 4500}, four = 4, one = 1;
	size_t n = 3 * 4500;
	float *w0 = test_random(n, -1, 1);
	starnn_tensor *w1 = test_tensor("w1", 2, shape, w0), *w2 = test_tensor("w2", 2, shape, w0);
	starnn_tensor *g = test_tensor("g", 2, shape, NULL), *state = NULL, *flag = NULL, *h1, *h2;
	starnn_tensor *m1 = test_tensor("m1", 2, shape, NULL), *m2 = test_tensor("m2", 2, shape, NULL);
	starnn_tensor *v1 = test_tensor("v1", 2, shape, NULL), *v2 = test_tensor("v2", 2, shape, NULL);
	TEST_OK(starnn_tensor_create(&h1, "h1", hdt, 2, shape));
	TEST_OK(starnn_tensor_create(&h2, "h2", hdt, 2, shape));
	TEST_OK(starnn_convert(w1, h1)); /* current before the first update */
	TEST_OK(starnn_convert(w2, h2));
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	/* the CPU kernels (_cast, _amp_cast) on host copies */
	float *wc = malloc(n * sizeof *wc), *mc = calloc(n, sizeof *mc), *vc = calloc(n, sizeof *vc);
	memcpy(wc, w0, n * sizeof *wc);
	uint16_t *hc = narrowed(hdt, w0, n);
	int64_t applied = 0;
	for (int step = 1; step <= 5; step++) {
		const int skip = amp && (step == 2 || step == 4);
		float *gv = test_random(n, -1, 1);
		TEST_OK(starnn_tensor_write(g, gv));
		uint16_t *hprev = bits16(h1);
		if (amp) {
			float st[4] = {1.0f / v->grad_scale, 3.0f, 7.0f, (float)applied};
			TEST_OK(starnn_tensor_write(state, st));
			TEST_OK(starnn_fill(skip ? 1.0f : 0.0f, flag));
			TEST_OK(starnn_adam_amp_cast(w1, g, m1, v1, &v->p, state, flag, h1));
			TEST_OK(starnn_adam_amp(w2, g, m2, v2, &v->p, state, flag));
			const float fl = skip ? 1.0f : 0.0f;
			starnn_adam_amp_cast_cpu(3, 4500, &v->p, st, &fl, wc, 4500, gv, 4500, mc, 4500, vc, 4500, hdt, hc,
			                         4500);
		} else {
			TEST_OK(starnn_adam_cast(w1, g, m1, v1, &v->p, step, v->grad_scale, h1));
			TEST_OK(starnn_adam(w2, g, m2, v2, &v->p, step, v->grad_scale));
			struct starnn_adam_step s;
			starnn_adam_step_init(&s, &v->p, step, v->grad_scale);
			starnn_adam_cast_cpu(3, 4500, &s, wc, 4500, gv, 4500, mc, 4500, vc, 4500, hdt, hc, 4500);
		}
		TEST_OK(starnn_convert(w2, h2));
		applied += !skip;
		starnn_tensor *got[4] = {w1, m1, v1, h1}, *want[4] = {w2, m2, v2, h2};
		static const char *const names[4] = {"w", "m", "v", "h"};
		char what[160];
		for (int i = 0; i < 4; i++) {
			float *a = test_read(got[i]), *b = test_read(want[i]);
			snprintf(what, sizeof what, "adam%s_cast '%s' %s step %d%s: %s as two tasks'", amp ? "_amp" : "",
			         v->name, starnn_dtype_name(hdt), step, skip ? " (skipped)" : "", names[i]);
			sc_same(what, a, b, n, sizeof *a);
			free(a), free(b);
		}
		float *wv = test_read(w1);
		uint16_t *hb = bits16(h1), *ref = narrowed(hdt, wv, n);
		snprintf(what, sizeof what, "adam%s_cast '%s' %s step %d: h is w rounded (runtime/base/half.h)",
		         amp ? "_amp" : "", v->name, starnn_dtype_name(hdt), step);
		sc_same(what, hb, ref, n, sizeof *hb);
		if (skip) {
			snprintf(what, sizeof what, "adam_amp_cast '%s' step %d (skipped): h unchanged", v->name, step);
			sc_same(what, hb, hprev, n, sizeof *hb);
		}
		snprintf(what, sizeof what, "adam%s_cast '%s' %s step %d: w and h, the CPU kernel's bits", amp ? "_amp" : "",
		         v->name, starnn_dtype_name(hdt), step);
		same_as_cpu(what, wv, wc, n, 4);
		same_as_cpu(what, hb, hc, n, 2);
		free(wv), free(hb), free(ref), free(hprev), free(gv);
	}
	starnn_tensor *t32;
	int64_t other[2] = {4500, 3};
	TEST_OK(starnn_tensor_create(&t32, "t32", hdt, 2, other));
	TEST_ASSERT(starnn_adam_cast(w1, g, m1, v1, &v->p, 1, 1.0f, NULL) == STARNN_EINVAL, "adam_cast without h must fail");
	TEST_ASSERT(starnn_adam_cast(w1, g, m1, v1, &v->p, 1, 1.0f, w2) == STARNN_EINVAL, "adam_cast with an fp32 h must fail");
	TEST_ASSERT(starnn_adam_cast(w1, g, m1, v1, &v->p, 1, 1.0f, t32) == STARNN_EINVAL,
	            "adam_cast with a 4500x3 h for 3x4500 w must fail");
	TEST_ASSERT(starnn_adam_cast(w1, g, m1, v1, &v->p, 0, 1.0f, h1) == STARNN_EINVAL, "adam_cast at step 0 must fail");
	TEST_ASSERT(starnn_adam_amp_cast(w1, g, m1, v1, &v->p, state, NULL, h1) == STARNN_EINVAL,
	            "adam_amp_cast without a flag must fail");
	TEST_ASSERT(starnn_adam_amp_cast(w1, g, m1, v1, &v->p, state, flag, t32) == STARNN_EINVAL,
	            "adam_amp_cast with a 4500x3 h must fail");
	starnn_tensor *all[] = {w1, w2, g, state, flag, h1, h2, m1, m2, v1, v2, t32};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		starnn_tensor_destroy(all[i]);
	free(w0), free(wc), free(mc), free(vc), free(hc);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE)
		step_init();
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
	for (size_t i = 0; i < NVARIANTS; i += 2)
		for (int amp = 0; amp < 2; amp++) {
			cast_variant(&variants[i], STARNN_BF16, amp);
			cast_variant(&variants[i + (i + 1 < NVARIANTS)], STARNN_FP16, amp);
		}
	return test_finish();
}
