/* StarPU codelets of the SGD update (fp32): CPU, CUDA and OpenCL (the
 * variants that keep packed copies: CPU only). */
#include <math.h>
#include <string.h>

#include "codelets/amp.h"
#include "codelets/copy.h"
#include "codelets/kernels/sgd.h"
#include "codelets/sgd.h"
#include "runtime/core/codelet.h"

static void sgd_cpu(void *buffers[], void *cl_arg)
{
	const struct starnn_sgd_step *s = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1), b = starnn_buffer(buffers, 2);
	starnn_sgd_cpu(w.rows, w.cols, s, w.ptr, w.ld, g.ptr, g.ld, b.ptr, b.ld);
}

#ifdef STARNN_USE_CUDA
static void sgd_cuda(void *buffers[], void *cl_arg)
{
	const struct starnn_sgd_step *s = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1), b = starnn_buffer(buffers, 2);
	starnn_sgd_cuda(w.rows, w.cols, s, w.ptr, w.ld, g.ptr, g.ld, b.ptr, b.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("sgd");
}
#endif

#ifdef STARNN_USE_OPENCL
static void sgd_opencl(void *buffers[], void *cl_arg)
{
	const struct starnn_sgd_step *s = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1),
	                    b = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(sgd);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "sgd", starnn_sgd_opencl(ctx, w.rows, w.cols, s, w.mem, w.off, w.ld, g.mem, g.off,
		                                                     g.ld, b.mem, b.off, b.ld));
}
#endif

