/* StarPU codelets of relu_fwd / relu_bwd (fp32, fp16, bf16; CPU, CUDA and
 * OpenCL), with in-place forms: StarPU
 * does not accept one handle twice in a task when one access writes, so
 * y == x (and dx == dy) get a codelet with a single RW buffer. */
#include "codelets/kernels/relu.h"
#include "codelets/relu.h"
#include "runtime/core/codelet.h"

/* -------------------------------------------------------------- forward */

static void relu_fwd_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_relu_fwd_cpu(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld);
}

static void relu_fwd_inplace_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_relu_fwd_cpu(y.rows, y.cols, y.ptr, y.ld, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void relu_fwd_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_relu_fwd_cuda(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_fwd");
}

static void relu_fwd_inplace_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_relu_fwd_cuda(y.rows, y.cols, y.ptr, y.ld, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_fwd_inplace");
}
#endif

#ifdef STARNN_USE_OPENCL
static void relu_fwd_opencl(void *buffers[], void *cl_arg)
{
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(relu);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "relu_fwd", starnn_relu_fwd_opencl(ctx, y.rows, y.cols, x.mem, x.off, x.ld,
		                                                               y.mem, y.off, y.ld));
}

static void relu_fwd_inplace_opencl(void *buffers[], void *cl_arg)
{
	struct starnn_clmat y = starnn_cl_buffer(buffers, 0);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(relu);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "relu_fwd_inplace", starnn_relu_fwd_opencl(ctx, y.rows, y.cols, y.mem, y.off,
		                                                                       y.ld, y.mem, y.off, y.ld));
}
#endif

static STARNN_PERFMODEL(relu_fwd, fp32);
struct starpu_codelet starnn_relu_fwd_cl = {
	.name = "relu_fwd",
	.cpu_funcs = {relu_fwd_cpu},
	.cpu_funcs_name = {"relu_fwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_fwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(relu_fwd_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_W},
	STARNN_MODELS(relu_fwd, fp32),
};

static STARNN_PERFMODEL(relu_fwd_inplace, fp32);
struct starpu_codelet starnn_relu_fwd_inplace_cl = {
	.name = "relu_fwd_inplace",
	.cpu_funcs = {relu_fwd_inplace_cpu},
	.cpu_funcs_name = {"relu_fwd_inplace_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_fwd_inplace_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(relu_fwd_inplace_opencl)
	.nbuffers = 1,
	.modes = {STARPU_RW},
	STARNN_MODELS(relu_fwd_inplace, fp32),
};

/* ------------------------------------------------------------- backward */

static void relu_bwd_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_relu_bwd_cpu(dx.rows, dx.cols, x.ptr, x.ld, dy.ptr, dy.ld, dx.ptr, dx.ld);
}

static void relu_bwd_inplace_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	starnn_relu_bwd_cpu(g.rows, g.cols, x.ptr, x.ld, g.ptr, g.ld, g.ptr, g.ld);
}

#ifdef STARNN_USE_CUDA
static void relu_bwd_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_relu_bwd_cuda(dx.rows, dx.cols, x.ptr, x.ld, dy.ptr, dy.ld, dx.ptr, dx.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_bwd");
}

static void relu_bwd_inplace_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	starnn_relu_bwd_cuda(g.rows, g.cols, x.ptr, x.ld, g.ptr, g.ld, g.ptr, g.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_bwd_inplace");
}
#endif

#ifdef STARNN_USE_OPENCL
static void relu_bwd_opencl(void *buffers[], void *cl_arg)
{
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), dy = starnn_cl_buffer(buffers, 1),
	                    dx = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(relu);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "relu_bwd", starnn_relu_bwd_opencl(ctx, dx.rows, dx.cols, x.mem, x.off, x.ld,
		                                                               dy.mem, dy.off, dy.ld, dx.mem, dx.off, dx.ld));
}

static void relu_bwd_inplace_opencl(void *buffers[], void *cl_arg)
{
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), g = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(relu);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "relu_bwd_inplace",
		                       starnn_relu_bwd_opencl(ctx, g.rows, g.cols, x.mem, x.off, x.ld, g.mem, g.off, g.ld,
		                                              g.mem, g.off, g.ld));
}
#endif

