/* The parameter-owner mode of data-distributed training
 * (--shard-optimizer) and the weights' wire format (--wire-weights,
 * adaptive per layer with AWP): see dist.h. The messages are dist.c's
 * collectives rooted at each parameter's owner. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/copy.h"
#include "codelets/reduce.h"
#include "codelets/wire.h"
#include "runtime/core/launch.h"
#include "runtime/train/dist.h"
#include "runtime/train/dist_internal.h"

#define dist_rank starnn_launch_rank()
#define dist_size starnn_launch_size()
#define dist_on starnn_launch_mpi()

struct wparam {
	int owner;
	int fmt;                  /* the weights' current wire format (STARNN_WIRE_FP32: sent as they are) */
	struct starnn_awp_layer awp;
	int norm_pending;         /* norm holds a value not observed yet */
	int changed;              /* format changed since the last starnn_dist_weights_log */
	int64_t changed_at;       /* at the update of this step */
	starnn_tensor *wire;      /* the compressed weights, sized for fmt */
	starnn_tensor *norm;      /* ||exact||^2 (1 element), adaptive mode only */
	starnn_tensor *step;      /* resolution rule: ||the update's step||^2 (1 element) */
	starnn_tensor *prev;      /* resolution rule, on the owner: the exact master of the previous step */
};
static struct starnn_dist_weights wcfg = {.shard = 0, .wire = STARNN_DIST_WIRE_NONE};
static struct wparam *wp;
static starnn_params *wps; /* the attached set */
static int nwp;
static char *wstate_text; /* starnn_dist_weights_set_state's, applied by weights_begin */
static int64_t wstep;     /* the step being updated (weights_updated) */

int starnn_dist_set_weights(const struct starnn_dist_weights *w)
{
	if (w->wire != STARNN_DIST_WIRE_NONE && w->wire != STARNN_DIST_WIRE_AWP &&
	    (w->wire < 0 || w->wire >= STARNN_WIRE_NFORMATS))
		return starnn_error(STARNN_EINVAL, "dist: unknown weights wire format %d", w->wire);
	if (w->wire != STARNN_DIST_WIRE_NONE && w->wire != STARNN_WIRE_FP32 && !w->shard)
		return starnn_error(STARNN_EINVAL,
		                    "--wire-weights needs --shard-optimizer: weights cross the rank edge only when each rank "
		                    "updates its own share of them (otherwise every rank has them already)");
	if (w->wire == STARNN_DIST_WIRE_AWP)
		STARNN_CHECK(starnn_awp_check(&w->awp));
	wcfg = *w;
	if (wcfg.wire == STARNN_WIRE_FP32)
		wcfg.wire = STARNN_DIST_WIRE_NONE;
	return 0;
}

const struct starnn_dist_weights *starnn_dist_get_weights(void)
{
	return &wcfg;
}

static void wparams_free(void)
{
	for (int i = 0; i < nwp; i++) {
		starnn_tensor_destroy(wp[i].wire);
		starnn_tensor_destroy(wp[i].norm);
		starnn_tensor_destroy(wp[i].step);
		starnn_tensor_destroy(wp[i].prev);
	}
	free(wp);
	wp = NULL, nwp = 0, wps = NULL;
}

static struct wparam *wparam_of(starnn_params *ps, starnn_param *p, int *index)
{
	if (ps != wps)
		return NULL;
	for (int i = 0; i < nwp; i++)
		if (starnn_params_at(ps, i) == p) {
			if (index)
				*index = i;
			return &wp[i];
		}
	return NULL;
}

int starnn_dist_sharded(void)
{
	return wps != NULL;
}

int starnn_dist_owner_of(starnn_param *p)
{
	struct wparam *w = wps ? wparam_of(wps, p, NULL) : NULL;
	return w ? w->owner : -1;
}

