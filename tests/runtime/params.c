/* runtime/params: the micro-batch reduction in its fixed order, the
 * gradient hook, the update (Adam, SGD, warm-up, weight decay, loss
 * scaling with a skipped step) on a tiny set of parameters against a hand
 * computation in double, the compute copies (kept current by Adam's update
 * or by starnn_params_convert), the tensors' priorities, the checkpoint
 * iteration and
 * the error paths. */
#include "codelets/amp.h"
#include "codelets/axpy.h"
#include "runtime/base/half.h"
#include "runtime/train/params.h"
#include "tests/testlib.h"

#define COLS 6

/* The tree of params.h in fp32, evaluated on the host: stride 1, 2, 4 ...,
 * g[i] += g[i + stride]. A sum of two floats computed in double and
 * rounded to float is the fp32 sum (double holds it exactly), so this is
 * what the axpy tasks must give bit for bit. */
static float tree_sum(const float *g, int n, int col)
{
	float s[16];
	for (int i = 0; i < n; i++)
		s[i] = g[i * COLS + col];
	for (int stride = 1; stride < n; stride *= 2)
		for (int i = 0; i + stride < n; i += 2 * stride)
			s[i] = (float)((double)s[i] + (double)s[i + stride]);
	return s[0];
}

static float sequential_sum(const float *g, int n, int col)
{
	float s = g[col];
	for (int i = 1; i < n; i++)
		s = (float)((double)s + (double)g[i * COLS + col]);
	return s;
}

static starnn_params *new_set(enum starnn_optim_kind kind, starnn_dtype compute, enum starnn_loss_scaling ls)
{
	struct starnn_params_config c = {.compute = compute, .loss_scaling = ls};
	starnn_optim_defaults(&c.optim);
	c.optim.kind = kind;
	starnn_params *ps;
	TEST_OK(starnn_params_new(&ps, &c));
	return ps;
}

static starnn_param *add(starnn_params *ps, const char *name, int nslices, int flags, const float *init)
{
	int64_t shape[2] = {1, COLS};
	starnn_tensor *t = test_tensor(name, 2, shape, init);
	starnn_param *p;
	TEST_OK(starnn_params_add(ps, name, t, nslices, flags, &p));
	return p;
}

static void write_slices(starnn_param *p, const float *g)
{
	for (int i = 0; i < p->nslices; i++)
		TEST_OK(starnn_tensor_write(p->grad[i], g + i * COLS));
}

/* Column 0 holds values whose fp32 sum depends on the order, so that the
 * check tells the tree from a left-to-right sum; the others are random of
 * mixed magnitudes. */
static void slice_values(float *g, int n)
{
	for (int i = 0; i < n; i++)
		for (int c = 0; c < COLS; c++)
			g[i * COLS + c] = test_uniform(-1, 1) * (c % 2 ? 1e-3f : 1e3f);
	const float order[8] = {1e8f, 1, -1e8f, 1, 3, 1, 1, 1};
	for (int i = 0; i < n && n > 2; i++)
		g[i * COLS] = order[i];
}

struct hook_log {
	int calls;
	const char *names[8];
};

/* Stands for the cross-rank all-reduce: an average over two identical
 * ranks, i.e. grad[0] *= 0.5 (exact). */
static int halve_hook(void *ctx, starnn_param *p)
{
	struct hook_log *log = ctx;
	if (log->calls < 8)
		log->names[log->calls] = p->name;
	log->calls++;
	return starnn_scale(0.5f, p->grad[0]);
}

