/* models/unet: train, evaluate and forecast SEVIR nowcasts with the UNet.
 *
 *   models/unet train   [options]   train (synthetic data or a SEVIR file)
 *   models/unet eval    [options]   metrics of a checkpoint, persistence beside
 *   models/unet predict [options]   forecasts to HDF5 (+ PNG pictures)
 *   models/unet info    [options]   the layers and the parameter count
 *
 * Each training step is one asynchronous task graph (models/unet_model.c);
 * the data loader thread (models/sevir/sevir.h) prepares the next batches
 * meanwhile. The trainer (runtime/train/trainer.h) runs the steps,
 * pipelined, with the options every model shares; this file gives it the
 * UNet: its data, its checkpoint schema (architecture and data attributes),
 * its evaluation and its lines. */
#include <config.h>

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/conv2d.h"
#include "codelets/conv2d_routes.h"
#include "codelets/convt2d.h"
#include "models/sevir/metrics.h"
#include "models/sevir/output.h"
#include "models/sevir/sevir.h"
#include "models/unet_model.h"
#include "models/unet_options.h"
#include "runtime/starnn.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/replica.h"
#include "runtime/train/trainer.h"

#define CKPT_FORMAT "starnn-unet"
/* 2: adds the mixed-precision attributes (runtime/train/checkpoint.h); a
 * version-1 file reads as fp32 without loss scaling.
 * 3: adds the model's convention (`convention`, with `concat` and `bn_eps`
 * for readers of other tools); a version-1 or 2 file is a starnn-v1 model.
 * A reader of version 2 refuses version 3: it would read a keras model's
 * weights as starnn-v1. */
#define CKPT_VERSION 3

#define fail(...) starnn_fail("unet", __VA_ARGS__)

/* ------------------------------------------------------------ checkpoint schema */

static const char *resize_name(enum sevir_resize r)
{
	return r == SEVIR_DOWNSAMPLE ? "downsample" : "crop";
}

/* The model's convention (models/unet_convention.h): `convention` of a
 * version-3 file, whose `concat` and `bn_eps` must agree with it; starnn-v1
 * for an older file. */
static int checkpoint_convention(ckpt_file *f, const char *file, int64_t version, int *convention)
{
	*convention = UNET_STARNN_V1;
	if (version < 3)
		return 0;
	char name[64], concat[64];
	double eps;
	STARNN_CHECK(ckpt_get_string(f, "convention", name, sizeof name));
	if ((*convention = unet_convention_parse(name)) < 0)
		return starnn_error(STARNN_EINVAL, "%s: convention '%s' is neither keras nor starnn-v1", file, name);
	STARNN_CHECK(ckpt_get_string(f, "concat", concat, sizeof concat));
	STARNN_CHECK(ckpt_get_double(f, "bn_eps", &eps));
	if (strcmp(concat, unet_convention_concat(*convention)) != 0 ||
	    eps != unet_convention_bn_eps(*convention))
		return starnn_error(STARNN_EINVAL, "%s: concat '%s' and bn_eps %g are not those of convention %s ('%s', %g)",
		                    file, concat, eps, name, unet_convention_concat(*convention),
		                    unet_convention_bn_eps(*convention));
	return 0;
}

/* Reads the checkpoint's architecture into o: an option given on the command
 * line must agree (else the message names the attribute). */
static int checkpoint_architecture(ckpt_file *f, const char *file, struct options *o)
{
	char fmt[64];
	if (ckpt_get_string(f, "format", fmt, sizeof fmt) < 0 || strcmp(fmt, CKPT_FORMAT) != 0)
		return starnn_error(STARNN_EINVAL, "%s is not a models/unet checkpoint (no format attribute '%s')", file,
		                    CKPT_FORMAT);
	int64_t version;
	STARNN_CHECK(ckpt_get_int(f, "format_version", &version));
	if (version < 1 || version > CKPT_VERSION)
		return starnn_error(STARNN_EINVAL, "%s has format_version %lld: this models/unet reads versions 1 to %d", file,
		                    (long long)version, CKPT_VERSION);
	struct {
		const char *attr, *option;
		int *value;
		int id;
	} arch[] = {
		{"depth", "--depth", &o->depth, O_DEPTH},
		{"filters", "--filters", &o->filters, O_FILTERS},
		{"in_frames", "--in-frames", &o->in_frames, O_IN_FRAMES},
		{"out_frames", "--out-frames", &o->out_frames, O_OUT_FRAMES},
	};
	for (size_t i = 0; i < sizeof arch / sizeof *arch; i++) {
		int64_t v;
		STARNN_CHECK(ckpt_get_int(f, arch[i].attr, &v));
		if (o->given[arch[i].id] && v != *arch[i].value)
			return starnn_error(STARNN_EINVAL,
			                    "%s holds another architecture: its %s is %lld, the options ask for %s %d", file,
			                    arch[i].attr, (long long)v, arch[i].option, *arch[i].value);
		*arch[i].value = (int)v;
	}
	int convention;
	STARNN_CHECK(checkpoint_convention(f, file, version, &convention));
	if (o->given[O_CONVENTION] && convention != o->convention)
		return starnn_error(STARNN_EINVAL, "%s holds a model of convention %s, --convention asks for %s", file,
		                    unet_convention_name(convention), unet_convention_name(o->convention));
	o->convention = convention;
	return 0;
}

