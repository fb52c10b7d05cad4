/* models/mlp: a multilayer perceptron trained on generated regression data.
 *
 * Data: x ~ U(-1, 1)^D; y = A2 tanh(A1 x + c) + noise, a fixed random
 * "teacher" network (seeded), so the achievable loss is the noise level.
 *
 * One training step is one asynchronous task graph: the batch is split
 * into micro-batches; each runs forward, loss and backward as its own chain
 * of tasks, writing its weight gradients into its own gradient slice; the
 * parameter layer (runtime/train/params.h) sums the slices with a tree of axpy
 * tasks and updates each parameter. Nothing waits inside the step; the loss
 * is read only when it is logged. Layer l: z = a W^T + b (gemm, bias_add),
 * a = relu(z) but for the last layer; loss = mean((z_L - y)^2).
 *
 * Mixed precision (--precision amp-fp16 | amp-bf16): the weights and the
 * optimizer state stay fp32 ("master weights"); each step first converts
 * the weights (and the input batch) to the 16-bit type; activations and
 * their gradients are 16-bit tensors; the products accumulate in fp32 and
 * the weight gradients are fp32; the loss is fp32. With loss scaling the
 * loss gradient is multiplied by the scale held in the parameter set's
 * state tensor, which checks every reduced gradient for Inf/NaN and skips
 * the update on overflow (runtime/train/params.h, codelets/amp.h). The host never
 * waits for the flag.
 *
 * Under mpirun (runtime/train/dist.h): --batch is the global batch; rank r
 * takes its share of every step's samples (consecutive, in rank order)
 * and splits it into its own micro-batches; rank 0's initial weights are
 * broadcast; each parameter's gradient is all-reduced over the ranks as
 * soon as its micro-batch sum is submitted (the parameter set's gradient
 * hook); the loss slots of all ranks are all-reduced when the loss is
 * read, so every rank sees the same loss; rank 0 alone prints. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codelets/amp.h"
#include "codelets/convert.h"
#include "codelets/bias.h"
#include "codelets/fill.h"
#include "codelets/gemm.h"
#include "codelets/mse.h"
#include "codelets/relu.h"
#include "runtime/train/params.h"
#include "codelets/wire.h"
#include "runtime/starnn.h"
#include "runtime/train/dist.h"

#define MAX_LAYERS 8

struct options {
	int inputs, outputs, nhidden, hidden[MAX_LAYERS];
	int batch, micro, steps, log_every, train_size, val_size;
	float lr, momentum;
	int adam;
	unsigned long seed;
	int quiet;
	starnn_dtype compute;     /* fp32, or fp16 / bf16 for amp */
	int scaling;              /* 0: none, 1: dynamic, 2: static */
	float static_scale;
	int inject_inf_step;      /* STARNN_MLP_INJECT_INF_STEP (0: none) */
	const char *log_json;     /* --log-json: the summary record */
	float cpu_watts, gpu_watts, idle_watts; /* power model (runtime/train/energy.h) */
	int wire_grads;           /* --wire-grads: a starnn_wire_format, -1 none */
	struct starnn_dist_weights weights; /* --shard-optimizer, --wire-weights, --awp-* */
	int awp_given;
};

/* ------------------------------------------------------------ random */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: small, good enough, identical everywhere */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static float rng_uniform(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((rng_next(s) >> 40) * (1.0 / 16777216.0));
}

static float rng_normal(uint64_t *s)
{
	float u = rng_uniform(s, 1e-7f, 1.0f), v = rng_uniform(s, 0.0f, 1.0f);
	return sqrtf(-2.0f * logf(u)) * cosf(6.28318530718f * v);
}

/* ------------------------------------------------------------ data */

struct dataset {
	int n, d, k;
	float *x, *y; /* n x d, n x k */
};

#define TEACHER_HIDDEN 32
#define NOISE 0.02f

static int make_data(struct dataset *train, struct dataset *val, const struct options *o)
{
	uint64_t s = o->seed * 7919 + 17;
	int d = o->inputs, k = o->outputs, h = TEACHER_HIDDEN;
	float *a1 = malloc(sizeof(float) * (size_t)(h * d)), *c = malloc(sizeof(float) * (size_t)h);
	float *a2 = malloc(sizeof(float) * (size_t)(k * h));
	struct dataset *sets[2] = {train, val};
	int sizes[2] = {o->train_size, o->val_size};
	int ok = a1 && c && a2;
	for (int i = 0; ok && i < h * d; i++)
		a1[i] = 2.0f * rng_normal(&s) / sqrtf((float)d);
	for (int i = 0; ok && i < h; i++)
		c[i] = 0.5f * rng_normal(&s);
	for (int i = 0; ok && i < k * h; i++)
		a2[i] = rng_normal(&s) / sqrtf((float)h);
	for (int t = 0; ok && t < 2; t++) {
		struct dataset *ds = sets[t];
		ds->n = sizes[t], ds->d = d, ds->k = k;
		ds->x = malloc(sizeof(float) * (size_t)ds->n * (size_t)d);
		ds->y = malloc(sizeof(float) * (size_t)ds->n * (size_t)k);
		ok = ds->x && ds->y;
		for (int i = 0; ok && i < ds->n; i++) {
			float *x = ds->x + (size_t)i * (size_t)d, *y = ds->y + (size_t)i * (size_t)k, hid[TEACHER_HIDDEN];
			for (int j = 0; j < d; j++)
				x[j] = rng_uniform(&s, -1.0f, 1.0f);
			for (int j = 0; j < h; j++) {
				float z = c[j];
				for (int q = 0; q < d; q++)
					z += a1[j * d + q] * x[q];
				hid[j] = tanhf(z);
			}
			for (int j = 0; j < k; j++) {
				float z = NOISE * rng_normal(&s);
				for (int q = 0; q < h; q++)
					z += a2[j * h + q] * hid[q];
				y[j] = z;
			}
		}
	}
	free(a1), free(c), free(a2);
	if (!ok)
		return starnn_error(STARNN_ENOMEM, "mlp: out of memory for the data set");
	return 0;
}

