/* models/unet: train, evaluate and forecast SEVIR nowcasts with the UNet.
 *
 *   models/unet train   [options]   train (synthetic data or a SEVIR file)
 *   models/unet eval    [options]   metrics of a checkpoint, persistence beside
 *   models/unet predict [options]   forecasts to HDF5 (+ PNG pictures)
 *   models/unet info    [options]   the layers and the parameter count
 *
 * Each training step is one asynchronous task graph (models/unet_model.c);
 * the data loader thread (models/sevir/sevir.h) prepares the next batches
 * meanwhile. Steps are pipelined: batch k+1 goes into staging tensors (the
 * copy into the input is a task), step k+1 is submitted, and only then is
 * step k's loss (kept in a per-step slot) read and logged, so the host never
 * drains the graph between steps (see cmd_train). */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codelets/amp.h"
#include "codelets/conv2d.h"
#include "codelets/convt2d.h"
#include "runtime/train/checkpoint.h"
#include "models/sevir/metrics.h"
#include "models/sevir/output.h"
#include "models/sevir/sevir.h"
#include "models/unet_model.h"
#include "models/unet_options.h"
#include "runtime/starnn.h"
#include "runtime/train/dist.h"

#define CKPT_FORMAT "starnn-unet"
/* 2: adds the mixed-precision attributes (runtime/train/checkpoint.h); a
 * version-1 file reads as fp32 without loss scaling. */
#define CKPT_VERSION 2
/* Return codes of the commands besides starnn's (negative STARNN_E*): bad
 * usage found late (exit 2, message already printed), interrupted by a
 * signal (exit 128 + its number: 130 SIGINT, 143 SIGTERM). */
#define RC_USAGE (-1000)
#define RC_INTERRUPTED (-1001)

static const char *prog = "unet";

/* ------------------------------------------------------------ messages */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first SIGINT or SIGTERM (its number is kept here) asks for a stop at
 * the next step boundary: training finishes the steps in flight and saves
 * --checkpoint, eval and predict stop without a result. A second one
 * leaves at once, as a user pressing Ctrl-C twice or a supervisor insisting
 * means it, without saving: a checkpoint write then under way leaves its
 * temporary file, which the next write of that checkpoint removes. */
static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
	if (interrupted) {
		static const char msg[] = "unet: second signal: exiting at once, without saving\n";
		ssize_t k = write(STDERR_FILENO, msg, sizeof msg - 1);
		(void)k; /* nothing to do about a failed message here */
		_exit(128 + sig);
	}
	interrupted = sig;
}

static const char *signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

/* ------------------------------------------------------------ checkpoints */

static const char *optimizer_name(enum unet_optimizer k)
{
	return k == UNET_SGD ? "sgd" : "adam";
}

static const char *resize_name(enum sevir_resize r)
{
	return r == SEVIR_DOWNSAMPLE ? "downsample" : "crop";
}

struct train_state {
	int64_t step;   /* steps done */
	int64_t epoch;  /* epochs done */
	int64_t total;  /* steps the run was asked for */
};

/* The wire settings of the weights (--shard-optimizer, --wire-weights,
 * --awp-*) and the adaptive state, as checkpoint attributes. */
static const char *wire_weights_name(int wire)
{
	return wire == STARNN_WIRE_ADAPTIVE ? "awp" : wire < 0 ? "none" : starnn_wire_name((starnn_wire_format)wire);
}

static int write_checkpoint_file(const char *file, unet *m, const struct options *o, const struct unet_optim *opt,
                                 const struct train_state *st)
{
	int n;
	const struct unet_tensor_ref *refs = unet_tensors(m, &n);
	struct ckpt_entry *e = malloc(sizeof *e * (size_t)n);
	if (!e)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		e[i] = (struct ckpt_entry){refs[i].path, refs[i].tensor};
	const struct unet_config *c = unet_get_config(m);
	struct ckpt_amp amp = {.compute = (starnn_dtype)c->compute, .loss_scaling = c->loss_scale};
	if (c->loss_scale) {
		struct starnn_amp_state s;
		int rc = unet_get_amp_state(m, &s);
		if (rc < 0) {
			free(e);
			return rc;
		}
		amp.scale = s.scale;
		amp.good_steps = s.good_steps, amp.skipped_steps = s.skipped_steps, amp.applied_steps = s.applied_steps;
	}
	struct ckpt_attr a[64] = {
		{.name = "format", .type = CKPT_STRING, .s = CKPT_FORMAT},
		{.name = "format_version", .type = CKPT_INT, .i = CKPT_VERSION},
		{.name = "depth", .type = CKPT_INT, .i = c->depth},
		{.name = "filters", .type = CKPT_INT, .i = c->filters},
		{.name = "in_frames", .type = CKPT_INT, .i = c->in_frames},
		{.name = "out_frames", .type = CKPT_INT, .i = c->out_frames},
		{.name = "parameters", .type = CKPT_INT, .i = unet_parameter_count(m)},
		{.name = "size", .type = CKPT_INT, .i = c->size},
		{.name = "batch", .type = CKPT_INT, .i = c->global_batch ? c->global_batch : c->batch},
		{.name = "micro_batches", .type = CKPT_INT, .i = c->micro},
		{.name = "step", .type = CKPT_INT, .i = st->step},
		{.name = "epoch", .type = CKPT_INT, .i = st->epoch},
		{.name = "total_steps", .type = CKPT_INT, .i = st->total},
		{.name = "optimizer", .type = CKPT_STRING, .s = optimizer_name(opt->kind)},
		{.name = "lr", .type = CKPT_DOUBLE, .d = opt->lr},
		{.name = "warmup", .type = CKPT_INT, .i = opt->warmup},
		{.name = "momentum", .type = CKPT_DOUBLE, .d = opt->momentum},
		{.name = "weight_decay", .type = CKPT_DOUBLE, .d = opt->weight_decay},
		{.name = "beta1", .type = CKPT_DOUBLE, .d = opt->beta1},
		{.name = "beta2", .type = CKPT_DOUBLE, .d = opt->beta2},
		{.name = "eps", .type = CKPT_DOUBLE, .d = opt->eps},
		{.name = "seed", .type = CKPT_INT, .i = (int64_t)o->seed},
		{.name = "shuffle", .type = CKPT_INT, .i = o->shuffle},
		{.name = "data", .type = CKPT_STRING, .s = o->data},
		{.name = "val_data", .type = CKPT_STRING, .s = o->val_data ? o->val_data : ""},
		{.name = "catalog", .type = CKPT_STRING, .s = o->catalog ? o->catalog : ""},
		{.name = "resize", .type = CKPT_STRING, .s = resize_name(o->resize)},
		{.name = "synthetic_size", .type = CKPT_INT, .i = o->synthetic_size},
		{.name = "samples", .type = CKPT_INT, .i = o->samples},
		{.name = "val_samples", .type = CKPT_INT, .i = o->val_samples},
	};
	int na = 0, namp;
	while (na < (int)(sizeof a / sizeof *a) && a[na].name)
		na++;
	char *awp_state = NULL;
	if (o->shard) {
		a[na++] = (struct ckpt_attr){.name = "shard_optimizer", .type = CKPT_INT, .i = 1};
		a[na++] = (struct ckpt_attr){.name = "wire_weights", .type = CKPT_STRING, .s = wire_weights_name(o->wire_weights)};
	}
	if (o->wire_weights == STARNN_WIRE_ADAPTIVE) {
		int rc = starnn_dist_weights_state(&awp_state);
		if (rc < 0) {
			free(e);
			return rc;
		}
		a[na++] = (struct ckpt_attr){.name = "awp_state", .type = CKPT_STRING, .s = awp_state};
		a[na++] = (struct ckpt_attr){.name = "awp_rel_res", .type = CKPT_DOUBLE, .d = o->awp.rel_res};
		a[na++] = (struct ckpt_attr){.name = "awp_interval", .type = CKPT_INT, .i = o->awp.interval};
		a[na++] = (struct ckpt_attr){.name = "awp_start_bits", .type = CKPT_INT, .i = o->awp.start_bits};
		a[na++] = (struct ckpt_attr){.name = "awp_stride", .type = CKPT_INT, .i = o->awp.stride};
		a[na++] = (struct ckpt_attr){.name = "awp_rounding", .type = CKPT_STRING,
		                             .s = o->awp.family == STARNN_WIRE_LADDER_RNE ? "rne" : "trunc"};
	}
	int rc = na + CKPT_AMP_MAX_ATTRS <= (int)(sizeof a / sizeof *a)
	                 ? ckpt_amp_attrs(&amp, a + na, &namp)
	                 : starnn_error(STARNN_EINVAL, "checkpoint %s: too many attributes for the table", file);
	if (rc == 0)
		rc = ckpt_write(file, e, n, a, na + namp);
	free(e);
	free(awp_state);
	return rc;
}

