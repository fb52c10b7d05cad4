/* OpenCL launchers of maxpool (codelets/kernels/maxpool.h; the kernels:
 * codelets/opencl/maxpool.cl), NCHW, fp32, fp16 and bf16: the forward one
 * work-item per element of y, the backward one per element of dx. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/maxpool.h"

static const char *kernel_name(int bwd, starnn_dtype dt)
{
	static const char *const names[2][3] = {{"maxpool_fwd_fp32", "maxpool_fwd_fp16", "maxpool_fwd_bf16"},
	                                        {"maxpool_bwd_fp32", "maxpool_bwd_fp16", "maxpool_bwd_bf16"}};
	return names[bwd][dt == STARNN_FP16 ? 1 : dt == STARNN_BF16 ? 2 : 0];
}

cl_int starnn_maxpool_fwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t h,
                                 size_t w, cl_mem x, size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ulong cc = c, hh = h, ww = w, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, kernel_name(0, dt), n, c * (h / 2) * (w / 2), STARNN_CL_ARG(cc), STARNN_CL_ARG(hh),
	                        STARNN_CL_ARG(ww), STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx),
	                        STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_maxpool_bwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t h,
                                 size_t w, cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy,
                                 float beta, cl_mem dx, size_t dx_off, size_t lddx)
{
	const cl_ulong cc = c, hh = h, ww = w, xo = x_off, lx = ldx, dyo = dy_off, ldy = lddy, dxo = dx_off, ldx2 = lddx;
	return STARNN_CL_RUN_2D(ctx, kernel_name(1, dt), n, c * h * w, STARNN_CL_ARG(cc), STARNN_CL_ARG(hh),
	                        STARNN_CL_ARG(ww), STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx),
	                        STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(ldy), STARNN_CL_ARG(beta),
	                        STARNN_CL_ARG(dx), STARNN_CL_ARG(dxo), STARNN_CL_ARG(ldx2));
}