static STARNN_PERFMODEL(relu_bwd, fp32);
struct starpu_codelet starnn_relu_bwd_cl = {
	.name = "relu_bwd",
	.cpu_funcs = {relu_bwd_cpu},
	.cpu_funcs_name = {"relu_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(relu_bwd_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(relu_bwd, fp32),
};

static STARNN_PERFMODEL(relu_bwd_inplace, fp32);
struct starpu_codelet starnn_relu_bwd_inplace_cl = {
	.name = "relu_bwd_inplace",
	.cpu_funcs = {relu_bwd_inplace_cpu},
	.cpu_funcs_name = {"relu_bwd_inplace_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_bwd_inplace_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(relu_bwd_inplace_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	STARNN_MODELS(relu_bwd_inplace, fp32),
};

/* ------------------------------------------------------------ submission */

int starnn_relu_fwd(starnn_tensor *x, starnn_tensor *y)
{
	STARNN_CHECK(starnn_check_like("relu_fwd", "x", x, "y", y));
	if (x == y) {
		struct starnn_task_desc d = {.cl = &starnn_relu_fwd_inplace_cl, .tensors = {y}};
		return starnn_submit(&d);
	}
	struct starnn_task_desc d = {.cl = &starnn_relu_fwd_cl, .tensors = {x, y}};
	return starnn_submit(&d);
}

int starnn_relu_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dx)
{
	STARNN_CHECK(starnn_check_like("relu_bwd", "x", x, "dy", dy));
	STARNN_CHECK(starnn_check_like("relu_bwd", "x", x, "dx", dx));
	if (dx == x)
		return starnn_error(STARNN_EINVAL, "relu_bwd: dx cannot be the forward input x ('%s'): "
		                    "the mask needs x; write into dy instead", x->name);
	if (dx == dy) {
		struct starnn_task_desc d = {.cl = &starnn_relu_bwd_inplace_cl, .tensors = {x, dx}};
		return starnn_submit(&d);
	}
	struct starnn_task_desc d = {.cl = &starnn_relu_bwd_cl, .tensors = {x, dy, dx}};
	return starnn_submit(&d);
}

/* ------------------------------------------------------- mixed precision */

#ifdef STARNN_USE_CUDA
#define RELU_HALF_CUDA(dt, DT)                                                                              \
	static void relu_fwd_##dt##_cuda(void *buffers[], void *cl_arg)                                     \
	{                                                                                                   \
		struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);             \
		starnn_relu_fwd_half_cuda(DT, y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld, starnn_cuda_stream()); \
		STARNN_CUDA_LAUNCHED("relu_fwd_" #dt);                                                      \
	}                                                                                                   \
	static void relu_bwd_##dt##_cuda(void *buffers[], void *cl_arg)                                     \
	{                                                                                                   \
		struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1);            \
		struct starnn_mat dx = starnn_buffer(buffers, 2);                                           \
		starnn_relu_bwd_half_cuda(DT, dx.rows, dx.cols, x.ptr, x.ld, dy.ptr, dy.ld, dx.ptr, dx.ld,  \
		                          starnn_cuda_stream());                                            \
		STARNN_CUDA_LAUNCHED("relu_bwd_" #dt);                                                      \
	}
#define RELU_HALF_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define RELU_HALF_CUDA(dt, DT)
#define RELU_HALF_CUDA_FIELDS(fn)
#endif

#ifdef STARNN_USE_OPENCL
#define RELU_HALF_OPENCL(dt, DT)                                                                            \
	static void relu_fwd_##dt##_opencl(void *buffers[], void *cl_arg)                                   \
	{                                                                                                   \
		struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);     \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(relu);                                    \
		if (ctx)                                                                                    \
			STARNN_OPENCL_LAUNCHED(ctx, "relu_fwd_" #dt,                                        \
			                       starnn_relu_fwd_half_opencl(ctx, DT, y.rows, y.cols, x.mem, x.off, \
			                                                   x.ld, y.mem, y.off, y.ld));      \
	}                                                                                                   \
	static void relu_bwd_##dt##_opencl(void *buffers[], void *cl_arg)                                   \
	{                                                                                                   \
		struct starnn_clmat x = starnn_cl_buffer(buffers, 0), dy = starnn_cl_buffer(buffers, 1);    \
		struct starnn_clmat dx = starnn_cl_buffer(buffers, 2);                                      \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(relu);                                    \
		if (ctx)                                                                                    \
			STARNN_OPENCL_LAUNCHED(ctx, "relu_bwd_" #dt,                                        \
			                       starnn_relu_bwd_half_opencl(ctx, DT, dx.rows, dx.cols, x.mem, x.off, \
			                                                   x.ld, dy.mem, dy.off, dy.ld, dx.mem, \
			                                                   dx.off, dx.ld));                 \
	}
#else
#define RELU_HALF_OPENCL(dt, DT)
#endif

