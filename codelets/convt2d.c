/* StarPU codelets of convt2d and its submit functions (codelets/convt2d.h),
 * in fp32 and in 16-bit activations, on the kernels of
 * codelets/kernels/convt2d.h with the settings in force at submission
 * (codelets/conv2d_routes.h). Buffers: fwd (x, w, b, y); bwd_data (w, dy,
 * dx); bwd_weight (x, dy, dw, db); the passes that read a whole blocked
 * copy of w take it after w. */

#include <limits.h>
#include <stddef.h>

#include "codelets/conv2d_internal.h"
#include "codelets/convt2d.h"
#include "codelets/halfwrap.h"
#include "runtime/core/codelet.h"
#include "runtime/core/init.h" /* (starnn_split_width, starnn_ndevice_workers) */

/* Leading fields (input H, W) are the footprint key: the buffers' matrix
 * shapes give C*H*W and 4*O*H*W but not H and W. The fp32 codelets' key
 * leaves cuda_half out (their footprints stay as they were); the 16-bit
 * ones include it: native and widened are different costs. */
struct convt2d_args {
	int64_t h, w;
	int64_t backend;   /* CPU kernels (enum starnn_conv2d_backend): another cost */
	int64_t xb, yb;    /* layouts of x (dx) and y (dy): runtime/base/types.h cblock */
	int64_t cuda_half; /* 16-bit codelets: enum starnn_cuda_half_conv (0 for fp32) */
	float beta;
	struct starnn_blocked_weights dwl; /* weight gradient: dw's layout (runtime/core/tensor.h: wl) */
	int64_t row0; /* backward data from a whole blocked copy of w: this task's first row (input channel) */
	struct starnn_conv2d_routes routes; /* the oneDNN backend's routes, taken at submission */
};

/* Blocked data runs on CPUs only (the CUDA and OpenCL kernels take NCHW). */
#if defined(STARNN_USE_CUDA) || defined(STARNN_USE_OPENCL)
#define CT_CAN_EXECUTE .can_execute = convt2d_can_execute,
static int convt2d_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	const struct convt2d_args *a = task->cl_arg;
	return starnn_worker_takes(workerid, a && (a->xb > 1 || a->yb > 1));
}
#else
#define CT_CAN_EXECUTE
#endif

static uint32_t convt2d_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct convt2d_args, cuda_half));
}

static uint32_t convt2d_half_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct convt2d_args, beta));
}

/* A kernel's error (workspace allocation) becomes the task's deferred error. */
#define report starnn_conv2d_done

/* ---------------------------------------------------- one pass, one worker
 * Each pass runs through one function for every codelet that has it: on a
 * CUDA worker (cuda != 0) cuBLAS in fp32 on the given stream; on a CPU
 * oneDNN's deconvolutions when the conv2d CPU backend is oneDNN (dt fp32,
 * or bf16 natively), else the GEMM-based kernels (fp32). The fp32 codelets
 * pass their buffers, the 16-bit ones theirs (bf16 on oneDNN) or fp32 copies
 * of them. Kernels see x.rows samples, w.rows input channels and w.cols / 4
 * output channels (or those of dx / dw). */

static void fwd_run(const struct convt2d_args *a, starnn_dtype dt, int cuda, void *stream, struct starnn_mat x,
                    struct starnn_mat w, const float *b, struct starnn_mat y)
{
	size_t n = x.rows, c = w.rows, o = w.cols / 4, h = (size_t)a->h, wd = (size_t)a->w;
	(void)stream;
	if (cuda) {
#ifdef STARNN_USE_CUDA
		starnn_convt2d_fwd_cuda(n, c, o, h, wd, x.ptr, x.ld, w.ptr, w.ld, b, y.ptr, y.ld, starnn_cublas_handle(),
		                        stream);
		STARNN_CUDA_LAUNCHED("convt2d_fwd");
#endif
		return;
	}
	if (a->backend == STARNN_CONV2D_DNNL)
		report(starnn_convt2d_fwd_dnnl(n, c, o, h, wd, (size_t)a->xb, (size_t)a->yb, dt, &a->routes, x.ptr, x.ld,
		                               w.ptr, w.ld, b, y.ptr, y.ld));
	else
		report(starnn_convt2d_fwd_cpu(n, c, o, h, wd, x.ptr, x.ld, w.ptr, w.ld, b, y.ptr, y.ld));
}

static void bwd_data_run(const struct convt2d_args *a, starnn_dtype dt, int cuda, void *stream, struct starnn_mat w,
                         struct starnn_mat dy, struct starnn_mat dx)
{
	size_t n = dx.rows, c = w.rows, o = w.cols / 4, h = (size_t)a->h, wd = (size_t)a->w;
	(void)stream;
	if (cuda) {
#ifdef STARNN_USE_CUDA
		starnn_convt2d_bwd_data_cuda(n, c, o, h, wd, w.ptr, w.ld, dy.ptr, dy.ld, a->beta, dx.ptr, dx.ld,
		                             starnn_cublas_handle(), stream);
		STARNN_CUDA_LAUNCHED("convt2d_bwd_data");
#endif
		return;
	}
	if (a->backend == STARNN_CONV2D_DNNL)
		report(starnn_convt2d_bwd_data_dnnl(n, c, o, h, wd, (size_t)a->xb, (size_t)a->yb, dt, &a->routes, w.ptr, w.ld,
		                                    dy.ptr, dy.ld, a->beta, dx.ptr, dx.ld));
	else
		report(starnn_convt2d_bwd_data_cpu(n, c, o, h, wd, w.ptr, w.ld, dy.ptr, dy.ld, a->beta, dx.ptr, dx.ld));
}

