/* OpenCL launchers of mse_fwd / mse_bwd (codelets/kernels/mse.h; the
 * kernels: codelets/opencl/mse.cl). The forward is one work-item (the CPU
 * kernel's summation order); the backward one per element. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/mse.h"

static const char *fwd_kernel(starnn_dtype dt)
{
	return dt == STARNN_FP16 ? "mse_fwd_fp16" : dt == STARNN_BF16 ? "mse_fwd_bf16" : "mse_fwd_fp32";
}

cl_int starnn_mse_fwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols,
                                  cl_mem pred, size_t p_off, size_t ldp, cl_mem target, size_t t_off, size_t ldt,
                                  float scale, float beta, cl_mem loss, size_t loss_off)
{
	const cl_ulong r = rows, c = cols, po = p_off, lp = ldp, to = t_off, lt = ldt, lo = loss_off;
	/* one work-item, also for an empty pred (the loss is still written) */
	return STARNN_CL_RUN_2D(ctx, fwd_kernel(dt), 1, 1, STARNN_CL_ARG(r), STARNN_CL_ARG(c), STARNN_CL_ARG(pred),
	                        STARNN_CL_ARG(po), STARNN_CL_ARG(lp), STARNN_CL_ARG(target), STARNN_CL_ARG(to),
	                        STARNN_CL_ARG(lt), STARNN_CL_ARG(scale), STARNN_CL_ARG(beta), STARNN_CL_ARG(loss),
	                        STARNN_CL_ARG(lo));
}

cl_int starnn_mse_fwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem pred, size_t p_off,
                             size_t ldp, cl_mem target, size_t t_off, size_t ldt, float scale, float beta, cl_mem loss,
                             size_t loss_off)
{
	return starnn_mse_fwd_half_opencl(ctx, STARNN_FP32, rows, cols, pred, p_off, ldp, target, t_off, ldt, scale, beta,
	                                  loss, loss_off);
}

cl_int starnn_mse_bwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem pred, size_t p_off,
                             size_t ldp, cl_mem target, size_t t_off, size_t ldt, float scale, cl_mem dpred,
                             size_t d_off, size_t ldd)
{
	float k = 2.0f * scale;
	const cl_ulong c = cols, po = p_off, lp = ldp, to = t_off, lt = ldt, dof = d_off, ld = ldd;
	return STARNN_CL_RUN_2D(ctx, "mse_bwd_fp32", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(k), STARNN_CL_ARG(pred),
	                        STARNN_CL_ARG(po), STARNN_CL_ARG(lp), STARNN_CL_ARG(target), STARNN_CL_ARG(to),
	                        STARNN_CL_ARG(lt), STARNN_CL_ARG(dpred), STARNN_CL_ARG(dof), STARNN_CL_ARG(ld));
}

cl_int starnn_mse_bwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols,
                                  cl_mem pred, size_t p_off, size_t ldp, cl_mem target, size_t t_off, size_t ldt,
                                  float scale, cl_mem state, size_t state_off, cl_mem dpred, size_t d_off, size_t ldd)
{
	float k = 2.0f * scale;
	const cl_int has_state = state != NULL;
	const cl_ulong c = cols, po = p_off, lp = ldp, to = t_off, lt = ldt, so = state_off, dof = d_off, ld = ldd;
	const char *name = dt == STARNN_FP16   ? "mse_bwd_half_fp16"
	                   : dt == STARNN_BF16 ? "mse_bwd_half_bf16"
	                                       : "mse_bwd_half_fp32";
	return STARNN_CL_RUN_2D(ctx, name, rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(k), STARNN_CL_ARG(pred),
	                        STARNN_CL_ARG(po), STARNN_CL_ARG(lp), STARNN_CL_ARG(target), STARNN_CL_ARG(to),
	                        STARNN_CL_ARG(lt), STARNN_CL_ARG(has_state), STARNN_CL_ARG(state), STARNN_CL_ARG(so),
	                        STARNN_CL_ARG(dpred), STARNN_CL_ARG(dof), STARNN_CL_ARG(ld));
}
