/* StarPU codelets of maxpool (fp32, fp16, bf16): CPU, CUDA and OpenCL. */
#include <stddef.h>

#include "codelets/halfwrap.h"
#include "codelets/kernels/maxpool.h"
#include "codelets/maxpool.h"
#include "runtime/core/codelet.h"

/* Leading fields (input H, W) are the footprint key: the buffers' matrix
 * shapes give C*H*W but not H and W. */
struct maxpool_args {
	int64_t h, w;
	int64_t cb; /* channel block of the data (runtime/core/tensor.h): 1 NCHW, 8 / 16 blocked */
	float beta;
};

#if defined(STARNN_USE_CUDA) || defined(STARNN_USE_OPENCL)
#define MAXPOOL_DEVICE 1
/* Blocked data runs on CPUs only (the CUDA and OpenCL kernels take NCHW). */
static int maxpool_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	const struct maxpool_args *a = task->cl_arg;
	return starnn_worker_takes(workerid, a && a->cb > 1);
}
#endif

static uint32_t maxpool_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct maxpool_args, beta));
}

/* Channels of a buffer of x (cols = c * h * w; views hold whole channels). */
static size_t channels(const struct starnn_mat *x, const struct maxpool_args *a)
{
	return x->cols / (size_t)(a->h * a->w);
}

/* ---------------------------------------------------------------- forward */

static void maxpool_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_maxpool_fwd_blk_cpu(STARNN_FP32, (size_t)a->cb, x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w,
	                           x.ptr, x.ld, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void maxpool_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_maxpool_fwd_cuda(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, x.ptr, x.ld, y.ptr, y.ld,
	                        starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("maxpool_fwd");
}
#endif

#ifdef STARNN_USE_OPENCL
static void maxpool_fwd_opencl_dt(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(maxpool);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "maxpool_fwd",
		                       starnn_maxpool_fwd_opencl(ctx, dt, x.rows, x.cols / (size_t)(a->h * a->w), (size_t)a->h,
		                                                 (size_t)a->w, x.mem, x.off, x.ld, y.mem, y.off, y.ld));
}

static void maxpool_bwd_opencl_dt(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), dy = starnn_cl_buffer(buffers, 1),
	                    dx = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(maxpool);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "maxpool_bwd",
		                       starnn_maxpool_bwd_opencl(ctx, dt, x.rows, x.cols / (size_t)(a->h * a->w), (size_t)a->h,
		                                                 (size_t)a->w, x.mem, x.off, x.ld, dy.mem, dy.off, dy.ld,
		                                                 a->beta, dx.mem, dx.off, dx.ld));
}

#define MP_OPENCL(fn, dt, DT)                                                                               \
	static void fn##_##dt##_opencl(void *buffers[], void *cl_arg) { fn##_opencl_dt(buffers, cl_arg, DT); }
#else
#define MP_OPENCL(fn, dt, DT)
#endif
MP_OPENCL(maxpool_fwd, fp32, STARNN_FP32)
MP_OPENCL(maxpool_bwd, fp32, STARNN_FP32)

static STARNN_PERFMODEL_FP(maxpool_fwd, fp32, maxpool_footprint);
struct starpu_codelet starnn_maxpool_fwd_cl = {
	.name = "maxpool_fwd",
	.cpu_funcs = {maxpool_fwd_cpu},
	.cpu_funcs_name = {"maxpool_fwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {maxpool_fwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
#ifdef MAXPOOL_DEVICE
	.can_execute = maxpool_can_execute,
#endif
	STARNN_OPENCL_FUNCS(maxpool_fwd_fp32_opencl)
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_W},
	STARNN_MODELS(maxpool_fwd, fp32),
};

/* --------------------------------------------------------------- backward */

static void maxpool_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_maxpool_bwd_blk_cpu(STARNN_FP32, (size_t)a->cb, x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w,
	                           x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dx.ptr, dx.ld);
}

#ifdef STARNN_USE_CUDA
static void maxpool_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_maxpool_bwd_cuda(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, x.ptr, x.ld, dy.ptr, dy.ld,
	                        a->beta, dx.ptr, dx.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("maxpool_bwd");
}
#endif