static void bwd_weight_run(const struct convt2d_args *a, starnn_dtype dt, int cuda, void *stream, struct starnn_mat x,
                           struct starnn_mat dy, struct starnn_mat dw, struct starnn_mat db)
{
	size_t n = x.rows, c = dw.rows, o = dw.cols / 4, h = (size_t)a->h, wd = (size_t)a->w;
	(void)stream;
	if (cuda) {
#ifdef STARNN_USE_CUDA
		starnn_convt2d_bwd_weight_cuda(n, c, o, h, wd, x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld, db.ptr,
		                               starnn_cublas_handle(), stream);
		STARNN_CUDA_LAUNCHED("convt2d_bwd_weight");
#endif
		return;
	}
	if (a->backend != STARNN_CONV2D_DNNL) {
		report(starnn_convt2d_bwd_weight_cpu(n, c, o, h, wd, x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld,
		                                     db.ptr));
		return;
	}
	/* the bias gradient in the same primitive */
	report(starnn_convt2d_bwd_weight_dnnl_in(n, c, o, h, wd, (size_t)a->xb, (size_t)a->yb, dt, &a->routes, x.ptr, x.ld,
	                                         dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld, db.ptr, &a->dwl));
}

#define BUF(i) starnn_buffer(buffers, i)

#ifdef STARNN_USE_CUDA
#define CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CUDA_IMPL(fn)
#endif

/* OpenCL: the kernels of codelets/opencl/convt2d.cl on NCHW data (the
 * codelets' can_execute keeps blocked data on CPUs), dt the activations'
 * dtype, whatever the CPU backend and CUDA mode. Buffers as the CPU
 * functions'. */
#ifdef STARNN_USE_OPENCL
#define CLBUF(i) starnn_cl_buffer(buffers, i)

static void fwd_opencl_run(void *buffers[], const struct convt2d_args *a, starnn_dtype dt)
{
	struct starnn_clmat x = CLBUF(0), w = CLBUF(1), b = CLBUF(2), y = CLBUF(3);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(convt2d);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "convt2d_fwd",
		                       starnn_convt2d_fwd_opencl(ctx, x.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w,
		                                                 dt, x.mem, x.off, x.ld, w.mem, w.off, w.ld, b.mem, b.off,
		                                                 y.mem, y.off, y.ld));
}

static void bwd_data_opencl_run(void *buffers[], const struct convt2d_args *a, starnn_dtype dt)
{
	struct starnn_clmat w = CLBUF(0), dy = CLBUF(1), dx = CLBUF(2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(convt2d);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "convt2d_bwd_data",
		                       starnn_convt2d_bwd_data_opencl(ctx, dx.rows, w.rows, w.cols / 4, (size_t)a->h,
		                                                      (size_t)a->w, dt, w.mem, w.off, w.ld, dy.mem, dy.off,
		                                                      dy.ld, a->beta, dx.mem, dx.off, dx.ld));
}

static void bwd_weight_opencl_run(void *buffers[], const struct convt2d_args *a, starnn_dtype dt)
{
	struct starnn_clmat x = CLBUF(0), dy = CLBUF(1), dw = CLBUF(2), db = CLBUF(3);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(convt2d);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "convt2d_bwd_weight",
		                       starnn_convt2d_bwd_weight_opencl(ctx, x.rows, dw.rows, dw.cols / 4, (size_t)a->h,
		                                                        (size_t)a->w, dt, x.mem, x.off, x.ld, dy.mem, dy.off,
		                                                        dy.ld, a->beta, dw.mem, dw.off, dw.ld, db.mem,
		                                                        db.off));
}

static void convt2d_fwd_opencl(void *buffers[], void *cl_arg)
{
	fwd_opencl_run(buffers, cl_arg, STARNN_FP32);
}

static void convt2d_bwd_data_opencl(void *buffers[], void *cl_arg)
{
	bwd_data_opencl_run(buffers, cl_arg, STARNN_FP32);
}

static void convt2d_bwd_weight_opencl(void *buffers[], void *cl_arg)
{
	bwd_weight_opencl_run(buffers, cl_arg, STARNN_FP32);
}
#endif

/* ---------------------------------------------------------------- forward */

static void convt2d_fwd_cpu(void *buffers[], void *cl_arg)
{
	fwd_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), BUF(2).ptr, BUF(3));
}

#ifdef STARNN_USE_CUDA
static void convt2d_fwd_cuda(void *buffers[], void *cl_arg)
{
	fwd_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), BUF(2).ptr, BUF(3));
}
#endif

static STARNN_PERFMODEL_FP(convt2d_fwd, fp32, convt2d_footprint);
static struct starpu_codelet starnn_convt2d_fwd_cl = {
	.name = "convt2d_fwd",
	.cpu_funcs = {convt2d_fwd_cpu},
	.cpu_funcs_name = {"convt2d_fwd_cpu"},
	CUDA_IMPL(convt2d_fwd_cuda)
	STARNN_OPENCL_FUNCS(convt2d_fwd_opencl)
	CT_CAN_EXECUTE
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(convt2d_fwd, fp32),
};

/* --------------------------------------------------------- backward data */

static void convt2d_bwd_data_cpu(void *buffers[], void *cl_arg)
{
	bwd_data_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), BUF(2));
}

#ifdef STARNN_USE_CUDA
static void convt2d_bwd_data_cuda(void *buffers[], void *cl_arg)
{
	bwd_data_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), BUF(2));
}
#endif

static STARNN_PERFMODEL_FP(convt2d_bwd_data, fp32, convt2d_footprint);
static struct starpu_codelet starnn_convt2d_bwd_data_cl = {
	.name = "convt2d_bwd_data",
	.cpu_funcs = {convt2d_bwd_data_cpu},
	.cpu_funcs_name = {"convt2d_bwd_data_cpu"},
	CUDA_IMPL(convt2d_bwd_data_cuda)
	STARNN_OPENCL_FUNCS(convt2d_bwd_data_opencl)
	CT_CAN_EXECUTE
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	STARNN_MODELS(convt2d_bwd_data, fp32),
};
static struct starpu_codelet starnn_convt2d_bwd_data_w_cl = {
	.name = "convt2d_bwd_data",
	.cpu_funcs = {convt2d_bwd_data_cpu},
	.cpu_funcs_name = {"convt2d_bwd_data_cpu"},
	CUDA_IMPL(convt2d_bwd_data_cuda)
	STARNN_OPENCL_FUNCS(convt2d_bwd_data_opencl)
	CT_CAN_EXECUTE
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(convt2d_bwd_data, fp32),
};

/* ------------------------------------------------------- backward weight */