static void reduction(void)
{
	const int counts[5] = {1, 2, 3, 5, 8};
	starnn_params *ps = new_set(STARNN_OPTIM_SGD, STARNN_FP32, STARNN_LOSS_SCALE_NONE);
	float g[5][8 * COLS];
	char name[5][16];
	for (int k = 0; k < 5; k++) {
		snprintf(name[k], sizeof name[k], "p%d/weight", k);
		add(ps, name[k], counts[k], 0, NULL);
		slice_values(g[k], counts[k]);
		write_slices(starnn_params_at(ps, k), g[k]);
	}
	struct hook_log log = {0};
	starnn_params_set_grad_hook(ps, halve_hook, &log);
	TEST_OK(starnn_params_reduce(ps));
	TEST_ASSERT(log.calls == 5, "the hook ran %d times for 5 parameters", log.calls);
	for (int k = 0; k < 5 && k < log.calls; k++)
		TEST_ASSERT(strcmp(log.names[k], name[k]) == 0, "hook call %d for %s, expected %s", k, log.names[k],
		            name[k]);
	for (int k = 0; k < 5; k++) {
		float *got = test_read(starnn_params_at(ps, k)->grad[0]);
		for (int c = 0; c < COLS; c++) {
			float want = 0.5f * tree_sum(g[k], counts[k], c);
			TEST_ASSERT(memcmp(&got[c], &want, sizeof want) == 0, "%d slices, column %d: %.9g, tree order %.9g",
			            counts[k], c, (double)got[c], (double)want);
		}
		free(got);
	}
	/* the check tells the orders apart: 5 slices of column 0 give 3 by
	 * the tree ((1e8 + 1) + (-1e8 + 1)) + 3, and 4 left to right */
	TEST_ASSERT(tree_sum(g[3], 5, 0) == 3.0f && sequential_sum(g[3], 5, 0) == 4.0f,
	            "column 0 of 5 slices: tree %g, sequential %g", (double)tree_sum(g[3], 5, 0),
	            (double)sequential_sum(g[3], 5, 0));
	starnn_params_destroy(ps);
}

/* Adam of codelets/adam.h (PyTorch's order) in double, one step. */
static void adam_ref(double *w, double *m, double *v, double g, const struct starnn_optim *o, double lr, int64_t t)
{
	g += o->weight_decay * *w;
	*m = o->beta1 * *m + (1 - o->beta1) * g;
	*v = o->beta2 * *v + (1 - o->beta2) * g * g;
	double bc1 = 1 - pow(o->beta1, (double)t), bc2 = 1 - pow(o->beta2, (double)t);
	*w -= lr / bc1 * *m / (sqrt(*v) / sqrt(bc2) + o->eps);
}

static void sgd_ref(double *w, double *buf, double g, const struct starnn_optim *o, double lr, int first)
{
	g += o->weight_decay * *w;
	*buf = first ? g : o->momentum * *buf + g;
	*w -= lr * *buf;
}

static void check_close(const char *what, starnn_tensor *t, const double *ref, float rtol, float atol)
{
	float *got = test_read(t), want[COLS];
	for (int c = 0; c < COLS; c++)
		want[c] = (float)ref[c];
	test_close(what, got, want, COLS, rtol, atol);
	free(got);
}

/* Four steps of two parameters (3 and 1 slices) with a warm-up over 3
 * steps and weight decay, against the double computation. */
