/* Trainable parameters: gradient slices and their reduction, compute
 * copies, optimizer state and update, loss scaling (see params.h). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/adam.h"
#include "codelets/amp.h"
#include "codelets/axpy.h"
#include "codelets/convert.h"
#include "codelets/fill.h"
#include "codelets/sgd.h"
#include "runtime/train/params.h"
#include "runtime/core/submit.h"

struct starnn_params {
	struct starnn_params_config cfg;
	starnn_param **params;           /* each allocated once: pointers stay valid */
	int nparams;
	int64_t numel;
	starnn_tensor *state, *flag;     /* loss scaling (codelets/amp.h), or NULL */
	struct starnn_amp_policy policy;
	starnn_grad_hook hook;
	void *hook_ctx;
	struct starnn_params_hooks hooks;
	void *hooks_ctx;
	int64_t inject_inf_step;
};

void starnn_optim_defaults(struct starnn_optim *o)
{
	*o = (struct starnn_optim){.kind = STARNN_OPTIM_ADAM, .lr = 1e-3f, .warmup = 0, .momentum = 0.0f,
	                           .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f};
}

static int check_config(const struct starnn_params_config *c)
{
	const struct starnn_optim *o = &c->optim;
	if (o->kind != STARNN_OPTIM_ADAM && o->kind != STARNN_OPTIM_SGD)
		return starnn_error(STARNN_EINVAL, "params: unknown optimizer %d", (int)o->kind);
	if (!(o->lr >= 0) || o->warmup < 0 || !(o->momentum >= 0 && o->momentum < 1) || !(o->weight_decay >= 0) ||
	    !(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps >= 0))
		return starnn_error(STARNN_EINVAL,
		                    "params: bad optimizer settings (lr %g, warmup %d, momentum %g, betas %g %g, eps %g, "
		                    "weight decay %g)",
		                    (double)o->lr, o->warmup, (double)o->momentum, (double)o->beta1, (double)o->beta2,
		                    (double)o->eps, (double)o->weight_decay);
	if (c->compute != STARNN_FP32 && c->compute != STARNN_FP16 && c->compute != STARNN_BF16)
		return starnn_error(STARNN_EINVAL, "params: unknown compute dtype %d", (int)c->compute);
	if (c->loss_scaling < STARNN_LOSS_SCALE_NONE || c->loss_scaling > STARNN_LOSS_SCALE_STATIC ||
	    (c->loss_scaling == STARNN_LOSS_SCALE_STATIC && !(c->static_scale > 0 && isfinite(c->static_scale))))
		return starnn_error(STARNN_EINVAL, "params: bad loss scaling (%d, static scale %g)", (int)c->loss_scaling,
		                    (double)c->static_scale);
	return 0;
}

int starnn_params_new(starnn_params **out, const struct starnn_params_config *cfg)
{
	*out = NULL;
	if (!cfg)
		return starnn_error(STARNN_EINVAL, "params: no configuration");
	STARNN_CHECK(check_config(cfg));
	starnn_params *ps = calloc(1, sizeof *ps);
	if (!ps)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	ps->cfg = *cfg;
	if (cfg->loss_scaling != STARNN_LOSS_SCALE_NONE) {
		int64_t len = STARNN_AMP_STATE_LEN, one = 1;
		int rc = starnn_tensor_create(&ps->state, "loss_scale", STARNN_FP32, 1, &len);
		if (rc == 0)
			rc = starnn_tensor_create(&ps->flag, "overflow", STARNN_FP32, 1, &one);
		if (rc == 0)
			rc = starnn_amp_state_init(ps->state, cfg->loss_scaling == STARNN_LOSS_SCALE_DYNAMIC
			                                              ? STARNN_AMP_INIT_SCALE
			                                              : cfg->static_scale);
		if (rc < 0) {
			starnn_params_destroy(ps);
			return rc;
		}
		ps->state->priority = ps->flag->priority = STARNN_PRIO_PARAM; /* the step's update writes them */
		starnn_amp_policy_default(&ps->policy);
		ps->policy.dynamic = cfg->loss_scaling == STARNN_LOSS_SCALE_DYNAMIC;
	}
	*out = ps;
	return 0;
}

static void param_free(starnn_param *p)
{
	if (p->compute && p->compute != p->master)
		starnn_tensor_destroy(p->compute);
	if (!(p->flags & STARNN_PARAM_BORROWED))
		starnn_tensor_destroy(p->master);
	for (int i = 0; i < p->nslices && p->grad; i++)
		starnn_tensor_destroy(p->grad[i]);
	free(p->grad);
	starnn_tensor_destroy(p->state[0]);
	starnn_tensor_destroy(p->state[1]);
	starnn_tensor_destroy(p->exact);
	free(p);
}

