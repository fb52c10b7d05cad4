/* StarPU codelets of copy: one per dtype (its own performance model); the
 * element size comes from the dtype. */
#include "codelets/copy.h"
#include "codelets/kernels/copy.h"
#include "runtime/base/scratch.h"
#include "runtime/core/codelet.h"

#ifdef STARNN_USE_CUDA
#include <cuda_runtime.h>
#endif

struct copy_args {
	size_t elem_size;
};

static void copy_cpu(void *buffers[], void *cl_arg)
{
	const struct copy_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_copy_cpu(y.rows, y.cols, a->elem_size, x.ptr, x.ld, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void copy_cuda(void *buffers[], void *cl_arg)
{
	const struct copy_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	int err = starnn_copy_cuda(y.rows, y.cols, a->elem_size, x.ptr, x.ld, y.ptr, y.ld, starnn_cuda_stream());
	if (err)
		starnn_defer_error(STARNN_ECUDA, "copy: cudaMemcpy2DAsync of %zu x %zu failed: %s", y.rows, y.cols,
		                   cudaGetErrorString((cudaError_t)err));
}
#define COPY_CUDA .cuda_funcs = {copy_cuda}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define COPY_CUDA
#endif

#ifdef STARNN_USE_OPENCL
static void copy_opencl(void *buffers[], void *cl_arg)
{
	const struct copy_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(copy);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "copy", starnn_copy_opencl(ctx, y.rows, y.cols, a->elem_size, x.mem, x.off, x.ld,
		                                                       y.mem, y.off, y.ld));
}
#endif

#define COPY_CODELET(dtype)                                                            \
	static STARNN_PERFMODEL(copy, dtype);                                          \
	struct starpu_codelet starnn_copy_##dtype##_cl = {                             \
		.name = "copy",                                                        \
		.cpu_funcs = {copy_cpu},                                               \
		.cpu_funcs_name = {"copy_cpu"},                                        \
		COPY_CUDA                                                              \
		STARNN_OPENCL_FUNCS(copy_opencl)                                       \
		.nbuffers = 2,                                                         \
		.modes = {STARPU_R, STARPU_W},                                         \
		STARNN_MODELS(copy, dtype),                                            \
	}

COPY_CODELET(fp32);
COPY_CODELET(fp16);
COPY_CODELET(bf16);

int starnn_copy(starnn_tensor *x, starnn_tensor *y)
{
	char dx[128], dy[128];
	if (!x || !y)
		return starnn_error(STARNN_EINVAL, "copy: %s is NULL", !x ? "x" : "y");
	if (x->dtype != y->dtype)
		return starnn_error(STARNN_EINVAL, "copy: dtypes differ (use starnn_convert): %s and %s",
		                    starnn_tensor_describe(x, dx, sizeof dx), starnn_tensor_describe(y, dy, sizeof dy));
	if (x->rows != y->rows || x->cols != y->cols)
		return starnn_error(STARNN_EINVAL, "copy: shapes differ: %s and %s",
		                    starnn_tensor_describe(x, dx, sizeof dx), starnn_tensor_describe(y, dy, sizeof dy));
	if (x == y)
		return 0;
	STARNN_CHECK(starnn_check_layouts("copy", "x", x, "y", y));
	struct starpu_codelet *cl;
	switch (y->dtype) {
	case STARNN_FP32:
		cl = &starnn_copy_fp32_cl;
		break;
	case STARNN_FP16:
		cl = &starnn_copy_fp16_cl;
		break;
	case STARNN_BF16:
		cl = &starnn_copy_bf16_cl;
		break;
	default:
		return starnn_error(STARNN_EINVAL, "copy: tensor '%s' has an unknown dtype %d", y->name, (int)y->dtype);
	}
	struct copy_args a = {starnn_dtype_size(y->dtype)};
	struct starnn_task_desc d = {.cl = cl, .args = &a, .args_size = sizeof a, .flops = STARNN_NO_FLOPS,
	                             .tensors = {x, y}};
	return starnn_submit(&d);
}

/* ------------------------------------------------- updates with copies */

int starnn_submit_with_copies(struct starnn_task_desc *d, int base, starnn_tensor *w, starnn_tensor *grad,
                              struct starnn_copies *c, const void *args, size_t args_size,
                              struct starpu_codelet *const cl[STARNN_MAX_COPIES + 1])
{
	struct starnn_derived *e[STARNN_MAX_COPIES];
	const int n = starnn_tensor_copies(w, e, STARNN_MAX_COPIES);
	const int blocked = grad && grad->wl.ob;
	if (n == 0 && !blocked)
		return starnn_submit(d);
	c->n = n;
	for (int i = 0; i < n; i++) {
		c->L[i] = e[i]->layout;
		d->tensors[base + i] = e[i]->d;
	}
	if (blocked)
		c->G = grad->wl;
	d->cl = cl[n];
	d->args = args;
	d->args_size = args_size;
	STARNN_CHECK(starnn_submit(d));
	starnn_tensor_copies_written(w, e, n);
	return 0;
}

const float *starnn_copies_grad(const struct starnn_copies *c, const float *g, size_t ldg, size_t r0, size_t r1,
                                size_t c0, size_t c1, size_t *ld)
{
	const struct starnn_blocked_weights *G = &c->G;
	if (!G->ob) {
		*ld = ldg;
		return g + r0 * ldg + c0;
	}
	const size_t cols = c1 - c0, T = G->taps;
	float *t = starnn_scratch(STARNN_SCRATCH_GRAD, ((r1 - r0) * cols > 0 ? (r1 - r0) * cols : 1) * sizeof *t);
	if (!t) {
		starnn_defer_error(STARNN_ENOMEM, "optimizer: cannot allocate %zu x %zu floats of scratch for the gradient",
		                   r1 - r0, cols);
		return NULL;
	}
	/* (tiles are whole input channels: starnn_update_with_copies) */
	starnn_blocked_get_cpu(G, r0, r1, c0 / T, c1 / T, g, t, cols);
	*ld = cols;
	return t;
}

void starnn_copies_run(void *buffers[], int first, const struct starnn_copies *c,
                       void (*update)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1), void *ctx)
{
	struct starnn_mat w = starnn_buffer(buffers, 0);
	void *copies[STARNN_MAX_COPIES];
	const int n = c->n < STARNN_MAX_COPIES ? c->n : STARNN_MAX_COPIES;
	for (int i = 0; i < n; i++)
		copies[i] = starnn_buffer(buffers, first + i).ptr;
	starnn_update_with_copies(w.rows, w.cols, update, ctx, w.ptr, w.ld, n, c->L, copies, &c->G);
}
