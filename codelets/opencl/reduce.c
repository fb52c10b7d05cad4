/* OpenCL launchers of sum / sumsq (codelets/kernels/reduce.h; the kernels:
 * codelets/opencl/reduce.cl): one work-item, the CPU kernel's order. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/reduce.h"

static cl_int run(struct starnn_opencl_ctx *ctx, const char *kernel, size_t rows, size_t cols, cl_mem x, size_t x_off,
                  size_t ldx, float beta, cl_mem out, size_t out_off)
{
	const cl_ulong r = rows, c = cols, xo = x_off, lx = ldx, oo = out_off;
	/* a 1 x 1 grid (work-item 0 computes; the others of its group return):
	 * out is written even for an empty x, as on the CPU */
	return STARNN_CL_RUN_2D(ctx, kernel, 1, 1, STARNN_CL_ARG(r), STARNN_CL_ARG(c), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(beta), STARNN_CL_ARG(out),
	                        STARNN_CL_ARG(oo));
}

cl_int starnn_sum_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off, size_t ldx,
                         float beta, cl_mem out, size_t out_off)
{
	return run(ctx, "sum", rows, cols, x, x_off, ldx, beta, out, out_off);
}

cl_int starnn_sumsq_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off,
                           size_t ldx, float beta, cl_mem out, size_t out_off)
{
	return run(ctx, "sumsq", rows, cols, x, x_off, ldx, beta, out, out_off);
}
