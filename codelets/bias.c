/* StarPU codelets of bias_add / bias_grad (fp32).
 * Buffers: bias_add (b, y), bias_grad (dy, db). The channel count is b's
 * (db's) length and inner = y's cols / channels, so the shape footprint of
 * the buffers determines the cost. bias_grad has two codelets: db in
 * STARPU_W when beta == 0 (StarPU need not fetch db), STARPU_RW otherwise;
 * both use the model starnn_bias_grad_fp32. CPU, CUDA and OpenCL. */
#include "codelets/bias.h"
#include "codelets/kernels/bias.h"
#include "runtime/core/codelet.h"

struct bias_grad_args {
	float beta;
};

/* -------------------------------------------------------------- bias_add */

static void bias_add_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat b = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_bias_add_cpu(y.rows, b.cols, y.cols / b.cols, b.ptr, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void bias_add_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat b = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_bias_add_cuda(y.rows, b.cols, y.cols / b.cols, b.ptr, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("bias_add");
}
#endif

#ifdef STARNN_USE_OPENCL
static void bias_add_opencl(void *buffers[], void *cl_arg)
{
	struct starnn_clmat b = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(bias);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bias_add", starnn_bias_add_opencl(ctx, y.rows, b.cols, y.cols / b.cols, b.mem,
		                                                               b.off, y.mem, y.off, y.ld));
}
#endif

