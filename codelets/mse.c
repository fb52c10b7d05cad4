/* StarPU codelets of mse_fwd / mse_bwd (fp32, fp16 / bf16 pred): CPU, CUDA
 * and OpenCL. */
#include <math.h>

#include "codelets/amp.h"
#include "codelets/kernels/mse.h"
#include "codelets/mse.h"
#include "runtime/core/codelet.h"

#ifdef STARNN_USE_CUDA
#include <cuda_runtime.h>
#endif

struct mse_args {
	float scale, beta;
};

/* --------------------------------------------------------------- mse_fwd */

static void mse_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), l = starnn_buffer(buffers, 2);
	starnn_mse_fwd_cpu(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, a->beta, l.ptr);
}

#ifdef STARNN_USE_CUDA
static void mse_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), l = starnn_buffer(buffers, 2);
	int err = starnn_mse_fwd_cuda(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, a->beta, l.ptr,
	                              starnn_cuda_stream());
	if (err)
		starnn_defer_error(STARNN_ECUDA, "mse_fwd: %s", cudaGetErrorString((cudaError_t)err));
	STARNN_CUDA_LAUNCHED("mse_fwd");
}
#endif

#ifdef STARNN_USE_OPENCL
static void mse_fwd_opencl(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_clmat p = starnn_cl_buffer(buffers, 0), t = starnn_cl_buffer(buffers, 1),
	                    l = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(mse);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "mse_fwd", starnn_mse_fwd_opencl(ctx, p.rows, p.cols, p.mem, p.off, p.ld, t.mem,
		                                                             t.off, t.ld, a->scale, a->beta, l.mem, l.off));
}
#endif

static STARNN_PERFMODEL(mse_fwd, fp32);
struct starpu_codelet starnn_mse_fwd_cl = {
	.name = "mse_fwd",
	.cpu_funcs = {mse_fwd_cpu},
	.cpu_funcs_name = {"mse_fwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {mse_fwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(mse_fwd_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	STARNN_MODELS(mse_fwd, fp32),
};

/* --------------------------------------------------------------- mse_bwd */

static void mse_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), d = starnn_buffer(buffers, 2);
	starnn_mse_bwd_cpu(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, d.ptr, d.ld);
}

#ifdef STARNN_USE_CUDA
static void mse_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), d = starnn_buffer(buffers, 2);
	starnn_mse_bwd_cuda(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, d.ptr, d.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("mse_bwd");
}
#endif

#ifdef STARNN_USE_OPENCL
static void mse_bwd_opencl(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_clmat p = starnn_cl_buffer(buffers, 0), t = starnn_cl_buffer(buffers, 1),
	                    d = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(mse);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "mse_bwd", starnn_mse_bwd_opencl(ctx, p.rows, p.cols, p.mem, p.off, p.ld, t.mem,
		                                                             t.off, t.ld, a->scale, d.mem, d.off, d.ld));
}
#endif

static STARNN_PERFMODEL(mse_bwd, fp32);
struct starpu_codelet starnn_mse_bwd_cl = {
	.name = "mse_bwd",
	.cpu_funcs = {mse_bwd_cpu},
	.cpu_funcs_name = {"mse_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {mse_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(mse_bwd_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(mse_bwd, fp32),
};

/* ------------------------------------------------------------ submission */

/* Flops per task: forward p - t, its square and the sum (3 per element);
 * backward p - t times 2 scale (2 per element). */
#define MSE_FWD_FLOPS(pred) (3.0 * (double)((pred)->rows * (pred)->cols))
#define MSE_BWD_FLOPS(pred) (2.0 * (double)((pred)->rows * (pred)->cols))

int starnn_mse_fwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *loss, float scale, float beta)
{
	char d[128];
	STARNN_CHECK(starnn_check_like("mse_fwd", "pred", pred, "target", target));
	if (loss->dtype != STARNN_FP32 || starnn_tensor_numel(loss) != 1)
		return starnn_error(STARNN_EINVAL, "mse_fwd: the loss must be a 1-element fp32 tensor, got %s",
		                    starnn_tensor_describe(loss, d, sizeof d));
	if (loss == pred || loss == target)
		return starnn_error(STARNN_EINVAL, "mse_fwd: the loss %s is also an input",
		                    starnn_tensor_describe(loss, d, sizeof d));
	if (!isfinite(scale) || !isfinite(beta))
		return starnn_error(STARNN_EINVAL, "mse_fwd: scale and beta must be finite, got %g and %g", (double)scale,
		                    (double)beta);
	struct mse_args a = {scale, beta};
	struct starnn_task_desc desc = {
		.cl = &starnn_mse_fwd_cl, .args = &a, .args_size = sizeof a, .flops = MSE_FWD_FLOPS(pred),
		.tensors = {pred, target, loss}};
	return starnn_submit(&desc);
}