static void free_data(struct dataset *ds)
{
	free(ds->x);
	free(ds->y);
}

/* ------------------------------------------------------------ model */

struct layer {
	int in, out;
	/* W [out, in] (compute copy: W->compute), b [1, out]; their gradient
	 * slices (one per micro-batch) and optimizer state are in the set */
	starnn_param *w, *b;
	starnn_tensor *z, *a, *dz, *da; /* activations [B, out] and their gradients */
};

struct mlp {
	int nlayers, batch, micro;    /* this rank's samples and micro-batches */
	int global, first;            /* samples of a step on all ranks; this rank's first */
	int rank, nranks;
	struct layer layers[MAX_LAYERS + 1];
	starnn_params *ps;            /* fc<l>.W, fc<l>.b in layer order */
	starnn_tensor *x, *y, *loss;  /* [B, D], [B, K], [ranks x M, 1] (this rank's M from rank x M) */
	starnn_tensor *xc;            /* x in the compute dtype: x itself for fp32 */
	starnn_dtype dt;
};

static int new2dt(starnn_tensor **t, const char *layer, const char *what, starnn_dtype dt, int64_t r, int64_t c)
{
	char name[STARNN_NAME_MAX];
	snprintf(name, sizeof name, "%s%s%s", layer, *layer ? "." : "", what);
	return starnn_tensor_new(t, name, dt, 2, r, c);
}

static int new2(starnn_tensor **t, const char *layer, const char *what, int64_t r, int64_t c)
{
	return new2dt(t, layer, what, STARNN_FP32, r, c);
}

static int split_batch(starnn_tensor *t, int micro)
{
	return starnn_tensor_split(t, 0, micro, NULL, NULL);
}

/* A parameter [r, c] named "<layer>.<what>" with one gradient slice per
 * micro-batch; the set owns it. */
static int add_param(struct mlp *m, starnn_param **p, const char *layer, const char *what, int64_t r, int64_t c,
                     int flags)
{
	starnn_tensor *t;
	STARNN_CHECK(new2(&t, layer, what, r, c));
	int rc = starnn_params_add(m->ps, t->name, t, m->micro, flags, p);
	if (rc < 0)
		starnn_tensor_destroy(t);
	return rc;
}

static int mlp_create(struct mlp *m, const struct options *o, uint64_t *s)
{
	memset(m, 0, sizeof *m);
	m->nlayers = o->nhidden + 1;
	m->rank = starnn_launch_rank();
	m->nranks = starnn_launch_size();
	int64_t first, count;
	starnn_dist_share(o->batch, m->rank, m->nranks, &first, &count);
	m->batch = (int)count;
	m->global = o->batch;
	m->first = (int)first;
	m->micro = o->micro;
	m->dt = o->compute;
	int B = m->batch, M = o->micro;
	starnn_dtype dt = o->compute;
	struct starnn_params_config pc = {
		.optim = {.kind = o->adam ? STARNN_OPTIM_ADAM : STARNN_OPTIM_SGD, .lr = o->lr,
		          .momentum = o->adam ? 0.0f : o->momentum, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f},
		.compute = dt,
		.loss_scaling = (enum starnn_loss_scaling)o->scaling,
		.static_scale = o->static_scale,
	};
	STARNN_CHECK(starnn_params_new(&m->ps, &pc));
	starnn_params_set_inject_inf_step(m->ps, o->inject_inf_step);
	STARNN_CHECK(new2(&m->x, "", "x", B, o->inputs));
	if (dt != STARNN_FP32) {
		STARNN_CHECK(new2dt(&m->xc, "", "x.h", dt, B, o->inputs));
		STARNN_CHECK(split_batch(m->xc, M));
	} else {
		m->xc = m->x;
	}
	STARNN_CHECK(new2(&m->y, "", "y", B, o->outputs));
	STARNN_CHECK(new2(&m->loss, "", "loss", (int64_t)m->nranks * M, 1));
	STARNN_CHECK(split_batch(m->x, M));
	STARNN_CHECK(split_batch(m->y, M));
	STARNN_CHECK(split_batch(m->loss, m->nranks * M));
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		char name[16];
		snprintf(name, sizeof name, "fc%d", l + 1);
		L->in = l == 0 ? o->inputs : o->hidden[l - 1];
		L->out = l == m->nlayers - 1 ? o->outputs : o->hidden[l];
		STARNN_CHECK(add_param(m, &L->w, name, "W", L->out, L->in, STARNN_PARAM_COMPUTE_COPY));
		STARNN_CHECK(add_param(m, &L->b, name, "b", 1, L->out, 0));
		STARNN_CHECK(new2dt(&L->z, name, "z", dt, B, L->out));
		STARNN_CHECK(new2dt(&L->dz, name, "dz", dt, B, L->out));
		STARNN_CHECK(split_batch(L->z, M));
		STARNN_CHECK(split_batch(L->dz, M));
		if (l < m->nlayers - 1) {
			STARNN_CHECK(new2dt(&L->a, name, "a", dt, B, L->out));
			STARNN_CHECK(new2dt(&L->da, name, "da", dt, B, L->out));
			STARNN_CHECK(split_batch(L->a, M));
			STARNN_CHECK(split_batch(L->da, M));
		}
		/* PyTorch's nn.Linear initialisation: U(-1/sqrt(in), 1/sqrt(in)). */
		float bound = 1.0f / sqrtf((float)L->in);
		size_t nw = (size_t)L->out * (size_t)L->in;
		float *w = malloc(sizeof(float) * nw), *b = malloc(sizeof(float) * (size_t)L->out);
		if (!w || !b) {
			free(w), free(b);
			return starnn_error(STARNN_ENOMEM, "mlp: out of memory");
		}
		for (size_t i = 0; i < nw; i++)
			w[i] = rng_uniform(s, -bound, bound);
		for (int i = 0; i < L->out; i++)
			b[i] = rng_uniform(s, -bound, bound);
		int rc = starnn_tensor_write(L->w->master, w);
		if (rc == 0)
			rc = starnn_tensor_write(L->b->master, b);
		free(w), free(b);
		STARNN_CHECK(rc);
	}
	return 0;
}

