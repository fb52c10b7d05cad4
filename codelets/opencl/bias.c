/* OpenCL launchers of bias_add / bias_grad (codelets/kernels/bias.h; the
 * kernels: codelets/opencl/bias.cl). bias_add: one work-item per element
 * of y; bias_grad: one per channel. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/bias.h"

static cl_int add(struct starnn_opencl_ctx *ctx, const char *kernel, size_t n, size_t channels, size_t inner, cl_mem b,
                  size_t b_off, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ulong cols = channels * inner, in = inner, bo = b_off, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, kernel, n, channels * inner, STARNN_CL_ARG(cols), STARNN_CL_ARG(in),
	                        STARNN_CL_ARG(b), STARNN_CL_ARG(bo), STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

static cl_int grad(struct starnn_opencl_ctx *ctx, const char *kernel, size_t n, size_t channels, size_t inner,
                   cl_mem dy, size_t dy_off, size_t lddy, float beta, cl_mem db, size_t db_off)
{
	const cl_ulong ch = channels, rows = n, in = inner, dyo = dy_off, ld = lddy, dbo = db_off;
	return STARNN_CL_RUN_2D(ctx, kernel, 1, channels, STARNN_CL_ARG(ch), STARNN_CL_ARG(rows), STARNN_CL_ARG(in),
	                        STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(ld), STARNN_CL_ARG(beta),
	                        STARNN_CL_ARG(db), STARNN_CL_ARG(dbo));
}

cl_int starnn_bias_add_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t channels, size_t inner, cl_mem b,
                              size_t b_off, cl_mem y, size_t y_off, size_t ldy)
{
	return add(ctx, "bias_add", n, channels, inner, b, b_off, y, y_off, ldy);
}

cl_int starnn_bias_grad_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t channels, size_t inner, cl_mem dy,
                               size_t dy_off, size_t lddy, float beta, cl_mem db, size_t db_off)
{
	return grad(ctx, "bias_grad", n, channels, inner, dy, dy_off, lddy, beta, db, db_off);
}

cl_int starnn_bias_add_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t channels,
                                   size_t inner, cl_mem b, size_t b_off, cl_mem y, size_t y_off, size_t ldy)
{
	return add(ctx, dt == STARNN_FP16 ? "bias_add_fp16" : "bias_add_bf16", n, channels, inner, b, b_off, y, y_off,
	           ldy);
}

cl_int starnn_bias_grad_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t channels,
                                    size_t inner, cl_mem dy, size_t dy_off, size_t lddy, float beta, cl_mem db,
                                    size_t db_off)
{
	return grad(ctx, dt == STARNN_FP16 ? "bias_grad_fp16" : "bias_grad_bf16", n, channels, inner, dy, dy_off, lddy,
	            beta, db, db_off);
}
