/* sgd: the kernel against a double-precision reference of torch.optim.SGD
 * over 5 steps (momentum, dampening, Nesterov, weight decay, grad_scale
 * variants; strided views), the codelet (CPU, or CUDA in the _cuda build)
 * against direct kernel calls on whole tensors and channel parts, and bad
 * arguments -> STARNN_EINVAL. */
#include "codelets/sgd.h"
#include "codelets/amp.h"
#include "codelets/fill.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

#define STEPS 5

/* torch.optim.SGD._single_tensor_sgd, in double. */
static void reference_step(size_t n, const struct starnn_sgd_params *p, double gs, int step, double *w,
                           const float *grad, double *buf)
{
	for (size_t i = 0; i < n; i++) {
		double g = gs * grad[i];
		if (p->weight_decay != 0)
			g += (double)p->weight_decay * w[i];
		if (p->momentum != 0) {
			if (step == 1)
				buf[i] = g;
			else
				buf[i] = (double)p->momentum * buf[i] + (1.0 - (double)p->dampening) * g;
			g = p->nesterov ? g + (double)p->momentum * buf[i] : buf[i];
		}
		w[i] -= (double)p->lr * g;
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
	double *rw = malloc(n * sizeof *rw), *rb = calloc(n, sizeof *rb);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			rw[r * cols + c] = w[r * ldw + c];

	for (int step = 1; step <= STEPS; step++) {
		/* the gradient of a mixed-precision step is grad_scale^-1 larger */
		float *g = test_random(rows * ldg, -1.0f / v->grad_scale, 1.0f / v->grad_scale);
		float *gd = malloc(n * sizeof *gd);
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				gd[r * cols + c] = g[r * ldg + c];
		struct starnn_sgd_step s = {v->p, v->grad_scale, step == 1};
		starnn_sgd_cpu(rows, cols, &s, w, ldw, g, ldg, buf, ldb);
		reference_step(n, &v->p, v->grad_scale, step, rw, gd, rb);
		free(g), free(gd);
	}
	/* Expected: the whole padded arrays, padding untouched; buf entirely
	 * untouched without momentum. */
	float *wexp = malloc(rows * ldw * sizeof *wexp), *bexp = malloc(rows * ldb * sizeof *bexp);
	memcpy(wexp, w0, rows * ldw * sizeof *w0);
	memcpy(bexp, b0, rows * ldb * sizeof *b0);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			wexp[r * ldw + c] = (float)rw[r * cols + c];
			if (v->p.momentum != 0)
				bexp[r * ldb + c] = (float)rb[r * cols + c];
		}
	char what[128];
	/* fp32 arithmetic vs double over 5 steps: a few ulps of |w| ~ 1. */
	snprintf(what, sizeof what, "sgd_cpu %s (%zu cols, %s): w after %d steps", v->name, cols,
	         starnn_simd_name(starnn_simd_level()), STEPS);
	test_close(what, w, wexp, rows * ldw, 1e-5f, 1e-6f);
	snprintf(what, sizeof what, "sgd_cpu %s (%zu cols): buf after %d steps", v->name, cols, STEPS);
	test_close(what, buf, bexp, rows * ldb, 1e-5f, 1e-6f);
	free(w), free(buf), free(w0), free(b0), free(rw), free(rb), free(wexp), free(bexp);
}

/* STEPS codelet updates against the same kernel calls on host copies. */
static void codelet_vs_kernel(const struct variant *v, int64_t n, int64_t c, int64_t h, int64_t wd)
{
	int64_t shape[4] = {n, c, h, wd};
	size_t numel = (size_t)(n * c * h * wd), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * wd);
	float *w = test_random(numel, -1, 1), *b = test_random(numel, -1, 1);
	starnn_tensor *tw = test_tensor("w", 4, shape, w), *tg = test_tensor("grad", 4, shape, NULL);
	starnn_tensor *tb = test_tensor("buf", 4, shape, b);
	for (int step = 1; step <= STEPS; step++) {
		float *g = test_random(numel, -1, 1);
		TEST_OK(starnn_tensor_write(tg, g));
		TEST_OK(starnn_sgd(tw, tg, tb, &v->p, step, v->grad_scale));
		struct starnn_sgd_step s = {v->p, v->grad_scale, step == 1};
		starnn_sgd_cpu(rows, cols, &s, w, cols, g, cols, b, cols);
		free(g);
	}
	/* CPU: the same kernel, bit-exact. CUDA: FMA contraction differs. */
	float rtol = TEST_ON_CUDA ? 1e-5f : 0, atol = TEST_ON_CUDA ? 1e-6f : 0;
	float *gw = test_read(tw), *gb = test_read(tb);
	char what[128];
	snprintf(what, sizeof what, "sgd codelet %s: w", v->name);
	test_close(what, gw, w, numel, rtol, atol);
	snprintf(what, sizeof what, "sgd codelet %s: buf", v->name);
	test_close(what, gb, b, numel, rtol, atol);
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
		struct starnn_sgd_step s0 = {v->p, v->grad_scale, 0}, s1 = {p1, v->grad_scale, 0};
		starnn_sgd_cpu(rows, inner, &s0, w, cols, g, cols, b, cols);
		starnn_sgd_cpu(rows, cols - inner, &s1, w + inner, cols, g + inner, cols, b + inner, cols);
		gw = test_read(tw);
		gb = test_read(tb);
		snprintf(what, sizeof what, "sgd codelet %s on channel parts: w", v->name);
		test_close(what, gw, w, numel, rtol, atol);
		snprintf(what, sizeof what, "sgd codelet %s on channel parts: buf", v->name);
		test_close(what, gb, b, numel, rtol, atol);
		free(gw), free(gb), free(g);
	}
	starnn_tensor_destroy(tw), starnn_tensor_destroy(tg), starnn_tensor_destroy(tb);
	free(w), free(b);
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
 * inside the task against sgd with the same values on the host: scale
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
	starnn_tensor *b1 = test_tensor("b1", 2, shape, NULL), *b2 = test_tensor("b2", 2, shape, NULL);
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
		TEST_OK(starnn_sgd_amp(w1, g, b1, &v->p, state, flag));
		if (!overflow) {
			TEST_OK(starnn_sgd(w2, g, b2, &v->p, applied + 1, v->grad_scale));
			applied++;
		}
		float *a = test_read(w1), *b = test_read(w2), *c = test_read(b1), *d = test_read(b2);
		char what[128];
		snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: weights", v->name, step, overflow ? " (skipped)" : "");
		test_close(what, a, b, n, rtol, 0);
		snprintf(what, sizeof what, "sgd_amp '%s' step %d%s: momentum buffer", v->name, step, overflow ? " (skipped)" : "");
		test_close(what, c, d, n, rtol, 0);
		free(a), free(b), free(c), free(d), free(gv);
	}
	TEST_ASSERT(starnn_sgd_amp(w1, g, b1, &v->p, flag, state) == STARNN_EINVAL, "sgd_amp with state and flag swapped must fail");
	TEST_ASSERT(starnn_sgd_amp(w1, g, b1, &v->p, NULL, flag) == STARNN_EINVAL, "sgd_amp without a state must fail");
	starnn_tensor_destroy(w1), starnn_tensor_destroy(w2), starnn_tensor_destroy(g);
	starnn_tensor_destroy(state), starnn_tensor_destroy(flag);
	starnn_tensor_destroy(b1), starnn_tensor_destroy(b2);
	free(w0);
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
