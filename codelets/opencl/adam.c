/* OpenCL launchers of the Adam / AdamW update (codelets/kernels/adam.h;
 * the kernels: codelets/opencl/adam.cl).
 *
 * The _amp launchers read the overflow flag and the loss-scale state from
 * the device first (a blocking read on the worker's in-order queue, so
 * after the tasks that wrote them) and compute the step's scalars on the
 * host with starnn_adam_step_init, as the CPU kernel does: the bias
 * corrections need pow in double, and an OpenCL device's pow is not
 * glibc's (nor is every device's double precision there), so computing
 * them on the device would not give the CPU's bits. The read stalls the
 * worker for the tasks queued before; speed on OpenCL is not the goal
 * (docs/opencl.md). */
#include "codelets/opencl/common.h"
#include "codelets/kernels/adam.h"

/* kernel "adam" (h NULL) or "adam_cast_<hdt>" (h: hdt's cl_mem) with the step s. */
static cl_int run(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, const struct starnn_adam_step *s,
                  cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off, size_t ldg, cl_mem m, size_t m_off,
                  size_t ldm, cl_mem v, size_t v_off, size_t ldv, starnn_dtype hdt, cl_mem h, size_t h_off, size_t ldh)
{
	float b1 = s->p.beta1, b2 = s->p.beta2, eps = s->p.eps, gs = s->grad_scale;
	float l2 = s->p.decoupled ? 0.0f : s->p.weight_decay, decay = s->decay;
	float step_size = s->step_size, bc2_sqrt = s->bc2_sqrt;
	const cl_ulong c = cols, wo = w_off, lw = ldw, go = g_off, lg = ldg, mo = m_off, lm = ldm, vo = v_off, lv = ldv,
	               ho = h_off, lh = ldh;
#define ADAM_ARGS                                                                                             \
	STARNN_CL_ARG(c), STARNN_CL_ARG(b1), STARNN_CL_ARG(b2), STARNN_CL_ARG(eps), STARNN_CL_ARG(gs),            \
		STARNN_CL_ARG(l2), STARNN_CL_ARG(decay), STARNN_CL_ARG(step_size), STARNN_CL_ARG(bc2_sqrt),          \
		STARNN_CL_ARG(w), STARNN_CL_ARG(wo), STARNN_CL_ARG(lw), STARNN_CL_ARG(grad), STARNN_CL_ARG(go),      \
		STARNN_CL_ARG(lg), STARNN_CL_ARG(m), STARNN_CL_ARG(mo), STARNN_CL_ARG(lm), STARNN_CL_ARG(v),         \
		STARNN_CL_ARG(vo), STARNN_CL_ARG(lv)
	if (!h)
		return STARNN_CL_RUN_2D(ctx, "adam", rows, cols, ADAM_ARGS);
	return STARNN_CL_RUN_2D(ctx, hdt == STARNN_BF16 ? "adam_cast_bf16" : "adam_cast_fp16", rows, cols, ADAM_ARGS,
	                        STARNN_CL_ARG(h), STARNN_CL_ARG(ho), STARNN_CL_ARG(lh));
#undef ADAM_ARGS
}

/* The step of an _amp update from the device's state and flag: 1 and *s
 * (t = state[3] + 1, grad_scale = 1 / state[0], as starnn_adam_amp_cpu),
 * 0 when the flag skips the step, or the OpenCL error of the read. */
static cl_int amp_step(struct starnn_opencl_ctx *ctx, const char *kernel, const struct starnn_adam_params *p,
                       cl_mem state, size_t state_off, cl_mem flag, size_t flag_off, struct starnn_adam_step *s,
                       int *apply)
{
	float st[4], fl;
	cl_int err = clEnqueueReadBuffer(ctx->queue, flag, CL_TRUE, flag_off * sizeof fl, sizeof fl, &fl, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clEnqueueReadBuffer(ctx->queue, state, CL_TRUE, state_off * sizeof fl, sizeof st, st, 0, NULL, NULL);
	if (err != CL_SUCCESS) {
		ctx->failed_call = "clEnqueueReadBuffer (the loss-scale state)";
		ctx->failed_kernel = kernel;
		ctx->failed_arg = -1;
		return err;
	}
	*apply = fl == 0.0f;
	if (*apply)
		starnn_adam_step_init(s, p, (int64_t)st[3] + 1, 1.0f / st[0]);
	return CL_SUCCESS;
}

cl_int starnn_adam_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, const struct starnn_adam_step *s,
                          cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off, size_t ldg, cl_mem m,
                          size_t m_off, size_t ldm, cl_mem v, size_t v_off, size_t ldv)
{
	return run(ctx, rows, cols, s, w, w_off, ldw, grad, g_off, ldg, m, m_off, ldm, v, v_off, ldv, STARNN_FP32, NULL,
	           0, 0);
}

cl_int starnn_adam_amp_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                              const struct starnn_adam_params *p, cl_mem state, size_t state_off, cl_mem flag,
                              size_t flag_off, cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off,
                              size_t ldg, cl_mem m, size_t m_off, size_t ldm, cl_mem v, size_t v_off, size_t ldv)
{
	struct starnn_adam_step s;
	int apply = 0;
	cl_int err = amp_step(ctx, "adam", p, state, state_off, flag, flag_off, &s, &apply);
	if (err != CL_SUCCESS || !apply)
		return err;
	return run(ctx, rows, cols, &s, w, w_off, ldw, grad, g_off, ldg, m, m_off, ldm, v, v_off, ldv, STARNN_FP32, NULL,
	           0, 0);
}

cl_int starnn_adam_cast_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                               const struct starnn_adam_step *s, cl_mem w, size_t w_off, size_t ldw, cl_mem grad,
                               size_t g_off, size_t ldg, cl_mem m, size_t m_off, size_t ldm, cl_mem v, size_t v_off,
                               size_t ldv, starnn_dtype hdt, cl_mem h, size_t h_off, size_t ldh)
{
	return run(ctx, rows, cols, s, w, w_off, ldw, grad, g_off, ldg, m, m_off, ldm, v, v_off, ldv, hdt, h, h_off, ldh);
}

cl_int starnn_adam_amp_cast_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                                   const struct starnn_adam_params *p, cl_mem state, size_t state_off, cl_mem flag,
                                   size_t flag_off, cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off,
                                   size_t ldg, cl_mem m, size_t m_off, size_t ldm, cl_mem v, size_t v_off, size_t ldv,
                                   starnn_dtype hdt, cl_mem h, size_t h_off, size_t ldh)
{
	struct starnn_adam_step s;
	int apply = 0;
	cl_int err = amp_step(ctx, hdt == STARNN_BF16 ? "adam_cast_bf16" : "adam_cast_fp16", p, state, state_off, flag,
	                      flag_off, &s, &apply);
	if (err != CL_SUCCESS || !apply)
		return err; /* skipped: w unchanged, and h with it (as on the CPU) */
	return run(ctx, rows, cols, &s, w, w_off, ldw, grad, g_off, ldg, m, m_off, ldm, v, v_off, ldv, hdt, h, h_off, ldh);
}
