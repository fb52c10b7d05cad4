/* Kernels of axpy / scale / add (fp32): y = alpha x + y, y = alpha y,
 * z = alpha x + beta y. Shapes: every operand is rows x cols, row-major,
 * with its own leading dimension ld (elements between row starts), so a
 * part of a tensor (micro-batch, channel slice) is passed as it is. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_AXPY_H
#define STARNN_KERNELS_AXPY_H

#include <stddef.h>

#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/axpy.c */
void starnn_axpy_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy);
void starnn_scale_cpu(size_t rows, size_t cols, float alpha, float *y, size_t ldy);
void starnn_add_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                    float beta, const float *y, size_t ldy, float *z, size_t ldz);

/* codelets/cuda/axpy.cu */
void starnn_axpy_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy,
                      void *stream);
void starnn_scale_cuda(size_t rows, size_t cols, float alpha, float *y, size_t ldy, void *stream);
void starnn_add_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                     float beta, const float *y, size_t ldy, float *z, size_t ldz, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/axpy.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_axpy (codelets/opencl/axpy.cl).
 * Each operand is a cl_mem with the offset of its view's first element;
 * shapes as above. CL_SUCCESS, or the OpenCL error (ctx->failed_* say
 * where). */
extern const struct starnn_opencl_program starnn_opencl_program_axpy;
cl_int starnn_axpy_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha, cl_mem x,
                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_scale_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha, cl_mem y,
                           size_t y_off, size_t ldy);
cl_int starnn_add_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float alpha, cl_mem x,
                         size_t x_off, size_t ldx, float beta, cl_mem y, size_t y_off, size_t ldy, cl_mem z,
                         size_t z_off, size_t ldz);
#endif

#ifdef __cplusplus
}
#endif
#endif
