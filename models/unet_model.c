/* The SEVIR nowcasting UNet as a StarPU task graph (see unet_model.h for
 * the architecture and the tensor paths).
 *
 * Shapes (per level i = 0..depth-1: c_i = f*2^i channels at s_i = size/2^i):
 *   x [B, in, s0, s0] -> enc0 -> skip0 [B, c0, s0, s0] -> pool0 [B, c0, s1, s1]
 *   -> enc1 ... -> pool_{d-1} -> centre [B, 32f, s_d, s_d]
 *   dec_i: up_i = convT(below) [B, c_i, s_i, s_i]; cat_i = [skip_i, up_i]
 *          ([up_i, skip_i] for UNET_STARNN_V1) [B, 2c_i, s_i, s_i];
 *          a0 = relu(bn0(cat_i)); out_i = conv_block(a0)
 *   pred = conv1x1(out_0) [B, out, s0, s0]; loss = mean((pred - y)^2)
 * skip_i and up_i are channel views of cat_i: the encoder's last batch norm
 * writes the skip in place and the transposed conv writes the up half, so
 * the concatenation costs no copy (the same holds for their gradients in
 * dcat_i). Every activation is allocated for the whole batch and split into
 * M micro-batches along axis 0; the concatenations' micro-batches are each
 * split into their two channel views (a nested plan).
 *
 * One training step is one asynchronous graph: per micro-batch convolution
 * tasks, batch norms that combine the M parts (their statistics are over
 * the whole batch), the loss per micro-batch, the backward mirrored, weight
 * gradients written per micro-batch into slices (beta 0) and summed by a
 * tree of axpy tasks (log2 M levels), then the optimizer: the parameter
 * bookkeeping (gradient slices, their reduction, compute copies, optimizer
 * state and update, loss scaling) is runtime/train/params.h's; this file keeps
 * the layers' forward and backward graphs. Batch-norm parameter gradients
 * come out of the batch-norm backward already summed over the parts (one
 * slice). Nothing waits inside a step.
 *
 * Length (about 1,000 lines): the forward and backward graphs of every
 * layer kind, in fp32 and mixed precision, one function per block; the
 * options are models/unet_options.c's, the program models/unet.c's. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/amp.h"
#include "codelets/batchnorm.h"
#include "codelets/concat.h"
#include "codelets/copy.h"
#include "codelets/conv2d.h"
#include "codelets/conv2d_routes.h"
#include "codelets/convt2d.h"
#include "codelets/maxpool.h"
#include "codelets/mse.h"
#include "models/unet_model.h"
#include "runtime/train/params.h"
#include "runtime/train/random.h"
#include "runtime/train/replica.h"

#define UNET_MAX_DEPTH 5
#define CENTRE_MULT 32 /* centre: conv_block(32 * f), as the reference */

/* ------------------------------------------------------------ tensors */

/* An activation: the whole-batch tensor and its micro-batch parts. For a
 * channel view, t is the view (owned by the concatenation tensor). */
struct act {
	starnn_tensor *t;
	starnn_tensor **p;
};

/* Trainable tensors are parameters of the set (runtime/train/params.h): master,
 * gradient slices (one per micro-batch for convolutions, one for batch
 * norms), compute copy (convolution weights) and optimizer state. */
struct conv {
	int cin, cout, k;
	int whole; /* the weight gradient once on the whole batch, into slice 0
	            * (starnn_conv2d_wgrad_whole), the parameters' only slice */
	starnn_param *w, *b;
};

struct bn {
	starnn_batchnorm bn;
	starnn_param *gamma, *beta;     /* the batch norm's own tensors, borrowed */
	char path[48];
};

/* conv_block: [conv 3x3 -> BN -> ReLU] x 2; its input and output are given
 * by the caller (the output may be a view). */
struct block {
	struct conv c1, c2;
	struct bn n1, n2;
	struct act z1, a1, z2, dz1, da1, dz2;
};

struct level {
	int c, s;                        /* channels, image size */
	struct block enc, dec;
	struct act skip, dskip;          /* per micro-batch: channel views of cat / dcat parts */
	struct act pool, dpool;          /* [B, c, s/2, s/2] */
	starnn_tensor *cat, *dcat;       /* [B, 2c, s, s]: [skip, up] (or [up, skip]: the convention) */
	struct act catb, dcatb;          /* their micro-batch parts */
	struct act up, dup;              /* per micro-batch: channel views of cat / dcat parts */
	struct conv upc;                 /* transposed conv below -> up */
	struct bn n0;
	struct act a0, da0;              /* relu(bn0(cat)) */
	struct act out, dout;            /* decoder output [B, c, s, s] */
};

struct entry {
	char path[96];
	starnn_tensor *t;
	int is_parameter;
	starnn_tensor *grad;
};

struct unet {
	struct unet_config cfg;
	struct level lv[UNET_MAX_DEPTH];
	struct block centre;
	struct act centre_out, dcentre_out;
	struct conv outc;
	struct act x, y, pred, dpred, loss;
	/* Pipelined training (unet_stage_batch, unet_read_step_loss): staging
	 * tensors of the input and target (created on first use), copied into
	 * x and y by tasks; and the loss of the last two training steps, copied
	 * by tasks into slot step % 2 (slot_step: which step each slot holds). */
	struct act xs, ys;
	struct act loss_slot[2];
	int64_t slot_step[2];
	starnn_dtype dt;                 /* compute dtype of activations */
	starnn_params *ps;               /* every trainable tensor, in layer order; loss scaling */
	int bn_synced;                   /* batch statistics over the ranks (bn_sync) */
	int wgrad_whole, nconv;          /* convolutions whose weight gradient is the whole batch's; all */
	int wino, npass3;                /* fp32 3x3 passes asking for Winograd; all (unet_winograd) */

	struct entry *entries;
	struct unet_tensor_ref *refs;
	int nentries;
	int first_state;                 /* entries[first_state...]: optimizer state, parameter by parameter */
	uint64_t rng;
};

/* ------------------------------------------------------------ configuration */

