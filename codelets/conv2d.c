/* StarPU codelets of conv2d and its submit functions (codelets/conv2d.h):
 * forward, backward data, backward weight and the bias gradient, in fp32
 * and in 16-bit activations (mixed precision), the oneDNN passes that
 * read copies of the weights (codelets/conv2d_pack.c makes them), on the
 * kernels of codelets/kernels/conv2d.h with the routes in force at
 * submission (codelets/conv2d_routes.h).
 *
 * One task is single-threaded on a CPU, so a large convolution is split
 * into several tasks: along the batch when it has enough samples, else
 * along channels (forward: output channels of y and w; backward data:
 * input channels of dx and w; backward weight: input channels of x and dw,
 * whose parts are disjoint column blocks of dw). The bias gradient is
 * computed by the first weight task (on oneDNN in the same primitive as the
 * weight gradient, while dy is read anyway), never as a pass of its own. */

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/conv2d_internal.h"
#include "codelets/halfwrap.h"
#include "runtime/core/codelet.h"
#include "runtime/core/init.h" /* (starnn_split_width) */

/* Smallest task worth splitting off: about 0.2 ms of one core with AVX-512
 * sgemm, 1 ms with SSE kernels; StarPU's per-task cost is some 10 us. The
 * UNet's smaller passes (0.15 GFLOP at 128x128, f = 16) must still use
 * both cores. */
#define MIN_TASK_FLOPS 2.5e7

struct conv_args {
	/* footprint key: the geometry of this task's parts */
	uint32_t n, c, o, h, w, k;
	uint32_t backend; /* CPU kernels (enum starnn_conv2d_backend): another cost */
	uint32_t xb, yb;  /* layouts of x (dx) and y (dy): runtime/core/tensor.h cblock */
	uint32_t cuda_half; /* 16-bit codelets: enum starnn_cuda_half_conv (0 for fp32) */
	uint32_t o0;  /* forward: first output channel of this part (bias offset) */
	float beta;   /* backward passes: dx / dw / db = beta * old + new */
	uint32_t dwb, dwi, dwib; /* weight gradient: dw's blocked layout (struct starnn_conv2d_geom), 0: OIHW */
	struct starnn_conv2d_routes routes; /* the oneDNN backend's routes, taken at submission */
};
/* The fp32 codelets' key leaves cuda_half out (their footprints stay as
 * they were); the 16-bit ones include it: native and widened are different
 * costs. */
#define CONV_KEY_BYTES (9 * sizeof(uint32_t))
#define CONV_HALF_KEY_BYTES (10 * sizeof(uint32_t))

static struct starnn_conv2d_geom geom_of(const struct conv_args *a)
{
	struct starnn_conv2d_geom g = {a->n, a->c, a->o, a->h, a->w, a->k, a->xb, a->yb, a->dwb, a->dwi, a->dwib};
	return g;
}

/* Blocked data runs on CPUs only (cuDNN and the OpenCL kernels take NCHW
 * here). */
#if (defined(STARNN_USE_CUDA) && defined(STARNN_USE_CUDNN)) || defined(STARNN_USE_OPENCL)
#define CONV_CAN_EXECUTE .can_execute = conv_can_execute,
static int conv_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	const struct conv_args *a = task->cl_arg;
	return starnn_worker_takes(workerid, a && (a->xb > 1 || a->yb > 1));
}
#else
#define CONV_CAN_EXECUTE
#endif

static uint32_t conv_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, CONV_KEY_BYTES);
}

static uint32_t conv_half_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, CONV_HALF_KEY_BYTES);
}

/* ------------------------------------------------- per-worker workspace */

/* The im2col workspace: the worker thread's scratch slot for it
 * (runtime/base/scratch.h; kept at its largest size). */
static float *workspace_get(size_t n, const char *op)
{
	if (n == 0)
		return NULL;
	float *p = starnn_scratch(STARNN_SCRATCH_CONV, n * sizeof(float));
	if (!p)
		starnn_defer_error(STARNN_ENOMEM, "%s: cannot allocate a %zu-float workspace", op, n);
	return p;
}

#if defined(STARNN_USE_CUDA) && defined(STARNN_USE_CUDNN)
#define CONV_CUDA 1
#endif

#define done starnn_conv2d_done

/* ---------------------------------------------------- one pass, one worker
 * Each pass runs through one function for every codelet that has it: on a
 * CUDA worker (cuda != 0) cuDNN in fp32 on the given stream; on a CPU the
 * kernels of the backend the task was submitted with: oneDNN (dt fp32, or
 * bf16 natively) or im2col + sgemm (fp32). The fp32 codelets pass their
 * buffers, the 16-bit ones theirs (bf16 on oneDNN) or fp32 copies of them. */

/* packed: the weights packed for this pass (conv2d_pack_weight tasks), or
 * NULL; the oneDNN route alone reads them. */
static void fwd_run(const struct conv_args *a, starnn_dtype dt, int cuda, void *stream, struct starnn_mat x,
                    struct starnn_mat w, const void *packed, const float *b, struct starnn_mat y)
{
	struct starnn_conv2d_geom g = geom_of(a);
	b += a->o0;
	(void)stream;
	if (cuda) {
#ifdef CONV_CUDA
		done(starnn_conv2d_fwd_cuda(&g, x.ptr, x.ld, w.ptr, w.ld, b, y.ptr, y.ld, starnn_cudnn_handle(), stream));
#endif
		return;
	}
	if (a->backend == STARNN_CONV2D_DNNL) {
		done(starnn_conv2d_fwd_dnnl_packed(&g, dt, &a->routes, x.ptr, x.ld, w.ptr, w.ld, packed, b, y.ptr, y.ld));
		return;
	}
	size_t nwork = starnn_conv2d_cpu_workspace(&g, STARNN_CONV2D_FWD);
	float *work = workspace_get(nwork, "conv2d_fwd");
	if (!nwork || work)
		starnn_conv2d_fwd_cpu(&g, x.ptr, x.ld, w.ptr, w.ld, b, y.ptr, y.ld, work);
}

