/* OpenCL launcher of copy (codelets/kernels/copy.h; the kernels:
 * codelets/opencl/copy.cl): 4- and 2-byte elements. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/copy.h"

cl_int starnn_copy_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, size_t elem_size, cl_mem x,
                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
	const char *kernel = elem_size == 4 ? "copy_32" : elem_size == 2 ? "copy_16" : NULL;
	if (!kernel) {
		ctx->failed_call = "the launcher (elements of 4 or 2 bytes)";
		ctx->failed_kernel = "copy";
		ctx->failed_arg = -1;
		return CL_INVALID_VALUE;
	}
	return STARNN_CL_RUN_2D(ctx, kernel, rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(x), STARNN_CL_ARG(xo),
	                        STARNN_CL_ARG(lx), STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}
