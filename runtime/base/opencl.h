/* The OpenCL backend's plain-C pieces (no StarPU; docs/opencl.md): what an
 * embedded program is, the context an OpenCL launcher gets, the build
 * options, the names of OpenCL's error codes. Included by the kernel
 * headers (codelets/kernels/<op>.h, under #ifdef STARNN_USE_OPENCL), the
 * launchers (codelets/opencl/<op>.c), the generated program files and
 * runtime/core/opencl.c, which fills the context.
 *
 * A launcher's life: the codelet's OpenCL function (codelets/<op>.c) asks
 * runtime/core/opencl.h for the running worker's context of its program
 * (built for the worker's device at its first use, its kernels created
 * once per worker) and calls the launcher, which sets the arguments of
 * one of the program's kernels and enqueues it on ctx->queue (StarPU's
 * in-order queue of that device; the codelet is STARPU_OPENCL_ASYNC, so
 * StarPU waits for it with a marker). */
#ifndef STARNN_BASE_OPENCL_H
#define STARNN_BASE_OPENCL_H

/* The OpenCL 1.2 API (StarPU's starpu_opencl.h asks for 1.0 when nothing
 * was asked before it; either gives every type used here). */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A program: codelets/opencl/common.cl then codelets/opencl/<name>.cl,
 * embedded in libstarnn at build time (build-aux/cl2c writes
 * starnn_opencl_program_<name>, declared in codelets/kernels/<name>.h),
 * so that an installed library needs no source path. */
struct starnn_opencl_program {
	const char *name;   /* "axpy": the .cl file's base name */
	const char *source; /* the program's text, #line markers naming its files */
};

/* What a launcher gets: the running worker's queue and the kernels of its
 * operation's program, created for this worker (a cl_kernel's arguments
 * are per object, so each worker has its own). runtime/core/opencl.c
 * owns it; the launchers read it and, on failure, say where in the
 * failed_* fields (the codelet turns them into a deferred error). */
struct starnn_opencl_ctx {
	cl_command_queue queue; /* StarPU's computation queue of the worker's device (in order) */
	cl_device_id device;
	const char *program;     /* its name, for messages */
	unsigned nkernels;
	const char *const *names; /* the program's kernels, by name ... */
	const cl_kernel *kernels; /* ... and this worker's objects of them */
	/* set by the launch helpers (codelets/opencl/common.h) on failure */
	const char *failed_call;   /* "clSetKernelArg", "clEnqueueNDRangeKernel", ... */
	const char *failed_kernel; /* the kernel's name */
	int failed_arg;            /* the argument's index (clSetKernelArg), else -1 */
};

/* The build options of every program, fixed (docs/opencl.md): OpenCL C
 * 1.2; no -cl-fast-relaxed-math, -cl-mad-enable or -cl-denorms-are-zero
 * (the programs also say #pragma OPENCL FP_CONTRACT OFF: a * b + c is two
 * roundings, as in the CPU kernels). STARNN_OPENCL_OPTION_DIVSQRT is
 * added where the device has CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT in its
 * CL_DEVICE_SINGLE_FP_CONFIG: fp32 division and sqrt correctly rounded, as
 * on the CPU (OpenCL allows 2.5 and 3 ulp otherwise). */
#define STARNN_OPENCL_OPTIONS "-cl-std=CL1.2"
#define STARNN_OPENCL_OPTION_DIVSQRT "-cl-fp32-correctly-rounded-divide-sqrt"
#ifndef CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT /* (OpenCL 1.2's; some headers hide it below 1.2) */
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#endif

/* "CL_INVALID_ARG_SIZE" for -51 ...; "OpenCL error <code>" for a code it
 * does not know (runtime/base/opencl.c). */
const char *starnn_cl_error_name(cl_int err);

#ifdef __cplusplus
}
#endif
#endif