static int check_config(const struct unet_config *c)
{
	if (!c)
		return starnn_error(STARNN_EINVAL, "unet: no configuration");
	if (!unet_convention_name(c->convention))
		return starnn_error(STARNN_EINVAL, "unet: unknown convention %d", c->convention);
	if (c->depth < 1 || c->depth > UNET_MAX_DEPTH)
		return starnn_error(STARNN_EINVAL, "unet: depth must be in 1..%d, got %d", UNET_MAX_DEPTH, c->depth);
	if (c->filters < 1 || c->filters > 4096)
		return starnn_error(STARNN_EINVAL, "unet: filters must be in 1..4096, got %d", c->filters);
	if (c->in_frames < 1 || c->in_frames > 4096 || c->out_frames < 1 || c->out_frames > 4096)
		return starnn_error(STARNN_EINVAL, "unet: input and output frames must be in 1..4096, got %d and %d",
		                    c->in_frames, c->out_frames);
	int unit = 1 << c->depth;
	if (c->size < unit || c->size % unit != 0 || c->size > 16384)
		return starnn_error(STARNN_EINVAL,
		                    "unet: the image size must be a positive multiple of 2^depth = %d (at most 16384), got %d",
		                    unit, c->size);
	return 0;
}

static int check_batch(const struct unet_config *c)
{
	if (c->batch < 1)
		return starnn_error(STARNN_EINVAL, "unet: the batch must be at least 1, got %d", c->batch);
	if (c->micro < 1 || c->micro > c->batch)
		return starnn_error(STARNN_EINVAL, "unet: micro-batches must be in 1..batch (%d), got %d", c->batch,
		                    c->micro);
	return 0;
}

/* The layers in order, as (name, op, output C x H x W, parameters), for
 * printing and counting without a model. */
typedef void (*layer_fn)(void *ctx, const char *name, const char *op, int c, int h, int64_t params);

static int64_t conv_params(int cin, int cout, int k)
{
	return (int64_t)cout * cin * k * k + cout;
}

static void walk_block(const char *prefix, int cin, int c, int s, layer_fn fn, void *ctx)
{
	char name[48];
	snprintf(name, sizeof name, "%.16s/conv1", prefix);
	fn(ctx, name, "conv 3x3", c, s, conv_params(cin, c, 3));
	snprintf(name, sizeof name, "%.16s/bn1", prefix);
	fn(ctx, name, "batchnorm + relu", c, s, 2 * (int64_t)c);
	snprintf(name, sizeof name, "%.16s/conv2", prefix);
	fn(ctx, name, "conv 3x3", c, s, conv_params(c, c, 3));
	snprintf(name, sizeof name, "%.16s/bn2", prefix);
	fn(ctx, name, "batchnorm + relu", c, s, 2 * (int64_t)c);
}

static void walk(const struct unet_config *cfg, layer_fn fn, void *ctx)
{
	int f = cfg->filters, cin = cfg->in_frames;
	char name[32];
	for (int i = 0; i < cfg->depth; i++) {
		int c = f << i, s = cfg->size >> i;
		snprintf(name, sizeof name, "enc%d", i);
		walk_block(name, cin, c, s, fn, ctx);
		snprintf(name, sizeof name, "enc%d/pool", i);
		fn(ctx, name, "maxpool 2x2", c, s / 2, 0);
		cin = c;
	}
	int cc = CENTRE_MULT * f;
	walk_block("centre", cin, cc, cfg->size >> cfg->depth, fn, ctx);
	int below = cc;
	for (int i = cfg->depth - 1; i >= 0; i--) {
		int c = f << i, s = cfg->size >> i;
		snprintf(name, sizeof name, "dec%d/up", i);
		fn(ctx, name, "conv-transpose 2x2/2", c, s, (int64_t)below * c * 4 + c);
		snprintf(name, sizeof name, "dec%d/concat", i);
		fn(ctx, name, cfg->convention == UNET_STARNN_V1 ? "concat [up, enc skip]" : "concat [enc skip, up]", 2 * c,
		   s, 0);
		snprintf(name, sizeof name, "dec%d/bn0", i);
		fn(ctx, name, "batchnorm + relu", 2 * c, s, 4 * (int64_t)c);
		snprintf(name, sizeof name, "dec%d", i);
		walk_block(name, 2 * c, c, s, fn, ctx);
		below = c;
	}
	fn(ctx, "out", "conv 1x1 (linear)", cfg->out_frames, cfg->size, conv_params(f, cfg->out_frames, 1));
}

static void count_fn(void *ctx, const char *name, const char *op, int c, int h, int64_t params)
{
	(void)name, (void)op, (void)c, (void)h;
	*(int64_t *)ctx += params;
}

int64_t unet_count_parameters(const struct unet_config *cfg)
{
	if (check_config(cfg) < 0)
		return -1;
	int64_t n = 0;
	walk(cfg, count_fn, &n);
	return n;
}

/* Multiply-adds per sample of the convolution layers (the rest of a step
 * is memory-bound): a k x k convolution does (weights) x H x W, a 2x2/2
 * transposed one (weights) / 4 x H x W (each output pixel sees one tap). */
struct flops_ctx {
	double fwd, first; /* all layers; the first one (no data gradient: it has the input) */
};

static void flops_fn(void *ctx, const char *name, const char *op, int c, int h, int64_t params)
{
	struct flops_ctx *f = ctx;
	if (strncmp(op, "conv", 4) != 0)
		return;
	(void)name;
	double macs = (double)(params - c) * h * h / (strstr(op, "transpose") ? 4.0 : 1.0);
	if (f->fwd == 0) /* walk visits the first layer first */
		f->first = 2 * macs;
	f->fwd += 2 * macs;
}

int unet_count_flops(const struct unet_config *cfg, double *forward, double *train)
{
	STARNN_CHECK(check_config(cfg));
	struct flops_ctx f = {0, 0};
	walk(cfg, flops_fn, &f);
	*forward = f.fwd;
	/* training: forward, backward data (but for the first layer), backward weights */
	*train = 3 * f.fwd - f.first;
	return 0;
}

static void print_fn(void *ctx, const char *name, const char *op, int c, int h, int64_t params)
{
	FILE *f = ctx;
	fprintf(f, "%-14s %-22s %5d x %5d x %5d %12lld\n", name, op, c, h, h, (long long)params);
}