/* For --resume: the UNet's own settings not given on the command line come
 * from the checkpoint (the trainer reads the common ones). */
static int checkpoint_settings(ckpt_file *f, const char *file, struct options *o)
{
	struct {
		const char *attr;
		int id;
		int *value;
	} settings[] = {
		{"size", O_SIZE, &o->size},       {"shuffle", O_SHUFFLE, &o->shuffle},
		{"synthetic_size", O_SYN_SIZE, &o->synthetic_size}, {"samples", O_SAMPLES, &o->samples},
		{"val_samples", O_VAL_SAMPLES, &o->val_samples},
	};
	for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
		STARNN_CHECK(starnn_ckpt_setting_int(&o->train, f, file, settings[i].attr, o->given[settings[i].id],
		                                     settings[i].value));
	char s[64];
	STARNN_CHECK(ckpt_get_string(f, "resize", s, sizeof s));
	if (!o->given[O_RESIZE])
		o->resize = strcmp(s, "downsample") == 0 ? SEVIR_DOWNSAMPLE : SEVIR_CROP;
	if (!o->given[O_DATA]) {
		STARNN_CHECK(ckpt_get_string(f, "data", o->data_buf, sizeof o->data_buf));
		o->data = o->data_buf;
	}
	if (!o->given[O_VAL_DATA]) {
		STARNN_CHECK(ckpt_get_string(f, "val_data", o->val_data_buf, sizeof o->val_data_buf));
		o->val_data = o->val_data_buf[0] ? o->val_data_buf : NULL;
	}
	if (!o->given[O_CATALOG]) {
		STARNN_CHECK(ckpt_get_string(f, "catalog", o->catalog_buf, sizeof o->catalog_buf));
		o->catalog = o->catalog_buf[0] ? o->catalog_buf : NULL;
	}
	return 0;
}

/* The UNet's root attributes of a checkpoint (the trainer adds the run's). */
static int checkpoint_attrs(const struct options *o, const struct unet_config *c, struct ckpt_attr *a, int max)
{
	const struct ckpt_attr attrs[] = {
		{.name = "format", .type = CKPT_STRING, .s = CKPT_FORMAT},
		{.name = "format_version", .type = CKPT_INT, .i = CKPT_VERSION},
		{.name = "depth", .type = CKPT_INT, .i = c->depth},
		{.name = "filters", .type = CKPT_INT, .i = c->filters},
		{.name = "in_frames", .type = CKPT_INT, .i = c->in_frames},
		{.name = "out_frames", .type = CKPT_INT, .i = c->out_frames},
		{.name = "convention", .type = CKPT_STRING, .s = unet_convention_name(c->convention)},
		{.name = "concat", .type = CKPT_STRING, .s = unet_convention_concat(c->convention)},
		{.name = "bn_eps", .type = CKPT_DOUBLE, .d = unet_convention_bn_eps(c->convention)},
		{.name = "size", .type = CKPT_INT, .i = c->size},
		{.name = "shuffle", .type = CKPT_INT, .i = o->shuffle},
		{.name = "data", .type = CKPT_STRING, .s = o->data},
		{.name = "val_data", .type = CKPT_STRING, .s = o->val_data ? o->val_data : ""},
		{.name = "catalog", .type = CKPT_STRING, .s = o->catalog ? o->catalog : ""},
		{.name = "resize", .type = CKPT_STRING, .s = resize_name(o->resize)},
		{.name = "synthetic_size", .type = CKPT_INT, .i = o->synthetic_size},
		{.name = "samples", .type = CKPT_INT, .i = o->samples},
		{.name = "val_samples", .type = CKPT_INT, .i = o->val_samples},
	};
	int n = (int)(sizeof attrs / sizeof *attrs);
	if (n > max)
		return starnn_error(STARNN_EINVAL, "checkpoint: too many attributes for the table");
	memcpy(a, attrs, sizeof attrs);
	return n;
}