/* The wire buffer of w for its current format (remade when it changed). */
static int wire_buffer(starnn_param *p, struct wparam *w)
{
	if (w->fmt == STARNN_WIRE_FP32)
		return 0;
	int64_t bytes = (int64_t)starnn_wire_bytes((starnn_wire_format)w->fmt, starnn_tensor_numel(p->master));
	if (w->wire && w->wire->shape[0] == bytes)
		return 0;
	starnn_tensor_destroy(w->wire);
	w->wire = NULL;
	char name[STARNN_NAME_MAX];
	snprintf(name, sizeof name, "%.40s.wire", p->master->name);
	return starnn_tensor_create(&w->wire, name, STARNN_U8, 1, &bytes);
}

/* The weights of p from its owner to every rank in w's format (one rank:
 * through the format, without a message). */
static int publish(starnn_param *p, struct wparam *w)
{
	STARNN_CHECK(wire_buffer(p, w));
	int lossy = w->fmt != STARNN_WIRE_FP32;
	starnn_tensor *src = p->exact ? p->exact : p->master;
	if (dist_on)
		return starnn_dist_weights_down(p->master, src, lossy ? w->wire : NULL, w->fmt, w->norm, w->step,
		                                w->owner);
	if (lossy) {
		STARNN_CHECK(starnn_compress(src, (starnn_wire_format)w->fmt, w->wire));
		return starnn_decompress(w->wire, (starnn_wire_format)w->fmt, p->master);
	}
	return src != p->master ? starnn_copy(src, p->master) : 0;
}

/* Adaptive mode: observes the norm of the previous step (waiting for it if
 * it is not here yet: it was sent one step ago), then submits this step's
 * norm on the owner. The format of the weights sent next follows. */
static int awp_step(starnn_param *p, struct wparam *w)
{
	if (wcfg.wire != STARNN_DIST_WIRE_AWP)
		return 0;
	if (w->norm_pending) {
		int gained = starnn_awp_tensors_observe(&wcfg.awp, &w->awp, w->norm, w->step);
		STARNN_CHECK(gained);
		if (gained) {
			w->fmt = (int)starnn_awp_format(&wcfg.awp, &w->awp);
			w->changed = 1;
			w->changed_at = wstep;
		}
	}
	if (dist_rank == w->owner)
		STARNN_CHECK(starnn_awp_tensors_submit(p->exact ? p->exact : p->master, w->norm, w->prev, w->step));
	w->norm_pending = 1;
	return 0;
}

static int weights_updated(void *ctx, starnn_param *p)
{
	starnn_params *ps = ctx;
	int index = 0;
	struct wparam *w = wparam_of(ps, p, &index);
	if (!w)
		return starnn_error(STARNN_ESTATE, "dist: parameter %s is not in the attached set", p->name);
	if (index == 0)
		wstep++; /* the first parameter's update starts a step */
	STARNN_CHECK(awp_step(p, w));
	return publish(p, w);
}

static int flag_or(void *ctx, starnn_tensor *flag)
{
	(void)ctx;
	return starnn_dist_allreduce(flag); /* 0 = clean; a sum of flags > 0 = some rank overflowed */
}

