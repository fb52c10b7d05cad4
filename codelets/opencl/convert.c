/* OpenCL launchers of convert (codelets/kernels/convert.h; the kernels:
 * codelets/opencl/convert.cl): one per ordered pair, one signature. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/convert.h"

static cl_int run(struct starnn_opencl_ctx *ctx, const char *kernel, size_t rows, size_t cols, cl_mem x,
                  size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, kernel, rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(x), STARNN_CL_ARG(xo),
	                        STARNN_CL_ARG(lx), STARNN_CL_ARG(y), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

#define CONVERT_OPENCL(src, dst)                                                                                \
	cl_int starnn_convert_##src##_to_##dst##_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, \
	                                                 cl_mem x, size_t x_off, size_t ldx, cl_mem y, size_t y_off,   \
	                                                 size_t ldy)                                                   \
	{                                                                                                          \
		return run(ctx, "convert_" #src "_to_" #dst, rows, cols, x, x_off, ldx, y, y_off, ldy);               \
	}

CONVERT_OPENCL(fp32, fp16)
CONVERT_OPENCL(fp32, bf16)
CONVERT_OPENCL(fp16, fp32)
CONVERT_OPENCL(bf16, fp32)
CONVERT_OPENCL(fp16, bf16)
CONVERT_OPENCL(bf16, fp16)