int unet_print_config(const struct unet_config *cfg, FILE *f)
{
	STARNN_CHECK(check_config(cfg));
	fprintf(f, "UNet: depth %d, filters %d, %d -> %d frames, %d x %d images, convention %s (concat [%s], "
	           "BatchNorm eps %g)\n",
	        cfg->depth, cfg->filters, cfg->in_frames, cfg->out_frames, cfg->size, cfg->size,
	        unet_convention_name(cfg->convention),
	        cfg->convention == UNET_STARNN_V1 ? "up, skip" : "skip, up", unet_convention_bn_eps(cfg->convention));
	fprintf(f, "%-14s %-22s %-21s %12s\n", "layer", "operation", "output per sample", "parameters");
	fprintf(f, "%-14s %-22s %5d x %5d x %5d %12d\n", "input", "", cfg->in_frames, cfg->size, cfg->size, 0);
	walk(cfg, print_fn, f);
	double fwd, train;
	STARNN_CHECK(unet_count_flops(cfg, &fwd, &train));
	fprintf(f, "convolution GFLOP per sample: forward %.4g, training step %.4g (forward, backward data and weights)\n",
	        fwd * 1e-9, train * 1e-9);
	fprintf(f, "parameters: %lld\n", (long long)unet_count_parameters(cfg));
	return 0;
}

void unet_print(const unet *m, FILE *f)
{
	unet_print_config(&m->cfg, f);
}

void unet_optim_defaults(struct unet_optim *o)
{
	*o = (struct unet_optim){.kind = UNET_ADAM, .lr = 1e-3f, .warmup = 0, .momentum = 0.0f,
	                         .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f};
}

/* ------------------------------------------------------------ creation */

static int add_entry(unet *m, const char *path, starnn_tensor *t, int is_parameter, starnn_tensor *grad)
{
	struct entry *e = realloc(m->entries, sizeof *e * (size_t)(m->nentries + 1));
	if (!e)
		return starnn_error(STARNN_ENOMEM, "unet: out of memory");
	m->entries = e;
	e = &m->entries[m->nentries++];
	memset(e, 0, sizeof *e);
	snprintf(e->path, sizeof e->path, "%s", path);
	e->t = t;
	e->is_parameter = is_parameter;
	e->grad = grad;
	return 0;
}

/* Adds t (fp32; the set owns it unless STARNN_PARAM_BORROWED, and
 * destroys it here on failure) as parameter `path` with nslices gradient
 * slices, and its checkpoint entry. */
static int add_param(unet *m, starnn_param **p, const char *path, starnn_tensor *t, int nslices, int flags)
{
	int rc = starnn_params_add(m->ps, path, t, nslices, flags, p);
	if (rc < 0) {
		if (!(flags & STARNN_PARAM_BORROWED))
			starnn_tensor_destroy(t);
		return rc;
	}
	return add_entry(m, path, t, 1, (*p)->grad[0]);
}

/* StarPU names: the path with '.' for '/', shortened to fit. */
static void tensor_name(char *buf, size_t size, const char *path, const char *suffix)
{
	/* top-level tensors (empty path) are just "x", not ".x" */
	snprintf(buf, size, "%.40s%s%s", path, *path && *suffix ? "." : "", suffix);
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '.';
}

