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
 * The trainer (runtime/train/trainer.h) runs the steps with the options
 * every model shares. Under mpirun --batch is the global batch; each
 * replica takes its share of every step's samples (consecutive, in rank
 * order) and splits it into its own micro-batches; the trainer broadcasts
 * the initial weights and sums the gradients over the replicas; the loss
 * slots of all replicas are gathered when the loss is read
 * (runtime/train/replica.h), so every replica sees the same loss; rank 0
 * alone prints. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/amp.h"
#include "codelets/bias.h"
#include "codelets/convert.h"
#include "codelets/gemm.h"
#include "codelets/mse.h"
#include "codelets/relu.h"
#include "runtime/starnn.h"
#include "runtime/train/random.h"

#define MAX_LAYERS 8

#define fail(...) starnn_fail("mlp", __VA_ARGS__)

enum { O_HIDDEN = 256, O_INPUTS, O_OUTPUTS, O_TRAIN_SIZE, O_VAL_SIZE, O_END };

struct options {
	struct starnn_train_opts train; /* steps, batch, optimizer, precision, exchange, logging, checkpoints,
	                                 * power model */
	int inputs, outputs, nhidden, hidden[MAX_LAYERS];
	int train_size, val_size;
	int exact;                      /* STARNN_MLP_EXACT: losses with all their digits */
	char given[O_END];              /* the MLP's own options given (a resumed run takes the others) */
};

/* ------------------------------------------------------------ random */

/* runtime/train/random.h's splitmix64, and normal numbers (Box-Muller) */
#define rng_next starnn_rng_next
#define rng_uniform starnn_rng_uniform

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
	uint64_t s = o->train.seed * 7919 + 17;
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
		return starnn_error(STARNN_ENOMEM, "out of memory for the data set");
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
	int nlayers, batch, micro;    /* this replica's samples and micro-batches */
	int global, first;            /* samples of a step on all replicas; this replica's first */
	struct layer layers[MAX_LAYERS + 1];
	starnn_params *ps;            /* fc<l>.W, fc<l>.b in layer order */
	starnn_tensor *x, *y;         /* [B, D], [B, K] */
	/* the micro-batch losses of the last two steps (slot step % 2; the
	 * evaluation uses slot 0), of every replica: [replicas x M, 1] */
	starnn_tensor *loss[2];
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

static int mlp_create(struct mlp *m, const struct options *o, const struct starnn_model_config *c, uint64_t *s)
{
	memset(m, 0, sizeof *m);
	m->nlayers = o->nhidden + 1;
	m->batch = c->batch;
	m->global = c->global_batch;
	m->first = c->first;
	m->micro = c->micro;
	m->dt = c->params.compute;
	int B = m->batch, M = m->micro;
	starnn_dtype dt = m->dt;
	STARNN_CHECK(starnn_params_new(&m->ps, &c->params));
	STARNN_CHECK(new2(&m->x, "", "x", B, o->inputs));
	if (dt != STARNN_FP32) {
		STARNN_CHECK(new2dt(&m->xc, "", "x.h", dt, B, o->inputs));
		STARNN_CHECK(split_batch(m->xc, M));
	} else {
		m->xc = m->x;
	}
	STARNN_CHECK(new2(&m->y, "", "y", B, o->outputs));
	STARNN_CHECK(split_batch(m->x, M));
	STARNN_CHECK(split_batch(m->y, M));
	for (int k = 0; k < 2; k++) {
		char name[16];
		snprintf(name, sizeof name, "loss_step%d", k);
		STARNN_CHECK(new2(&m->loss[k], "", name, (int64_t)starnn_replicas() * M, 1));
		STARNN_CHECK(split_batch(m->loss[k], starnn_replicas() * M));
	}
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
	starnn_params_destroy(m->ps);
	if (m->xc != m->x)
		starnn_tensor_destroy(m->xc);
	starnn_tensor_destroy(m->x);
	starnn_tensor_destroy(m->y);
	starnn_tensor_destroy(m->loss[0]);
	starnn_tensor_destroy(m->loss[1]);
}