int starnn_mse_bwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *dpred, float scale)
{
	char d[128];
	STARNN_CHECK(starnn_check_like("mse_bwd", "pred", pred, "target", target));
	STARNN_CHECK(starnn_check_like("mse_bwd", "pred", pred, "dpred", dpred));
	if (dpred == pred || dpred == target)
		return starnn_error(STARNN_EINVAL, "mse_bwd: the gradient %s is also an input",
		                    starnn_tensor_describe(dpred, d, sizeof d));
	if (!isfinite(scale))
		return starnn_error(STARNN_EINVAL, "mse_bwd: scale must be finite, got %g", (double)scale);
	struct mse_args a = {scale, 0.0f};
	struct starnn_task_desc desc = {
		.cl = &starnn_mse_bwd_cl, .args = &a, .args_size = sizeof a, .flops = MSE_BWD_FLOPS(pred),
		.tensors = {pred, target, dpred}};
	return starnn_submit(&desc);
}

/* ------------------------------------------------------- mixed precision */

#ifdef STARNN_USE_CUDA
#define MSE_CUDA_FWD(dt, DT)                                                                               \
	static void mse_fwd_##dt##_cuda(void *buffers[], void *cl_arg)                                     \
	{                                                                                                  \
		const struct mse_args *a = cl_arg;                                                         \
		struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1);            \
		struct starnn_mat l = starnn_buffer(buffers, 2);                                           \
		int err = starnn_mse_fwd_half_cuda(DT, p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, \
		                                   a->beta, l.ptr, starnn_cuda_stream());                  \
		if (err)                                                                                   \
			starnn_defer_error(STARNN_ECUDA, "mse_fwd: %s", cudaGetErrorString((cudaError_t)err)); \
		STARNN_CUDA_LAUNCHED("mse_fwd_" #dt);                                                      \
	}
/* Buffers pred, target, dpred (, state when scaled). */
#define MSE_CUDA_BWD(name, DT, scaled)                                                                     \
	static void name##_cuda(void *buffers[], void *cl_arg)                                             \
	{                                                                                                  \
		const struct mse_args *a = cl_arg;                                                         \
		struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1);            \
		struct starnn_mat d = starnn_buffer(buffers, 2);                                           \
		const float *state = scaled ? (const float *)starnn_buffer(buffers, 3).ptr : NULL;         \
		starnn_mse_bwd_half_cuda(DT, p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, state,    \
		                         d.ptr, d.ld, starnn_cuda_stream());                               \
		STARNN_CUDA_LAUNCHED(#name);                                                               \
	}
#define MSE_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define MSE_CUDA_FWD(dt, DT)
#define MSE_CUDA_BWD(name, DT, scaled)
#define MSE_CUDA_FIELDS(fn)
#endif

#ifdef STARNN_USE_OPENCL
#define MSE_OPENCL_FWD(dt, DT)                                                                             \
	static void mse_fwd_##dt##_opencl(void *buffers[], void *cl_arg)                                   \
	{                                                                                                  \
		const struct mse_args *a = cl_arg;                                                         \
		struct starnn_clmat p = starnn_cl_buffer(buffers, 0), t = starnn_cl_buffer(buffers, 1);    \
		struct starnn_clmat l = starnn_cl_buffer(buffers, 2);                                      \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(mse);                                    \
		if (ctx)                                                                                   \
			STARNN_OPENCL_LAUNCHED(ctx, "mse_fwd_" #dt,                                        \
			                       starnn_mse_fwd_half_opencl(ctx, DT, p.rows, p.cols, p.mem, p.off, \
			                                                  p.ld, t.mem, t.off, t.ld, a->scale, \
			                                                  a->beta, l.mem, l.off));         \
	}
