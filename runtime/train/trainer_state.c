/* A training run in a checkpoint (runtime/train/checkpoint.h): what the
 * trainer writes besides the model's own attributes, and reads back for
 * --resume and --init.
 *
 * Datasets: the model's tensors (its state callback, or the parameters'
 * masters under their names), then the optimizer state,
 * "optimizer/<parameter>/<slot>" (Adam: exp_avg, exp_avg_sq; SGD:
 * momentum_buffer). Root attributes of the run: parameters (the count),
 * batch (global), micro_batches, step, epoch (completed), total_steps,
 * optimizer, lr, warmup, momentum, weight_decay, beta1, beta2, eps, seed;
 * with --shard-optimizer shard_optimizer and wire_weights; with --master
 * host master ("host") and wire_weights; with
 * --wire-weights awp its settings (awp_rel_res, awp_interval,
 * awp_start_bits, awp_stride, awp_rounding, awp_rule, awp_res_factor: a
 * checkpoint without the last two used the paper's rule) and each parameter's state
 * (awp_state); the precision and the loss-scale state (ckpt_amp_attrs). */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/amp.h"
#include "runtime/core/launch.h"
#include "runtime/train/dist.h"
#include "runtime/train/trainer_internal.h"

#define MAX_ATTRS 80

/* ------------------------------------------------------------ settings */

int starnn_ckpt_setting_int(const struct starnn_train_opts *o, ckpt_file *f, const char *file, const char *attr,
                            int given, int *value)
{
	int64_t v;
	STARNN_CHECK(ckpt_get_int(f, attr, &v));
	if (!given)
		*value = (int)v;
	else if (v != *value && !o->quiet)
		fprintf(stderr, "%s: note: %s %lld in %s, %d now: not the run an uninterrupted one would be\n", o->prog,
		        attr, (long long)v, file, *value);
	return 0;
}

int starnn_ckpt_setting_float(const struct starnn_train_opts *o, ckpt_file *f, const char *file, const char *attr,
                              int given, float *value)
{
	double d;
	STARNN_CHECK(ckpt_get_double(f, attr, &d));
	if (!given)
		*value = (float)d;
	else if ((float)d != *value && !o->quiet)
		fprintf(stderr, "%s: note: %s %g in %s, %g now: not the run an uninterrupted one would be\n", o->prog, attr,
		        d, file, (double)*value);
	return 0;
}

/* ------------------------------------------------------------ reading */

/* The weights' wire settings and the adaptive state: the checkpoint's
 * unless given. */
