/* StarPU codelets of axpy / scale / add (fp32): CPU, CUDA and OpenCL. */
#include "codelets/axpy.h"
#include "codelets/kernels/axpy.h"
#include "runtime/core/codelet.h"

struct alpha_beta {
	float alpha, beta;
};

/* ------------------------------------------------------------------ axpy */

static void axpy_cpu(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_axpy_cpu(y.rows, y.cols, a->alpha, x.ptr, x.ld, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void axpy_cuda(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_axpy_cuda(y.rows, y.cols, a->alpha, x.ptr, x.ld, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("axpy");
}
#endif

#ifdef STARNN_USE_OPENCL
static void axpy_opencl(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(axpy);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "axpy", starnn_axpy_opencl(ctx, y.rows, y.cols, a->alpha, x.mem, x.off, x.ld,
		                                                       y.mem, y.off, y.ld));
}
#endif

static STARNN_PERFMODEL(axpy, fp32);
struct starpu_codelet starnn_axpy_cl = {
	.name = "axpy",
	.cpu_funcs = {axpy_cpu},
	.cpu_funcs_name = {"axpy_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {axpy_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(axpy_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	STARNN_MODELS(axpy, fp32),
};

/* ----------------------------------------------------------------- scale */

static void scale_cpu(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_scale_cpu(y.rows, y.cols, a->alpha, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void scale_cuda(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_scale_cuda(y.rows, y.cols, a->alpha, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("scale");
}
#endif

#ifdef STARNN_USE_OPENCL
static void scale_opencl(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_clmat y = starnn_cl_buffer(buffers, 0);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(axpy);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "scale", starnn_scale_opencl(ctx, y.rows, y.cols, a->alpha, y.mem, y.off, y.ld));
}
#endif

static STARNN_PERFMODEL(scale, fp32);
struct starpu_codelet starnn_scale_cl = {
	.name = "scale",
	.cpu_funcs = {scale_cpu},
	.cpu_funcs_name = {"scale_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {scale_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(scale_opencl)
	.nbuffers = 1,
	.modes = {STARPU_RW},
	STARNN_MODELS(scale, fp32),
};

/* ------------------------------------------------------------------- add */

static void add_cpu(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1), z = starnn_buffer(buffers, 2);
	starnn_add_cpu(z.rows, z.cols, a->alpha, x.ptr, x.ld, a->beta, y.ptr, y.ld, z.ptr, z.ld);
}

#ifdef STARNN_USE_CUDA
static void add_cuda(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1), z = starnn_buffer(buffers, 2);
	starnn_add_cuda(z.rows, z.cols, a->alpha, x.ptr, x.ld, a->beta, y.ptr, y.ld, z.ptr, z.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("add");
}
#endif

#ifdef STARNN_USE_OPENCL
static void add_opencl(void *buffers[], void *cl_arg)
{
	const struct alpha_beta *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1),
	                    z = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(axpy);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "add", starnn_add_opencl(ctx, z.rows, z.cols, a->alpha, x.mem, x.off, x.ld, a->beta,
		                                                     y.mem, y.off, y.ld, z.mem, z.off, z.ld));
}
#endif

static STARNN_PERFMODEL(add, fp32);
struct starpu_codelet starnn_add_cl = {
	.name = "add",
	.cpu_funcs = {add_cpu},
	.cpu_funcs_name = {"add_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {add_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(add_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(add, fp32),
};

/* ------------------------------------------------------------ submission */

int starnn_axpy(float alpha, starnn_tensor *x, starnn_tensor *y)
{
	STARNN_CHECK(starnn_check_like("axpy", "x", x, "y", y));
	struct alpha_beta a = {alpha, 1.0f};
	/* a multiply and an add per element */
	struct starnn_task_desc d = {.cl = &starnn_axpy_cl, .args = &a, .args_size = sizeof a,
	                             .flops = 2.0 * (double)(y->rows * y->cols), .tensors = {x, y}};
	return starnn_submit(&d);
}

int starnn_scale(float alpha, starnn_tensor *y)
{
	STARNN_CHECK(starnn_check_like("scale", "y", y, "y", y));
	struct alpha_beta a = {alpha, 0.0f};
	struct starnn_task_desc d = {.cl = &starnn_scale_cl, .args = &a, .args_size = sizeof a, .tensors = {y}};
	return starnn_submit(&d);
}

int starnn_add(float alpha, starnn_tensor *x, float beta, starnn_tensor *y, starnn_tensor *z)
{
	STARNN_CHECK(starnn_check_like("add", "x", x, "y", y));
	STARNN_CHECK(starnn_check_like("add", "x", x, "z", z));
	struct alpha_beta a = {alpha, beta};
	/* two multiplies and an add per element */
	struct starnn_task_desc d = {.cl = &starnn_add_cl, .args = &a, .args_size = sizeof a,
	                             .flops = 3.0 * (double)(z->rows * z->cols), .tensors = {x, y, z}};
	return starnn_submit(&d);
}
