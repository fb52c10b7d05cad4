/* StarPU codelets of sum / sumsq (fp32 in, one fp32 out): CPU, CUDA and OpenCL. */
#include <math.h>

#include "codelets/kernels/reduce.h"
#include "codelets/reduce.h"
#include "runtime/core/codelet.h"

#ifdef STARNN_USE_CUDA
#include <cuda_runtime.h>
#endif

struct reduce_args {
	float beta;
};

static void sum_cpu(void *buffers[], void *cl_arg)
{
	const struct reduce_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), out = starnn_buffer(buffers, 1);
	starnn_sum_cpu(x.rows, x.cols, x.ptr, x.ld, a->beta, out.ptr);
}

static void sumsq_cpu(void *buffers[], void *cl_arg)
{
	const struct reduce_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), out = starnn_buffer(buffers, 1);
	starnn_sumsq_cpu(x.rows, x.cols, x.ptr, x.ld, a->beta, out.ptr);
}

#ifdef STARNN_USE_CUDA
static void sum_cuda(void *buffers[], void *cl_arg)
{
	const struct reduce_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), out = starnn_buffer(buffers, 1);
	int err = starnn_sum_cuda(x.rows, x.cols, x.ptr, x.ld, a->beta, out.ptr, starnn_cuda_stream());
	if (err)
		starnn_defer_error(STARNN_ECUDA, "sum: %s", cudaGetErrorString((cudaError_t)err));
	STARNN_CUDA_LAUNCHED("sum");
}

static void sumsq_cuda(void *buffers[], void *cl_arg)
{
	const struct reduce_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), out = starnn_buffer(buffers, 1);
	int err = starnn_sumsq_cuda(x.rows, x.cols, x.ptr, x.ld, a->beta, out.ptr, starnn_cuda_stream());
	if (err)
		starnn_defer_error(STARNN_ECUDA, "sumsq: %s", cudaGetErrorString((cudaError_t)err));
	STARNN_CUDA_LAUNCHED("sumsq");
}
#endif

#ifdef STARNN_USE_OPENCL
static void sum_opencl(void *buffers[], void *cl_arg)
{
	const struct reduce_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), out = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(reduce);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "sum", starnn_sum_opencl(ctx, x.rows, x.cols, x.mem, x.off, x.ld, a->beta,
		                                                     out.mem, out.off));
}

static void sumsq_opencl(void *buffers[], void *cl_arg)
{
	const struct reduce_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), out = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(reduce);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "sumsq", starnn_sumsq_opencl(ctx, x.rows, x.cols, x.mem, x.off, x.ld, a->beta,
		                                                         out.mem, out.off));
}
#endif

static STARNN_PERFMODEL(sum, fp32);
struct starpu_codelet starnn_sum_cl = {
	.name = "sum",
	.cpu_funcs = {sum_cpu},
	.cpu_funcs_name = {"sum_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {sum_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(sum_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	STARNN_MODELS(sum, fp32),
};

static STARNN_PERFMODEL(sumsq, fp32);
struct starpu_codelet starnn_sumsq_cl = {
	.name = "sumsq",
	.cpu_funcs = {sumsq_cpu},
	.cpu_funcs_name = {"sumsq_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {sumsq_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(sumsq_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	STARNN_MODELS(sumsq, fp32),
};

static int check(const char *op, const starnn_tensor *x, const starnn_tensor *out, float beta)
{
	char dx[128], dout[128];
	if (x->dtype != STARNN_FP32 || out->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s and %s", op,
		                    starnn_tensor_describe(x, dx, sizeof dx), starnn_tensor_describe(out, dout, sizeof dout));
	if (starnn_tensor_numel(out) != 1)
		return starnn_error(STARNN_EINVAL, "%s: the output must have exactly one element, got %s", op,
		                    starnn_tensor_describe(out, dout, sizeof dout));
	if (x == out)
		return starnn_error(STARNN_EINVAL, "%s: input and output are the same tensor %s", op,
		                    starnn_tensor_describe(x, dx, sizeof dx));
	if (!isfinite(beta))
		return starnn_error(STARNN_EINVAL, "%s: beta must be finite (0 overwrites, 1 accumulates), got %g", op,
		                    (double)beta);
	return 0;
}

static int submit(struct starpu_codelet *cl, const char *op, starnn_tensor *x, starnn_tensor *out, float beta)
{
	STARNN_CHECK(check(op, x, out, beta));
	struct reduce_args a = {beta};
	/* sum: an add per element; sumsq: a multiply and an add */
	double per = cl == &starnn_sumsq_cl ? 2.0 : 1.0;
	struct starnn_task_desc d = {.cl = cl, .args = &a, .args_size = sizeof a,
	                             .flops = per * (double)(x->rows * x->cols), .tensors = {x, out}};
	return starnn_submit(&d);
}

int starnn_sum(starnn_tensor *x, starnn_tensor *out, float beta)
{
	return submit(&starnn_sum_cl, "sum", x, out, beta);
}

int starnn_sumsq(starnn_tensor *x, starnn_tensor *out, float beta)
{
	return submit(&starnn_sumsq_cl, "sumsq", x, out, beta);
}