static void mlp_destroy(struct mlp *m)
{
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		starnn_tensor *all[] = {L->z, L->a, L->dz, L->da};
		for (size_t i = 0; i < sizeof all / sizeof *all; i++)
			starnn_tensor_destroy(all[i]);
	}
	starnn_dist_detach(m->ps);
	starnn_params_destroy(m->ps);
	if (m->xc != m->x)
		starnn_tensor_destroy(m->xc);
	starnn_tensor_destroy(m->x);
	starnn_tensor_destroy(m->y);
	starnn_tensor_destroy(m->loss);
}

/* Forward of micro-batch p, then its loss (scale: 1 / elements of the batch).
 * The _mp operations take fp32 or 16-bit activations (fp32 bias, fp32 loss). */
static int forward(struct mlp *m, int p, float scale)
{
	if (m->xc != m->x)
		STARNN_CHECK(starnn_convert(m->x->parts[p], m->xc->parts[p]));
	starnn_tensor *a = m->xc->parts[p];
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		STARNN_CHECK(starnn_gemm_mp(0, 1, 1.0f, a, L->w->compute, 0.0f, L->z->parts[p]));
		STARNN_CHECK(starnn_bias_add_mp(L->b->master, L->z->parts[p]));
		if (L->a) {
			STARNN_CHECK(starnn_relu_fwd_mp(L->z->parts[p], L->a->parts[p]));
			a = L->a->parts[p];
		}
	}
	return starnn_mse_fwd_mp(m->layers[m->nlayers - 1].z->parts[p], m->y->parts[p],
	                         m->loss->parts[m->rank * m->micro + p], scale, 0.0f);
}

static int backward(struct mlp *m, int p, float scale)
{
	struct layer *last = &m->layers[m->nlayers - 1];
	/* With loss scaling, the loss gradient is multiplied by state[0] here. */
	STARNN_CHECK(starnn_mse_bwd_mp(last->z->parts[p], m->y->parts[p], last->dz->parts[p], scale,
	                               starnn_params_loss_scale(m->ps)));
	for (int l = m->nlayers - 1; l >= 0; l--) {
		struct layer *L = &m->layers[l];
		starnn_tensor *input = l ? m->layers[l - 1].a->parts[p] : m->xc->parts[p];
		/* 16-bit x 16-bit -> fp32 weight gradients; 16-bit activation gradients. */
		STARNN_CHECK(starnn_gemm_mp(1, 0, 1.0f, L->dz->parts[p], input, 0.0f, L->w->grad[p]));
		STARNN_CHECK(starnn_bias_grad_mp(L->dz->parts[p], 0.0f, L->b->grad[p]));
		if (l) {
			struct layer *prev = &m->layers[l - 1];
			STARNN_CHECK(starnn_gemm_mp(0, 0, 1.0f, L->dz->parts[p], L->w->compute, 0.0f, prev->da->parts[p]));
			STARNN_CHECK(starnn_relu_bwd_mp(prev->z->parts[p], prev->da->parts[p], prev->dz->parts[p]));
		}
	}
	return 0;
}

/* Copies this rank's samples of the batch idx[0..global batch) of ds
 * into the x / y tensors. */
static int load_batch(struct mlp *m, const struct dataset *ds, const int *idx, float *xbuf, float *ybuf)
{
	idx += m->first;
	for (int i = 0; i < m->batch; i++) {
		memcpy(xbuf + (size_t)i * (size_t)ds->d, ds->x + (size_t)idx[i] * (size_t)ds->d, sizeof(float) * (size_t)ds->d);
		memcpy(ybuf + (size_t)i * (size_t)ds->k, ds->y + (size_t)idx[i] * (size_t)ds->k, sizeof(float) * (size_t)ds->k);
	}
	STARNN_CHECK(starnn_tensor_write(m->x, xbuf));
	return starnn_tensor_write(m->y, ybuf);
}

static int read_loss(struct mlp *m, double *loss)
{
	float parts[64 * 64];
	int n = m->nranks * m->micro;
	if (n > 64 * 64)
		return starnn_error(STARNN_EINVAL, "mlp: at most 4096 micro-batches over all ranks, got %d", n);
	if (m->nranks > 1) {
		/* The other ranks' slots to 0, then the sum over the ranks: every
		 * rank gets every rank's slots, bit for bit (x + 0 = x). */
		for (int p = 0; p < n; p++)
			if (p / m->micro != m->rank)
				STARNN_CHECK(starnn_fill(0.0f, m->loss->parts[p]));
		STARNN_CHECK(starnn_dist_allreduce(m->loss));
	}
	STARNN_CHECK(starnn_tensor_read(m->loss, parts));
	*loss = 0;
	for (int p = 0; p < n; p++)
		*loss += parts[p];
	if (!isfinite(*loss))
		return starnn_error(STARNN_ENUM, "mlp: the loss is %g (diverged: lower --lr)", *loss);
	return 0;
}

