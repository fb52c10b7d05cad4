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
#include "codelets/copy.h"
#include "codelets/fill.h"
#include "codelets/reduce.h"
#include "codelets/sgd.h"
#include "codelets/wire.h"
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
	/* The host <-> device edge (params.h): its devices' memory nodes (main
	 * memory's alone when there is none) and its byte counts. */
	int edge_on;
	struct starnn_edge_stats edge;
};

/* One parameter's side of the edge. */
struct starnn_param_edge {
	starnn_params *ps;
	int used;                                   /* read through starnn_param_in */
	int fmt;                                    /* the weights' wire format now */
	struct starnn_awp_layer awp;                /* adaptive: the layer's state */
	starnn_tensor *norm;                        /* adaptive: ||master||^2 after the last update */
	starnn_tensor *prev;                        /* resolution rule: the master of the previous step */
	starnn_tensor *step;                        /* resolution rule: ||the update's step||^2 */
	int norm_pending;
	starnn_tensor *wire[STARNN_WIRE_NFORMATS];  /* the weights' wire in each format used */
	uint64_t wire_made;                         /* master's version the wire holds (UINT64_MAX: none) */
	int wire_fmt;
	starnn_tensor *copy[STARNN_EDGE_MAX_DEVICES]; /* fp32 on each device, no home copy */
	starnn_tensor *half[STARNN_EDGE_MAX_DEVICES]; /* the compute dtype's (16-bit compute copy), or NULL */
	uint64_t made[STARNN_EDGE_MAX_DEVICES];       /* master's version each copy holds */
	starnn_tensor **host;                       /* nslices gradient slices on the host */
	starnn_tensor **gwire;                      /* nslices gradient wires */
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
	if (c->master_host) {
		if (!(c->wire_weights == -1 || c->wire_weights == STARNN_WIRE_ADAPTIVE ||
		      (c->wire_weights >= 0 && c->wire_weights < STARNN_WIRE_NFORMATS)))
			return starnn_error(STARNN_EINVAL, "params: unknown weights' wire format %d", c->wire_weights);
		if (!(c->wire_grads == -1 || (c->wire_grads >= 0 && c->wire_grads < STARNN_WIRE_NFORMATS)))
			return starnn_error(STARNN_EINVAL, "params: unknown gradients' wire format %d", c->wire_grads);
		if (c->wire_weights == STARNN_WIRE_ADAPTIVE)
			STARNN_CHECK(starnn_awp_check(&c->awp));
	}
	return 0;
}

/* The edge's devices: the memory nodes of the CUDA and OpenCL workers, in
 * the order of their first worker; none: main memory. */