/* Buffers pred, target, dpred (, state when scaled). */
#define MSE_OPENCL_BWD(name, DT, scaled)                                                                   \
	static void name##_opencl(void *buffers[], void *cl_arg)                                           \
	{                                                                                                  \
		const struct mse_args *a = cl_arg;                                                         \
		struct starnn_clmat p = starnn_cl_buffer(buffers, 0), t = starnn_cl_buffer(buffers, 1);    \
		struct starnn_clmat d = starnn_cl_buffer(buffers, 2);                                      \
		struct starnn_clmat st = {0};                                                              \
		if (scaled)                                                                                \
			st = starnn_cl_buffer(buffers, 3);                                                 \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(mse);                                    \
		if (ctx)                                                                                   \
			STARNN_OPENCL_LAUNCHED(ctx, #name,                                                 \
			                       starnn_mse_bwd_half_opencl(ctx, DT, p.rows, p.cols, p.mem, p.off, \
			                                                  p.ld, t.mem, t.off, t.ld, a->scale, \
			                                                  st.mem, st.off, d.mem, d.off, d.ld)); \
	}
#else
#define MSE_OPENCL_FWD(dt, DT)
#define MSE_OPENCL_BWD(name, DT, scaled)
#endif

#define MSE_FWD_HALF(dt, DT)                                                                               \
	static void mse_fwd_##dt##_cpu(void *buffers[], void *cl_arg)                                      \
	{                                                                                                  \
		const struct mse_args *a = cl_arg;                                                         \
		struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1);            \
		struct starnn_mat l = starnn_buffer(buffers, 2);                                           \
		starnn_mse_fwd_half_cpu(DT, p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, a->beta,   \
		                        l.ptr);                                                            \
	}                                                                                                  \
	MSE_CUDA_FWD(dt, DT)                                                                               \
	MSE_OPENCL_FWD(dt, DT)                                                                             \
	static STARNN_PERFMODEL(mse_fwd, dt);                                                              \
	static struct starpu_codelet mse_fwd_##dt##_cl = {                                                 \
		.name = "mse_fwd_" #dt,                                                                    \
		.cpu_funcs = {mse_fwd_##dt##_cpu},                                                         \
		.cpu_funcs_name = {"mse_fwd_" #dt "_cpu"},                                                 \
		MSE_CUDA_FIELDS(mse_fwd_##dt##_cuda)                                                       \
		STARNN_OPENCL_FUNCS(mse_fwd_##dt##_opencl)                                                 \
		.nbuffers = 3,                                                                             \
		.modes = {STARPU_R, STARPU_R, STARPU_RW},                                                  \
		STARNN_MODELS(mse_fwd, dt),                                                                \
	};

/* op: mse_bwd or mse_bwd_scaled (with the state as a 4th, R buffer). */
#define MSE_BWD_HALF(op, dt, DT, scaled)                                                                   \
	static void op##_##dt##_cpu(void *buffers[], void *cl_arg)                                         \
	{                                                                                                  \
		const struct mse_args *a = cl_arg;                                                         \
		struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1);            \
		struct starnn_mat d = starnn_buffer(buffers, 2);                                           \
		const float *state = scaled ? (const float *)starnn_buffer(buffers, 3).ptr : NULL;         \
		starnn_mse_bwd_half_cpu(DT, p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, state,     \
		                        d.ptr, d.ld);                                                      \
	}                                                                                                  \
	MSE_CUDA_BWD(op##_##dt, DT, scaled)                                                                \
	MSE_OPENCL_BWD(op##_##dt, DT, scaled)                                                              \
	static STARNN_PERFMODEL(op, dt);                                                                   \
	static struct starpu_codelet op##_##dt##_cl = {                                                    \
		.name = #op "_" #dt,                                                                       \
		.cpu_funcs = {op##_##dt##_cpu},                                                            \
		.cpu_funcs_name = {#op "_" #dt "_cpu"},                                                    \
		MSE_CUDA_FIELDS(op##_##dt##_cuda)                                                          \
		STARNN_OPENCL_FUNCS(op##_##dt##_opencl)                                                    \
		.nbuffers = scaled ? 4 : 3,                                                                \
		.modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_R},                                         \
		STARNN_MODELS(op, dt),                                                                     \
	};

MSE_FWD_HALF(fp16, STARNN_FP16)
MSE_FWD_HALF(bf16, STARNN_BF16)
MSE_BWD_HALF(mse_bwd, fp16, STARNN_FP16, 0)
MSE_BWD_HALF(mse_bwd, bf16, STARNN_BF16, 0)
MSE_BWD_HALF(mse_bwd_scaled, fp32, STARNN_FP32, 1)
MSE_BWD_HALF(mse_bwd_scaled, fp16, STARNN_FP16, 1)
MSE_BWD_HALF(mse_bwd_scaled, bf16, STARNN_BF16, 1)

/* pred of any dtype; target fp32 with pred's matrix view. */
static int check_pred(const char *op, const starnn_tensor *pred, const starnn_tensor *target)
{
	char dp[128], dt[128];
	if (!pred || !target)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, !pred ? "pred" : "target");
	starnn_tensor_describe(pred, dp, sizeof dp);
	starnn_tensor_describe(target, dt, sizeof dt);
	if ((unsigned)pred->dtype >= STARNN_NDTYPES || target->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: pred fp32, fp16 or bf16 and target fp32 expected, got %s and %s",
		                    op, dp, dt);
	if (pred->rows != target->rows || pred->cols != target->cols)
		return starnn_error(STARNN_EINVAL, "%s: pred and target differ in shape: %s and %s", op, dp, dt);
	return starnn_check_layouts(op, "pred", pred, "target", target);
}

int starnn_mse_fwd_mp(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *loss, float scale, float beta)
{
	char d[128];
	if (pred && pred->dtype == STARNN_FP32)
		return starnn_mse_fwd(pred, target, loss, scale, beta);
	STARNN_CHECK(check_pred("mse_fwd", pred, target));
	if (!loss || loss->dtype != STARNN_FP32 || starnn_tensor_numel(loss) != 1)
		return starnn_error(STARNN_EINVAL, "mse_fwd: the loss must be a 1-element fp32 tensor, got %s",
		                    loss ? starnn_tensor_describe(loss, d, sizeof d) : "NULL");
	if (loss == target)
		return starnn_error(STARNN_EINVAL, "mse_fwd: the loss %s is also an input",
		                    starnn_tensor_describe(loss, d, sizeof d));
	if (!isfinite(scale) || !isfinite(beta))
		return starnn_error(STARNN_EINVAL, "mse_fwd: scale and beta must be finite, got %g and %g", (double)scale,
		                    (double)beta);
	struct mse_args a = {scale, beta};
	struct starnn_task_desc desc = {.cl = pred->dtype == STARNN_FP16 ? &mse_fwd_fp16_cl : &mse_fwd_bf16_cl,
	                                .args = &a,
	                                .args_size = sizeof a,
	                                .flops = MSE_FWD_FLOPS(pred),
	                                .tensors = {pred, target, loss}};
	return starnn_submit(&desc);
}

int starnn_mse_bwd_mp(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *dpred, float scale,
                      starnn_tensor *state)
{
	char d[128], dp[128];
	if (pred && pred->dtype == STARNN_FP32 && !state)
		return starnn_mse_bwd(pred, target, dpred, scale);
	STARNN_CHECK(check_pred("mse_bwd", pred, target));
	if (!dpred || dpred->dtype != pred->dtype || dpred->rows != pred->rows || dpred->cols != pred->cols)
		return starnn_error(STARNN_EINVAL, "mse_bwd: dpred must have pred's dtype and shape (%s), got %s",
		                    starnn_tensor_describe(pred, dp, sizeof dp),
		                    dpred ? starnn_tensor_describe(dpred, d, sizeof d) : "NULL");
	STARNN_CHECK(starnn_check_layouts("mse_bwd", "pred", pred, "dpred", dpred));
	if (dpred == pred || dpred == target || (state && (state == pred || state == target || state == dpred)))
		return starnn_error(STARNN_EINVAL, "mse_bwd: the gradient %s is also an input",
		                    starnn_tensor_describe(dpred, d, sizeof d));
	if (state && (state->dtype != STARNN_FP32 || state->rows != 1 || state->cols != STARNN_AMP_STATE_LEN))
		return starnn_error(STARNN_EINVAL, "mse_bwd: the loss-scale state must be one fp32 row of %d, got %s",
		                    STARNN_AMP_STATE_LEN, starnn_tensor_describe(state, d, sizeof d));
	if (!isfinite(scale))
		return starnn_error(STARNN_EINVAL, "mse_bwd: scale must be finite, got %g", (double)scale);
	struct starpu_codelet *cl;
	if (state)
		cl = pred->dtype == STARNN_FP32   ? &mse_bwd_scaled_fp32_cl
		     : pred->dtype == STARNN_FP16 ? &mse_bwd_scaled_fp16_cl
		                                  : &mse_bwd_scaled_bf16_cl;
	else
		cl = pred->dtype == STARNN_FP16 ? &mse_bwd_fp16_cl : &mse_bwd_bf16_cl;
	struct mse_args a = {scale, 0.0f};
	struct starnn_task_desc desc = {
		.cl = cl, .args = &a, .args_size = sizeof a, .flops = MSE_BWD_FLOPS(pred),
		.tensors = {pred, target, dpred, state}};
	return starnn_submit(&desc);
}
