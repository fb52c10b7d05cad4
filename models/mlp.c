/* models/mlp: a multilayer perceptron trained on generated regression data.
 *
 * Data: x ~ U(-1, 1)^D; y = A2 tanh(A1 x + c) + noise, a fixed random
 * "teacher" network (seeded), so the achievable loss is the noise level.
 *
 * One training step is one asynchronous task graph: the batch is split
 * into micro-batches; each runs forward, loss and backward as its own chain
 * of tasks, writing its weight gradients into its own slice of a gradient
 * tensor; a tree of axpy tasks sums those slices; the optimizer updates each
 * parameter. Nothing waits inside the step; the loss is read only when it is
 * logged. Layer l: z = a W^T + b (gemm, bias_add), a = relu(z) but for the
 * last layer; loss = mean((z_L - y)^2). */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codelets/adam.h"
#include "codelets/axpy.h"
#include "codelets/bias.h"
#include "codelets/gemm.h"
#include "codelets/mse.h"
#include "codelets/relu.h"
#include "codelets/sgd.h"
#include "runtime/starnn.h"

#define MAX_LAYERS 8

struct options {
	int inputs, outputs, nhidden, hidden[MAX_LAYERS];
	int batch, micro, steps, log_every, train_size, val_size;
	float lr, momentum;
	int adam;
	unsigned long seed;
	int quiet;
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
	starnn_tensor *w, *b;        /* [out, in], [1, out] */
	starnn_tensor *gw, *gb;      /* [M*out, in], [M, out]: one slice per micro-batch */
	starnn_tensor **gwp, **gbp;  /* the slices */
	starnn_tensor *s1w, *s1b, *s2w, *s2b; /* optimizer state (momentum; Adam m, v) */
	starnn_tensor *z, *a, *dz, *da; /* activations [B, out] and their gradients */
};

struct mlp {
	int nlayers, batch, micro;
	struct layer layers[MAX_LAYERS + 1];
	starnn_tensor *x, *y, *loss;  /* [B, D], [B, K], [M, 1] */
	int64_t step;
};

static int new2(starnn_tensor **t, const char *layer, const char *what, int64_t r, int64_t c)
{
	char name[STARNN_NAME_MAX];
	snprintf(name, sizeof name, "%s%s%s", layer, *layer ? "." : "", what);
	return starnn_tensor_new(t, name, STARNN_FP32, 2, r, c);
}

static int split_batch(starnn_tensor *t, int micro)
{
	return starnn_tensor_split(t, 0, micro, NULL, NULL);
}

static int mlp_create(struct mlp *m, const struct options *o, uint64_t *s)
{
	memset(m, 0, sizeof *m);
	m->nlayers = o->nhidden + 1;
	m->batch = o->batch;
	m->micro = o->micro;
	int B = o->batch, M = o->micro;
	STARNN_CHECK(new2(&m->x, "", "x", B, o->inputs));
	STARNN_CHECK(new2(&m->y, "", "y", B, o->outputs));
	STARNN_CHECK(new2(&m->loss, "", "loss", M, 1));
	STARNN_CHECK(split_batch(m->x, M));
	STARNN_CHECK(split_batch(m->y, M));
	STARNN_CHECK(split_batch(m->loss, M));
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		char name[16];
		snprintf(name, sizeof name, "fc%d", l + 1);
		L->in = l == 0 ? o->inputs : o->hidden[l - 1];
		L->out = l == m->nlayers - 1 ? o->outputs : o->hidden[l];
		STARNN_CHECK(new2(&L->w, name, "W", L->out, L->in));
		STARNN_CHECK(new2(&L->b, name, "b", 1, L->out));
		STARNN_CHECK(new2(&L->gw, name, "dW", (int64_t)M * L->out, L->in));
		STARNN_CHECK(new2(&L->gb, name, "db", M, L->out));
		STARNN_CHECK(starnn_tensor_split(L->gw, 0, M, NULL, &L->gwp));
		STARNN_CHECK(starnn_tensor_split(L->gb, 0, M, NULL, &L->gbp));
		STARNN_CHECK(new2(&L->s1w, name, "W.m", L->out, L->in));
		STARNN_CHECK(new2(&L->s1b, name, "b.m", 1, L->out));
		if (o->adam) {
			STARNN_CHECK(new2(&L->s2w, name, "W.v", L->out, L->in));
			STARNN_CHECK(new2(&L->s2b, name, "b.v", 1, L->out));
		}
		STARNN_CHECK(new2(&L->z, name, "z", B, L->out));
		STARNN_CHECK(new2(&L->dz, name, "dz", B, L->out));
		STARNN_CHECK(split_batch(L->z, M));
		STARNN_CHECK(split_batch(L->dz, M));
		if (l < m->nlayers - 1) {
			STARNN_CHECK(new2(&L->a, name, "a", B, L->out));
			STARNN_CHECK(new2(&L->da, name, "da", B, L->out));
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
		int rc = starnn_tensor_write(L->w, w);
		if (rc == 0)
			rc = starnn_tensor_write(L->b, b);
		free(w), free(b);
		STARNN_CHECK(rc);
	}
	return 0;
}

