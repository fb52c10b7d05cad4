/* Kernels of fill: y = value. Shapes: y is rows x cols, row-major, leading
 * dimension ldy; only its rows x cols are written, never the elements in
 * between (a channel view). fp32 takes the value; fp16 and bf16 take its
 * 16-bit pattern (converted by the caller), so one kernel serves both. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_FILL_H
#define STARNN_KERNELS_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/fill.c */
void starnn_fill_f32_cpu(size_t rows, size_t cols, float value, float *y, size_t ldy);
void starnn_fill_16_cpu(size_t rows, size_t cols, uint16_t bits, uint16_t *y, size_t ldy);

/* codelets/cuda/fill.cu */
void starnn_fill_f32_cuda(size_t rows, size_t cols, float value, float *y, size_t ldy, void *stream);
void starnn_fill_16_cuda(size_t rows, size_t cols, uint16_t bits, uint16_t *y, size_t ldy, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/fill.c, on ctx->queue (runtime/base/opencl.h): the
 * program starnn_opencl_program_fill (codelets/opencl/fill.cl); y is a
 * cl_mem with the offset of the view's first element. CL_SUCCESS, or the
 * OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_fill;
cl_int starnn_fill_f32_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, float value, cl_mem y,
                              size_t y_off, size_t ldy);
cl_int starnn_fill_16_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, uint16_t bits, cl_mem y,
                             size_t y_off, size_t ldy);
#endif

#ifdef __cplusplus
}
#endif
#endif