/* Fills t with U(-bound, bound) from the model's generator. */
static int init_uniform(unet *m, starnn_tensor *t, float bound)
{
	size_t n = starnn_tensor_numel(t);
	float *v = malloc(sizeof *v * n);
	if (!v)
		return starnn_error(STARNN_ENOMEM, "unet: out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = starnn_rng_uniform(&m->rng, -bound, bound);
	int rc = starnn_tensor_write(t, v);
	free(v);
	return rc;
}

/* Conv2d (transposed = 0: weight [O, C, k, k]) or ConvTranspose2d
 * (transposed = 1: weight [C, O, k, k]) with bias [O], initialised as
 * PyTorch's reset_parameters: kaiming_uniform(a = sqrt(5)) is
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the bias the same bound, where fan_in
 * = weight.size(1) * k * k: C*k*k for Conv2d, O*k*k for ConvTranspose2d.
 * s: the side of the Conv2d's images (its weight-gradient route). */
static int conv_create(unet *m, struct conv *c, const char *path, int cin, int cout, int k, int transposed, int s)
{
	char name[STARNN_NAME_MAX], wpath[64], bpath[64];
	starnn_tensor *w, *b;
	c->cin = cin, c->cout = cout, c->k = k;
	/* (transposed: their output gradients are halves of a concatenation's,
	 * read per part) */
	c->whole = transposed ? 0
	                      : starnn_conv2d_wgrad_whole(cin, cout, k, m->cfg.batch, (int64_t)s * s, m->cfg.micro);
	STARNN_CHECK(c->whole);
	m->wgrad_whole += c->whole;
	m->nconv++;
	/* the passes that run on oneDNN: the first layer has no backward-data
	 * pass, and weight gradients may take another route */
	const int first = m->nconv == 1;
	if (!transposed && k == 3)
		for (int pass = STARNN_CONV2D_FWD; pass <= STARNN_CONV2D_BWD_WEIGHT; pass++) {
			/* (the activations' layouts; a bad STARNN_LAYOUT, < 0, is
			 * refused where the activations are made) */
			const int xb = first ? 1 : starnn_conv2d_act_cblock(cin, STARNN_FP32, m->cfg.micro),
			          yb = starnn_conv2d_act_cblock(cout, STARNN_FP32, m->cfg.micro);
			const struct starnn_conv2d_geom g = {(size_t)(m->cfg.batch / m->cfg.micro), (size_t)cin, (size_t)cout,
			                                     (size_t)s, (size_t)s, 3, xb > 1 ? (size_t)xb : 1,
			                                     yb > 1 ? (size_t)yb : 1, 0, 0, 0};
			if ((pass == STARNN_CONV2D_BWD_DATA && first) ||
			    (pass == STARNN_CONV2D_BWD_WEIGHT &&
			     starnn_conv2d_wgrad_route(&g, STARNN_FP32) != STARNN_CONV2D_WGRAD_DNNL))
				continue;
			m->wino += starnn_conv2d_winograd(&g, (enum starnn_conv2d_pass)pass, STARNN_FP32);
			m->npass3++;
		}
	snprintf(wpath, sizeof wpath, "%s/weight", path);
	snprintf(bpath, sizeof bpath, "%s/bias", path);
	tensor_name(name, sizeof name, path, "weight");
	if (transposed)
		STARNN_CHECK(starnn_tensor_new(&w, name, STARNN_FP32, 4, (int64_t)cin, (int64_t)cout, (int64_t)k,
		                               (int64_t)k));
	else
		STARNN_CHECK(starnn_tensor_new(&w, name, STARNN_FP32, 4, (int64_t)cout, (int64_t)cin, (int64_t)k,
		                               (int64_t)k));
	float bound = 1.0f / sqrtf((float)((transposed ? cout : cin) * k * k));
	int rc = init_uniform(m, w, bound);
	if (rc < 0) {
		starnn_tensor_destroy(w);
		return rc;
	}
	/* the weight's compute copy is what the convolutions read */
	STARNN_CHECK(add_param(m, &c->w, wpath, w, c->whole ? 1 : m->cfg.micro, STARNN_PARAM_COMPUTE_COPY));
	tensor_name(name, sizeof name, path, "bias");
	STARNN_CHECK(starnn_tensor_new(&b, name, STARNN_FP32, 1, (int64_t)cout));
	if ((rc = init_uniform(m, b, bound)) < 0) {
		starnn_tensor_destroy(b);
		return rc;
	}
	return add_param(m, &c->b, bpath, b, c->whole ? 1 : m->cfg.micro, 0);
}

static int bn_create(unet *m, struct bn *n, const char *path, int c)
{
	char name[STARNN_NAME_MAX];
	snprintf(n->path, sizeof n->path, "%s", path);
	tensor_name(name, sizeof name, path, "");
	STARNN_CHECK(starnn_batchnorm_init(&n->bn, name, c, m->cfg.micro, 1));
	n->bn.eps = (float)unet_convention_bn_eps(m->cfg.convention);
	char p[96];
	snprintf(p, sizeof p, "%s/weight", path);
	/* synchronised, their gradients come out of the backward already
	 * summed over the replicas */
	const int flags = STARNN_PARAM_BORROWED | (m->bn_synced ? STARNN_PARAM_REPLICA_SUMMED : 0);
	STARNN_CHECK(add_param(m, &n->gamma, p, n->bn.gamma, 1, flags));
	snprintf(p, sizeof p, "%s/bias", path);
	STARNN_CHECK(add_param(m, &n->beta, p, n->bn.beta, 1, flags));
	snprintf(p, sizeof p, "%s/running_mean", path);
	STARNN_CHECK(add_entry(m, p, n->bn.running_mean, 0, NULL));
	snprintf(p, sizeof p, "%s/running_var", path);
	return add_entry(m, p, n->bn.running_var, 0, NULL);
}

/* After starnn_params_destroy (the set's gradients of gamma and beta). */
static void bn_free(struct bn *n)
{
	starnn_batchnorm_destroy(&n->bn);
}

/* An activation [batch, c, s, s] in the compute dtype and its micro-batch
 * parts, in the layout the convolutions want for `unit` channels
 * (starnn_conv2d_act_cblock; unit = c, or the halves of a concatenation),
 * or NCHW (unit 0: the model's input and output). */
static int act_make(unet *m, struct act *a, const char *path, const char *what, int c, int s, int unit)
{
	char name[STARNN_NAME_MAX];
	tensor_name(name, sizeof name, path, what);
	STARNN_CHECK(starnn_tensor_new(&a->t, name, m->dt, 4, (int64_t)m->cfg.batch, (int64_t)c, (int64_t)s,
	                               (int64_t)s));
	if (unit > 0) {
		int cb = starnn_conv2d_act_cblock(unit, m->dt, m->cfg.micro);
		STARNN_CHECK(cb);
		STARNN_CHECK(starnn_tensor_set_cblock(a->t, cb));
	}
	return starnn_tensor_split(a->t, 0, m->cfg.micro, NULL, &a->p);
}

/* A hidden activation (between convolutions). */
static int act_new(unet *m, struct act *a, const char *path, const char *what, int c, int s)
{
	return act_make(m, a, path, what, c, s, c);
}

/* The layout unit of a0 = relu(bn0(cat)) and of its gradient: 2c, the
 * layout the convolution reading it wants (one NHWC tensor where NHWC is
 * oneDNN's pick), where the batch norm can write that from the
 * concatenation's (blocks of its halves: starnn_batchnorm_out_layout_ok),
 * else c, the concatenation's own (the convolution then reorders it). */
static int a0_unit(const unet *m, int c)
{
	int cb = starnn_conv2d_act_cblock(c, m->dt, m->cfg.micro);
	int cb2 = starnn_conv2d_act_cblock(2 * c, m->dt, m->cfg.micro);
	return cb > 0 && cb2 > 0 && starnn_batchnorm_out_layout_ok(2 * c, cb, cb2) ? 2 * c : c;
}

static void act_free(struct act *a)
{
	starnn_tensor_destroy(a->t);
	a->t = NULL;
	a->p = NULL;
}

static int block_create(unet *m, struct block *b, const char *prefix, int cin, int c, int s)
{
	char path[48];
	snprintf(path, sizeof path, "%s/conv1", prefix);
	STARNN_CHECK(conv_create(m, &b->c1, path, cin, c, 3, 0, s));
	snprintf(path, sizeof path, "%s/bn1", prefix);
	STARNN_CHECK(bn_create(m, &b->n1, path, c));
	snprintf(path, sizeof path, "%s/conv2", prefix);
	STARNN_CHECK(conv_create(m, &b->c2, path, c, c, 3, 0, s));
	snprintf(path, sizeof path, "%s/bn2", prefix);
	STARNN_CHECK(bn_create(m, &b->n2, path, c));
	STARNN_CHECK(act_new(m, &b->z1, prefix, "z1", c, s));
	STARNN_CHECK(act_new(m, &b->a1, prefix, "a1", c, s));
	STARNN_CHECK(act_new(m, &b->z2, prefix, "z2", c, s));
	STARNN_CHECK(act_new(m, &b->dz1, prefix, "dz1", c, s));
	STARNN_CHECK(act_new(m, &b->da1, prefix, "da1", c, s));
	return act_new(m, &b->dz2, prefix, "dz2", c, s);
}

static void block_free(struct block *b)
{
	bn_free(&b->n1), bn_free(&b->n2);
	struct act *acts[] = {&b->z1, &b->a1, &b->z2, &b->dz1, &b->da1, &b->dz2};
	for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
		act_free(acts[i]);
}

/* The concatenation tensor of decoder level i (cat or dcat): its
 * micro-batches, each cut into its [skip, up] channel views ([up, skip]
 * for UNET_STARNN_V1; both c channels, so the layouts and the tasks are
 * the same either way, the views trade places). Only the parts
 * are used (up->t and skip->t stay NULL; up->p and skip->p are arrays of
 * this level's, freed by cat_free). One hierarchy, micro-batches first:
 * writing a part's views and reading the part switch one small plan of that
 * part, rather than two plans of the whole tensor crossing each other. */
static int cat_create(unet *m, starnn_tensor **cat, struct act *whole, struct act *up, struct act *skip,
                      const char *path, const char *what, int c, int s)
{
	STARNN_CHECK(act_make(m, whole, path, what, 2 * c, s, c));
	*cat = whole->t;
	up->t = skip->t = NULL;
	up->p = calloc((size_t)m->cfg.micro, sizeof *up->p);
	skip->p = calloc((size_t)m->cfg.micro, sizeof *skip->p);
	if (!up->p || !skip->p)
		return starnn_error(STARNN_ENOMEM, "unet: out of memory");
	const int up_first = m->cfg.convention == UNET_STARNN_V1;
	for (int p = 0; p < m->cfg.micro; p++)
		STARNN_CHECK(starnn_concat_views(whole->p[p], c, up_first ? &up->p[p] : &skip->p[p],
		                                 up_first ? &skip->p[p] : &up->p[p]));
	return 0;
}

static void cat_free(struct act *up, struct act *skip)
{
	free(up->p);
	free(skip->p);
	up->p = skip->p = NULL;
}

static int ref_table(unet *m)
{
	/* Optimizer state after the model's tensors: optimizer/<path>/<slot>
	 * (exp_avg, exp_avg_sq; momentum_buffer). */
	m->first_state = m->nentries;
	for (int i = 0; i < starnn_params_count(m->ps); i++) {
		starnn_param *p = starnn_params_at(m->ps, i);
		for (int k = 0; k < starnn_params_nslots(m->ps); k++) {
			char path[96];
			snprintf(path, sizeof path, "optimizer/%s/%s", p->name, starnn_params_slot_name(m->ps, k));
			STARNN_CHECK(add_entry(m, path, p->state[k], 0, NULL));
		}
	}
	m->refs = calloc((size_t)m->nentries, sizeof *m->refs);
	if (!m->refs)
		return starnn_error(STARNN_ENOMEM, "unet: out of memory");
	for (int i = 0; i < m->nentries; i++)
		m->refs[i] = (struct unet_tensor_ref){m->entries[i].path, m->entries[i].t, m->entries[i].is_parameter};
	return 0;
}

static int create(unet *m)
{
	const struct unet_config *cfg = &m->cfg;
	int f = cfg->filters, d = cfg->depth, S = cfg->size;
	char path[32];

	/* the micro-batches are independent streams of tasks: each operation
	 * needs fewer parts to keep every worker busy */
	starnn_set_streams(cfg->micro);
	STARNN_CHECK(act_make(m, &m->x, "", "x", cfg->in_frames, S, 0));
	/* the target stays fp32 (the loss is fp32); the input is in the
	 * compute dtype (written with starnn_tensor_write_f32, rounded once) */
	STARNN_CHECK(starnn_tensor_new(&m->y.t, "y", STARNN_FP32, 4, (int64_t)cfg->batch, (int64_t)cfg->out_frames,
	                               (int64_t)S, (int64_t)S));
	STARNN_CHECK(starnn_tensor_split(m->y.t, 0, cfg->micro, NULL, &m->y.p));
	STARNN_CHECK(act_make(m, &m->pred, "", "pred", cfg->out_frames, S, 0));
	STARNN_CHECK(act_make(m, &m->dpred, "", "dpred", cfg->out_frames, S, 0));
	STARNN_CHECK(starnn_tensor_new(&m->loss.t, "loss", STARNN_FP32, 2, (int64_t)cfg->micro, (int64_t)1));
	STARNN_CHECK(starnn_tensor_split(m->loss.t, 0, cfg->micro, NULL, &m->loss.p));
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof path, "loss_step%d", k);
		/* one slot per micro-batch of every replica (starnn_replica_part) */
		int n = starnn_replicas() * cfg->micro;
		STARNN_CHECK(starnn_tensor_new(&m->loss_slot[k].t, path, STARNN_FP32, 2, (int64_t)n, (int64_t)1));
		STARNN_CHECK(starnn_tensor_split(m->loss_slot[k].t, 0, n, NULL, &m->loss_slot[k].p));
	}

	/* Parameters in the order of the forward (the initialisation order). */
	int cin = cfg->in_frames;
	for (int i = 0; i < d; i++) {
		struct level *L = &m->lv[i];
		L->c = f << i, L->s = S >> i;
		snprintf(path, sizeof path, "enc%d", i);
		STARNN_CHECK(block_create(m, &L->enc, path, cin, L->c, L->s));
		STARNN_CHECK(act_new(m, &L->pool, path, "pool", L->c, L->s / 2));
		STARNN_CHECK(act_new(m, &L->dpool, path, "dpool", L->c, L->s / 2));
		cin = L->c;
	}
	int cc = CENTRE_MULT * f, sc = S >> d;
	STARNN_CHECK(block_create(m, &m->centre, "centre", cin, cc, sc));
	STARNN_CHECK(act_new(m, &m->centre_out, "centre", "out", cc, sc));
	STARNN_CHECK(act_new(m, &m->dcentre_out, "centre", "dout", cc, sc));
	int below = cc;
	for (int i = d - 1; i >= 0; i--) {
		struct level *L = &m->lv[i];
		snprintf(path, sizeof path, "dec%d/up", i);
		STARNN_CHECK(conv_create(m, &L->upc, path, below, L->c, 2, 1, 0));
		snprintf(path, sizeof path, "dec%d/bn0", i);
		STARNN_CHECK(bn_create(m, &L->n0, path, 2 * L->c));
		snprintf(path, sizeof path, "dec%d", i);
		STARNN_CHECK(block_create(m, &L->dec, path, 2 * L->c, L->c, L->s));
		STARNN_CHECK(cat_create(m, &L->cat, &L->catb, &L->up, &L->skip, path, "cat", L->c, L->s));
		STARNN_CHECK(cat_create(m, &L->dcat, &L->dcatb, &L->dup, &L->dskip, path, "dcat", L->c, L->s));
		const int unit = a0_unit(m, L->c);
		STARNN_CHECK(act_make(m, &L->a0, path, "a0", 2 * L->c, L->s, unit));
		STARNN_CHECK(act_make(m, &L->da0, path, "da0", 2 * L->c, L->s, unit));
		STARNN_CHECK(act_new(m, &L->out, path, "out", L->c, L->s));
		STARNN_CHECK(act_new(m, &L->dout, path, "dout", L->c, L->s));
		below = L->c;
	}
	STARNN_CHECK(conv_create(m, &m->outc, "out", f, cfg->out_frames, 1, 0, cfg->size));
	return ref_table(m);
}