static STARNN_PERFMODEL(sgd, fp32);
struct starpu_codelet starnn_sgd_cl = {
	.name = "sgd",
	.cpu_funcs = {sgd_cpu},
	.cpu_funcs_name = {"sgd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {sgd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(sgd_opencl)
	.nbuffers = 3,
	.modes = {STARPU_RW, STARPU_R, STARPU_RW},
	STARNN_MODELS(sgd, fp32),
};

/* Flops per element of the update with momentum and weight decay (the
 * gradient 3, the momentum buffer 3, w 2), whatever the parameters: the
 * models' footprints are the shapes alone, and StarPU wants one count per
 * footprint. */
#define SGD_FLOPS_PER_ELEMENT 8.0

static int check_same(const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b)
{
	STARNN_CHECK(starnn_check_like("sgd", an, a, bn, b));
	return starnn_check_distinct("sgd", an, a, bn, b);
}

static int check_args(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *buf, const struct starnn_sgd_params *p)
{
	if (!w || !grad || !buf || !p)
		return starnn_error(STARNN_EINVAL, "sgd: w, grad, buf and params are required (buf even without momentum)");
	/* (grad may be in a blocked weight layout, read through it) */
	STARNN_CHECK(starnn_check_grad("sgd", w, grad));
	STARNN_CHECK(starnn_check_distinct("sgd", "w", w, "grad", grad));
	STARNN_CHECK(check_same("w", w, "buf", buf));
	STARNN_CHECK(starnn_check_distinct("sgd", "grad", grad, "buf", buf));
	if (!(p->lr >= 0.0f) || !isfinite(p->lr))
		return starnn_error(STARNN_EINVAL, "sgd: invalid learning rate %g", (double)p->lr);
	if (!(p->momentum >= 0.0f) || !isfinite(p->momentum))
		return starnn_error(STARNN_EINVAL, "sgd: invalid momentum %g", (double)p->momentum);
	if (!(p->weight_decay >= 0.0f) || !isfinite(p->weight_decay))
		return starnn_error(STARNN_EINVAL, "sgd: invalid weight_decay %g", (double)p->weight_decay);
	if (!isfinite(p->dampening))
		return starnn_error(STARNN_EINVAL, "sgd: invalid dampening %g", (double)p->dampening);
	if (p->nesterov && (p->momentum <= 0.0f || p->dampening != 0.0f))
		return starnn_error(STARNN_EINVAL, "sgd: Nesterov momentum requires a momentum and zero dampening "
		                    "(momentum %g, dampening %g)", (double)p->momentum, (double)p->dampening);
	return 0;
}

/* ------------------------------------------------------ with copies
 * As in codelets/adam.c: where w is also kept in a kernel's blocked
 * layout, the update writes those copies too (codelets/copy.h). */
struct copies_args {
	struct starnn_sgd_step s;   /* sgd */
	struct starnn_sgd_params p; /* sgd_amp */
	struct starnn_copies c;
};

struct rows_ctx {
	const struct copies_args *a;
	struct starnn_mat w, g, b, st, f;
};

static void sgd_tile(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1)
{
	const struct rows_ctx *c = ctx;
	float *w = c->w.ptr, *b = c->b.ptr;
	size_t ldg;
	const float *g = starnn_copies_grad(&c->a->c, c->g.ptr, c->g.ld, r0, r1, c0, c1, &ldg);
	if (g)
		starnn_sgd_cpu(r1 - r0, c1 - c0, &c->a->s, w + r0 * c->w.ld + c0, c->w.ld, g, ldg, b + r0 * c->b.ld + c0,
		               c->b.ld);
}

static void sgd_amp_tile(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1)
{
	const struct rows_ctx *c = ctx;
	float *w = c->w.ptr, *b = c->b.ptr;
	size_t ldg;
	const float *g = starnn_copies_grad(&c->a->c, c->g.ptr, c->g.ld, r0, r1, c0, c1, &ldg);
	if (g)
		starnn_sgd_amp_cpu(r1 - r0, c1 - c0, &c->a->p, c->st.ptr, c->f.ptr, w + r0 * c->w.ld + c0, c->w.ld, g, ldg,
		                   b + r0 * c->b.ld + c0, c->b.ld);
}

static struct rows_ctx rows_ctx(void *buffers[], const struct copies_args *a)
{
	struct rows_ctx c = {a, starnn_buffer(buffers, 0), starnn_buffer(buffers, 1), starnn_buffer(buffers, 2),
	                     {0}, {0}};
	return c;
}

static void sgd_copies_cpu(void *buffers[], void *cl_arg)
{
	struct rows_ctx c = rows_ctx(buffers, cl_arg);
	starnn_copies_run(buffers, 3, &c.a->c, sgd_tile, &c);
}

static void sgd_amp_copies_cpu(void *buffers[], void *cl_arg)
{
	struct rows_ctx c = rows_ctx(buffers, cl_arg);
	c.st = starnn_buffer(buffers, 3), c.f = starnn_buffer(buffers, 4);
	if (((const float *)c.f.ptr)[0] != 0.0f)
		return; /* a skipped step: w and its copies stay */
	starnn_copies_run(buffers, 5, &c.a->c, sgd_amp_tile, &c);
}

static STARNN_PERFMODEL(sgd_copies, fp32);
static STARNN_PERFMODEL(sgd_amp_copies, fp32);
STARNN_COPIES_CL(sgd_copies0, sgd_copies, sgd_copies_cpu, 3, STARPU_RW, STARPU_R, STARPU_RW)
STARNN_COPIES_CL(sgd_copies1, sgd_copies, sgd_copies_cpu, 4, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW)
STARNN_COPIES_CL(sgd_copies2, sgd_copies, sgd_copies_cpu, 5, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW)
STARNN_COPIES_CL(sgd_amp_copies0, sgd_amp_copies, sgd_amp_copies_cpu, 5, STARPU_RW, STARPU_R, STARPU_RW, STARPU_R,
                 STARPU_R)
STARNN_COPIES_CL(sgd_amp_copies1, sgd_amp_copies, sgd_amp_copies_cpu, 6, STARPU_RW, STARPU_R, STARPU_RW, STARPU_R,
                 STARPU_R, STARPU_RW)
STARNN_COPIES_CL(sgd_amp_copies2, sgd_amp_copies, sgd_amp_copies_cpu, 7, STARPU_RW, STARPU_R, STARPU_RW, STARPU_R,
                 STARPU_R, STARPU_RW, STARPU_RW)

int starnn_sgd(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *buf, const struct starnn_sgd_params *params,
               int64_t step, float grad_scale)
{
	STARNN_CHECK(check_args(w, grad, buf, params));
	const struct starnn_sgd_params *p = params;
	if (step < 1)
		return starnn_error(STARNN_EINVAL, "sgd: steps count from 1, got %lld", (long long)step);
	if (!isfinite(grad_scale))
		return starnn_error(STARNN_EINVAL, "sgd: invalid grad_scale %g", (double)grad_scale);

	struct copies_args a;
	memset(&a, 0, sizeof a);
	a.s = (struct starnn_sgd_step){*p, grad_scale, step == 1};
	a.s.p.nesterov = p->nesterov != 0;
	struct starnn_task_desc d = {.cl = &starnn_sgd_cl, .args = &a.s, .args_size = sizeof a.s,
	                             .flops = SGD_FLOPS_PER_ELEMENT * (double)(w->rows * w->cols),
	                             .tensors = {w, grad, buf}};
	static struct starpu_codelet *const cl[STARNN_MAX_COPIES + 1] = {&sgd_copies0_cl, &sgd_copies1_cl,
	                                                                 &sgd_copies2_cl};
	return starnn_submit_with_copies(&d, 3, w, grad, &a.c, &a, sizeof a, cl);
}

/* ------------------------------------------------------------- sgd_amp */

static void sgd_amp_cpu(void *buffers[], void *cl_arg)
{
	const struct starnn_sgd_params *p = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1), b = starnn_buffer(buffers, 2);
	struct starnn_mat st = starnn_buffer(buffers, 3), f = starnn_buffer(buffers, 4);
	starnn_sgd_amp_cpu(w.rows, w.cols, p, st.ptr, f.ptr, w.ptr, w.ld, g.ptr, g.ld, b.ptr, b.ld);
}