static void convt2d_bwd_weight_cpu(void *buffers[], void *cl_arg)
{
	bwd_weight_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), BUF(2), BUF(3));
}

#ifdef STARNN_USE_CUDA
static void convt2d_bwd_weight_cuda(void *buffers[], void *cl_arg)
{
	bwd_weight_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), BUF(2), BUF(3));
}
#endif

static STARNN_PERFMODEL_FP(convt2d_bwd_weight, fp32, convt2d_footprint);
static struct starpu_codelet starnn_convt2d_bwd_weight_cl = {
	.name = "convt2d_bwd_weight",
	.cpu_funcs = {convt2d_bwd_weight_cpu},
	.cpu_funcs_name = {"convt2d_bwd_weight_cpu"},
	CUDA_IMPL(convt2d_bwd_weight_cuda)
	STARNN_OPENCL_FUNCS(convt2d_bwd_weight_opencl)
	CT_CAN_EXECUTE
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
	STARNN_MODELS(convt2d_bwd_weight, fp32),
};
static struct starpu_codelet starnn_convt2d_bwd_weight_w_cl = {
	.name = "convt2d_bwd_weight",
	.cpu_funcs = {convt2d_bwd_weight_cpu},
	.cpu_funcs_name = {"convt2d_bwd_weight_cpu"},
	CUDA_IMPL(convt2d_bwd_weight_cuda)
	STARNN_OPENCL_FUNCS(convt2d_bwd_weight_opencl)
	CT_CAN_EXECUTE
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
	STARNN_MODELS(convt2d_bwd_weight, fp32),
};

/* ------------------------------------------------------- mixed precision
 * fp16 / bf16 x, w (the 16-bit weight copy), y, dy, dx; b, dw, db fp32.
 * bf16 on a CPU with oneDNN runs natively (above); on a CUDA worker with
 * STARNN_CUDA_HALF_CONV=native, 16-bit cuBLAS (cuda_native). Otherwise the
 * 16-bit buffers are widened to fp32 inside the task and the fp32
 * kernels run on them (fp32 accumulation); 16-bit outputs are rounded once
 * (codelets/halfwrap.h). */

/* bf16 on a CPU with oneDNN runs natively, without widening, where oneDNN
 * has bf16 kernels for the processor (starnn_conv2d_native_cpu). */
static int use_dnnl(const struct convt2d_args *a, starnn_dtype dt)
{
	return a->backend == STARNN_CONV2D_DNNL && starnn_conv2d_native_cpu(dt);
}

/* A CUDA worker in native mode (starnn_cuda_half_conv, taken at
 * submission): the *_cuda_half kernels (codelets/kernels/convt2d.h) on the 16-bit
 * buffers. One that returns STARNN_CONVT2D_UNSUPPORTED has written nothing:
 * the task goes on along the widening route, so results are always
 * produced. Other failures are already deferred errors. */
#ifdef STARNN_USE_CUDA
static int cuda_native(const struct convt2d_args *a, int cuda)
{
	return cuda && a->cuda_half == STARNN_CUDA_HALF_NATIVE;
}
#endif

static void convt2d_fwd_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat x = BUF(0), w = BUF(1), y = BUF(3);
	const float *b = BUF(2).ptr;
	if (!cuda && use_dnnl(a, dt)) {
		fwd_run(a, dt, 0, NULL, x, w, b, y);
		return;
	}
#ifdef STARNN_USE_CUDA
	if (cuda_native(a, cuda)) {
		int rc = starnn_convt2d_fwd_cuda_half(x.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w, dt, x.ptr,
		                                      x.ld, w.ptr, w.ld, b, y.ptr, y.ld, starnn_cublas_handle(),
		                                      starnn_cuda_stream());
		STARNN_CUDA_LAUNCHED("convt2d_fwd_half");
		if (rc != STARNN_CONVT2D_UNSUPPORTED)
			return;
	}
#endif
	struct starnn_hw h;
	starnn_hw_begin(&h, "convt2d_fwd_half", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), ww = starnn_hw_in(&h, dt, w, 1), yw = starnn_hw_in(&h, dt, y, 0);
	if (!h.failed) {
		fwd_run(a, STARNN_FP32, cuda, h.stream, xw, ww, b, yw);
		starnn_hw_out(&h, dt, yw, y);
	}
	starnn_hw_end(&h);
}

static void convt2d_bwd_data_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat w = BUF(0), dy = BUF(1), dx = BUF(2);
	if (!cuda && use_dnnl(a, dt)) {
		bwd_data_run(a, dt, 0, NULL, w, dy, dx);
		return;
	}
#ifdef STARNN_USE_CUDA
	if (cuda_native(a, cuda)) {
		int rc = starnn_convt2d_bwd_data_cuda_half(dx.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w, dt,
		                                           w.ptr, w.ld, dy.ptr, dy.ld, a->beta, dx.ptr, dx.ld,
		                                           starnn_cublas_handle(), starnn_cuda_stream());
		STARNN_CUDA_LAUNCHED("convt2d_bwd_data_half");
		if (rc != STARNN_CONVT2D_UNSUPPORTED)
			return;
	}
#endif
	struct starnn_hw h;
	starnn_hw_begin(&h, "convt2d_bwd_data_half", cuda);
	struct starnn_mat ww = starnn_hw_in(&h, dt, w, 1), dyw = starnn_hw_in(&h, dt, dy, 1),
	                  dxw = starnn_hw_in(&h, dt, dx, a->beta != 0.0f);
	if (!h.failed) {
		bwd_data_run(a, STARNN_FP32, cuda, h.stream, ww, dyw, dxw);
		starnn_hw_out(&h, dt, dxw, dx);
	}
	starnn_hw_end(&h);
}

static void convt2d_bwd_weight_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat x = BUF(0), dy = BUF(1), dw = BUF(2), db = BUF(3);
	if (!cuda && use_dnnl(a, dt)) {
		bwd_weight_run(a, dt, 0, NULL, x, dy, dw, db);
		return;
	}