static int read_exchange(starnn_trainer *tr, ckpt_file *f, const char *file)
{
	struct starnn_train_opts *o = tr->o;
	int64_t v;
	char s[64];
	if (!starnn_train_opts_given(o, STARNN_TOPT_SHARD) && ckpt_has_attr(f, "shard_optimizer")) {
		STARNN_CHECK(ckpt_get_int(f, "shard_optimizer", &v));
		o->shard = v != 0;
	}
	if (!starnn_train_opts_given(o, STARNN_TOPT_MASTER) && ckpt_has_attr(f, "master")) {
		STARNN_CHECK(ckpt_get_string(f, "master", s, sizeof s));
		if (strcmp(s, "host") != 0)
			return starnn_error(STARNN_EINVAL, "%s: attribute master '%s' is not 'host'", file, s);
		o->master_host = 1;
	}
	if (!starnn_train_opts_given(o, STARNN_TOPT_WIRE_WEIGHTS) && ckpt_has_attr(f, "wire_weights")) {
		STARNN_CHECK(ckpt_get_string(f, "wire_weights", s, sizeof s));
		if (starnn_awp_wire_option("wire_weights", s, &o->wire_weights) < 0)
			return starnn_error(STARNN_EINVAL, "%s: attribute wire_weights '%s' is not a wire format", file, s);
	}
	if (o->wire_weights != STARNN_WIRE_ADAPTIVE || !ckpt_has_attr(f, "awp_state"))
		return 0;
	static const struct {
		const char *attr, *opt;
		int id;
	} awp[] = {{"awp_rel_res", "--awp-rel-res", STARNN_TOPT_AWP_REL_RES},
	           {"awp_interval", "--awp-interval", STARNN_TOPT_AWP_INTERVAL},
	           {"awp_start_bits", "--awp-start-bits", STARNN_TOPT_AWP_START_BITS},
	           {"awp_stride", "--awp-stride", STARNN_TOPT_AWP_STRIDE},
	           {"awp_rounding", "--awp-rounding", STARNN_TOPT_AWP_ROUNDING},
	           {"awp_rule", "--awp-rule", STARNN_TOPT_AWP_RULE},
	           {"awp_res_factor", "--awp-res-factor", STARNN_TOPT_AWP_RES_FACTOR}};
	for (size_t i = 0; i < sizeof awp / sizeof *awp; i++) {
		if (starnn_train_opts_given(o, awp[i].id))
			continue;
		/* (the rule came later: a checkpoint without it used the paper's) */
		if ((awp[i].id == STARNN_TOPT_AWP_RULE || awp[i].id == STARNN_TOPT_AWP_RES_FACTOR) &&
		    !ckpt_has_attr(f, awp[i].attr))
			continue;
		char text[64];
		if (awp[i].id == STARNN_TOPT_AWP_REL_RES || awp[i].id == STARNN_TOPT_AWP_RES_FACTOR) {
			double d;
			STARNN_CHECK(ckpt_get_double(f, awp[i].attr, &d));
			snprintf(text, sizeof text, "%.17g", d);
		} else if (awp[i].id == STARNN_TOPT_AWP_ROUNDING || awp[i].id == STARNN_TOPT_AWP_RULE) {
			STARNN_CHECK(ckpt_get_string(f, awp[i].attr, text, sizeof text));
		} else {
			STARNN_CHECK(ckpt_get_int(f, awp[i].attr, &v));
			snprintf(text, sizeof text, "%lld", (long long)v);
		}
		STARNN_CHECK(starnn_awp_option(awp[i].opt, text, &o->awp));
	}
	STARNN_CHECK(starnn_awp_check(&o->awp));
	enum { STATE_MAX = 1 << 16 };
	free(tr->awp_state);
	if (!(tr->awp_state = malloc(STATE_MAX)))
		return starnn_error(STARNN_ENOMEM, "out of memory");
	STARNN_CHECK(ckpt_get_string(f, "awp_state", tr->awp_state, STATE_MAX));
	o->awp_state = tr->awp_state;
	return 0;
}

/* Precision and loss scaling: the checkpoint's unless given; the loss
 * scaling of another precision is that precision's default. */
static int read_precision(starnn_trainer *tr, ckpt_file *f)
{
	struct starnn_train_opts *o = tr->o;
	STARNN_CHECK(ckpt_get_amp(f, &tr->amp));
	if (!starnn_train_opts_given(o, STARNN_TOPT_PRECISION))
		o->compute = tr->amp.compute;
	if (o->loss_scale < 0 && o->compute == (int)tr->amp.compute) {
		o->loss_scale = tr->amp.loss_scaling;
		if (tr->amp.loss_scaling == CKPT_SCALING_STATIC)
			o->static_scale = (float)tr->amp.scale;
	}
	return 0;
}

