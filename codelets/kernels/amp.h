/* Kernels of amp, dynamic loss scaling (the step it belongs to is spelled
 * out in codelets/amp.h). nonfinite: whether any element of x is Inf or
 * NaN; x is rows x cols, row-major, leading dimension ld, of dtype fp32,
 * fp16 or bf16 (16-bit data as uint16_t patterns). scale_update: the
 * loss-scale state, STARNN_AMP_STATE_LEN floats (scale, good steps, skipped
 * steps, applied steps), after a step whose overflow flag (one float: 0
 * clean, 1 overflow) is given. The CUDA kernels are asynchronous on stream
 * (a cudaStream_t); state and flag are device memory there, and the CUDA
 * nonfinite sets *flag to 1.0f rather than returning. */
#ifndef STARNN_KERNELS_AMP_H
#define STARNN_KERNELS_AMP_H

#include <stddef.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define STARNN_AMP_STATE_LEN 4

struct starnn_amp_policy {
	int dynamic;             /* 0: static scale */
	int growth_interval;     /* clean steps before growing (>= 1) */
	float growth, backoff;   /* 2 and 0.5 */
	float min_scale, max_scale;
};

/* codelets/cpu/amp.c. nonfinite returns 1 if any element is Inf or NaN. */
int starnn_amp_nonfinite_cpu(starnn_dtype dtype, size_t rows, size_t cols, const void *x, size_t ld);
void starnn_amp_scale_update_cpu(const struct starnn_amp_policy *p, float *state, const float *flag);

/* codelets/cuda/amp.cu */
void starnn_amp_nonfinite_cuda(starnn_dtype dtype, size_t rows, size_t cols, const void *x, size_t ld, float *flag,
                               void *stream);
void starnn_amp_scale_update_cuda(const struct starnn_amp_policy *p, float *state, const float *flag, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/amp.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_amp (codelets/opencl/amp.cl).
 * x, state and flag are cl_mem buffers with the offset (elements) of their
 * first element; nonfinite sets the flag to 1.0f as the CUDA one does.
 * CL_SUCCESS, or the OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_amp;
cl_int starnn_amp_nonfinite_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dtype, size_t rows, size_t cols,
                                   cl_mem x, size_t x_off, size_t ld, cl_mem flag, size_t flag_off);
cl_int starnn_amp_scale_update_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_amp_policy *p, cl_mem state,
                                      size_t state_off, cl_mem flag, size_t flag_off);
#endif

#ifdef __cplusplus
}
#endif
#endif