static void update(enum starnn_optim_kind kind)
{
	struct starnn_params_config c = {.compute = STARNN_FP32};
	starnn_optim_defaults(&c.optim);
	c.optim.kind = kind;
	c.optim.lr = kind == STARNN_OPTIM_ADAM ? 0.01f : 0.05f;
	c.optim.warmup = 3;
	c.optim.momentum = kind == STARNN_OPTIM_SGD ? 0.9f : 0.0f;
	c.optim.weight_decay = 0.01f;
	starnn_params *ps;
	TEST_OK(starnn_params_new(&ps, &c));
	const int nslices[2] = {3, 1};
	double w[2][COLS], s1[2][COLS] = {{0}}, s2[2][COLS] = {{0}};
	for (int k = 0; k < 2; k++) {
		float init[COLS];
		for (int i = 0; i < COLS; i++)
			w[k][i] = init[i] = test_uniform(-1, 1);
		add(ps, k ? "b" : "w", nslices[k], 0, init);
	}
	TEST_ASSERT(starnn_params_nslots(ps) == (kind == STARNN_OPTIM_ADAM ? 2 : 1), "slots");
	for (int64_t step = 1; step <= 4; step++) {
		float lr = starnn_params_lr(ps, step);
		float want_lr = step < 3 ? (float)(c.optim.lr * (double)step / 3.0) : c.optim.lr;
		TEST_ASSERT(lr == want_lr, "lr at step %lld: %g, expected %g", (long long)step, (double)lr, (double)want_lr);
		for (int k = 0; k < 2; k++) {
			float g[3 * COLS];
			for (int i = 0; i < nslices[k] * COLS; i++)
				g[i] = test_uniform(-1, 1);
			write_slices(starnn_params_at(ps, k), g);
			for (int i = 0; i < COLS; i++) {
				double gi = tree_sum(g, nslices[k], i);
				if (kind == STARNN_OPTIM_ADAM)
					adam_ref(&w[k][i], &s1[k][i], &s2[k][i], gi, &c.optim, lr, step);
				else
					sgd_ref(&w[k][i], &s1[k][i], gi, &c.optim, lr, step == 1);
			}
		}
		TEST_OK(starnn_params_reduce(ps));
		TEST_OK(starnn_params_update(ps, step));
	}
	const char *what = kind == STARNN_OPTIM_ADAM ? "adam" : "sgd";
	char label[160];
	for (int k = 0; k < 2; k++) {
		starnn_param *p = starnn_params_at(ps, k);
		snprintf(label, sizeof label, "%s %s after 4 steps", what, p->name);
		check_close(label, p->master, w[k], 1e-6f, 1e-7f);
		snprintf(label, sizeof label, "%s %s %s", what, p->name, starnn_params_slot_name(ps, 0));
		check_close(label, p->state[0], s1[k], 1e-5f, 1e-7f);
		if (kind == STARNN_OPTIM_ADAM) {
			snprintf(label, sizeof label, "%s %s %s", what, p->name, starnn_params_slot_name(ps, 1));
			check_close(label, p->state[1], s2[k], 1e-5f, 1e-9f);
		}
	}
	TEST_ASSERT(starnn_params_update(ps, 0) == STARNN_EINVAL, "step 0 refused");
	starnn_params_destroy(ps);
}

static void read_bits(starnn_params *ps, uint32_t *out)
{
	for (int k = 0; k < starnn_params_count(ps); k++) {
		starnn_param *p = starnn_params_at(ps, k);
		starnn_tensor *t[3] = {p->master, p->state[0], p->state[1]};
		for (int j = 0; j < 3; j++)
			TEST_OK(starnn_tensor_read(t[j], out + (k * 3 + j) * COLS));
	}
}

/* Dynamic loss scaling with Adam: gradients scaled by the state's scale
 * are unscaled; an Inf at step 2 skips that step (every master and state
 * unchanged bit for bit, scale halved) and step 3 is Adam's second step. */
