/* StarPU codelets of convert: one per ordered pair of distinct dtypes, each
 * with its own performance model starnn_convert_<src>_to_<dst> (the naming
 * of convert, see codelets/convert.h). Equal dtypes go to starnn_copy. */
#include "codelets/convert.h"
#include "codelets/copy.h"
#include "codelets/kernels/convert.h"
#include "codelets/kernels/copy.h"
#include "runtime/base/scratch.h"
#include "runtime/core/codelet.h"

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
#ifdef STARNN_USE_OPENCL
#define CONVERT_OPENCL_FUNC(src, dst)                                                                                \
	static void convert_##src##_to_##dst##_opencl(void *buffers[], void *cl_arg)                                 \
	{                                                                                                            \
		struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);              \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(convert);                                          \
		if (ctx)                                                                                             \
			STARNN_OPENCL_LAUNCHED(                                                                      \
			    ctx, "convert_" #src "_to_" #dst,                                                        \
			    starnn_convert_##src##_to_##dst##_opencl(ctx, y.rows, y.cols, x.mem, x.off, x.ld, y.mem, \
			                                             y.off, y.ld));                                  \
	}
#else
#define CONVERT_OPENCL_FUNC(src, dst)
#endif

/* The CPU, CUDA and OpenCL functions, the perfmodel and the codelet of one
 * pair. */
#define CONVERT_CODELET(src, dst)                                                               \
	static void convert_##src##_to_##dst##_cpu(void *buffers[], void *cl_arg)                 \
	{                                                                                         \
		struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);   \
		starnn_convert_##src##_to_##dst##_cpu(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld);  \
	}                                                                                         \
	CONVERT_CUDA_FUNC(src, dst)                                                               \
	CONVERT_OPENCL_FUNC(src, dst)                                                             \
	static STARNN_PERFMODEL(convert, src##_to_##dst);                                         \
	struct starpu_codelet starnn_convert_##src##_to_##dst##_cl = {                            \
		.name = "convert_" #src "_to_" #dst,                                              \
		.cpu_funcs = {convert_##src##_to_##dst##_cpu},                                    \
		.cpu_funcs_name = {"convert_" #src "_to_" #dst "_cpu"},                           \
		CONVERT_CUDA_FIELDS(src, dst)                                                     \
		STARNN_OPENCL_FUNCS(convert_##src##_to_##dst##_opencl)                            \
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

/* ------------------------------------------------- narrowing with copies
 * fp32 -> 16-bit y where y (the 16-bit copy of master weights that
 * mixed-precision convolutions read, runtime/train/params.h) is also kept as fp32
 * copies of its values in a kernel's blocked layout (conv2d's packed
 * weights on CPUs that widen 16-bit weights: codelets/conv2d.c): the task
 * rounds x into y tile by tile and writes each tile's rounded values,
 * widened, into the copies (codelets/copy.h), instead of a packing task
 * widening and reordering y again before the next convolution. CPU only;
 * perfmodels starnn_convert_copies_fp32_to_<dst>, shared by the codelets of
 * 1 and 2 copies. */
struct narrow_ctx {
	starnn_dtype dt;
	struct starnn_mat x, y;
};

/* Rounds a tile of x into y, and returns its rounded values widened (in
 * this thread's scratch, the tile's size) for the copies. */
static const float *narrow_tile(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1, size_t *ldt)
{
	const struct narrow_ctx *c = ctx;
	const size_t es = starnn_dtype_size(c->dt), rows = r1 - r0, cols = c1 - c0;
	float *r = starnn_scratch(STARNN_SCRATCH_HALF, (rows * cols > 0 ? rows * cols : 1) * sizeof(float));
	if (!r) {
		starnn_defer_error(STARNN_ENOMEM, "convert_copies: cannot allocate %zu x %zu floats of scratch", rows, cols);
		return NULL;
	}
	const float *x = (const float *)c->x.ptr + r0 * c->x.ld + c0;
	void *y = (char *)c->y.ptr + (r0 * c->y.ld + c0) * es;
	starnn_convert_cpu(STARNN_FP32, c->dt, rows, cols, x, c->x.ld, y, c->y.ld);
	starnn_convert_cpu(c->dt, STARNN_FP32, rows, cols, y, c->y.ld, r, cols);
	*ldt = cols;
	return r;
}

static void narrow_copies(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct starnn_copies *cp = cl_arg;
	struct narrow_ctx c = {dt, starnn_buffer(buffers, 0), starnn_buffer(buffers, 1)};
	void *copies[STARNN_MAX_COPIES];
	const int n = cp->n < STARNN_MAX_COPIES ? cp->n : STARNN_MAX_COPIES;
	for (int i = 0; i < n; i++)
		copies[i] = starnn_buffer(buffers, 2 + i).ptr;
	starnn_tiles_with_copies(c.y.rows, c.y.cols, narrow_tile, &c, n, cp->L, copies, NULL);
}

static void narrow_fp16_copies_cpu(void *buffers[], void *cl_arg)
{
	narrow_copies(buffers, cl_arg, STARNN_FP16);
}

static void narrow_bf16_copies_cpu(void *buffers[], void *cl_arg)
{
	narrow_copies(buffers, cl_arg, STARNN_BF16);
}

#define NARROW_COPIES_CL(dst, n, ...)                                                                         \
	STARNN_COPIES_CL_DT(narrow_##dst##_copies##n, "convert_copies_fp32_to_" #dst, convert_copies, fp32_to_##dst, \
	                    narrow_##dst##_copies_cpu, 2 + n, STARPU_R, STARPU_W, __VA_ARGS__)
static STARNN_PERFMODEL(convert_copies, fp32_to_fp16);
static STARNN_PERFMODEL(convert_copies, fp32_to_bf16);
NARROW_COPIES_CL(fp16, 1, STARPU_RW)
NARROW_COPIES_CL(fp16, 2, STARPU_RW, STARPU_RW)
NARROW_COPIES_CL(bf16, 1, STARPU_RW)
NARROW_COPIES_CL(bf16, 2, STARPU_RW, STARPU_RW)

/* by y's dtype (fp32: none; y has no copies then, runtime/core/tensor.h) */
static struct starpu_codelet *const convert_copies_cls[STARNN_NDTYPES][STARNN_MAX_COPIES + 1] = {
	[STARNN_FP16] = {NULL, &narrow_fp16_copies1_cl, &narrow_fp16_copies2_cl},
	[STARNN_BF16] = {NULL, &narrow_bf16_copies1_cl, &narrow_bf16_copies2_cl},
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
	STARNN_CHECK(starnn_check_layouts("convert", "x", x, "y", y));
	if (x->dtype == y->dtype)
		return starnn_copy(x, y);
	struct starnn_task_desc d = {.cl = convert_cl[x->dtype][y->dtype], .tensors = {x, y}};
	if (x->dtype != STARNN_FP32)
		return starnn_submit(&d);
	struct starnn_copies c;
	memset(&c, 0, sizeof c);
	return starnn_submit_with_copies(&d, 2, y, NULL, &c, &c, sizeof c, convert_copies_cls[y->dtype]);
}
