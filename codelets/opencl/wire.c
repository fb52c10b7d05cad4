/* OpenCL launchers of wire (codelets/kernels/wire.h; the kernels:
 * codelets/opencl/wire.cl). The block formats take two kernels on the
 * in-order queue: the scales (one work-item per block), then the codes
 * (one per value), which read the scales back from the wire. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/wire.h"

static int is_block(starnn_wire_format f)
{
	return f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8;
}

/* An unknown format: CL_INVALID_VALUE, said like a launch failure. */
static cl_int unknown_format(struct starnn_opencl_ctx *ctx, const char *kernel)
{
	ctx->failed_call = "the wire format (unknown)";
	ctx->failed_kernel = kernel;
	ctx->failed_arg = 0;
	return CL_INVALID_VALUE;
}

cl_int starnn_compress_opencl(struct starnn_opencl_ctx *ctx, starnn_wire_format f, size_t rows, size_t cols,
                              cl_mem x, size_t x_off, size_t ldx, cl_mem wire, size_t wire_off)
{
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return unknown_format(ctx, "wire_compress_values");
	const cl_ulong n = (cl_ulong)rows * cols, c = cols, xo = x_off, lx = ldx, wo = wire_off;
	if (n == 0)
		return CL_SUCCESS;
	if (!is_block(f)) {
		const cl_uint fmt = (cl_uint)f;
		return STARNN_CL_RUN_2D(ctx, "wire_compress_values", rows, cols, STARNN_CL_ARG(fmt), STARNN_CL_ARG(c),
		                        STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(wire),
		                        STARNN_CL_ARG(wo));
	}
	const cl_uint fp8 = f == STARNN_WIRE_FP8;
	const cl_ulong nb = (n + STARNN_WIRE_BLOCK - 1) / STARNN_WIRE_BLOCK;
	cl_int err = STARNN_CL_RUN_2D(ctx, "wire_block_scales", 1, (size_t)nb, STARNN_CL_ARG(fp8), STARNN_CL_ARG(nb),
	                              STARNN_CL_ARG(n), STARNN_CL_ARG(c), STARNN_CL_ARG(x), STARNN_CL_ARG(xo),
	                              STARNN_CL_ARG(lx), STARNN_CL_ARG(wire), STARNN_CL_ARG(wo));
	if (err != CL_SUCCESS)
		return err;
	return STARNN_CL_RUN_2D(ctx, "wire_block_codes", rows, cols, STARNN_CL_ARG(fp8), STARNN_CL_ARG(nb),
	                        STARNN_CL_ARG(c), STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx),
	                        STARNN_CL_ARG(wire), STARNN_CL_ARG(wo));
}

cl_int starnn_decompress_opencl(struct starnn_opencl_ctx *ctx, starnn_wire_format f, size_t rows, size_t cols,
                                cl_mem wire, size_t wire_off, cl_mem y, size_t y_off, size_t ldy)
{
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return unknown_format(ctx, "wire_decompress_values");
	const cl_ulong n = (cl_ulong)rows * cols, c = cols, wo = wire_off, yo = y_off, ly = ldy;
	if (n == 0)
		return CL_SUCCESS;
	if (!is_block(f)) {
		const cl_uint fmt = (cl_uint)f;
		return STARNN_CL_RUN_2D(ctx, "wire_decompress_values", rows, cols, STARNN_CL_ARG(fmt), STARNN_CL_ARG(c),
		                        STARNN_CL_ARG(wire), STARNN_CL_ARG(wo), STARNN_CL_ARG(y), STARNN_CL_ARG(yo),
		                        STARNN_CL_ARG(ly));
	}
	const cl_uint fp8 = f == STARNN_WIRE_FP8;
	const cl_ulong nb = (n + STARNN_WIRE_BLOCK - 1) / STARNN_WIRE_BLOCK;
	return STARNN_CL_RUN_2D(ctx, "wire_block_values", rows, cols, STARNN_CL_ARG(fp8), STARNN_CL_ARG(nb),
	                        STARNN_CL_ARG(c), STARNN_CL_ARG(wire), STARNN_CL_ARG(wo), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}
