/* StarPU codelets of fill: one per dtype (fp32, fp16, bf16), so that each
 * has its own performance model. The value travels as its bit pattern in
 * the tensor's dtype, converted once at submission. */
#include <string.h>

#include "codelets/fill.h"
#include "codelets/kernels/fill.h"
#include "runtime/base/half.h"
#include "runtime/core/codelet.h"

struct fill_args {
	float f32;     /* the value, for fp32 */
	uint16_t bits; /* the value converted to fp16 or bf16 */
};

static void fill_f32_cpu(void *buffers[], void *cl_arg)
{
	const struct fill_args *a = cl_arg;
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_fill_f32_cpu(y.rows, y.cols, a->f32, y.ptr, y.ld);
}

static void fill_16_cpu(void *buffers[], void *cl_arg)
{
	const struct fill_args *a = cl_arg;
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_fill_16_cpu(y.rows, y.cols, a->bits, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void fill_f32_cuda(void *buffers[], void *cl_arg)
{
	const struct fill_args *a = cl_arg;
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_fill_f32_cuda(y.rows, y.cols, a->f32, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("fill");
}

static void fill_16_cuda(void *buffers[], void *cl_arg)
{
	const struct fill_args *a = cl_arg;
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_fill_16_cuda(y.rows, y.cols, a->bits, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("fill");
}
#define FILL_CUDA(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define FILL_CUDA(fn)
#endif

#ifdef STARNN_USE_OPENCL
static void fill_f32_opencl(void *buffers[], void *cl_arg)
{
	const struct fill_args *a = cl_arg;
	struct starnn_clmat y = starnn_cl_buffer(buffers, 0);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(fill);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "fill", starnn_fill_f32_opencl(ctx, y.rows, y.cols, a->f32, y.mem, y.off, y.ld));
}

static void fill_16_opencl(void *buffers[], void *cl_arg)
{
	const struct fill_args *a = cl_arg;
	struct starnn_clmat y = starnn_cl_buffer(buffers, 0);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(fill);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "fill", starnn_fill_16_opencl(ctx, y.rows, y.cols, a->bits, y.mem, y.off, y.ld));
}
#endif

/* One codelet per dtype: name "fill", perfmodel starnn_fill_<dtype>. */
#define FILL_CODELET(dtype, cpu_fn, cuda_fn, opencl_fn)                                \
	static STARNN_PERFMODEL(fill, dtype);                                          \
	struct starpu_codelet starnn_fill_##dtype##_cl = {                             \
		.name = "fill",                                                        \
		.cpu_funcs = {cpu_fn},                                                 \
		.cpu_funcs_name = {#cpu_fn},                                           \
		FILL_CUDA(cuda_fn)                                                     \
		STARNN_OPENCL_FUNCS(opencl_fn)                                         \
		.nbuffers = 1,                                                         \
		.modes = {STARPU_W},                                                   \
		STARNN_MODELS(fill, dtype),                                            \
	}

FILL_CODELET(fp32, fill_f32_cpu, fill_f32_cuda, fill_f32_opencl);
FILL_CODELET(fp16, fill_16_cpu, fill_16_cuda, fill_16_opencl);
FILL_CODELET(bf16, fill_16_cpu, fill_16_cuda, fill_16_opencl);

int starnn_fill(float value, starnn_tensor *y)
{
	if (!y)
		return starnn_error(STARNN_EINVAL, "fill: y is NULL");
	struct fill_args a;
	memset(&a, 0, sizeof a); /* no uninitialised padding in the task args */
	a.f32 = value;
	struct starpu_codelet *cl;
	switch (y->dtype) {
	case STARNN_FP32:
		cl = &starnn_fill_fp32_cl;
		break;
	case STARNN_FP16:
		cl = &starnn_fill_fp16_cl;
		a.bits = starnn_float_to_half(value);
		break;
	case STARNN_BF16:
		cl = &starnn_fill_bf16_cl;
		a.bits = starnn_float_to_bf16(value);
		break;
	default:
		return starnn_error(STARNN_EINVAL, "fill: tensor '%s' has an unknown dtype %d", y->name, (int)y->dtype);
	}
	struct starnn_task_desc d = {.cl = cl, .args = &a, .args_size = sizeof a, .flops = STARNN_NO_FLOPS,
	                             .tensors = {y}};
	return starnn_submit(&d);
}
