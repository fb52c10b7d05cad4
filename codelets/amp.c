/* StarPU codelets of amp: nonfinite (x R, flag RW) per dtype, and
 * scale_update (state RW, flag R); CPU, CUDA and OpenCL. */
#include <math.h>

#include "codelets/amp.h"
#include "codelets/kernels/amp.h"
#include "runtime/core/codelet.h"

void starnn_amp_policy_default(struct starnn_amp_policy *p)
{
	p->dynamic = 1;
	p->growth_interval = STARNN_AMP_GROWTH_INTERVAL;
	p->growth = 2.0f;
	p->backoff = 0.5f;
	p->min_scale = STARNN_AMP_MIN_SCALE;
	p->max_scale = STARNN_AMP_MAX_SCALE;
}

/* ------------------------------------------------------------- nonfinite */

/* The dtype is the codelet's (one codelet per dtype). */
#ifdef STARNN_USE_CUDA
#define NONFINITE_CUDA(dt, DT)                                                                            \
	static void nonfinite_##dt##_cuda(void *buffers[], void *cl_arg)                                  \
	{                                                                                                 \
		struct starnn_mat x = starnn_buffer(buffers, 0), f = starnn_buffer(buffers, 1);           \
		starnn_amp_nonfinite_cuda(DT, x.rows, x.cols, x.ptr, x.ld, f.ptr, starnn_cuda_stream());  \
		STARNN_CUDA_LAUNCHED("amp_nonfinite");                                                    \
	}
#define NONFINITE_CUDA_FIELDS(dt) .cuda_funcs = {nonfinite_##dt##_cuda}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define NONFINITE_CUDA(dt, DT)
#define NONFINITE_CUDA_FIELDS(dt)
#endif

#ifdef STARNN_USE_OPENCL
#define NONFINITE_OPENCL(dt, DT)                                                                          \
	static void nonfinite_##dt##_opencl(void *buffers[], void *cl_arg)                                \
	{                                                                                                 \
		struct starnn_clmat x = starnn_cl_buffer(buffers, 0), f = starnn_cl_buffer(buffers, 1);   \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(amp);                                   \
		if (ctx)                                                                                  \
			STARNN_OPENCL_LAUNCHED(ctx, "amp_nonfinite",                                      \
			                       starnn_amp_nonfinite_opencl(ctx, DT, x.rows, x.cols, x.mem, x.off, \
			                                                   x.ld, f.mem, f.off));          \
	}
#else
#define NONFINITE_OPENCL(dt, DT)
#endif

#define NONFINITE_CODELET(dt, DT)                                                                         \
	static void nonfinite_##dt##_cpu(void *buffers[], void *cl_arg)                                   \
	{                                                                                                 \
		struct starnn_mat x = starnn_buffer(buffers, 0), f = starnn_buffer(buffers, 1);           \
		if (starnn_amp_nonfinite_cpu(DT, x.rows, x.cols, x.ptr, x.ld))                            \
			*(float *)f.ptr = 1.0f;                                                           \
	}                                                                                                 \
	NONFINITE_CUDA(dt, DT)                                                                            \
	NONFINITE_OPENCL(dt, DT)                                                                          \
	static STARNN_PERFMODEL(amp_nonfinite, dt);                                                       \
	static struct starpu_codelet nonfinite_##dt##_cl = {                                              \
		.name = "amp_nonfinite",                                                                  \
		.cpu_funcs = {nonfinite_##dt##_cpu},                                                      \
		.cpu_funcs_name = {"nonfinite_" #dt "_cpu"},                                              \
		NONFINITE_CUDA_FIELDS(dt)                                                                 \
		STARNN_OPENCL_FUNCS(nonfinite_##dt##_opencl)                                              \
		.nbuffers = 2,                                                                            \
		.modes = {STARPU_R, STARPU_RW},                                                           \
		STARNN_MODELS(amp_nonfinite, dt),                                                         \
	};

NONFINITE_CODELET(fp32, STARNN_FP32)
NONFINITE_CODELET(fp16, STARNN_FP16)
NONFINITE_CODELET(bf16, STARNN_BF16)

static struct starpu_codelet *const nonfinite_cl[STARNN_NDTYPES] = {
	[STARNN_FP32] = &nonfinite_fp32_cl, [STARNN_FP16] = &nonfinite_fp16_cl, [STARNN_BF16] = &nonfinite_bf16_cl};

/* ---------------------------------------------------------- scale_update */

static void scale_update_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat s = starnn_buffer(buffers, 0), f = starnn_buffer(buffers, 1);
	starnn_amp_scale_update_cpu(cl_arg, s.ptr, f.ptr);
}

#ifdef STARNN_USE_CUDA
static void scale_update_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat s = starnn_buffer(buffers, 0), f = starnn_buffer(buffers, 1);
	starnn_amp_scale_update_cuda(cl_arg, s.ptr, f.ptr, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("amp_scale_update");
}
#endif

#ifdef STARNN_USE_OPENCL
static void scale_update_opencl(void *buffers[], void *cl_arg)
{
	struct starnn_clmat s = starnn_cl_buffer(buffers, 0), f = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(amp);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "amp_scale_update",
		                       starnn_amp_scale_update_opencl(ctx, cl_arg, s.mem, s.off, f.mem, f.off));
}
#endif

