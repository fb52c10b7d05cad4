/* StarPU codelets of the Adam / AdamW update (fp32; CPU, CUDA and OpenCL,
 * the variants that keep packed copies CPU only). The step's bias
 * corrections travel in the args but are not part of the footprint: the
 * cost depends on the shapes only (default shape footprint). */
#include <math.h>
#include <string.h>

#include "codelets/adam.h"
#include "codelets/amp.h"
#include "codelets/convert.h"
#include "codelets/copy.h"
#include "codelets/kernels/adam.h"
#include "codelets/kernels/convert.h"
#include "codelets/kernels/copy.h"
#include "runtime/base/scratch.h"
#include "runtime/core/codelet.h"

static void adam_cpu(void *buffers[], void *cl_arg)
{
	const struct starnn_adam_step *s = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3);
	starnn_adam_cpu(w.rows, w.cols, s, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld);
}

#ifdef STARNN_USE_CUDA
static void adam_cuda(void *buffers[], void *cl_arg)
{
	const struct starnn_adam_step *s = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3);
	starnn_adam_cuda(w.rows, w.cols, s, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("adam");
}
#endif

#ifdef STARNN_USE_OPENCL
static void adam_opencl(void *buffers[], void *cl_arg)
{
	const struct starnn_adam_step *s = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1);
	struct starnn_clmat m = starnn_cl_buffer(buffers, 2), v = starnn_cl_buffer(buffers, 3);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(adam);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "adam", starnn_adam_opencl(ctx, w.rows, w.cols, s, w.mem, w.off, w.ld, g.mem,
		                                                       g.off, g.ld, m.mem, m.off, m.ld, v.mem, v.off, v.ld));
}
#endif

static STARNN_PERFMODEL(adam, fp32);
struct starpu_codelet starnn_adam_cl = {
	.name = "adam",
	.cpu_funcs = {adam_cpu},
	.cpu_funcs_name = {"adam_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {adam_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(adam_opencl)
	.nbuffers = 4,
	.modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW},
	STARNN_MODELS(adam, fp32),
};

static int check_same(const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b)
{
	STARNN_CHECK(starnn_check_like("adam", an, a, bn, b));
	return starnn_check_distinct("adam", an, a, bn, b);
}

static int check_args(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                      const struct starnn_adam_params *p)
{
	if (!w || !grad || !m || !v || !p)
		return starnn_error(STARNN_EINVAL, "adam: w, grad, m, v and params are required");
	starnn_tensor *all[4] = {w, grad, m, v};
	static const char *const names[4] = {"w", "grad", "m", "v"};
	/* (grad may be in a blocked weight layout, read through it) */
	STARNN_CHECK(starnn_check_grad("adam", w, grad));
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			STARNN_CHECK(all[i] == grad || all[j] == grad ? starnn_check_distinct("adam", names[i], all[i], names[j], all[j])
			                                              : check_same(names[i], all[i], names[j], all[j]));
	if (!(p->lr >= 0.0f) || !isfinite(p->lr))
		return starnn_error(STARNN_EINVAL, "adam: invalid learning rate %g", (double)p->lr);
	if (!(p->eps >= 0.0f) || !isfinite(p->eps))
		return starnn_error(STARNN_EINVAL, "adam: invalid eps %g", (double)p->eps);
	if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f) || !(p->beta2 >= 0.0f && p->beta2 < 1.0f))
		return starnn_error(STARNN_EINVAL, "adam: betas must lie in [0, 1), got (%g, %g)", (double)p->beta1,
		                    (double)p->beta2);
	if (!(p->weight_decay >= 0.0f) || !isfinite(p->weight_decay))
		return starnn_error(STARNN_EINVAL, "adam: invalid weight_decay %g", (double)p->weight_decay);
	return 0;
}

/* The step of starnn_adam / starnn_adam_cast and its gradient scale. */
static int check_step(int64_t t, float grad_scale)
{
	if (t < 1)
		return starnn_error(STARNN_EINVAL, "adam: steps count from 1, got %lld", (long long)t);
	if (!isfinite(grad_scale))
		return starnn_error(STARNN_EINVAL, "adam: invalid grad_scale %g", (double)grad_scale);
	return 0;
}

/* Flops per element of the update as the kernels compute it (unscale and
 * L2 term 3, m 3, v 4, denominator 3, w 4), whatever the parameters: the
 * models' footprints are the shapes alone, and StarPU wants one count per
 * footprint. */