static void loss_scaling(void)
{
	starnn_params *ps = new_set(STARNN_OPTIM_ADAM, STARNN_FP16, STARNN_LOSS_SCALE_DYNAMIC);
	struct starnn_optim o = starnn_params_get_config(ps)->optim;
	TEST_ASSERT(starnn_params_loss_scale(ps) != NULL, "a loss-scale state");
	TEST_ASSERT(starnn_params_loss_scale(ps) && starnn_params_loss_scale(ps)->priority == STARNN_PRIO_PARAM,
	            "the loss-scale state at STARNN_PRIO_PARAM (the update writes it)");
	starnn_params_set_inject_inf_step(ps, 2);
	double w[2][COLS], m[2][COLS] = {{0}}, v[2][COLS] = {{0}};
	for (int k = 0; k < 2; k++) {
		float init[COLS];
		for (int i = 0; i < COLS; i++)
			w[k][i] = init[i] = test_uniform(-1, 1);
		add(ps, k ? "b" : "w", 2, 0, init);
	}
	uint32_t before[2 * 3 * COLS], after[2 * 3 * COLS];
	int64_t t = 0;
	for (int64_t step = 1; step <= 3; step++) {
		struct starnn_amp_state st;
		TEST_OK(starnn_params_get_amp_state(ps, &st));
		for (int k = 0; k < 2; k++) {
			float g[2 * COLS];
			for (int i = 0; i < 2 * COLS; i++)
				g[i] = test_uniform(-1, 1);
			float scaled[2 * COLS];
			for (int i = 0; i < 2 * COLS; i++)
				scaled[i] = g[i] * st.scale; /* a power of 2: exact */
			write_slices(starnn_params_at(ps, k), scaled);
			for (int i = 0; step != 2 && i < COLS; i++)
				adam_ref(&w[k][i], &m[k][i], &v[k][i], tree_sum(g, 2, i), &o, o.lr, t + 1);
		}
		if (step == 2)
			read_bits(ps, before);
		TEST_OK(starnn_params_reduce(ps));
		TEST_OK(starnn_params_update(ps, step));
		if (step == 2) {
			read_bits(ps, after);
			TEST_ASSERT(memcmp(before, after, sizeof before) == 0, "the overflowing step changed the parameters");
		} else {
			t++;
		}
	}
	struct starnn_amp_state st;
	TEST_OK(starnn_params_get_amp_state(ps, &st));
	TEST_ASSERT(st.scale == STARNN_AMP_INIT_SCALE / 2 && st.skipped_steps == 1 && st.applied_steps == 2 &&
	                    st.good_steps == 1,
	            "state after 3 steps, 1 skipped: scale %g, %lld clean, %lld skipped, %lld applied", (double)st.scale,
	            (long long)st.good_steps, (long long)st.skipped_steps, (long long)st.applied_steps);
	for (int k = 0; k < 2; k++) {
		starnn_param *p = starnn_params_at(ps, k);
		check_close("amp adam masters", p->master, w[k], 1e-6f, 1e-7f);
		check_close("amp adam exp_avg", p->state[0], m[k], 1e-5f, 1e-7f);
	}
	/* the state of a resumed run: set, read back; bad values refused */
	struct starnn_amp_state set = {1024.0f, 7, 3, 12}, got;
	TEST_OK(starnn_params_set_amp_state(ps, &set));
	TEST_OK(starnn_params_get_amp_state(ps, &got));
	TEST_ASSERT(got.scale == 1024.0f && got.good_steps == 7 && got.skipped_steps == 3 && got.applied_steps == 12,
	            "amp state round trip");
	set.scale = -1;
	TEST_ASSERT(starnn_params_set_amp_state(ps, &set) == STARNN_EINVAL, "negative scale refused");
	starnn_params_destroy(ps);
}