static STARNN_PERFMODEL(bias_add, fp32);
struct starpu_codelet starnn_bias_add_cl = {
	.name = "bias_add",
	.cpu_funcs = {bias_add_cpu},
	.cpu_funcs_name = {"bias_add_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {bias_add_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(bias_add_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	STARNN_MODELS(bias_add, fp32),
};

/* ------------------------------------------------------------- bias_grad */

static void bias_grad_cpu(void *buffers[], void *cl_arg)
{
	const struct bias_grad_args *g = cl_arg;
	struct starnn_mat dy = starnn_buffer(buffers, 0), db = starnn_buffer(buffers, 1);
	starnn_bias_grad_cpu(dy.rows, db.cols, dy.cols / db.cols, dy.ptr, dy.ld, g->beta, db.ptr);
}

#ifdef STARNN_USE_CUDA
static void bias_grad_cuda(void *buffers[], void *cl_arg)
{
	const struct bias_grad_args *g = cl_arg;
	struct starnn_mat dy = starnn_buffer(buffers, 0), db = starnn_buffer(buffers, 1);
	starnn_bias_grad_cuda(dy.rows, db.cols, dy.cols / db.cols, dy.ptr, dy.ld, g->beta, db.ptr,
	                      starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("bias_grad");
}
#endif

#ifdef STARNN_USE_OPENCL
static void bias_grad_opencl(void *buffers[], void *cl_arg)
{
	const struct bias_grad_args *g = cl_arg;
	struct starnn_clmat dy = starnn_cl_buffer(buffers, 0), db = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(bias);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bias_grad",
		                       starnn_bias_grad_opencl(ctx, dy.rows, db.cols, dy.cols / db.cols, dy.mem, dy.off, dy.ld,
		                                               g->beta, db.mem, db.off));
}
#endif

static STARNN_PERFMODEL(bias_grad, fp32);
struct starpu_codelet starnn_bias_grad_cl = {
	.name = "bias_grad",
	.cpu_funcs = {bias_grad_cpu},
	.cpu_funcs_name = {"bias_grad_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {bias_grad_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(bias_grad_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	STARNN_MODELS(bias_grad, fp32),
};

struct starpu_codelet starnn_bias_grad_w_cl = {
	.name = "bias_grad",
	.cpu_funcs = {bias_grad_cpu},
	.cpu_funcs_name = {"bias_grad_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {bias_grad_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(bias_grad_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_W},
	STARNN_MODELS(bias_grad, fp32),
};

/* ------------------------------------------------------------ submission */

/* The kernels index y as [N, C, inner] (NCHW): a 4-D y in a blocked layout
 * is refused rather than read in the wrong order. */
static int check_nchw(const char *op, const char *yname, const starnn_tensor *y)
{
	char dy[128], l[24];
	if (y->ndim != 4 || y->cblock <= 1)
		return 0;
	return starnn_error(STARNN_EINVAL, "%s: %s = %s is %s; the bias kernels take NCHW (the convolutions add "
	                    "their bias themselves, in any layout)",
	                    op, yname, starnn_tensor_describe(y, dy, sizeof dy),
	                    starnn_layout_name(y->cblock, y->shape[1], l, sizeof l));
}

/* y: [N, C, ...] fp32; b: one row of C fp32 values, not y itself. */
static int check(const char *op, const char *yname, const starnn_tensor *y, const char *bname, const starnn_tensor *b)
{
	char dy[128], dbuf[128];
	if (!y || !b)
		return starnn_error(STARNN_EINVAL, "%s: NULL tensor", op);
	starnn_tensor_describe(y, dy, sizeof dy);
	starnn_tensor_describe(b, dbuf, sizeof dbuf);
	if (y->dtype != STARNN_FP32 || b->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s %s and %s %s", op, yname, dy, bname,
		                    dbuf);
	if (y->ndim < 2)
		return starnn_error(STARNN_EINVAL, "%s: %s must be [N, C] or [N, C, H, W], got %s", op, yname, dy);
	if (b->rows != 1 || b->cols != (size_t)y->shape[1] || b == y)
		return starnn_error(STARNN_EINVAL, "%s: %s must hold one value per channel of %s %s (%lld), got %s", op,
		                    bname, yname, dy, (long long)y->shape[1], dbuf);
	return check_nchw(op, yname, y);
}

int starnn_bias_add(starnn_tensor *b, starnn_tensor *y)
{
	STARNN_CHECK(check("bias_add", "y", y, "b", b));
	struct starnn_task_desc d = {.cl = &starnn_bias_add_cl, .tensors = {b, y}};
	return starnn_submit(&d);
}

int starnn_bias_grad(starnn_tensor *dy, float beta, starnn_tensor *db)
{
	STARNN_CHECK(check("bias_grad", "dy", dy, "db", db));
	struct bias_grad_args g = {beta};
	struct starnn_task_desc d = {
		.cl = beta == 0.0f ? &starnn_bias_grad_w_cl : &starnn_bias_grad_cl,
		.args = &g,
		.args_size = sizeof g,
		.tensors = {dy, db},
	};
	return starnn_submit(&d);
}

/* ------------------------------------------------------- mixed precision */

/* One set per 16-bit dtype of y / dy: bias_add (b R, y RW), bias_grad
 * (dy R, db RW) and bias_grad_w (dy R, db W). */
#ifdef STARNN_USE_CUDA
#define BIAS_HALF_CUDA(dt, DT)                                                                            \
	static void bias_add_##dt##_cuda(void *buffers[], void *cl_arg)                                   \
	{                                                                                                 \
		struct starnn_mat b = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);           \
		starnn_bias_add_half_cuda(DT, y.rows, b.cols, y.cols / b.cols, b.ptr, y.ptr, y.ld,        \
		                          starnn_cuda_stream());                                          \
		STARNN_CUDA_LAUNCHED("bias_add_" #dt);                                                    \
	}                                                                                                 \
	static void bias_grad_##dt##_cuda(void *buffers[], void *cl_arg)                                  \
	{                                                                                                 \
		const struct bias_grad_args *g = cl_arg;                                                  \
		struct starnn_mat dy = starnn_buffer(buffers, 0), db = starnn_buffer(buffers, 1);         \
		starnn_bias_grad_half_cuda(DT, dy.rows, db.cols, dy.cols / db.cols, dy.ptr, dy.ld,        \
		                           g->beta, db.ptr, starnn_cuda_stream());                        \
		STARNN_CUDA_LAUNCHED("bias_grad_" #dt);                                                   \
	}
#define BIAS_HALF_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define BIAS_HALF_CUDA(dt, DT)
#define BIAS_HALF_CUDA_FIELDS(fn)
#endif
#ifdef STARNN_USE_OPENCL
#define BIAS_HALF_OPENCL(dt, DT)                                                                          \
	static void bias_add_##dt##_opencl(void *buffers[], void *cl_arg)                                 \
	{                                                                                                 \
		struct starnn_clmat b = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);   \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(bias);                                  \
		if (ctx)                                                                                  \
			STARNN_OPENCL_LAUNCHED(ctx, "bias_add_" #dt,                                      \
			                       starnn_bias_add_half_opencl(ctx, DT, y.rows, b.cols,       \
			                                                   y.cols / b.cols, b.mem, b.off, \
			                                                   y.mem, y.off, y.ld));          \
	}                                                                                                 \
	static void bias_grad_##dt##_opencl(void *buffers[], void *cl_arg)                                \
	{                                                                                                 \
		const struct bias_grad_args *g = cl_arg;                                                  \
		struct starnn_clmat dy = starnn_cl_buffer(buffers, 0), db = starnn_cl_buffer(buffers, 1); \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(bias);                                  \
		if (ctx)                                                                                  \
			STARNN_OPENCL_LAUNCHED(ctx, "bias_grad_" #dt,                                     \
			                       starnn_bias_grad_half_opencl(ctx, DT, dy.rows, db.cols,    \
			                                                    dy.cols / db.cols, dy.mem,    \
			                                                    dy.off, dy.ld, g->beta,       \
			                                                    db.mem, db.off));             \
	}
#else
#define BIAS_HALF_OPENCL(dt, DT)
#endif

#define BIAS_HALF_CODELETS(dt, DT)                                                                        \
	static void bias_add_##dt##_cpu(void *buffers[], void *cl_arg)                                    \
	{                                                                                                 \
		struct starnn_mat b = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);           \
		starnn_bias_add_half_cpu(DT, y.rows, b.cols, y.cols / b.cols, b.ptr, y.ptr, y.ld);        \
	}                                                                                                 \
	static void bias_grad_##dt##_cpu(void *buffers[], void *cl_arg)                                   \
	{                                                                                                 \
		const struct bias_grad_args *g = cl_arg;                                                  \
		struct starnn_mat dy = starnn_buffer(buffers, 0), db = starnn_buffer(buffers, 1);         \
		starnn_bias_grad_half_cpu(DT, dy.rows, db.cols, dy.cols / db.cols, dy.ptr, dy.ld,         \
		                          g->beta, db.ptr);                                               \
	}                                                                                                 \
	BIAS_HALF_CUDA(dt, DT)                                                                            \
	BIAS_HALF_OPENCL(dt, DT)                                                                          \
	static STARNN_PERFMODEL(bias_add, dt);                                                            \
	static STARNN_PERFMODEL(bias_grad, dt);                                                           \
	static struct starpu_codelet bias_add_##dt##_cl = {                                               \
		.name = "bias_add_" #dt,                                                                  \
		.cpu_funcs = {bias_add_##dt##_cpu},                                                       \
		.cpu_funcs_name = {"bias_add_" #dt "_cpu"},                                               \
		BIAS_HALF_CUDA_FIELDS(bias_add_##dt##_cuda)                                               \
		STARNN_OPENCL_FUNCS(bias_add_##dt##_opencl)                                               \
		.nbuffers = 2,                                                                            \
		.modes = {STARPU_R, STARPU_RW},                                                           \
		STARNN_MODELS(bias_add, dt),                                                              \
	};                                                                                                \
	static struct starpu_codelet bias_grad_##dt##_cl = {                                              \
		.name = "bias_grad_" #dt,                                                                 \
		.cpu_funcs = {bias_grad_##dt##_cpu},                                                      \
		.cpu_funcs_name = {"bias_grad_" #dt "_cpu"},                                              \
		BIAS_HALF_CUDA_FIELDS(bias_grad_##dt##_cuda)                                              \
		STARNN_OPENCL_FUNCS(bias_grad_##dt##_opencl)                                              \
		.nbuffers = 2,                                                                            \
		.modes = {STARPU_R, STARPU_RW},                                                           \
		STARNN_MODELS(bias_grad, dt),                                                             \
	};                                                                                                \
	static struct starpu_codelet bias_grad_##dt##_w_cl = {                                            \
		.name = "bias_grad_" #dt,                                                                 \
		.cpu_funcs = {bias_grad_##dt##_cpu},                                                      \
		.cpu_funcs_name = {"bias_grad_" #dt "_cpu"},                                              \
		BIAS_HALF_CUDA_FIELDS(bias_grad_##dt##_cuda)                                              \
		STARNN_OPENCL_FUNCS(bias_grad_##dt##_opencl)                                              \
		.nbuffers = 2,                                                                            \
		.modes = {STARPU_R, STARPU_W},                                                            \
		STARNN_MODELS(bias_grad, dt),                                                             \
	};

BIAS_HALF_CODELETS(fp16, STARNN_FP16)
BIAS_HALF_CODELETS(bf16, STARNN_BF16)

/* y: [N, C, ...] fp16 or bf16; b: one row of C fp32 values. */
static int check_half(const char *op, const char *yname, const starnn_tensor *y, const char *bname,
                      const starnn_tensor *b)
{
	char dy[128], dbuf[128];
	if (!y || !b)
		return starnn_error(STARNN_EINVAL, "%s: NULL tensor", op);
	starnn_tensor_describe(y, dy, sizeof dy);
	starnn_tensor_describe(b, dbuf, sizeof dbuf);
	if ((y->dtype != STARNN_FP16 && y->dtype != STARNN_BF16) || b->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: %s fp32, fp16 or bf16 and %s fp32 expected, got %s and %s", op,
		                    yname, bname, dy, dbuf);
	if (y->ndim < 2)
		return starnn_error(STARNN_EINVAL, "%s: %s must be [N, C] or [N, C, H, W], got %s", op, yname, dy);
	if (b->rows != 1 || b->cols != (size_t)y->shape[1])
		return starnn_error(STARNN_EINVAL, "%s: %s must hold one value per channel of %s %s (%lld), got %s", op,
		                    bname, yname, dy, (long long)y->shape[1], dbuf);
	return check_nchw(op, yname, y);
}

int starnn_bias_add_mp(starnn_tensor *b, starnn_tensor *y)
{
	if (y && y->dtype == STARNN_FP32)
		return starnn_bias_add(b, y);
	STARNN_CHECK(check_half("bias_add", "y", y, "b", b));
	struct starnn_task_desc d = {.cl = y->dtype == STARNN_FP16 ? &bias_add_fp16_cl : &bias_add_bf16_cl,
	                             .tensors = {b, y}};
	return starnn_submit(&d);
}

int starnn_bias_grad_mp(starnn_tensor *dy, float beta, starnn_tensor *db)
{
	if (dy && dy->dtype == STARNN_FP32)
		return starnn_bias_grad(dy, beta, db);
	STARNN_CHECK(check_half("bias_grad", "dy", dy, "db", db));
	struct bias_grad_args g = {beta};
	int fp16 = dy->dtype == STARNN_FP16;
	struct starnn_task_desc d = {
		.cl = beta == 0.0f ? (fp16 ? &bias_grad_fp16_w_cl : &bias_grad_bf16_w_cl)
		                   : (fp16 ? &bias_grad_fp16_cl : &bias_grad_bf16_cl),
		.args = &g,
		.args_size = sizeof g,
		.tensors = {dy, db},
	};
	return starnn_submit(&d);
}
