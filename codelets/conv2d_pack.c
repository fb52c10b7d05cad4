/* conv2d's weights in oneDNN's layouts (codelets/conv2d_internal.h): the
 * copies the oneDNN passes read instead of reordering w in every call
 * (packed per pass and geometry, or one whole blocked copy whose slices
 * the channel-split forwards and convt2d's passes read), made by pack
 * tasks and kept current by the optimizers; and the weight gradients
 * written in oneDNN's own layouts. */

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "codelets/conv2d_internal.h"
#include "codelets/copy.h"
#include "codelets/kernels/copy.h"
#include "codelets/halfwrap.h"
#include "runtime/core/init.h" /* (starnn_ndevice_workers) */

#define BUF(i) starnn_buffer(buffers, i)

/* The pack tasks' arguments: the footprint key, and the derived tensor's
 * key in w; routes: the task's (after the key). */
struct pack_args {
	uint32_t pass, dt, n, c, o, h, w, k, xb, yb, lda, ldout;
	float beta;
	uint32_t bytes; /* size of the packed buffer */
	struct starnn_conv2d_routes routes;
};
#define PACK_KEY_BYTES (offsetof(struct pack_args, bytes))

static struct starnn_conv2d_geom pack_geom(const struct pack_args *p)
{
	struct starnn_conv2d_geom g = {p->n, p->c, p->o, p->h, p->w, p->k, p->xb, p->yb, 0, 0, 0};
	return g;
}

static uint32_t pack_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, PACK_KEY_BYTES);
}

/* A pack task: w packed for one pass (args: struct pack_args); 16-bit w
 * that the passes widen, widened first. */
static void pack_dt(void *buffers[], void *cl_arg, starnn_dtype unused)
{
	const struct pack_args *p = cl_arg;
	struct starnn_conv2d_geom g = pack_geom(p);
	struct starnn_mat w = BUF(0), wp = BUF(1);
	const starnn_dtype dt = (starnn_dtype)p->dt;
	if (!starnn_conv2d_widened_cpu(&g, dt, &p->routes)) {
		starnn_conv2d_done(starnn_conv2d_dnnl_pack((enum starnn_conv2d_pass)p->pass, &g, dt, &p->routes, p->lda,
		                                           w.ptr, w.ld, p->ldout, p->beta, wp.ptr, p->bytes));
		return;
	}
	struct starnn_hw h;
	starnn_hw_begin(&h, "conv2d_pack_weight", 0);
	struct starnn_mat ww = starnn_hw_in(&h, dt, w, 1);
	if (!h.failed)
		starnn_conv2d_done(starnn_conv2d_dnnl_pack((enum starnn_conv2d_pass)p->pass, &g, STARNN_FP32, &p->routes,
		                                           p->lda, ww.ptr, ww.ld, p->ldout, p->beta, wp.ptr, p->bytes));
	starnn_hw_end(&h);
}

/* A whole copy of w in a blocked layout (codelets/copy.h:
 * starnn_blocked_make_cpu), which the forward passes of w's row parts
 * read slices of: args the layout. */
static void pack_blocked_dt(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	struct starnn_mat w = BUF(0), c = BUF(1);
	struct starnn_hw h;
	starnn_hw_begin(&h, "conv2d_pack_blocked", 0);
	struct starnn_mat ww = starnn_hw_in(&h, dt, w, 1); /* (16-bit: widened) */
	if (!h.failed)
		starnn_blocked_make_cpu(cl_arg, ww.ptr, ww.ld, c.ptr);
	starnn_hw_end(&h);
}

STARNN_CONV2D_CPU_CL(pack_weight, "conv2d_pack_weight", pack_dt, fp32, STARNN_FP32, pack_footprint, 2, STARPU_R,
                     STARPU_W)
STARNN_CONV2D_CPU_CL(pack_weight, "conv2d_pack_weight_bf16", pack_dt, bf16, STARNN_BF16, pack_footprint, 2, STARPU_R,
                     STARPU_W)