static int global_batch(const unet *m);

/* The batch norms' statistics over the replicas: each combined slot
 * summed over them (fixed tree, double sums), counts scaled from this
 * replica's samples to the global batch. */
static int bn_sync(void *ctx, starnn_tensor *slot, double *count)
{
	const unet *m = ctx;
	*count = *count / m->cfg.batch * global_batch(m);
	return starnn_replica_sum_with(slot, starnn_bn_slot_add);
}

int unet_create(unet **out, const struct unet_config *cfg, const struct unet_optim *opt, uint64_t seed)
{
	*out = NULL;
	STARNN_CHECK(check_config(cfg));
	STARNN_CHECK(check_batch(cfg));
	struct unet_optim o;
	if (opt)
		o = *opt;
	else
		unet_optim_defaults(&o);
	if (o.kind != UNET_ADAM && o.kind != UNET_SGD)
		return starnn_error(STARNN_EINVAL, "unet: unknown optimizer %d", (int)o.kind);
	/* the set checks the optimizer settings, the dtype and the scaling */
	struct starnn_params_config pc = {
		.optim = {.kind = o.kind == UNET_SGD ? STARNN_OPTIM_SGD : STARNN_OPTIM_ADAM, .lr = o.lr,
		          .warmup = o.warmup, .momentum = o.momentum, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
		          .weight_decay = o.weight_decay},
		.compute = (starnn_dtype)cfg->compute,
		.loss_scaling = (enum starnn_loss_scaling)cfg->loss_scale,
		.static_scale = cfg->static_scale,
	};
	if (cfg->edge) {
		pc.master_host = cfg->edge->master_host;
		pc.wire_weights = cfg->edge->wire_weights;
		pc.wire_grads = cfg->edge->wire_grads;
		pc.awp = cfg->edge->awp;
	}
	starnn_params *ps;
	STARNN_CHECK(starnn_params_new(&ps, &pc));
	unet *m = calloc(1, sizeof *m);
	if (!m) {
		starnn_params_destroy(ps);
		return starnn_error(STARNN_ENOMEM, "unet: out of memory");
	}
	m->cfg = *cfg;
	m->ps = ps;
	if (!cfg->bn_local && starnn_replicas() > 1) {
		starnn_batchnorm_set_sync(bn_sync, m);
		m->bn_synced = 1;
	}
	m->dt = (starnn_dtype)cfg->compute;
	m->rng = seed;
	int rc = create(m);
	if (rc < 0) {
		unet_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

void unet_destroy(unet *m)
{
	if (!m)
		return;
	if (m->bn_synced)
		starnn_batchnorm_set_sync(NULL, NULL);
	starnn_params_destroy(m->ps); /* before the batch norms: it borrows their tensors */
	for (int i = 0; i < m->cfg.depth; i++) {
		struct level *L = &m->lv[i];
		block_free(&L->enc);
		block_free(&L->dec);
		bn_free(&L->n0);
		cat_free(&L->up, &L->skip);
		cat_free(&L->dup, &L->dskip);
		struct act *acts[] = {&L->pool, &L->dpool, &L->catb, &L->dcatb, &L->a0, &L->da0, &L->out, &L->dout};
		for (size_t k = 0; k < sizeof acts / sizeof *acts; k++)
			act_free(acts[k]);
	}
	block_free(&m->centre);
	act_free(&m->centre_out), act_free(&m->dcentre_out);
	act_free(&m->x), act_free(&m->y), act_free(&m->pred), act_free(&m->dpred), act_free(&m->loss);
	act_free(&m->xs), act_free(&m->ys), act_free(&m->loss_slot[0]), act_free(&m->loss_slot[1]);
	free(m->entries);
	free(m->refs);
	free(m);
}

int64_t unet_parameter_count(const unet *m)
{
	return starnn_params_numel(m->ps);
}

starnn_tensor *unet_input(unet *m) { return m->x.t; }
starnn_tensor *unet_target(unet *m) { return m->y.t; }
starnn_tensor *unet_prediction(unet *m) { return m->pred.t; }
const struct unet_config *unet_get_config(const unet *m) { return &m->cfg; }

void unet_wgrad_whole(const unet *m, int *whole, int *nconv)
{
	*whole = m->wgrad_whole, *nconv = m->nconv;
}

void unet_winograd(const unet *m, int *wino, int *npasses)
{
	*wino = m->wino, *npasses = m->npass3;
}

const struct unet_tensor_ref *unet_tensors(unet *m, int *n)
{
	/* The optimizer state of a parameter another rank updates comes and
	 * goes (--shard-optimizer: it exists around checkpoints only). */
	int ns = starnn_params_nslots(m->ps);
	for (int i = m->first_state; i < m->nentries; i++) {
		int k = i - m->first_state;
		m->refs[i].tensor = m->entries[i].t = starnn_params_at(m->ps, k / ns)->state[k % ns];
	}
	*n = m->nentries;
	return m->refs;
}

starnn_params *unet_params(unet *m)
{
	return m->ps;
}

int unet_state_count(const unet *m)
{
	return m->first_state;
}

starnn_tensor *unet_gradient(unet *m, int i)
{
	if (i < 0 || i >= m->nentries)
		return NULL;
	return m->entries[i].grad;
}

/* ------------------------------------------------------------ forward */

static int conv_fwd(unet *m, struct conv *c, struct act *in, struct act *out)
{
	for (int p = 0; p < m->cfg.micro; p++)
		STARNN_CHECK(
		        starnn_conv2d_fwd_mp(in->p[p], starnn_param_in(c->w, p), starnn_param_in(c->b, p), out->p[p]));
	return 0;
}

static int global_batch(const unet *m)
{
	return m->cfg.global_batch > 0 ? m->cfg.global_batch : m->cfg.batch;
}

static int bn_fwd(unet *m, struct bn *n, int training, struct act *in, struct act *out)
{
	return starnn_batchnorm_fwd_mp(&n->bn, training, m->cfg.micro, in->p, out->p);
}

static int block_fwd(unet *m, struct block *b, int training, struct act *in, struct act *out)
{
	STARNN_CHECK(conv_fwd(m, &b->c1, in, &b->z1));
	STARNN_CHECK(bn_fwd(m, &b->n1, training, &b->z1, &b->a1));
	STARNN_CHECK(conv_fwd(m, &b->c2, &b->a1, &b->z2));
	return bn_fwd(m, &b->n2, training, &b->z2, out);
}

/* The forward and the loss of every micro-batch into loss[p] (their sum
 * is the batch's mean squared error). */
static int forward(unet *m, int training)
{
	int M = m->cfg.micro, d = m->cfg.depth;
	/* the compute-dtype copies of the convolution weights, after the last update */
	STARNN_CHECK(starnn_params_convert(m->ps));
	struct act *in = &m->x;
	for (int i = 0; i < d; i++) {
		struct level *L = &m->lv[i];
		STARNN_CHECK(block_fwd(m, &L->enc, training, in, &L->skip));
		for (int p = 0; p < M; p++)
			STARNN_CHECK(starnn_maxpool_fwd_mp(L->skip.p[p], L->pool.p[p]));
		in = &L->pool;
	}
	STARNN_CHECK(block_fwd(m, &m->centre, training, in, &m->centre_out));
	struct act *below = &m->centre_out;
	for (int i = d - 1; i >= 0; i--) {
		struct level *L = &m->lv[i];
		for (int p = 0; p < M; p++)
			STARNN_CHECK(starnn_convt2d_fwd_mp(below->p[p], starnn_param_in(L->upc.w, p),
			                                   starnn_param_in(L->upc.b, p), L->up.p[p]));
		STARNN_CHECK(bn_fwd(m, &L->n0, training, &L->catb, &L->a0));
		STARNN_CHECK(block_fwd(m, &L->dec, training, &L->a0, &L->out));
		below = &L->out;
	}
	STARNN_CHECK(conv_fwd(m, &m->outc, below, &m->pred));
	float scale = (float)(1.0 / ((double)global_batch(m) * m->cfg.out_frames * m->cfg.size * m->cfg.size));
	for (int p = 0; p < M; p++)
		STARNN_CHECK(starnn_mse_fwd_mp(m->pred.p[p], m->y.p[p], m->loss.p[p], scale, 0.0f));
	return 0;
}

/* ------------------------------------------------------------ backward */

/* Weight gradients of micro-batch p into slice p (beta 0), or of the whole
 * batch into slice 0 (c->whole); din (may be NULL: not needed) = dL/din,
 * overwritten. The data gradient first: it is on the critical path. */
static int conv_bwd(unet *m, struct conv *c, struct act *in, struct act *dout, struct act *din)
{
	if (c->whole) { /* the data gradients per part, then the whole batch's weight gradient */
		if (din)
			for (int p = 0; p < m->cfg.micro; p++)
				STARNN_CHECK(
				        starnn_conv2d_bwd_data_mp(dout->p[p], starnn_param_in(c->w, p), 0.0f, din->p[p]));
		return starnn_conv2d_bwd_weight_mp(in->t, dout->t, 0.0f, c->w->grad[0], c->b->grad[0]);
	}
	for (int p = 0; p < m->cfg.micro; p++)
		STARNN_CHECK(starnn_conv2d_bwd_mp(in->p[p], dout->p[p], starnn_param_in(c->w, p), 0.0f, din ? din->p[p] : NULL,
		                                  0.0f, c->w->grad[p], c->b->grad[p]));
	return 0;
}

static int bn_bwd(unet *m, struct bn *n, struct act *x, struct act *y, struct act *dy, struct act *dx)
{
	return starnn_batchnorm_bwd_mp(&n->bn, m->cfg.micro, x->p, y->p, dy->p, dx->p, 0.0f, n->gamma->grad[0],
	                               n->beta->grad[0], 0.0f);
}

static int block_bwd(unet *m, struct block *b, struct act *in, struct act *out, struct act *dout, struct act *din)
{
	STARNN_CHECK(bn_bwd(m, &b->n2, &b->z2, out, dout, &b->dz2));
	STARNN_CHECK(conv_bwd(m, &b->c2, &b->a1, &b->dz2, &b->da1));
	STARNN_CHECK(bn_bwd(m, &b->n1, &b->z1, &b->a1, &b->da1, &b->dz1));
	return conv_bwd(m, &b->c1, in, &b->dz1, din);
}

/* state: the loss-scale state the loss gradient is multiplied by, or NULL. */
static int backward(unet *m, starnn_tensor *state)
{
	int M = m->cfg.micro, d = m->cfg.depth;
	float scale = (float)(1.0 / ((double)global_batch(m) * m->cfg.out_frames * m->cfg.size * m->cfg.size));
	for (int p = 0; p < M; p++)
		STARNN_CHECK(starnn_mse_bwd_mp(m->pred.p[p], m->y.p[p], m->dpred.p[p], scale, state));
	STARNN_CHECK(conv_bwd(m, &m->outc, &m->lv[0].out, &m->dpred, &m->lv[0].dout));
	for (int i = 0; i < d; i++) {
		struct level *L = &m->lv[i];
		struct act *below = i == d - 1 ? &m->centre_out : &m->lv[i + 1].out;
		struct act *dbelow = i == d - 1 ? &m->dcentre_out : &m->lv[i + 1].dout;
		STARNN_CHECK(block_bwd(m, &L->dec, &L->a0, &L->out, &L->dout, &L->da0));
		/* dcat: both halves written here (beta 0); the skip half gets the
		 * max-pool's gradient added later (beta 1). */
		STARNN_CHECK(bn_bwd(m, &L->n0, &L->catb, &L->a0, &L->da0, &L->dcatb));
		for (int p = 0; p < M; p++)
			STARNN_CHECK(starnn_convt2d_bwd_mp(below->p[p], L->dup.p[p], starnn_param_in(L->upc.w, p), 0.0f,
			                                   dbelow->p[p], 0.0f, L->upc.w->grad[p], L->upc.b->grad[p]));
	}
	struct act *din = d ? &m->lv[d - 1].dpool : NULL;
	STARNN_CHECK(block_bwd(m, &m->centre, &m->lv[d - 1].pool, &m->centre_out, &m->dcentre_out, din));
	for (int i = d - 1; i >= 0; i--) {
		struct level *L = &m->lv[i];
		for (int p = 0; p < M; p++)
			STARNN_CHECK(starnn_maxpool_bwd_mp(L->skip.p[p], L->dpool.p[p], 1.0f, L->dskip.p[p]));
		struct act *in = i ? &m->lv[i - 1].pool : &m->x;
		STARNN_CHECK(block_bwd(m, &L->enc, in, &L->skip, &L->dskip, i ? &m->lv[i - 1].dpool : NULL));
	}
	return 0;
}

static int check_trainable(const unet *m)
{
	int sc = m->cfg.size >> m->cfg.depth;
	if ((int64_t)m->cfg.batch * sc * sc < 2)
		return starnn_error(STARNN_EINVAL,
		                    "unet: training needs more than one value per channel in the centre's batch norm: "
		                    "batch %d of %dx%d images at depth %d gives %dx%d (use a larger batch or size)",
		                    m->cfg.batch, m->cfg.size, m->cfg.size, m->cfg.depth, sc, sc);
	return 0;
}

int unet_train_step(unet *m, int64_t step)
{
	if (step < 1)
		return starnn_error(STARNN_EINVAL, "unet_train_step: steps count from 1, got %lld", (long long)step);
	STARNN_CHECK(check_trainable(m));
	STARNN_CHECK(forward(m, 1));
	/* The step's loss into its slot, so that the next step may be
	 * submitted before this one's loss is read (unet_read_step_loss). */
	struct act *slot = &m->loss_slot[step & 1];
	for (int p = 0; p < m->cfg.micro; p++)
		STARNN_CHECK(starnn_copy(m->loss.p[p], starnn_replica_part(slot->t, m->cfg.micro, p)));
	/* every replica's losses on every replica */
	STARNN_CHECK(starnn_replica_gather(slot->t, m->cfg.micro));
	m->slot_step[step & 1] = step;
	STARNN_CHECK(backward(m, starnn_params_loss_scale(m->ps)));
	STARNN_CHECK(starnn_params_reduce(m->ps));
	return starnn_params_update(m->ps, step);
}

int unet_eval_step(unet *m)
{
	return forward(m, 0);
}

int unet_loss_step(unet *m, int training)
{
	if (training)
		STARNN_CHECK(check_trainable(m));
	return forward(m, training);
}

int unet_gradient_step(unet *m)
{
	STARNN_CHECK(check_trainable(m));
	STARNN_CHECK(forward(m, 1));
	STARNN_CHECK(backward(m, NULL)); /* unscaled: dLoss/dparameter */
	return starnn_params_reduce(m->ps);
}

/* The sum of the micro-batch losses in t ([micro, 1], or [ranks x micro,
 * 1]: every rank's), checked. */
static int read_loss(unet *m, starnn_tensor *t, double *loss)
{
	(void)m;
	int n = (int)t->shape[0];
	float parts[n];
	STARNN_CHECK(starnn_tensor_read(t, parts));
	double s = 0;
	for (int p = 0; p < n; p++)
		s += parts[p];
	*loss = s;
	if (!isfinite(s))
		return starnn_error(STARNN_ENUM, "unet: the loss is %g (diverged: lower --lr, or check the data)", s);
	return 0;
}

int unet_read_loss(unet *m, double *loss)
{
	return read_loss(m, m->loss.t, loss);
}

int unet_read_step_loss(unet *m, int64_t step, double *loss)
{
	if (step < 1 || m->slot_step[step & 1] != step)
		return starnn_error(STARNN_EINVAL,
		                    "unet_read_step_loss: the loss of step %lld is not kept (the last two training "
		                    "steps submitted are)",
		                    (long long)step);
	/* Waits only for that step's loss copy: a later step may be running. */
	return read_loss(m, m->loss_slot[step & 1].t, loss);
}

int unet_stage_batch(unet *m, const float *x, const float *y)
{
	if (!m->xs.t) {
		const struct unet_config *c = &m->cfg;
		STARNN_CHECK(act_make(m, &m->xs, "", "x_staging", c->in_frames, c->size, 0));
		/* the target is fp32 whatever the compute dtype (as y) */
		STARNN_CHECK(starnn_tensor_new(&m->ys.t, "y_staging", STARNN_FP32, 4, (int64_t)c->batch,
		                               (int64_t)c->out_frames, (int64_t)c->size, (int64_t)c->size));
		STARNN_CHECK(starnn_tensor_split(m->ys.t, 0, c->micro, NULL, &m->ys.p));
	}
	/* These writes wait for the copies out of the staging tensors of the
	 * previous batch only; the copies below wait (in StarPU, not here) for
	 * the previous step's last use of x and y. */
	STARNN_CHECK(starnn_tensor_write_f32(m->xs.t, x));
	STARNN_CHECK(starnn_tensor_write_f32(m->ys.t, y));
	for (int p = 0; p < m->cfg.micro; p++) {
		STARNN_CHECK(starnn_copy(m->xs.p[p], m->x.p[p]));
		STARNN_CHECK(starnn_copy(m->ys.p[p], m->y.p[p]));
	}
	return 0;
}

int unet_loss_scale_state(unet *m, float *scale, int64_t *skipped, int64_t *applied)
{
	struct starnn_amp_state st;
	STARNN_CHECK(starnn_params_get_amp_state(m->ps, &st));
	if (scale)
		*scale = st.scale;
	if (skipped)
		*skipped = st.skipped_steps;
	if (applied)
		*applied = st.applied_steps;
	return 0;
}