/* Forward of micro-batch p, then its loss into `loss` (scale: 1 /
 * elements of the batch). The _mp operations take fp32 or 16-bit
 * activations (fp32 bias, fp32 loss). */
static int forward(struct mlp *m, int p, float scale, starnn_tensor *loss)
{
	if (m->xc != m->x)
		STARNN_CHECK(starnn_convert(m->x->parts[p], m->xc->parts[p]));
	starnn_tensor *a = m->xc->parts[p];
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		STARNN_CHECK(starnn_gemm_mp(0, 1, 1.0f, a, starnn_param_in(L->w, p), 0.0f, L->z->parts[p]));
		STARNN_CHECK(starnn_bias_add_mp(starnn_param_in(L->b, p), L->z->parts[p]));
		if (L->a) {
			STARNN_CHECK(starnn_relu_fwd_mp(L->z->parts[p], L->a->parts[p]));
			a = L->a->parts[p];
		}
	}
	return starnn_mse_fwd_mp(m->layers[m->nlayers - 1].z->parts[p], m->y->parts[p],
	                         starnn_replica_part(loss, m->micro, p), scale, 0.0f);
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
			STARNN_CHECK(
			        starnn_gemm_mp(0, 0, 1.0f, L->dz->parts[p], starnn_param_in(L->w, p), 0.0f, prev->da->parts[p]));
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


/* The sum of every replica's micro-batch losses in slot, checked. */
static int read_loss(struct mlp *m, starnn_tensor *slot, double *loss)
{
	float parts[64 * 64];
	int n = starnn_replicas() * m->micro;
	if (n > 64 * 64)
		return starnn_error(STARNN_EINVAL, "at most 4096 micro-batches over all ranks, got %d", n);
	STARNN_CHECK(starnn_replica_gather(slot, m->micro));
	STARNN_CHECK(starnn_tensor_read(slot, parts));
	*loss = 0;
	for (int p = 0; p < n; p++)
		*loss += parts[p];
	if (!isfinite(*loss))
		return starnn_error(STARNN_ENUM, "the loss is %g (diverged: lower --lr)", *loss);
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
			STARNN_CHECK(forward(m, p, 1.0f / (float)(m->global * ds->k), m->loss[0]));
		double l;
		STARNN_CHECK(read_loss(m, m->loss[0], &l));
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
	        "  --warmup N         linear learning-rate warm-up over N steps (default 0)\n"
	        "  --weight-decay X   L2 weight decay (default 0)\n"
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
	        "                     trunc24, rne24, int8 or fp8; with --master host, the\n"
	        "                     format of the gradients sent to the host\n"
	        "  --shard-optimizer  under mpirun: each parameter is updated by its owner rank\n"
	        "                     alone (optimizer state 1/N per rank); gradients are\n"
	        "                     reduced to it, the weights sent back from it\n"
	        "  --master host|auto host: fp32 masters and their update on the host; each\n"
	        "                     step the weights go to every device as --wire-weights,\n"
	        "                     the gradients come back as --wire-grads\n"
	        "                     (docs/device-edge.md); auto (default): StarPU places\n"
	        "                     the update\n"
	        "  --wire-weights F   with --shard-optimizer or --master host: the weights\n"
	        "                     travel as none (default, fp32), awp (adaptive per\n"
	        "                     layer) or a format of --wire-grads\n"
	        "  --awp-start-bits N, --awp-stride N, --awp-interval N, --awp-rel-res X,\n"
	        "  --awp-rounding trunc|rne, --awp-rule paper|resolution, --awp-res-factor K\n"
	        "                     the adaptive policy (models/unet --help, README)\n"
	        "  --train-size N     training samples (default 8192)\n"
	        "  --val-size N       validation samples (default 1024; rounded down to a\n"
	        "                     multiple of the batch)\n"
	        "  --log-every N      print the loss every N steps (default 20); the step\n"
	        "                     waits for its loss only when it is printed\n"
	        "  --quiet            only the final line\n"
	        "  --checkpoint FILE  write the model, its optimizer state and the run's state\n"
	        "                     there at the end (atomically; HDF5, the UNet's format)\n"
	        "  --checkpoint-every N  also every N steps\n"
	        "  --resume FILE      continue the run saved in FILE (options not given are\n"
	        "                     taken from it, --steps too; another network is refused)\n"
	        "  --init FILE        start from the weights of FILE (not its optimizer state)\n"
	        "  --log-json FILE    write the run's summary record there: one JSON line\n"
	        "                     {summary: steps, epochs, samples, elapsed, samples_per_s,\n"
	        "                     energy} (README \"Energy\")\n"
	        "  --cpu-watts W      power model: W per busy CPU worker (StarPU worker\n"
	        "                     profiling); estimated figures, apart from measured ones\n"
	        "  --gpu-watts W      power model: W per busy CUDA worker\n"
	        "  --idle-watts W     power model: W of the whole machine over the run\n"
	        "  -h, --help         this text\n"
	        "Test hooks (builds configured with --enable-test-hooks):\n"
	        "STARNN_MLP_INJECT_INF_STEP=N puts an Inf into one gradient at step N and\n"
	        "checks that the step is skipped (needs loss scaling); STARNN_MLP_EXACT=1\n"
	        "prints the logged losses with all their digits.\n"
	        "SIGINT (Ctrl-C) or SIGTERM finishes the steps already submitted, saves\n"
	        "--checkpoint and exits with 128 + the signal number (130, 143).\n"
	        "The energy of the run is measured where the machine allows it (RAPL, perf,\n"
	        "NVML) and printed after the final line, or 'not available' with the reason.\n"
	        "Under mpirun: --batch is the global batch, split over the ranks in rank\n"
	        "order; --micro-batches counts each rank's own; rank 0 prints.\n");
}