void starnn_params_destroy(starnn_params *ps)
{
	if (!ps)
		return;
	for (int i = 0; i < ps->nparams; i++)
		param_free(ps->params[i]);
	free(ps->params);
	starnn_tensor_destroy(ps->state);
	starnn_tensor_destroy(ps->flag);
	free(ps);
}

/* StarPU names: the name with '.' for '/', shortened to fit. */
static void tensor_name(char *buf, size_t size, const char *name, const char *suffix)
{
	snprintf(buf, size, "%.40s%s%s", name, *suffix ? "." : "", suffix);
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '.';
}

/* A tensor shaped like `like`; param_side: written by the parameters'
 * tasks (gradients, optimizer state), which then run at STARNN_PRIO_PARAM
 * (runtime/core/submit.h). */
static int make_like(starnn_tensor **t, const starnn_tensor *like, starnn_dtype dt, const char *name,
                     const char *suffix, int param_side)
{
	char buf[STARNN_NAME_MAX];
	tensor_name(buf, sizeof buf, name, suffix);
	STARNN_CHECK(starnn_tensor_create(t, buf, dt, like->ndim, like->shape));
	(*t)->priority = param_side ? STARNN_PRIO_PARAM : 0;
	return 0;
}

/* The tensors of p besides its master. */
static int param_tensors(starnn_params *ps, starnn_param *p)
{
	char suffix[16];
	p->grad = calloc((size_t)p->nslices, sizeof *p->grad);
	if (!p->grad)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	if ((p->flags & STARNN_PARAM_COMPUTE_COPY) && ps->cfg.compute != STARNN_FP32)
		STARNN_CHECK(make_like(&p->compute, p->master, ps->cfg.compute, p->name, "h", 0));
	else
		p->compute = p->master;
	for (int i = 0; i < p->nslices; i++) {
		snprintf(suffix, sizeof suffix, "grad%d", i);
		STARNN_CHECK(make_like(&p->grad[i], p->master, STARNN_FP32, p->name, suffix, 1));
	}
	return starnn_params_make_state(ps, p);
}

int starnn_params_make_state(starnn_params *ps, starnn_param *p)
{
	if (p->state[0])
		return 0;
	int adam = ps->cfg.optim.kind == STARNN_OPTIM_ADAM;
	STARNN_CHECK(make_like(&p->state[0], p->master, STARNN_FP32, p->name, adam ? "exp_avg" : "momentum", 1));
	if (adam)
		STARNN_CHECK(make_like(&p->state[1], p->master, STARNN_FP32, p->name, "exp_avg_sq", 1));
	return 0;
}

void starnn_params_drop_state(starnn_params *ps, starnn_param *p)
{
	(void)ps;
	for (int k = 0; k < 2; k++) {
		starnn_tensor_destroy(p->state[k]);
		p->state[k] = NULL;
	}
}

int starnn_params_add(starnn_params *ps, const char *name, starnn_tensor *master, int nslices, int flags,
                      starnn_param **out)
{
	if (out)
		*out = NULL;
	if (!ps || !name || !master)
		return starnn_error(STARNN_EINVAL, "params_add: no set, name or tensor");
	if (strlen(name) == 0 || strlen(name) >= STARNN_PARAM_NAME_MAX)
		return starnn_error(STARNN_EINVAL, "params_add: a name of 1..%d characters, got '%s'",
		                    STARNN_PARAM_NAME_MAX - 1, name);
	if (master->dtype != STARNN_FP32 || master->parent)
		return starnn_error(STARNN_EINVAL, "params_add: %s: the master must be a whole fp32 tensor", name);
	if (nslices < 1)
		return starnn_error(STARNN_EINVAL, "params_add: %s: at least one gradient slice, got %d", name, nslices);
	if (flags & ~(STARNN_PARAM_COMPUTE_COPY | STARNN_PARAM_BORROWED | STARNN_PARAM_REPLICA_SUMMED))
		return starnn_error(STARNN_EINVAL, "params_add: %s: unknown flags %#x", name, (unsigned)flags);
	for (int i = 0; i < ps->nparams; i++)
		if (strcmp(ps->params[i]->name, name) == 0)
			return starnn_error(STARNN_EINVAL, "params_add: %s added twice", name);
	starnn_param **list = realloc(ps->params, sizeof *list * (size_t)(ps->nparams + 1));
	if (!list)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	ps->params = list;
	starnn_param *p = calloc(1, sizeof *p);
	if (!p)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	snprintf(p->name, sizeof p->name, "%s", name);
	p->master = master;
	p->nslices = nslices;
	p->flags = flags;
	p->compute_made = UINT64_MAX;
	int rc = param_tensors(ps, p);
	if (rc < 0) {
		p->flags |= STARNN_PARAM_BORROWED; /* not taken */
		param_free(p);
		return rc;
	}
	ps->params[ps->nparams++] = p;
	master->priority = STARNN_PRIO_PARAM; /* written by the optimizer only */
	ps->numel += (int64_t)starnn_tensor_numel(master);
	if (out)
		*out = p;
	return 0;
}

