/* OpenCL launchers of axpy / scale / add (codelets/kernels/axpy.h; the
 * kernels: codelets/opencl/axpy.cl). */
#include "codelets/opencl/common.h"
#include "codelets/kernels/axpy.h"

cl_int starnn_axpy_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha, cl_mem x,
                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "axpy", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(alpha), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_scale_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha, cl_mem y,
                           size_t y_off, size_t ldy)
{
	const cl_ulong c = cols, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "scale", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(alpha), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_add_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha, cl_mem x,
                         size_t x_off, size_t ldx, float beta, cl_mem y, size_t y_off, size_t ldy, cl_mem z,
                         size_t z_off, size_t ldz)
{
	const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy, zo = z_off, lz = ldz;
	return STARNN_CL_RUN_2D(ctx, "add", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(alpha), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(beta), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly), STARNN_CL_ARG(z), STARNN_CL_ARG(zo), STARNN_CL_ARG(lz));
}
