/* StarPU codelets of convert: one per ordered pair of distinct dtypes, each
 * with its own performance model starnn_convert_<src>_to_<dst> (the naming
 * of convert, see codelets/convert.h). Equal dtypes go to starnn_copy. */
#include <config.h>

#include "codelets/convert.h"
#include "codelets/copy.h"
#include "runtime/codelet.h"

#ifdef STARNN_USE_CUDA
#define CONVERT_CUDA_FUNC(src, dst)                                                             \
	static void convert_##src##_to_##dst##_cuda(void *buffers[], void *cl_arg)                \
	{                                                                                         \
		struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);   \
		starnn_convert_##src##_to_##dst##_cuda(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld,  \
		                                       starnn_cuda_stream());                     \
		STARNN_CUDA_LAUNCHED("convert_" #src "_to_" #dst);                                \
	}
#define CONVERT_CUDA_FIELDS(src, dst) \
	.cuda_funcs = {convert_##src##_to_##dst##_cuda}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CONVERT_CUDA_FUNC(src, dst)
#define CONVERT_CUDA_FIELDS(src, dst)
#endif

/* The CPU and CUDA functions, the perfmodel and the codelet of one pair. */
#define CONVERT_CODELET(src, dst)                                                               \
	static void convert_##src##_to_##dst##_cpu(void *buffers[], void *cl_arg)                 \
	{                                                                                         \
		struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);   \
		starnn_convert_##src##_to_##dst##_cpu(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld);  \
	}                                                                                         \
	CONVERT_CUDA_FUNC(src, dst)                                                               \
	static STARNN_PERFMODEL(convert, src##_to_##dst);                                         \
	struct starpu_codelet starnn_convert_##src##_to_##dst##_cl = {                            \
		.name = "convert_" #src "_to_" #dst,                                              \
		.cpu_funcs = {convert_##src##_to_##dst##_cpu},                                    \
		.cpu_funcs_name = {"convert_" #src "_to_" #dst "_cpu"},                           \
		CONVERT_CUDA_FIELDS(src, dst)                                                     \
		.nbuffers = 2,                                                                    \
		.modes = {STARPU_R, STARPU_W},                                                    \
		STARNN_MODELS(convert, src##_to_##dst),                                           \
	};

CONVERT_CODELET(fp32, fp16)
CONVERT_CODELET(fp32, bf16)
CONVERT_CODELET(fp16, fp32)
CONVERT_CODELET(bf16, fp32)
CONVERT_CODELET(fp16, bf16)
CONVERT_CODELET(bf16, fp16)

/* [source dtype][destination dtype]; the diagonal is starnn_copy. */
static struct starpu_codelet *const convert_cl[STARNN_NDTYPES][STARNN_NDTYPES] = {
	[STARNN_FP32] = {[STARNN_FP16] = &starnn_convert_fp32_to_fp16_cl, [STARNN_BF16] = &starnn_convert_fp32_to_bf16_cl},
	[STARNN_FP16] = {[STARNN_FP32] = &starnn_convert_fp16_to_fp32_cl, [STARNN_BF16] = &starnn_convert_fp16_to_bf16_cl},
	[STARNN_BF16] = {[STARNN_FP32] = &starnn_convert_bf16_to_fp32_cl, [STARNN_FP16] = &starnn_convert_bf16_to_fp16_cl},
};

int starnn_convert(starnn_tensor *x, starnn_tensor *y)
{
	char dx[128], dy[128];
	if (!x || !y)
		return starnn_error(STARNN_EINVAL, "convert: %s is NULL", !x ? "x" : "y");
	if ((unsigned)x->dtype >= STARNN_NDTYPES || (unsigned)y->dtype >= STARNN_NDTYPES)
		return starnn_error(STARNN_EINVAL, "convert: unknown dtype: '%s' is %d, '%s' is %d", x->name,
		                    (int)x->dtype, y->name, (int)y->dtype);
	if (x->rows != y->rows || x->cols != y->cols)
		return starnn_error(STARNN_EINVAL, "convert: shapes differ: %s and %s",
		                    starnn_tensor_describe(x, dx, sizeof dx), starnn_tensor_describe(y, dy, sizeof dy));
	if (x->dtype == y->dtype)
		return starnn_copy(x, y);
	struct starnn_task_desc d = {.cl = convert_cl[x->dtype][y->dtype], .tensors = {x, y}};
	return starnn_submit(&d);
}