/* The common options the MLP has no use for: it trains a number of steps
 * (no epochs), evaluates once at the end (no cadence) and prints lines, not
 * a bar. */
#define MLP_SKIP                                                                                                  \
	(STARNN_TOPT_BIT(STARNN_TOPT_EPOCHS) | STARNN_TOPT_BIT(STARNN_TOPT_PROGRESS) |                               \
	 STARNN_TOPT_BIT(STARNN_TOPT_EVAL_EVERY))

static int parse_hidden(struct options *o, const char *arg)
{
	int rc = 0;
	o->nhidden = 0;
	char *copy = strdup(arg), *save = NULL;
	if (!copy) {
		fail("out of memory");
		return -1;
	}
	for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
		if (o->nhidden == MAX_LAYERS) {
			fail("--hidden: at most %d layers", MAX_LAYERS);
			rc = -1;
		} else {
			rc = starnn_parse_int("mlp", "--hidden", tok, 1, 65536, &o->hidden[o->nhidden++]);
		}
	}
	free(copy);
	return rc;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option own[] = {
		{"hidden", required_argument, 0, O_HIDDEN},         {"inputs", required_argument, 0, O_INPUTS},
		{"outputs", required_argument, 0, O_OUTPUTS},       {"train-size", required_argument, 0, O_TRAIN_SIZE},
		{"val-size", required_argument, 0, O_VAL_SIZE},     {"help", no_argument, 0, 'h'},
	};
	struct option longopts[sizeof own / sizeof *own + STARNN_TOPT_COUNT + 1];
	memcpy(longopts, own, sizeof own);
	starnn_train_longopts(longopts, sizeof own / sizeof *own, MLP_SKIP);
	*o = (struct options){.inputs = 16, .outputs = 4, .nhidden = 2, .hidden = {64, 64}, .train_size = 8192,
	                      .val_size = 1024};
	struct starnn_train_opts *t = &o->train;
	starnn_train_opts_init(t, "mlp");
	t->batch = 64, t->steps = 300, t->log_every = 20, t->progress = 0, t->eval_every = 0;
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int rc = 0;
		if (c > 0 && c < O_END)
			o->given[c] = 1;
		switch (c) {
		case O_HIDDEN: rc = parse_hidden(o, optarg); break;
		case O_INPUTS: rc = starnn_parse_int("mlp", "--inputs", optarg, 1, 65536, &o->inputs); break;
		case O_OUTPUTS: rc = starnn_parse_int("mlp", "--outputs", optarg, 1, 65536, &o->outputs); break;
		case O_TRAIN_SIZE: rc = starnn_parse_int("mlp", "--train-size", optarg, 1, 10000000, &o->train_size); break;
		case O_VAL_SIZE: rc = starnn_parse_int("mlp", "--val-size", optarg, 1, 10000000, &o->val_size); break;
		case 'h': usage(stdout); exit(0);
		default:
			rc = starnn_train_opts_parse(t, c, optarg);
			if (rc > 0) { /* not an option of ours */
				usage(stderr);
				return -1;
			}
		}
		if (rc)
			return -1;
	}
	if (optind < argc) {
		fail("unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}
#ifdef STARNN_TEST_HOOKS
	t->inject_name = "STARNN_MLP_INJECT_INF_STEP";
	const char *inject = getenv("STARNN_MLP_INJECT_INF_STEP");
	if (inject && *inject &&
	    starnn_parse_i64("mlp", "STARNN_MLP_INJECT_INF_STEP", inject, 1, 100000000, &t->inject_inf_step) < 0)
		return -1;
	const char *exact = getenv("STARNN_MLP_EXACT");
	o->exact = exact && *exact == '1';
#endif
	if (starnn_train_opts_check(t, 1) < 0)
		return -1;
	if (!starnn_train_opts_given(t, STARNN_TOPT_LR))
		t->lr = t->optimizer == STARNN_TOPT_SGD ? 0.05f : 0.003f;
	if (o->val_size < t->batch) {
		fail("--val-size (%d) must be at least the batch (%d)", o->val_size, t->batch);
		return -1;
	}
	o->val_size -= o->val_size % t->batch;
	if (o->train_size < t->batch) {
		fail("--train-size (%d) must be at least the batch (%d)", o->train_size, t->batch);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ the model for the trainer */

struct run {
	struct options *o;    /* (a checkpoint may set some) */
	struct dataset train, val;
	double base;          /* the validation MSE of predicting the training set's mean */
	struct mlp m;
	int made;
	uint64_t rng;         /* the initial weights, then the shuffles */
	int *idx, epoch_pos;  /* the order of the epoch, the next sample in it */
	float *xbuf, *ybuf;
	char hidden[256];     /* the checkpoint's "hidden" attribute */
};

static void run_free(struct run *r)
{
	if (r->made)
		mlp_destroy(&r->m);
	free_data(&r->train), free_data(&r->val);
	free(r->idx), free(r->xbuf), free(r->ybuf);
}

static int open_data(void *self, int64_t *samples, const char **what)
{
	struct run *r = self;
	const struct options *o = r->o;
	int batch = o->train.batch;
	STARNN_CHECK(make_data(&r->train, &r->val, o));
	r->rng = o->train.seed * 104729 + 3;
	r->idx = malloc(sizeof(int) * (size_t)(o->train_size > batch ? o->train_size : batch));
	r->xbuf = malloc(sizeof(float) * (size_t)batch * (size_t)o->inputs);
	r->ybuf = malloc(sizeof(float) * (size_t)batch * (size_t)o->outputs);
	if (!r->idx || !r->xbuf || !r->ybuf)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	r->epoch_pos = r->train.n; /* forces a shuffle first */
	/* Baseline: predicting the mean target of the training set. */
	double base = 0;
	for (int j = 0; j < o->outputs; j++) {
		double mean = 0;
		for (int i = 0; i < r->train.n; i++)
			mean += r->train.y[(size_t)i * (size_t)o->outputs + (size_t)j];
		mean /= r->train.n;
		for (int i = 0; i < r->val.n; i++) {
			double d = r->val.y[(size_t)i * (size_t)o->outputs + (size_t)j] - mean;
			base += d * d;
		}
	}
	r->base = base / ((double)r->val.n * o->outputs);
	*samples = r->train.n;
	*what = "the generated training set";
	return 0;
}

static int create(void *self, const struct starnn_model_config *c, starnn_params **ps)
{
	struct run *r = self;
	r->made = 1; /* (mlp_destroy frees what mlp_create made) */
	STARNN_CHECK(mlp_create(&r->m, r->o, c, &r->rng));
	*ps = r->m.ps;
	return 0;
}

static void describe(void *self, const starnn_trainer *tr, FILE *out)
{
	struct run *r = self;
	const struct options *o = r->o;
	const struct starnn_train_opts *t = &o->train;
	const struct starnn_train_info *in = starnn_trainer_info(tr);
	char widths[256];
	int n = snprintf(widths, sizeof widths, "%d", o->inputs);
	for (int l = 0; l < o->nhidden && n > 0 && (size_t)n < sizeof widths; l++)
		n += snprintf(widths + n, sizeof widths - (size_t)n, "-%d", o->hidden[l]);
	if (n > 0 && (size_t)n < sizeof widths)
		snprintf(widths + n, sizeof widths - (size_t)n, "-%d", o->outputs);
	if (in->replicas > 1)
		fprintf(out,
		        "mlp: %s network, batch %d over %d ranks (%d on rank 0) in %d micro-batches per rank, %s lr %g, %d "
		        "train / %d validation samples\n",
		        widths, t->batch, in->replicas, in->batch, t->micro, starnn_optimizer_name(t->optimizer),
		        (double)t->lr, o->train_size, o->val_size);
	else
		fprintf(out, "mlp: %s network, batch %d in %d micro-batches, %s lr %g, %d train / %d validation samples\n",
		        widths, t->batch, t->micro, starnn_optimizer_name(t->optimizer), (double)t->lr, o->train_size,
		        o->val_size);
	if (t->compute != STARNN_FP32 || t->loss_scale)
		fprintf(out, "precision: %s%s, loss scale %s\n", t->compute == STARNN_FP32 ? "fp32" : "amp-",
		        t->compute == STARNN_FP32 ? "" : starnn_dtype_name((starnn_dtype)t->compute),
		        t->loss_scale == 1 ? "dynamic" : t->loss_scale == 2 ? "static" : "none");
	if (t->compute == STARNN_BF16)
		fprintf(out, "bf16 GEMM on CPU: %s\n", starnn_gemm_bf16_cpu_route());
}

/* The samples of the next step: without replacement within an epoch
 * (a Fisher-Yates shuffle when the epoch has fewer than a batch left),
 * idx[first, first + batch). */
static int next_samples(struct run *r)
{
	int batch = r->o->train.batch;
	if (r->epoch_pos + batch > r->train.n) {
		for (int i = 0; i < r->train.n; i++)
			r->idx[i] = i;
		for (int i = r->train.n - 1; i > 0; i--) {
			int j = (int)(rng_next(&r->rng) % (uint64_t)(i + 1)), t = r->idx[i];
			r->idx[i] = r->idx[j], r->idx[j] = t;
		}
		r->epoch_pos = 0;
	}
	int first = r->epoch_pos;
	r->epoch_pos += batch;
	return first;
}

/* A resumed run: the shuffles of the steps done, so that the next batches
 * are those of an uninterrupted run. */
static int start(void *self, int64_t step)
{
	struct run *r = self;
	for (int64_t s = 0; s < step; s++)
		next_samples(r);
	return 0;
}

/* The samples of a step into x and y. */
static int stage(void *self, int64_t step, int64_t *epoch)
{
	struct run *r = self;
	*epoch = (step - 1) / (r->train.n / r->o->train.batch);
	return load_batch(&r->m, &r->train, r->idx + next_samples(r), r->xbuf, r->ybuf);
}

static int submit(void *self, int64_t step)
{
	struct run *r = self;
	struct mlp *m = &r->m;
	float scale = 1.0f / (float)(r->o->train.batch * r->o->outputs);
	STARNN_CHECK(starnn_params_convert(m->ps));
	for (int p = 0; p < m->micro; p++) {
		STARNN_CHECK(forward(m, p, scale, m->loss[step & 1]));
		STARNN_CHECK(backward(m, p, scale));
	}
	STARNN_CHECK(starnn_params_reduce(m->ps));
	return starnn_params_update(m->ps, step);
}

static int step_loss(void *self, int64_t step, double *loss)
{
	struct run *r = self;
	return read_loss(&r->m, r->m.loss[step & 1], loss);
}

static void report_step(void *self, const struct starnn_step_report *s)
{
	struct run *r = self;
	printf(r->o->exact ? "step %5lld/%lld  loss %.17g  %.0f samples/s\n" : "step %5lld/%lld  loss %.6f  %.0f samples/s\n",
	       (long long)s->step, (long long)s->total, s->loss, s->window_sps);
}

/* The validation MSE, and the final line. */
static int finish(void *self, starnn_trainer *tr)
{
	struct run *r = self;
	const struct starnn_train_opts *t = &r->o->train;
	double mse;
	STARNN_CHECK(evaluate(&r->m, &r->val, r->idx, r->xbuf, r->ybuf, &mse));
	double elapsed = starnn_trainer_elapsed(tr);
	if (starnn_params_loss_scale(r->m.ps)) {
		struct starnn_amp_state st;
		STARNN_CHECK(starnn_params_get_amp_state(r->m.ps, &st));
		printf("loss scaling: %lld skipped steps, final scale %g\n", (long long)st.skipped_steps, (double)st.scale);
	}
	const struct starnn_train_info *in = starnn_trainer_info(tr);
	int64_t steps = in->step - in->first_step;
	printf("final: train loss %.6f, validation MSE %.6f (predicting the mean: %.6f; noise floor %.6f), "
	       "%lld steps in %.2f s (%.0f samples/s)\n",
	       in->loss, mse, r->base, (double)NOISE * NOISE, (long long)steps, elapsed,
	       elapsed > 0 ? (double)steps * t->batch / elapsed : 0.0);
	return 0;
}

/* ------------------------------------------------------------ checkpoints
 * The trainer's format (runtime/train/checkpoint.h): the weights "fc<l>.W",
 * "fc<l>.b", their optimizer state, the run's attributes, and the MLP's:
 * format "starnn-mlp", format_version 1, inputs, outputs, hidden ("64,64"),
 * train_size, val_size. */
#define CKPT_FORMAT "starnn-mlp"
#define CKPT_VERSION 1

static void hidden_text(const struct options *o, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int l = 0; l < o->nhidden && n < size; l++)
		n += (size_t)snprintf(buf + n, size - n, "%s%d", l ? "," : "", o->hidden[l]);
}

/* The network of the checkpoint; a width given on the command line must
 * agree. With resume, the data sizes not given too. */
static int read_checkpoint(void *self, ckpt_file *f, const char *file, int resume)
{
	struct run *r = self;
	struct options *o = r->o;
	char fmt[64];
	if (ckpt_get_string(f, "format", fmt, sizeof fmt) < 0 || strcmp(fmt, CKPT_FORMAT) != 0)
		return starnn_error(STARNN_EINVAL, "%s is not a models/mlp checkpoint (no format attribute '%s')", file,
		                    CKPT_FORMAT);
	int64_t version;
	STARNN_CHECK(ckpt_get_int(f, "format_version", &version));
	if (version != CKPT_VERSION)
		return starnn_error(STARNN_EINVAL, "%s has format_version %lld: this models/mlp reads version %d", file,
		                    (long long)version, CKPT_VERSION);
	struct {
		const char *attr;
		int id, *value;
	} net[] = {{"inputs", O_INPUTS, &o->inputs}, {"outputs", O_OUTPUTS, &o->outputs}};
	for (size_t i = 0; i < sizeof net / sizeof *net; i++) {
		int64_t v;
		STARNN_CHECK(ckpt_get_int(f, net[i].attr, &v));
		if (o->given[net[i].id] && v != *net[i].value)
			return starnn_error(STARNN_EINVAL, "%s holds another network: its %s is %lld, the options ask for %d",
			                    file, net[i].attr, (long long)v, *net[i].value);
		*net[i].value = (int)v;
	}
	char hidden[256], want[256];
	STARNN_CHECK(ckpt_get_string(f, "hidden", hidden, sizeof hidden));
	hidden_text(o, want, sizeof want);
	if (o->given[O_HIDDEN] && strcmp(hidden, want) != 0)
		return starnn_error(STARNN_EINVAL, "%s holds another network: its hidden layers are %s, the options ask for %s",
		                    file, hidden, want);
	if (parse_hidden(o, hidden) < 0)
		return starnn_error(STARNN_EINVAL, "%s: attribute hidden '%s' is not a list of widths", file, hidden);
	if (!resume)
		return 0;
	STARNN_CHECK(starnn_ckpt_setting_int(&o->train, f, file, "train_size", o->given[O_TRAIN_SIZE], &o->train_size));
	return starnn_ckpt_setting_int(&o->train, f, file, "val_size", o->given[O_VAL_SIZE], &o->val_size);
}

static int checkpoint_attrs(void *self, struct ckpt_attr *a, int max)
{
	struct run *r = self;
	const struct options *o = r->o;
	hidden_text(o, r->hidden, sizeof r->hidden);
	const struct ckpt_attr attrs[] = {
		{.name = "format", .type = CKPT_STRING, .s = CKPT_FORMAT},
		{.name = "format_version", .type = CKPT_INT, .i = CKPT_VERSION},
		{.name = "inputs", .type = CKPT_INT, .i = o->inputs},
		{.name = "outputs", .type = CKPT_INT, .i = o->outputs},
		{.name = "hidden", .type = CKPT_STRING, .s = r->hidden},
		{.name = "train_size", .type = CKPT_INT, .i = o->train_size},
		{.name = "val_size", .type = CKPT_INT, .i = o->val_size},
	};
	int n = (int)(sizeof attrs / sizeof *attrs);
	if (n > max)
		return starnn_error(STARNN_EINVAL, "checkpoint: too many attributes for the table");
	memcpy(a, attrs, sizeof attrs);
	return n;
}

static const struct starnn_model_ops mlp_ops = {
	.flags = STARNN_MODEL_LOSS_WHEN_LOGGED | STARNN_MODEL_REPORTS_WHEN_QUIET,
	.read_checkpoint = read_checkpoint,
	.open_data = open_data,
	.create = create,
	.describe = describe,
	.start = start,
	.stage = stage,
	.submit = submit,
	.loss = step_loss,
	.report_step = report_step,
	.finish = finish,
	.checkpoint_attrs = checkpoint_attrs,
};

int main(int argc, char **argv)
{
	struct options o;
	starnn_blas_autoselect(argv);
	if (parse_options(argc, argv, &o) < 0)
		return 2;
	const struct starnn_program prog = {.name = "mlp", .quiet = o.train.quiet, .announce = 0};
	if (starnn_program_start(&prog, argc, argv) < 0)
		return 1;
	struct run r = {.o = &o};
	int rc = starnn_trainer_run(&mlp_ops, &r, &o.train);
	run_free(&r);
	return starnn_program_end(&prog, rc);
}