#define RELU_HALF_CODELETS(dt, DT)                                                                          \
	static void relu_fwd_##dt##_cpu(void *buffers[], void *cl_arg)                                      \
	{                                                                                                   \
		struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);             \
		starnn_relu_fwd_half_cpu(DT, y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld);                     \
	}                                                                                                   \
	static void relu_bwd_##dt##_cpu(void *buffers[], void *cl_arg)                                      \
	{                                                                                                   \
		struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1);            \
		struct starnn_mat dx = starnn_buffer(buffers, 2);                                           \
		starnn_relu_bwd_half_cpu(DT, dx.rows, dx.cols, x.ptr, x.ld, dy.ptr, dy.ld, dx.ptr, dx.ld);  \
	}                                                                                                   \
	RELU_HALF_CUDA(dt, DT)                                                                              \
	RELU_HALF_OPENCL(dt, DT)                                                                            \
	static STARNN_PERFMODEL(relu_fwd, dt);                                                              \
	static STARNN_PERFMODEL(relu_bwd, dt);                                                              \
	static struct starpu_codelet relu_fwd_##dt##_cl = {                                                 \
		.name = "relu_fwd_" #dt,                                                                    \
		.cpu_funcs = {relu_fwd_##dt##_cpu},                                                         \
		.cpu_funcs_name = {"relu_fwd_" #dt "_cpu"},                                                 \
		RELU_HALF_CUDA_FIELDS(relu_fwd_##dt##_cuda)                                                 \
		STARNN_OPENCL_FUNCS(relu_fwd_##dt##_opencl)                                                 \
		.nbuffers = 2,                                                                              \
		.modes = {STARPU_R, STARPU_W},                                                              \
		STARNN_MODELS(relu_fwd, dt),                                                                \
	};                                                                                                  \
	static struct starpu_codelet relu_bwd_##dt##_cl = {                                                 \
		.name = "relu_bwd_" #dt,                                                                    \
		.cpu_funcs = {relu_bwd_##dt##_cpu},                                                         \
		.cpu_funcs_name = {"relu_bwd_" #dt "_cpu"},                                                 \
		RELU_HALF_CUDA_FIELDS(relu_bwd_##dt##_cuda)                                                 \
		STARNN_OPENCL_FUNCS(relu_bwd_##dt##_opencl)                                                 \
		.nbuffers = 3,                                                                              \
		.modes = {STARPU_R, STARPU_R, STARPU_W},                                                    \
		STARNN_MODELS(relu_bwd, dt),                                                                \
	};

RELU_HALF_CODELETS(fp16, STARNN_FP16)
RELU_HALF_CODELETS(bf16, STARNN_BF16)

/* a and b: non-NULL, one 16-bit dtype, same matrix view. */
static int check_half(const char *op, const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b)
{
	char da[128], db[128];
	if (!a || !b)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, !a ? an : bn);
	starnn_tensor_describe(a, da, sizeof da);
	starnn_tensor_describe(b, db, sizeof db);
	if ((a->dtype != STARNN_FP16 && a->dtype != STARNN_BF16) || b->dtype != a->dtype)
		return starnn_error(STARNN_EINVAL, "%s: %s and %s must have one dtype (fp32, fp16 or bf16), got %s and %s",
		                    op, an, bn, da, db);
	if (a->rows != b->rows || a->cols != b->cols)
		return starnn_error(STARNN_EINVAL, "%s: %s and %s differ in shape: %s and %s", op, an, bn, da, db);
	return starnn_check_layouts(op, an, a, bn, b);
}

int starnn_relu_fwd_mp(starnn_tensor *x, starnn_tensor *y)
{
	if (x && x->dtype == STARNN_FP32)
		return starnn_relu_fwd(x, y);
	STARNN_CHECK(check_half("relu_fwd", "x", x, "y", y));
	if (x == y)
		return starnn_error(STARNN_EINVAL, "relu_fwd: in place is fp32 only ('%s' is %s)", x->name,
		                    starnn_dtype_name(x->dtype));
	struct starnn_task_desc d = {.cl = x->dtype == STARNN_FP16 ? &relu_fwd_fp16_cl : &relu_fwd_bf16_cl,
	                             .tensors = {x, y}};
	return starnn_submit(&d);
}

int starnn_relu_bwd_mp(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dx)
{
	if (x && x->dtype == STARNN_FP32)
		return starnn_relu_bwd(x, dy, dx);
	STARNN_CHECK(check_half("relu_bwd", "x", x, "dy", dy));
	STARNN_CHECK(check_half("relu_bwd", "x", x, "dx", dx));
	if (dx == x || dx == dy)
		return starnn_error(STARNN_EINVAL, "relu_bwd: for %s tensors dx must differ from x and dy ('%s')",
		                    starnn_dtype_name(x->dtype), dx->name);
	struct starnn_task_desc d = {.cl = x->dtype == STARNN_FP16 ? &relu_bwd_fp16_cl : &relu_bwd_bf16_cl,
	                             .tensors = {x, dy, dx}};
	return starnn_submit(&d);
}