static STARNN_PERFMODEL_FP(maxpool_bwd, fp32, maxpool_footprint);
struct starpu_codelet starnn_maxpool_bwd_cl = {
	.name = "maxpool_bwd",
	.cpu_funcs = {maxpool_bwd_cpu},
	.cpu_funcs_name = {"maxpool_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {maxpool_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
#ifdef MAXPOOL_DEVICE
	.can_execute = maxpool_can_execute,
#endif
	STARNN_OPENCL_FUNCS(maxpool_bwd_fp32_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	STARNN_MODELS(maxpool_bwd, fp32),
};
struct starpu_codelet starnn_maxpool_bwd_w_cl = {
	.name = "maxpool_bwd",
	.cpu_funcs = {maxpool_bwd_cpu},
	.cpu_funcs_name = {"maxpool_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {maxpool_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
#ifdef MAXPOOL_DEVICE
	.can_execute = maxpool_can_execute,
#endif
	STARNN_OPENCL_FUNCS(maxpool_bwd_fp32_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(maxpool_bwd, fp32),
};

/* ------------------------------------------------------- mixed precision
 * fp16 / bf16 x, y, dy, dx. CPU: the _mp kernels read the 16-bit buffers
 * directly. CUDA: widened to fp32 inside the task (codelets/halfwrap.h),
 * the fp32 kernels run, outputs are rounded back. Either way the forward is
 * exact (the maximum is one of the inputs) and the backward with beta 1
 * rounds the sum once. */

static void maxpool_fwd_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	if (!cuda) {
		starnn_maxpool_fwd_blk_cpu(dt, (size_t)a->cb, x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w,
		                           x.ptr, x.ld, y.ptr, y.ld);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "maxpool_fwd_half", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), yw = starnn_hw_in(&h, dt, y, 0);
	if (!h.failed) {
		starnn_maxpool_fwd_cuda(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, xw.ptr, xw.ld, yw.ptr, yw.ld,
		                        h.stream);
		STARNN_CUDA_LAUNCHED("maxpool_fwd_half");
		starnn_hw_out(&h, dt, yw, y);
	}
	starnn_hw_end(&h);
#endif
}

static void maxpool_bwd_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	if (!cuda) {
		starnn_maxpool_bwd_blk_cpu(dt, (size_t)a->cb, x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w,
		                           x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dx.ptr, dx.ld);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "maxpool_bwd_half", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), dyw = starnn_hw_in(&h, dt, dy, 1),
	                  dxw = starnn_hw_in(&h, dt, dx, a->beta != 0.0f);
	if (!h.failed) {
		starnn_maxpool_bwd_cuda(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, xw.ptr, xw.ld, dyw.ptr,
		                        dyw.ld, a->beta, dxw.ptr, dxw.ld, h.stream);
		STARNN_CUDA_LAUNCHED("maxpool_bwd_half");
		starnn_hw_out(&h, dt, dxw, dx);
	}
	starnn_hw_end(&h);
#endif
}

#ifdef STARNN_USE_CUDA
#define MP_HALF_CUDA(fn, dt, DT)                                                                            \
	static void fn##_##dt##_cuda(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 1); }
#define MP_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define MP_HALF_CUDA(fn, dt, DT)
#define MP_CUDA_FIELDS(fn)
#endif
#ifdef MAXPOOL_DEVICE
#define MP_CAN_EXECUTE .can_execute = maxpool_can_execute,
#else
#define MP_CAN_EXECUTE
#endif
#define MP_HALF_FNS(fn, dt, DT)                                                                             \
	static void fn##_##dt##_cpu(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 0); }   \
	MP_HALF_CUDA(fn, dt, DT)                                                                            \
	MP_OPENCL(fn, dt, DT)
#define MP_HALF_CL(var, fn, dt, stem, nb, ...)                                                              \
	static struct starpu_codelet var = {                                                                \
		.name = #fn "_" #dt,                                                                        \
		.cpu_funcs = {fn##_##dt##_cpu},                                                             \
		.cpu_funcs_name = {#fn "_" #dt "_cpu"},                                                     \
		MP_CUDA_FIELDS(fn##_##dt##_cuda)                                                            \
		MP_CAN_EXECUTE                                                                              \
		STARNN_OPENCL_FUNCS(fn##_##dt##_opencl)                                                     \
		.nbuffers = nb,                                                                             \
		.modes = {__VA_ARGS__},                                                                     \
		STARNN_MODELS_OF(stem),                                                                     \
	};
#define MP_HALF(dt, DT)                                                                                     \
	MP_HALF_FNS(maxpool_fwd, dt, DT)                                                                    \
	MP_HALF_FNS(maxpool_bwd, dt, DT)                                                                    \
	static STARNN_PERFMODEL_FP(maxpool_fwd, dt, maxpool_footprint);                                     \
	static STARNN_PERFMODEL_FP(maxpool_bwd, dt, maxpool_footprint);                                     \
	MP_HALF_CL(fwd_##dt##_cl, maxpool_fwd, dt, starnn_maxpool_fwd_##dt, 2, STARPU_R, STARPU_W)          \
	MP_HALF_CL(bwd_##dt##_cl, maxpool_bwd, dt, starnn_maxpool_bwd_##dt, 3, STARPU_R, STARPU_R,          \
	           STARPU_RW)                                                                               \
	MP_HALF_CL(bwd_w_##dt##_cl, maxpool_bwd, dt, starnn_maxpool_bwd_##dt, 3, STARPU_R,                  \
	           STARPU_R, STARPU_W)

MP_HALF(fp16, STARNN_FP16)
MP_HALF(bf16, STARNN_BF16)

static struct starpu_codelet *const fwd_cls[3] = {&starnn_maxpool_fwd_cl, &fwd_fp16_cl, &fwd_bf16_cl};
static struct starpu_codelet *const bwd_cls[2][3] = {{&starnn_maxpool_bwd_w_cl, &bwd_w_fp16_cl, &bwd_w_bf16_cl},
                                                     {&starnn_maxpool_bwd_cl, &bwd_fp16_cl, &bwd_bf16_cl}};

/* ------------------------------------------------------------- submission */

/* x [N, C, H, W] (H, W >= 2) and its pooled y [N, C, H/2, W/2]. */
static int check_shapes(const char *op, const starnn_tensor *x, const char *yname, const starnn_tensor *y,
                        starnn_dtype dt)
{
	char dx[128], dy[128];
	starnn_tensor_describe(x, dx, sizeof dx);
	starnn_tensor_describe(y, dy, sizeof dy);
	if (x->dtype != dt || y->dtype != dt)
		return starnn_error(STARNN_EINVAL, "%s: %s tensors expected, got %s and %s", op, starnn_dtype_name(dt), dx,
		                    dy);
	if (x->ndim != 4 || y->ndim != 4)
		return starnn_error(STARNN_EINVAL, "%s: 4-D NCHW tensors expected, got %s and %s", op, dx, dy);
	if (x->shape[2] < 2 || x->shape[3] < 2)
		return starnn_error(STARNN_EINVAL, "%s: input %s smaller than the 2x2 window", op, dx);
	if (y->cblock != x->cblock)
		return starnn_error(STARNN_EINVAL, "%s: %s and %s differ in layout", op, dx, dy);
	if (y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1] || y->shape[2] != x->shape[2] / 2 ||
	    y->shape[3] != x->shape[3] / 2)
		return starnn_error(STARNN_EINVAL, "%s: %s must be [%lld,%lld,%lld,%lld] for input %s, got %s", op, yname,
		                    (long long)x->shape[0], (long long)x->shape[1], (long long)(x->shape[2] / 2),
		                    (long long)(x->shape[3] / 2), dx, dy);
	return 0;
}

static int maxpool_fwd_dt(starnn_tensor *x, starnn_tensor *y, starnn_dtype dt)
{
	STARNN_CHECK(check_shapes("maxpool_fwd", x, "y", y, dt));
	struct maxpool_args a = {x->shape[2], x->shape[3], x->cblock, 0.0f};
	struct starnn_task_desc d = {.cl = fwd_cls[dt], .args = &a, .args_size = sizeof a, .tensors = {x, y}};
	return starnn_submit(&d);
}

static int maxpool_bwd_dt(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dx, starnn_dtype dt)
{
	char d1[128], d2[128];
	STARNN_CHECK(check_shapes("maxpool_bwd", x, "dy", dy, dt));
	if (dx->dtype != dt || !starnn_tensor_same_shape(x, dx) || dx->cblock != x->cblock)
		return starnn_error(STARNN_EINVAL, "maxpool_bwd: dx %s must have the shape, dtype and layout of x %s",
		                    starnn_tensor_describe(dx, d1, sizeof d1), starnn_tensor_describe(x, d2, sizeof d2));
	struct maxpool_args a = {x->shape[2], x->shape[3], x->cblock, beta};
	struct starnn_task_desc d = {.cl = bwd_cls[beta != 0.0f][dt],
	                             .args = &a,
	                             .args_size = sizeof a,
	                             .tensors = {x, dy, dx}};
	return starnn_submit(&d);
}

int starnn_maxpool_fwd(starnn_tensor *x, starnn_tensor *y)
{
	return maxpool_fwd_dt(x, y, STARNN_FP32);
}

int starnn_maxpool_bwd(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dx)
{
	return maxpool_bwd_dt(x, dy, beta, dx, STARNN_FP32);
}

static starnn_dtype act_dtype(const starnn_tensor *t)
{
	return t && starnn_hw_is_half(t->dtype) ? t->dtype : STARNN_FP32;
}

int starnn_maxpool_fwd_mp(starnn_tensor *x, starnn_tensor *y)
{
	return maxpool_fwd_dt(x, y, act_dtype(x));
}

int starnn_maxpool_bwd_mp(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dx)
{
	return maxpool_bwd_dt(x, dy, beta, dx, act_dtype(x));
}