#ifdef STARNN_USE_CUDA
	if (cuda_native(a, cuda)) {
		int rc = starnn_convt2d_bwd_weight_cuda_half(x.rows, dw.rows, dw.cols / 4, (size_t)a->h, (size_t)a->w, dt,
		                                             x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld, db.ptr,
		                                             starnn_cublas_handle(), starnn_cuda_stream());
		STARNN_CUDA_LAUNCHED("convt2d_bwd_weight_half");
		if (rc != STARNN_CONVT2D_UNSUPPORTED)
			return;
	}
#endif
	struct starnn_hw h;
	starnn_hw_begin(&h, "convt2d_bwd_weight_half", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), dyw = starnn_hw_in(&h, dt, dy, 1);
	if (!h.failed)
		bwd_weight_run(a, STARNN_FP32, cuda, h.stream, xw, dyw, dw, db);
	starnn_hw_end(&h);
}

#ifdef STARNN_USE_CUDA
#define CT_HALF_CUDA(fn, dt, DT)                                                                            \
	static void fn##_##dt##_cuda(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 1); }
#else
#define CT_HALF_CUDA(fn, dt, DT)
#endif
#ifdef STARNN_USE_OPENCL
static void convt2d_fwd_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	fwd_opencl_run(buffers, cl_arg, dt);
}

static void convt2d_bwd_data_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	bwd_data_opencl_run(buffers, cl_arg, dt);
}

static void convt2d_bwd_weight_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	bwd_weight_opencl_run(buffers, cl_arg, dt);
}
#define CT_HALF_OPENCL(fn, dt, DT)                                                                          \
	static void fn##_##dt##_opencl(void *buffers[], void *cl_arg) { fn##_half_opencl(buffers, cl_arg, DT); }
#else
#define CT_HALF_OPENCL(fn, dt, DT)
#endif
#define CT_HALF_FNS(fn, dt, DT)                                                                             \
	static void fn##_##dt##_cpu(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 0); }   \
	CT_HALF_CUDA(fn, dt, DT)                                                                            \
	CT_HALF_OPENCL(fn, dt, DT)