static void bwd_data_run(const struct conv_args *a, starnn_dtype dt, int cuda, void *stream, struct starnn_mat dy,
                         struct starnn_mat w, const void *packed, struct starnn_mat dx)
{
	struct starnn_conv2d_geom g = geom_of(a);
	(void)stream;
	if (cuda) {
#ifdef CONV_CUDA
		done(starnn_conv2d_bwd_data_cuda(&g, dy.ptr, dy.ld, w.ptr, w.ld, a->beta, dx.ptr, dx.ld,
		                                 starnn_cudnn_handle(), stream));
#endif
		return;
	}
	if (a->backend == STARNN_CONV2D_DNNL) {
		done(starnn_conv2d_bwd_data_dnnl_packed(&g, dt, &a->routes, dy.ptr, dy.ld, w.ptr, w.ld, packed, a->beta,
		                                        dx.ptr, dx.ld));
		return;
	}
	size_t nwork = starnn_conv2d_cpu_workspace(&g, STARNN_CONV2D_BWD_DATA);
	float *work = workspace_get(nwork, "conv2d_bwd_data");
	if (!nwork || work)
		starnn_conv2d_bwd_data_cpu(&g, dy.ptr, dy.ld, w.ptr, w.ld, a->beta, dx.ptr, dx.ld, work);
}

/* The weight gradient, and the bias gradient into db unless it is NULL
 * (the first weight task of a pass): oneDNN computes both in one primitive;
 * cuDNN and im2col run the bias's sum over dy (fp32: 16-bit dy is widened
 * first) after the weight product. */
static void bwd_weight_run(const struct conv_args *a, starnn_dtype dt, int cuda, void *stream, struct starnn_mat x,
                           struct starnn_mat dy, struct starnn_mat dw, float *db)
{
	struct starnn_conv2d_geom g = geom_of(a);
	(void)stream;
	if (cuda) {
#ifdef CONV_CUDA
		int rc = starnn_conv2d_bwd_weight_cuda(&g, x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld,
		                                       starnn_cudnn_handle(), stream);
		if (rc == 0 && db)
			rc = starnn_conv2d_bwd_bias_cuda(a->n, a->o, a->h, a->w, dy.ptr, dy.ld, a->beta, db,
			                                 starnn_cudnn_handle(), stream);
		done(rc);
#endif
		return;
	}
	if (a->backend == STARNN_CONV2D_DNNL) {
		done(starnn_conv2d_bwd_weight_dnnl(&g, dt, &a->routes, x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld,
		                                   db));
		return;
	}
	size_t nwork = starnn_conv2d_cpu_workspace(&g, STARNN_CONV2D_BWD_WEIGHT);
	float *work = workspace_get(nwork, "conv2d_bwd_weight");
	if (!nwork || work)
		starnn_conv2d_bwd_weight_cpu(&g, x.ptr, x.ld, dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld, work);
	if (db)
		starnn_conv2d_bwd_bias_cpu(a->n, a->o, (size_t)a->h * a->w, dy.ptr, dy.ld, a->beta, db);
}

/* ------------------------------------------------------- fp32 codelets */

#define BUF(i) starnn_buffer(buffers, i)

static void fwd_cpu(void *buffers[], void *cl_arg)
{
	fwd_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), NULL, BUF(2).ptr, BUF(3));
}

static void bwd_data_cpu(void *buffers[], void *cl_arg)
{
	bwd_data_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), NULL, BUF(2));
}

static void bwd_weight_cpu(void *buffers[], void *cl_arg)
{
	bwd_weight_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), BUF(2), NULL);
}

static void bwd_weight_bias_cpu(void *buffers[], void *cl_arg)
{
	bwd_weight_run(cl_arg, STARNN_FP32, 0, NULL, BUF(0), BUF(1), BUF(2), BUF(3).ptr);
}

#ifdef CONV_CUDA
static void fwd_cuda(void *buffers[], void *cl_arg)
{
	fwd_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), NULL, BUF(2).ptr, BUF(3));
}

static void bwd_data_cuda(void *buffers[], void *cl_arg)
{
	bwd_data_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), NULL, BUF(2));
}

static void bwd_weight_cuda(void *buffers[], void *cl_arg)
{
	bwd_weight_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), BUF(2), NULL);
}

static void bwd_weight_bias_cuda(void *buffers[], void *cl_arg)
{
	bwd_weight_run(cl_arg, STARNN_FP32, 1, starnn_cuda_stream(), BUF(0), BUF(1), BUF(2), BUF(3).ptr);
}
#define CONV_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CONV_CUDA_FIELDS(fn)
#endif

/* OpenCL: the kernels of codelets/opencl/conv2d.cl on NCHW data (the
 * codelets' can_execute keeps blocked data on CPUs), dt the activations'
 * dtype; the _bias codelets' bias gradient (buffer 3) after the weight
 * gradient. */
#ifdef STARNN_USE_OPENCL
#define CLBUF(i) starnn_cl_buffer(buffers, i)

static void fwd_opencl_run(void *buffers[], const struct conv_args *a, starnn_dtype dt)
{
	struct starnn_conv2d_geom g = geom_of(a);
	struct starnn_clmat x = CLBUF(0), w = CLBUF(1), b = CLBUF(2), y = CLBUF(3);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(conv2d);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "conv2d_fwd",
		                       starnn_conv2d_fwd_opencl(ctx, &g, dt, x.mem, x.off, x.ld, w.mem, w.off, w.ld, b.mem,
		                                                b.off + a->o0, y.mem, y.off, y.ld));
}

static void bwd_data_opencl_run(void *buffers[], const struct conv_args *a, starnn_dtype dt)
{
	struct starnn_conv2d_geom g = geom_of(a);
	struct starnn_clmat dy = CLBUF(0), w = CLBUF(1), dx = CLBUF(2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(conv2d);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "conv2d_bwd_data",
		                       starnn_conv2d_bwd_data_opencl(ctx, &g, dt, dy.mem, dy.off, dy.ld, w.mem, w.off, w.ld,
		                                                     a->beta, dx.mem, dx.off, dx.ld));
}

static void bwd_weight_opencl_run(void *buffers[], const struct conv_args *a, starnn_dtype dt, int bias)
{
	struct starnn_conv2d_geom g = geom_of(a);
	struct starnn_clmat x = CLBUF(0), dy = CLBUF(1), dw = CLBUF(2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(conv2d);
	if (!ctx)
		return;
	cl_int err = starnn_conv2d_bwd_weight_opencl(ctx, &g, dt, x.mem, x.off, x.ld, dy.mem, dy.off, dy.ld, a->beta,
	                                             dw.mem, dw.off, dw.ld);
	if (err == CL_SUCCESS && bias) {
		struct starnn_clmat db = CLBUF(3);
		err = starnn_conv2d_bwd_bias_opencl(ctx, g.n, g.o, g.h * g.w, dt, dy.mem, dy.off, dy.ld, a->beta, db.mem,
		                                    db.off);
	}
	STARNN_OPENCL_LAUNCHED(ctx, bias ? "conv2d_bwd_weight_bias" : "conv2d_bwd_weight", err);
}

static void fwd_opencl(void *buffers[], void *cl_arg)
{
	fwd_opencl_run(buffers, cl_arg, STARNN_FP32);
}

static void bwd_data_opencl(void *buffers[], void *cl_arg)
{
	bwd_data_opencl_run(buffers, cl_arg, STARNN_FP32);
}

static void bwd_weight_opencl(void *buffers[], void *cl_arg)
{
	bwd_weight_opencl_run(buffers, cl_arg, STARNN_FP32, 0);
}

static void bwd_weight_bias_opencl(void *buffers[], void *cl_arg)
{
	bwd_weight_opencl_run(buffers, cl_arg, STARNN_FP32, 1);
}
#endif

static STARNN_PERFMODEL_FP(conv2d_fwd, fp32, conv_footprint);
static struct starpu_codelet starnn_conv2d_fwd_cl = {
	.name = "conv2d_fwd",
	.cpu_funcs = {fwd_cpu},
	.cpu_funcs_name = {"fwd_cpu"},
	CONV_CUDA_FIELDS(fwd_cuda)
	STARNN_OPENCL_FUNCS(fwd_opencl)
	CONV_CAN_EXECUTE
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(conv2d_fwd, fp32),
};

static STARNN_PERFMODEL_FP(conv2d_bwd_data, fp32, conv_footprint);
static struct starpu_codelet starnn_conv2d_bwd_data_cl = {
	.name = "conv2d_bwd_data",
	.cpu_funcs = {bwd_data_cpu},
	.cpu_funcs_name = {"bwd_data_cpu"},
	CONV_CUDA_FIELDS(bwd_data_cuda)
	STARNN_OPENCL_FUNCS(bwd_data_opencl)
	CONV_CAN_EXECUTE
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	STARNN_MODELS(conv2d_bwd_data, fp32),
};

static STARNN_PERFMODEL_FP(conv2d_bwd_weight, fp32, conv_footprint);
static struct starpu_codelet starnn_conv2d_bwd_weight_cl = {
	.name = "conv2d_bwd_weight",
	.cpu_funcs = {bwd_weight_cpu},
	.cpu_funcs_name = {"bwd_weight_cpu"},
	CONV_CUDA_FIELDS(bwd_weight_cuda)
	STARNN_OPENCL_FUNCS(bwd_weight_opencl)
	CONV_CAN_EXECUTE
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	STARNN_MODELS(conv2d_bwd_weight, fp32),
};

static STARNN_PERFMODEL_FP(conv2d_bwd_weight_bias, fp32, conv_footprint);
static struct starpu_codelet starnn_conv2d_bwd_weight_bias_cl = {
	.name = "conv2d_bwd_weight_bias",
	.cpu_funcs = {bwd_weight_bias_cpu},
	.cpu_funcs_name = {"bwd_weight_bias_cpu"},
	CONV_CUDA_FIELDS(bwd_weight_bias_cuda)
	STARNN_OPENCL_FUNCS(bwd_weight_bias_opencl)
	CONV_CAN_EXECUTE
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
	STARNN_MODELS(conv2d_bwd_weight_bias, fp32),
};

/* ------------------------------------------------------ mixed precision
 * fp16 / bf16 activations: x, y, dy, dx and the weight copy w in the 16-bit
 * type; b, dw, db fp32. On a CPU with oneDNN, bf16 runs natively (oneDNN's
 * bf16 primitives: AVX512-BF16 / AMX, fp32 accumulation); on a CUDA worker
 * with STARNN_CUDA_HALF_CONV=native, 16-bit cuDNN (cuda_native). Otherwise the
 * 16-bit buffers are widened to fp32 (exact) and the fp32 kernels of the
 * worker run on them, accumulating in fp32; 16-bit outputs are rounded once
 * at the end (codelets/halfwrap.h). */

/* A task of the oneDNN backend on a CPU, running native bf16 kernels (no
 * widening). */
static int dnnl_native(const struct conv_args *a, starnn_dtype dt, int cuda)
{
	struct starnn_conv2d_geom g = geom_of(a);
	return !cuda && a->backend == STARNN_CONV2D_DNNL && starnn_conv2d_native_cpu(dt) &&
	       !starnn_conv2d_widened_cpu(&g, dt, &a->routes);
}

/* A CUDA worker in native mode (starnn_cuda_half_conv, taken at submission):
 * forward and backward data on 16-bit cuDNN tensors, backward weight with
 * tensor-op math on the widened inputs (codelets/kernels/conv2d.h). A kernel that
 * returns STARNN_CONV2D_UNSUPPORTED has written nothing: the task goes on
 * along the widening route, so results are always produced. */
#ifdef CONV_CUDA
static int cuda_native(const struct conv_args *a, int cuda)
{
	return cuda && a->cuda_half == STARNN_CUDA_HALF_NATIVE;
}
#endif

static void fwd_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct conv_args *a = cl_arg;
	struct starnn_mat x = BUF(0), w = BUF(1), y = BUF(3);
	const float *b = BUF(2).ptr;
	if (dnnl_native(a, dt, cuda)) {
		fwd_run(a, dt, 0, NULL, x, w, NULL, b, y);
		return;
	}
#ifdef CONV_CUDA
	if (cuda_native(a, cuda)) {
		struct starnn_conv2d_geom g = geom_of(a);
		int rc = starnn_conv2d_fwd_cuda_half(&g, dt, x.ptr, x.ld, w.ptr, w.ld, b + a->o0, y.ptr, y.ld,
		                                     starnn_cudnn_handle(), starnn_cuda_stream());
		if (rc != STARNN_CONV2D_UNSUPPORTED) {
			done(rc);
			return;
		}
	}
#endif
	struct starnn_hw h;
	starnn_hw_begin(&h, "conv2d_fwd_half", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), ww = starnn_hw_in(&h, dt, w, 1), yw = starnn_hw_in(&h, dt, y, 0);
	if (!h.failed) {
		fwd_run(a, STARNN_FP32, cuda, h.stream, xw, ww, NULL, b, yw);
		starnn_hw_out(&h, dt, yw, y);
	}
	starnn_hw_end(&h);
}

static void bwd_data_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct conv_args *a = cl_arg;
	struct starnn_mat dy = BUF(0), w = BUF(1), dx = BUF(2);
	if (dnnl_native(a, dt, cuda)) {
		bwd_data_run(a, dt, 0, NULL, dy, w, NULL, dx);
		return;
	}
#ifdef CONV_CUDA
	if (cuda_native(a, cuda)) {
		struct starnn_conv2d_geom g = geom_of(a);
		int rc = starnn_conv2d_bwd_data_cuda_half(&g, dt, dy.ptr, dy.ld, w.ptr, w.ld, a->beta, dx.ptr, dx.ld,
		                                          starnn_cudnn_handle(), starnn_cuda_stream());
		if (rc != STARNN_CONV2D_UNSUPPORTED) {
			done(rc);
			return;
		}
	}
#endif
	struct starnn_hw h;
	starnn_hw_begin(&h, "conv2d_bwd_data_half", cuda);
	struct starnn_mat dyw = starnn_hw_in(&h, dt, dy, 1), ww = starnn_hw_in(&h, dt, w, 1),
	                  dxw = starnn_hw_in(&h, dt, dx, a->beta != 0.0f);
	if (!h.failed) {
		bwd_data_run(a, STARNN_FP32, cuda, h.stream, dyw, ww, NULL, dxw);
		starnn_hw_out(&h, dt, dxw, dx);
	}
	starnn_hw_end(&h);
}

/* db: NULL, or the bias gradient (the _bias codelets' fourth buffer). */
static void weight_half(void *buffers[], const struct conv_args *a, starnn_dtype dt, int cuda, float *db)
{
	struct starnn_mat x = BUF(0), dy = BUF(1), dw = BUF(2);
	if (dnnl_native(a, dt, cuda)) {
		bwd_weight_run(a, dt, 0, NULL, x, dy, dw, db);
		return;
	}
	struct starnn_hw h;
	starnn_hw_begin(&h, "conv2d_bwd_weight_half", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), dyw = starnn_hw_in(&h, dt, dy, 1);
	/* No native route: cuDNN has no 16-bit x, dy -> fp32 dw configuration
	 * (and a 16-bit dw would lose the fp32 sums of the master gradients). */
	int rc = STARNN_CONV2D_UNSUPPORTED;
#ifdef CONV_CUDA
	if (!h.failed && cuda_native(a, cuda)) {
		struct starnn_conv2d_geom g = geom_of(a);
		rc = starnn_conv2d_bwd_weight_cuda_tf32(&g, xw.ptr, xw.ld, dyw.ptr, dyw.ld, a->beta, dw.ptr, dw.ld,
		                                        starnn_cudnn_handle(), h.stream);
		if (rc == 0 && db)
			rc = starnn_conv2d_bwd_bias_cuda(a->n, a->o, a->h, a->w, dyw.ptr, dyw.ld, a->beta, db,
			                                 starnn_cudnn_handle(), h.stream);
		if (rc != STARNN_CONV2D_UNSUPPORTED)
			done(rc);
	}
#endif
	if (!h.failed && rc == STARNN_CONV2D_UNSUPPORTED)
		bwd_weight_run(a, STARNN_FP32, cuda, h.stream, xw, dyw, dw, db);
	starnn_hw_end(&h);
}

static void bwd_weight_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	weight_half(buffers, cl_arg, dt, cuda, NULL);
}

static void bwd_weight_bias_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	weight_half(buffers, cl_arg, dt, cuda, BUF(3).ptr);
}

#ifdef CONV_CUDA
#define CONV_HALF_CUDA(fn, dt, DT)                                                                          \
	static void fn##_##dt##_cuda(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 1); }
#define CONV_HALF_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CONV_HALF_CUDA(fn, dt, DT)
#define CONV_HALF_CUDA_FIELDS(fn)
#endif

#ifdef STARNN_USE_OPENCL
static void fwd_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	fwd_opencl_run(buffers, cl_arg, dt);
}

static void bwd_data_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	bwd_data_opencl_run(buffers, cl_arg, dt);
}

static void bwd_weight_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	bwd_weight_opencl_run(buffers, cl_arg, dt, 0);
}

static void bwd_weight_bias_half_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	bwd_weight_opencl_run(buffers, cl_arg, dt, 1);
}
#define CONV_HALF_OPENCL(fn, dt, DT)                                                                        \
	static void fn##_##dt##_opencl(void *buffers[], void *cl_arg) { fn##_half_opencl(buffers, cl_arg, DT); }
#else
#define CONV_HALF_OPENCL(fn, dt, DT)
#endif

/* One codelet NAME_DT (perfmodel starnn_conv2d_NAME_DT) running fn##_half. */
#define CONV_HALF_CL(fn, pass, dt, DT, nb, ...)                                                             \
	static void fn##_##dt##_cpu(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 0); }   \
	CONV_HALF_CUDA(fn, dt, DT)                                                                          \
	CONV_HALF_OPENCL(fn, dt, DT)                                                                        \
	static STARNN_PERFMODEL_FP(conv2d_##pass, dt, conv_half_footprint);                                 \
	static struct starpu_codelet fn##_##dt##_cl = {                                                     \
		.name = "conv2d_" #pass "_" #dt,                                                            \
		.cpu_funcs = {fn##_##dt##_cpu},                                                             \
		.cpu_funcs_name = {#fn "_" #dt "_cpu"},                                                     \
		CONV_HALF_CUDA_FIELDS(fn##_##dt##_cuda)                                                     \
		STARNN_OPENCL_FUNCS(fn##_##dt##_opencl)                                                     \
		CONV_CAN_EXECUTE                                                                            \
		.nbuffers = nb,                                                                             \
		.modes = {__VA_ARGS__},                                                                     \
		STARNN_MODELS(conv2d_##pass, dt),                                                           \
	};

CONV_HALF_CL(fwd, fwd, fp16, STARNN_FP16, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
CONV_HALF_CL(fwd, fwd, bf16, STARNN_BF16, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
CONV_HALF_CL(bwd_data, bwd_data, fp16, STARNN_FP16, 3, STARPU_R, STARPU_R, STARPU_RW)
CONV_HALF_CL(bwd_data, bwd_data, bf16, STARNN_BF16, 3, STARPU_R, STARPU_R, STARPU_RW)
CONV_HALF_CL(bwd_weight, bwd_weight, fp16, STARNN_FP16, 3, STARPU_R, STARPU_R, STARPU_RW)
CONV_HALF_CL(bwd_weight, bwd_weight, bf16, STARNN_BF16, 3, STARPU_R, STARPU_R, STARPU_RW)
CONV_HALF_CL(bwd_weight_bias, bwd_weight_bias, fp16, STARNN_FP16, 4, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW)
CONV_HALF_CL(bwd_weight_bias, bwd_weight_bias, bf16, STARNN_BF16, 4, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW)

/* The codelets of each pass by the activations' dtype. */
static struct starpu_codelet *const fwd_cls[STARNN_NDTYPES] = {&starnn_conv2d_fwd_cl, &fwd_fp16_cl, &fwd_bf16_cl};
static struct starpu_codelet *const bwd_data_cls[STARNN_NDTYPES] = {&starnn_conv2d_bwd_data_cl, &bwd_data_fp16_cl,
                                                                    &bwd_data_bf16_cl};
static struct starpu_codelet *const bwd_weight_cls[STARNN_NDTYPES] = {&starnn_conv2d_bwd_weight_cl,
                                                                      &bwd_weight_fp16_cl, &bwd_weight_bf16_cl};
static struct starpu_codelet *const bwd_weight_bias_cls[STARNN_NDTYPES] = {
	&starnn_conv2d_bwd_weight_bias_cl, &bwd_weight_bias_fp16_cl, &bwd_weight_bias_bf16_cl};

/* The passes that read a copy of the weights (buffer 2) made for them:
 * forward (x, w, copy, b, y) and backward data (dy, w, copy, dx), the copy
 * a packed one (conv2d_pack_weight) or, sliced, a whole blocked copy of
 * which a row part of w reads its rows from a->o0 (conv2d_pack_blocked).
 * fp32 and native bf16 hand the copy to the kernel, which reorders w
 * itself where the copy's layout is not its primitive's. 16-bit passes
 * that are widened (starnn_conv2d_widened_cpu) widen the activations as
 * fwd_half and bwd_data_half do, and w only where the fp32 primitive does
 * not read the copy as it is: a copy kept current holds the widened
 * weights already. */
static void copy_pass_cpu(void *buffers[], const struct conv_args *a, starnn_dtype dt, enum starnn_conv2d_pass pass,
                          int sliced)
{
	static const char *const names[2][2] = {{"conv2d_bwd_data_packed", "conv2d_fwd_packed"},
	                                        {"conv2d_bwd_data_sliced", "conv2d_fwd_sliced"}};
	const int fwd = pass == STARNN_CONV2D_FWD;
	const float beta = fwd ? 0.0f : a->beta;
	struct starnn_conv2d_geom g = geom_of(a);
	struct starnn_mat in = BUF(0), w = BUF(1), out = BUF(fwd ? 4 : 3);
	const void *copy = BUF(2).ptr;
	const float *b = fwd ? BUF(3).ptr : NULL;
	const int widen = starnn_conv2d_widened_cpu(&g, dt, &a->routes);
	const starnn_dtype hdt = widen ? dt : STARNN_FP32; /* what starnn_hw_in widens (fp32: nothing) */
	const starnn_dtype rdt = widen ? STARNN_FP32 : dt; /* what the kernel runs on */
	struct starnn_hw h;
	starnn_hw_begin(&h, names[sliced][fwd], 0);
	struct starnn_mat inw = starnn_hw_in(&h, hdt, in, 1), outw = starnn_hw_in(&h, hdt, out, beta != 0.0f);
	int as_is = !widen;
	if (widen && !h.failed && a->backend == STARNN_CONV2D_DNNL)
		as_is = sliced ? starnn_conv2d_dnnl_sliced_ok(&g, &a->routes, inw.ld, w.ld, outw.ld, copy, a->o0)
		               : starnn_conv2d_dnnl_packed_ok(pass, &g, &a->routes, inw.ld, w.ld, outw.ld, beta, copy);
	struct starnn_mat ww = as_is ? w : starnn_hw_in(&h, hdt, w, 1);
	const void *pk = as_is ? copy : NULL;
	if (!h.failed) {
		if (sliced && a->backend == STARNN_CONV2D_DNNL)
			done(starnn_conv2d_fwd_dnnl_sliced(&g, rdt, &a->routes, inw.ptr, inw.ld, ww.ptr, ww.ld, pk, a->o0,
			                                   b + a->o0, outw.ptr, outw.ld));
		else if (fwd)
			fwd_run(a, rdt, 0, NULL, inw, ww, sliced ? NULL : pk, b, outw);
		else
			bwd_data_run(a, rdt, 0, NULL, inw, ww, pk, outw);
		starnn_hw_out(&h, hdt, outw, out);
	}
	starnn_hw_end(&h);
}

static void fwd_packed_cpu(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	copy_pass_cpu(buffers, cl_arg, dt, STARNN_CONV2D_FWD, 0);
}

static void bwd_data_packed_cpu(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	copy_pass_cpu(buffers, cl_arg, dt, STARNN_CONV2D_BWD_DATA, 0);
}

static void fwd_sliced_cpu(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	copy_pass_cpu(buffers, cl_arg, dt, STARNN_CONV2D_FWD, 1);
}

/* (the fp32 ones have no dtype in their names, as the other fp32
 * codelets) */
STARNN_CONV2D_CPU_CL(fwd_packed, "conv2d_fwd_packed", fwd_packed_cpu, fp32, STARNN_FP32, conv_footprint, 5, STARPU_R,
                     STARPU_R, STARPU_R, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(fwd_packed, "conv2d_fwd_packed_bf16", fwd_packed_cpu, bf16, STARNN_BF16, conv_half_footprint, 5,
                     STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(fwd_packed, "conv2d_fwd_packed_fp16", fwd_packed_cpu, fp16, STARNN_FP16, conv_half_footprint, 5,
                     STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(bwd_data_packed, "conv2d_bwd_data_packed", bwd_data_packed_cpu, fp32, STARNN_FP32,
                     conv_footprint, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_RW)
STARNN_CONV2D_CPU_CL(bwd_data_packed, "conv2d_bwd_data_packed_bf16", bwd_data_packed_cpu, bf16, STARNN_BF16,
                     conv_half_footprint, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_RW)
STARNN_CONV2D_CPU_CL(bwd_data_packed, "conv2d_bwd_data_packed_fp16", bwd_data_packed_cpu, fp16, STARNN_FP16,
                     conv_half_footprint, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_RW)
STARNN_CONV2D_CPU_CL(fwd_sliced, "conv2d_fwd_sliced", fwd_sliced_cpu, fp32, STARNN_FP32, conv_footprint, 5, STARPU_R,
                     STARPU_R, STARPU_R, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(fwd_sliced, "conv2d_fwd_sliced_fp16", fwd_sliced_cpu, fp16, STARNN_FP16, conv_half_footprint, 5,
                     STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)
STARNN_CONV2D_CPU_CL(fwd_sliced, "conv2d_fwd_sliced_bf16", fwd_sliced_cpu, bf16, STARNN_BF16, conv_half_footprint, 5,
                     STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W)

/* ------------------------------------------------------------ submission */

/* Checks x [N,C,H,W], w [O,C,k,k], y [N,O,H,W] (y is dy for the backward
 * passes, x is dx for backward data) and fills the geometry. */
static int check_shapes_dt(const char *op, const starnn_tensor *x, const starnn_tensor *w, const starnn_tensor *y,
                           struct starnn_conv2d_geom *g, const starnn_dtype *dts)
{
	char dx[128], dw[128], dy[128];
	const starnn_tensor *all[3] = {x, w, y};
	STARNN_CHECK(starnn_conv2d_settings_check());
	for (int i = 0; i < 3; i++) {
		if (!all[i])
			return starnn_error(STARNN_EINVAL, "%s: a tensor is NULL", op);
		if (all[i]->dtype != dts[i] || all[i]->ndim != 4)
			return starnn_error(STARNN_EINVAL, "%s: 4-D %s tensors expected, got %s", op,
			                    starnn_dtype_name(dts[i]), starnn_tensor_describe(all[i], dx, sizeof dx));
	}
	starnn_tensor_describe(x, dx, sizeof dx);
	starnn_tensor_describe(w, dw, sizeof dw);
	starnn_tensor_describe(y, dy, sizeof dy);
	int64_t k = w->shape[2];
	if (w->shape[3] != k || k % 2 == 0)
		return starnn_error(STARNN_EINVAL, "%s: the kernel must be square of odd size (3x3, 1x1 ...): %s", op, dw);
	if (w->shape[1] != x->shape[1])
		return starnn_error(STARNN_EINVAL, "%s: input channels differ: %s and %s", op, dx, dw);
	if (y->shape[0] != x->shape[0] || y->shape[1] != w->shape[0] || y->shape[2] != x->shape[2] ||
	    y->shape[3] != x->shape[3])
		return starnn_error(STARNN_EINVAL, "%s: output %s does not match input %s and weights %s (stride 1, 'same')",
		                    op, dy, dx, dw);
	/* OpenBLAS takes int dimensions. */
	if (x->cols > INT32_MAX || y->cols > INT32_MAX || w->cols * (size_t)x->shape[2] * (size_t)x->shape[3] > INT32_MAX)
		return starnn_error(STARNN_EINVAL, "%s: too large for int BLAS dimensions: %s, %s", op, dx, dw);
	g->n = (size_t)x->shape[0];
	g->c = (size_t)x->shape[1];
	g->o = (size_t)w->shape[0];
	g->h = (size_t)x->shape[2];
	g->w = (size_t)x->shape[3];
	g->k = (size_t)k;
	g->xb = (size_t)x->cblock;
	g->yb = (size_t)y->cblock;
	if ((g->xb > 1 || g->yb > 1) && starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL, "%s: blocked layouts (%s, %s) need the oneDNN CPU backend", op, dx, dy);
	return 0;
}

/* The task arguments; the settings (CPU kernels, routes, CUDA 16-bit mode)
 * are taken now, at submission. */
static struct conv_args args_of(const struct starnn_conv2d_geom *g, float beta, starnn_dtype dt)
{
	struct starnn_conv2d_routes r;
	starnn_conv2d_routes_in_force(&r);
	struct conv_args a = {(uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->o, (uint32_t)g->h, (uint32_t)g->w,
	                      (uint32_t)g->k, (uint32_t)starnn_conv2d_cpu_backend(), (uint32_t)g->xb, (uint32_t)g->yb,
	                      dt == STARNN_FP32 ? 0u : (uint32_t)starnn_cuda_half_conv(), 0, beta, 0, 0, 0, r};
	return a;
}

/* Flops of one task (StarPU shows GFlop/s from them): the product's
 * 2 N C O k^2 H W, plus the bias for the forward. From the footprint's keys. */
static double task_flops(const struct conv_args *a, enum starnn_conv2d_pass pass)
{
	struct starnn_conv2d_geom g = geom_of(a);
	double f = starnn_conv2d_flops(&g, pass);
	if (pass == STARNN_CONV2D_FWD)
		f += (double)a->n * (double)a->o * (double)a->h * (double)a->w;
	return f;
}

/* How many tasks: one per worker when each gets enough work, at most
 * max_parts (0: no limit). */
static int task_count(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, int max_parts)
{
	double parts = starnn_conv2d_flops(g, pass) / MIN_TASK_FLOPS;
	int nw = starnn_split_width();
	if (max_parts > 0 && nw > max_parts)
		nw = max_parts;
	if (parts < 1)
		return 1;
	return parts < nw ? (int)parts : nw;
}

/* Splits along the batch when every task gets as many samples (or enough
 * of them that the remainder hardly matters). */
static int batch_split(size_t n, int parts)
{
	return parts > 1 && n >= (size_t)parts && (n % (size_t)parts == 0 || n >= 4 * (size_t)parts);
}

static struct starpu_codelet *const fwd_packed_cls[STARNN_NDTYPES] = {&fwd_packed_fp32_cl, &fwd_packed_fp16_cl,
                                                                       &fwd_packed_bf16_cl};
static struct starpu_codelet *const bwd_data_packed_cls[STARNN_NDTYPES] = {&bwd_data_packed_fp32_cl,
                                                                           &bwd_data_packed_fp16_cl,
                                                                           &bwd_data_packed_bf16_cl};

/* One forward task on x, w, b, y (geometry a); whole_w: w is the whole
 * weight tensor (not a channel part), whose packed copy it may read. */
static int submit_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y, const struct conv_args *a,
                      starnn_dtype dt, int whole_w)
{
	int rc = 0;
	struct starnn_conv2d_geom g = geom_of(a);
	starnn_tensor *wp =
		whole_w ? starnn_conv2d_packed_copy(w, STARNN_CONV2D_FWD, &g, dt, &a->routes, x->ld, y->ld, 0.0f, &rc)
		        : NULL;
	STARNN_CHECK(rc);
	starnn_tensor *ws = whole_w ? NULL : starnn_conv2d_sliced_copy(w, &g, dt, &a->routes, x->ld, y->ld, &rc);
	STARNN_CHECK(rc);
	static struct starpu_codelet *const sliced_cls[STARNN_NDTYPES] = {&fwd_sliced_fp32_cl, &fwd_sliced_fp16_cl,
	                                                                   &fwd_sliced_bf16_cl};
	struct starnn_task_desc d = {.cl = wp ? fwd_packed_cls[dt] : ws ? sliced_cls[dt] : fwd_cls[dt], .args = a,
	                             .args_size = sizeof *a, .flops = task_flops(a, STARNN_CONV2D_FWD),
	                             .tensors = {x, w, b, y}};
	if (wp || ws)
		d.tensors[2] = wp ? wp : ws, d.tensors[3] = b, d.tensors[4] = y;
	return starnn_submit(&d);
}

/* One backward-data task: dx = beta dx + conv_transpose(dy, w). */
static int submit_bwd_data(starnn_tensor *dy, starnn_tensor *w, starnn_tensor *dx, const struct conv_args *a,
                           starnn_dtype dt, int whole_w)
{
	int rc = 0;
	struct starnn_conv2d_geom g = geom_of(a);
	starnn_tensor *wp =
		whole_w ? starnn_conv2d_packed_copy(w, STARNN_CONV2D_BWD_DATA, &g, dt, &a->routes, dy->ld, dx->ld, a->beta,
		                                    &rc)
		        : NULL;
	STARNN_CHECK(rc);
	struct starnn_task_desc d = {.cl = wp ? bwd_data_packed_cls[dt] : bwd_data_cls[dt], .args = a,
	                             .args_size = sizeof *a, .flops = task_flops(a, STARNN_CONV2D_BWD_DATA),
	                             .tensors = {dy, w, dx}};
	if (wp)
		d.tensors[2] = wp, d.tensors[3] = dx;
	return starnn_submit(&d);
}

static int conv2d_fwd_dt(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y, starnn_dtype dt)
{
	struct starnn_conv2d_geom g;
	const starnn_dtype dts[3] = {dt, dt, dt};
	STARNN_CHECK(check_shapes_dt("conv2d_fwd", x, w, y, &g, dts));
	char db[128];
	if (!b || b->dtype != STARNN_FP32 || b->ndim != 1 || b->shape[0] != (int64_t)g.o)
		return starnn_error(STARNN_EINVAL, "conv2d_fwd: bias must be fp32 [%zu], got %s", g.o,
		                    b ? starnn_tensor_describe(b, db, sizeof db) : "NULL");
	int parts = task_count(&g, STARNN_CONV2D_FWD, 0);
	struct conv_args a = args_of(&g, 0.0f, dt);
	if (parts == 1)
		return submit_fwd(x, w, b, y, &a, dt, 1);
	int64_t sizes[parts];
	starnn_tensor **xp, **yp, **wp;
	if (batch_split(g.n, parts)) {
		starnn_part_sizes((int64_t)g.n, parts, 1, sizes);
		STARNN_CHECK(starnn_tensor_split(x, 0, parts, sizes, &xp));
		STARNN_CHECK(starnn_tensor_split(y, 0, parts, sizes, &yp));
		for (int i = 0; i < parts; i++) {
			a.n = (uint32_t)sizes[i];
			STARNN_CHECK(submit_fwd(xp[i], w, b, yp[i], &a, dt, 1));
		}
		return 0;
	}
	parts = starnn_part_sizes((int64_t)g.o, parts, (int64_t)g.yb, sizes);
	if (parts == 1)
		return submit_fwd(x, w, b, y, &a, dt, 1);
	STARNN_CHECK(starnn_tensor_split(y, 1, parts, sizes, &yp));
	STARNN_CHECK(starnn_tensor_split(w, 0, parts, sizes, &wp));
	for (int i = 0; i < parts; i++) {
		a.o = (uint32_t)sizes[i];
		STARNN_CHECK(submit_fwd(x, wp[i], b, yp[i], &a, dt, 0));
		a.o0 += (uint32_t)sizes[i];
	}
	return 0;
}

/* The data gradient's checks (dx, w, dy), g filled. */
static int bwd_data_check(starnn_tensor *dx, starnn_tensor *w, starnn_tensor *dy, starnn_dtype dt,
                          struct starnn_conv2d_geom *g)
{
	const starnn_dtype dts[3] = {dt, dt, dt};
	return check_shapes_dt("conv2d_bwd_data", dx, w, dy, g, dts);
}

static int conv2d_bwd_data_dt(starnn_tensor *dy, starnn_tensor *w, float beta, starnn_tensor *dx, starnn_dtype dt,
                              int max_parts)
{
	struct starnn_conv2d_geom g;
	STARNN_CHECK(bwd_data_check(dx, w, dy, dt, &g));
	int parts = task_count(&g, STARNN_CONV2D_BWD_DATA, max_parts);
	struct conv_args a = args_of(&g, beta, dt);
	if (parts == 1)
		return submit_bwd_data(dy, w, dx, &a, dt, 1);
	int64_t sizes[parts];
	starnn_tensor **dyp, **dxp, **wp;
	if (batch_split(g.n, parts)) {
		starnn_part_sizes((int64_t)g.n, parts, 1, sizes);
		STARNN_CHECK(starnn_tensor_split(dy, 0, parts, sizes, &dyp));
		STARNN_CHECK(starnn_tensor_split(dx, 0, parts, sizes, &dxp));
		for (int i = 0; i < parts; i++) {
			a.n = (uint32_t)sizes[i];
			STARNN_CHECK(submit_bwd_data(dyp[i], w, dxp[i], &a, dt, 1));
		}
		return 0;
	}
	/* Input channels: dx[:, c-block] needs w[:, c-block] (axis 1 of w). */
	parts = starnn_part_sizes((int64_t)g.c, parts, (int64_t)g.xb, sizes);
	if (parts == 1)
		return submit_bwd_data(dy, w, dx, &a, dt, 1);
	STARNN_CHECK(starnn_tensor_split(dx, 1, parts, sizes, &dxp));
	STARNN_CHECK(starnn_tensor_split(w, 1, parts, sizes, &wp));
	for (int i = 0; i < parts; i++) {
		a.c = (uint32_t)sizes[i];
		STARNN_CHECK(submit_bwd_data(dy, wp[i], dxp[i], &a, dt, 0));
	}
	return 0;
}

/* The weight gradient's checks (x, dy, dw and db, which may be NULL), g
 * filled. */
static int bwd_weight_check(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dw, starnn_tensor *db,
                            starnn_dtype dt, struct starnn_conv2d_geom *g)
{
	const starnn_dtype dts[3] = {dt, STARNN_FP32, dt};
	STARNN_CHECK(check_shapes_dt("conv2d_bwd_weight", x, dw, dy, g, dts));
	char d1[128];
	if (db && (db->dtype != STARNN_FP32 || db->ndim != 1 || db->shape[0] != (int64_t)g->o))
		return starnn_error(STARNN_EINVAL, "conv2d_bwd_weight: bias gradient must be fp32 [%zu], got %s", g->o,
		                    starnn_tensor_describe(db, d1, sizeof d1));
	return 0;
}

static int conv2d_bwd_weight_dt(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db,
                                starnn_dtype dt, int max_parts)
{
	struct starnn_conv2d_geom g;
	STARNN_CHECK(bwd_weight_check(x, dy, dw, db, dt, &g));
	struct conv_args a = args_of(&g, beta, dt);
	/* Input channels: dw[:, c-block] needs x[:, c-block] and all of dy;
	 * the parts of dw are disjoint, so no reduction is needed. The first
	 * part also sums dy into the bias gradient. */
	int parts = task_count(&g, STARNN_CONV2D_BWD_WEIGHT, max_parts);
	int64_t sizes[parts];
	parts = starnn_part_sizes((int64_t)g.c, parts, (int64_t)g.xb, sizes);
	/* A gradient that one task writes in oneDNN's own layout is not split:
	 * its column parts are not views of that layout, so each part's
	 * primitive would reorder its output into OIHW (the first layer, with
	 * no data gradient to share the workers with; measured no slower, at
	 * 128x128 and 384x384, than its two parts) */
	if (parts > 1 && starnn_conv2d_dw_blocked_whole(dw, &g, dt, &a.routes))
		parts = 1;
	struct starnn_blocked_weights L;
	STARNN_CHECK(starnn_conv2d_dw_layout(dw, &g, dt, &a.routes, parts, &L));
	a.dwb = L.ob, a.dwi = L.i_inner, a.dwib = L.ib;
	starnn_tensor **xp = NULL, **dwp = NULL;
	if (parts > 1) {
		STARNN_CHECK(starnn_tensor_split(x, 1, parts, sizes, &xp));
		STARNN_CHECK(starnn_tensor_split(dw, 1, parts, sizes, &dwp));
	}
	for (int i = 0; i < parts; i++) {
		a.c = (uint32_t)(parts > 1 ? sizes[i] : (int64_t)g.c);
		int bias = db && i == 0;
		/* the bias's sum over dy: one more element per dy element */
		double flops = task_flops(&a, STARNN_CONV2D_BWD_WEIGHT) +
		               (bias ? (double)g.n * (double)g.o * (double)g.h * (double)g.w : 0.0);
		struct starnn_task_desc d = {.cl = bias ? bwd_weight_bias_cls[dt] : bwd_weight_cls[dt], .args = &a,
		                             .args_size = sizeof a, .flops = flops,
		                             .tensors = {xp ? xp[i] : x, dy, dwp ? dwp[i] : dw, bias ? db : NULL}};
		STARNN_CHECK(starnn_submit(&d));
	}
	return 0;
}

int starnn_conv2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y)
{
	return conv2d_fwd_dt(x, w, b, y, STARNN_FP32);
}

int starnn_conv2d_bwd_data(starnn_tensor *dy, starnn_tensor *w, float beta, starnn_tensor *dx)
{
	return conv2d_bwd_data_dt(dy, w, beta, dx, STARNN_FP32, 0);
}

int starnn_conv2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db)
{
	return conv2d_bwd_weight_dt(x, dy, beta, dw, db, STARNN_FP32, 0);
}

/* The 16-bit dtype of an activation, or fp32 (then the fp32 checks apply). */
static starnn_dtype act_dtype(const starnn_tensor *t)
{
	return t && starnn_hw_is_half(t->dtype) ? t->dtype : STARNN_FP32;
}

int starnn_conv2d_fwd_mp(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y)
{
	return conv2d_fwd_dt(x, w, b, y, act_dtype(x));
}

int starnn_conv2d_bwd_data_mp(starnn_tensor *dy, starnn_tensor *w, float beta, starnn_tensor *dx)
{
	return conv2d_bwd_data_dt(dy, w, beta, dx, act_dtype(dy), 0);
}

int starnn_conv2d_bwd_weight_mp(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw,
                                starnn_tensor *db)
{
	return conv2d_bwd_weight_dt(x, dy, beta, dw, db, act_dtype(x), 0);
}

/* Both backward passes: they are independent (one reads w, the other x),
 * so together they are as many tasks as workers without splitting each as
 * far: at batch 1 the two passes run side by side instead of each being cut
 * into channel parts (parts that each reorder the whole dy for oneDNN). */
static int conv2d_bwd_dt(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                         float beta_w, starnn_tensor *dw, starnn_tensor *db, starnn_dtype dt)
{
	/* both passes' checks first: a refused call submits nothing */
	struct starnn_conv2d_geom g;
	if (dx)
		STARNN_CHECK(bwd_data_check(dx, w, dy, dt, &g));
	STARNN_CHECK(bwd_weight_check(x, dy, dw, db, dt, &g));
	int nw = starnn_split_width(), half = dx ? (nw + 1) / 2 : 0;
	if (dx)
		STARNN_CHECK(conv2d_bwd_data_dt(dy, w, beta_x, dx, dt, half));
	return conv2d_bwd_weight_dt(x, dy, beta_w, dw, db, dt, half);
}

int starnn_conv2d_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                      float beta_w, starnn_tensor *dw, starnn_tensor *db)
{
	return conv2d_bwd_dt(x, dy, w, beta_x, dx, beta_w, dw, db, STARNN_FP32);
}

int starnn_conv2d_bwd_mp(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                         float beta_w, starnn_tensor *dw, starnn_tensor *db)
{
	return conv2d_bwd_dt(x, dy, w, beta_x, dx, beta_w, dw, db, act_dtype(x));
}