int starnn_trainer_read_state(starnn_trainer *tr, ckpt_file *f, const char *file)
{
	struct starnn_train_opts *o = tr->o;
	int64_t v;
	char s[64];
	STARNN_CHECK(ckpt_get_int(f, "step", &tr->info.step));
	tr->info.first_step = tr->info.step;
	STARNN_CHECK(ckpt_get_int(f, "epoch", &tr->epoch));
	/* Without --steps / --epochs, the run continues to the length it was
	 * given. */
	STARNN_CHECK(ckpt_get_int(f, "total_steps", &v));
	if (!starnn_train_opts_given(o, STARNN_TOPT_STEPS) && !starnn_train_opts_given(o, STARNN_TOPT_EPOCHS))
		o->steps = v;
	STARNN_CHECK(ckpt_get_string(f, "optimizer", s, sizeof s));
	int k = strcmp(s, "sgd") == 0 ? STARNN_TOPT_SGD : STARNN_TOPT_ADAM;
	if (starnn_train_opts_given(o, STARNN_TOPT_OPTIMIZER) && k != o->optimizer)
		return starnn_error(STARNN_EINVAL, "%s was trained with --optimizer %s: it cannot resume with %s", file, s,
		                    starnn_optimizer_name(o->optimizer));
	o->optimizer = k;
	const struct {
		const char *attr;
		int id;
		int *i;
		float *f;
	} settings[] = {
		{"batch", STARNN_TOPT_BATCH, &o->batch, NULL},
		{"micro_batches", STARNN_TOPT_MICRO, &o->micro, NULL},
		{"warmup", STARNN_TOPT_WARMUP, &o->warmup, NULL},
		{"lr", STARNN_TOPT_LR, NULL, &o->lr},
		{"momentum", STARNN_TOPT_MOMENTUM, NULL, &o->momentum},
		{"weight_decay", STARNN_TOPT_WEIGHT_DECAY, NULL, &o->weight_decay},
	};
	for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
		int given = starnn_train_opts_given(o, settings[i].id);
		if (settings[i].i)
			STARNN_CHECK(starnn_ckpt_setting_int(o, f, file, settings[i].attr, given, settings[i].i));
		else
			STARNN_CHECK(starnn_ckpt_setting_float(o, f, file, settings[i].attr, given, settings[i].f));
	}
	STARNN_CHECK(ckpt_get_int(f, "seed", &v));
	if (!starnn_train_opts_given(o, STARNN_TOPT_SEED))
		o->seed = (uint64_t)v;
	STARNN_CHECK(read_exchange(tr, f, file));
	return read_precision(tr, f);
}

static void scaling_name(char *buf, size_t size, int loss_scale, double static_scale)
{
	if (loss_scale == CKPT_SCALING_STATIC)
		snprintf(buf, size, "static loss scale %g", static_scale);
	else
		snprintf(buf, size, "%s loss scaling", loss_scale == CKPT_SCALING_DYNAMIC ? "dynamic" : "no");
}

/* The checkpoint's loss-scale state goes on unchanged when the run keeps
 * its precision and loss scaling, and then the run equals an
 * uninterrupted one bit for bit. Another precision or loss scaling is
 * allowed (weights and optimizer state are fp32 in every precision), with
 * a note: the step counters carry over (Adam's bias correction goes on),
 * the scale starts afresh (2^16, or the static N). From a checkpoint
 * without loss scaling every step counts as applied. */
int starnn_trainer_resume_precision(starnn_trainer *tr, const char *file)
{
	const struct starnn_train_opts *o = tr->o;
	const struct ckpt_amp *ck = &tr->amp;
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
		        o->prog, file, ckpt_precision_name(ck->compute), was, ckpt_precision_name((starnn_dtype)o->compute),
		        now_, o->loss_scale && !same_scaling ? ", the loss scale starts afresh" : "");
	}
	if (!o->loss_scale)
		return 0;
	float start = o->loss_scale == CKPT_SCALING_STATIC ? o->static_scale : STARNN_AMP_INIT_SCALE;
	struct starnn_amp_state s = {start, 0, 0, tr->info.step};
	if (ck->loss_scaling != CKPT_SCALING_NONE)
		s.skipped_steps = ck->skipped_steps, s.applied_steps = ck->applied_steps;
	if (same_scaling)
		s.scale = (float)ck->scale, s.good_steps = ck->good_steps;
	return starnn_params_set_amp_state(tr->ps, &s);
}

/* ------------------------------------------------------------ tensors */

/* The datasets of the run: the model's tensors, then (with_optimizer) the
 * optimizer state of every parameter, as it is now (a parameter another
 * rank updates has state only around a checkpoint). */
struct entries {
	struct ckpt_entry *e;
	char (*paths)[STARNN_PARAM_NAME_MAX + 32];
	int n;
};

static void entries_free(struct entries *es)
{
	free(es->e);
	free(es->paths);
}