#define ADAM_FLOPS_PER_ELEMENT 17.0

/* ------------------------------------------------------ with copies
 * Where w is also kept in a kernel's blocked layout, the update writes
 * those copies too (codelets/copy.h: starnn_submit_with_copies). One
 * codelet per number of copies (1 or 2: a layer's forward and
 * backward-data layouts), adam_copies and adam_amp_copies, the two of a
 * name sharing a perfmodel (starnn_adam_copies_fp32 ...: their footprints
 * differ). */
struct copies_args {
	struct starnn_adam_step s;   /* adam */
	struct starnn_adam_params p; /* adam_amp */
	struct starnn_copies c;
};

struct rows_ctx {
	const struct copies_args *a;
	struct starnn_mat w, g, m, v, st, f;
};

static void adam_tile(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1)
{
	const struct rows_ctx *c = ctx;
	float *w = c->w.ptr, *m = c->m.ptr, *v = c->v.ptr;
	size_t ldg;
	const float *g = starnn_copies_grad(&c->a->c, c->g.ptr, c->g.ld, r0, r1, c0, c1, &ldg);
	if (g)
		starnn_adam_cpu(r1 - r0, c1 - c0, &c->a->s, w + r0 * c->w.ld + c0, c->w.ld, g, ldg, m + r0 * c->m.ld + c0,
		                c->m.ld, v + r0 * c->v.ld + c0, c->v.ld);
}

static void adam_amp_tile(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1)
{
	const struct rows_ctx *c = ctx;
	float *w = c->w.ptr, *m = c->m.ptr, *v = c->v.ptr;
	size_t ldg;
	const float *g = starnn_copies_grad(&c->a->c, c->g.ptr, c->g.ld, r0, r1, c0, c1, &ldg);
	if (g)
		starnn_adam_amp_cpu(r1 - r0, c1 - c0, &c->a->p, c->st.ptr, c->f.ptr, w + r0 * c->w.ld + c0, c->w.ld, g, ldg,
		                    m + r0 * c->m.ld + c0, c->m.ld, v + r0 * c->v.ld + c0, c->v.ld);
}

static struct rows_ctx rows_ctx(void *buffers[], const struct copies_args *a)
{
	struct rows_ctx c = {a, starnn_buffer(buffers, 0), starnn_buffer(buffers, 1), starnn_buffer(buffers, 2),
	                     starnn_buffer(buffers, 3), {0}, {0}};
	return c;
}

static void adam_copies_cpu(void *buffers[], void *cl_arg)
{
	struct rows_ctx c = rows_ctx(buffers, cl_arg);
	starnn_copies_run(buffers, 4, &c.a->c, adam_tile, &c);
}

static void adam_amp_copies_cpu(void *buffers[], void *cl_arg)
{
	struct rows_ctx c = rows_ctx(buffers, cl_arg);
	c.st = starnn_buffer(buffers, 4), c.f = starnn_buffer(buffers, 5);
	if (((const float *)c.f.ptr)[0] != 0.0f)
		return; /* a skipped step: w and its copies stay */
	starnn_copies_run(buffers, 6, &c.a->c, adam_amp_tile, &c);
}

static STARNN_PERFMODEL(adam_copies, fp32);
static STARNN_PERFMODEL(adam_amp_copies, fp32);
STARNN_COPIES_CL(adam_copies0, adam_copies, adam_copies_cpu, 4, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW)
STARNN_COPIES_CL(adam_copies1, adam_copies, adam_copies_cpu, 5, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW)
STARNN_COPIES_CL(adam_copies2, adam_copies, adam_copies_cpu, 6, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW,
          STARPU_RW)
STARNN_COPIES_CL(adam_amp_copies0, adam_amp_copies, adam_amp_copies_cpu, 6, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW,
          STARPU_R, STARPU_R)
STARNN_COPIES_CL(adam_amp_copies1, adam_amp_copies, adam_amp_copies_cpu, 7, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW,
          STARPU_R, STARPU_R, STARPU_RW)
STARNN_COPIES_CL(adam_amp_copies2, adam_amp_copies, adam_amp_copies_cpu, 8, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW,
          STARPU_R, STARPU_R, STARPU_RW, STARPU_RW)