/* Mean squared error over the whole of ds (its size is a multiple of B). */
static int evaluate(struct mlp *m, const struct dataset *ds, int *idx, float *xbuf, float *ybuf, double *mse)
{
	int nb = ds->n / m->global;
	double total = 0;
	STARNN_CHECK(starnn_params_convert(m->ps));
	for (int b = 0; b < nb; b++) {
		for (int i = 0; i < m->global; i++)
			idx[i] = b * m->global + i;
		STARNN_CHECK(load_batch(m, ds, idx, xbuf, ybuf));
		for (int p = 0; p < m->micro; p++)
			STARNN_CHECK(forward(m, p, 1.0f / (float)(m->global * ds->k)));
		double l;
		STARNN_CHECK(read_loss(m, &l));
		total += l;
	}
	*mse = total / nb;
	return 0;
}

/* ------------------------------------------------------------ command line */

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: models/mlp [OPTIONS]\n"
	        "Trains a multilayer perceptron on generated regression data (a random\n"
	        "teacher network plus noise) as StarPU task graphs, and reports the\n"
	        "training loss and the validation MSE. StarPU's variables apply\n"
	        "(STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA, ...).\n"
	        "\n"
	        "  --steps N          training steps (default 300)\n"
	        "  --batch N          samples per step (default 64)\n"
	        "  --micro-batches N  micro-batches per step, spread over the workers\n"
	        "                     (default: one per worker, at most 8)\n"
	        "  --hidden LIST      hidden layer widths, comma-separated (default 64,64)\n"
	        "  --inputs N         input features (default 16)\n"
	        "  --outputs N        regression targets (default 4)\n"
	        "  --optimizer NAME   adam (default) or sgd (with momentum)\n"
	        "  --lr X             learning rate (default 0.003 for adam, 0.05 for sgd)\n"
	        "  --momentum X       SGD momentum (default 0.9)\n"
	        "  --seed N           seed of the data and the initial weights (default 1)\n"
	        "  --precision P      fp32 (default), amp-fp16 or amp-bf16: fp32 master\n"
	        "                     weights, 16-bit activations and products (fp32\n"
	        "                     accumulation), fp32 loss\n"
	        "  --loss-scale S     dynamic (start 2^16, halve on Inf/NaN and skip the\n"
	        "                     step, double after 2000 clean steps), a fixed\n"
	        "                     number N (overflowing steps still skipped), or none;\n"
	        "                     default dynamic for amp-fp16, none otherwise\n"
	        "  --wire-grads F     under mpirun: the gradients' all-reduce sends compressed\n"
	        "                     chunks: none (default), bf16, fp16, trunc16, rne16,\n"
	        "                     trunc24, rne24, int8 or fp8\n"
	        "  --shard-optimizer  under mpirun: each parameter is updated by its owner rank\n"
	        "                     alone (optimizer state 1/N per rank); gradients are\n"
	        "                     reduced to it, the weights sent back from it\n"
	        "  --wire-weights F   with --shard-optimizer: the weights travel as none\n"
	        "                     (default, fp32), awp (adaptive per layer) or a format\n"
	        "                     of --wire-grads\n"
	        "  --awp-start-bits N, --awp-stride N, --awp-interval N, --awp-rel-res X,\n"
	        "  --awp-rounding trunc|rne\n"
	        "                     the adaptive policy (models/unet --help, README)\n"
	        "  --train-size N     training samples (default 8192)\n"
	        "  --val-size N       validation samples (default 1024; rounded down to a\n"
	        "                     multiple of the batch)\n"
	        "  --log-every N      print the loss every N steps (default 20); the step\n"
	        "                     waits for its loss only when it is printed\n"
	        "  --quiet            only the final line\n"
	        "  --log-json FILE    write the run's summary record there: one JSON line\n"
	        "                     {summary: steps, epochs, samples, elapsed, samples_per_s,\n"
	        "                     energy} (README \"Energy\")\n"
	        "  --cpu-watts W      power model: W per busy CPU worker (StarPU worker\n"
	        "                     profiling); estimated figures, apart from measured ones\n"
	        "  --gpu-watts W      power model: W per busy CUDA worker\n"
	        "  --idle-watts W     power model: W of the whole machine over the run\n"
	        "  -h, --help         this text\n"
	        "Environment: STARNN_MLP_INJECT_INF_STEP=N puts an Inf into one gradient at\n"
	        "step N and checks that the step is skipped (needs loss scaling);\n"
	        "STARNN_MLP_EXACT=1 prints the logged losses with all their digits.\n"
	        "The energy of the run is measured where the machine allows it (RAPL, perf,\n"
	        "NVML) and printed after the final line, or 'not available' with the reason.\n"
	        "Under mpirun: --batch is the global batch, split over the ranks in rank\n"
	        "order; --micro-batches counts each rank's own; rank 0 prints.\n");
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "mlp: %s wants an integer in [%d, %d], got '%s'\n", opt, lo, hi, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_float(const char *opt, const char *s, float lo, float hi, float *out)
{
	char *end;
	errno = 0;
	float v = strtof(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "mlp: %s wants a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"steps", required_argument, 0, 's'},       {"batch", required_argument, 0, 'b'},
		{"micro-batches", required_argument, 0, 'm'}, {"hidden", required_argument, 0, 'H'},
		{"inputs", required_argument, 0, 'i'},      {"outputs", required_argument, 0, 'o'},
		{"optimizer", required_argument, 0, 'O'},   {"lr", required_argument, 0, 'l'},
		{"momentum", required_argument, 0, 'M'},    {"seed", required_argument, 0, 'S'},
		{"train-size", required_argument, 0, 't'},  {"val-size", required_argument, 0, 'v'},
		{"log-every", required_argument, 0, 'L'},   {"quiet", no_argument, 0, 'q'},
		{"precision", required_argument, 0, 'P'},   {"loss-scale", required_argument, 0, 'C'},
		{"log-json", required_argument, 0, 'J'},    {"cpu-watts", required_argument, 0, 'W'},
		{"gpu-watts", required_argument, 0, 'G'},   {"idle-watts", required_argument, 0, 'I'},
		{"wire-grads", required_argument, 0, 'w'},
		{"shard-optimizer", no_argument, 0, 'Z'},   {"wire-weights", required_argument, 0, 'X'},
		{"awp-rel-res", required_argument, 0, 1000}, {"awp-interval", required_argument, 0, 1001},
		{"awp-start-bits", required_argument, 0, 1002}, {"awp-stride", required_argument, 0, 1003},
		{"awp-rounding", required_argument, 0, 1004},
		{"help", no_argument, 0, 'h'},              {0, 0, 0, 0},
	};
	int c, seed = 1, scaling = -1;
	float lr = -1;
	*o = (struct options){.inputs = 16, .outputs = 4, .nhidden = 2, .hidden = {64, 64}, .batch = 64,
	                      .steps = 300, .log_every = 20, .train_size = 8192, .val_size = 1024,
	                      .momentum = 0.9f, .adam = 1, .wire_grads = -1,
	                      .weights = {.shard = 0, .wire = STARNN_DIST_WIRE_NONE}};
	starnn_awp_defaults(&o->weights.awp);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case 's': rc = parse_int("--steps", optarg, 0, 100000000, &o->steps); break;
		case 'b': rc = parse_int("--batch", optarg, 1, 65536, &o->batch); break;
		case 'm': rc = parse_int("--micro-batches", optarg, 1, 64, &o->micro); break;
		case 'i': rc = parse_int("--inputs", optarg, 1, 65536, &o->inputs); break;
		case 'o': rc = parse_int("--outputs", optarg, 1, 65536, &o->outputs); break;
		case 'S': rc = parse_int("--seed", optarg, 0, 2000000000, &seed); break;
		case 't': rc = parse_int("--train-size", optarg, 1, 10000000, &o->train_size); break;
		case 'v': rc = parse_int("--val-size", optarg, 1, 10000000, &o->val_size); break;
		case 'L': rc = parse_int("--log-every", optarg, 1, 100000000, &o->log_every); break;
		case 'l': rc = parse_float("--lr", optarg, 0.0f, 10.0f, &lr); break;
		case 'M': rc = parse_float("--momentum", optarg, 0.0f, 0.9999f, &o->momentum); break;
		case 'q': o->quiet = 1; break;
		case 'J': o->log_json = optarg; break;
		case 'W': rc = parse_float("--cpu-watts", optarg, 0.0f, 100000.0f, &o->cpu_watts); break;
		case 'G': rc = parse_float("--gpu-watts", optarg, 0.0f, 100000.0f, &o->gpu_watts); break;
		case 'I': rc = parse_float("--idle-watts", optarg, 0.0f, 100000.0f, &o->idle_watts); break;
		case 'w':
			if ((rc = starnn_wire_option("--wire-grads", optarg, &o->wire_grads)) != 0)
				fprintf(stderr, "mlp: %s\n", starnn_error_message());
			break;
		case 'Z': o->weights.shard = 1; break;
		case 'X':
			if ((rc = starnn_awp_wire_option("--wire-weights", optarg, &o->weights.wire)) != 0)
				fprintf(stderr, "mlp: %s\n", starnn_error_message());
			break;
		case 1000:
		case 1001:
		case 1002:
		case 1003:
		case 1004: {
			if ((rc = starnn_awp_option(starnn_awp_options[c - 1000], optarg, &o->weights.awp)) != 0)
				fprintf(stderr, "mlp: %s\n", starnn_error_message());
			o->awp_given = 1;
			break;
		}
		case 'P':
			if (strcmp(optarg, "fp32") == 0)
				o->compute = STARNN_FP32;
			else if (strcmp(optarg, "amp-fp16") == 0)
				o->compute = STARNN_FP16;
			else if (strcmp(optarg, "amp-bf16") == 0)
				o->compute = STARNN_BF16;
			else {
				fprintf(stderr, "mlp: --precision is fp32, amp-fp16 or amp-bf16, not '%s'\n", optarg);
				rc = -1;
			}
			break;
		case 'C':
			if (strcmp(optarg, "dynamic") == 0)
				scaling = 1;
			else if (strcmp(optarg, "none") == 0)
				scaling = 0;
			else if ((rc = parse_float("--loss-scale", optarg, 1.0f, 16777216.0f, &o->static_scale)) == 0)
				scaling = 2;
			break;
		case 'O':
			if (strcmp(optarg, "adam") == 0)
				o->adam = 1;
			else if (strcmp(optarg, "sgd") == 0)
				o->adam = 0;
			else {
				fprintf(stderr, "mlp: --optimizer is adam or sgd, not '%s'\n", optarg);
				rc = -1;
			}
			break;
		case 'H': {
			o->nhidden = 0;
			char *copy = strdup(optarg), *save = NULL;
			for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
				if (o->nhidden == MAX_LAYERS) {
					fprintf(stderr, "mlp: --hidden: at most %d layers\n", MAX_LAYERS);
					rc = -1;
				} else {
					rc = parse_int("--hidden", tok, 1, 65536, &o->hidden[o->nhidden++]);
				}
			}
			free(copy);
			break;
		}
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
		if (rc)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "mlp: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	o->seed = (unsigned long)seed;
	if (o->awp_given && o->weights.wire != STARNN_DIST_WIRE_AWP) {
		fprintf(stderr, "mlp: the --awp-* options set the adaptive policy: they need --wire-weights awp\n");
		return -1;
	}
	if (o->weights.wire != STARNN_DIST_WIRE_NONE && !o->weights.shard) {
		fprintf(stderr, "mlp: --wire-weights needs --shard-optimizer: weights cross the rank edge only when each "
		                "rank updates its own share of them\n");
		return -1;
	}
	if (starnn_awp_check(&o->weights.awp) < 0) {
		fprintf(stderr, "mlp: %s\n", starnn_error_message());
		return -1;
	}
	o->scaling = scaling >= 0 ? scaling : o->compute == STARNN_FP16;
	const char *inject = getenv("STARNN_MLP_INJECT_INF_STEP");
	if (inject && *inject) {
		if (parse_int("STARNN_MLP_INJECT_INF_STEP", inject, 1, 100000000, &o->inject_inf_step) < 0)
			return -1;
		if (!o->scaling) {
			fprintf(stderr, "mlp: STARNN_MLP_INJECT_INF_STEP needs loss scaling (--loss-scale dynamic or N)\n");
			return -1;
		}
	}
	o->lr = lr >= 0 ? lr : o->adam ? 0.003f : 0.05f;
	if (o->val_size < o->batch) {
		fprintf(stderr, "mlp: --val-size (%d) must be at least the batch (%d)\n", o->val_size, o->batch);
		return -1;
	}
	o->val_size -= o->val_size % o->batch;
	if (o->train_size < o->batch) {
		fprintf(stderr, "mlp: --train-size (%d) must be at least the batch (%d)\n", o->train_size, o->batch);
		return -1;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ overflow test hook */

/* Every parameter and optimizer state, as bits, before the injected step. */
struct snapshot {
	float *data;
	size_t n;
	float scale;
};

/* Every master and optimizer state of the set, in its order. */
static starnn_tensor **param_tensors(struct mlp *m, int *count)
{
	static starnn_tensor *all[6 * (MAX_LAYERS + 1)];
	int n = 0;
	for (int i = 0; i < starnn_params_count(m->ps); i++) {
		starnn_param *p = starnn_params_at(m->ps, i);
		starnn_tensor *t[3] = {p->master, p->state[0], p->state[1]};
		for (int k = 0; k < 3; k++)
			if (t[k])
				all[n++] = t[k];
	}
	*count = n;
	return all;
}

static int read_all(struct mlp *m, float **out, size_t *total)
{
	int n;
	starnn_tensor **ts = param_tensors(m, &n);
	size_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += starnn_tensor_numel(ts[i]);
	float *p = malloc(sum * sizeof *p);
	if (!p)
		return starnn_error(STARNN_ENOMEM, "mlp: out of memory");
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		int rc = starnn_tensor_read(ts[i], p + off);
		if (rc < 0) {
			free(p);
			return rc;
		}
		off += starnn_tensor_numel(ts[i]);
	}
	*out = p;
	*total = sum;
	return 0;
}

