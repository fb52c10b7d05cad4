/* Helpers of the OpenCL launchers (codelets/opencl/<op>.c): find a kernel
 * of the context's program, set its arguments and enqueue it over a 2-D
 * grid, saying what failed. Pure, like every kernel file: OpenCL and
 * runtime/base only, no StarPU (docs/opencl.md).
 *
 * A launcher:
 *
 *   cl_int starnn_axpy_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha,
 *                             cl_mem x, size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy)
 *   {
 *       const cl_ulong c = cols, xo = x_off, lx = ldx, yo = y_off, ly = ldy;
 *       return STARNN_CL_RUN_2D(ctx, "axpy", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(alpha),
 *                               STARNN_CL_ARG(x), STARNN_CL_ARG(xo), ...);
 *   }
 *
 * Each argument is an lvalue of exactly the kernel parameter's size:
 * cl_ulong for ulong (sizes, offsets and leading dimensions, in elements:
 * OpenCL C has no size_t parameters), cl_uint, cl_float (float), cl_mem
 * for global pointers. A wrong size is CL_INVALID_ARG_SIZE at the launch,
 * which the tests see. */
#ifndef STARNN_OPENCL_COMMON_H
#define STARNN_OPENCL_COMMON_H

#include "runtime/base/opencl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel argument: its size and where its value is. */
struct starnn_cl_arg {
	size_t size;
	const void *value;
};
#define STARNN_CL_ARG(v) {sizeof(v), &(v)}

/* The kernel `name` of ctx's program (this worker's object), or NULL. */
cl_kernel starnn_cl_kernel(const struct starnn_opencl_ctx *ctx, const char *name);

/* Sets the nargs arguments of kernel `name` and enqueues it on ctx->queue
 * over a grid of (cols rounded up to a multiple of 64) x rows work-items
 * (dimension 0 the columns, so that neighbouring work-items touch
 * neighbouring elements; the kernel returns at once past cols), in
 * work-groups of 64 x 1 (the implementation's choice where the device
 * cannot take that). Nothing when rows or cols is 0. Returns CL_SUCCESS,
 * or the error with ctx->failed_* set. */
cl_int starnn_cl_run_2d(struct starnn_opencl_ctx *ctx, const char *name, size_t rows, size_t cols,
                        const struct starnn_cl_arg *args, unsigned nargs);
#define STARNN_CL_RUN_2D(ctx, name, rows, cols, ...)                                                          \
	starnn_cl_run_2d((ctx), (name), (rows), (cols), (const struct starnn_cl_arg[]){__VA_ARGS__},            \
	                 (unsigned)(sizeof((const struct starnn_cl_arg[]){__VA_ARGS__}) / sizeof(struct starnn_cl_arg)))

#ifdef __cplusplus
}
#endif
#endif