static void mlp_destroy(struct mlp *m)
{
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		starnn_tensor *all[] = {L->w, L->b, L->gw, L->gb, L->s1w, L->s1b, L->s2w, L->s2b, L->z, L->a, L->dz, L->da};
		for (size_t i = 0; i < sizeof all / sizeof *all; i++)
			starnn_tensor_destroy(all[i]);
	}
	starnn_tensor_destroy(m->x);
	starnn_tensor_destroy(m->y);
	starnn_tensor_destroy(m->loss);
}

/* Forward of micro-batch p, then its loss (scale: 1 / elements of the batch). */
static int forward(struct mlp *m, int p, float scale)
{
	starnn_tensor *a = m->x->parts[p];
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		STARNN_CHECK(starnn_gemm(0, 1, 1.0f, a, L->w, 0.0f, L->z->parts[p]));
		STARNN_CHECK(starnn_bias_add(L->b, L->z->parts[p]));
		if (L->a) {
			STARNN_CHECK(starnn_relu_fwd(L->z->parts[p], L->a->parts[p]));
			a = L->a->parts[p];
		}
	}
	return starnn_mse_fwd(m->layers[m->nlayers - 1].z->parts[p], m->y->parts[p], m->loss->parts[p], scale, 0.0f);
}

static int backward(struct mlp *m, int p, float scale)
{
	struct layer *last = &m->layers[m->nlayers - 1];
	STARNN_CHECK(starnn_mse_bwd(last->z->parts[p], m->y->parts[p], last->dz->parts[p], scale));
	for (int l = m->nlayers - 1; l >= 0; l--) {
		struct layer *L = &m->layers[l];
		starnn_tensor *input = l ? m->layers[l - 1].a->parts[p] : m->x->parts[p];
		STARNN_CHECK(starnn_gemm(1, 0, 1.0f, L->dz->parts[p], input, 0.0f, L->gwp[p]));
		STARNN_CHECK(starnn_bias_grad(L->dz->parts[p], 0.0f, L->gbp[p]));
		if (l) {
			struct layer *prev = &m->layers[l - 1];
			STARNN_CHECK(starnn_gemm(0, 0, 1.0f, L->dz->parts[p], L->w, 0.0f, prev->da->parts[p]));
			STARNN_CHECK(starnn_relu_bwd(prev->z->parts[p], prev->da->parts[p], prev->dz->parts[p]));
		}
	}
	return 0;
}

/* Sums the micro-batch slices into slice 0 with a tree of axpy tasks:
 * log2(M) levels, the tasks of one level independent of each other. */
static int reduce_slices(starnn_tensor **slices, int n)
{
	for (int stride = 1; stride < n; stride *= 2)
		for (int i = 0; i + stride < n; i += 2 * stride)
			STARNN_CHECK(starnn_axpy(1.0f, slices[i + stride], slices[i]));
	return 0;
}

