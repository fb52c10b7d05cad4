/* OpenCL launchers of fill (codelets/kernels/fill.h; the kernels:
 * codelets/opencl/fill.cl). The fp32 value goes as its bits. */
#include <string.h>

#include "codelets/opencl/common.h"
#include "codelets/kernels/fill.h"

cl_int starnn_fill_f32_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float value, cl_mem y,
                              size_t y_off, size_t ldy)
{
	cl_uint bits;
	memcpy(&bits, &value, sizeof bits);
	const cl_ulong c = cols, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "fill_32", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(bits), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_fill_16_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, uint16_t bits, cl_mem y,
                             size_t y_off, size_t ldy)
{
	const cl_ushort b = bits;
	const cl_ulong c = cols, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "fill_16", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(b), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}