/* Loads the model's weights and batch-norm statistics from f (eval,
 * predict; the trainer loads them for --resume and --init). */
static int load_weights(ckpt_file *f, unet *m)
{
	int n;
	const struct unet_tensor_ref *refs = unet_tensors(m, &n);
	for (int i = 0; i < unet_state_count(m); i++)
		STARNN_CHECK(ckpt_read_tensor(f, refs[i].path, refs[i].tensor));
	return 0;
}

/* ------------------------------------------------------------ data */

static int is_synthetic(const char *path)
{
	return !path || strcmp(path, "synthetic") == 0;
}

static int open_data(sevir_data **d, const struct options *o, const char *path, enum sevir_split split, int samples)
{
	struct sevir_options so;
	sevir_options_init(&so);
	so.path = is_synthetic(path) ? NULL : path;
	so.catalog = o->catalog;
	so.split = split;
	so.size = o->size;
	so.resize = o->resize;
	so.in_frames = o->in_frames;
	so.out_frames = o->out_frames;
	so.seed = o->train.seed;
	if (is_synthetic(path)) {
		so.synthetic_samples = samples;
		so.synthetic_size = o->synthetic_size ? o->synthetic_size : o->size ? o->size : so.synthetic_size;
	}
	return sevir_open(d, &so);
}