static int entries_make(starnn_trainer *tr, int with_optimizer, struct entries *es)
{
	starnn_params *ps = tr->ps;
	const struct ckpt_entry *model = NULL;
	int nmodel = 0, np = starnn_params_count(ps), ns = with_optimizer ? starnn_params_nslots(ps) : 0;
	if (tr->ops->state)
		STARNN_CHECK(tr->ops->state(tr->self, &model, &nmodel));
	else
		nmodel = np;
	es->n = nmodel + np * ns;
	es->e = calloc((size_t)(es->n > 0 ? es->n : 1), sizeof *es->e);
	es->paths = calloc((size_t)(np * ns > 0 ? np * ns : 1), sizeof *es->paths);
	if (!es->e || !es->paths) {
		entries_free(es);
		es->e = NULL, es->paths = NULL, es->n = 0;
		return starnn_error(STARNN_ENOMEM, "out of memory");
	}
	for (int i = 0; i < nmodel; i++)
		es->e[i] = model ? model[i]
		                 : (struct ckpt_entry){starnn_params_at(ps, i)->name, starnn_params_at(ps, i)->master};
	for (int i = 0; i < np; i++)
		for (int k = 0; k < ns; k++) {
			starnn_param *p = starnn_params_at(ps, i);
			char *path = es->paths[i * ns + k];
			snprintf(path, sizeof *es->paths, "optimizer/%s/%s", p->name, starnn_params_slot_name(ps, k));
			es->e[nmodel + i * ns + k] = (struct ckpt_entry){path, p->state[k]};
		}
	return 0;
}

int starnn_trainer_load(starnn_trainer *tr, ckpt_file *f, int with_optimizer)
{
	struct entries es;
	STARNN_CHECK(entries_make(tr, with_optimizer, &es));
	int rc = 0;
	for (int i = 0; i < es.n && rc == 0; i++)
		rc = ckpt_read_tensor(f, es.e[i].path, es.e[i].tensor);
	entries_free(&es);
	return rc;
}

int starnn_trainer_broadcast(starnn_trainer *tr, int with_optimizer)
{
	if (!starnn_launch_mpi()) /* rank 0's model on every rank */
		return 0;
	struct entries es;
	STARNN_CHECK(entries_make(tr, with_optimizer, &es));
	int rc = 0;
	for (int i = 0; i < es.n && rc == 0; i++)
		rc = starnn_dist_broadcast(es.e[i].tensor);
	entries_free(&es);
	return rc;
}

/* ------------------------------------------------------------ writing */

static const char *wire_weights_name(int wire)
{
	return wire == STARNN_WIRE_ADAPTIVE ? "awp" : wire < 0 ? "none" : starnn_wire_name((starnn_wire_format)wire);
}

/* The run's attributes after the model's a[0..n): returns the new count
 * (*awp_state: malloc'ed text to free after the write). */
