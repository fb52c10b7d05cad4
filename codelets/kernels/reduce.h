/* Kernels of the full reductions sum and sumsq: out = beta * out + sum_i
 * x_i (or x_i^2), accumulated in double and rounded to fp32 once; beta 0
 * does not read out. Shapes: x is rows x cols, row-major, leading dimension
 * ldx; out points to one float (host memory for the CPU kernels, device
 * memory for CUDA). The CUDA kernels are asynchronous on stream (a
 * cudaStream_t) and return 0 or a cudaError_t code (they allocate a small
 * stream-ordered buffer for the per-block partial sums). */
#ifndef STARNN_KERNELS_REDUCE_H
#define STARNN_KERNELS_REDUCE_H

#include <stddef.h>

#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/reduce.c */
void starnn_sum_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out);
void starnn_sumsq_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out);

/* codelets/cuda/reduce.cu */
int starnn_sum_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out, void *stream);
int starnn_sumsq_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/reduce.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of starnn_opencl_program_reduce (codelets/opencl/reduce.cl), the
 * CPU kernels' results bit for bit (one work-item, their order). x and out
 * are cl_mem with the offset of the view's first element (elements).
 * CL_SUCCESS, or the OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_reduce;
cl_int starnn_sum_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off, size_t ldx,
                         float beta, cl_mem out, size_t out_off);
cl_int starnn_sumsq_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off,
                           size_t ldx, float beta, cl_mem out, size_t out_off);
#endif

#ifdef __cplusplus
}
#endif
#endif