STARNN_CONV2D_CPU_CL(pack_weight, "conv2d_pack_weight_fp16", pack_dt, fp16, STARNN_FP16, pack_footprint, 2, STARPU_R,
                     STARPU_W)
STARNN_CONV2D_CPU_CL(pack_blocked, "conv2d_pack_blocked", pack_blocked_dt, fp32, STARNN_FP32, starnn_footprint_shape,
                     2, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(pack_blocked, "conv2d_pack_blocked_fp16", pack_blocked_dt, fp16, STARNN_FP16,
                     starnn_footprint_shape, 2, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(pack_blocked, "conv2d_pack_blocked_bf16", pack_blocked_dt, bf16, STARNN_BF16,
                     starnn_footprint_shape, 2, STARPU_R, STARPU_W)

static uint64_t packs_submitted;

uint64_t starnn_conv2d_pack_count(void)
{
	return __atomic_load_n(&packs_submitted, __ATOMIC_RELAXED);
}

/* FNV-1a of n bytes from h: the derived tensors' keys in w. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* A new derived entry of w under key: a u8 tensor of `bytes` named
 * "<w's name>.<suffix>" (cut to a tensor name's length), or none (bytes
 * 0: remembered as needing no copy). NULL where w has no room for one
 * more entry (the caller goes without) or the tensor cannot be made (*rc). */
static struct starnn_derived *derived_new(starnn_tensor *w, uint64_t key, const char *suffix, size_t bytes, int *rc)
{
	starnn_tensor *t = NULL;
	if (bytes) {
		char name[STARNN_NAME_MAX + 16];
		snprintf(name, sizeof name, "%s.%s", w->name, suffix);
		name[STARNN_NAME_MAX - 1] = 0;
		int64_t shape[1] = {(int64_t)bytes};
		if ((*rc = starnn_tensor_create(&t, name, STARNN_U8, 1, shape)) < 0)
			return NULL;
	}
	struct starnn_derived *d = starnn_tensor_add_derived(w, key, t);
	if (!d)
		starnn_tensor_destroy(t);
	return d;
}

/* Makes d's copy again from w by a task of cl (args, size bytes) where w
 * has been written since it was last made. */
static int derived_update(struct starnn_derived *d, starnn_tensor *w, struct starpu_codelet *cl, const void *args,
                          size_t size)
{
	if (d->version == w->version)
		return 0;
	struct starnn_task_desc t = {.cl = cl, .args = args, .args_size = size, .flops = STARNN_NO_FLOPS,
	                             .tensors = {w, d->d}};
	STARNN_CHECK(starnn_submit(&t));
	d->version = w->version;
	__atomic_add_fetch(&packs_submitted, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The row strides of a pass's input (x / dy) and output (y / dx) as the
 * widened 16-bit passes hand them to the fp32 primitive: dense copies
 * (codelets/halfwrap.h). */
static void widened_lds(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, size_t *lda, size_t *ldout)
{
	const size_t hw = g->h * g->w;
	*lda = (pass == STARNN_CONV2D_FWD ? g->c : g->o) * hw;
	*ldout = (pass == STARNN_CONV2D_FWD ? g->o : g->c) * hw;
}

/* (the fp32 copy of widened 16-bit w is packed for the fp32 primitive on
 * the tasks' dense widened activations) */
starnn_tensor *starnn_conv2d_packed_copy(starnn_tensor *w, enum starnn_conv2d_pass pass,
                                         const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                         const struct starnn_conv2d_routes *r, size_t lda, size_t ldout, float beta,
                                         int *rc)
{
	*rc = 0;
	if (!starnn_conv2d_pack() || starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL || w->parent ||
	    starnn_ndevice_workers() > 0 || (unsigned)dt >= STARNN_NDTYPES)
		return NULL;
	/* 16-bit weights widened in the passes: an fp32 copy of the widened
	 * values, for the fp32 primitive on the tasks' dense widened
	 * activations (codelets/halfwrap.h) */
	const int widen = starnn_conv2d_widened_cpu(g, dt, r);
	if (widen)
		widened_lds(pass, g, &lda, &ldout);
	const starnn_dtype pdt = widen ? STARNN_FP32 : dt;
	struct pack_args p;
	memset(&p, 0, sizeof p);
	p = (struct pack_args){(uint32_t)pass, (uint32_t)dt, (uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->o,
	                       (uint32_t)g->h, (uint32_t)g->w, (uint32_t)g->k, (uint32_t)g->xb, (uint32_t)g->yb,
	                       (uint32_t)lda, (uint32_t)ldout, beta, 0, *r};
	const uint64_t key = fnv1a(1469598103934665603ull, &p, PACK_KEY_BYTES);
	struct starnn_derived *d = starnn_tensor_derived(w, key);
	if (!d) {
		struct starnn_blocked_weights layout;
		size_t bytes = starnn_conv2d_dnnl_pack_info(pass, g, pdt, r, lda, w->ld, ldout, beta, &layout);
		d = derived_new(w, key, pass == STARNN_CONV2D_FWD ? "packed" : "packed_bwd", bytes <= UINT32_MAX ? bytes : 0,
		                rc);
		if (!d)
			return NULL;
		/* the optimizers (and the convert from fp32 masters) keep fp32
		 * and bf16 copies in these layouts current as they write w
		 * (codelets/copy.h); "tasks": packing tasks only */
		if (d->d && (pdt == STARNN_FP32 || pdt == STARNN_BF16) && starnn_conv2d_pack() == STARNN_CONV2D_PACK_ON)
			d->layout = layout;
	}
	if (!d->d)
		return NULL;
	starnn_tensor_use_derived(d);
	p.bytes = (uint32_t)d->d->cols;
	static struct starpu_codelet *const pack_cls[STARNN_NDTYPES] = {&pack_weight_fp32_cl, &pack_weight_fp16_cl,
	                                                                 &pack_weight_bf16_cl};
	if ((*rc = derived_update(d, w, pack_cls[dt], &p, sizeof p)) < 0)
		return NULL;
	return d->d;
}

/* (the same copy for every part: the output-channel blocks are outermost;
 * made by a conv2d_pack_blocked task when the root was written since, and
 * kept current by the optimizers like the packed copies) */
starnn_tensor *starnn_conv2d_sliced_copy(starnn_tensor *w, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                         const struct starnn_conv2d_routes *r, size_t lda, size_t ldout, int *rc)
{
	*rc = 0;
	starnn_tensor *root;
	size_t row0;
	if (starnn_conv2d_pack() != STARNN_CONV2D_PACK_ON || starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL ||
	    (unsigned)dt >= STARNN_NDTYPES || starnn_ndevice_workers() > 0 || !w->parent ||
	    !starnn_tensor_row_part(w, &root, &row0) || root->dtype != dt)
		return NULL;
	/* fp32, 16-bit widened (an fp32 copy of the widened values), or native
	 * bf16 (a copy in the bf16 kernels' pairs) */
	const int widen = starnn_conv2d_widened_cpu(g, dt, r);
	if (widen)
		widened_lds(STARNN_CONV2D_FWD, g, &lda, &ldout);
	struct starnn_blocked_weights L;
	if (!starnn_conv2d_dnnl_pack_info(STARNN_CONV2D_FWD, g, widen ? STARNN_FP32 : dt, r, lda, w->ld, ldout, 0.0f,
	                                  &L) ||
	    !L.ob || row0 % L.ob)
		return NULL;
	return starnn_conv2d_blocked_copy(root, &L, rc);
}

starnn_tensor *starnn_conv2d_blocked_copy(starnn_tensor *root, const struct starnn_blocked_weights *layout, int *rc)
{
	*rc = 0;
	if ((unsigned)root->dtype >= STARNN_NDTYPES || root->parent || !layout->ob)
		return NULL;
	struct starnn_blocked_weights L = *layout;
	if (L.trans) /* (the whole tensor: its rows are L's i, its columns L's o x taps) */
		L.i = (uint32_t)root->rows, L.o = (uint32_t)(root->cols / L.taps);
	else
		L.o = (uint32_t)root->rows;
	L.header = (uint32_t)sizeof L;
	L.align = 64;
	/* the key: the layout, apart from the packed copies' keys */
	const uint64_t key = fnv1a(0x736c69636564ull /* "sliced" */, &L, sizeof L);
	struct starnn_derived *d = starnn_tensor_derived(root, key);
	if (!d) {
		if (!(d = derived_new(root, key, "blocked", starnn_blocked_weights_bytes(&L), rc)))
			return NULL;
		d->layout = L;
	}
	static struct starpu_codelet *const cls[STARNN_NDTYPES] = {&pack_blocked_fp32_cl, &pack_blocked_fp16_cl,
	                                                            &pack_blocked_bf16_cl};
	if ((*rc = derived_update(d, root, cls[root->dtype], &L, sizeof L)) < 0)
		return NULL;
	starnn_tensor_use_derived(d);
	return d->d;
}

/* ------------------------------------- weight gradients in oneDNN's layouts
 * The layout the weight-gradient tasks write dw in, chosen by its first
 * writer (runtime/core/tensor.h: wl): where one task writes all of dw, as
 * yet unwritten, on oneDNN's primitive for the whole image (a CPU with no
 * device worker, CUDA or OpenCL; packing not off), whose dw layout is a blocked one that the
 * optimizers read, that layout: no reorder after the primitive, and the
 * optimizer reads the gradient's tiles through it (codelets/copy.h:
 * starnn_copies_grad); else OIHW. A tensor can take them only where
 * runtime/core/tensor.h allows (one rank). */
int starnn_dw_layout_open(const starnn_tensor *dw, int one_task)
{
	return !dw->wl_fixed && one_task && dw->version == 0 && !dw->parent && !dw->nplans && dw->ld == dw->cols &&
	       starnn_tensor_wlayouts_allowed() && starnn_conv2d_pack() != STARNN_CONV2D_PACK_OFF &&
	       starnn_conv2d_cpu_backend() == STARNN_CONV2D_DNNL && starnn_ndevice_workers() == 0;
}

int starnn_dw_layout_check(const char *op, const starnn_tensor *dw, int one_task)
{
	char d[128], l[24];
	if (dw->wl.ob && (!one_task || starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL))
		return starnn_error(STARNN_EINVAL, "%s: dw %s is in layout %s, which only one oneDNN task writes", op,
		                    starnn_tensor_describe(dw, d, sizeof d), starnn_wlayout_name(&dw->wl, l, sizeof l));
	return 0;
}

int starnn_conv2d_dw_blocked_whole(const starnn_tensor *dw, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                   const struct starnn_conv2d_routes *r)
{
	struct starnn_blocked_weights L;
	if (dw->wl_fixed)
		return dw->wl.ob != 0;
	return starnn_dw_layout_open(dw, 1) &&
	       starnn_conv2d_dnnl_dw_layout(g, starnn_conv2d_widened_cpu(g, dt, r) ? STARNN_FP32 : dt, r, &L);
}

int starnn_conv2d_dw_layout(starnn_tensor *dw, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, int parts, struct starnn_blocked_weights *L)
{
	if (!dw->wl_fixed) {
		struct starnn_blocked_weights l;
		memset(&l, 0, sizeof l);
		if (starnn_dw_layout_open(dw, parts == 1))
			starnn_conv2d_dnnl_dw_layout(g, starnn_conv2d_widened_cpu(g, dt, r) ? STARNN_FP32 : dt, r, &l);
		STARNN_CHECK(starnn_tensor_set_wlayout(dw, &l));
	}
	STARNN_CHECK(starnn_dw_layout_check("conv2d_bwd_weight", dw, parts == 1));
	*L = dw->wl;
	return 0;
}

/* The weight gradient's checks (x, dy, dw and db, which may be NULL), g
 * filled. */