int starnn_dist_attach(starnn_params *ps)
{
	wparams_free();
	if (!wcfg.shard)
		return 0;
	int n = starnn_params_count(ps);
	wp = calloc((size_t)(n > 0 ? n : 1), sizeof *wp);
	int64_t *load = calloc((size_t)dist_size, sizeof *load);
	int *order = calloc((size_t)(n > 0 ? n : 1), sizeof *order);
	if (!wp || !load || !order) {
		free(load), free(order);
		wparams_free();
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	}
	wps = ps, nwp = n;
	/* Owners: largest parameter first (ties: the earlier one), each to the
	 * rank holding the fewest values so far (ties: the lower rank). */
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) { /* insertion sort: stable, n is small */
		int k = order[i], j = i;
		size_t sk = starnn_tensor_numel(starnn_params_at(ps, k)->master);
		while (j > 0 && starnn_tensor_numel(starnn_params_at(ps, order[j - 1])->master) < sk) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = k;
	}
	for (int i = 0; i < n; i++) {
		int best = 0;
		for (int r = 1; r < dist_size; r++)
			if (load[r] < load[best])
				best = r;
		wp[order[i]].owner = best;
		load[best] += (int64_t)starnn_tensor_numel(starnn_params_at(ps, order[i])->master);
	}
	free(load), free(order);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		struct wparam *w = &wp[i];
		starnn_param *p = starnn_params_at(ps, i);
		w->fmt = STARNN_WIRE_FP32;
		if (wcfg.wire == STARNN_DIST_WIRE_AWP) {
			starnn_awp_layer_init(&wcfg.awp, &w->awp);
			w->fmt = (int)starnn_awp_format(&wcfg.awp, &w->awp);
			int64_t one = 1;
			char name[STARNN_NAME_MAX];
			snprintf(name, sizeof name, "%.40s.norm", p->master->name);
			rc = starnn_tensor_create(&w->norm, name, STARNN_FP32, 1, &one);
			if (!rc && starnn_awp_uses_steps(&wcfg.awp)) {
				snprintf(name, sizeof name, "%.40s.step", p->master->name);
				rc = starnn_tensor_create(&w->step, name, STARNN_FP32, 1, &one);
				if (!rc && w->owner == dist_rank) {
					snprintf(name, sizeof name, "%.40s.prev", p->master->name);
					rc = starnn_tensor_create(&w->prev, name, STARNN_FP32, p->master->ndim, p->master->shape);
				}
			}
		} else if (wcfg.wire >= 0) {
			w->fmt = wcfg.wire;
		}
		w->changed = 1;
	}
	if (rc) {
		wparams_free();
		return rc;
	}
	struct starnn_params_hooks h = {.flag = dist_on ? flag_or : NULL, .updated = weights_updated};
	starnn_params_set_hooks(ps, &h, ps);
	return 0;
}

void starnn_dist_detach(starnn_params *ps)
{
	if (ps && ps == wps) {
		starnn_params_set_hooks(ps, NULL, NULL);
		wparams_free();
	}
}

int starnn_dist_weights_begin(starnn_params *ps, int64_t step)
{
	if (ps != wps || !wps)
		return 0;
	wstep = step;
	for (int i = 0; i < nwp; i++)
		wp[i].changed = 1, wp[i].changed_at = step;
	if (wstate_text) {
		int rc = starnn_dist_weights_set_state(wstate_text);
		free(wstate_text);
		wstate_text = NULL;
		STARNN_CHECK(rc);
	}
	for (int i = 0; i < nwp; i++) {
		starnn_param *p = starnn_params_at(ps, i);
		struct wparam *w = &wp[i];
		p->remote = w->owner != dist_rank;
		if (p->remote) {
			starnn_params_drop_state(ps, p);
		} else if (wcfg.wire != STARNN_DIST_WIRE_NONE && !p->exact) {
			char name[STARNN_NAME_MAX];
			snprintf(name, sizeof name, "%.40s.exact", p->master->name);
			STARNN_CHECK(starnn_tensor_create(&p->exact, name, STARNN_FP32, p->master->ndim, p->master->shape));
			STARNN_CHECK(starnn_copy(p->master, p->exact));
		}
		if (wcfg.wire == STARNN_DIST_WIRE_AWP && dist_rank == w->owner)
			STARNN_CHECK(starnn_awp_tensors_begin(p->exact ? p->exact : p->master, &w->awp, w->norm, w->prev,
			                                      w->step));
		w->norm_pending = wcfg.wire == STARNN_DIST_WIRE_AWP;
		STARNN_CHECK(publish(p, w));
	}
	return 0;
}