static int snapshot(struct mlp *m, struct snapshot *s)
{
	struct starnn_amp_state st;
	STARNN_CHECK(starnn_params_get_amp_state(m->ps, &st));
	s->scale = st.scale;
	return read_all(m, &s->data, &s->n);
}

static int check_skipped(struct mlp *m, struct snapshot *s, int step)
{
	float *now;
	size_t n;
	struct starnn_amp_state st;
	STARNN_CHECK(starnn_params_get_amp_state(m->ps, &st));
	STARNN_CHECK(read_all(m, &now, &n));
	int same = n == s->n && memcmp(now, s->data, n * sizeof *now) == 0;
	free(now);
	int dynamic = starnn_params_get_config(m->ps)->loss_scaling == STARNN_LOSS_SCALE_DYNAMIC;
	int halved = dynamic ? st.scale == fmaxf(s->scale * 0.5f, STARNN_AMP_MIN_SCALE) : st.scale == s->scale;
	printf("inject: Inf in a gradient at step %d: weights and optimizer state %s, scale %g -> %g\n", step,
	       same ? "unchanged bit for bit" : "CHANGED", (double)s->scale, (double)st.scale);
	if (!same || !halved)
		return starnn_error(STARNN_ENUM, "mlp: the step with an Inf gradient was not skipped as it should (%s%s)",
		                    same ? "" : "weights changed", halved ? "" : " scale not halved");
	return 0;
}