static int run_attrs(starnn_trainer *tr, struct ckpt_attr *a, int n, char **awp_state)
{
	const struct starnn_train_opts *o = tr->o;
	const struct starnn_optim *opt = &starnn_params_get_config(tr->ps)->optim;
	const struct ckpt_attr run[] = {
		{.name = "parameters", .type = CKPT_INT, .i = starnn_params_numel(tr->ps)},
		{.name = "batch", .type = CKPT_INT, .i = o->batch},
		{.name = "micro_batches", .type = CKPT_INT, .i = o->micro},
		{.name = "step", .type = CKPT_INT, .i = tr->info.step},
		{.name = "epoch", .type = CKPT_INT, .i = tr->epoch},
		{.name = "total_steps", .type = CKPT_INT, .i = tr->info.total},
		{.name = "optimizer", .type = CKPT_STRING, .s = opt->kind == STARNN_OPTIM_SGD ? "sgd" : "adam"},
		{.name = "lr", .type = CKPT_DOUBLE, .d = opt->lr},
		{.name = "warmup", .type = CKPT_INT, .i = opt->warmup},
		{.name = "momentum", .type = CKPT_DOUBLE, .d = opt->momentum},
		{.name = "weight_decay", .type = CKPT_DOUBLE, .d = opt->weight_decay},
		{.name = "beta1", .type = CKPT_DOUBLE, .d = opt->beta1},
		{.name = "beta2", .type = CKPT_DOUBLE, .d = opt->beta2},
		{.name = "eps", .type = CKPT_DOUBLE, .d = opt->eps},
		{.name = "seed", .type = CKPT_INT, .i = (int64_t)o->seed},
	};
	if (n + (int)(sizeof run / sizeof *run) + 12 + CKPT_AMP_MAX_ATTRS > MAX_ATTRS)
		return starnn_error(STARNN_EINVAL, "checkpoint: too many attributes for the table");
	for (size_t i = 0; i < sizeof run / sizeof *run; i++)
		a[n++] = run[i];
	if (o->shard) {
		a[n++] = (struct ckpt_attr){.name = "shard_optimizer", .type = CKPT_INT, .i = 1};
		a[n++] = (struct ckpt_attr){.name = "wire_weights", .type = CKPT_STRING, .s = wire_weights_name(o->wire_weights)};
	}
	if (o->master_host) {
		a[n++] = (struct ckpt_attr){.name = "master", .type = CKPT_STRING, .s = "host"};
		a[n++] = (struct ckpt_attr){.name = "wire_weights", .type = CKPT_STRING, .s = wire_weights_name(o->wire_weights)};
	}
	if (o->wire_weights == STARNN_WIRE_ADAPTIVE) {
		if (o->master_host)
			STARNN_CHECK(starnn_params_edge_awp_state(tr->ps, awp_state));
		else
			STARNN_CHECK(starnn_dist_weights_state(awp_state));
		a[n++] = (struct ckpt_attr){.name = "awp_state", .type = CKPT_STRING, .s = *awp_state};
		a[n++] = (struct ckpt_attr){.name = "awp_rel_res", .type = CKPT_DOUBLE, .d = o->awp.rel_res};
		a[n++] = (struct ckpt_attr){.name = "awp_interval", .type = CKPT_INT, .i = o->awp.interval};
		a[n++] = (struct ckpt_attr){.name = "awp_start_bits", .type = CKPT_INT, .i = o->awp.start_bits};
		a[n++] = (struct ckpt_attr){.name = "awp_stride", .type = CKPT_INT, .i = o->awp.stride};
		a[n++] = (struct ckpt_attr){.name = "awp_rounding", .type = CKPT_STRING,
		                            .s = o->awp.family == STARNN_WIRE_LADDER_RNE ? "rne" : "trunc"};
		a[n++] = (struct ckpt_attr){.name = "awp_rule", .type = CKPT_STRING,
		                            .s = o->awp.rule == STARNN_AWP_RULE_RESOLUTION ? "resolution" : "paper"};
		a[n++] = (struct ckpt_attr){.name = "awp_res_factor", .type = CKPT_DOUBLE, .d = o->awp.res_factor};
	}
	const struct starnn_params_config *pc = starnn_params_get_config(tr->ps);
	struct ckpt_amp amp = {.compute = pc->compute, .loss_scaling = (int)pc->loss_scaling};
	if (pc->loss_scaling != STARNN_LOSS_SCALE_NONE) {
		struct starnn_amp_state s;
		STARNN_CHECK(starnn_params_get_amp_state(tr->ps, &s));
		amp.scale = s.scale;
		amp.good_steps = s.good_steps, amp.skipped_steps = s.skipped_steps, amp.applied_steps = s.applied_steps;
	}
	int namp;
	STARNN_CHECK(ckpt_amp_attrs(&amp, a + n, &namp));
	return n + namp;
}

static int write_file(starnn_trainer *tr, const char *file)
{
	struct ckpt_attr a[MAX_ATTRS];
	int n = tr->ops->checkpoint_attrs ? tr->ops->checkpoint_attrs(tr->self, a, MAX_ATTRS / 2) : 0;
	STARNN_CHECK(n);
	char *awp_state = NULL;
	int rc = run_attrs(tr, a, n, &awp_state);
	struct entries es = {NULL, NULL, 0};
	if (rc >= 0) {
		n = rc;
		rc = entries_make(tr, 1, &es);
	}
	if (rc >= 0)
		rc = ckpt_write(file, es.e, es.n, a, n);
	entries_free(&es);
	free(awp_state);
	return rc < 0 ? rc : 0;
}

int starnn_trainer_write(starnn_trainer *tr, const char *file)
{
	STARNN_CHECK(starnn_dist_checkpoint_begin(tr->ps)); /* rank 0 gets the owners' exact masters and state */
	int rc = starnn_launch_rank() > 0 ? 0 : write_file(tr, file);
	int rc2 = starnn_dist_checkpoint_end(tr->ps);
	return rc < 0 ? rc : rc2;
}