int starnn_adam(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                const struct starnn_adam_params *params, int64_t t, float grad_scale)
{
	STARNN_CHECK(check_args(w, grad, m, v, params));
	const struct starnn_adam_params *p = params;
	STARNN_CHECK(check_step(t, grad_scale));

	struct copies_args a;
	memset(&a, 0, sizeof a);
	starnn_adam_step_init(&a.s, p, t, grad_scale);
	struct starnn_task_desc d = {.cl = &starnn_adam_cl, .args = &a.s, .args_size = sizeof a.s,
	                             .flops = ADAM_FLOPS_PER_ELEMENT * (double)(w->rows * w->cols),
	                             .tensors = {w, grad, m, v}};
	static struct starpu_codelet *const cl[STARNN_MAX_COPIES + 1] = {&adam_copies0_cl, &adam_copies1_cl,
	                                                                 &adam_copies2_cl};
	return starnn_submit_with_copies(&d, 4, w, grad, &a.c, &a, sizeof a, cl);
}

/* ------------------------------------------------------------- adam_amp */

static void adam_amp_cpu(void *buffers[], void *cl_arg)
{
	const struct starnn_adam_params *p = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3);
	struct starnn_mat st = starnn_buffer(buffers, 4), f = starnn_buffer(buffers, 5);
	starnn_adam_amp_cpu(w.rows, w.cols, p, st.ptr, f.ptr, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld);
}

#ifdef STARNN_USE_CUDA
static void adam_amp_cuda(void *buffers[], void *cl_arg)
{
	const struct starnn_adam_params *p = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3);
	struct starnn_mat st = starnn_buffer(buffers, 4), f = starnn_buffer(buffers, 5);
	starnn_adam_amp_cuda(w.rows, w.cols, p, st.ptr, f.ptr, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld,
	                     starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("adam_amp");
}
#endif

#ifdef STARNN_USE_OPENCL
static void adam_amp_opencl(void *buffers[], void *cl_arg)
{
	const struct starnn_adam_params *p = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1);
	struct starnn_clmat m = starnn_cl_buffer(buffers, 2), v = starnn_cl_buffer(buffers, 3);
	struct starnn_clmat st = starnn_cl_buffer(buffers, 4), f = starnn_cl_buffer(buffers, 5);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(adam);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "adam_amp",
		                       starnn_adam_amp_opencl(ctx, w.rows, w.cols, p, st.mem, st.off, f.mem, f.off, w.mem,
		                                              w.off, w.ld, g.mem, g.off, g.ld, m.mem, m.off, m.ld, v.mem,
		                                              v.off, v.ld));
}
#endif

static STARNN_PERFMODEL(adam_amp, fp32);
static struct starpu_codelet adam_amp_cl = {
	.name = "adam_amp",
	.cpu_funcs = {adam_amp_cpu},
	.cpu_funcs_name = {"adam_amp_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {adam_amp_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(adam_amp_opencl)
	.nbuffers = 6,
	.modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_R, STARPU_R},
	STARNN_MODELS(adam_amp, fp32),
};

int starnn_adam_amp(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                    const struct starnn_adam_params *params, starnn_tensor *state, starnn_tensor *flag)
{
	STARNN_CHECK(check_args(w, grad, m, v, params));
	STARNN_CHECK(starnn_amp_check("adam_amp", state, flag));
	struct copies_args a;
	memset(&a, 0, sizeof a);
	a.p = *params;
	a.p.decoupled = params->decoupled != 0;
	struct starnn_task_desc d = {
		.cl = &adam_amp_cl, .args = &a.p, .args_size = sizeof a.p,
		.flops = ADAM_FLOPS_PER_ELEMENT * (double)(w->rows * w->cols),
		.tensors = {w, grad, m, v, state, flag}};
	static struct starpu_codelet *const cl[STARNN_MAX_COPIES + 1] = {&adam_amp_copies0_cl, &adam_amp_copies1_cl,
	                                                                 &adam_amp_copies2_cl};
	return starnn_submit_with_copies(&d, 6, w, grad, &a.c, &a, sizeof a, cl);
}

/* -------------------------------------------- with the compute copy h */

struct cast_args {
	struct starnn_adam_step s;   /* adam_cast */
	struct starnn_adam_params p; /* adam_amp_cast */
	uint32_t hdt;                /* h's dtype */
	struct starnn_copies c;      /* adam_cast_copies */
};

static void adam_cast_cpu(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3), h = starnn_buffer(buffers, 4);
	starnn_adam_cast_cpu(w.rows, w.cols, &a->s, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld,
	                     (starnn_dtype)a->hdt, h.ptr, h.ld);
}

