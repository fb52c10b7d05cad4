/* OpenCL launchers of relu_fwd / relu_bwd (codelets/kernels/relu.h; the
 * kernels: codelets/opencl/relu.cl). */
#include "codelets/opencl/common.h"
#include "codelets/kernels/relu.h"

cl_int starnn_relu_fwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off,
                              size_t ldx, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "relu_fwd", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(x), STARNN_CL_ARG(xo),
	                        STARNN_CL_ARG(lx), STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_relu_bwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off,
                              size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem dx, size_t dx_off, size_t lddx)
{
	const cl_ulong c = cols, xo = x_off, lx = ldx, dyo = dy_off, l_dy = lddy, dxo = dx_off, l_dx = lddx;
	return STARNN_CL_RUN_2D(ctx, "relu_bwd", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(x), STARNN_CL_ARG(xo),
	                        STARNN_CL_ARG(lx), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(l_dy),
	                        STARNN_CL_ARG(dx), STARNN_CL_ARG(dxo), STARNN_CL_ARG(l_dx));
}

/* The Inf pattern of dt (fp16 or bf16) without its sign. */
static cl_ushort inf_bits(starnn_dtype dt)
{
	return dt == STARNN_FP16 ? 0x7c00u : 0x7f80u;
}

cl_int starnn_relu_fwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols, cl_mem x,
                                   size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ushort inf = inf_bits(dt);
	const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "relu_fwd_16", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(inf), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_relu_bwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols, cl_mem x,
                                   size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem dx,
                                   size_t dx_off, size_t lddx)
{
	const cl_ushort inf = inf_bits(dt);
	const cl_ulong c = cols, xo = x_off, lx = ldx, dyo = dy_off, l_dy = lddy, dxo = dx_off, l_dx = lddx;
	return STARNN_CL_RUN_2D(ctx, "relu_bwd_16", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(inf), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo),
	                        STARNN_CL_ARG(l_dy), STARNN_CL_ARG(dx), STARNN_CL_ARG(dxo), STARNN_CL_ARG(l_dx));
}