#define CT_HALF_CL(var, fn, dt, stem, nb, ...)                                                              \
	static struct starpu_codelet var = {                                                                \
		.name = #fn "_" #dt,                                                                        \
		.cpu_funcs = {fn##_##dt##_cpu},                                                             \
		.cpu_funcs_name = {#fn "_" #dt "_cpu"},                                                     \
		CUDA_IMPL(fn##_##dt##_cuda)                                                                 \
		STARNN_OPENCL_FUNCS(fn##_##dt##_opencl)                                                     \
		CT_CAN_EXECUTE                                                                              \
		.nbuffers = nb,                                                                             \
		.modes = {__VA_ARGS__},                                                                     \
		STARNN_MODELS_OF(stem),                                                                     \
	};
#define CT_HALF(dt, DT)                                                                                     \
	CT_HALF_FNS(convt2d_fwd, dt, DT)                                                                    \
	CT_HALF_FNS(convt2d_bwd_data, dt, DT)                                                               \
	CT_HALF_FNS(convt2d_bwd_weight, dt, DT)                                                             \
	static STARNN_PERFMODEL_FP(convt2d_fwd, dt, convt2d_half_footprint);                                \
	static STARNN_PERFMODEL_FP(convt2d_bwd_data, dt, convt2d_half_footprint);                           \
	static STARNN_PERFMODEL_FP(convt2d_bwd_weight, dt, convt2d_half_footprint);                         \
	CT_HALF_CL(fwd_##dt##_cl, convt2d_fwd, dt, starnn_convt2d_fwd_##dt, 4, STARPU_R, STARPU_R,          \
	           STARPU_R, STARPU_W)                                                                      \
	CT_HALF_CL(bwd_data_##dt##_cl, convt2d_bwd_data, dt, starnn_convt2d_bwd_data_##dt, 3,               \
	           STARPU_R, STARPU_R, STARPU_RW)                                                           \
	CT_HALF_CL(bwd_data_w_##dt##_cl, convt2d_bwd_data, dt, starnn_convt2d_bwd_data_##dt, 3,             \
	           STARPU_R, STARPU_R, STARPU_W)                                                            \
	CT_HALF_CL(bwd_weight_##dt##_cl, convt2d_bwd_weight, dt, starnn_convt2d_bwd_weight_##dt, 4,         \
	           STARPU_R, STARPU_R, STARPU_RW, STARPU_RW)                                                \
	CT_HALF_CL(bwd_weight_w_##dt##_cl, convt2d_bwd_weight, dt, starnn_convt2d_bwd_weight_##dt,          \
	           4, STARPU_R, STARPU_R, STARPU_W, STARPU_W)

CT_HALF(fp16, STARNN_FP16)
CT_HALF(bf16, STARNN_BF16)

/* The passes reading their weights from a whole blocked copy of w, rows
 * from a->row0 (codelets/kernels/convt2d.h: starnn_convt2d_*_dnnl_sliced); CPU
 * only. fp32 and native bf16 hand the copy to the kernel, which reorders w
 * itself where the copy's layout is not its primitive's. 16-bit passes
 * that are widened (fp16; bf16 where oneDNN has no bf16 kernels) widen
 * the activations as convt2d_*_half do, and w only where the fp32
 * primitive does not read the copy as it is
 * (starnn_convt2d_dnnl_sliced_ok): a copy kept current holds the widened
 * weights already. in / out: x and y (forward) or dy and dx. */
static void copy_pass_cpu(void *buffers[], const struct convt2d_args *a, starnn_dtype dt, int fwd)
{
	const struct starnn_mat w = BUF(fwd ? 1 : 0), in = BUF(fwd ? 0 : 1), out = BUF(fwd ? 4 : 3);
	const void *copy = BUF(fwd ? 3 : 2).ptr;
	const float *b = fwd ? BUF(2).ptr : NULL;
	const float beta = fwd ? 0.0f : a->beta;
	const size_t n = in.rows, c = w.rows, o = w.cols / 4, h = (size_t)a->h, wd = (size_t)a->w, xb = (size_t)a->xb,
	             yb = (size_t)a->yb, row0 = (size_t)a->row0;
	const int widen = dt != STARNN_FP32 && !use_dnnl(a, dt);
	struct starnn_hw hw;
	starnn_hw_begin(&hw, fwd ? "convt2d_fwd_sliced" : "convt2d_bwd_data_sliced", 0);
	const starnn_dtype hdt = widen ? dt : STARNN_FP32; /* what starnn_hw_in widens (fp32: nothing) */
	struct starnn_mat inw = starnn_hw_in(&hw, hdt, in, 1), outw = starnn_hw_in(&hw, hdt, out, beta != 0.0f);
	const int as_is = !widen || (!hw.failed && starnn_convt2d_dnnl_sliced_ok(fwd, n, c, o, h, wd, xb, yb, &a->routes,
	                                                                           inw.ld, w.ld, outw.ld, beta, copy, row0));
	struct starnn_mat ww = as_is ? w : starnn_hw_in(&hw, hdt, w, 1);
	const starnn_dtype rdt = widen ? STARNN_FP32 : dt; /* what the kernel runs on */
	const void *pk = as_is ? copy : NULL;
	if (!hw.failed) {
		report(fwd ? starnn_convt2d_fwd_dnnl_sliced(n, c, o, h, wd, xb, yb, rdt, &a->routes, inw.ptr, inw.ld, ww.ptr,
		                                            ww.ld, pk, row0, b, outw.ptr, outw.ld)
		           : starnn_convt2d_bwd_data_dnnl_sliced(n, c, o, h, wd, xb, yb, rdt, &a->routes, ww.ptr, ww.ld, pk,
		                                                 row0, inw.ptr, inw.ld, beta, outw.ptr, outw.ld));
		starnn_hw_out(&hw, hdt, outw, out);
	}
	starnn_hw_end(&hw);
}

/* (buffers w, dy, copy, dx) */
static void bwd_data_sliced(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	copy_pass_cpu(buffers, cl_arg, dt, 0);
}
/* One CPU-only codelet var of a pass reading a whole blocked copy of w
 * (fn(buffers, cl_arg, DT)): label nm (the fp32 codelets' names without
 * their dtype, as the others'), perfmodel starnn_convt2d_<op>_<dt>. */
#define CT_COPY_CL(var, op, fn, dt, DT, nm, nb, ...)                                                        \
	static void var##_cpu(void *buffers[], void *cl_arg)                                                \
	{                                                                                                   \
		fn(buffers, cl_arg, DT);                                                                    \
	}                                                                                                   \
	static struct starpu_codelet var##_cl = {                                                           \
		.name = nm,                                                                                 \
		.cpu_funcs = {var##_cpu},                                                                   \
		.cpu_funcs_name = {#var "_cpu"},                                                            \
		.nbuffers = nb,                                                                             \
		.modes = {__VA_ARGS__},                                                                     \
		STARNN_MODELS(op, dt),                                                                      \
	};
static STARNN_PERFMODEL_FP(convt2d_bwd_data_sliced, fp32, convt2d_footprint);
static STARNN_PERFMODEL_FP(convt2d_bwd_data_sliced, fp16, convt2d_half_footprint);
static STARNN_PERFMODEL_FP(convt2d_bwd_data_sliced, bf16, convt2d_half_footprint);
/* The backward-data pair of dtype dt: dx RW (beta != 0) and W (_w_). */
#define CT_BWD_DATA_SLICED(dt, DT, nm)                                                                      \
	CT_COPY_CL(bwd_data_sliced_##dt, convt2d_bwd_data_sliced, bwd_data_sliced, dt, DT, nm, 4, STARPU_R,  \
	           STARPU_R, STARPU_R, STARPU_RW)                                                           \
	CT_COPY_CL(bwd_data_sliced_w_##dt, convt2d_bwd_data_sliced, bwd_data_sliced, dt, DT, nm, 4, STARPU_R,\
	           STARPU_R, STARPU_R, STARPU_W)
CT_BWD_DATA_SLICED(fp32, STARNN_FP32, "convt2d_bwd_data_sliced")
CT_BWD_DATA_SLICED(fp16, STARNN_FP16, "convt2d_bwd_data_sliced_fp16")
CT_BWD_DATA_SLICED(bf16, STARNN_BF16, "convt2d_bwd_data_sliced_bf16")

/* The forward, whose copy is in the layout of its 1x1 convolution [4o, c]
 * (buffers x, w, b, copy, y). */
static void fwd_sliced(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	copy_pass_cpu(buffers, cl_arg, dt, 1);
}
static STARNN_PERFMODEL_FP(convt2d_fwd_sliced, fp32, convt2d_footprint);
static STARNN_PERFMODEL_FP(convt2d_fwd_sliced, fp16, convt2d_half_footprint);
static STARNN_PERFMODEL_FP(convt2d_fwd_sliced, bf16, convt2d_half_footprint);
CT_COPY_CL(fwd_sliced_fp32, convt2d_fwd_sliced, fwd_sliced, fp32, STARNN_FP32, "convt2d_fwd_sliced",
           5, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
CT_COPY_CL(fwd_sliced_fp16, convt2d_fwd_sliced, fwd_sliced, fp16, STARNN_FP16,
           "convt2d_fwd_sliced_fp16", 5, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
CT_COPY_CL(fwd_sliced_bf16, convt2d_fwd_sliced, fwd_sliced, bf16, STARNN_BF16,
           "convt2d_fwd_sliced_bf16", 5, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)

/* By the activations' dtype (fp32 first). */
static struct starpu_codelet *const fwd_sliced_cls[3] = {&fwd_sliced_fp32_cl, &fwd_sliced_fp16_cl,
                                                         &fwd_sliced_bf16_cl};
static struct starpu_codelet *const bwd_data_sliced_cls[2][3] = {
	{&bwd_data_sliced_w_fp32_cl, &bwd_data_sliced_w_fp16_cl, &bwd_data_sliced_w_bf16_cl},
	{&bwd_data_sliced_fp32_cl, &bwd_data_sliced_fp16_cl, &bwd_data_sliced_bf16_cl}};
static struct starpu_codelet *const fwd_cls[3] = {&starnn_convt2d_fwd_cl, &fwd_fp16_cl, &fwd_bf16_cl};
static struct starpu_codelet *const bwd_data_cls[2][3] = {
	{&starnn_convt2d_bwd_data_w_cl, &bwd_data_w_fp16_cl, &bwd_data_w_bf16_cl},
	{&starnn_convt2d_bwd_data_cl, &bwd_data_fp16_cl, &bwd_data_bf16_cl}};
static struct starpu_codelet *const bwd_weight_cls[2][3] = {
	{&starnn_convt2d_bwd_weight_w_cl, &bwd_weight_w_fp16_cl, &bwd_weight_w_bf16_cl},
	{&starnn_convt2d_bwd_weight_cl, &bwd_weight_fp16_cl, &bwd_weight_bf16_cl}};

/* ------------------------------------------------------------- submission */

/* x [N, C, H, W] (or dx), w [C, O, 2, 2] (or dw), b [O] (or db, may be
 * NULL when not part of the call), y [N, O, 2H, 2W] (or dy). */
static int check_shapes_dt(const char *op, const starnn_tensor *x, const starnn_tensor *w, const starnn_tensor *b,
                           const starnn_tensor *y, starnn_dtype dt, starnn_dtype wdt)
{
	char dx[128], dw[128], db[128], dy[128];
	STARNN_CHECK(starnn_conv2d_settings_check());
	starnn_tensor_describe(x, dx, sizeof dx);
	starnn_tensor_describe(w, dw, sizeof dw);
	starnn_tensor_describe(y, dy, sizeof dy);
	if (b)
		starnn_tensor_describe(b, db, sizeof db);
	if (x->dtype != dt || w->dtype != wdt || y->dtype != dt || (b && b->dtype != STARNN_FP32)) {
		if (dt == STARNN_FP32)
			return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s, %s, %s", op, dx, dw, dy);
		return starnn_error(STARNN_EINVAL, "%s: %s data, %s weights and an fp32 bias expected, got %s, %s, %s%s%s",
		                    op, starnn_dtype_name(dt), starnn_dtype_name(wdt), dx, dw, dy, b ? ", " : "",
		                    b ? db : "");
	}
	if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4)
		return starnn_error(STARNN_EINVAL, "%s: 4-D tensors expected, got %s, %s, %s", op, dx, dw, dy);
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3], o = w->shape[1];
	if (w->shape[0] != c || w->shape[2] != 2 || w->shape[3] != 2)
		return starnn_error(STARNN_EINVAL, "%s: weight %s must be [%lld, O, 2, 2] for input %s", op, dw,
		                    (long long)c, dx);
	if (y->shape[0] != n || y->shape[1] != o || y->shape[2] != 2 * h || y->shape[3] != 2 * wd)
		return starnn_error(STARNN_EINVAL, "%s: output %s must be [%lld,%lld,%lld,%lld] for input %s and weight %s",
		                    op, dy, (long long)n, (long long)o, (long long)(2 * h), (long long)(2 * wd), dx, dw);
	if (b && (b->ndim != 1 || b->shape[0] != o))
		return starnn_error(STARNN_EINVAL, "%s: bias %s must be [%lld]", op, db, (long long)o);
	if ((x->cblock > 1 || y->cblock > 1) && starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL, "%s: blocked layouts (%s, %s) need the oneDNN CPU backend", op, dx, dy);
	/* BLAS takes int sizes and leading dimensions. */
	if (h * wd > INT_MAX || 4 * o > INT_MAX || c > INT_MAX || w->ld > INT_MAX)
		return starnn_error(STARNN_EINVAL, "%s: sizes of %s / %s too large for BLAS", op, dx, dw);
	return 0;
}

/* The task arguments; the settings (CPU kernels, routes, CUDA 16-bit mode)
 * are taken now, at submission. */
static struct convt2d_args args_of(const starnn_tensor *x, const starnn_tensor *y, float beta, starnn_dtype dt)
{
	struct starnn_conv2d_routes r;
	starnn_conv2d_routes_in_force(&r);
	struct convt2d_args a = {x->shape[2], x->shape[3], (int64_t)starnn_conv2d_cpu_backend(), x->cblock, y->cblock,
	                         dt == STARNN_FP32 ? 0 : (int64_t)starnn_cuda_half_conv(), beta, {0}, 0, r};
	return a;
}

/* Task splitting: one task is single-threaded, so a large call is cut into
 * one task per worker (each at least MIN_TASK_FLOPS): along the batch when
 * it has a sample per task, else along channels (forward: output channels
 * of y, w and b; backward data: input channels of dx and w). The weight
 * gradient is split along output channels only (dy, dw and db; parts over
 * the batch would have to be summed). All parts are disjoint. max_parts
 * (0: no limit) caps the parts: both backward passes submitted together
 * (starnn_convt2d_bwd) take half the workers each. */
#define MIN_TASK_FLOPS 2.5e7

/* Multiply-adds of a 2x2 stride-2 transposed convolution from x [N,C,H,W]
 * to o channels: each input pixel meets 4 outputs of each of the o
 * channels, 2 flops each. Also the count given to each task's StarPU
 * flops (x and o those of its parts: shapes its footprint holds). */
static double ct_flops(const starnn_tensor *x, int64_t o)
{
	return 8.0 * (double)x->shape[0] * (double)x->shape[1] * (double)o * (double)x->shape[2] * (double)x->shape[3];
}

static int task_count(const starnn_tensor *x, int64_t o, int max_parts)
{
	double flops = ct_flops(x, o);
	int nw = starnn_split_width();
	if (max_parts > 0 && nw > max_parts)
		nw = max_parts;
	double parts = flops / MIN_TASK_FLOPS;
	return parts < 1 ? 1 : parts < nw ? (int)parts : nw;
}

/* The whole copy of w in the layout oneDNN reads in the forward (fwd 1:
 * its 1x1 convolution [4o, c]) or backward-data pass (its deconvolution)
 * (codelets/conv2d_internal.h: starnn_conv2d_blocked_copy), which the
 * optimizers keep current as they write w, so that no task reorders w;
 * NULL where that does not apply: packing not on, not oneDNN, device
 * workers (CUDA, OpenCL), w a part, the direct kernels, a layout runtime/base/types.h
 * does not describe (routes r: the tasks'). 16-bit
 * passes widened to fp32 get an fp32 copy of the widened weights. x0: the
 * first task's x (forward) or dx (backward data), whose geometry with y's
 * (dy's) layout asks for it. */
static int w_copy(int fwd, starnn_tensor *w, const starnn_tensor *x0, const starnn_tensor *y, starnn_dtype dt,
                  const struct starnn_conv2d_routes *r, starnn_tensor **copy)
{
	*copy = NULL;
	struct starnn_blocked_weights L;
	if (starnn_conv2d_pack() != STARNN_CONV2D_PACK_ON || starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL ||
	    starnn_ndevice_workers() > 0 || w->parent || w->dtype != dt || (unsigned)dt >= STARNN_NDTYPES)
		return 0;
	/* the primitive's dtype: 16-bit passes that are not native bf16 run
	 * the fp32 one on widened activations, with an fp32 copy of the
	 * widened weights (starnn_conv2d_blocked_copy of a 16-bit w) */
	const starnn_dtype pdt = starnn_conv2d_native_cpu(dt) ? dt : STARNN_FP32;
	const size_t n = (size_t)x0->shape[0], c = (size_t)x0->shape[1], o = (size_t)w->shape[1],
	             h = (size_t)x0->shape[2], wd = (size_t)x0->shape[3], xb = (size_t)x0->cblock, yb = (size_t)y->cblock;
	if (!(fwd ? starnn_convt2d_dnnl_fwd_layout(n, c, o, h, wd, xb, yb, pdt, r, &L)
	          : starnn_convt2d_dnnl_bwd_data_layout(n, c, o, h, wd, xb, yb, pdt, r, &L)))
		return 0;
	int rc;
	*copy = starnn_conv2d_blocked_copy(w, &L, &rc);
	return rc;
}

static int convt2d_fwd_dt(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y, starnn_dtype dt)
{
	if (!x || !w || !b || !y)
		return starnn_error(STARNN_EINVAL, "convt2d_fwd: x, w, b and y are required");
	STARNN_CHECK(check_shapes_dt("convt2d_fwd", x, w, b, y, dt, dt));
	struct convt2d_args a = args_of(x, y, 0.0f, dt);
	int parts = task_count(x, w->shape[1], 0);
	int64_t sizes[parts];
	starnn_tensor **xp = NULL, **yp = NULL, **wp = NULL, **bp = NULL;
	if (parts > 1 && x->shape[0] >= parts) {
		parts = starnn_part_sizes(x->shape[0], parts, 1, sizes);
		STARNN_CHECK(starnn_tensor_split(x, 0, parts, sizes, &xp));
		STARNN_CHECK(starnn_tensor_split(y, 0, parts, sizes, &yp));
	} else if (parts > 1 && (parts = starnn_part_sizes(w->shape[1], parts, y->cblock, sizes)) > 1) {
		STARNN_CHECK(starnn_tensor_split(y, 1, parts, sizes, &yp));
		STARNN_CHECK(starnn_tensor_split(w, 1, parts, sizes, &wp));
		STARNN_CHECK(starnn_tensor_split(b, 0, parts, sizes, &bp));
	} else
		parts = 1;
	starnn_tensor *copy = NULL;
	STARNN_CHECK(w_copy(1, w, xp ? xp[0] : x, y, dt, &a.routes, &copy));
	for (int i = 0; i < parts; i++) {
		starnn_tensor *xi = xp ? xp[i] : x, *wi = wp ? wp[i] : w, *yi = yp ? yp[i] : y;
		/* the product, then the bias on every output element */
		double flops = ct_flops(xi, wi->shape[1]) + (double)(yi->rows * yi->cols);
		struct starnn_task_desc d = {.cl = fwd_cls[dt], .args = &a, .args_size = sizeof a, .flops = flops,
		                             .tensors = {xi, wi, bp ? bp[i] : b, yi}};
		if (copy) {
			d.cl = fwd_sliced_cls[dt];
			d.tensors[3] = copy, d.tensors[4] = yi;
		}
		STARNN_CHECK(starnn_submit(&d));
		a.row0 += wp ? 4 * wi->shape[1] : 0; /* (rows of the 1x1 weights [4o, c]) */
	}
	return 0;
}

static int convt2d_bwd_data_dt(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx, starnn_dtype dt,
                               int max_parts)
{
	if (!w || !dy || !dx)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd_data: w, dy and dx are required");
	STARNN_CHECK(check_shapes_dt("convt2d_bwd_data", dx, w, NULL, dy, dt, dt));
	struct convt2d_args a = args_of(dx, dy, beta, dt);
	struct starpu_codelet *cl = bwd_data_cls[beta != 0.0f][dt];
	int parts = task_count(dx, w->shape[1], max_parts);
	int64_t sizes[parts];
	starnn_tensor **dyp = NULL, **dxp = NULL, **wp = NULL;
	if (parts > 1 && dx->shape[0] >= parts) {
		parts = starnn_part_sizes(dx->shape[0], parts, 1, sizes);
		STARNN_CHECK(starnn_tensor_split(dy, 0, parts, sizes, &dyp));
		STARNN_CHECK(starnn_tensor_split(dx, 0, parts, sizes, &dxp));
	} else if (parts > 1 && (parts = starnn_part_sizes(dx->shape[1], parts, dx->cblock, sizes)) > 1) {
		STARNN_CHECK(starnn_tensor_split(dx, 1, parts, sizes, &dxp));
		STARNN_CHECK(starnn_tensor_split(w, 0, parts, sizes, &wp));
	} else
		parts = 1;
	starnn_tensor *copy = NULL;
	STARNN_CHECK(w_copy(0, w, dxp ? dxp[0] : dx, dy, dt, &a.routes, &copy));
	for (int i = 0; i < parts; i++) {
		starnn_tensor *wi = wp ? wp[i] : w, *dxi = dxp ? dxp[i] : dx;
		struct starnn_task_desc d = {.cl = cl, .args = &a, .args_size = sizeof a,
		                             .flops = ct_flops(dxi, wi->shape[1]),
		                             .tensors = {wi, dyp ? dyp[i] : dy, dxi}};
		if (copy) {
			d.cl = bwd_data_sliced_cls[beta != 0.0f][dt];
			d.tensors[2] = copy, d.tensors[3] = dxi;
		}
		STARNN_CHECK(starnn_submit(&d));
		a.row0 += wp ? wi->shape[0] : 0;
	}
	return 0;
}

static int convt2d_bwd_weight_dt(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db,
                                 starnn_dtype dt, int max_parts)
{
	if (!x || !dy || !dw || !db)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd_weight: x, dy, dw and db are required");
	STARNN_CHECK(check_shapes_dt("convt2d_bwd_weight", x, dw, db, dy, dt, STARNN_FP32));
	struct convt2d_args a = args_of(x, dy, beta, dt);
	struct starpu_codelet *cl = bwd_weight_cls[beta != 0.0f][dt];
	int parts = task_count(x, dw->shape[1], max_parts);
	int64_t sizes[parts];
	starnn_tensor **dyp = NULL, **dwp = NULL, **dbp = NULL;
	if (parts > 1)
		parts = starnn_part_sizes(dw->shape[1], parts, dy->cblock, sizes);
	if (parts < 1)
		parts = 1;
	/* dw's layout, chosen by its first writer (codelets/conv2d_internal.h) */
	if (!dw->wl_fixed) {
		struct starnn_blocked_weights L;
		memset(&L, 0, sizeof L);
		/* (the primitive's dtype: 16-bit passes that are not native bf16
		 * run the fp32 one on widened copies of x and dy, in their layouts) */
		const starnn_dtype pdt = starnn_conv2d_native_cpu(dt) ? STARNN_BF16 : STARNN_FP32;
		if (starnn_dw_layout_open(dw, parts == 1))
			starnn_convt2d_dnnl_dw_layout((size_t)x->shape[0], (size_t)x->shape[1], (size_t)dw->shape[1],
			                              (size_t)x->shape[2], (size_t)x->shape[3], (size_t)x->cblock,
			                              (size_t)dy->cblock, pdt, &a.routes, &L);
		STARNN_CHECK(starnn_tensor_set_wlayout(dw, &L));
	}
	STARNN_CHECK(starnn_dw_layout_check("convt2d_bwd_weight", dw, parts == 1));
	a.dwl = dw->wl;
	if (parts > 1) {
		STARNN_CHECK(starnn_tensor_split(dy, 1, parts, sizes, &dyp));
		STARNN_CHECK(starnn_tensor_split(dw, 1, parts, sizes, &dwp));
		STARNN_CHECK(starnn_tensor_split(db, 0, parts, sizes, &dbp));
	}
	for (int i = 0; i < parts; i++) {
		starnn_tensor *dyi = dyp ? dyp[i] : dy, *dwi = dwp ? dwp[i] : dw;
		/* the weight product, then the bias gradient's sum over dy */
		double flops = ct_flops(x, dwi->shape[1]) + (double)(dyi->rows * dyi->cols);
		struct starnn_task_desc d = {.cl = cl, .args = &a, .args_size = sizeof a, .flops = flops,
		                             .tensors = {x, dyi, dwi, dbp ? dbp[i] : db}};
		STARNN_CHECK(starnn_submit(&d));
	}
	return 0;
}

int starnn_convt2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y)
{
	return convt2d_fwd_dt(x, w, b, y, STARNN_FP32);
}

int starnn_convt2d_bwd_data(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx)
{
	return convt2d_bwd_data_dt(w, dy, beta, dx, STARNN_FP32, 0);
}

int starnn_convt2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db)
{
	return convt2d_bwd_weight_dt(x, dy, beta, dw, db, STARNN_FP32, 0);
}

/* Both backward passes: independent (one reads w, the other x), so
 * together they are as many tasks as workers without splitting each as
 * far (as conv2d's: starnn_conv2d_bwd). At batch 1 on 2 cores the two run
 * side by side, each whole, instead of each being cut into channel parts;
 * a whole weight gradient is written in oneDNN's own layout (a part over
 * output channels is not: its columns are not a view of that layout). */
static int convt2d_bwd_dt(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                          float beta_w, starnn_tensor *dw, starnn_tensor *db, starnn_dtype dt)
{
	if (!x || !dy || !w || !dx || !dw || !db)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd: x, dy, w, dx, dw and db are required");
	/* both passes' checks first: a refused call submits nothing */
	STARNN_CHECK(check_shapes_dt("convt2d_bwd_data", dx, w, NULL, dy, dt, dt));
	STARNN_CHECK(check_shapes_dt("convt2d_bwd_weight", x, dw, db, dy, dt, STARNN_FP32));
	const int half = (starnn_split_width() + 1) / 2;
	STARNN_CHECK(convt2d_bwd_data_dt(w, dy, beta_x, dx, dt, half));
	return convt2d_bwd_weight_dt(x, dy, beta_w, dw, db, dt, half);
}

int starnn_convt2d_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                       float beta_w, starnn_tensor *dw, starnn_tensor *db)
{
	return convt2d_bwd_dt(x, dy, w, beta_x, dx, beta_w, dw, db, STARNN_FP32);
}

static starnn_dtype act_dtype(const starnn_tensor *t)
{
	return t && starnn_hw_is_half(t->dtype) ? t->dtype : STARNN_FP32;
}

int starnn_convt2d_fwd_mp(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y)
{
	if (!x || !w || !b || !y)
		return starnn_error(STARNN_EINVAL, "convt2d_fwd: x, w, b and y are required");
	return convt2d_fwd_dt(x, w, b, y, act_dtype(x));
}

int starnn_convt2d_bwd_data_mp(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx)
{
	if (!w || !dy || !dx)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd_data: w, dy and dx are required");
	return convt2d_bwd_data_dt(w, dy, beta, dx, act_dtype(dy), 0);
}

int starnn_convt2d_bwd_weight_mp(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw,
                                 starnn_tensor *db)
{
	if (!x || !dy || !dw || !db)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd_weight: x, dy, dw and db are required");
	return convt2d_bwd_weight_dt(x, dy, beta, dw, db, act_dtype(x), 0);
}

int starnn_convt2d_bwd_mp(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                          float beta_w, starnn_tensor *dw, starnn_tensor *db)
{
	return convt2d_bwd_dt(x, dy, w, beta_x, dx, beta_w, dw, db, act_dtype(x));
}