int starnn_params_count(const starnn_params *ps)
{
	return ps->nparams;
}

starnn_param *starnn_params_at(starnn_params *ps, int i)
{
	return i >= 0 && i < ps->nparams ? ps->params[i] : NULL;
}

int64_t starnn_params_numel(const starnn_params *ps)
{
	return ps->numel;
}

const struct starnn_params_config *starnn_params_get_config(const starnn_params *ps)
{
	return &ps->cfg;
}

int starnn_params_convert(starnn_params *ps)
{
	for (int i = 0; i < ps->nparams; i++) {
		starnn_param *p = ps->params[i];
		if (p->compute == p->master || p->compute_made == p->master->version)
			continue;
		STARNN_CHECK(starnn_convert(p->master, p->compute));
		p->compute_made = p->master->version;
	}
	return 0;
}

void starnn_params_set_grad_hook(starnn_params *ps, starnn_grad_hook fn, void *ctx)
{
	ps->hook = fn;
	ps->hook_ctx = ctx;
}

void starnn_params_set_hooks(starnn_params *ps, const struct starnn_params_hooks *h, void *ctx)
{
	ps->hooks = h ? *h : (struct starnn_params_hooks){0};
	ps->hooks_ctx = ctx;
}

static int updated(starnn_params *ps, starnn_param *p)
{
	return ps->hooks.updated ? ps->hooks.updated(ps->hooks_ctx, p) : 0;
}

int starnn_params_reduce_one(starnn_params *ps, starnn_param *p)
{
	/* Micro-batches: a tree of axpy tasks into slice 0, log2(n) levels,
	 * the tasks of one level independent of each other. */
	for (int stride = 1; stride < p->nslices; stride *= 2)
		for (int i = 0; i + stride < p->nslices; i += 2 * stride)
			STARNN_CHECK(starnn_axpy(1.0f, p->grad[i + stride], p->grad[i]));
	/* Ranks: grad[0] of this parameter is complete (in task order) here,
	 * so its all-reduce over the ranks (data-distributed training) is
	 * submitted now, parameter by parameter, and overlaps the reduction
	 * and the backward of the parameters still to come. */
	if (ps->hook)
		STARNN_CHECK(ps->hook(ps->hook_ctx, p));
	return 0;
}

int starnn_params_reduce(starnn_params *ps)
{
	for (int i = 0; i < ps->nparams; i++)
		STARNN_CHECK(starnn_params_reduce_one(ps, ps->params[i]));
	return 0;
}

float starnn_params_lr(const starnn_params *ps, int64_t step)
{
	float lr = ps->cfg.optim.lr;
	if (ps->cfg.optim.warmup > 0 && step < ps->cfg.optim.warmup)
		lr = (float)((double)lr * (double)step / (double)ps->cfg.optim.warmup);
	return lr;
}

/* Whether the update of p (of w) writes p's compute copy too: w is the
 * master the copy is made from, and the copy is current before the update
 * (a skipped amp step then leaves both as they are). */
static int casts(const starnn_param *p, const starnn_tensor *w)
{
	return p->compute != p->master && w == p->master && p->compute_made == p->master->version;
}

/* After such an update was submitted (rc): the copy is of the new master. */
static int cast_done(starnn_param *p, int rc)
{
	if (rc >= 0)
		p->compute_made = p->master->version;
	return rc;
}