static int check_finite(struct mlp *m)
{
	float *w;
	size_t n;
	STARNN_CHECK(read_all(m, &w, &n));
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += !isfinite(w[i]);
	free(w);
	printf("inject: %zu of %zu final weights and optimizer values are not finite\n", bad, n);
	if (bad)
		return starnn_error(STARNN_ENUM, "mlp: %zu non-finite weights after the injected overflow", bad);
	return 0;
}

static int train(const struct options *o)
{
	struct dataset train = {0}, val = {0};
	struct mlp m;
	struct snapshot snap = {0};
	starnn_energy_meter *meter = NULL;
	FILE *log = NULL;
	int rc = make_data(&train, &val, o);
	uint64_t s = o->seed * 104729 + 3;
	int *idx = malloc(sizeof(int) * (size_t)(o->train_size > o->batch ? o->train_size : o->batch));
	float *xbuf = malloc(sizeof(float) * (size_t)o->batch * (size_t)o->inputs);
	float *ybuf = malloc(sizeof(float) * (size_t)o->batch * (size_t)o->outputs);
	if (rc == 0 && (!idx || !xbuf || !ybuf))
		rc = starnn_error(STARNN_ENOMEM, "mlp: out of memory");
	if (rc == 0 && o->log_json && starnn_launch_rank() == 0 && !(log = fopen(o->log_json, "w")))
		rc = starnn_error(STARNN_EIO, "mlp: cannot write the log %s: %s", o->log_json, strerror(errno));
	if (rc == 0)
		rc = starnn_dist_set_weights(&o->weights);
	if (rc == 0)
		rc = mlp_create(&m, o, &s);
	/* Ranks: rank 0's weights everywhere, gradients summed over the ranks
	 * (or reduced to each parameter's owner: --shard-optimizer). */
	if (rc == 0)
		rc = starnn_dist_attach(m.ps);
	if (rc == 0 && starnn_launch_mpi()) {
		starnn_params_set_grad_hook(m.ps, starnn_dist_grad_hook, NULL);
		rc = starnn_dist_broadcast_params(m.ps);
	}
	if (rc == 0)
		rc = starnn_dist_weights_begin(m.ps, 0);
	if (rc < 0) {
		if (log)
			fclose(log);
		free_data(&train), free_data(&val), free(idx), free(xbuf), free(ybuf);
		return rc;
	}
	if (!o->quiet) {
		char widths[256];
		int n = snprintf(widths, sizeof widths, "%d", o->inputs);
		for (int l = 0; l < o->nhidden && n > 0 && (size_t)n < sizeof widths; l++)
			n += snprintf(widths + n, sizeof widths - (size_t)n, "-%d", o->hidden[l]);
		if (n > 0 && (size_t)n < sizeof widths)
			snprintf(widths + n, sizeof widths - (size_t)n, "-%d", o->outputs);
		if (m.nranks > 1)
			printf("mlp: %s network, batch %d over %d ranks (%d on rank 0) in %d micro-batches per rank, %s lr "
			       "%g, %d train / %d validation samples\n",
			       widths, o->batch, m.nranks, m.batch, o->micro, o->adam ? "adam" : "sgd", o->lr, o->train_size,
			       o->val_size);
		else
			printf("mlp: %s network, batch %d in %d micro-batches, %s lr %g, %d train / %d validation samples\n",
			       widths, o->batch, o->micro, o->adam ? "adam" : "sgd", o->lr, o->train_size, o->val_size);
		if (o->compute != STARNN_FP32 || o->scaling)
			printf("precision: %s%s, loss scale %s\n", o->compute == STARNN_FP32 ? "fp32" : "amp-",
			       o->compute == STARNN_FP32 ? "" : starnn_dtype_name(o->compute),
			       o->scaling == 1 ? "dynamic" : o->scaling == 2 ? "static" : "none");
		if (o->compute == STARNN_BF16)
			printf("bf16 GEMM on CPU: %s\n", starnn_gemm_bf16_cpu_route());
	}

	/* Baseline: predicting the mean target of the training set. */
	double base = 0;
	for (int j = 0; j < o->outputs; j++) {
		double mean = 0;
		for (int i = 0; i < train.n; i++)
			mean += train.y[(size_t)i * (size_t)o->outputs + (size_t)j];
		mean /= train.n;
		for (int i = 0; i < val.n; i++) {
			double d = val.y[(size_t)i * (size_t)o->outputs + (size_t)j] - mean;
			base += d * d;
		}
	}
	base /= (double)val.n * o->outputs;

	float scale = 1.0f / (float)(o->batch * o->outputs);
	/* STARNN_MLP_EXACT=1: losses with all their digits (tests compare runs). */
	const char *exact_env = getenv("STARNN_MLP_EXACT");
	int exact = exact_env && *exact_env == '1';
	/* Time and energy of the steps and the evaluation (every rank: the
	 * reading is collective). */
	struct starnn_energy_opts eo;
	starnn_energy_opts_init(&eo);
	eo.cpu_watts = o->cpu_watts, eo.gpu_watts = o->gpu_watts, eo.idle_watts = o->idle_watts;
	rc = starnn_energy_start(&meter, &eo);
	double t0 = now(), tlast = t0, loss = NAN;
	int epoch_pos = train.n; /* forces a shuffle first */
	for (int step = 1; rc == 0 && step <= o->steps; step++) {
		/* Sample without replacement within an epoch (Fisher-Yates). */
		if (epoch_pos + o->batch > train.n) {
			for (int i = 0; i < train.n; i++)
				idx[i] = i;
			for (int i = train.n - 1; i > 0; i--) {
				int j = (int)(rng_next(&s) % (uint64_t)(i + 1)), t = idx[i];
				idx[i] = idx[j], idx[j] = t;
			}
			epoch_pos = 0;
		}
		rc = load_batch(&m, &train, idx + epoch_pos, xbuf, ybuf);
		epoch_pos += o->batch;
		if (rc == 0)
			rc = starnn_params_convert(m.ps);
		if (rc == 0 && step == o->inject_inf_step)
			rc = snapshot(&m, &snap);
		for (int p = 0; rc == 0 && p < m.micro; p++) {
			rc = forward(&m, p, scale);
			if (rc == 0)
				rc = backward(&m, p, scale);
		}
		if (rc == 0)
			rc = starnn_params_reduce(m.ps);
		if (rc == 0)
			rc = starnn_params_update(m.ps, step);
		if (rc == 0 && step == o->inject_inf_step)
			rc = check_skipped(&m, &snap, step);
		starnn_memory_sample();
		if (rc == 0 && (step % o->log_every == 0 || step == o->steps)) {
			rc = read_loss(&m, &loss);
			double t = now();
			if (rc == 0 && !o->quiet)
				printf(exact ? "step %5d/%d  loss %.17g  %.0f samples/s\n" : "step %5d/%d  loss %.6f  %.0f samples/s\n",
				       step, o->steps, loss,
				       (double)o->batch * (step % o->log_every ? step % o->log_every : o->log_every) /
				               (t - tlast));
			tlast = t;
		}
	}
	double mse = NAN;
	if (rc == 0)
		rc = evaluate(&m, &val, idx, xbuf, ybuf, &mse);
	double elapsed = now() - t0;
	if (rc == 0 && starnn_params_loss_scale(m.ps)) {
		struct starnn_amp_state st;
		rc = starnn_params_get_amp_state(m.ps, &st);
		if (rc == 0)
			printf("loss scaling: %lld skipped steps, final scale %g\n", (long long)st.skipped_steps,
			       (double)st.scale);
	}
	if (rc == 0 && o->inject_inf_step)
		rc = check_finite(&m);
	if (rc == 0)
		printf("final: train loss %.6f, validation MSE %.6f (predicting the mean: %.6f; noise floor %.6f), "
		       "%d steps in %.2f s (%.0f samples/s)\n",
		       loss, mse, base, (double)NOISE * NOISE, o->steps, elapsed,
		       elapsed > 0 ? (double)o->steps * o->batch / elapsed : 0.0);
	int rc2 = starnn_wait();
	if (rc == 0 && rc2 == 0)
		starnn_memory_report(stdout);
	if (rc == 0 && rc2 == 0)
		rc = starnn_dist_report(stdout, log, o->steps);
	struct starnn_energy_reading energy;
	double epochs = (double)o->steps * o->batch / train.n;
	int64_t samples = (int64_t)o->steps * o->batch;
	if (rc == 0 && rc2 == 0)
		rc = starnn_energy_read_all(meter, &energy);
	if (rc == 0 && rc2 == 0)
		starnn_energy_print(stdout, &energy, epochs, (double)samples);
	if (rc == 0 && rc2 == 0 && log)
		rc = starnn_energy_summary_json(log, o->steps, epochs, samples, &energy);
	if (log && fclose(log) != 0 && rc == 0)
		rc = starnn_error(STARNN_EIO, "mlp: cannot write the log %s: %s", o->log_json, strerror(errno));
	starnn_energy_stop(meter);
	free(snap.data);
	mlp_destroy(&m);
	free_data(&train), free_data(&val), free(idx), free(xbuf), free(ybuf);
	return rc ? rc : rc2;
}