/* Every rank calls it; rank 0 writes the file. */
static int write_checkpoint(const char *file, unet *m, const struct options *o, const struct unet_optim *opt,
                            const struct train_state *st)
{
	STARNN_CHECK(unet_checkpoint_begin(m)); /* rank 0 gets the owners' exact masters and state */
	int rc = starnn_launch_rank() > 0 ? 0 : write_checkpoint_file(file, m, o, opt, st);
	int rc2 = unet_checkpoint_end(m);
	return rc < 0 ? rc : rc2;
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
	return 0;
}

static int get_int_opt(ckpt_file *f, const char *name, int64_t *v)
{
	return ckpt_get_int(f, name, v);
}

/* For --resume: the training settings not given on the command line come
 * from the checkpoint; the optimizer must be the same (its state is). */
static int checkpoint_training(ckpt_file *f, const char *file, struct options *o, struct train_state *st,
                               struct ckpt_amp *amp)
{
	int64_t v;
	double d;
	char s[64];
	STARNN_CHECK(ckpt_get_int(f, "step", &st->step));
	STARNN_CHECK(ckpt_get_int(f, "epoch", &st->epoch));
	/* Without --steps / --epochs, the run continues to the length it was
	 * given. */
	STARNN_CHECK(ckpt_get_int(f, "total_steps", &v));
	if (!o->given[O_STEPS] && !o->given[O_EPOCHS])
		o->steps = v;
	STARNN_CHECK(ckpt_get_string(f, "optimizer", s, sizeof s));
	enum unet_optimizer k = strcmp(s, "sgd") == 0 ? UNET_SGD : UNET_ADAM;
	if (o->given[O_OPTIMIZER] && k != o->optimizer)
		return starnn_error(STARNN_EINVAL, "%s was trained with --optimizer %s: it cannot resume with %s", file, s,
		                    optimizer_name(o->optimizer));
	o->optimizer = k;
	struct {
		const char *attr;
		int id;
		int *i;
		float *f;
	} settings[] = {
		{"size", O_SIZE, &o->size, NULL},           {"batch", O_BATCH, &o->batch, NULL},
		{"micro_batches", O_MICRO, &o->micro, NULL}, {"warmup", O_WARMUP, &o->warmup, NULL},
		{"shuffle", O_SHUFFLE, &o->shuffle, NULL},  {"synthetic_size", O_SYN_SIZE, &o->synthetic_size, NULL},
		{"samples", O_SAMPLES, &o->samples, NULL},  {"val_samples", O_VAL_SAMPLES, &o->val_samples, NULL},
		{"lr", O_LR, NULL, &o->lr},                 {"momentum", O_MOMENTUM, NULL, &o->momentum},
		{"weight_decay", O_WEIGHT_DECAY, NULL, &o->weight_decay},
	};
	for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
		if (settings[i].i) {
			STARNN_CHECK(get_int_opt(f, settings[i].attr, &v));
			if (!o->given[settings[i].id])
				*settings[i].i = (int)v;
			else if (v != *settings[i].i && !o->quiet)
				fprintf(stderr, "%s: note: %s %lld in %s, %d now: not the run an uninterrupted one would be\n",
				        prog, settings[i].attr, (long long)v, file, *settings[i].i);
		} else {
			STARNN_CHECK(ckpt_get_double(f, settings[i].attr, &d));
			if (!o->given[settings[i].id])
				*settings[i].f = (float)d;
			else if ((float)d != *settings[i].f && !o->quiet)
				fprintf(stderr, "%s: note: %s %g in %s, %g now: not the run an uninterrupted one would be\n",
				        prog, settings[i].attr, d, file, (double)*settings[i].f);
		}
	}
	STARNN_CHECK(ckpt_get_int(f, "seed", &v));
	if (!o->given[O_SEED])
		o->seed = (uint64_t)v;
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
	/* The weights' wire settings: the checkpoint's unless given. */
	if (!o->given[O_SHARD] && ckpt_has_attr(f, "shard_optimizer")) {
		STARNN_CHECK(ckpt_get_int(f, "shard_optimizer", &v));
		o->shard = v != 0;
	}
	if (!o->given[O_WIRE_WEIGHTS] && ckpt_has_attr(f, "wire_weights")) {
		STARNN_CHECK(ckpt_get_string(f, "wire_weights", s, sizeof s));
		if (starnn_awp_wire_option("wire_weights", s, &o->wire_weights) < 0)
			return starnn_error(STARNN_EINVAL, "%s: attribute wire_weights '%s' is not a wire format", file, s);
	}
	if (o->wire_weights == STARNN_WIRE_ADAPTIVE && ckpt_has_attr(f, "awp_state")) {
		static const struct {
			const char *attr, *opt;
			int id;
		} awp[] = {{"awp_rel_res", "--awp-rel-res", O_AWP_REL_RES},
		           {"awp_interval", "--awp-interval", O_AWP_INTERVAL},
		           {"awp_start_bits", "--awp-start-bits", O_AWP_START_BITS},
		           {"awp_stride", "--awp-stride", O_AWP_STRIDE},
		           {"awp_rounding", "--awp-rounding", O_AWP_ROUNDING}};
		for (size_t i = 0; i < sizeof awp / sizeof *awp; i++) {
			if (o->given[awp[i].id])
				continue;
			char text[64];
			if (awp[i].id == O_AWP_REL_RES) {
				STARNN_CHECK(ckpt_get_double(f, awp[i].attr, &d));
				snprintf(text, sizeof text, "%.17g", d);
			} else if (awp[i].id == O_AWP_ROUNDING) {
				STARNN_CHECK(ckpt_get_string(f, awp[i].attr, text, sizeof text));
			} else {
				STARNN_CHECK(ckpt_get_int(f, awp[i].attr, &v));
				snprintf(text, sizeof text, "%lld", (long long)v);
			}
			STARNN_CHECK(starnn_awp_option(awp[i].opt, text, &o->awp));
		}
		STARNN_CHECK(starnn_awp_check(&o->awp));
		static char state[1 << 16];
		STARNN_CHECK(ckpt_get_string(f, "awp_state", state, sizeof state));
		o->awp_state = state;
	}
	/* Precision and loss scaling: the checkpoint's unless given; the loss
	 * scaling of another precision is that precision's default. */
	STARNN_CHECK(ckpt_get_amp(f, amp));
	if (!o->given[O_PRECISION])
		o->compute = amp->compute;
	if (o->loss_scale < 0 && o->compute == (int)amp->compute) {
		o->loss_scale = amp->loss_scaling;
		if (amp->loss_scaling == CKPT_SCALING_STATIC)
			o->static_scale = (float)amp->scale;
	}
	return 0;
}