int starnn_dist_checkpoint_begin(starnn_params *ps)
{
	if (ps != wps || !wps)
		return 0;
	int nslots = starnn_params_nslots(ps);
	for (int i = 0; i < nwp; i++) {
		starnn_param *p = starnn_params_at(ps, i);
		struct wparam *w = &wp[i];
		if (dist_rank == 0 && p->remote)
			STARNN_CHECK(starnn_params_make_state(ps, p));
		if (w->owner == 0) {
			if (dist_rank == 0 && p->exact)
				STARNN_CHECK(starnn_copy(p->exact, p->master));
			continue;
		}
		/* the owner's exact master into rank 0's master, its state into
		 * rank 0's temporary state */
		STARNN_CHECK(starnn_dist_to_rank0(dist_rank == w->owner && p->exact ? p->exact : p->master, w->owner));
		for (int k = 0; k < nslots; k++)
			STARNN_CHECK(starnn_dist_to_rank0(p->state[k], w->owner));
	}
	return 0;
}

int starnn_dist_checkpoint_end(starnn_params *ps)
{
	if (ps != wps || !wps || dist_rank != 0)
		return 0;
	for (int i = 0; i < nwp; i++) {
		starnn_param *p = starnn_params_at(ps, i);
		struct wparam *w = &wp[i];
		/* rank 0 computes with the weights as they came through their
		 * format: the wire buffer still holds them */
		if (w->fmt != STARNN_WIRE_FP32 && (w->owner != 0 || p->exact))
			STARNN_CHECK(starnn_decompress(w->wire, (starnn_wire_format)w->fmt, p->master));
		if (p->remote)
			starnn_params_drop_state(ps, p);
	}
	return 0;
}

/* (starnn_awp_states_format / _parse: the rank edge's layer i) */
static struct starnn_awp_named weights_layer_at(void *ctx, int i)
{
	(void)ctx;
	return (struct starnn_awp_named){starnn_params_at(wps, i)->name, &wp[i].awp};
}

int starnn_dist_weights_state(char **text)
{
	/* the resolution rule's pending step goes with the state (a resumed
	 * run observes it as the uninterrupted one does) */
	for (int i = 0; i < nwp; i++)
		STARNN_CHECK(starnn_awp_tensors_pending(wp[i].step, wp[i].norm_pending, &wp[i].awp.step_sq_pending));
	return starnn_awp_states_format(nwp, weights_layer_at, NULL, text);
}

int starnn_dist_weights_set_state(const char *text)
{
	if (!wps) {
		free(wstate_text);
		wstate_text = strdup(text);
		return wstate_text ? 0 : starnn_error(STARNN_ENOMEM, "dist: out of memory");
	}
	if (wcfg.wire != STARNN_DIST_WIRE_AWP)
		return 0;
	STARNN_CHECK(starnn_awp_states_parse(text, nwp, weights_layer_at, NULL));
	for (int i = 0; i < nwp; i++)
		wp[i].fmt = (int)starnn_awp_format(&wcfg.awp, &wp[i].awp);
	return 0;
}

static const char *wformat_name(int fmt)
{
	return fmt == STARNN_WIRE_FP32 ? "fp32" : starnn_wire_name((starnn_wire_format)fmt);
}

void starnn_dist_weights_log(FILE *f, int64_t step)
{
	int any = 0;
	for (int i = 0; i < nwp; i++) {
		if (!wp[i].changed || wp[i].changed_at > step)
			continue;
		wp[i].changed = 0;
		if (!f)
			continue;
		if (!any)
			fprintf(f, "{\"step\":%lld,\"wire_weights\":{", (long long)step);
		fprintf(f, "%s\"%s\":\"%s\"", any ? "," : "", starnn_params_at(wps, i)->name, wformat_name(wp[i].fmt));
		any = 1;
	}
	if (any)
		fprintf(f, "}}\n");
}

void starnn_dist_weights_summary(char *buf, size_t size)
{
	buf[0] = '\0';
	if (!nwp || wcfg.wire == STARNN_DIST_WIRE_NONE)
		return;
	size_t off = 0;
	for (int f = 0; f < STARNN_WIRE_NFORMATS; f++) {
		int n = 0;
		for (int i = 0; i < nwp; i++)
			n += wp[i].fmt == f;
		if (n && off < size)
			off += (size_t)snprintf(buf + off, size - off, "%s%s %d", off ? ", " : "", wformat_name(f), n);
	}
}