static STARNN_PERFMODEL(amp_scale_update, fp32);
static struct starpu_codelet scale_update_cl = {
	.name = "amp_scale_update",
	.cpu_funcs = {scale_update_cpu},
	.cpu_funcs_name = {"scale_update_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {scale_update_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(scale_update_opencl)
	.nbuffers = 2,
	.modes = {STARPU_RW, STARPU_R},
	STARNN_MODELS(amp_scale_update, fp32),
};

/* ------------------------------------------------------------ submission */

int starnn_amp_check(const char *op, const starnn_tensor *state, const starnn_tensor *flag)
{
	char d[128];
	if (!state || !flag)
		return starnn_error(STARNN_EINVAL, "%s: the loss-scale state and the overflow flag are required", op);
	if (state->dtype != STARNN_FP32 || state->rows != 1 || state->cols != STARNN_AMP_STATE_LEN)
		return starnn_error(STARNN_EINVAL, "%s: the loss-scale state must be one fp32 row of %d, got %s", op,
		                    STARNN_AMP_STATE_LEN, starnn_tensor_describe(state, d, sizeof d));
	if (flag->dtype != STARNN_FP32 || starnn_tensor_numel(flag) != 1)
		return starnn_error(STARNN_EINVAL, "%s: the overflow flag must be a 1-element fp32 tensor, got %s", op,
		                    starnn_tensor_describe(flag, d, sizeof d));
	if (state == flag)
		return starnn_error(STARNN_EINVAL, "%s: state and flag are the same tensor", op);
	return 0;
}

int starnn_amp_nonfinite(starnn_tensor *x, starnn_tensor *flag)
{
	char d[128];
	if (!x || !flag)
		return starnn_error(STARNN_EINVAL, "amp_nonfinite: NULL tensor (x %p, flag %p)", (void *)x, (void *)flag);
	if ((unsigned)x->dtype >= STARNN_NDTYPES)
		return starnn_error(STARNN_EINVAL, "amp_nonfinite: unknown dtype of '%s'", x->name);
	if (flag->dtype != STARNN_FP32 || starnn_tensor_numel(flag) != 1)
		return starnn_error(STARNN_EINVAL, "amp_nonfinite: the flag must be a 1-element fp32 tensor, got %s",
		                    starnn_tensor_describe(flag, d, sizeof d));
	if (x == flag)
		return starnn_error(STARNN_EINVAL, "amp_nonfinite: x and flag are the same tensor");
	struct starnn_task_desc desc = {.cl = nonfinite_cl[x->dtype], .tensors = {x, flag}};
	return starnn_submit(&desc);
}

int starnn_amp_scale_update(starnn_tensor *state, starnn_tensor *flag, const struct starnn_amp_policy *p)
{
	STARNN_CHECK(starnn_amp_check("amp_scale_update", state, flag));
	if (!p)
		return starnn_error(STARNN_EINVAL, "amp_scale_update: NULL policy");
	if (p->growth_interval < 1 || !(p->growth >= 1.0f) || !(p->backoff > 0.0f && p->backoff <= 1.0f) ||
	    !(p->min_scale > 0.0f) || !(p->max_scale >= p->min_scale) || !isfinite(p->growth) ||
	    !isfinite(p->max_scale))
		return starnn_error(STARNN_EINVAL,
		                    "amp_scale_update: invalid policy (growth interval %d, growth %g, backoff %g, "
		                    "scale bounds [%g, %g])",
		                    p->growth_interval, (double)p->growth, (double)p->backoff, (double)p->min_scale,
		                    (double)p->max_scale);
	struct starnn_amp_policy pol = *p;
	pol.dynamic = p->dynamic != 0;
	struct starnn_task_desc desc = {
		.cl = &scale_update_cl, .args = &pol, .args_size = sizeof pol, .tensors = {state, flag}};
	return starnn_submit(&desc);
}

int starnn_amp_state_init(starnn_tensor *state, float scale)
{
	char d[128];
	if (!state || state->dtype != STARNN_FP32 || state->rows != 1 || state->cols != STARNN_AMP_STATE_LEN)
		return starnn_error(STARNN_EINVAL, "amp_state_init: the state must be one fp32 row of %d, got %s",
		                    STARNN_AMP_STATE_LEN, state ? starnn_tensor_describe(state, d, sizeof d) : "NULL");
	if (!(scale > 0.0f) || !isfinite(scale))
		return starnn_error(STARNN_EINVAL, "amp_state_init: the scale must be positive and finite, got %g",
		                    (double)scale);
	float s[STARNN_AMP_STATE_LEN] = {scale, 0.0f, 0.0f, 0.0f};
	return starnn_tensor_write(state, s);
}

int starnn_amp_state_read(starnn_tensor *state, struct starnn_amp_state *out)
{
	float s[STARNN_AMP_STATE_LEN];
	char d[128];
	if (!state || !out || state->dtype != STARNN_FP32 || state->rows != 1 || state->cols != STARNN_AMP_STATE_LEN)
		return starnn_error(STARNN_EINVAL, "amp_state_read: the state must be one fp32 row of %d, got %s",
		                    STARNN_AMP_STATE_LEN, state ? starnn_tensor_describe(state, d, sizeof d) : "NULL");
	STARNN_CHECK(starnn_tensor_read(state, s));
	out->scale = s[0];
	out->good_steps = (int64_t)s[1];
	out->skipped_steps = (int64_t)s[2];
	out->applied_steps = (int64_t)s[3];
	return 0;
}