static void scaling_name(char *buf, size_t size, int loss_scale, double static_scale)
{
	if (loss_scale == CKPT_SCALING_STATIC)
		snprintf(buf, size, "static loss scale %g", static_scale);
	else
		snprintf(buf, size, "%s loss scaling", loss_scale == CKPT_SCALING_DYNAMIC ? "dynamic" : "no");
}

/* For --resume, once the model exists: the checkpoint's loss-scale state
 * goes on unchanged when the run keeps its precision and loss scaling, and
 * then the run equals an uninterrupted one bit for bit. Another precision
 * or loss scaling is allowed (weights and optimizer state are fp32 in
 * every precision), with a note: the step counters carry over (Adam's
 * bias correction goes on), the scale starts afresh (2^16, or the static
 * N). From a checkpoint without loss scaling every step counts as applied. */
static int resume_precision(unet *m, const struct options *o, const struct ckpt_amp *ck,
                            const struct train_state *st, const char *file)
{
	int same_precision = o->compute == (int)ck->compute;
	int same_scaling = o->loss_scale == ck->loss_scaling &&
	                   (o->loss_scale != CKPT_SCALING_STATIC || o->static_scale == (float)ck->scale);
	if (!o->quiet && (!same_precision || !same_scaling)) {
		char was[64], now_[64];
		scaling_name(was, sizeof was, ck->loss_scaling, ck->scale);
		scaling_name(now_, sizeof now_, o->loss_scale, o->static_scale);
		fprintf(stderr,
		        "%s: note: %s was trained with --precision %s, %s; continuing with %s, %s: the fp32 weights "
		        "and optimizer state carry over%s; not the run an uninterrupted one would be\n",
		        prog, file, ckpt_precision_name(ck->compute), was, ckpt_precision_name((starnn_dtype)o->compute),
		        now_, o->loss_scale && !same_scaling ? ", the loss scale starts afresh" : "");
	}
	if (!o->loss_scale)
		return 0;
	float start = o->loss_scale == CKPT_SCALING_STATIC ? o->static_scale : STARNN_AMP_INIT_SCALE;
	struct starnn_amp_state s = {start, 0, 0, st->step};
	if (ck->loss_scaling != CKPT_SCALING_NONE)
		s.skipped_steps = ck->skipped_steps, s.applied_steps = ck->applied_steps;
	if (same_scaling)
		s.scale = (float)ck->scale, s.good_steps = ck->good_steps;
	return unet_set_amp_state(m, &s);
}

/* Loads the model's tensors from f: all of them (resume) or the weights and
 * batch-norm statistics only (init, eval, predict). */
static int load_tensors(ckpt_file *f, unet *m, int with_optimizer)
{
	int n;
	const struct unet_tensor_ref *refs = unet_tensors(m, &n);
	for (int i = 0; i < n; i++) {
		if (!with_optimizer && strncmp(refs[i].path, "optimizer/", 10) == 0)
			continue;
		STARNN_CHECK(ckpt_read_tensor(f, refs[i].path, refs[i].tensor));
	}
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
	so.seed = o->seed;
	if (is_synthetic(path)) {
		so.synthetic_samples = samples;
		so.synthetic_size = o->synthetic_size ? o->synthetic_size : o->size ? o->size : so.synthetic_size;
	}
	return sevir_open(d, &so);
}

/* ------------------------------------------------------------ model */