static void adam_amp_cast_cpu(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3);
	struct starnn_mat st = starnn_buffer(buffers, 4), f = starnn_buffer(buffers, 5), h = starnn_buffer(buffers, 6);
	starnn_adam_amp_cast_cpu(w.rows, w.cols, &a->p, st.ptr, f.ptr, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr,
	                         v.ld, (starnn_dtype)a->hdt, h.ptr, h.ld);
}

#ifdef STARNN_USE_CUDA
static void narrow_cuda(const struct cast_args *a, struct starnn_mat w, struct starnn_mat h, void *stream)
{
	if (a->hdt == STARNN_BF16)
		starnn_convert_fp32_to_bf16_cuda(w.rows, w.cols, w.ptr, w.ld, h.ptr, h.ld, stream);
	else
		starnn_convert_fp32_to_fp16_cuda(w.rows, w.cols, w.ptr, w.ld, h.ptr, h.ld, stream);
}

static void adam_cast_cuda(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3), h = starnn_buffer(buffers, 4);
	void *stream = starnn_cuda_stream();
	starnn_adam_cuda(w.rows, w.cols, &a->s, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld, stream);
	narrow_cuda(a, w, h, stream);
	STARNN_CUDA_LAUNCHED("adam_cast");
}

static void adam_amp_cast_cuda(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	struct starnn_mat m = starnn_buffer(buffers, 2), v = starnn_buffer(buffers, 3);
	struct starnn_mat st = starnn_buffer(buffers, 4), f = starnn_buffer(buffers, 5), h = starnn_buffer(buffers, 6);
	void *stream = starnn_cuda_stream();
	starnn_adam_amp_cuda(w.rows, w.cols, &a->p, st.ptr, f.ptr, w.ptr, w.ld, g.ptr, g.ld, m.ptr, m.ld, v.ptr, v.ld,
	                     stream);
	narrow_cuda(a, w, h, stream); /* a skipped step left w, so h comes out as it was */
	STARNN_CUDA_LAUNCHED("adam_amp_cast");
}
#define CAST_CUDA(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CAST_CUDA(fn)
#endif

#ifdef STARNN_USE_OPENCL
static void adam_cast_opencl(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1);
	struct starnn_clmat m = starnn_cl_buffer(buffers, 2), v = starnn_cl_buffer(buffers, 3),
	                    h = starnn_cl_buffer(buffers, 4);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(adam);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "adam_cast",
		                       starnn_adam_cast_opencl(ctx, w.rows, w.cols, &a->s, w.mem, w.off, w.ld, g.mem, g.off,
		                                               g.ld, m.mem, m.off, m.ld, v.mem, v.off, v.ld,
		                                               (starnn_dtype)a->hdt, h.mem, h.off, h.ld));
}

static void adam_amp_cast_opencl(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1);
	struct starnn_clmat m = starnn_cl_buffer(buffers, 2), v = starnn_cl_buffer(buffers, 3);
	struct starnn_clmat st = starnn_cl_buffer(buffers, 4), f = starnn_cl_buffer(buffers, 5),
	                    h = starnn_cl_buffer(buffers, 6);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(adam);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "adam_amp_cast",
		                       starnn_adam_amp_cast_opencl(ctx, w.rows, w.cols, &a->p, st.mem, st.off, f.mem, f.off,
		                                                   w.mem, w.off, w.ld, g.mem, g.off, g.ld, m.mem, m.off, m.ld,
		                                                   v.mem, v.off, v.ld, (starnn_dtype)a->hdt, h.mem, h.off,
		                                                   h.ld));
}
#endif

/* One codelet per dtype of h (its perfmodel starnn_<op>_<dtype>). */
#define CAST_CL(op, dt, nb, ...)                                                                              \
	static STARNN_PERFMODEL(op, dt);                                                                    \
	static struct starpu_codelet op##_##dt##_cl = {                                                     \
		.name = #op "_" #dt,                                                                        \
		.cpu_funcs = {op##_cpu},                                                                    \
		.cpu_funcs_name = {#op "_cpu"},                                                             \
		CAST_CUDA(op##_cuda) STARNN_OPENCL_FUNCS(op##_opencl).nbuffers = nb,                        \
		.modes = {__VA_ARGS__},                                                                     \
		STARNN_MODELS(op, dt),                                                                      \
	};
CAST_CL(adam_cast, fp16, 5, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_W)
CAST_CL(adam_cast, bf16, 5, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_W)
CAST_CL(adam_amp_cast, fp16, 7, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_RW)
CAST_CL(adam_amp_cast, bf16, 7, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_RW)

/* adam_cast where h is also kept in a kernel's blocked layouts (conv2d's
 * packed weights: bf16 in pairs for AVX512-BF16 kernels, fp32 where the
 * passes widen 16-bit weights; runtime/core/tensor.h): the task updates w and
 * rounds it into h tile by tile, and writes each tile's values of h into
 * the copies while they are in cache (codelets/copy.h), instead of a
 * packing task reading h again before the next convolution. CPU only;
 * perfmodels starnn_adam_cast_copies_<h's dtype>, shared by the codelets
 * of 1 and 2 copies. */
struct cast_ctx {
	const struct cast_args *a;
	struct starnn_mat w, g, m, v, h;
};

/* Updates a tile of w, rounds it into h, and returns h's tile widened (in
 * this thread's scratch) for the copies: fp32 copies take those values,
 * bf16 ones round them back to h's bits. */
static const float *cast_tile(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1, size_t *ldt)
{
	const struct cast_ctx *c = ctx;
	const starnn_dtype hdt = (starnn_dtype)c->a->hdt;
	const size_t es = starnn_dtype_size(hdt), rows = r1 - r0, cols = c1 - c0;
	float *r = starnn_scratch(STARNN_SCRATCH_HALF, (rows * cols > 0 ? rows * cols : 1) * sizeof(float));
	if (!r) {
		starnn_defer_error(STARNN_ENOMEM, "adam_cast_copies: cannot allocate %zu x %zu floats of scratch", rows, cols);
		return NULL;
	}
	float *w = (float *)c->w.ptr + r0 * c->w.ld + c0, *m = (float *)c->m.ptr + r0 * c->m.ld + c0,
	      *v = (float *)c->v.ptr + r0 * c->v.ld + c0;
	size_t ldg;
	const float *g = starnn_copies_grad(&c->a->c, c->g.ptr, c->g.ld, r0, r1, c0, c1, &ldg);
	if (!g)
		return NULL;
	void *h = (char *)c->h.ptr + (r0 * c->h.ld + c0) * es;
	starnn_adam_cast_cpu(rows, cols, &c->a->s, w, c->w.ld, g, ldg, m, c->m.ld, v, c->v.ld, hdt, h, c->h.ld);
	starnn_convert_cpu(hdt, STARNN_FP32, rows, cols, h, c->h.ld, r, cols);
	*ldt = cols;
	return r;
}

static void adam_cast_copies_cpu(void *buffers[], void *cl_arg)
{
	const struct cast_args *a = cl_arg;
	struct cast_ctx c = {a, starnn_buffer(buffers, 0), starnn_buffer(buffers, 1), starnn_buffer(buffers, 2),
	                     starnn_buffer(buffers, 3), starnn_buffer(buffers, 4)};
	void *copies[STARNN_MAX_COPIES];
	const int n = a->c.n < STARNN_MAX_COPIES ? a->c.n : STARNN_MAX_COPIES;
	for (int i = 0; i < n; i++)
		copies[i] = starnn_buffer(buffers, 5 + i).ptr;
	starnn_tiles_with_copies(c.w.rows, c.w.cols, cast_tile, &c, n, a->c.L, copies, &a->c.G);
}

#define CAST_COPIES_CL(dt, n, ...)                                                                            \
	STARNN_COPIES_CL_DT(adam_cast_copies##n##_##dt, "adam_cast_copies_" #dt, adam_cast_copies, dt,              \
	                    adam_cast_copies_cpu, 5 + n, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_W, __VA_ARGS__)
static STARNN_PERFMODEL(adam_cast_copies, fp16);
static STARNN_PERFMODEL(adam_cast_copies, bf16);
#define CAST_COPIES0_CL(dt)                                                                                   \
	STARNN_COPIES_CL_DT(adam_cast_copies0_##dt, "adam_cast_copies_" #dt, adam_cast_copies, dt,                 \
	                    adam_cast_copies_cpu, 5, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_W)
CAST_COPIES0_CL(fp16)
CAST_COPIES0_CL(bf16)
CAST_COPIES_CL(fp16, 1, STARPU_RW)
CAST_COPIES_CL(fp16, 2, STARPU_RW, STARPU_RW)
CAST_COPIES_CL(bf16, 1, STARPU_RW)
CAST_COPIES_CL(bf16, 2, STARPU_RW, STARPU_RW)

/* Whether t has copies that its writers keep current. */
static int has_copies(starnn_tensor *t)
{
	struct starnn_derived *c[STARNN_MAX_COPIES];
	return starnn_tensor_copies(t, c, STARNN_MAX_COPIES) > 0;
}

/* Whether h can take the fused update: a 16-bit tensor of w's shape, and w
 * without copies that its writers keep current (the two-task path keeps
 * them); with_h: h may have such copies (adam_cast writes them; the fused
 * adam_amp_cast does not). 1: fused; 0: two tasks; < 0: an error. */
static int cast_fused(const char *op, starnn_tensor *w, starnn_tensor *h, int with_h)
{
	char d[128];
	if (!h)
		return starnn_error(STARNN_EINVAL, "%s: h is NULL", op);
	if (h->dtype != STARNN_FP16 && h->dtype != STARNN_BF16)
		return starnn_error(STARNN_EINVAL, "%s: h must be fp16 or bf16, got %s", op,
		                    starnn_tensor_describe(h, d, sizeof d));
	if (h->rows != w->rows || h->cols != w->cols)
		return starnn_error(STARNN_EINVAL, "%s: h %s is not shaped like w", op,
		                    starnn_tensor_describe(h, d, sizeof d));
	return !has_copies(w) && (with_h || !has_copies(h));
}

int starnn_adam_cast(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                     const struct starnn_adam_params *params, int64_t t, float grad_scale, starnn_tensor *h)
{
	STARNN_CHECK(check_args(w, grad, m, v, params));
	int fused = cast_fused("adam_cast", w, h, 1);
	STARNN_CHECK(fused);
	if (!fused) {
		STARNN_CHECK(starnn_adam(w, grad, m, v, params, t, grad_scale));
		return starnn_convert(w, h);
	}
	STARNN_CHECK(check_step(t, grad_scale));
	struct cast_args a;
	memset(&a, 0, sizeof a);
	starnn_adam_step_init(&a.s, params, t, grad_scale);
	a.hdt = (uint32_t)h->dtype;
	const int bf16 = h->dtype == STARNN_BF16;
	struct starnn_task_desc d = {.cl = bf16 ? &adam_cast_bf16_cl : &adam_cast_fp16_cl,
	                             .args = &a, .args_size = sizeof a,
	                             .flops = ADAM_FLOPS_PER_ELEMENT * (double)(w->rows * w->cols),
	                             .tensors = {w, grad, m, v, h}};
	static struct starpu_codelet *const cl[2][STARNN_MAX_COPIES + 1] = {
	    {&adam_cast_copies0_fp16_cl, &adam_cast_copies1_fp16_cl, &adam_cast_copies2_fp16_cl},
	    {&adam_cast_copies0_bf16_cl, &adam_cast_copies1_bf16_cl, &adam_cast_copies2_bf16_cl}};
	return starnn_submit_with_copies(&d, 5, h, grad, &a.c, &a, sizeof a, cl[bf16]);
}

int starnn_adam_amp_cast(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                         const struct starnn_adam_params *params, starnn_tensor *state, starnn_tensor *flag,
                         starnn_tensor *h)
{
	STARNN_CHECK(check_args(w, grad, m, v, params));
	STARNN_CHECK(starnn_amp_check("adam_amp", state, flag));
	int fused = cast_fused("adam_amp_cast", w, h, 0);
	STARNN_CHECK(fused);
	if (!fused || grad->wl.ob) { /* (a blocked gradient is read in adam_amp's tiles) */
		STARNN_CHECK(starnn_adam_amp(w, grad, m, v, params, state, flag));
		return starnn_convert(w, h);
	}
	struct cast_args a;
	memset(&a, 0, sizeof a);
	a.p = *params;
	a.p.decoupled = params->decoupled != 0;
	a.hdt = (uint32_t)h->dtype;
	struct starnn_task_desc d = {.cl = h->dtype == STARNN_BF16 ? &adam_amp_cast_bf16_cl : &adam_amp_cast_fp16_cl,
	                             .args = &a, .args_size = sizeof a,
	                             .flops = ADAM_FLOPS_PER_ELEMENT * (double)(w->rows * w->cols),
	                             .tensors = {w, grad, m, v, state, flag, h}};
	return starnn_submit(&d);
}
