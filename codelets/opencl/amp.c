/* OpenCL launchers of amp (codelets/kernels/amp.h; the kernels:
 * codelets/opencl/amp.cl). */
#include "codelets/opencl/common.h"
#include "codelets/kernels/amp.h"

cl_int starnn_amp_nonfinite_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dtype, size_t rows, size_t cols,
                                   cl_mem x, size_t x_off, size_t ld, cl_mem flag, size_t flag_off)
{
	const cl_ulong c = cols, xo = x_off, l = ld, fo = flag_off;
	if (dtype == STARNN_FP32)
		return STARNN_CL_RUN_2D(ctx, "nonfinite_32", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(x),
		                        STARNN_CL_ARG(xo), STARNN_CL_ARG(l), STARNN_CL_ARG(flag), STARNN_CL_ARG(fo));
	const cl_ushort mask = dtype == STARNN_FP16 ? 0x7c00u : 0x7f80u;
	return STARNN_CL_RUN_2D(ctx, "nonfinite_16", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(mask), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(l), STARNN_CL_ARG(flag), STARNN_CL_ARG(fo));
}

cl_int starnn_amp_scale_update_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_amp_policy *p, cl_mem state,
                                      size_t state_off, cl_mem flag, size_t flag_off)
{
	const cl_int dynamic = p->dynamic != 0, gi = p->growth_interval;
	float growth = p->growth, backoff = p->backoff, min_scale = p->min_scale, max_scale = p->max_scale;
	const cl_ulong so = state_off, fo = flag_off;
	return STARNN_CL_RUN_2D(ctx, "scale_update", 1, 1, STARNN_CL_ARG(dynamic), STARNN_CL_ARG(gi),
	                        STARNN_CL_ARG(growth), STARNN_CL_ARG(backoff), STARNN_CL_ARG(min_scale),
	                        STARNN_CL_ARG(max_scale), STARNN_CL_ARG(state), STARNN_CL_ARG(so), STARNN_CL_ARG(flag),
	                        STARNN_CL_ARG(fo));
}