#ifdef STARNN_USE_CUDA
static void sgd_amp_cuda(void *buffers[], void *cl_arg)
{
	const struct starnn_sgd_params *p = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1), b = starnn_buffer(buffers, 2);
	struct starnn_mat st = starnn_buffer(buffers, 3), f = starnn_buffer(buffers, 4);
	starnn_sgd_amp_cuda(w.rows, w.cols, p, st.ptr, f.ptr, w.ptr, w.ld, g.ptr, g.ld, b.ptr, b.ld,
	                    starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("sgd_amp");
}
#endif

#ifdef STARNN_USE_OPENCL
static void sgd_amp_opencl(void *buffers[], void *cl_arg)
{
	const struct starnn_sgd_params *p = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1),
	                    b = starnn_cl_buffer(buffers, 2);
	struct starnn_clmat st = starnn_cl_buffer(buffers, 3), f = starnn_cl_buffer(buffers, 4);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(sgd);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "sgd_amp",
		                       starnn_sgd_amp_opencl(ctx, w.rows, w.cols, p, st.mem, st.off, f.mem, f.off, w.mem,
		                                             w.off, w.ld, g.mem, g.off, g.ld, b.mem, b.off, b.ld));
}
#endif

static STARNN_PERFMODEL(sgd_amp, fp32);
static struct starpu_codelet sgd_amp_cl = {
	.name = "sgd_amp",
	.cpu_funcs = {sgd_amp_cpu},
	.cpu_funcs_name = {"sgd_amp_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {sgd_amp_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(sgd_amp_opencl)
	.nbuffers = 5,
	.modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_R, STARPU_R},
	STARNN_MODELS(sgd_amp, fp32),
};

int starnn_sgd_amp(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *buf, const struct starnn_sgd_params *params,
                   starnn_tensor *state, starnn_tensor *flag)
{
	STARNN_CHECK(check_args(w, grad, buf, params));
	STARNN_CHECK(starnn_amp_check("sgd_amp", state, flag));
	struct copies_args a;
	memset(&a, 0, sizeof a);
	a.p = *params;
	a.p.nesterov = params->nesterov != 0;
	struct starnn_task_desc d = {
		.cl = &sgd_amp_cl, .args = &a.p, .args_size = sizeof a.p,
		.flops = SGD_FLOPS_PER_ELEMENT * (double)(w->rows * w->cols),
		.tensors = {w, grad, buf, state, flag}};
	static struct starpu_codelet *const cl[STARNN_MAX_COPIES + 1] = {&sgd_amp_copies0_cl, &sgd_amp_copies1_cl,
	                                                                 &sgd_amp_copies2_cl};
	return starnn_submit_with_copies(&d, 5, w, grad, &a.c, &a, sizeof a, cl);
}
