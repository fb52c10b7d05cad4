/* The StarPU side of the OpenCL backend (docs/opencl.md), beside
 * codelet.h's CUDA helpers: what a codelet's OpenCL function needs (its
 * buffers as cl_mem views, the running worker's context of a program,
 * errors of a launch), the codelet fields, the build of a program for a
 * device, and the start-up check of the workers asked for. Included by
 * runtime/core/codelet.h. Without OpenCL in the build
 * (runtime/base/features.h), STARNN_OPENCL_FUNCS is empty and only the
 * start-up check and shutdown remain.
 *
 * A codelet's OpenCL function (codelets/axpy.c):
 *
 *   #ifdef STARNN_USE_OPENCL
 *   static void axpy_opencl(void *buffers[], void *cl_arg)
 *   {
 *       const struct alpha_beta *a = cl_arg;
 *       struct starnn_clmat x = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);
 *       struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(axpy);  // NULL: no program (error deferred)
 *       if (ctx)
 *           STARNN_OPENCL_LAUNCHED(ctx, "axpy", starnn_axpy_opencl(ctx, y.rows, y.cols, a->alpha,
 *                                  x.mem, x.off, x.ld, y.mem, y.off, y.ld));
 *   }
 *   #endif
 *   ... struct starpu_codelet starnn_axpy_cl = { ..., STARNN_OPENCL_FUNCS(axpy_opencl) ... };
 */
#ifndef STARNN_CORE_OPENCL_H
#define STARNN_CORE_OPENCL_H

#include <starpu.h>

#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef STARNN_USE_OPENCL
/* A task buffer on an OpenCL memory node: rows x cols elements, rows ld
 * apart, from element off of the buffer mem (a partition's view keeps its
 * parent's cl_mem and an offset: STARPU_MATRIX_GET_PTR means nothing
 * there). */
struct starnn_clmat {
	cl_mem mem;
	size_t off; /* in elements */
	size_t rows, cols, ld;
};

static inline struct starnn_clmat starnn_cl_buffer(void *buffers[], int i)
{
	struct starnn_clmat m;
	size_t es = STARPU_MATRIX_GET_ELEMSIZE(buffers[i]);
	m.mem = (cl_mem)STARPU_MATRIX_GET_DEV_HANDLE(buffers[i]);
	m.off = STARPU_MATRIX_GET_OFFSET(buffers[i]) / (es ? es : 1);
	m.cols = STARPU_MATRIX_GET_NX(buffers[i]);
	m.rows = STARPU_MATRIX_GET_NY(buffers[i]);
	m.ld = STARPU_MATRIX_GET_LD(buffers[i]);
	return m;
}

/* In a codelet's OpenCL function: the running worker's context for program
 * p (codelets/kernels/<op>.h declares starnn_opencl_program_<op>): the
 * program built for the worker's device at its first use there, its
 * kernels created once for this worker, both kept until starnn_shutdown.
 * NULL when the program does not build (or its kernels cannot be made):
 * the error, with the compiler's log, is deferred (STARNN_EOPENCL; the
 * next starnn_wait returns it) and the task does nothing. */
struct starnn_opencl_ctx *starnn_opencl_ctx(const struct starnn_opencl_program *p);
#define STARNN_OPENCL_CTX(name) starnn_opencl_ctx(&starnn_opencl_program_##name)

/* After a launcher returned err: a deferred STARNN_EOPENCL naming op, the
 * kernel, the call that failed (ctx->failed_*) and the error, at file:line
 * (the codelet). Nothing when err is CL_SUCCESS. */
void starnn_opencl_launched(struct starnn_opencl_ctx *ctx, const char *op, cl_int err, const char *file, int line);
#define STARNN_OPENCL_LAUNCHED(ctx, op, call) starnn_opencl_launched((ctx), (op), (call), __FILE__, __LINE__)

/* Builds source as program `name` for StarPU's OpenCL device devid (a
 * worker's starpu_worker_get_devid) with the backend's options
 * (runtime/base/opencl.h): 0 and *out, or STARNN_EOPENCL with a message
 * that names the program, the device and the options and holds the
 * compiler's log. What starnn_opencl_ctx does at a program's first use,
 * open for tests (a broken source) and tools. Any thread. */
int starnn_opencl_build(const char *name, const char *source, int devid, cl_program *out);
/* The options a program gets on device devid (into buf, size bytes). */
const char *starnn_opencl_options(int devid, char *buf, size_t size);

/* The fields of a struct starpu_codelet initialiser for OpenCL function
 * fn: asynchronous (it enqueues on the worker's queue; StarPU waits with a
 * marker). Empty in builds without OpenCL. */
#define STARNN_OPENCL_FUNCS(fn) .opencl_funcs = {fn}, .opencl_flags = {STARPU_OPENCL_ASYNC},
#else
#define STARNN_OPENCL_FUNCS(fn)
#endif

/* Called by starnn_init once StarPU runs: STARNN_ENODEV with a message
 * when STARPU_NOPENCL asks for more OpenCL workers than StarPU started
 * (no device, POCL's CPU devices without STARPU_OPENCL_ON_CPUS=1) or this
 * starnn was built without OpenCL; 0 otherwise (STARPU_NOPENCL unset, 0
 * or -1: StarPU's choice). */
int starnn_opencl_check_workers(void);
/* Called by starnn_shutdown once every task is done: releases the
 * programs and kernels. */
void starnn_opencl_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif
