/* StarPU codelets of batch normalisation (CPU, CUDA, OpenCL) and the
 * whole-operation submit functions over the parts of a batch (see
 * codelets/batchnorm.h).
 *
 * Length (about 1,150 lines): the fp32 and 16-bit codelets with their CPU,
 * CUDA and OpenCL functions, and the submit functions that split a batch
 * into micro-batch tasks and reduce their statistics; one glue file per
 * operation (codelets/ops.list). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/batchnorm.h"
#include "codelets/halfwrap.h"
#include "codelets/kernels/batchnorm.h"
#include "runtime/core/codelet.h"

struct bn_args {
	double count;            /* values per channel over the whole batch */
	float eps, momentum;
	float beta;              /* output scaling (dx, dgamma / dbeta) */
	int accumulate;          /* reductions: add to the slot */
	int relu;                /* fused ReLU: a y buffer follows dy */
	int var_given;           /* bn_apply in evaluation mode */
	int update_running;
	int nslots;              /* workspace slots read */
	int cb;                  /* the data's channel block (runtime/core/tensor.h): 1 NCHW, 8 / 16 blocked */
	int cby;                 /* that of the output side, y and dy: cb or a multiple of it */
};

#if defined(STARNN_USE_CUDA) || defined(STARNN_USE_OPENCL)
/* Blocked data runs on CPUs only (the CUDA and OpenCL kernels take NCHW). */
static int bn_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	const struct bn_args *a = task->cl_arg;
	return starnn_worker_takes(workerid, a && (a->cb > 1 || a->cby > 1));
}
#define BN_CAN_EXECUTE .can_execute = bn_can_execute,
#else
#define BN_CAN_EXECUTE
#endif

/* The data codelets' footprint: their buffers' sizes and, for blocked
 * data, the layouts of the input and the output side (cb, cby): the same
 * sizes cost differently in nChw16c, NHWC or a concatenation's halves in
 * and one NHWC tensor out. NCHW keeps the footprint of the sizes alone. */
static uint32_t bn_footprint(struct starpu_task *task)
{
	uint32_t fp = starpu_task_data_footprint(task);
	const struct bn_args *a = task->cl_arg;
	if (a && task->cl_arg_size >= sizeof *a && (a->cb > 1 || a->cby > 1)) {
		const int32_t key[2] = {a->cb, a->cby};
		fp = starpu_hash_crc32c_be_n(key, sizeof key, fp);
	}
	return fp;
}

/* The workspace's rows as slots of doubles. */
#define SLOTS(m) ((double *)(m).ptr)
#define SLOT_LD(m) ((m).ld / 2)

/* Defines a codelet NAME of n buffers with the given modes and the models
 * of STEM (starnn_<op>_<dt>: time and energy), which variants of one step
 * share (e.g. W / RW on the output). */
#ifdef STARNN_USE_CUDA
#define BN_CUDA_FIELDS(fn) .cuda_funcs = {fn##_cuda}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define BN_CUDA_FIELDS(fn)
#endif
#define BN_CODELET(var, cname, fn, stem, n, ...)                                         \
	static struct starpu_codelet var = {                                             \
		.name = cname,                                                           \
		.cpu_funcs = {fn##_cpu},                                                 \
		.cpu_funcs_name = {#fn "_cpu"},                                          \
		BN_CUDA_FIELDS(fn)                                                       \
		STARNN_OPENCL_FUNCS(fn##_opencl)                                         \
		BN_CAN_EXECUTE                                                           \
		.nbuffers = n,                                                           \
		.modes = {__VA_ARGS__},                                                  \
		STARNN_MODELS_OF(stem),                                                  \
	}

/* One function per pass runs it on a CPU (cuda == 0) or on the worker's
 * CUDA stream, for every dtype of the data (x, y, dy, dx: fp32, fp16 or
 * bf16); every per-channel vector, the statistics and the workspace are fp32
 * (sums in double). CPU: the kernels read and write the data's dtype
 * directly (16-bit in chunks widened on the stack). CUDA: 16-bit buffers
 * are widened to fp32 inside the task and the fp32 kernels run on them
 * (codelets/halfwrap.h, which passes fp32 buffers through); 16-bit outputs
 * (y, dx) are rounded once. bn_finalize and bn_bwd_params see no data.
 *
 * buffers:
 *   bn_stats:      x [N, C*inner] (R), slot [1, 4C] (RW)
 *   bn_finalize:   work [S, 4C] (R), mean, invstd (W), running_mean, running_var (RW)
 *   bn_apply:      x (R), mean (R), invstd or var (R), gamma (R), beta (R), y (W)
 *   bn_bwd_reduce: x (R), dy (R), [y (R) with the fused ReLU], mean (R), slot (RW)
 *   bn_bwd_params: work (R), invstd (R), dgamma, dbeta (W when beta == 0, else RW)
 *   bn_bwd_apply:  x, dy, [y with the fused ReLU], mean, invstd, gamma, work (R),
 *                  dx (W when beta == 0, else RW) */

static void bn_stats_run(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct bn_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), s = starnn_buffer(buffers, 1);
	size_t c = s.cols / 4;
	if (!cuda) {
		if (a->cb > 1)
			starnn_bn_stats_blk_cpu(dt, (size_t)a->cb, x.rows, c, x.cols / c, x.ptr, x.ld, SLOTS(s), a->accumulate);
		else
			starnn_bn_stats_mp_cpu(dt, x.rows, c, x.cols / c, x.ptr, x.ld, SLOTS(s), a->accumulate);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "bn_stats", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1);
	if (!h.failed) {
		starnn_bn_stats_cuda(x.rows, c, x.cols / c, xw.ptr, xw.ld, SLOTS(s), a->accumulate, h.stream);
		STARNN_CUDA_LAUNCHED("bn_stats");
	}
	starnn_hw_end(&h);
#endif
}

static void bn_apply_run(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct bn_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), m = starnn_buffer(buffers, 1), st = starnn_buffer(buffers, 2),
	                  g = starnn_buffer(buffers, 3), b = starnn_buffer(buffers, 4), y = starnn_buffer(buffers, 5);
	size_t c = m.cols;
	if (!cuda) {
		if (a->cb > 1)
			starnn_bn_apply_blk_cpu(dt, (size_t)a->cb, (size_t)a->cby, x.rows, c, x.cols / c, x.ptr, x.ld,
			                        m.ptr, st.ptr, a->var_given, a->eps, g.ptr, b.ptr, a->relu, y.ptr, y.ld);
		else
			starnn_bn_apply_mp_cpu(dt, x.rows, c, x.cols / c, x.ptr, x.ld, m.ptr, st.ptr, a->var_given, a->eps,
			                       g.ptr, b.ptr, a->relu, y.ptr, y.ld);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "bn_apply", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), yw = starnn_hw_in(&h, dt, y, 0);
	if (!h.failed) {
		starnn_bn_apply_cuda(x.rows, c, x.cols / c, xw.ptr, xw.ld, m.ptr, st.ptr, a->var_given, a->eps, g.ptr,
		                     b.ptr, a->relu, yw.ptr, yw.ld, h.stream);
		STARNN_CUDA_LAUNCHED("bn_apply");
		starnn_hw_out(&h, dt, yw, y);
	}
	starnn_hw_end(&h);
#endif
}

static void bn_bwd_reduce_run(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct bn_args *a = cl_arg;
	int i = 0;
	struct starnn_mat x = starnn_buffer(buffers, i++), dy = starnn_buffer(buffers, i++);
	struct starnn_mat y = a->relu ? starnn_buffer(buffers, i++) : (struct starnn_mat){0};
	struct starnn_mat m = starnn_buffer(buffers, i++), s = starnn_buffer(buffers, i++);
	size_t c = m.cols;
	if (!cuda) {
		if (a->cb > 1)
			starnn_bn_bwd_reduce_blk_cpu(dt, (size_t)a->cb, (size_t)a->cby, x.rows, c, x.cols / c, x.ptr,
			                             x.ld, dy.ptr, dy.ld, y.ptr, y.ld, m.ptr, SLOTS(s), a->accumulate);
		else
			starnn_bn_bwd_reduce_mp_cpu(dt, x.rows, c, x.cols / c, x.ptr, x.ld, dy.ptr, dy.ld, y.ptr, y.ld, m.ptr,
			                            SLOTS(s), a->accumulate);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "bn_bwd_reduce", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), dyw = starnn_hw_in(&h, dt, dy, 1);
	struct starnn_mat yw = a->relu ? starnn_hw_in(&h, dt, y, 1) : y;
	if (!h.failed) {
		starnn_bn_bwd_reduce_cuda(x.rows, c, x.cols / c, xw.ptr, xw.ld, dyw.ptr, dyw.ld, yw.ptr, yw.ld, m.ptr,
		                          SLOTS(s), a->accumulate, h.stream);
		STARNN_CUDA_LAUNCHED("bn_bwd_reduce");
	}
	starnn_hw_end(&h);
#endif
}

static void bn_bwd_apply_run(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct bn_args *a = cl_arg;
	int i = 0;
	struct starnn_mat x = starnn_buffer(buffers, i++), dy = starnn_buffer(buffers, i++);
	struct starnn_mat y = a->relu ? starnn_buffer(buffers, i++) : (struct starnn_mat){0};
	struct starnn_mat m = starnn_buffer(buffers, i++), is = starnn_buffer(buffers, i++), g = starnn_buffer(buffers, i++);
	struct starnn_mat w = starnn_buffer(buffers, i++), dx = starnn_buffer(buffers, i++);
	size_t c = m.cols;
	if (!cuda) {
		if (a->cb > 1)
			starnn_bn_bwd_apply_blk_cpu(dt, (size_t)a->cb, (size_t)a->cby, x.rows, c, x.cols / c, x.ptr,
			                            x.ld, dy.ptr, dy.ld, y.ptr, y.ld, m.ptr, is.ptr, g.ptr,
			                            (size_t)a->nslots, SLOTS(w), SLOT_LD(w), a->count, a->beta, dx.ptr,
			                            dx.ld);
		else
			starnn_bn_bwd_apply_mp_cpu(dt, x.rows, c, x.cols / c, x.ptr, x.ld, dy.ptr, dy.ld, y.ptr, y.ld, m.ptr,
			                           is.ptr, g.ptr, (size_t)a->nslots, SLOTS(w), SLOT_LD(w), a->count, a->beta,
			                           dx.ptr, dx.ld);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "bn_bwd_apply", cuda);
	struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1), dyw = starnn_hw_in(&h, dt, dy, 1);
	struct starnn_mat yw = a->relu ? starnn_hw_in(&h, dt, y, 1) : y;
	struct starnn_mat dxw = starnn_hw_in(&h, dt, dx, a->beta != 0.0f);
	if (!h.failed) {
		starnn_bn_bwd_apply_cuda(x.rows, c, x.cols / c, xw.ptr, xw.ld, dyw.ptr, dyw.ld, yw.ptr, yw.ld, m.ptr,
		                         is.ptr, g.ptr, (size_t)a->nslots, SLOTS(w), SLOT_LD(w), a->count, a->beta,
		                         dxw.ptr, dxw.ld, h.stream);
		STARNN_CUDA_LAUNCHED("bn_bwd_apply");
		starnn_hw_out(&h, dt, dxw, dx);
	}
	starnn_hw_end(&h);
#endif
}

static void bn_finalize_run(void *buffers[], void *cl_arg, int cuda)
{
	const struct bn_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), m = starnn_buffer(buffers, 1), is = starnn_buffer(buffers, 2),
	                  rm = starnn_buffer(buffers, 3), rv = starnn_buffer(buffers, 4);
	if (!cuda) {
		starnn_bn_finalize_cpu(m.cols, (size_t)a->nslots, SLOTS(w), SLOT_LD(w), a->count, a->eps, a->momentum,
		                       a->update_running, m.ptr, is.ptr, rm.ptr, rv.ptr);
		return;
	}
#ifdef STARNN_USE_CUDA
	starnn_bn_finalize_cuda(m.cols, (size_t)a->nslots, SLOTS(w), SLOT_LD(w), a->count, a->eps, a->momentum,
	                        a->update_running, m.ptr, is.ptr, rm.ptr, rv.ptr, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("bn_finalize");
#endif
}
static void bn_bwd_params_run(void *buffers[], void *cl_arg, int cuda)
{
	const struct bn_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), is = starnn_buffer(buffers, 1), dg = starnn_buffer(buffers, 2),
	                  db = starnn_buffer(buffers, 3);
	if (!cuda) {
		starnn_bn_bwd_params_cpu(is.cols, (size_t)a->nslots, SLOTS(w), SLOT_LD(w), is.ptr, a->beta, dg.ptr,
		                         db.ptr);
		return;
	}
#ifdef STARNN_USE_CUDA
	starnn_bn_bwd_params_cuda(is.cols, (size_t)a->nslots, SLOTS(w), SLOT_LD(w), is.ptr, a->beta, dg.ptr, db.ptr,
	                          starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("bn_bwd_params");
#endif
}
#ifdef STARNN_USE_OPENCL
/* The OpenCL functions (codelets/opencl/batchnorm.cl): NCHW data of every
 * dtype, 16-bit widened and rounded inside the kernels (no scratch), the
 * CPU kernels' results bit for bit. Slots are fp32 rows of 4C floats read
 * as 2C doubles: offset and leading dimension halved. */
#define CL_SLOT_OFF(m) ((m).off / 2)
#define CL_SLOT_LD(m) ((m).ld / 2)

static void bn_stats_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct bn_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), s = starnn_cl_buffer(buffers, 1);
	size_t c = s.cols / 4;
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_stats", starnn_bn_stats_opencl(ctx, dt, x.rows, c, x.cols / c, x.mem, x.off,
		                                                               x.ld, s.mem, CL_SLOT_OFF(s), a->accumulate));
}

static void bn_apply_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct bn_args *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), m = starnn_cl_buffer(buffers, 1),
	                    st = starnn_cl_buffer(buffers, 2), g = starnn_cl_buffer(buffers, 3),
	                    b = starnn_cl_buffer(buffers, 4), y = starnn_cl_buffer(buffers, 5);
	size_t c = m.cols;
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_apply",
		                       starnn_bn_apply_opencl(ctx, dt, x.rows, c, x.cols / c, x.mem, x.off, x.ld, m.mem, m.off,
		                                              st.mem, st.off, a->var_given, a->eps, g.mem, g.off, b.mem,
		                                              b.off, a->relu, y.mem, y.off, y.ld));
}

static void bn_bwd_reduce_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct bn_args *a = cl_arg;
	int i = 0;
	struct starnn_clmat x = starnn_cl_buffer(buffers, i++), dy = starnn_cl_buffer(buffers, i++);
	struct starnn_clmat y = a->relu ? starnn_cl_buffer(buffers, i++) : (struct starnn_clmat){0};
	struct starnn_clmat m = starnn_cl_buffer(buffers, i++), s = starnn_cl_buffer(buffers, i++);
	size_t c = m.cols;
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_bwd_reduce",
		                       starnn_bn_bwd_reduce_opencl(ctx, dt, x.rows, c, x.cols / c, x.mem, x.off, x.ld, dy.mem,
		                                                   dy.off, dy.ld, y.mem, y.off, y.ld, m.mem, m.off, s.mem,
		                                                   CL_SLOT_OFF(s), a->accumulate));
}

static void bn_bwd_apply_opencl(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct bn_args *a = cl_arg;
	int i = 0;
	struct starnn_clmat x = starnn_cl_buffer(buffers, i++), dy = starnn_cl_buffer(buffers, i++);
	struct starnn_clmat y = a->relu ? starnn_cl_buffer(buffers, i++) : (struct starnn_clmat){0};
	struct starnn_clmat m = starnn_cl_buffer(buffers, i++), is = starnn_cl_buffer(buffers, i++),
	                    g = starnn_cl_buffer(buffers, i++);
	struct starnn_clmat w = starnn_cl_buffer(buffers, i++), dx = starnn_cl_buffer(buffers, i++);
	size_t c = m.cols;
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_bwd_apply",
		                       starnn_bn_bwd_apply_opencl(ctx, dt, x.rows, c, x.cols / c, x.mem, x.off, x.ld, dy.mem,
		                                                  dy.off, dy.ld, y.mem, y.off, y.ld, m.mem, m.off, is.mem,
		                                                  is.off, g.mem, g.off, (size_t)a->nslots, w.mem,
		                                                  CL_SLOT_OFF(w), CL_SLOT_LD(w), a->count, a->beta, dx.mem,
		                                                  dx.off, dx.ld));
}

static void bn_finalize_run_opencl(void *buffers[], void *cl_arg)
{
	const struct bn_args *a = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), m = starnn_cl_buffer(buffers, 1),
	                    is = starnn_cl_buffer(buffers, 2), rm = starnn_cl_buffer(buffers, 3),
	                    rv = starnn_cl_buffer(buffers, 4);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_finalize",
		                       starnn_bn_finalize_opencl(ctx, m.cols, (size_t)a->nslots, w.mem, CL_SLOT_OFF(w),
		                                                 CL_SLOT_LD(w), a->count, a->eps, a->momentum,
		                                                 a->update_running, m.mem, m.off, is.mem, is.off, rm.mem,
		                                                 rm.off, rv.mem, rv.off));
}

static void bn_bwd_params_run_opencl(void *buffers[], void *cl_arg)
{
	const struct bn_args *a = cl_arg;
	struct starnn_clmat w = starnn_cl_buffer(buffers, 0), is = starnn_cl_buffer(buffers, 1),
	                    dg = starnn_cl_buffer(buffers, 2), db = starnn_cl_buffer(buffers, 3);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_bwd_params",
		                       starnn_bn_bwd_params_opencl(ctx, is.cols, (size_t)a->nslots, w.mem, CL_SLOT_OFF(w),
		                                                   CL_SLOT_LD(w), is.mem, is.off, a->beta, dg.mem, dg.off,
		                                                   db.mem, db.off));
}

static void bn_slot_add_run_opencl(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	struct starnn_clmat sl = starnn_cl_buffer(buffers, 0), t = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "bn_slot_add", starnn_bn_slot_add_opencl(ctx, sl.cols / 2, sl.mem, CL_SLOT_OFF(sl),
		                                                                     t.mem, CL_SLOT_OFF(t)));
}

#define BN_DT_OPENCL(fn, dt, DT)                                                                            \
	static void fn##_##dt##_opencl(void *buffers[], void *cl_arg) { fn##_opencl(buffers, cl_arg, DT); }
#else
#define BN_DT_OPENCL(fn, dt, DT)
#endif

/* The worker entry points: fn_cpu / fn_cuda of a pass without data
 * (BN_FNS), fn_<dt>_cpu / fn_<dt>_cuda of a data pass in one dtype. */
#ifdef STARNN_USE_CUDA
#define BN_FNS(fn)                                                                                          \
	static void fn##_cpu(void *buffers[], void *cl_arg) { fn(buffers, cl_arg, 0); }                     \
	static void fn##_cuda(void *buffers[], void *cl_arg) { fn(buffers, cl_arg, 1); }
#define BN_DT_CUDA(fn, dt, DT)                                                                              \
	static void fn##_##dt##_cuda(void *buffers[], void *cl_arg) { fn##_run(buffers, cl_arg, DT, 1); }
#else
#define BN_FNS(fn) \
	static void fn##_cpu(void *buffers[], void *cl_arg) { fn(buffers, cl_arg, 0); }
#define BN_DT_CUDA(fn, dt, DT)
#endif
#define BN_DT_FNS(fn, dt, DT)                                                                               \
	static void fn##_##dt##_cpu(void *buffers[], void *cl_arg) { fn##_run(buffers, cl_arg, DT, 0); }    \
	BN_DT_CUDA(fn, dt, DT)                                                                              \
	BN_DT_OPENCL(fn, dt, DT)

/* bn_slot_add: buffers slot (R), total (RW), one row of 4C floats each */
static void bn_slot_add_run(void *buffers[], void *cl_arg, int cuda)
{
	(void)cl_arg;
	struct starnn_mat sl = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1);
	size_t n = sl.cols / 2; /* doubles */
	if (!cuda) {
		starnn_bn_slot_add_cpu(n, SLOTS(sl), SLOTS(t));
		return;
	}
#ifdef STARNN_USE_CUDA
	starnn_bn_slot_add_cuda(n, SLOTS(sl), SLOTS(t), starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("bn_slot_add");
#endif
}

BN_FNS(bn_finalize_run)
BN_FNS(bn_bwd_params_run)
BN_FNS(bn_slot_add_run)
static STARNN_PERFMODEL(bn_slot_add, fp32);
BN_CODELET(bn_slot_add_cl, "bn_slot_add", bn_slot_add_run, starnn_bn_slot_add_fp32, 2, STARPU_R, STARPU_RW);
static STARNN_PERFMODEL(bn_finalize, fp32);
static STARNN_PERFMODEL(bn_bwd_params, fp32);
BN_CODELET(bn_finalize_cl, "bn_finalize", bn_finalize_run, starnn_bn_finalize_fp32, 5, STARPU_R, STARPU_W,
           STARPU_W, STARPU_RW, STARPU_RW);
BN_CODELET(bn_bwd_params_cl, "bn_bwd_params", bn_bwd_params_run, starnn_bn_bwd_params_fp32, 4, STARPU_R,
           STARPU_R, STARPU_RW, STARPU_RW);
BN_CODELET(bn_bwd_params_w_cl, "bn_bwd_params", bn_bwd_params_run, starnn_bn_bwd_params_fp32, 4, STARPU_R,
           STARPU_R, STARPU_W, STARPU_W);

/* The data codelets of one dtype: variables bn_stats<V>_cl ..., names
 * "bn_stats<N>" ..., perfmodels starnn_bn_stats_<dt> ... (V, N empty for
 * fp32, _fp16 / "_fp16" otherwise). */
#define BN_DATA(dt, DT, V, N)                                                                               \
	BN_DT_FNS(bn_stats, dt, DT)                                                                         \
	BN_DT_FNS(bn_apply, dt, DT)                                                                         \
	BN_DT_FNS(bn_bwd_reduce, dt, DT)                                                                    \
	BN_DT_FNS(bn_bwd_apply, dt, DT)                                                                     \
	static STARNN_PERFMODEL_FP(bn_stats, dt, bn_footprint);                                             \
	static STARNN_PERFMODEL_FP(bn_apply, dt, bn_footprint);                                             \
	static STARNN_PERFMODEL_FP(bn_bwd_reduce, dt, bn_footprint);                                        \
	static STARNN_PERFMODEL_FP(bn_bwd_reduce_relu, dt, bn_footprint);                                   \
	static STARNN_PERFMODEL_FP(bn_bwd_apply, dt, bn_footprint);                                         \
	static STARNN_PERFMODEL_FP(bn_bwd_apply_relu, dt, bn_footprint);                                    \
	BN_CODELET(bn_stats##V##_cl, "bn_stats" N, bn_stats_##dt, starnn_bn_stats_##dt, 2, STARPU_R,         \
	           STARPU_RW);                                                                              \
	BN_CODELET(bn_apply##V##_cl, "bn_apply" N, bn_apply_##dt, starnn_bn_apply_##dt, 6, STARPU_R,         \
	           STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W);                                       \
	BN_CODELET(bn_bwd_reduce##V##_cl, "bn_bwd_reduce" N, bn_bwd_reduce_##dt,                            \
	           starnn_bn_bwd_reduce_##dt, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_RW);                  \
	BN_CODELET(bn_bwd_reduce_relu##V##_cl, "bn_bwd_reduce_relu" N, bn_bwd_reduce_##dt,                  \
	           starnn_bn_bwd_reduce_relu_##dt, 5, STARPU_R, STARPU_R, STARPU_R, STARPU_R,               \
	           STARPU_RW);                                                                              \
	BN_CODELET(bn_bwd_apply##V##_cl, "bn_bwd_apply" N, bn_bwd_apply_##dt,                               \
	           starnn_bn_bwd_apply_##dt, 7, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R,           \
	           STARPU_R, STARPU_RW);                                                                    \
	BN_CODELET(bn_bwd_apply_w##V##_cl, "bn_bwd_apply" N, bn_bwd_apply_##dt,                             \
	           starnn_bn_bwd_apply_##dt, 7, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R,           \
	           STARPU_R, STARPU_W);                                                                     \
	BN_CODELET(bn_bwd_apply_relu##V##_cl, "bn_bwd_apply_relu" N, bn_bwd_apply_##dt,                     \
	           starnn_bn_bwd_apply_relu_##dt, 8, STARPU_R, STARPU_R, STARPU_R, STARPU_R,                \
	           STARPU_R, STARPU_R, STARPU_R, STARPU_RW);                                                \
	BN_CODELET(bn_bwd_apply_relu_w##V##_cl, "bn_bwd_apply_relu" N, bn_bwd_apply_##dt,                   \
	           starnn_bn_bwd_apply_relu_##dt, 8, STARPU_R, STARPU_R, STARPU_R, STARPU_R,                \
	           STARPU_R, STARPU_R, STARPU_R, STARPU_W);

BN_DATA(fp32, STARNN_FP32, , "")
BN_DATA(fp16, STARNN_FP16, _fp16, "_fp16")
BN_DATA(bf16, STARNN_BF16, _bf16, "_bf16")

/* The codelets by the data's dtype (fp32, fp16, bf16). */
static struct starpu_codelet *const stats_cls[3] = {&bn_stats_cl, &bn_stats_fp16_cl, &bn_stats_bf16_cl};
static struct starpu_codelet *const apply_cls[3] = {&bn_apply_cl, &bn_apply_fp16_cl, &bn_apply_bf16_cl};
static struct starpu_codelet *const reduce_cls[2][3] = {
	{&bn_bwd_reduce_cl, &bn_bwd_reduce_fp16_cl, &bn_bwd_reduce_bf16_cl},
	{&bn_bwd_reduce_relu_cl, &bn_bwd_reduce_relu_fp16_cl, &bn_bwd_reduce_relu_bf16_cl}};
/* [relu][beta != 0][dtype] */
static struct starpu_codelet *const bwd_apply_cls[2][2][3] = {
	{{&bn_bwd_apply_w_cl, &bn_bwd_apply_w_fp16_cl, &bn_bwd_apply_w_bf16_cl},
	 {&bn_bwd_apply_cl, &bn_bwd_apply_fp16_cl, &bn_bwd_apply_bf16_cl}},
	{{&bn_bwd_apply_relu_w_cl, &bn_bwd_apply_relu_w_fp16_cl, &bn_bwd_apply_relu_w_bf16_cl},
	 {&bn_bwd_apply_relu_cl, &bn_bwd_apply_relu_fp16_cl, &bn_bwd_apply_relu_bf16_cl}}};

/* ------------------------------------------------------------ shape checks */

/* x: fp32, [N, C, ...] with ndim >= 2; gives C and N*inner. */
static int check_data(const char *op, const char *what, const starnn_tensor *x, int64_t *c, size_t *per_channel,
                      starnn_dtype dt)
{
	char d[128];
	if (!x)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, what);
	if (x->dtype != dt || x->ndim < 2)
		return starnn_error(STARNN_EINVAL, "%s: %s must be an %s tensor [N, C, ...], got %s", op, what,
		                    starnn_dtype_name(dt), starnn_tensor_describe(x, d, sizeof d));
	*c = x->shape[1];
	if (per_channel)
		*per_channel = x->rows * starnn_tensor_inner(x);
	return 0;
}

int starnn_batchnorm_out_layout_ok(int64_t channels, int cb, int cby)
{
	return cby == cb || (cb > 1 && cby > cb && cby % cb == 0 && channels % cby == 0);
}

/* b has the dtype and shape of a (same N, C, inner) and its layout, or
 * (out: b on the output side of a, y or dy of x) one that
 * starnn_batchnorm_out_layout_ok pairs with it. */
static int check_side(const char *op, const char *what, const starnn_tensor *a, const starnn_tensor *b, int out)
{
	char da[128], db[128];
	if (!b)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, what);
	const int shape = b->dtype == a->dtype && b->ndim >= 2 && b->rows == a->rows && b->cols == a->cols &&
	                  b->shape[1] == a->shape[1];
	const int layout =
	    out ? starnn_batchnorm_out_layout_ok(a->shape[1], a->cblock, b->cblock) : b->cblock == a->cblock;
	if (!shape || !layout)
		return starnn_error(STARNN_EINVAL, "%s: %s must be %s of the shape of %s, %s, got %s", op, what,
		                    starnn_dtype_name(a->dtype), starnn_tensor_describe(a, da, sizeof da),
		                    out ? "in its layout or in blocks of a multiple of its block dividing the channels"
		                        : "in its layout",
		                    starnn_tensor_describe(b, db, sizeof db));
	return 0;
}
#define check_like(op, what, a, b) check_side(op, what, a, b, 0)
#define check_out_like(op, what, a, b) check_side(op, what, a, b, 1)

/* A per-channel vector: fp32, C elements in one row. */
static int check_vec(const char *op, const char *what, const starnn_tensor *v, int64_t c)
{
	char d[128];
	if (!v)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, what);
	if (v->dtype != STARNN_FP32 || v->rows != 1 || v->cols != (size_t)c)
		return starnn_error(STARNN_EINVAL, "%s: %s must be fp32 with %lld elements in one row, got %s", op, what,
		                    (long long)c, starnn_tensor_describe(v, d, sizeof d));
	return 0;
}

/* A workspace for c channels with at least nslots rows (slot: exactly one). */
static int check_work(const char *op, const starnn_tensor *w, int64_t c, int nslots)
{
	char d[128];
	if (!w)
		return starnn_error(STARNN_EINVAL, "%s: workspace is NULL", op);
	if (w->dtype != STARNN_FP32 || w->cols != 4 * (size_t)c || w->ld % 2 || nslots < 1 || w->rows < (size_t)nslots)
		return starnn_error(STARNN_EINVAL,
		                    "%s: workspace must be fp32 [>= %d, %lld] (starnn_batchnorm_work_create), got %s", op,
		                    nslots, (long long)(4 * c), starnn_tensor_describe(w, d, sizeof d));
	return 0;
}

static int check_distinct(const char *op, const starnn_tensor *out, const starnn_tensor *in)
{
	if (out == in)
		return starnn_error(STARNN_EINVAL, "%s: output %s must not be an input too", op, out->name);
	return 0;
}

/* ------------------------------------------------------------- the steps */

/* The channels of block b of nb (the layer's channel blocks, below): in
 * whole units of 16 or 8 channels where there are enough of them, so that
 * blocked data (nChw16c / nChw8c) can be cut the same way, else even. */
static int64_t block_channels(int64_t c, int nb, int b)
{
	int64_t u = c % 16 == 0 && c / 16 >= nb ? 16 : c % 8 == 0 && c / 8 >= nb ? 8 : 1, sizes[nb];
	starnn_part_sizes(c, nb, u, sizes);
	return sizes[b];
}

int starnn_batchnorm_work_create(starnn_tensor **out, const char *name, int64_t c, int nslots)
{
	if (c < 1 || nslots < 1)
		return starnn_error(STARNN_EINVAL, "batchnorm workspace: need c >= 1 and nslots >= 1, got %lld, %d",
		                    (long long)c, nslots);
	return starnn_tensor_new(out, name, STARNN_FP32, 2, (int64_t)nslots, 4 * c);
}

/* Flops per element of x of the passes over the data, as the CPU kernels
 * compute them: stats sum x and x^2 (3), apply (x - m) s + b (3), the
 * backward sums g and g (x - m) (4) and dx = a g + k - d (x - m) (5). The
 * fused ReLU and the beta blend are left out: those variants share one
 * model (footprint: the shapes), and StarPU wants one count per footprint.
 * The per-channel steps (slot sums, finalize, bwd_params) keep the default
 * count, one per workspace element. */
#define BN_FLOPS(per_element, x) ((per_element) * (double)((x)->rows * (x)->cols))

static int bn_stats_dt(starnn_tensor *x, starnn_tensor *slot, int accumulate, starnn_dtype dt)
{
	int64_t c = 0;
	STARNN_CHECK(check_data("bn_stats", "x", x, &c, NULL, dt));
	STARNN_CHECK(check_work("bn_stats", slot, c, 1));
	if (slot->rows != 1)
		return starnn_error(STARNN_EINVAL, "bn_stats: the slot must be one workspace row, got %zu rows", slot->rows);
	struct bn_args a = {.accumulate = accumulate != 0, .cb = x->cblock};
	struct starnn_task_desc d = {.cl = stats_cls[dt], .args = &a, .args_size = sizeof a, .flops = BN_FLOPS(3, x),
	                             .tensors = {x, slot}};
	return starnn_submit(&d);
}

int starnn_bn_slot_add(starnn_tensor *total, starnn_tensor *slot)
{
	const char *op = "bn_slot_add";
	if (!total || !slot)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, total ? "slot" : "total");
	int64_t c = (int64_t)(total->cols / 4);
	STARNN_CHECK(check_work(op, total, c, 1));
	STARNN_CHECK(check_work(op, slot, c, 1));
	if (total->rows != 1 || slot->rows != 1)
		return starnn_error(STARNN_EINVAL, "%s: total and slot must be one workspace row each, got %zu and %zu rows",
		                    op, total->rows, slot->rows);
	STARNN_CHECK(check_distinct(op, total, slot));
	struct bn_args a = {0};
	struct starnn_task_desc d = {.cl = &bn_slot_add_cl, .args = &a, .args_size = sizeof a, .tensors = {slot, total}};
	return starnn_submit(&d);
}

int starnn_bn_finalize(starnn_tensor *work, int nslots, double count, float eps, float momentum, int update_running,
                       starnn_tensor *mean, starnn_tensor *invstd, starnn_tensor *running_mean,
                       starnn_tensor *running_var)
{
	const char *op = "bn_finalize";
	if (!mean)
		return starnn_error(STARNN_EINVAL, "%s: mean is NULL", op);
	int64_t c = (int64_t)mean->cols;
	STARNN_CHECK(check_vec(op, "mean", mean, c));
	STARNN_CHECK(check_vec(op, "invstd", invstd, c));
	STARNN_CHECK(check_vec(op, "running_mean", running_mean, c));
	STARNN_CHECK(check_vec(op, "running_var", running_var, c));
	STARNN_CHECK(check_work(op, work, c, nslots));
	if (!(count > 1))
		return starnn_error(STARNN_EINVAL, "%s: expected more than 1 value per channel when training, got %g", op,
		                    count);
	if (!(eps > 0) || !(momentum >= 0 && momentum <= 1))
		return starnn_error(STARNN_EINVAL, "%s: need eps > 0 and 0 <= momentum <= 1, got %g and %g", op, eps,
		                    momentum);
	struct bn_args a = {.count = count, .eps = eps, .momentum = momentum, .update_running = update_running != 0,
	                    .nslots = nslots};
	struct starnn_task_desc d = {.cl = &bn_finalize_cl, .args = &a, .args_size = sizeof a,
	                             .tensors = {work, mean, invstd, running_mean, running_var}};
	return starnn_submit(&d);
}

static int bn_apply_dt(starnn_tensor *x, starnn_tensor *mean, starnn_tensor *stat, int var_given, float eps,
                       starnn_tensor *gamma, starnn_tensor *beta, int relu, starnn_tensor *y, starnn_dtype dt)
{
	const char *op = "bn_apply";
	int64_t c = 0;
	STARNN_CHECK(check_data(op, "x", x, &c, NULL, dt));
	STARNN_CHECK(check_out_like(op, "y", x, y));
	STARNN_CHECK(check_distinct(op, y, x));
	STARNN_CHECK(check_vec(op, "mean", mean, c));
	STARNN_CHECK(check_vec(op, var_given ? "var" : "invstd", stat, c));
	STARNN_CHECK(check_vec(op, "gamma", gamma, c));
	STARNN_CHECK(check_vec(op, "beta", beta, c));
	if (var_given && !(eps > 0))
		return starnn_error(STARNN_EINVAL, "%s: need eps > 0, got %g", op, eps);
	struct bn_args a = {.eps = eps, .relu = relu != 0, .var_given = var_given != 0, .cb = x->cblock,
	                    .cby = y->cblock};
	struct starnn_task_desc d = {.cl = apply_cls[dt], .args = &a, .args_size = sizeof a, .flops = BN_FLOPS(3, x),
	                             .tensors = {x, mean, stat, gamma, beta, y}};
	return starnn_submit(&d);
}

static int bn_bwd_reduce_dt(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *y, starnn_tensor *mean,
                            starnn_tensor *slot, int accumulate, starnn_dtype dt)
{
	const char *op = "bn_bwd_reduce";
	int64_t c = 0;
	STARNN_CHECK(check_data(op, "x", x, &c, NULL, dt));
	STARNN_CHECK(check_out_like(op, "dy", x, dy));
	if (y)
		STARNN_CHECK(check_like(op, "y", dy, y));
	STARNN_CHECK(check_vec(op, "mean", mean, c));
	STARNN_CHECK(check_work(op, slot, c, 1));
	if (slot->rows != 1)
		return starnn_error(STARNN_EINVAL, "%s: the slot must be one workspace row, got %zu rows", op, slot->rows);
	struct bn_args a = {.accumulate = accumulate != 0, .relu = y != NULL, .cb = x->cblock, .cby = dy->cblock};
	struct starnn_task_desc d = {.args = &a, .args_size = sizeof a, .flops = BN_FLOPS(4, x)};
	if (y) {
		d.cl = reduce_cls[1][dt];
		starnn_tensor *t[] = {x, dy, y, mean, slot};
		memcpy(d.tensors, t, sizeof t);
	} else {
		d.cl = reduce_cls[0][dt];
		starnn_tensor *t[] = {x, dy, mean, slot};
		memcpy(d.tensors, t, sizeof t);
	}
	return starnn_submit(&d);
}

int starnn_bn_bwd_params(starnn_tensor *work, int nslots, starnn_tensor *invstd, float beta, starnn_tensor *dgamma,
                         starnn_tensor *dbeta)
{
	const char *op = "bn_bwd_params";
	if (!invstd)
		return starnn_error(STARNN_EINVAL, "%s: invstd is NULL", op);
	int64_t c = (int64_t)invstd->cols;
	STARNN_CHECK(check_vec(op, "invstd", invstd, c));
	STARNN_CHECK(check_vec(op, "dgamma", dgamma, c));
	STARNN_CHECK(check_vec(op, "dbeta", dbeta, c));
	STARNN_CHECK(check_work(op, work, c, nslots));
	if (dgamma == dbeta)
		return starnn_error(STARNN_EINVAL, "%s: dgamma and dbeta must be distinct tensors", op);
	struct bn_args a = {.beta = beta, .nslots = nslots};
	struct starnn_task_desc d = {.cl = beta == 0 ? &bn_bwd_params_w_cl : &bn_bwd_params_cl, .args = &a,
	                             .args_size = sizeof a, .tensors = {work, invstd, dgamma, dbeta}};
	return starnn_submit(&d);
}

static int bn_bwd_apply_dt(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *y, starnn_tensor *mean,
                           starnn_tensor *invstd, starnn_tensor *gamma, starnn_tensor *work, int nslots,
                           double count, float beta, starnn_tensor *dx, starnn_dtype dt)
{
	const char *op = "bn_bwd_apply";
	int64_t c = 0;
	STARNN_CHECK(check_data(op, "x", x, &c, NULL, dt));
	STARNN_CHECK(check_out_like(op, "dy", x, dy));
	if (y)
		STARNN_CHECK(check_like(op, "y", dy, y));
	STARNN_CHECK(check_like(op, "dx", x, dx));
	STARNN_CHECK(check_distinct(op, dx, x));
	STARNN_CHECK(check_distinct(op, dx, dy));
	if (y)
		STARNN_CHECK(check_distinct(op, dx, y));
	STARNN_CHECK(check_vec(op, "mean", mean, c));
	STARNN_CHECK(check_vec(op, "invstd", invstd, c));
	STARNN_CHECK(check_vec(op, "gamma", gamma, c));
	STARNN_CHECK(check_work(op, work, c, nslots));
	if (!(count > 1))
		return starnn_error(STARNN_EINVAL, "%s: expected more than 1 value per channel, got %g", op, count);
	struct bn_args a = {.count = count, .beta = beta, .relu = y != NULL, .nslots = nslots, .cb = x->cblock,
	                    .cby = dy->cblock};
	struct starnn_task_desc d = {.args = &a, .args_size = sizeof a, .flops = BN_FLOPS(5, x)};
	if (y) {
		d.cl = bwd_apply_cls[1][beta != 0][dt];
		starnn_tensor *t[] = {x, dy, y, mean, invstd, gamma, work, dx};
		memcpy(d.tensors, t, sizeof t);
	} else {
		d.cl = bwd_apply_cls[0][beta != 0][dt];
		starnn_tensor *t[] = {x, dy, mean, invstd, gamma, work, dx};
		memcpy(d.tensors, t, sizeof t);
	}
	return starnn_submit(&d);
}

/* ------------------------------------------------------ a batch-norm layer */

/* The slot of part 0 (*work) and those of parts 1..max_parts-1: into
 * *more when more is given (an array allocated here, or filled in place
 * when *more is set). */
static int slots_create(starnn_tensor **work, starnn_tensor ***more, const char *name, int64_t c, int max_parts)
{
	STARNN_CHECK(starnn_batchnorm_work_create(work, name, c, 1));
	if (!more)
		return 0;
	if (!*more) {
		*more = calloc((size_t)(max_parts - 1), sizeof **more);
		if (!*more)
			return starnn_error(STARNN_ENOMEM, "batchnorm %s: out of memory", name);
	}
	char n[STARNN_NAME_MAX];
	for (int p = 1; p < max_parts; p++) {
		snprintf(n, sizeof n, "%s.%d", name, p);
		STARNN_CHECK(starnn_batchnorm_work_create(&(*more)[p - 1], n, c, 1));
	}
	return 0;
}

int starnn_batchnorm_init(starnn_batchnorm *bn, const char *name, int64_t channels, int max_parts, int relu)
{
	memset(bn, 0, sizeof *bn);
	if (channels < 1 || max_parts < 1)
		return starnn_error(STARNN_EINVAL, "batchnorm %s: need channels >= 1 and max_parts >= 1, got %lld, %d",
		                    name, (long long)channels, max_parts);
	bn->channels = channels;
	bn->momentum = STARNN_BN_MOMENTUM;
	bn->eps = STARNN_BN_EPS;
	bn->relu = relu != 0;
	char n[STARNN_NAME_MAX];
	struct {
		starnn_tensor **t;
		const char *suffix;
		float fill;
	} v[] = {
		{&bn->gamma, "gamma", 1}, {&bn->beta, "beta", 0}, {&bn->running_mean, "running_mean", 0},
		{&bn->running_var, "running_var", 1}, {&bn->mean, "mean", 0}, {&bn->invstd, "invstd", 0},
	};
	float *ones = malloc((size_t)channels * sizeof *ones);
	if (!ones)
		return starnn_error(STARNN_ENOMEM, "batchnorm %s: out of memory", name);
	for (int64_t k = 0; k < channels; k++)
		ones[k] = 1;
	int rc = 0;
	for (size_t i = 0; i < sizeof v / sizeof v[0] && rc == 0; i++) {
		snprintf(n, sizeof n, "%s.%s", name, v[i].suffix);
		rc = starnn_tensor_new(v[i].t, n, STARNN_FP32, 1, channels);
		if (rc == 0 && v[i].fill == 1)
			rc = starnn_tensor_write(*v[i].t, ones); /* created zeroed otherwise */
	}
	free(ones);
	bn->max_parts = max_parts;
	if (rc == 0) {
		snprintf(n, sizeof n, "%s.work", name);
		rc = slots_create(&bn->work, max_parts > 1 ? &bn->more : NULL, n, channels, max_parts);
	}
	/* channel blocks: one per worker, at least one channel each */
	int nb = (int)starpu_worker_get_count();
	if (nb > channels)
		nb = (int)channels;
	if (rc == 0 && nb > 1) {
		bn->bwork = calloc((size_t)nb, sizeof *bn->bwork);
		if (max_parts > 1)
			bn->bmore = calloc((size_t)nb * (size_t)(max_parts - 1), sizeof *bn->bmore);
		if (!bn->bwork || (max_parts > 1 && !bn->bmore))
			rc = starnn_error(STARNN_ENOMEM, "batchnorm %s: out of memory", name);
		for (int b = 0; rc == 0 && b < nb; b++) {
			snprintf(n, sizeof n, "%s.work%d", name, b);
			starnn_tensor **more = bn->bmore ? bn->bmore + (size_t)b * (size_t)(max_parts - 1) : NULL;
			bn->nblocks = b + 1; /* what destroy frees, this block's slots made so far too */
			rc = slots_create(&bn->bwork[b], more ? &more : NULL, n, block_channels(channels, nb, b), max_parts);
		}
	}
	if (rc < 0)
		starnn_batchnorm_destroy(bn);
	return rc;
}

void starnn_batchnorm_destroy(starnn_batchnorm *bn)
{
	if (!bn)
		return;
	starnn_tensor_destroy(bn->gamma);
	starnn_tensor_destroy(bn->beta);
	starnn_tensor_destroy(bn->running_mean);
	starnn_tensor_destroy(bn->running_var);
	starnn_tensor_destroy(bn->mean);
	starnn_tensor_destroy(bn->invstd);
	starnn_tensor_destroy(bn->work);
	int nmore = bn->max_parts > 1 ? bn->max_parts - 1 : 0;
	if (bn->more)
		for (int p = 0; p < nmore; p++)
			starnn_tensor_destroy(bn->more[p]);
	free(bn->more);
	for (int b = 0; b < bn->nblocks; b++)
		starnn_tensor_destroy(bn->bwork[b]);
	if (bn->bmore)
		for (size_t i = 0; i < (size_t)bn->nblocks * (size_t)nmore; i++)
			starnn_tensor_destroy(bn->bmore[i]);
	free(bn->bwork);
	free(bn->bmore);
	memset(bn, 0, sizeof *bn);
}

/* Checks the parts of one batch against each other; gives the values per
 * channel over all of them. */
static int check_parts(const char *op, const starnn_batchnorm *bn, int nparts, starnn_tensor *const *x,
                       int need_slots, double *count, starnn_dtype dt)
{
	if (!bn || !bn->work)
		return starnn_error(STARNN_EINVAL, "%s: batchnorm not initialised", op);
	if (nparts < 1 || !x)
		return starnn_error(STARNN_EINVAL, "%s: need at least one part, got %d", op, nparts);
	if (need_slots && nparts > bn->max_parts)
		return starnn_error(STARNN_EINVAL, "%s: %d parts but the batch norm was made for at most %d (max_parts)",
		                    op, nparts, bn->max_parts);
	double total = 0;
	for (int p = 0; p < nparts; p++) {
		int64_t c = 0;
		size_t per = 0;
		STARNN_CHECK(check_data(op, "x", x[p], &c, &per, dt));
		if (c != bn->channels)
			return starnn_error(STARNN_EINVAL, "%s: %s has %lld channels, the batchnorm %lld", op, x[p]->name,
			                    (long long)c, (long long)bn->channels);
		if (starnn_tensor_inner(x[p]) != starnn_tensor_inner(x[0]))
			return starnn_error(STARNN_EINVAL, "%s: parts %s and %s differ in image size", op, x[0]->name,
			                    x[p]->name);
		total += (double)per;
	}
	*count = total;
	return 0;
}

/* Elements of one part below which it is not cut into channel blocks (a
 * task of ~100 us at memory speed; StarPU's per-task cost is ~10 us). */
#define BN_MIN_BLOCK_ELEMS ((size_t)1 << 17)

/* How many channel blocks a call uses: bn->nblocks when there are fewer
 * parts than workers and each block stays large enough (and, for blocked
 * data, holds whole blocks of channels of x and of the output side out),
 * else 1. */
static int call_blocks(const starnn_batchnorm *bn, int nparts, starnn_tensor *const *x, starnn_tensor *const *out)
{
	if (bn->nblocks < 2 || nparts >= (int)starpu_worker_get_count())
		return 1;
	for (int b = 0; b < bn->nblocks; b++)
		if (block_channels(bn->channels, bn->nblocks, b) % x[0]->cblock ||
		    block_channels(bn->channels, bn->nblocks, b) % out[0]->cblock)
			return 1;
	return x[0]->rows * x[0]->cols / (size_t)bn->nblocks >= BN_MIN_BLOCK_ELEMS ? bn->nblocks : 1;
}

/* The tensors of one channel block b of a call (nb blocks; nb = 1: the
 * whole tensors): data parts along axis 1, per-channel vectors along their
 * channel axis. */
struct bn_block {
	starnn_tensor **x, **y, **dy, **dx; /* [nparts] each */
	starnn_tensor *gamma, *beta, *running_mean, *running_var, *mean, *invstd, *dgamma, *dbeta, *work;
	starnn_tensor **more; /* slots of parts 1.. */
};

/* k[0..nb) with their part arrays in one allocation (free(k[0].x)). */
static int blocks_alloc(struct bn_block *k, int nb, int nparts)
{
	starnn_tensor **pool = calloc((size_t)nb * (size_t)nparts * 4, sizeof *pool);
	if (!pool)
		return starnn_error(STARNN_ENOMEM, "batchnorm: out of memory");
	for (int b = 0; b < nb; b++) {
		k[b].x = pool + (size_t)(4 * b) * (size_t)nparts;
		k[b].y = k[b].x + nparts;
		k[b].dy = k[b].y + nparts;
		k[b].dx = k[b].dy + nparts;
	}
	return 0;
}

static int block_of(starnn_tensor *t, int nb, const int64_t *sizes, int b, int axis, starnn_tensor **out)
{
	if (!t || nb == 1) {
		*out = t;
		return 0;
	}
	starnn_tensor **parts;
	STARNN_CHECK(starnn_tensor_split(t, axis, nb, sizes, &parts));
	*out = parts[b];
	return 0;
}

static int bn_block(starnn_batchnorm *bn, int nb, int b, int nparts, starnn_tensor *const *x, starnn_tensor *const *y,
                    starnn_tensor *const *dy, starnn_tensor *const *dx, starnn_tensor *dgamma, starnn_tensor *dbeta,
                    struct bn_block *k)
{
	int64_t sizes[nb];
	for (int i = 0; i < nb; i++)
		sizes[i] = block_channels(bn->channels, nb, i);
	for (int p = 0; p < nparts; p++) {
		STARNN_CHECK(block_of(x[p], nb, sizes, b, 1, &k->x[p]));
		STARNN_CHECK(block_of(y ? y[p] : NULL, nb, sizes, b, 1, &k->y[p]));
		STARNN_CHECK(block_of(dy ? dy[p] : NULL, nb, sizes, b, 1, &k->dy[p]));
		STARNN_CHECK(block_of(dx ? dx[p] : NULL, nb, sizes, b, 1, &k->dx[p]));
	}
	starnn_tensor *const vin[8] = {bn->gamma, bn->beta, bn->running_mean, bn->running_var,
	                               bn->mean, bn->invstd, dgamma, dbeta};
	starnn_tensor **vout[8] = {&k->gamma, &k->beta, &k->running_mean, &k->running_var,
	                           &k->mean, &k->invstd, &k->dgamma, &k->dbeta};
	for (int i = 0; i < 8; i++) /* [C] along axis 0, [1, C] along axis 1 */
		STARNN_CHECK(block_of(vin[i], nb, sizes, b, vin[i] && vin[i]->ndim > 1, vout[i]));
	k->work = nb == 1 ? bn->work : bn->bwork[b];
	k->more = nb == 1 ? bn->more : bn->bmore ? bn->bmore + (size_t)b * (size_t)(bn->max_parts - 1) : NULL;
	return 0;
}

/* The slot of part p of block k. */
static starnn_tensor *slot_of(const struct bn_block *k, int p)
{
	return p == 0 ? k->work : k->more[p - 1];
}

/* Adds the slots of parts 1..nparts-1 to part 0's, in part order: the sums
 * a combining step reads from one slot, in the order it would add them. */
static starnn_bn_sync_fn sync_fn; /* starnn_batchnorm_set_sync */
static void *sync_ctx;

void starnn_batchnorm_set_sync(starnn_bn_sync_fn fn, void *ctx)
{
	sync_fn = fn;
	sync_ctx = ctx;
}

static int sync_slot(starnn_tensor *work, double *count)
{
	return sync_fn ? sync_fn(sync_ctx, work, count) : 0;
}

static int gather_slots(const struct bn_block *k, int nparts)
{
	for (int p = 1; p < nparts; p++)
		STARNN_CHECK(starnn_bn_slot_add(k->work, k->more[p - 1]));
	return 0;
}

static int fwd_blocks(starnn_batchnorm *bn, int training, int nparts, int nb, struct bn_block *k, double count,
                      starnn_dtype dt)
{
	if (!training) {
		for (int b = 0; b < nb; b++)
			for (int p = 0; p < nparts; p++)
				STARNN_CHECK(bn_apply_dt(k[b].x[p], k[b].running_mean, k[b].running_var, 1, bn->eps,
				                         k[b].gamma, k[b].beta, bn->relu, k[b].y[p], dt));
		return 0;
	}
	for (int b = 0; b < nb; b++)
		for (int p = 0; p < nparts; p++)
			STARNN_CHECK(bn_stats_dt(k[b].x[p], slot_of(&k[b], p), 0, dt));
	for (int b = 0; b < nb; b++) {
		double total = count;
		STARNN_CHECK(gather_slots(&k[b], nparts));
		STARNN_CHECK(sync_slot(k[b].work, &total));
		STARNN_CHECK(starnn_bn_finalize(k[b].work, 1, total, bn->eps, bn->momentum, 1, k[b].mean, k[b].invstd,
		                                k[b].running_mean, k[b].running_var));
	}
	for (int b = 0; b < nb; b++)
		for (int p = 0; p < nparts; p++)
			STARNN_CHECK(bn_apply_dt(k[b].x[p], k[b].mean, k[b].invstd, 0, bn->eps, k[b].gamma, k[b].beta,
			                         bn->relu, k[b].y[p], dt));
	return 0;
}

static int batchnorm_fwd_dt(starnn_batchnorm *bn, int training, int nparts, starnn_tensor *const *x,
                            starnn_tensor *const *y, starnn_dtype dt)
{
	const char *op = "batchnorm_fwd";
	double count;
	STARNN_CHECK(check_parts(op, bn, nparts, x, training, &count, dt));
	if (!y)
		return starnn_error(STARNN_EINVAL, "%s: y is NULL", op);
	for (int p = 0; p < nparts; p++)
		STARNN_CHECK(check_out_like(op, "y", x[p], y[p]));
	if (training && !(count > 1))
		return starnn_error(STARNN_EINVAL, "%s: expected more than 1 value per channel when training, got %g", op,
		                    count);
	int nb = call_blocks(bn, nparts, x, y);
	struct bn_block k[nb];
	STARNN_CHECK(blocks_alloc(k, nb, nparts));
	int rc = 0;
	for (int b = 0; b < nb && rc == 0; b++)
		rc = bn_block(bn, nb, b, nparts, x, y, NULL, NULL, NULL, NULL, &k[b]);
	if (rc == 0)
		rc = fwd_blocks(bn, training, nparts, nb, k, count, dt);
	free(k[0].x);
	return rc;
}

static int bwd_blocks(starnn_batchnorm *bn, int nparts, int nb, struct bn_block *k, double count, float dx_beta,
                      int params, float param_beta, starnn_dtype dt)
{
	for (int b = 0; b < nb; b++)
		for (int p = 0; p < nparts; p++)
			STARNN_CHECK(bn_bwd_reduce_dt(k[b].x[p], k[b].dy[p], bn->relu ? k[b].y[p] : NULL, k[b].mean,
			                              slot_of(&k[b], p), 0, dt));
	for (int b = 0; b < nb; b++)
		STARNN_CHECK(gather_slots(&k[b], nparts));
	/* Synchronised: dx, dgamma and dbeta from the sums over all ranks
	 * (dgamma, dbeta are then whole-batch gradients already). */
	double total = count;
	for (int b = 0; b < nb; b++) {
		total = count;
		STARNN_CHECK(sync_slot(k[b].work, &total));
	}
	if (params)
		for (int b = 0; b < nb; b++)
			STARNN_CHECK(starnn_bn_bwd_params(k[b].work, 1, k[b].invstd, param_beta, k[b].dgamma, k[b].dbeta));
	for (int b = 0; b < nb; b++)
		for (int p = 0; p < nparts; p++)
			STARNN_CHECK(bn_bwd_apply_dt(k[b].x[p], k[b].dy[p], bn->relu ? k[b].y[p] : NULL, k[b].mean,
			                             k[b].invstd, k[b].gamma, k[b].work, 1, total, dx_beta, k[b].dx[p], dt));
	return 0;
}

static int batchnorm_bwd_dt(starnn_batchnorm *bn, int nparts, starnn_tensor *const *x, starnn_tensor *const *y,
                            starnn_tensor *const *dy, starnn_tensor *const *dx, float dx_beta,
                            starnn_tensor *dgamma, starnn_tensor *dbeta, float param_beta, starnn_dtype dt)
{
	const char *op = "batchnorm_bwd";
	double count;
	STARNN_CHECK(check_parts(op, bn, nparts, x, 1, &count, dt));
	if (!dy || !dx || (bn->relu && !y))
		return starnn_error(STARNN_EINVAL, "%s: dy, dx%s are required", op, bn->relu ? " and y (fused ReLU)" : "");
	if (!dgamma != !dbeta)
		return starnn_error(STARNN_EINVAL, "%s: give both dgamma and dbeta, or neither", op);
	for (int p = 0; p < nparts; p++) { /* before splitting them */
		STARNN_CHECK(check_out_like(op, "dy", x[p], dy[p]));
		STARNN_CHECK(check_like(op, "dx", x[p], dx[p]));
		if (bn->relu)
			STARNN_CHECK(check_like(op, "y", dy[p], y[p]));
	}
	int nb = call_blocks(bn, nparts, x, dy);
	struct bn_block k[nb];
	STARNN_CHECK(blocks_alloc(k, nb, nparts));
	int rc = 0;
	for (int b = 0; b < nb && rc == 0; b++)
		rc = bn_block(bn, nb, b, nparts, x, bn->relu ? y : NULL, dy, dx, dgamma, dbeta, &k[b]);
	if (rc == 0)
		rc = bwd_blocks(bn, nparts, nb, k, count, dx_beta, dgamma != NULL, param_beta, dt);
	free(k[0].x);
	return rc;
}

/* ------------------------------------------------- fp32 and 16-bit entries */

int starnn_bn_stats(starnn_tensor *x, starnn_tensor *slot, int accumulate)
{
	return bn_stats_dt(x, slot, accumulate, STARNN_FP32);
}

int starnn_bn_apply(starnn_tensor *x, starnn_tensor *mean, starnn_tensor *stat, int var_given, float eps,
                    starnn_tensor *gamma, starnn_tensor *beta, int relu, starnn_tensor *y)
{
	return bn_apply_dt(x, mean, stat, var_given, eps, gamma, beta, relu, y, STARNN_FP32);
}

int starnn_bn_bwd_reduce(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *y, starnn_tensor *mean,
                         starnn_tensor *slot, int accumulate)
{
	return bn_bwd_reduce_dt(x, dy, y, mean, slot, accumulate, STARNN_FP32);
}

int starnn_bn_bwd_apply(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *y, starnn_tensor *mean,
                        starnn_tensor *invstd, starnn_tensor *gamma, starnn_tensor *work, int nslots, double count,
                        float beta, starnn_tensor *dx)
{
	return bn_bwd_apply_dt(x, dy, y, mean, invstd, gamma, work, nslots, count, beta, dx, STARNN_FP32);
}

int starnn_batchnorm_fwd(starnn_batchnorm *bn, int training, int nparts, starnn_tensor *const *x,
                         starnn_tensor *const *y)
{
	return batchnorm_fwd_dt(bn, training, nparts, x, y, STARNN_FP32);
}

int starnn_batchnorm_bwd(starnn_batchnorm *bn, int nparts, starnn_tensor *const *x, starnn_tensor *const *y,
                         starnn_tensor *const *dy, starnn_tensor *const *dx, float dx_beta, starnn_tensor *dgamma,
                         starnn_tensor *dbeta, float param_beta)
{
	return batchnorm_bwd_dt(bn, nparts, x, y, dy, dx, dx_beta, dgamma, dbeta, param_beta, STARNN_FP32);
}

/* The data's dtype: that of the first part when 16-bit, else fp32. */
static starnn_dtype data_dtype(int nparts, starnn_tensor *const *x)
{
	return nparts >= 1 && x && x[0] && starnn_hw_is_half(x[0]->dtype) ? x[0]->dtype : STARNN_FP32;
}

int starnn_batchnorm_fwd_mp(starnn_batchnorm *bn, int training, int nparts, starnn_tensor *const *x,
                            starnn_tensor *const *y)
{
	return batchnorm_fwd_dt(bn, training, nparts, x, y, data_dtype(nparts, x));
}

int starnn_batchnorm_bwd_mp(starnn_batchnorm *bn, int nparts, starnn_tensor *const *x, starnn_tensor *const *y,
                            starnn_tensor *const *dy, starnn_tensor *const *dx, float dx_beta, starnn_tensor *dgamma,
                            starnn_tensor *dbeta, float param_beta)
{
	return batchnorm_bwd_dt(bn, nparts, x, y, dy, dx, dx_beta, dgamma, dbeta, param_beta, data_dtype(nparts, x));
}