int starnn_params_update(starnn_params *ps, int64_t step)
{
	if (step < 1)
		return starnn_error(STARNN_EINVAL, "params_update: steps count from 1, got %lld", (long long)step);
	const struct starnn_optim *o = &ps->cfg.optim;
	float lr = starnn_params_lr(ps, step);
	struct starnn_adam_params ap = {lr, o->beta1, o->beta2, o->eps, o->weight_decay, 0};
	struct starnn_sgd_params sp = {lr, o->momentum, 0.0f, o->weight_decay, 0};
	int adam = o->kind == STARNN_OPTIM_ADAM;
	if (ps->state) {
		/* Every gradient is checked before any update: one Inf / NaN skips
		 * the whole step (the optimizer tasks read the flag), then the
		 * scale is updated. The flag is cleared here, after the previous
		 * step's tasks that read it (StarPU orders them). */
		STARNN_CHECK(starnn_fill(0.0f, ps->flag));
		if (step == ps->inject_inf_step && ps->nparams > 0)
			STARNN_CHECK(starnn_fill(INFINITY, ps->params[ps->nparams - 1]->grad[0]));
		for (int i = 0; i < ps->nparams; i++)
			if (!ps->params[i]->remote)
				STARNN_CHECK(starnn_amp_nonfinite(ps->params[i]->grad[0], ps->flag));
		if (ps->hooks.flag)
			STARNN_CHECK(ps->hooks.flag(ps->hooks_ctx, ps->flag));
		for (int i = 0; i < ps->nparams; i++) {
			starnn_param *p = ps->params[i];
			starnn_tensor *w = p->exact ? p->exact : p->master;
			if (p->remote)
				;
			else if (adam && casts(p, w))
				STARNN_CHECK(cast_done(p, starnn_adam_amp_cast(w, p->grad[0], p->state[0], p->state[1], &ap,
				                                               ps->state, ps->flag, p->compute)));
			else if (adam)
				STARNN_CHECK(starnn_adam_amp(w, p->grad[0], p->state[0], p->state[1], &ap, ps->state, ps->flag));
			else
				STARNN_CHECK(starnn_sgd_amp(w, p->grad[0], p->state[0], &sp, ps->state, ps->flag));
			STARNN_CHECK(updated(ps, p));
		}
		return starnn_amp_scale_update(ps->state, ps->flag, &ps->policy);
	}
	for (int i = 0; i < ps->nparams; i++) {
		starnn_param *p = ps->params[i];
		starnn_tensor *w = p->exact ? p->exact : p->master;
		if (p->remote)
			;
		else if (adam && casts(p, w))
			STARNN_CHECK(cast_done(p, starnn_adam_cast(w, p->grad[0], p->state[0], p->state[1], &ap, step, 1.0f,
			                                           p->compute)));
		else if (adam)
			STARNN_CHECK(starnn_adam(w, p->grad[0], p->state[0], p->state[1], &ap, step, 1.0f));
		else
			STARNN_CHECK(starnn_sgd(w, p->grad[0], p->state[0], &sp, step, 1.0f));
		STARNN_CHECK(updated(ps, p));
	}
	return 0;
}

starnn_tensor *starnn_params_loss_scale(starnn_params *ps)
{
	return ps->state;
}

int starnn_params_get_amp_state(starnn_params *ps, struct starnn_amp_state *st)
{
	if (!ps->state)
		return starnn_error(STARNN_EINVAL, "params: no loss scaling in this set");
	return starnn_amp_state_read(ps->state, st);
}

int starnn_params_set_amp_state(starnn_params *ps, const struct starnn_amp_state *st)
{
	if (!ps->state)
		return starnn_error(STARNN_EINVAL, "params: no loss scaling in this set");
	const int64_t max = INT64_C(1) << 24; /* fp32 counts every integer up to here */
	if (!(st->scale > 0.0f) || !isfinite(st->scale) || st->good_steps < 0 || st->good_steps > max ||
	    st->skipped_steps < 0 || st->skipped_steps > max || st->applied_steps < 0 || st->applied_steps > max)
		return starnn_error(STARNN_EINVAL,
		                    "params: bad loss-scale state (scale %g, %lld clean, %lld skipped, %lld applied steps; "
		                    "counters must be in [0, 2^24])",
		                    (double)st->scale, (long long)st->good_steps, (long long)st->skipped_steps,
		                    (long long)st->applied_steps);
	float s[STARNN_AMP_STATE_LEN] = {st->scale, (float)st->good_steps, (float)st->skipped_steps,
	                                 (float)st->applied_steps};
	return starnn_tensor_write(ps->state, s);
}

void starnn_params_set_inject_inf_step(starnn_params *ps, int64_t step)
{
	ps->inject_inf_step = step;
}

int starnn_params_nslots(const starnn_params *ps)
{
	return ps->cfg.optim.kind == STARNN_OPTIM_ADAM ? 2 : 1;
}

const char *starnn_params_slot_name(const starnn_params *ps, int k)
{
	if (ps->cfg.optim.kind == STARNN_OPTIM_ADAM)
		return k == 0 ? "exp_avg" : k == 1 ? "exp_avg_sq" : NULL;
	return k == 0 ? "momentum_buffer" : NULL;
}
