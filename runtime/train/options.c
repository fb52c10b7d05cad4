/* The common options of training programs (see options.h). */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/train/options.h"
#include "codelets/kernels/wire.h"

/* ------------------------------------------------------------ messages and values */

void starnn_fail(const char *prog, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int starnn_parse_i64(const char *prog, const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		starnn_fail(prog, "%s wants an integer in [%lld, %lld], got '%s'", opt, (long long)lo, (long long)hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

int starnn_parse_int(const char *prog, const char *opt, const char *s, int lo, int hi, int *out)
{
	int64_t v;
	if (starnn_parse_i64(prog, opt, s, lo, hi, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

int starnn_parse_float(const char *prog, const char *opt, const char *s, float lo, float hi, float *out)
{
	char *end;
	errno = 0;
	float v = strtof(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		starnn_fail(prog, "%s wants a number in [%g, %g], got '%s'", opt, lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

int starnn_parse_onoff(const char *prog, const char *opt, const char *s, int *out)
{
	if (strcmp(s, "on") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "1") == 0)
		*out = 1;
	else if (strcmp(s, "off") == 0 || strcmp(s, "no") == 0 || strcmp(s, "0") == 0)
		*out = 0;
	else {
		starnn_fail(prog, "%s is on or off, not '%s'", opt, s);
		return -1;
	}
	return 0;
}

const char *starnn_optimizer_name(int optimizer)
{
	return optimizer == STARNN_TOPT_SGD ? "sgd" : "adam";
}

/* ------------------------------------------------------------ the options */

void starnn_train_opts_init(struct starnn_train_opts *o, const char *prog)
{
	memset(o, 0, sizeof *o);
	o->prog = prog;
	o->batch = 8, o->epochs = 1, o->steps = -1;
	o->optimizer = STARNN_TOPT_ADAM;
	o->lr = 1e-3f, o->momentum = 0.9f;
	o->seed = 1;
	o->compute = STARNN_FP32, o->loss_scale = -1;
	o->wire_grads = -1, o->wire_weights = -1;
	starnn_awp_defaults(&o->awp);
	o->eval_every = -1, o->log_every = 10, o->progress = -1;
}

int starnn_train_opts_given(const struct starnn_train_opts *o, int id)
{
	return id >= STARNN_TOPT_FIRST && id < STARNN_TOPT_END && o->given[id - STARNN_TOPT_FIRST];
}

static const struct option common[] = {
	{"steps", required_argument, 0, STARNN_TOPT_STEPS},
	{"epochs", required_argument, 0, STARNN_TOPT_EPOCHS},
	{"batch", required_argument, 0, STARNN_TOPT_BATCH},
	{"micro-batches", required_argument, 0, STARNN_TOPT_MICRO},
	{"optimizer", required_argument, 0, STARNN_TOPT_OPTIMIZER},
	{"lr", required_argument, 0, STARNN_TOPT_LR},
	{"warmup", required_argument, 0, STARNN_TOPT_WARMUP},
	{"momentum", required_argument, 0, STARNN_TOPT_MOMENTUM},
	{"weight-decay", required_argument, 0, STARNN_TOPT_WEIGHT_DECAY},
	{"seed", required_argument, 0, STARNN_TOPT_SEED},
	{"precision", required_argument, 0, STARNN_TOPT_PRECISION},
	{"loss-scale", required_argument, 0, STARNN_TOPT_LOSS_SCALE},
	{"wire-grads", required_argument, 0, STARNN_TOPT_WIRE_GRADS},
	{"shard-optimizer", no_argument, 0, STARNN_TOPT_SHARD},
	{"wire-weights", required_argument, 0, STARNN_TOPT_WIRE_WEIGHTS},
	{"awp-rel-res", required_argument, 0, STARNN_TOPT_AWP_REL_RES},
	{"awp-interval", required_argument, 0, STARNN_TOPT_AWP_INTERVAL},
	{"awp-start-bits", required_argument, 0, STARNN_TOPT_AWP_START_BITS},
	{"awp-stride", required_argument, 0, STARNN_TOPT_AWP_STRIDE},
	{"awp-rounding", required_argument, 0, STARNN_TOPT_AWP_ROUNDING},
	{"awp-rule", required_argument, 0, STARNN_TOPT_AWP_RULE},
	{"awp-res-factor", required_argument, 0, STARNN_TOPT_AWP_RES_FACTOR},
	{"log-json", required_argument, 0, STARNN_TOPT_LOG_JSON},
	{"log-every", required_argument, 0, STARNN_TOPT_LOG_EVERY},
	{"progress", required_argument, 0, STARNN_TOPT_PROGRESS},
	{"quiet", no_argument, 0, STARNN_TOPT_QUIET},
	{"checkpoint", required_argument, 0, STARNN_TOPT_CHECKPOINT},
	{"checkpoint-every", required_argument, 0, STARNN_TOPT_CHECKPOINT_EVERY},
	{"resume", required_argument, 0, STARNN_TOPT_RESUME},
	{"init", required_argument, 0, STARNN_TOPT_INIT},
	{"eval-every", required_argument, 0, STARNN_TOPT_EVAL_EVERY},
	{"cpu-watts", required_argument, 0, STARNN_TOPT_CPU_WATTS},
	{"gpu-watts", required_argument, 0, STARNN_TOPT_GPU_WATTS},
	{"idle-watts", required_argument, 0, STARNN_TOPT_IDLE_WATTS},
	{"master", required_argument, 0, STARNN_TOPT_MASTER},
};
_Static_assert(sizeof common / sizeof *common == STARNN_TOPT_COUNT, "one entry per common option");

size_t starnn_train_longopts(struct option *table, size_t n, uint64_t skip)
{
	for (size_t i = 0; i < sizeof common / sizeof *common; i++)
		if (!(skip & STARNN_TOPT_BIT(common[i].val)))
			table[n++] = common[i];
	table[n] = (struct option){0, 0, 0, 0};
	return n;
}

static int parse_precision(const char *prog, const char *arg, int *compute)
{
	if (strcmp(arg, "fp32") == 0)
		*compute = STARNN_FP32;
	else if (strcmp(arg, "amp-fp16") == 0)
		*compute = STARNN_FP16;
	else if (strcmp(arg, "amp-bf16") == 0)
		*compute = STARNN_BF16;
	else {
		starnn_fail(prog, "--precision is fp32, amp-fp16 or amp-bf16, not '%s'", arg);
		return -1;
	}
	return 0;
}

static int parse_loss_scale(struct starnn_train_opts *o, const char *arg)
{
	if (strcmp(arg, "dynamic") == 0) {
		o->loss_scale = 1;
	} else if (strcmp(arg, "none") == 0) {
		o->loss_scale = 0;
	} else {
		o->loss_scale = 2;
		if (starnn_parse_float(o->prog, "--loss-scale", arg, 1.0f, 16777216.0f, &o->static_scale) < 0) {
			starnn_fail(o->prog, "--loss-scale is dynamic, none or a number in [1, 2^24]");
			return -1;
		}
	}
	return 0;
}

/* An option whose parser reports through starnn_error. */
static int said(const struct starnn_train_opts *o, int rc)
{
	if (rc)
		starnn_fail(o->prog, "%s", starnn_error_message());
	return rc ? -1 : 0;
}

int starnn_train_opts_parse(struct starnn_train_opts *o, int id, const char *arg)
{
	if (id < STARNN_TOPT_FIRST || id >= STARNN_TOPT_END)
		return 1;
	o->given[id - STARNN_TOPT_FIRST] = 1;
	const char *prog = o->prog;
	int64_t v64 = 0;
	switch ((enum starnn_topt)id) {
	case STARNN_TOPT_STEPS: return starnn_parse_i64(prog, "--steps", arg, 0, INT64_C(1) << 40, &o->steps);
	case STARNN_TOPT_EPOCHS: return starnn_parse_int(prog, "--epochs", arg, 1, 1000000, &o->epochs);
	case STARNN_TOPT_BATCH: return starnn_parse_int(prog, "--batch", arg, 1, 65536, &o->batch);
	case STARNN_TOPT_MICRO: return starnn_parse_int(prog, "--micro-batches", arg, 1, 64, &o->micro);
	case STARNN_TOPT_OPTIMIZER:
		if (strcmp(arg, "adam") == 0)
			o->optimizer = STARNN_TOPT_ADAM;
		else if (strcmp(arg, "sgd") == 0)
			o->optimizer = STARNN_TOPT_SGD;
		else {
			starnn_fail(prog, "--optimizer is adam or sgd, not '%s'", arg);
			return -1;
		}
		return 0;
	case STARNN_TOPT_LR: return starnn_parse_float(prog, "--lr", arg, 0.0f, 10.0f, &o->lr);
	case STARNN_TOPT_WARMUP: return starnn_parse_int(prog, "--warmup", arg, 0, 1000000000, &o->warmup);
	case STARNN_TOPT_MOMENTUM: return starnn_parse_float(prog, "--momentum", arg, 0.0f, 0.9999f, &o->momentum);
	case STARNN_TOPT_WEIGHT_DECAY:
		return starnn_parse_float(prog, "--weight-decay", arg, 0.0f, 1.0f, &o->weight_decay);
	case STARNN_TOPT_SEED:
		if (starnn_parse_i64(prog, "--seed", arg, 0, INT64_MAX, &v64) < 0)
			return -1;
		o->seed = (uint64_t)v64;
		return 0;
	case STARNN_TOPT_PRECISION: return parse_precision(prog, arg, &o->compute);
	case STARNN_TOPT_LOSS_SCALE: return parse_loss_scale(o, arg);
	case STARNN_TOPT_WIRE_GRADS: return said(o, starnn_wire_option("--wire-grads", arg, &o->wire_grads));
	case STARNN_TOPT_SHARD: o->shard = 1; return 0;
	case STARNN_TOPT_WIRE_WEIGHTS: return said(o, starnn_awp_wire_option("--wire-weights", arg, &o->wire_weights));
	case STARNN_TOPT_AWP_REL_RES:
	case STARNN_TOPT_AWP_INTERVAL:
	case STARNN_TOPT_AWP_START_BITS:
	case STARNN_TOPT_AWP_STRIDE:
	case STARNN_TOPT_AWP_ROUNDING:
	case STARNN_TOPT_AWP_RULE:
	case STARNN_TOPT_AWP_RES_FACTOR:
		return said(o, starnn_awp_option(starnn_awp_options[id - STARNN_TOPT_AWP_REL_RES], arg, &o->awp));
	case STARNN_TOPT_LOG_JSON: o->log_json = arg; return 0;
	case STARNN_TOPT_LOG_EVERY: return starnn_parse_int(prog, "--log-every", arg, 1, 1000000000, &o->log_every);
	case STARNN_TOPT_PROGRESS: return starnn_parse_onoff(prog, "--progress", arg, &o->progress);
	case STARNN_TOPT_QUIET: o->quiet = 1; return 0;
	case STARNN_TOPT_CHECKPOINT: o->checkpoint = arg; return 0;
	case STARNN_TOPT_CHECKPOINT_EVERY:
		return starnn_parse_i64(prog, "--checkpoint-every", arg, 1, INT64_MAX, &o->checkpoint_every);
	case STARNN_TOPT_RESUME: o->resume = arg; return 0;
	case STARNN_TOPT_INIT: o->init = arg; return 0;
	case STARNN_TOPT_EVAL_EVERY: return starnn_parse_i64(prog, "--eval-every", arg, 0, INT64_MAX, &o->eval_every);
	case STARNN_TOPT_CPU_WATTS: return starnn_parse_float(prog, "--cpu-watts", arg, 0.0f, 100000.0f, &o->cpu_watts);
	case STARNN_TOPT_GPU_WATTS: return starnn_parse_float(prog, "--gpu-watts", arg, 0.0f, 100000.0f, &o->gpu_watts);
	case STARNN_TOPT_IDLE_WATTS:
		return starnn_parse_float(prog, "--idle-watts", arg, 0.0f, 100000.0f, &o->idle_watts);
	case STARNN_TOPT_MASTER:
		if (strcmp(arg, "host") == 0)
			o->master_host = 1;
		else if (strcmp(arg, "auto") == 0)
			o->master_host = 0;
		else {
			starnn_fail(prog,
			            "--master is host (fp32 masters and their update on the host, weights sent to the "
			            "devices) or auto (the update where StarPU places it), not '%s'",
			            arg);
			return -1;
		}
		return 0;
	case STARNN_TOPT_END: break;
	}
	return 1;
}

int starnn_train_opts_finish_loss_scale(struct starnn_train_opts *o)
{
	if (o->loss_scale < 0)
		o->loss_scale = o->compute == STARNN_FP16;
	if (o->inject_inf_step && !o->loss_scale) {
		starnn_fail(o->prog, "%s needs loss scaling (--loss-scale dynamic or N)",
		            o->inject_name ? o->inject_name : "the injected Inf");
		return -1;
	}
	return 0;
}

int starnn_train_opts_check(struct starnn_train_opts *o, int training)
{
	/* A resumed run takes its precision and loss scaling from the
	 * checkpoint (the trainer finishes them then). */
	if (!(training && o->resume) && starnn_train_opts_finish_loss_scale(o) < 0)
		return -1;
	if (o->master_host && o->shard) {
		starnn_fail(o->prog, "--master host and --shard-optimizer exclude each other: --master host keeps "
		                     "every master on this process's host, --shard-optimizer spreads them over the ranks");
		return -1;
	}
	if (o->wire_weights != -1 && !o->shard && !o->master_host) {
		starnn_fail(o->prog, "--wire-weights needs --shard-optimizer or --master host: weights cross the rank edge "
		                     "only when each rank updates its own share of them, the device edge only when the "
		                     "masters stay on the host");
		return -1;
	}
	for (int id = STARNN_TOPT_AWP_REL_RES; id <= STARNN_TOPT_AWP_RES_FACTOR; id++)
		if (starnn_train_opts_given(o, id) && o->wire_weights != STARNN_WIRE_ADAPTIVE) {
			starnn_fail(o->prog, "the --awp-* options set the adaptive policy: they need --wire-weights awp");
			return -1;
		}
	if (starnn_awp_check(&o->awp) < 0) {
		starnn_fail(o->prog, "%s", starnn_error_message());
		return -1;
	}
	if (o->resume && o->init) {
		starnn_fail(o->prog, "--resume and --init exclude each other (--resume continues a run, --init starts one "
		                     "from weights)");
		return -1;
	}
	if (starnn_train_opts_given(o, STARNN_TOPT_MICRO) && starnn_train_opts_given(o, STARNN_TOPT_BATCH) &&
	    o->micro > o->batch) {
		starnn_fail(o->prog, "--micro-batches (%d) cannot exceed --batch (%d)", o->micro, o->batch);
		return -1;
	}
	return 0;
}