static int edge_devices(struct starnn_edge_stats *st)
{
	memset(st, 0, sizeof *st);
	unsigned nworkers = starpu_worker_get_count();
	for (unsigned w = 0; w < nworkers; w++) {
		enum starpu_worker_archtype type = starpu_worker_get_type((int)w);
		if (type != STARPU_CUDA_WORKER && type != STARPU_OPENCL_WORKER)
			continue;
		int node = (int)starpu_worker_get_memory_node(w), seen = 0;
		for (int d = 0; d < st->ndevices; d++)
			seen |= st->node[d] == node;
		if (seen)
			continue;
		if (st->ndevices == STARNN_EDGE_MAX_DEVICES)
			return starnn_error(STARNN_EINVAL, "params: --master host takes at most %d devices",
			                    STARNN_EDGE_MAX_DEVICES);
		st->node[st->ndevices++] = node;
	}
	if (st->ndevices == 0)
		st->node[st->ndevices++] = STARPU_MAIN_RAM;
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
	if (cfg->master_host) {
		int rc = edge_devices(&ps->edge);
		if (rc < 0) {
			free(ps);
			return rc;
		}
		ps->edge_on = 1;
	}
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

static void edge_free(starnn_param *p)
{
	struct starnn_param_edge *e = p->edge;
	if (!e)
		return;
	for (int f = 0; f < STARNN_WIRE_NFORMATS; f++)
		starnn_tensor_destroy(e->wire[f]);
	for (int d = 0; d < STARNN_EDGE_MAX_DEVICES; d++) {
		starnn_tensor_destroy(e->copy[d]);
		starnn_tensor_destroy(e->half[d]);
	}
	for (int i = 0; i < p->nslices; i++) {
		if (e->host)
			starnn_tensor_destroy(e->host[i]);
		if (e->gwire)
			starnn_tensor_destroy(e->gwire[i]);
	}
	free(e->host);
	free(e->gwire);
	starnn_tensor_destroy(e->norm);
	starnn_tensor_destroy(e->step);
	starnn_tensor_destroy(e->prev);
	free(e);
	p->edge = NULL;
}

static void param_free(starnn_param *p)
{
	edge_free(p);
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
	snprintf(buf, size, "%.40s%s%.20s", name, *suffix ? "." : "", suffix);
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

static int wire_format_of(int wire)
{
	return wire < 0 ? STARNN_WIRE_FP32 : wire;
}

/* The wire of n values in format f, "<name>.<suffix>" (u8). */
static int make_wire(starnn_tensor **t, const starnn_param *p, int f, const char *suffix)
{
	char buf[STARNN_NAME_MAX];
	tensor_name(buf, sizeof buf, p->name, suffix);
	int64_t bytes = (int64_t)starnn_wire_bytes((starnn_wire_format)f, starnn_tensor_numel(p->master));
	STARNN_CHECK(starnn_tensor_create(t, buf, STARNN_U8, 1, &bytes));
	(*t)->priority = STARNN_PRIO_PARAM;
	return 0;
}

/* p's side of the edge: the devices' copies (no home copy: allocated on the
 * device by their first writer), the host's gradient slices and their
 * wires. The weights' wires are made when a format is first used. */
static int edge_tensors(starnn_params *ps, starnn_param *p)
{
	struct starnn_param_edge *e = calloc(1, sizeof *e);
	if (!e)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	p->edge = e;
	e->ps = ps;
	e->wire_made = UINT64_MAX;
	const struct starnn_params_config *c = &ps->cfg;
	if (c->wire_weights == STARNN_WIRE_ADAPTIVE) {
		starnn_awp_layer_init(&c->awp, &e->awp);
		e->fmt = (int)starnn_awp_format(&c->awp, &e->awp);
		int64_t one = 1;
		char buf[STARNN_NAME_MAX];
		tensor_name(buf, sizeof buf, p->name, "norm");
		STARNN_CHECK(starnn_tensor_create(&e->norm, buf, STARNN_FP32, 1, &one));
		if (starnn_awp_uses_steps(&c->awp)) {
			tensor_name(buf, sizeof buf, p->name, "step");
			STARNN_CHECK(starnn_tensor_create(&e->step, buf, STARNN_FP32, 1, &one));
			STARNN_CHECK(make_like(&e->prev, p->master, STARNN_FP32, p->name, "prev", 1));
		}
	} else {
		e->fmt = wire_format_of(c->wire_weights);
	}
	const int half = (p->flags & STARNN_PARAM_COMPUTE_COPY) && c->compute != STARNN_FP32;
	for (int d = 0; d < ps->edge.ndevices; d++) {
		char buf[STARNN_NAME_MAX], suffix[16];
		snprintf(suffix, sizeof suffix, "dev%d", d);
		tensor_name(buf, sizeof buf, p->name, suffix);
		STARNN_CHECK(starnn_tensor_create_nohome(&e->copy[d], buf, STARNN_FP32, p->master->ndim, p->master->shape));
		starnn_tensor_pin(e->copy[d], ps->edge.node[d]);
		if (half) {
			snprintf(suffix, sizeof suffix, "dev%d.h", d);
			tensor_name(buf, sizeof buf, p->name, suffix);
			STARNN_CHECK(starnn_tensor_create_nohome(&e->half[d], buf, c->compute, p->master->ndim, p->master->shape));
			starnn_tensor_pin(e->half[d], ps->edge.node[d]);
		}
		e->made[d] = UINT64_MAX;
	}
	e->host = calloc((size_t)p->nslices, sizeof *e->host);
	e->gwire = calloc((size_t)p->nslices, sizeof *e->gwire);
	if (!e->host || !e->gwire)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	for (int i = 0; i < p->nslices; i++) {
		char suffix[24];
		snprintf(suffix, sizeof suffix, "grad%d.host", i);
		STARNN_CHECK(make_like(&e->host[i], p->master, STARNN_FP32, p->name, suffix, 1));
		snprintf(suffix, sizeof suffix, "grad%d.wire", i);
		STARNN_CHECK(make_wire(&e->gwire[i], p, wire_format_of(c->wire_grads), suffix));
	}
	return 0;
}

/* The tensors of p besides its master. */
static int param_tensors(starnn_params *ps, starnn_param *p)
{
	char suffix[16];
	p->grad = calloc((size_t)p->nslices, sizeof *p->grad);
	if (!p->grad)
		return starnn_error(STARNN_ENOMEM, "params: out of memory");
	/* (with the edge, the devices' copies are the compute copies) */
	if ((p->flags & STARNN_PARAM_COMPUTE_COPY) && ps->cfg.compute != STARNN_FP32 && !ps->edge_on)
		STARNN_CHECK(make_like(&p->compute, p->master, ps->cfg.compute, p->name, "h", 0));
	else
		p->compute = p->master;
	for (int i = 0; i < p->nslices; i++) {
		snprintf(suffix, sizeof suffix, "grad%d", i);
		STARNN_CHECK(make_like(&p->grad[i], p->master, STARNN_FP32, p->name, suffix, 1));
	}
	if (ps->edge_on)
		STARNN_CHECK(edge_tensors(ps, p));
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
		if (p->compute == p->master || p->compute_made == p->master->version || p->edge)
			continue; /* (with the edge, starnn_param_in makes the devices' copies) */
		STARNN_CHECK(starnn_convert(p->master, p->compute));
		p->compute_made = p->master->version;
	}
	return 0;
}

/* The weights of p at master's version v in the wire, on a CPU worker,
 * once per version. */
static int edge_wire(starnn_param *p, struct starnn_param_edge *e, uint64_t v)
{
	if (e->wire_made == v && e->wire_fmt == e->fmt)
		return 0;
	if (!e->wire[e->fmt]) {
		char suffix[32];
		snprintf(suffix, sizeof suffix, "wire.%s", starnn_wire_name((starnn_wire_format)e->fmt));
		STARNN_CHECK(make_wire(&e->wire[e->fmt], p, e->fmt, suffix));
	}
	starnn_set_placement(STARPU_MAIN_RAM);
	int rc = starnn_compress(p->master, (starnn_wire_format)e->fmt, e->wire[e->fmt]);
	starnn_set_placement(STARNN_ANYWHERE);
	STARNN_CHECK(rc);
	e->wire_made = v;
	e->wire_fmt = e->fmt;
	return 0;
}

/* Device d's copy of p made from master's version v: decompress (and the
 * compute dtype's conversion) on the device, by the copies' pins. */
static int edge_down(starnn_param *p, struct starnn_param_edge *e, int d, uint64_t v)
{
	starnn_params *ps = e->ps;
	STARNN_CHECK(edge_wire(p, e, v));
	starnn_tensor *w = e->wire[e->fmt];
	STARNN_CHECK(starnn_decompress(w, (starnn_wire_format)e->fmt, e->copy[d]));
	if (e->half[d])
		STARNN_CHECK(starnn_convert(e->copy[d], e->half[d]));
	ps->edge.down[d] += (uint64_t)starnn_tensor_numel(w);
	ps->edge.down_raw[d] += (uint64_t)starnn_tensor_numel(p->master) * sizeof(float);
	ps->edge.down_messages[d]++;
	e->made[d] = v;
	return 0;
}

starnn_tensor *starnn_param_in(starnn_param *p, int slice)
{
	struct starnn_param_edge *e = p->edge;
	if (!e)
		return p->compute;
	starnn_params *ps = e->ps;
	const int d = (slice < 0 ? 0 : slice) % ps->edge.ndevices;
	if (!e->used) {
		/* the gradient slices are written where their micro-batch runs */
		for (int i = 0; i < p->nslices; i++)
			starnn_tensor_pin(p->grad[i], ps->edge.node[i % ps->edge.ndevices]);
		e->used = 1;
	}
	const uint64_t v = p->master->version;
	if (e->made[d] != v) {
		int saved = starnn_get_placement();
		starnn_set_placement(STARNN_ANYWHERE);
		int rc = edge_down(p, e, d, v);
		starnn_set_placement(saved);
		if (rc < 0) {
			starnn_defer_last_error(rc);
			return NULL;
		}
	}
	return e->half[d] ? e->half[d] : e->copy[d];
}

void starnn_params_edge_stats(const starnn_params *ps, struct starnn_edge_stats *st)
{
	if (ps->edge_on)
		*st = ps->edge;
	else
		memset(st, 0, sizeof *st);
}

void starnn_params_edge_formats(const starnn_params *ps, char *buf, size_t size)
{
	int count[STARNN_WIRE_NFORMATS] = {0};
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < ps->nparams; i++)
		if (ps->params[i]->edge && ps->params[i]->edge->used)
			count[ps->params[i]->edge->fmt]++;
	if (ps->cfg.wire_weights != STARNN_WIRE_ADAPTIVE) {
		snprintf(buf, size, "%s", starnn_wire_name((starnn_wire_format)wire_format_of(ps->cfg.wire_weights)));
		return;
	}
	for (int f = 0; f < STARNN_WIRE_NFORMATS && n < size; f++)
		if (count[f]) {
			int k = snprintf(buf + n, size - n, "%s%s x%d", n ? ", " : "", starnn_wire_name((starnn_wire_format)f),
			                 count[f]);
			if (k < 0)
				break;
			n += (size_t)k;
		}
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

/* The gradient slices of p to the host (compress where each was written,
 * decompress on a CPU worker), in the layout the kernels wrote them in. */
static int edge_up(starnn_params *ps, starnn_param *p)
{
	struct starnn_param_edge *e = p->edge;
	const int f = wire_format_of(ps->cfg.wire_grads);
	for (int i = 0; i < p->nslices; i++) {
		const int d = i % ps->edge.ndevices;
		STARNN_CHECK(starnn_compress(p->grad[i], (starnn_wire_format)f, e->gwire[i]));
		starnn_set_placement(STARPU_MAIN_RAM);
		int rc = starnn_tensor_set_wlayout(e->host[i], &p->grad[i]->wl);
		if (rc == 0)
			rc = starnn_decompress(e->gwire[i], (starnn_wire_format)f, e->host[i]);
		starnn_set_placement(STARNN_ANYWHERE);
		STARNN_CHECK(rc);
		ps->edge.up[d] += (uint64_t)starnn_tensor_numel(e->gwire[i]);
		ps->edge.up_raw[d] += (uint64_t)starnn_tensor_numel(p->master) * sizeof(float);
		ps->edge.up_messages[d]++;
	}
	return 0;
}

/* The gradient the update reads: the host's sum with the edge. */
static starnn_tensor *reduced(const starnn_param *p)
{
	return p->edge && p->edge->used ? p->edge->host[0] : p->grad[0];
}

int starnn_params_reduce_one(starnn_params *ps, starnn_param *p)
{
	starnn_tensor **g = p->grad;
	if (p->edge && p->edge->used) {
		STARNN_CHECK(edge_up(ps, p));
		g = p->edge->host;
		starnn_set_placement(STARPU_MAIN_RAM);
	}
	/* Micro-batches: a tree of axpy tasks into slice 0, log2(n) levels,
	 * the tasks of one level independent of each other. */
	int rc = 0;
	for (int stride = 1; stride < p->nslices && rc == 0; stride *= 2)
		for (int i = 0; i + stride < p->nslices && rc == 0; i += 2 * stride)
			rc = starnn_axpy(1.0f, g[i + stride], g[i]);
	if (g != p->grad)
		starnn_set_placement(STARNN_ANYWHERE);
	STARNN_CHECK(rc);
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
	return p->compute != p->master && w == p->master && p->compute_made == p->master->version && !p->edge;
}

/* After such an update was submitted (rc): the copy is of the new master. */
static int cast_done(starnn_param *p, int rc)
{
	if (rc >= 0)
		p->compute_made = p->master->version;
	return rc;
}

static int update(starnn_params *ps, int64_t step);

int starnn_awp_tensors_observe(const struct starnn_awp_config *c, struct starnn_awp_layer *l, starnn_tensor *norm,
                               starnn_tensor *step)
{
	float sq = 0.0f, usq = 0.0f;
	STARNN_CHECK(starnn_tensor_read(norm, &sq));
	if (step)
		STARNN_CHECK(starnn_tensor_read(step, &usq));
	return starnn_awp_observe_step(c, l, sqrt((double)sq), sqrt((double)usq));
}

int starnn_awp_tensors_submit(starnn_tensor *x, starnn_tensor *norm, starnn_tensor *prev, starnn_tensor *step)
{
	STARNN_CHECK(starnn_sumsq(x, norm, 0.0f));
	if (!prev)
		return 0;
	STARNN_CHECK(starnn_axpy(-1.0f, x, prev)); /* the previous x minus this one: minus the step */
	STARNN_CHECK(starnn_sumsq(prev, step, 0.0f));
	return starnn_copy(x, prev);
}

int starnn_awp_tensors_begin(starnn_tensor *x, const struct starnn_awp_layer *l, starnn_tensor *norm,
                             starnn_tensor *prev, starnn_tensor *step)
{
	STARNN_CHECK(starnn_sumsq(x, norm, 0.0f));
	if (!prev)
		return 0;
	/* (a fresh run's first observation only sets the reference; a resumed
	 * one observes the step saved with its state) */
	STARNN_CHECK(starnn_copy(x, prev));
	return starnn_fill(l->step_sq_pending >= 0 ? (float)l->step_sq_pending : 0.0f, step);
}

int starnn_awp_tensors_pending(starnn_tensor *step, int pending, double *sq)
{
	float usq = -1.0f;
	if (step && pending)
		STARNN_CHECK(starnn_tensor_read(step, &usq));
	*sq = usq;
	return 0;
}

/* Adaptive weights: observes the norm of the previous update (waiting for
 * it, one step late as on the rank edge: runtime/train/shard.c), then
 * submits this one's; the next transfer uses the format that follows. */
static int edge_awp(starnn_params *ps, starnn_param *p)
{
	struct starnn_param_edge *e = p->edge;
	/* (a parameter no forward reads through the edge, a batch norm's, has
	 * no format to adapt: its state stays as it started) */
	if (!e || !e->used || ps->cfg.wire_weights != STARNN_WIRE_ADAPTIVE)
		return 0;
	if (e->norm_pending) {
		int gained = starnn_awp_tensors_observe(&ps->cfg.awp, &e->awp, e->norm, e->step);
		STARNN_CHECK(gained);
		if (gained)
			e->fmt = (int)starnn_awp_format(&ps->cfg.awp, &e->awp);
	}
	STARNN_CHECK(starnn_awp_tensors_submit(p->master, e->norm, e->prev, e->step));
	e->norm_pending = 1;
	return 0;
}

int starnn_params_edge_begin(starnn_params *ps)
{
	if (!ps->edge_on || ps->cfg.wire_weights != STARNN_WIRE_ADAPTIVE)
		return 0;
	starnn_set_placement(STARPU_MAIN_RAM);
	int rc = 0;
	for (int i = 0; i < ps->nparams && rc == 0; i++) {
		struct starnn_param_edge *e = ps->params[i]->edge;
		rc = starnn_awp_tensors_begin(ps->params[i]->master, &e->awp, e->norm, e->prev, e->step);
		e->norm_pending = 1;
	}
	starnn_set_placement(STARNN_ANYWHERE);
	return rc;
}

/* (starnn_awp_states_format / _parse: the edge's layer i) */
static struct starnn_awp_named edge_layer_at(void *ctx, int i)
{
	starnn_params *ps = ctx;
	return (struct starnn_awp_named){ps->params[i]->name, &ps->params[i]->edge->awp};
}

int starnn_params_edge_awp_state(const starnn_params *ps, char **text)
{
	/* the resolution rule's pending step goes with the state (a resumed
	 * run observes it as the uninterrupted one does) */
	for (int i = 0; ps->edge_on && i < ps->nparams; i++) {
		struct starnn_param_edge *e = ps->params[i]->edge;
		STARNN_CHECK(starnn_awp_tensors_pending(e->step, e->norm_pending, &e->awp.step_sq_pending));
	}
	return starnn_awp_states_format(ps->edge_on ? ps->nparams : 0, edge_layer_at, (void *)ps, text);
}

int starnn_params_edge_set_awp_state(starnn_params *ps, const char *text)
{
	if (!ps->edge_on || ps->cfg.wire_weights != STARNN_WIRE_ADAPTIVE)
		return starnn_error(STARNN_EINVAL, "params: an adaptive state without --master host and awp weights");
	STARNN_CHECK(starnn_awp_states_parse(text, ps->nparams, edge_layer_at, ps));
	for (int i = 0; i < ps->nparams; i++) {
		struct starnn_param_edge *e = ps->params[i]->edge;
		e->fmt = (int)starnn_awp_format(&ps->cfg.awp, &e->awp);
	}
	return 0;
}

int starnn_params_update(starnn_params *ps, int64_t step)
{
	if (!ps->edge_on)
		return update(ps, step);
	/* the masters' side of the edge: CPU workers */
	starnn_set_placement(STARPU_MAIN_RAM);
	int rc = update(ps, step);
	for (int i = 0; i < ps->nparams && rc == 0; i++)
		rc = edge_awp(ps, ps->params[i]);
	starnn_set_placement(STARNN_ANYWHERE);
	return rc;
}

static int update(starnn_params *ps, int64_t step)
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
			STARNN_CHECK(starnn_fill(INFINITY, reduced(ps->params[ps->nparams - 1])));
		for (int i = 0; i < ps->nparams; i++)
			if (!ps->params[i]->remote)
				STARNN_CHECK(starnn_amp_nonfinite(reduced(ps->params[i]), ps->flag));
		if (ps->hooks.flag)
			STARNN_CHECK(ps->hooks.flag(ps->hooks_ctx, ps->flag));
		for (int i = 0; i < ps->nparams; i++) {
			starnn_param *p = ps->params[i];
			starnn_tensor *w = p->exact ? p->exact : p->master;
			if (p->remote)
				;
			else if (adam && casts(p, w))
				STARNN_CHECK(cast_done(p, starnn_adam_amp_cast(w, reduced(p), p->state[0], p->state[1], &ap,
				                                               ps->state, ps->flag, p->compute)));
			else if (adam)
				STARNN_CHECK(starnn_adam_amp(w, reduced(p), p->state[0], p->state[1], &ap, ps->state, ps->flag));
			else
				STARNN_CHECK(starnn_sgd_amp(w, reduced(p), p->state[0], &sp, ps->state, ps->flag));
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
			STARNN_CHECK(cast_done(p, starnn_adam_cast(w, reduced(p), p->state[0], p->state[1], &ap, step, 1.0f,
			                                           p->compute)));
		else if (adam)
			STARNN_CHECK(starnn_adam(w, reduced(p), p->state[0], p->state[1], &ap, step, 1.0f));
		else
			STARNN_CHECK(starnn_sgd(w, reduced(p), p->state[0], &sp, step, 1.0f));
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