int main(int argc, char **argv)
{
	struct options o;
	starnn_blas_autoselect(argv);
	if (parse_options(argc, argv, &o) < 0)
		return 2;
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = o.quiet;
	cfg.config_hash = starnn_launch_hash_args(argc, argv);
	int rc = starnn_init(&cfg);
	if (rc < 0) {
		fprintf(stderr, "mlp: %s\n", starnn_error_message());
		return 1;
	}
	starnn_dist_set_wire_grads(o.wire_grads);
	/* Under mpirun, rank 0 alone prints results; errors come from any rank. */
	if (starnn_launch_rank() > 0 && !freopen("/dev/null", "w", stdout))
		fprintf(stderr, "mlp: rank %d: cannot silence stdout\n", starnn_launch_rank());
	int nranks = starnn_launch_size();
	if (o.batch < nranks) {
		fprintf(stderr, "mlp: --batch %d is the global batch: it cannot be split over %d ranks (at least one "
		        "sample per rank)\n", o.batch, nranks);
		starnn_shutdown();
		return 2;
	}
	/* Decided alike on every rank: from the smallest share. */
	int64_t local = o.batch / nranks;
	if (o.micro == 0) {
		int workers = starnn_ncpu_workers() + starnn_ncuda_workers();
		o.micro = workers < 1 ? 1 : workers > 8 ? 8 : workers;
		if (o.micro > local)
			o.micro = (int)local;
	}
	if (o.micro > local) {
		if (nranks > 1)
			fprintf(stderr, "mlp: --micro-batches (%d) cannot exceed the smallest share of the batch (%lld of %d)\n",
			        o.micro, (long long)local, o.batch);
		else
			fprintf(stderr, "mlp: --micro-batches (%d) cannot exceed --batch (%d)\n", o.micro, o.batch);
		starnn_shutdown();
		return 2;
	}
	rc = train(&o);
	if (rc < 0) {
		fprintf(stderr, "mlp: %s\n", starnn_error_message());
		starnn_launch_abort(1); /* under mpirun: the other ranks too */
	}
	int rc2 = starnn_shutdown();
	if (rc == 0 && rc2 < 0) {
		fprintf(stderr, "mlp: %s\n", starnn_error_message());
		rc = rc2;
	}
	return rc < 0 ? 1 : 0;
}