static int check_size(const struct options *o)
{
	int unit = 1 << o->depth;
	if (o->size % unit != 0) {
		fail("the image size %d is not a multiple of 2^depth = %d: choose --size (e.g. %d)", o->size, unit,
		     o->size / unit * unit > 0 ? o->size / unit * unit : unit);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ evaluation */

struct batch_buf {
	int batch;
	size_t nx, ny;
	float *x, *y, *pred;
	int *idx;
};

static int batch_buf_init(struct batch_buf *b, const struct unet_config *c)
{
	size_t hw = (size_t)c->size * (size_t)c->size;
	b->batch = c->batch;
	b->nx = (size_t)c->batch * (size_t)c->in_frames * hw;
	b->ny = (size_t)c->batch * (size_t)c->out_frames * hw;
	b->x = malloc(sizeof(float) * b->nx);
	b->y = malloc(sizeof(float) * b->ny);
	b->pred = malloc(sizeof(float) * b->ny);
	b->idx = malloc(sizeof(int) * (size_t)c->batch);
	if (!b->x || !b->y || !b->pred || !b->idx)
		return starnn_error(STARNN_ENOMEM, "out of memory for a batch of %d samples", c->batch);
	return 0;
}

static void batch_buf_free(struct batch_buf *b)
{
	free(b->x), free(b->y), free(b->pred), free(b->idx);
}

/* Forecasts of samples [first, first + n) of d (n <= batch; the batch is
 * padded with the last sample) into b->pred. */
static int forecast_batch(unet *m, sevir_data *d, struct batch_buf *b, int first, int n)
{
	for (int j = 0; j < b->batch; j++)
		b->idx[j] = first + (j < n ? j : n - 1);
	STARNN_CHECK(sevir_read(d, b->idx, b->batch, 0, b->x, b->y));
	STARNN_CHECK(starnn_tensor_write_f32(unet_input(m), b->x));
	STARNN_CHECK(starnn_tensor_write_f32(unet_target(m), b->y));
	STARNN_CHECK(unet_eval_step(m));
	STARNN_CHECK(starnn_tensor_read_f32(unet_prediction(m), b->pred));
	size_t per = b->ny / (size_t)b->batch;
	for (size_t i = 0; i < (size_t)n * per; i++)
		if (!isfinite(b->pred[i]))
			return starnn_error(STARNN_ENUM, "the forecast of sample %d is not finite (diverged model?)",
			                    first + (int)(i / per));
	return 0;
}

static int evaluate(unet *m, sevir_data *d, struct batch_buf *b, struct nowcast_metrics *met)
{
	const struct unet_config *c = unet_get_config(m);
	metrics_init(met, c->out_frames);
	/* With several replicas each scores its share of the samples, and the
	 * sums are combined (the same counts; the error sums in another order
	 * than one replica adds them, so they may differ in the last digits). */
	int64_t begin, count;
	starnn_replica_share(sevir_count(d), &begin, &count);
	int end = (int)(begin + count);
	for (int first = (int)begin; first < end && !starnn_interrupted(); first += c->batch) {
		int cnt = end - first < c->batch ? end - first : c->batch;
		STARNN_CHECK(forecast_batch(m, d, b, first, cnt));
		metrics_add(met, b->x, c->in_frames, b->y, b->pred, cnt, (int64_t)c->size * c->size);
	}
	if (starnn_replicas() > 1) {
		double sums[METRICS_NSUMS];
		metrics_pack(met, sums);
		STARNN_CHECK(starnn_replica_sum_doubles(sums, METRICS_NSUMS));
		metrics_unpack(met, sums);
	}
	return 0;
}

/* ------------------------------------------------------------ the model for the trainer */

struct run {
	struct options *o;
	sevir_data *train, *val;
	sevir_loader *loader;
	unet *m;
	struct batch_buf buf;
	FILE *log;                /* eval's --log-json */
	int first;                /* this replica's first sample of a batch */
	struct ckpt_entry *state; /* the checkpoint's model tensors */
	int nstate;
};

static void run_free(struct run *r)
{
	if (r->loader)
		sevir_loader_stop(r->loader);
	unet_destroy(r->m);
	sevir_close(r->train);
	sevir_close(r->val);
	batch_buf_free(&r->buf);
	free(r->state);
	if (r->log)
		fclose(r->log);
}

static int read_checkpoint(void *self, ckpt_file *f, const char *file, int resume)
{
	struct run *r = self;
	STARNN_CHECK(checkpoint_architecture(f, file, r->o));
	return resume ? checkpoint_settings(f, file, r->o) : 0;
}

static int train_data(void *self, int64_t *samples, const char **what)
{
	struct run *r = self;
	struct options *o = r->o;
	STARNN_CHECK(open_data(&r->train, o, o->data, SEVIR_TRAIN, o->samples));
	if (!o->size)
		o->size = sevir_size(r->train);
	if (check_size(o) < 0)
		return STARNN_TRAIN_USAGE;
	*samples = sevir_count(r->train);
	*what = sevir_describe(r->train);
	return 0;
}

static int create(void *self, const struct starnn_model_config *mc, starnn_params **ps)
{
	struct run *r = self;
	const struct options *o = r->o;
	const struct starnn_optim *p = &mc->params.optim;
	struct unet_config c = {o->depth,     o->filters, o->in_frames,        o->out_frames,
	                        o->size,      mc->batch,  mc->micro,           (int)mc->params.compute,
	                        (int)mc->params.loss_scaling, mc->params.static_scale, mc->global_batch, o->bn_local,
	                        o->convention, &mc->params};
	struct unet_optim opt = {.kind = p->kind == STARNN_OPTIM_SGD ? UNET_SGD : UNET_ADAM, .lr = p->lr,
	                         .warmup = p->warmup, .momentum = p->momentum, .beta1 = p->beta1, .beta2 = p->beta2,
	                         .eps = p->eps, .weight_decay = p->weight_decay};
	r->first = mc->first;
	STARNN_CHECK(unet_create(&r->m, &c, &opt, mc->seed));
	*ps = unet_params(r->m);
	int n;
	const struct unet_tensor_ref *refs = unet_tensors(r->m, &n);
	r->nstate = unet_state_count(r->m);
	if (!(r->state = malloc(sizeof *r->state * (size_t)(r->nstate > 0 ? r->nstate : 1))))
		return starnn_error(STARNN_ENOMEM, "out of memory");
	for (int i = 0; i < r->nstate; i++)
		r->state[i] = (struct ckpt_entry){refs[i].path, refs[i].tensor};
	return batch_buf_init(&r->buf, unet_get_config(r->m));
}

static int state(void *self, const struct ckpt_entry **entries, int *n)
{
	struct run *r = self;
	*entries = r->state;
	*n = r->nstate;
	return 0;
}

/* Evaluation data, when there is training to evaluate. */
static int open_eval(void *self)
{
	struct run *r = self;
	const struct options *o = r->o;
	const char *vp = o->val_data ? o->val_data : o->data;
	STARNN_CHECK(open_data(&r->val, o, vp, SEVIR_TEST, o->val_samples));
	if (sevir_count(r->val) > 0)
		return 1;
	if (!o->train.quiet)
		fprintf(stderr, "unet: note: %s has no samples: no evaluation\n", sevir_describe(r->val));
	sevir_close(r->val);
	r->val = NULL;
	return 0;
}

static void describe(void *self, const starnn_trainer *tr, FILE *out)
{
	struct run *r = self;
	const struct options *o = r->o;
	const struct starnn_train_info *in = starnn_trainer_info(tr);
	const struct unet_config *c = unet_get_config(r->m);
	const int compute = o->train.compute;
	fprintf(out, "unet: depth %d, filters %d, %d -> %d frames, %dx%d, %lld parameters\n", c->depth, c->filters,
	        c->in_frames, c->out_frames, c->size, c->size, (long long)unet_parameter_count(r->m));
	fprintf(out, "convention: %s (decoder concatenation [%s], BatchNorm eps %g)\n",
	        unet_convention_name(c->convention), c->convention == UNET_STARNN_V1 ? "up, skip" : "skip, up",
	        unet_convention_bn_eps(c->convention));
	fprintf(out, "data: %s\n", sevir_describe(r->train));
	if (r->val)
		fprintf(out, "evaluation: %s\n", sevir_describe(r->val));
	if (in->replicas > 1)
		fprintf(out, "ranks: %d, %d samples of each batch on rank 0, BatchNorm statistics %s\n", in->replicas,
		        c->batch, c->bn_local ? "per rank (--bn-sync local)" : "over all ranks");
	starnn_trainer_describe_shard(tr, out);
	fprintf(out, "training: batch %d in %d micro-batches%s, %s lr %g%s, %lld steps (%lld per epoch)%s, %s\n",
	        o->train.batch, c->micro, in->replicas > 1 ? " per rank" : "", starnn_optimizer_name(o->train.optimizer),
	        (double)o->train.lr, o->train.warmup ? " with warm-up" : "", (long long)in->total,
	        (long long)in->steps_per_epoch,
	        o->train.resume ? ", resumed" : o->train.init ? ", from --init weights" : "", starnn_runtime_summary());
	if (compute == STARNN_FP32)
		fprintf(out, "precision: fp32%s\n", o->train.loss_scale ? " with loss scaling" : "");
	else
		fprintf(out, "precision: amp-%s (fp32 master weights), loss scale %s\n", starnn_dtype_name(compute),
		        o->train.loss_scale == 1 ? "dynamic" : o->train.loss_scale == 2 ? "static" : "none");
	const char *route = starnn_conv2d_cpu_route(compute);
	if (route)
		fprintf(out, "convolutions: %s\n", route);
	const char *up = starnn_convt2d_cpu_route(compute, starnn_conv2d_act_cblock(o->filters, compute, c->micro));
	if (up)
		fprintf(out, "transposed convolutions: %s\n", up);
	int whole, nconv;
	unet_wgrad_whole(r->m, &whole, &nconv);
	const char *we = starnn_conv2d_wgrad_whole_given();
	if (c->micro > 1)
		fprintf(out, "weight gradients: %d of %d convolutions on the whole batch (%s%s), the others per micro-batch\n",
		        whole, nconv, we ? "STARNN_CONV2D_WGRAD_WHOLE=" : "the wide ones", we ? we : "");
	int wino, npass3;
	unet_winograd(r->m, &wino, &npass3);
	if (compute == STARNN_FP32 && starnn_ncpu_workers() > 0 && starnn_conv2d_cpu_backend() == STARNN_CONV2D_DNNL)
		fprintf(out,
		        "3x3 convolutions: %d of %d fp32 passes on oneDNN's Winograd kernel, the others direct "
		        "(STARNN_CONV2D_ALGO=%s)\n",
		        wino, npass3, starnn_conv2d_algo_given() ? starnn_conv2d_algo_given() : "auto");
	char layout[320];
	if (starnn_ncpu_workers() > 0)
		fprintf(out, "activations: %s\n", starnn_conv2d_layout_note(compute, c->micro, layout, sizeof layout));
}

static int start(void *self, int64_t step)
{
	struct run *r = self;
	const struct options *o = r->o;
	return sevir_loader_start_part(&r->loader, r->train, o->train.batch, r->first, unet_get_config(r->m)->batch,
	                               o->shuffle, o->train.seed, 3, step);
}

/* This replica's share of the batch into the model's staging tensors. */
static int stage(void *self, int64_t step, int64_t *epoch)
{
	struct run *r = self;
	const float *x, *y;
	int64_t index;
	(void)step;
	STARNN_CHECK(sevir_loader_next(r->loader, &x, &y, epoch, &index));
	return unet_stage_batch(r->m, x, y);
}

static int submit(void *self, int64_t step)
{
	return unet_train_step(((struct run *)self)->m, step);
}

static int step_loss(void *self, int64_t step, double *loss)
{
	return unet_read_step_loss(((struct run *)self)->m, step, loss);
}

static void log_eval(FILE *log, int64_t step, int64_t epoch, const struct nowcast_metrics *met)
{
	if (!log)
		return;
	fprintf(log, "{\"step\":%lld,\"epoch\":%lld,\"eval\":", (long long)step, (long long)epoch + 1);
	metrics_json(met, log);
	fprintf(log, "}\n");
	fflush(log);
}

static int eval_during_training(void *self, starnn_trainer *tr, int64_t step, int64_t epoch)
{
	struct run *r = self;
	struct nowcast_metrics met;
	double t0 = starnn_now();
	STARNN_CHECK(evaluate(r->m, r->val, &r->buf, &met));
	if (starnn_interrupted())
		return 0;
	starnn_trainer_end_line(tr);
	if (!r->o->train.quiet || step > 0)
		printf("eval at step %lld: MSE %.5f (persistence %.5f) normalised, MAE %.3f (persistence %.3f), "
		       "mean CSI %.4f (persistence %.4f) [%d samples, %.1f s]\n",
		       (long long)step, scores_mse_norm(&met.model, -1), scores_mse_norm(&met.persistence, -1),
		       scores_mae(&met.model, -1), scores_mae(&met.persistence, -1), scores_mean_csi(&met.model),
		       scores_mean_csi(&met.persistence), sevir_count(r->val), starnn_now() - t0);
	fflush(stdout);
	log_eval(starnn_trainer_log(tr), step, epoch, &met);
	return 0;
}

static int finish(void *self, starnn_trainer *tr)
{
	struct run *r = self;
	const struct options *o = r->o;
	const struct starnn_train_info *in = starnn_trainer_info(tr);
	int64_t steps = in->step - in->first_step;
	if (steps <= 0)
		return 0;
	if (!o->train.quiet) {
		double el = starnn_trainer_elapsed(tr);
		printf("trained %lld steps in %.1f s (%.2f samples/s); last loss %.6f\n", (long long)steps, el,
		       (double)steps * o->train.batch / el, in->loss);
	}
	if (o->train.loss_scale) {
		float scale;
		int64_t skipped, applied;
		STARNN_CHECK(unet_loss_scale_state(r->m, &scale, &skipped, &applied));
		printf("loss scale: %g, %lld steps skipped (Inf/NaN gradients), %lld applied\n", (double)scale,
		       (long long)skipped, (long long)applied);
	}
	return 0;
}

static int attrs(void *self, struct ckpt_attr *a, int max)
{
	struct run *r = self;
	return checkpoint_attrs(r->o, unet_get_config(r->m), a, max);
}

static const struct starnn_model_ops unet_ops = {
	.read_checkpoint = read_checkpoint,
	.open_data = train_data,
	.create = create,
	.state = state,
	.open_eval = open_eval,
	.describe = describe,
	.start = start,
	.stage = stage,
	.submit = submit,
	.loss = step_loss,
	.evaluate = eval_during_training,
	.finish = finish,
	.checkpoint_attrs = attrs,
};

/* ------------------------------------------------------------ commands */

static int cmd_info(struct options *o)
{
	if (o->train.checkpoint) {
		ckpt_file *f;
		STARNN_CHECK(ckpt_open(&f, o->train.checkpoint));
		int rc = checkpoint_architecture(f, o->train.checkpoint, o);
		int64_t v;
		if (rc == 0 && !o->given[O_SIZE] && ckpt_get_int(f, "size", &v) == 0)
			o->size = (int)v;
		ckpt_close(f);
		STARNN_CHECK(rc);
	}
	struct unet_config c = {o->depth, o->filters, o->in_frames, o->out_frames,
	                        o->size ? o->size : SEVIR_NATIVE_SIZE, o->train.batch, 1, 0, 0, 0, 0, 0, o->convention,
	                        NULL};
	if (c.size % (1 << c.depth) != 0) {
		fail("the image size %d is not a multiple of 2^depth = %d (see --size)", c.size, 1 << c.depth);
		return STARNN_TRAIN_USAGE;
	}
	return unet_print_config(&c, stdout);
}

static int cmd_train(struct options *o)
{
	struct run r = {.o = o};
	int rc = starnn_trainer_run(&unet_ops, &r, &o->train);
	run_free(&r);
	return rc;
}

/* eval and predict: the model of --checkpoint on the TEST split of --data. */
static int open_for_inference(struct run *r, ckpt_file **ck)
{
	struct options *o = r->o;
	STARNN_CHECK(ckpt_open(ck, o->train.checkpoint));
	STARNN_CHECK(checkpoint_architecture(*ck, o->train.checkpoint, o));
	int64_t v;
	if (!o->given[O_SIZE]) {
		STARNN_CHECK(ckpt_get_int(*ck, "size", &v));
		o->size = (int)v;
	}
	if (!unet_given(o, STARNN_TOPT_SEED) && ckpt_get_int(*ck, "seed", &v) == 0)
		o->train.seed = (uint64_t)v;
	struct ckpt_amp amp;
	STARNN_CHECK(ckpt_get_amp(*ck, &amp));
	if (!unet_given(o, STARNN_TOPT_PRECISION))
		o->train.compute = amp.compute;
	STARNN_CHECK(open_data(&r->val, o, o->data, SEVIR_TEST, o->given[O_SAMPLES] ? o->samples : o->val_samples));
	if (sevir_count(r->val) == 0)
		return starnn_error(STARNN_EINVAL, "%s: no samples to evaluate", sevir_describe(r->val));
	if (check_size(o) < 0)
		return STARNN_TRAIN_USAGE;
	if (!unet_given(o, STARNN_TOPT_BATCH))
		o->train.batch = sevir_count(r->val) < 8 ? sevir_count(r->val) : 8;
	if (!o->train.micro)
		o->train.micro = starnn_default_micro(o->train.batch);
	if (o->train.micro > o->train.batch) {
		fail("--micro-batches (%d) cannot exceed the batch (%d)", o->train.micro, o->train.batch);
		return STARNN_TRAIN_USAGE;
	}
	struct unet_config c = {o->depth,       o->filters,       o->in_frames, o->out_frames, o->size,
	                        o->train.batch, o->train.micro, o->train.compute, 0, 0, o->train.batch, o->bn_local,
	                        o->convention, NULL};
	struct unet_optim opt;
	unet_optim_defaults(&opt);
	STARNN_CHECK(unet_create(&r->m, &c, &opt, o->train.seed));
	STARNN_CHECK(load_weights(*ck, r->m));
	STARNN_CHECK(batch_buf_init(&r->buf, &c));
	ckpt_close(*ck);
	*ck = NULL;
	return 0;
}

/* The energy meter of eval (runtime/train/energy.h), with the options' power model. */
static int energy_start(const struct options *o, starnn_energy_meter **m)
{
	struct starnn_energy_opts eo;
	starnn_energy_opts_init(&eo);
	eo.cpu_watts = o->train.cpu_watts, eo.gpu_watts = o->train.gpu_watts, eo.idle_watts = o->train.idle_watts;
	return starnn_energy_start(m, &eo);
}

static int cmd_eval(struct options *o)
{
	struct run r = {.o = o};
	ckpt_file *ck = NULL;
	struct nowcast_metrics met;
	starnn_energy_meter *meter = NULL;
	struct starnn_energy_reading energy;
	int rc = open_for_inference(&r, &ck);
	if (rc == 0 && o->train.log_json && !(r.log = fopen(o->train.log_json, "w")))
		rc = starnn_error(STARNN_EIO, "cannot write the log %s: %s", o->train.log_json, strerror(errno));
	if (rc == 0 && !o->train.quiet)
		printf("evaluating %s on %s, precision %s\n", o->train.checkpoint, sevir_describe(r.val),
		       ckpt_precision_name((starnn_dtype)o->train.compute));
	if (rc == 0)
		rc = energy_start(o, &meter);
	if (rc == 0)
		rc = evaluate(r.m, r.val, &r.buf, &met);
	if (rc == 0)
		rc = starnn_energy_read_all(meter, &energy);
	if (rc == 0 && starnn_interrupted())
		rc = STARNN_TRAIN_INTERRUPTED;
	if (rc == 0) {
		metrics_print(&met, stdout);
		if (!o->train.quiet)
			starnn_energy_print(stdout, &energy, 0, sevir_count(r.val));
		if (r.log) {
			metrics_json(&met, r.log);
			fputc('\n', r.log);
			rc = starnn_energy_summary_json(r.log, 0, 0, sevir_count(r.val), &energy);
		}
	}
	starnn_energy_stop(meter);
	if (ck)
		ckpt_close(ck);
	int rc2 = starnn_wait();
	run_free(&r);
	return rc ? rc : rc2;
}

static int cmd_predict(struct options *o)
{
	struct run r = {.o = o};
	ckpt_file *ck = NULL;
	forecast_file *ff = NULL;
	int rc = open_for_inference(&r, &ck);
	const struct unet_config *c = r.m ? unet_get_config(r.m) : NULL;
	int n = rc == 0 ? sevir_count(r.val) : 0;
	if (rc == 0 && o->output)
		rc = forecast_create(&ff, o->output, n, c->out_frames, c->size, c->size);
	if (rc == 0 && !o->train.quiet)
		printf("forecasting %d samples of %s with %s, precision %s\n", n, sevir_describe(r.val), o->train.checkpoint,
		       ckpt_precision_name((starnn_dtype)o->train.compute));
	size_t hw = c ? (size_t)c->size * c->size : 0;
	for (int first = 0; rc == 0 && first < n; first += c->batch) {
		if (starnn_interrupted()) {
			rc = STARNN_TRAIN_INTERRUPTED;
			break;
		}
		int cnt = n - first < c->batch ? n - first : c->batch;
		rc = forecast_batch(r.m, r.val, &r.buf, first, cnt);
		if (rc == 0 && ff)
			rc = forecast_append(ff, r.buf.pred, cnt);
		for (int j = 0; rc == 0 && o->png && j < cnt && first + j < o->png_samples; j++) {
			const float *x = r.buf.x + (size_t)j * c->in_frames * hw;
			rc = forecast_png(o->png, first + j, x, c->in_frames, r.buf.y + (size_t)j * c->out_frames * hw,
			                  r.buf.pred + (size_t)j * c->out_frames * hw, c->out_frames, c->size, c->size);
		}
	}
	if (ff) {
		if (rc == 0) {
			rc = forecast_commit(ff);
			if (rc == 0 && !o->train.quiet)
				printf("forecasts: %s (%d x %d x %d x %d, raw VIL)\n", o->output, n, c->size, c->size,
				       c->out_frames);
		} else {
			forecast_abort(ff);
		}
	}
	if (rc == 0 && o->png && !o->train.quiet)
		printf("pictures: %s/sample<i>.png for %d samples\n", o->png,
		       o->png_samples < n ? o->png_samples : n);
	if (ck)
		ckpt_close(ck);
	int rc2 = starnn_wait();
	run_free(&r);
	return rc ? rc : rc2;
}

int main(int argc, char **argv)
{
	starnn_blas_autoselect(argv); /* may restart the program with fast BLAS kernels */
	/* Every HDF5 file is closed here before exit; HDF5's own clean-up at
	 * exit would only crash on a file left half-closed by a failed write
	 * (see ckpt_h5_discard). Before any other HDF5 call. */
	H5dont_atexit();
	struct options *o = malloc(sizeof *o);
	if (!o) {
		fail("out of memory");
		return 1;
	}
	int prc = parse_options(argc, argv, o);
	if (prc != 0) { /* --help (exit 0) or bad usage (2) */
		free(o);
		return prc == PARSE_HELP ? 0 : 2;
	}
	int rc;
	if (o->cmd == CMD_INFO) {
		rc = cmd_info(o);
		if (rc < 0 && rc != STARNN_TRAIN_USAGE)
			fail("%s", starnn_error_message());
		free(o);
		return rc == STARNN_TRAIN_USAGE ? 2 : rc < 0 ? 1 : 0;
	}
	const struct starnn_program prog = {.name = "unet", .quiet = 1, .announce = !o->train.quiet};
	if (starnn_program_start(&prog, argc, argv) < 0) {
		free(o);
		return 1;
	}
	if (starnn_replicas() > 1 && o->cmd != CMD_TRAIN) {
		fail("%s runs on one rank: start it without mpirun", o->cmd == CMD_EVAL ? "eval" : "predict");
		rc = STARNN_TRAIN_USAGE;
	} else {
		switch (o->cmd) {
		case CMD_TRAIN: rc = cmd_train(o); break;
		case CMD_EVAL: rc = cmd_eval(o); break;
		default: rc = cmd_predict(o); break;
		}
	}
	int status = starnn_program_end(&prog, rc);
	free(o);
	return status;
}