static int update(struct mlp *m, const struct options *o)
{
	m->step++;
	for (int l = 0; l < m->nlayers; l++) {
		struct layer *L = &m->layers[l];
		STARNN_CHECK(reduce_slices(L->gwp, m->micro));
		STARNN_CHECK(reduce_slices(L->gbp, m->micro));
		if (o->adam) {
			struct starnn_adam_params ap = {o->lr, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
			STARNN_CHECK(starnn_adam(L->w, L->gwp[0], L->s1w, L->s2w, &ap, m->step, 1.0f));
			STARNN_CHECK(starnn_adam(L->b, L->gbp[0], L->s1b, L->s2b, &ap, m->step, 1.0f));
		} else {
			struct starnn_sgd_params sp = {o->lr, o->momentum, 0.0f, 0.0f, 0};
			STARNN_CHECK(starnn_sgd(L->w, L->gwp[0], L->s1w, &sp, m->step, 1.0f));
			STARNN_CHECK(starnn_sgd(L->b, L->gbp[0], L->s1b, &sp, m->step, 1.0f));
		}
	}
	return 0;
}

/* Copies samples idx[0..B) of ds into the x / y tensors. */
static int load_batch(struct mlp *m, const struct dataset *ds, const int *idx, float *xbuf, float *ybuf)
{
	for (int i = 0; i < m->batch; i++) {
		memcpy(xbuf + (size_t)i * (size_t)ds->d, ds->x + (size_t)idx[i] * (size_t)ds->d, sizeof(float) * (size_t)ds->d);
		memcpy(ybuf + (size_t)i * (size_t)ds->k, ds->y + (size_t)idx[i] * (size_t)ds->k, sizeof(float) * (size_t)ds->k);
	}
	STARNN_CHECK(starnn_tensor_write(m->x, xbuf));
	return starnn_tensor_write(m->y, ybuf);
}

static int read_loss(struct mlp *m, double *loss)
{
	float parts[64];
	STARNN_CHECK(starnn_tensor_read(m->loss, parts));
	*loss = 0;
	for (int p = 0; p < m->micro; p++)
		*loss += parts[p];
	if (!isfinite(*loss))
		return starnn_error(STARNN_ENUM, "mlp: the loss is %g (diverged: lower --lr)", *loss);
	return 0;
}

/* Mean squared error over the whole of ds (its size is a multiple of B). */
static int evaluate(struct mlp *m, const struct dataset *ds, int *idx, float *xbuf, float *ybuf, double *mse)
{
	int nb = ds->n / m->batch;
	double total = 0;
	for (int b = 0; b < nb; b++) {
		for (int i = 0; i < m->batch; i++)
			idx[i] = b * m->batch + i;
		STARNN_CHECK(load_batch(m, ds, idx, xbuf, ybuf));
		for (int p = 0; p < m->micro; p++)
			STARNN_CHECK(forward(m, p, 1.0f / (float)(m->batch * ds->k)));
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
	        "  --train-size N     training samples (default 8192)\n"
	        "  --val-size N       validation samples (default 1024; rounded down to a\n"
	        "                     multiple of the batch)\n"
	        "  --log-every N      print the loss every N steps (default 20); the step\n"
	        "                     waits for its loss only when it is printed\n"
	        "  --quiet            only the final line\n"
	        "  -h, --help         this text\n");
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
		{"help", no_argument, 0, 'h'},              {0, 0, 0, 0},
	};
	int c, seed = 1;
	float lr = -1;
	*o = (struct options){.inputs = 16, .outputs = 4, .nhidden = 2, .hidden = {64, 64}, .batch = 64,
	                      .steps = 300, .log_every = 20, .train_size = 8192, .val_size = 1024,
	                      .momentum = 0.9f, .adam = 1};
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

static int train(const struct options *o)
{
	struct dataset train = {0}, val = {0};
	struct mlp m;
	int rc = make_data(&train, &val, o);
	uint64_t s = o->seed * 104729 + 3;
	int *idx = malloc(sizeof(int) * (size_t)(o->train_size > o->batch ? o->train_size : o->batch));
	float *xbuf = malloc(sizeof(float) * (size_t)o->batch * (size_t)o->inputs);
	float *ybuf = malloc(sizeof(float) * (size_t)o->batch * (size_t)o->outputs);
	if (rc == 0 && (!idx || !xbuf || !ybuf))
		rc = starnn_error(STARNN_ENOMEM, "mlp: out of memory");
	if (rc == 0)
		rc = mlp_create(&m, o, &s);
	if (rc < 0) {
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
		printf("mlp: %s network, batch %d in %d micro-batches, %s lr %g, %d train / %d validation samples\n",
		       widths, o->batch, o->micro, o->adam ? "adam" : "sgd", o->lr, o->train_size, o->val_size);
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
		for (int p = 0; rc == 0 && p < m.micro; p++) {
			rc = forward(&m, p, scale);
			if (rc == 0)
				rc = backward(&m, p, scale);
		}
		if (rc == 0)
			rc = update(&m, o);
		if (rc == 0 && (step % o->log_every == 0 || step == o->steps)) {
			rc = read_loss(&m, &loss);
			double t = now();
			if (rc == 0 && !o->quiet)
				printf("step %5d/%d  loss %.6f  %.0f samples/s\n", step, o->steps, loss,
				       (double)o->batch * (step % o->log_every ? step % o->log_every : o->log_every) /
				               (t - tlast));
			tlast = t;
		}
	}
	double mse = NAN;
	if (rc == 0)
		rc = evaluate(&m, &val, idx, xbuf, ybuf, &mse);
	double elapsed = now() - t0;
	if (rc == 0)
		printf("final: train loss %.6f, validation MSE %.6f (predicting the mean: %.6f; noise floor %.6f), "
		       "%d steps in %.2f s (%.0f samples/s)\n",
		       loss, mse, base, (double)NOISE * NOISE, o->steps, elapsed,
		       elapsed > 0 ? (double)o->steps * o->batch / elapsed : 0.0);
	int rc2 = starnn_wait();
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
	int rc = starnn_init(&cfg);
	if (rc < 0) {
		fprintf(stderr, "mlp: %s\n", starnn_last_error());
		return 1;
	}
	if (o.micro == 0) {
		int workers = starnn_ncpu_workers() + starnn_ncuda_workers();
		o.micro = workers < 1 ? 1 : workers > 8 ? 8 : workers;
	}
	if (o.micro > o.batch) {
		fprintf(stderr, "mlp: --micro-batches (%d) cannot exceed --batch (%d)\n", o.micro, o.batch);
		starnn_shutdown();
		return 2;
	}
	rc = train(&o);
	if (rc < 0)
		fprintf(stderr, "mlp: %s\n", starnn_last_error());
	int rc2 = starnn_shutdown();
	if (rc == 0 && rc2 < 0) {
		fprintf(stderr, "mlp: %s\n", starnn_last_error());
		rc = rc2;
	}
	return rc < 0 ? 1 : 0;
}