/* fp16 compute: copies only where asked, rounded from the masters. */
static void compute_copies(void)
{
	starnn_params *ps = new_set(STARNN_OPTIM_ADAM, STARNN_FP16, STARNN_LOSS_SCALE_NONE);
	float init[COLS] = {1.0f, 0.1f, -3.14159265f, 65504.0f, 1e-7f, -0.0f};
	starnn_param *w = add(ps, "conv/weight", 1, STARNN_PARAM_COMPUTE_COPY, init);
	starnn_param *b = add(ps, "conv/bias", 1, 0, init);
	TEST_ASSERT(w->compute != w->master && w->compute->dtype == STARNN_FP16, "a 16-bit copy of the weight");
	TEST_ASSERT(b->compute == b->master, "no copy of the bias");
	TEST_ASSERT(strcmp(w->compute->name, "conv.weight.h") == 0 && strcmp(w->grad[0]->name, "conv.weight.grad0") == 0 &&
	                    strcmp(w->state[1]->name, "conv.weight.exp_avg_sq") == 0,
	            "tensor names %s %s %s", w->compute->name, w->grad[0]->name, w->state[1]->name);
	/* the parameter side's tasks run after the activations' (runtime/core/submit.h) */
	TEST_ASSERT(w->master->priority == STARNN_PRIO_PARAM && w->grad[0]->priority == STARNN_PRIO_PARAM &&
	                    w->state[0]->priority == STARNN_PRIO_PARAM && w->state[1]->priority == STARNN_PRIO_PARAM &&
	                    b->master->priority == STARNN_PRIO_PARAM,
	            "masters, gradients and optimizer state at STARNN_PRIO_PARAM");
	TEST_ASSERT(w->compute->priority == 0, "the compute copy (read by the forward) at priority 0, got %d",
	            w->compute->priority);
	TEST_OK(starnn_params_convert(ps));
	float *got = test_read(w->compute);
	for (int i = 0; i < COLS; i++) {
		float want = starnn_half_to_float(starnn_float_to_half(init[i]));
		TEST_ASSERT(memcmp(&got[i], &want, sizeof want) == 0, "copy [%d]: %g, expected %g", i, (double)got[i],
		            (double)want);
	}
	free(got);
	TEST_ASSERT(starnn_params_count(ps) == 2 && starnn_params_numel(ps) == 2 * COLS, "count and numel");
	TEST_ASSERT(starnn_params_at(ps, 0) == w && starnn_params_at(ps, 1) == b && !starnn_params_at(ps, 2),
	            "parameters in the order added");
	starnn_params_destroy(ps);

	ps = new_set(STARNN_OPTIM_SGD, STARNN_FP32, STARNN_LOSS_SCALE_NONE);
	w = add(ps, "w", 1, STARNN_PARAM_COMPUTE_COPY, init);
	TEST_ASSERT(w->compute == w->master, "fp32: the master is the compute tensor");
	TEST_ASSERT(w->state[1] == NULL && starnn_params_nslots(ps) == 1 &&
	                    strcmp(starnn_params_slot_name(ps, 0), "momentum_buffer") == 0,
	            "sgd: one slot, momentum_buffer");
	TEST_OK(starnn_params_convert(ps)); /* nothing to do */
	starnn_params_destroy(ps);
}

/* The compute copy stays the masters' rounding without a conversion after
 * the update, where Adam's update writes it (codelets/adam.h:
 * starnn_adam_cast; with loss scaling, a skipped step too), and follows a
 * master written otherwise (a checkpoint's load) at the next
 * starnn_params_convert; SGD's update leaves it to starnn_params_convert. */
static void check_copy(const char *what, starnn_param *p, int64_t step)
{
	float m[COLS];
	uint16_t h[COLS];
	TEST_OK(starnn_tensor_read(p->master, m));
	TEST_OK(starnn_tensor_read(p->compute, h));
	for (int i = 0; i < COLS; i++) {
		uint16_t want = p->compute->dtype == STARNN_BF16 ? starnn_float_to_bf16(m[i]) : starnn_float_to_half(m[i]);
		TEST_ASSERT(h[i] == want, "%s, step %lld: copy [%d] is %#06x, the master %g rounds to %#06x", what,
		            (long long)step, i, h[i], (double)m[i], want);
	}
}