static int default_micro(int batch)
{
	int workers = starnn_ncpu_workers() + starnn_ncuda_workers();
	int m = workers < 1 ? 1 : workers > 8 ? 8 : workers;
	return m > batch ? batch : m;
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

static void optim_of(const struct options *o, struct unet_optim *opt)
{
	unet_optim_defaults(opt);
	opt->kind = o->optimizer;
	opt->lr = o->lr;
	opt->warmup = o->warmup;
	opt->momentum = o->optimizer == UNET_SGD ? o->momentum : 0.0f;
	opt->weight_decay = o->weight_decay;
}

static float lr_at(const struct unet_optim *opt, int64_t step)
{
	if (opt->warmup > 0 && step < opt->warmup)
		return (float)((double)opt->lr * (double)step / (double)opt->warmup);
	return opt->lr;
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
	/* Under mpirun each rank scores its share of the samples, and the
	 * sums are combined (the same counts; the error sums in another order
	 * than one rank adds them, so they may differ in the last digits). */
	int64_t begin, count;
	starnn_dist_share(sevir_count(d), starnn_launch_rank(), starnn_launch_size(), &begin, &count);
	int end = (int)(begin + count);
	for (int first = (int)begin; first < end && !interrupted; first += c->batch) {
		int cnt = end - first < c->batch ? end - first : c->batch;
		STARNN_CHECK(forecast_batch(m, d, b, first, cnt));
		metrics_add(met, b->x, c->in_frames, b->y, b->pred, cnt, (int64_t)c->size * c->size);
	}
	if (starnn_launch_size() > 1) {
		double sums[METRICS_NSUMS];
		metrics_pack(met, sums);
		STARNN_CHECK(starnn_dist_sum_doubles(sums, METRICS_NSUMS));
		metrics_unpack(met, sums);
	}
	return 0;
}

/* Whether the training loop must finish step `step` before submitting the
 * next one: a checkpoint or an evaluation follows it, or the injection test
 * hook checks the state it leaves. */
static int barrier_after(const struct options *o, int evaluating, int64_t step, int64_t total)
{
	if (step >= total)
		return 1;
	if (o->checkpoint && o->checkpoint_every && step % o->checkpoint_every == 0)
		return 1;
	if (evaluating && o->eval_every > 0 && step % o->eval_every == 0)
		return 1;
	return o->inject_inf_step == step;
}

/* ------------------------------------------------------------ progress */

static void format_time(double s, char *buf, size_t n)
{
	if (!(s >= 0) || s > 1e8)
		snprintf(buf, n, "?");
	else if (s < 60)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

static void progress_bar(int64_t step, int64_t total, int64_t epoch, double loss, double sps, double eta)
{
	char e[32];
	format_time(eta, e, sizeof e);
	int width = 30, fill = total > 0 ? (int)((double)width * (double)step / (double)total) : width;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
	bar[width] = 0;
	printf("\r[%s] step %lld/%lld  epoch %lld  loss %.5f  %.1f samples/s  ETA %s   ", bar, (long long)step,
	       (long long)total, (long long)epoch + 1, loss, sps, e);
	fflush(stdout);
}

/* ------------------------------------------------------------ commands */

static int cmd_info(struct options *o)
{
	if (o->checkpoint) {
		ckpt_file *f;
		STARNN_CHECK(ckpt_open(&f, o->checkpoint));
		int rc = checkpoint_architecture(f, o->checkpoint, o);
		int64_t v;
		if (rc == 0 && !o->given[O_SIZE] && ckpt_get_int(f, "size", &v) == 0)
			o->size = (int)v;
		ckpt_close(f);
		STARNN_CHECK(rc);
	}
	struct unet_config c = {o->depth, o->filters, o->in_frames, o->out_frames,
	                        o->size ? o->size : SEVIR_NATIVE_SIZE, o->batch, 1, 0, 0, 0, 0, 0};
	if (c.size % (1 << c.depth) != 0) {
		fail("the image size %d is not a multiple of 2^depth = %d (see --size)", c.size, 1 << c.depth);
		return RC_USAGE;
	}
	return unet_print_config(&c, stdout);
}

/* ------------------------------------------------- overflow test hook
 * (STARNN_UNET_INJECT_INF_STEP): the parameters and the optimizer state
 * (not the BN running statistics: the skipped step's forward still updates
 * them, as in PyTorch) before the step, compared bit for bit after it. */
static int inject_snapshot(unet *m, float **out, size_t *n_out)
{
	int n;
	const struct unet_tensor_ref *refs = unet_tensors(m, &n);
	size_t total = 0;
	for (int i = 0; i < n; i++)
		if (refs[i].is_parameter || strncmp(refs[i].path, "optimizer/", 10) == 0)
			total += starnn_tensor_numel(refs[i].tensor);
	float *v = malloc(sizeof *v * (total ? total : 1));
	if (!v)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	size_t off = 0;
	for (int i = 0; i < n; i++)
		if (refs[i].is_parameter || strncmp(refs[i].path, "optimizer/", 10) == 0) {
			int rc = starnn_tensor_read_f32(refs[i].tensor, v + off);
			if (rc < 0) {
				free(v);
				return rc;
			}
			off += starnn_tensor_numel(refs[i].tensor);
		}
	*out = v;
	*n_out = total;
	return 0;
}

static int inject_check(unet *m, const float *before, size_t n, float scale_before, int64_t step)
{
	float *now_v;
	size_t n2;
	float scale;
	STARNN_CHECK(inject_snapshot(m, &now_v, &n2));
	STARNN_CHECK(unet_loss_scale_state(m, &scale, NULL, NULL));
	int same = n == n2 && memcmp(before, now_v, n * sizeof *now_v) == 0;
	free(now_v);
	printf("inject: Inf in a gradient at step %lld: weights and optimizer state %s, scale %g -> %g\n",
	       (long long)step, same ? "unchanged bit for bit" : "CHANGED", (double)scale_before, (double)scale);
	if (!same)
		return starnn_error(STARNN_ENUM, "the step with an Inf gradient was not skipped");
	return 0;
}

static int inject_final(unet *m)
{
	float *v;
	size_t n, bad = 0;
	STARNN_CHECK(inject_snapshot(m, &v, &n));
	for (size_t i = 0; i < n; i++)
		bad += !isfinite(v[i]);
	free(v);
	printf("inject: %zu of %zu final weights and optimizer values non-finite\n", bad, n);
	return bad ? starnn_error(STARNN_ENUM, "non-finite weights after the skipped step") : 0;
}

struct run {
	struct options *o;
	sevir_data *train, *val;
	sevir_loader *loader;
	unet *m;
	struct unet_optim opt;
	struct batch_buf buf;
	FILE *log;
	int first; /* this rank's first sample of a batch (mpirun) */
};

static void run_free(struct run *r)
{
	if (r->loader)
		sevir_loader_stop(r->loader);
	unet_destroy(r->m);
	sevir_close(r->train);
	sevir_close(r->val);
	batch_buf_free(&r->buf);
	if (r->log)
		fclose(r->log);
}

/* Builds the model for o (architecture, size, batch) and loads a checkpoint's
 * tensors when asked. */
static int make_model(struct run *r, ckpt_file *ck, int with_optimizer)
{
	struct options *o = r->o;
	/* Under mpirun, --batch is the global batch; this rank trains on its
	 * share, samples [first, first + local) of every batch. */
	int64_t first = 0, local = o->batch;
	if (o->cmd == CMD_TRAIN)
		starnn_dist_share(o->batch, starnn_launch_rank(), starnn_launch_size(), &first, &local);
	/* Decided alike on every rank: from the smallest share. */
	int least = o->cmd == CMD_TRAIN ? o->batch / starnn_launch_size() : o->batch;
	if (least < 1) {
		fail("--batch %d is the global batch: it cannot be split over %d ranks (at least one sample per rank)",
		     o->batch, starnn_launch_size());
		return RC_USAGE;
	}
	r->first = (int)first;
	if (!o->micro)
		o->micro = default_micro(least);
	if (o->micro > least) {
		fail("--micro-batches (%d) cannot exceed the batch (%d%s)", o->micro, least,
		     starnn_launch_size() > 1 ? " samples on the rank with the fewest" : "");
		return RC_USAGE;
	}
	struct unet_config c = {o->depth,  o->filters, o->in_frames, o->out_frames,   o->size,
	                        (int)local, o->micro,  o->compute,   o->loss_scale, o->static_scale, o->batch,
	                        o->bn_local};
	if (o->cmd != CMD_TRAIN)
		c.loss_scale = 0;
	optim_of(o, &r->opt);
	if (o->cmd == CMD_TRAIN) {
		struct starnn_dist_weights w = {.shard = o->shard, .wire = o->wire_weights, .awp = o->awp};
		STARNN_CHECK(starnn_dist_set_weights(&w));
	}
	STARNN_CHECK(unet_create(&r->m, &c, &r->opt, o->seed));
	unet_set_inject_inf_step(r->m, o->inject_inf_step);
	if (ck)
		STARNN_CHECK(load_tensors(ck, r->m, with_optimizer));
	if (starnn_launch_mpi()) { /* rank 0's model on every rank */
		int n;
		const struct unet_tensor_ref *refs = unet_tensors(r->m, &n);
		for (int i = 0; i < n; i++)
			STARNN_CHECK(starnn_dist_broadcast(refs[i].tensor));
	}
	return batch_buf_init(&r->buf, &c);
}

static void log_eval(struct run *r, int64_t step, int64_t epoch, const struct nowcast_metrics *met)
{
	if (!r->log)
		return;
	fprintf(r->log, "{\"step\":%lld,\"epoch\":%lld,\"eval\":", (long long)step, (long long)epoch + 1);
	metrics_json(met, r->log);
	fprintf(r->log, "}\n");
	fflush(r->log);
}

static int run_eval_during_training(struct run *r, int64_t step, int64_t epoch, int tty)
{
	struct nowcast_metrics met;
	double t0 = now();
	STARNN_CHECK(evaluate(r->m, r->val, &r->buf, &met));
	if (interrupted)
		return 0;
	if (tty)
		printf("\n");
	if (!r->o->quiet || step > 0)
		printf("eval at step %lld: MSE %.5f (persistence %.5f) normalised, MAE %.3f (persistence %.3f), "
		       "mean CSI %.4f (persistence %.4f) [%d samples, %.1f s]\n",
		       (long long)step, scores_mse_norm(&met.model, -1), scores_mse_norm(&met.persistence, -1),
		       scores_mae(&met.model, -1), scores_mae(&met.persistence, -1), scores_mean_csi(&met.model),
		       scores_mean_csi(&met.persistence), sevir_count(r->val), now() - t0);
	fflush(stdout);
	log_eval(r, step, epoch, &met);
	return 0;
}

/* The energy meter of a run (runtime/train/energy.h), with the options' power model. */
static int energy_start(const struct options *o, starnn_energy_meter **m)
{
	struct starnn_energy_opts eo;
	starnn_energy_opts_init(&eo);
	eo.cpu_watts = o->cpu_watts, eo.gpu_watts = o->gpu_watts, eo.idle_watts = o->idle_watts;
	return starnn_energy_start(m, &eo);
}

static int cmd_train(struct options *o)
{
	struct run r = {.o = o};
	struct train_state st = {0, 0, 0};
	struct ckpt_amp ck_amp = {.compute = STARNN_FP32};
	ckpt_file *ck = NULL;
	const char *ckfile = o->resume ? o->resume : o->init;
	starnn_energy_meter *meter = NULL;
	struct starnn_energy_reading energy;
	int have_energy = 0;
	int rc = 0;
	if (ckfile) {
		rc = ckpt_open(&ck, ckfile);
		if (rc == 0)
			rc = checkpoint_architecture(ck, ckfile, o);
		if (rc == 0 && o->resume)
			rc = checkpoint_training(ck, ckfile, o, &st, &ck_amp);
		if (rc < 0)
			goto out;
		if (o->resume && finish_loss_scale(o) < 0) {
			rc = RC_USAGE;
			goto out;
		}
	}
	rc = open_data(&r.train, o, o->data, SEVIR_TRAIN, o->samples);
	if (rc < 0)
		goto out;
	if (!o->size)
		o->size = sevir_size(r.train);
	if (check_size(o) < 0) {
		rc = RC_USAGE;
		goto out;
	}
	rc = make_model(&r, ck, o->resume != NULL);
	if (rc == 0 && o->resume)
		rc = resume_precision(r.m, o, &ck_amp, &st, o->resume);
	if (rc == 0 && o->awp_state)
		rc = starnn_dist_weights_set_state(o->awp_state);
	if (rc == 0)
		rc = unet_weights_begin(r.m, st.step); /* --shard-optimizer: the weights in their wire format */
	if (rc < 0)
		goto out;
	if (ck) {
		ckpt_close(ck);
		ck = NULL;
	}
	int bpe;
	{
		int count = sevir_count(r.train);
		if (count < o->batch) {
			rc = starnn_error(STARNN_EINVAL, "%s has %d training samples, fewer than the batch (%d)",
			                  sevir_describe(r.train), count, o->batch);
			goto out;
		}
		bpe = count / o->batch;
	}
	int64_t total = o->steps >= 0 ? o->steps : (int64_t)o->epochs * bpe;
	st.total = total;
	if (o->resume && st.step > total) {
		rc = starnn_error(STARNN_EINVAL, "%s is at step %lld, beyond the %lld steps asked (--steps / --epochs)",
		                  o->resume, (long long)st.step, (long long)total);
		goto out;
	}
	/* Evaluation data, when there is training to evaluate. */
	if (o->eval_every != 0 && st.step < total) {
		const char *vp = o->val_data ? o->val_data : o->data;
		rc = open_data(&r.val, o, vp, SEVIR_TEST, o->val_samples);
		if (rc < 0)
			goto out;
		if (sevir_count(r.val) == 0) {
			if (!o->quiet)
				fprintf(stderr, "%s: note: %s has no samples: no evaluation\n", prog, sevir_describe(r.val));
			sevir_close(r.val);
			r.val = NULL;
		}
	}
	if (o->log_json && starnn_launch_rank() == 0) {
		r.log = fopen(o->log_json, o->resume ? "a" : "w");
		if (!r.log) {
			rc = starnn_error(STARNN_EIO, "cannot write the log %s: %s", o->log_json, strerror(errno));
			goto out;
		}
	}
	starnn_dist_weights_log(r.log, st.step); /* --wire-weights: the formats at the start */
	/* mpirun hands its ranks a pseudo-terminal: no bar unless asked. */
	int tty = o->progress >= 0 ? o->progress : isatty(STDOUT_FILENO) && starnn_launch_size() == 1;
	if (o->quiet)
		tty = 0;
	if (!o->quiet) {
		const struct unet_config *c = unet_get_config(r.m);
		printf("unet: depth %d, filters %d, %d -> %d frames, %dx%d, %lld parameters\n", c->depth, c->filters,
		       c->in_frames, c->out_frames, c->size, c->size, (long long)unet_parameter_count(r.m));
		printf("data: %s\n", sevir_describe(r.train));
		if (r.val)
			printf("evaluation: %s\n", sevir_describe(r.val));
		if (starnn_launch_size() > 1)
			printf("ranks: %d, %d samples of each batch on rank 0, BatchNorm statistics %s\n",
			       starnn_launch_size(), c->batch, c->bn_local ? "per rank (--bn-sync local)" : "over all ranks");
		if (o->shard) {
			char formats[160];
			starnn_dist_weights_summary(formats, sizeof formats);
			printf("optimizer sharded over %d rank%s (each parameter updated by its owner), weights sent as %s%s%s%s\n",
			       starnn_launch_size(), starnn_launch_size() > 1 ? "s" : "", wire_weights_name(o->wire_weights),
			       *formats ? " (now: " : "", formats, *formats ? ")" : "");
		}
		printf("training: batch %d in %d micro-batches%s, %s lr %g%s, %lld steps (%d per epoch)%s, %s\n", o->batch,
		       c->micro, starnn_launch_size() > 1 ? " per rank" : "", optimizer_name(r.opt.kind), (double)r.opt.lr,
		       r.opt.warmup ? " with warm-up" : "", (long long)total, bpe,
		       o->resume ? ", resumed" : o->init ? ", from --init weights" : "", starnn_runtime_summary());
		if (o->compute == STARNN_FP32)
			printf("precision: fp32%s\n", o->loss_scale ? " with loss scaling" : "");
		else
			printf("precision: amp-%s (fp32 master weights), loss scale %s\n", starnn_dtype_name(o->compute),
			       o->loss_scale == 1 ? "dynamic" : o->loss_scale == 2 ? "static" : "none");
		const char *route = starnn_conv2d_cpu_route(o->compute);
		if (route)
			printf("convolutions: %s\n", route);
		const char *up = starnn_convt2d_cpu_route(o->compute, starnn_conv2d_act_cblock(o->filters, o->compute, o->micro));
		if (up)
			printf("transposed convolutions: %s\n", up);
		int whole, nconv;
		unet_wgrad_whole(r.m, &whole, &nconv);
		const char *we = starnn_conv2d_wgrad_whole_given();
		if (c->micro > 1)
			printf("weight gradients: %d of %d convolutions on the whole batch (%s%s), the others per "
			       "micro-batch\n",
			       whole, nconv, we ? "STARNN_CONV2D_WGRAD_WHOLE=" : "the wide ones", we ? we : "");
		int wino, npass3;
		unet_winograd(r.m, &wino, &npass3);
		if (o->compute == STARNN_FP32 && starpu_cpu_worker_get_count() > 0 && starnn_conv2d_cpu_backend() == STARNN_CONV2D_DNNL)
			printf("3x3 convolutions: %d of %d fp32 passes on oneDNN's Winograd kernel, the others direct "
			       "(STARNN_CONV2D_ALGO=%s)\n",
			       wino, npass3, starnn_conv2d_algo_given() ? starnn_conv2d_algo_given() : "auto");
		char layout[320];
		if (starpu_cpu_worker_get_count() > 0)
			printf("activations: %s\n", starnn_conv2d_layout_note(o->compute, o->micro, layout, sizeof layout));
		struct starnn_amp_state s;
		if (o->resume && o->loss_scale && (rc = unet_get_amp_state(r.m, &s)) == 0)
			printf("loss scale resumed: %g, %lld clean steps toward doubling, %lld skipped, %lld applied\n",
			       (double)s.scale, (long long)s.good_steps, (long long)s.skipped_steps,
			       (long long)s.applied_steps);
		fflush(stdout);
		if (rc < 0)
			goto out;
	}
	if (st.step < total) {
		rc = sevir_loader_start_part(&r.loader, r.train, o->batch, r.first, unet_get_config(r.m)->batch,
		                             o->shuffle, o->seed, 3, st.step);
		if (rc < 0)
			goto out;
	}

	/* Pipelined loop: step k+1 is submitted (its batch staged, then its
	 * graph) before step k's loss is read, so the host never drains the
	 * graph between steps: step k+1's tasks are queued while step k runs,
	 * and each starts as soon as its data is ready (its first convolution
	 * after step k's update of the first layer) instead of after the host
	 * has woken, copied the batch and submitted. At most two steps are in
	 * flight.
	 * Checkpoints, evaluations and the injection check need the model as
	 * step k left it: after such a step nothing more is submitted until it
	 * is finished (barrier_after). An interruption stops submitting; the
	 * steps in flight are finished and logged. */
	/* Time and energy of the steps (every rank: the reading is collective). */
	rc = energy_start(o, &meter);
	if (rc < 0)
		goto out;
	double t_start = now(), t_last = t_start, t_window = t_start, t_drawn = 0, loss = NAN;
	int64_t first_step = st.step, window_steps = 0, last_epoch = st.epoch;
	struct {
		int64_t step, epoch;
	} q[2]; /* submitted, not finished: oldest first */
	int nq = 0;
	float *snap = NULL, scale_before = 0;
	size_t nsnap = 0;
	int64_t saved_step = -1; /* the step --checkpoint holds, once written here */
	while (rc == 0) {
		int64_t next = st.step + nq + 1;
		int submit = next <= total && !interrupted && nq < 2 &&
		             !(nq > 0 && barrier_after(o, r.val != NULL, q[nq - 1].step, total));
		if (submit) {
			const float *x, *y;
			int64_t epoch, index;
			rc = sevir_loader_next(r.loader, &x, &y, &epoch, &index);
			if (rc == 0) {
				rc = unet_stage_batch(r.m, x, y); /* this rank's share of the batch */
			}
			if (rc == 0 && o->inject_inf_step == next) {
				/* the state before the step: nothing after step next - 1 is
				 * submitted yet */
				rc = inject_snapshot(r.m, &snap, &nsnap);
				if (rc == 0)
					rc = unet_loss_scale_state(r.m, &scale_before, NULL, NULL);
			}
			if (rc == 0)
				rc = unet_train_step(r.m, next);
			if (rc < 0)
				break;
			q[nq].step = next, q[nq].epoch = epoch;
			nq++;
		}
		if (nq == 0)
			break;
		if (submit && nq < 2)
			continue; /* submit the next step before finishing this one */
		/* Finish the oldest step in flight. */
		int64_t s = q[0].step, epoch = q[0].epoch;
		if (--nq > 0)
			q[0] = q[1];
		rc = unet_read_step_loss(r.m, s, &loss);
		if (rc == STARNN_ENUM) {
			starnn_error(STARNN_ENUM, "step %lld: the loss is %g (diverged: lower --lr or add --warmup)",
			             (long long)s, loss);
			break;
		}
		if (rc == 0 && o->inject_inf_step == s)
			rc = inject_check(r.m, snap, nsnap, scale_before, s);
		if (rc < 0)
			break;
		st.step = s;
		st.epoch = st.step / bpe; /* epochs completed */
		starnn_memory_sample();
		last_epoch = epoch;
		double t = now(), dt = t - t_last;
		t_last = t;
		window_steps++;
		if (r.log) {
			fprintf(r.log,
			        "{\"step\":%lld,\"epoch\":%lld,\"loss\":%.9g,\"lr\":%.7g,\"samples_per_s\":%.4g,"
			        "\"elapsed\":%.3f}\n",
			        (long long)st.step, (long long)epoch + 1, loss, (double)lr_at(&r.opt, st.step),
			        dt > 0 ? o->batch / dt : 0.0, t - t_start);
			starnn_dist_weights_log(r.log, st.step); /* --wire-weights awp: the formats that changed */
			fflush(r.log);
		}
		double sps = (double)(st.step - first_step) * o->batch / (t - t_start);
		double eta = sps > 0 ? (double)(total - st.step) * o->batch / sps : NAN;
		if (tty && (t - t_drawn >= 0.1 || st.step == total)) { /* at most 10 redraws a second */
			progress_bar(st.step, total, epoch, loss, sps, eta);
			t_drawn = t;
		}
		else if (!o->quiet && (st.step % o->log_every == 0 || st.step == total)) {
			char e[32];
			format_time(eta, e, sizeof e);
			printf("step %lld/%lld  epoch %lld  loss %.6f  %.2f samples/s  elapsed %.1fs  ETA %s\n",
			       (long long)st.step, (long long)total, (long long)epoch + 1, loss,
			       window_steps * o->batch / (t - t_window), t - t_start, e);
			fflush(stdout);
			t_window = t;
			window_steps = 0;
		}
		/* nq == 0 here whenever barrier_after(st.step) holds */
		if (o->checkpoint && o->checkpoint_every && st.step % o->checkpoint_every == 0 && st.step < total) {
			rc = write_checkpoint(o->checkpoint, r.m, o, &r.opt, &st);
			if (rc < 0)
				break;
			saved_step = st.step;
		}
		if (r.val && o->eval_every > 0 && st.step % o->eval_every == 0 && st.step < total) {
			rc = run_eval_during_training(&r, st.step, epoch, tty);
			if (rc < 0)
				break;
			t_last = now(); /* the evaluation is not a step's time */
		}
	}
	free(snap);
	if (tty && st.step > first_step)
		printf("\n");
	if (rc == 0 && interrupted) {
		const char *what = !o->checkpoint           ? "no --checkpoint to save"
		                   : saved_step == st.step ? "checkpoint already saved in"
		                                           : "saving the checkpoint";
		fprintf(stderr, "%s: interrupted at step %lld (%s): %s%s%s\n", prog, (long long)st.step,
		        signal_name(interrupted), what, o->checkpoint ? " " : "", o->checkpoint ? o->checkpoint : "");
	}
	/* (after a signal during the checkpoint of this very step, that one
	 * holds it already) */
	if (rc == 0 && o->checkpoint && saved_step != st.step)
		rc = write_checkpoint(o->checkpoint, r.m, o, &r.opt, &st);
	if (rc == 0 && !o->quiet && st.step > first_step) {
		double el = now() - t_start;
		printf("trained %lld steps in %.1f s (%.2f samples/s); last loss %.6f\n", (long long)(st.step - first_step),
		       el, (double)(st.step - first_step) * o->batch / el, loss);
	}
	if (rc == 0 && o->loss_scale && st.step > first_step) {
		float scale;
		int64_t skipped, applied;
		rc = unet_loss_scale_state(r.m, &scale, &skipped, &applied);
		if (rc == 0)
			printf("loss scale: %g, %lld steps skipped (Inf/NaN gradients), %lld applied\n", (double)scale,
			       (long long)skipped, (long long)applied);
	}
	if (rc == 0 && o->inject_inf_step && o->inject_inf_step <= st.step && o->inject_inf_step > first_step)
		rc = inject_final(r.m);
	if (rc == 0 && st.step > first_step)
		starnn_memory_report(stdout);
	if (rc == 0 && st.step > first_step)
		rc = starnn_dist_report(o->quiet ? NULL : stdout, r.log, st.step - first_step);
	double epochs_done = (double)(st.step - first_step) / bpe;
	int64_t samples_done = (st.step - first_step) * o->batch;
	if (rc == 0 && st.step > first_step) {
		rc = starnn_energy_read_all(meter, &energy);
		have_energy = rc == 0;
		if (have_energy && !o->quiet)
			starnn_energy_print(stdout, &energy, epochs_done, (double)samples_done);
	}
	if (rc == 0 && o->checkpoint && !o->quiet)
		printf("checkpoint: %s (step %lld)\n", o->checkpoint, (long long)st.step);
	if (rc == 0 && r.val && !interrupted && o->eval_every != 0)
		rc = run_eval_during_training(&r, st.step, last_epoch, 0);
	if (rc == 0 && have_energy && r.log) /* the last line of the log */
		rc = starnn_energy_summary_json(r.log, st.step - first_step, epochs_done, samples_done, &energy);
out:
	starnn_energy_stop(meter);
	if (ck)
		ckpt_close(ck);
	int rc2 = starnn_wait();
	run_free(&r);
	if (rc == 0 && rc2 < 0)
		rc = rc2;
	if (rc == 0 && interrupted)
		return RC_INTERRUPTED;
	return rc;
}

/* eval and predict: the model of --checkpoint on the TEST split of --data. */
static int open_for_inference(struct run *r, ckpt_file **ck)
{
	struct options *o = r->o;
	STARNN_CHECK(ckpt_open(ck, o->checkpoint));
	STARNN_CHECK(checkpoint_architecture(*ck, o->checkpoint, o));
	int64_t v;
	if (!o->given[O_SIZE]) {
		STARNN_CHECK(ckpt_get_int(*ck, "size", &v));
		o->size = (int)v;
	}
	if (!o->given[O_SEED] && ckpt_get_int(*ck, "seed", &v) == 0)
		o->seed = (uint64_t)v;
	struct ckpt_amp amp;
	STARNN_CHECK(ckpt_get_amp(*ck, &amp));
	if (!o->given[O_PRECISION])
		o->compute = amp.compute;
	STARNN_CHECK(open_data(&r->val, o, o->data, SEVIR_TEST, o->given[O_SAMPLES] ? o->samples : o->val_samples));
	if (sevir_count(r->val) == 0)
		return starnn_error(STARNN_EINVAL, "%s: no samples to evaluate", sevir_describe(r->val));
	if (check_size(o) < 0)
		return RC_USAGE;
	if (!o->given[O_BATCH])
		o->batch = sevir_count(r->val) < 8 ? sevir_count(r->val) : 8;
	STARNN_CHECK(make_model(r, *ck, 0));
	ckpt_close(*ck);
	*ck = NULL;
	return 0;
}

static int cmd_eval(struct options *o)
{
	struct run r = {.o = o};
	ckpt_file *ck = NULL;
	struct nowcast_metrics met;
	starnn_energy_meter *meter = NULL;
	struct starnn_energy_reading energy;
	int rc = open_for_inference(&r, &ck);
	if (rc == 0 && o->log_json && !(r.log = fopen(o->log_json, "w")))
		rc = starnn_error(STARNN_EIO, "cannot write the log %s: %s", o->log_json, strerror(errno));
	if (rc == 0 && !o->quiet)
		printf("evaluating %s on %s, precision %s\n", o->checkpoint, sevir_describe(r.val),
		       ckpt_precision_name((starnn_dtype)o->compute));
	if (rc == 0)
		rc = energy_start(o, &meter);
	if (rc == 0)
		rc = evaluate(r.m, r.val, &r.buf, &met);
	if (rc == 0)
		rc = starnn_energy_read_all(meter, &energy);
	if (rc == 0 && interrupted)
		rc = RC_INTERRUPTED;
	if (rc == 0) {
		metrics_print(&met, stdout);
		if (!o->quiet)
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
	if (rc == 0 && !o->quiet)
		printf("forecasting %d samples of %s with %s, precision %s\n", n, sevir_describe(r.val), o->checkpoint,
		       ckpt_precision_name((starnn_dtype)o->compute));
	size_t hw = c ? (size_t)c->size * c->size : 0;
	for (int first = 0; rc == 0 && first < n; first += c->batch) {
		if (interrupted) {
			rc = RC_INTERRUPTED;
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
			if (rc == 0 && !o->quiet)
				printf("forecasts: %s (%d x %d x %d x %d, raw VIL)\n", o->output, n, c->size, c->size,
				       c->out_frames);
		} else {
			forecast_abort(ff);
		}
	}
	if (rc == 0 && o->png && !o->quiet)
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
		if (rc < 0 && rc != RC_USAGE)
			fail("%s", starnn_error_message());
		free(o);
		return rc == RC_USAGE ? 2 : rc < 0 ? 1 : 0;
	}
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = 1;
	cfg.config_hash = starnn_launch_hash_args(argc, argv);
	rc = starnn_init(&cfg);
	if (rc < 0) {
		fail("%s", starnn_error_message());
		free(o);
		return 1;
	}
	starnn_dist_set_wire_grads(o->wire_grads);
	if (starnn_launch_size() > 1) {
		/* Rank 0 alone prints, logs and checkpoints; errors come from any rank. */
		if (o->cmd != CMD_TRAIN) {
			fail("%s runs on one rank: start it without mpirun", o->cmd == CMD_EVAL ? "eval" : "predict");
			starnn_shutdown();
			free(o);
			return 2;
		}
		if (!o->quiet)
			fprintf(stderr, "%s: %s\n", prog, starnn_launch_summary());
		if (starnn_launch_rank() > 0 && !freopen("/dev/null", "w", stdout))
			fail("rank %d: cannot silence stdout", starnn_launch_rank());
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	/* SA_RESTART: the other threads' system calls (HDF5 reads of the
	 * loader, writes of a checkpoint) go on rather than fail with EINTR */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A file over the size limit (ulimit -f) then fails its write with
	 * EFBIG, reported like a full disk, instead of killing the run with a
	 * core dump and a temporary left behind. */
	signal(SIGXFSZ, SIG_IGN);
	switch (o->cmd) {
	case CMD_TRAIN: rc = cmd_train(o); break;
	case CMD_EVAL: rc = cmd_eval(o); break;
	default: rc = cmd_predict(o); break;
	}
	if (rc < 0 && rc != RC_USAGE && rc != RC_INTERRUPTED)
		fail("%s", starnn_error_message());
	if (rc < 0 && rc != RC_INTERRUPTED)
		starnn_launch_abort(rc == RC_USAGE ? 2 : 1); /* under mpirun: the other ranks too */
	int rc2 = starnn_shutdown();
	if (rc == 0 && rc2 < 0) {
		fail("%s", starnn_error_message());
		rc = rc2;
	}
	free(o);
	if (rc == RC_INTERRUPTED) {
		fail("stopped by %s: exit status %d", signal_name(interrupted), 128 + interrupted);
		return 128 + interrupted;
	}
	return rc == RC_USAGE ? 2 : rc < 0 ? 1 : 0;
}
