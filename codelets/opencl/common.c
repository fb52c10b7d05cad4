/* The OpenCL launchers' helpers (codelets/opencl/common.h). */
#include <string.h>

#include "codelets/opencl/common.h"

cl_kernel starnn_cl_kernel(const struct starnn_opencl_ctx *ctx, const char *name)
{
	for (unsigned i = 0; i < ctx->nkernels; i++)
		if (!strcmp(ctx->names[i], name))
			return ctx->kernels[i];
	return NULL;
}

static cl_int failed(struct starnn_opencl_ctx *ctx, const char *name, const char *call, int arg, cl_int err)
{
	ctx->failed_call = call;
	ctx->failed_kernel = name;
	ctx->failed_arg = arg;
	return err;
}

cl_int starnn_cl_run_2d(struct starnn_opencl_ctx *ctx, const char *name, size_t rows, size_t cols,
                        const struct starnn_cl_arg *args, unsigned nargs)
{
	if (rows == 0 || cols == 0)
		return CL_SUCCESS;
	cl_kernel k = starnn_cl_kernel(ctx, name);
	if (!k)
		return failed(ctx, name, "a kernel of that name in the program", -1, CL_INVALID_KERNEL_NAME);
	for (unsigned i = 0; i < nargs; i++) {
		cl_int err = clSetKernelArg(k, i, args[i].size, args[i].value);
		if (err != CL_SUCCESS)
			return failed(ctx, name, "clSetKernelArg", (int)i, err);
	}
	/* Work-groups of 64 x 1: one shape whatever the grid, so that an
	 * implementation that compiles per work-group size (POCL) compiles a
	 * kernel once; a device that cannot take 64 picks its own. */
	const size_t global[2] = {(cols + 63) / 64 * 64, rows}, local[2] = {64, 1};
	cl_int err = clEnqueueNDRangeKernel(ctx->queue, k, 2, NULL, global, local, 0, NULL, NULL);
	if (err == CL_INVALID_WORK_GROUP_SIZE || err == CL_INVALID_WORK_ITEM_SIZE)
		err = clEnqueueNDRangeKernel(ctx->queue, k, 2, NULL, global, NULL, 0, NULL, NULL);
	if (err != CL_SUCCESS)
		return failed(ctx, name, "clEnqueueNDRangeKernel", -1, err);
	return CL_SUCCESS;
}