static void copies_after_update(enum starnn_optim_kind kind, starnn_dtype dt, enum starnn_loss_scaling ls)
{
	char what[96];
	snprintf(what, sizeof what, "%s, %s copy%s", kind == STARNN_OPTIM_ADAM ? "adam" : "sgd", starnn_dtype_name(dt),
	         ls ? ", loss scaling" : "");
	starnn_params *ps = new_set(kind, dt, ls);
	if (ls)
		starnn_params_set_inject_inf_step(ps, 2);
	float init[COLS];
	for (int i = 0; i < COLS; i++)
		init[i] = test_uniform(-1, 1);
	starnn_param *w = add(ps, "w", 1, STARNN_PARAM_COMPUTE_COPY, init);
	float scale = 1.0f;
	for (int64_t step = 1; step <= 4; step++) {
		TEST_OK(starnn_params_convert(ps)); /* the forward's place */
		check_copy(what, w, step);
		if (ls) {
			struct starnn_amp_state st;
			TEST_OK(starnn_params_get_amp_state(ps, &st));
			scale = st.scale;
		}
		float g[COLS];
		for (int i = 0; i < COLS; i++)
			g[i] = test_uniform(-1, 1) * scale;
		write_slices(w, g);
		TEST_OK(starnn_params_reduce(ps));
		TEST_OK(starnn_params_update(ps, step));
		if (kind == STARNN_OPTIM_ADAM)
			check_copy(what, w, step); /* written by the update itself */
		if (step == 3) {
			for (int i = 0; i < COLS; i++)
				init[i] = test_uniform(-2, 2);
			TEST_OK(starnn_tensor_write(w->master, init)); /* as a checkpoint's load */
		}
	}
	TEST_OK(starnn_params_convert(ps));
	check_copy(what, w, 5);
	starnn_params_destroy(ps);
}

static void errors(void)
{
	struct starnn_params_config c = {.compute = STARNN_FP32};
	starnn_optim_defaults(&c.optim);
	starnn_params *ps = NULL;
	c.optim.lr = -1;
	TEST_ASSERT(starnn_params_new(&ps, &c) == STARNN_EINVAL && !ps, "negative lr refused");
	TEST_ASSERT(strstr(starnn_last_error(), "bad optimizer settings") != NULL, "message: %s", starnn_last_error());
	c.optim.lr = 1e-3f;
	c.loss_scaling = STARNN_LOSS_SCALE_STATIC;
	c.static_scale = 0;
	TEST_ASSERT(starnn_params_new(&ps, &c) == STARNN_EINVAL, "static scale 0 refused");
	c.loss_scaling = STARNN_LOSS_SCALE_NONE;
	TEST_OK(starnn_params_new(&ps, &c));
	struct starnn_amp_state st;
	TEST_ASSERT(starnn_params_get_amp_state(ps, &st) == STARNN_EINVAL, "no loss scaling: no state");
	add(ps, "w", 1, 0, NULL);
	starnn_tensor *t;
	TEST_OK(starnn_tensor_new(&t, "w2", STARNN_FP32, 1, (int64_t)3));
	TEST_ASSERT(starnn_params_add(ps, "w", t, 1, 0, NULL) == STARNN_EINVAL, "a name twice refused");
	TEST_ASSERT(starnn_params_add(ps, "w2", t, 0, 0, NULL) == STARNN_EINVAL, "0 slices refused");
	TEST_ASSERT(starnn_params_count(ps) == 1, "refused parameters are not added");
	starnn_tensor_destroy(t); /* not taken */
	TEST_OK(starnn_tensor_new(&t, "h", STARNN_FP16, 1, (int64_t)3));
	TEST_ASSERT(starnn_params_add(ps, "h", t, 1, 0, NULL) == STARNN_EINVAL, "a 16-bit master refused");
	starnn_tensor_destroy(t);
	starnn_params_destroy(ps);
	starnn_params_destroy(NULL);
}

int main(void)
{
	test_init();
	test_seed(11);
	reduction();
	update(STARNN_OPTIM_ADAM);
	update(STARNN_OPTIM_SGD);
	loss_scaling();
	compute_copies();
	copies_after_update(STARNN_OPTIM_ADAM, STARNN_BF16, STARNN_LOSS_SCALE_NONE);
	copies_after_update(STARNN_OPTIM_ADAM, STARNN_FP16, STARNN_LOSS_SCALE_DYNAMIC);
	copies_after_update(STARNN_OPTIM_ADAM, STARNN_BF16, STARNN_LOSS_SCALE_DYNAMIC);
	copies_after_update(STARNN_OPTIM_SGD, STARNN_BF16, STARNN_LOSS_SCALE_NONE);
	errors();
	return test_finish();
}
