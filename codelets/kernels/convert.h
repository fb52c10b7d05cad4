/* Kernels of convert: y = x converted between fp32, fp16 and bf16. Shapes:
 * x and y are rows x cols, row-major, each with its own leading dimension;
 * 16-bit data are uint16_t bit patterns. Rounding is to nearest, ties to
 * even; Inf is kept, NaN stays NaN with its sign (narrowing makes it
 * quiet; widening fp16 with F16C or on CUDA sets the quiet bit of a
 * signalling NaN); fp16 subnormals are produced and read exactly; too large
 * values become Inf. fp16 <-> bf16 goes through fp32 (one rounding). The
 * reference for every result is runtime/base/half.h. The CUDA kernels are
 * asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_CONVERT_H
#define STARNN_KERNELS_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/types.h"
#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/convert.c. fp32 <-> fp16 use F16C when the CPU has it
 * (checked at run time) and runtime/base/half.h otherwise; the bf16 ones
 * are integer loops with the arithmetic of starnn_float_to_bf16. */
void starnn_convert_fp32_to_fp16_cpu(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy);
void starnn_convert_fp32_to_bf16_cpu(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy);
void starnn_convert_fp16_to_fp32_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy);
void starnn_convert_bf16_to_fp32_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy);
void starnn_convert_fp16_to_bf16_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                     size_t ldy);
void starnn_convert_bf16_to_fp16_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                     size_t ldy);
/* Any pair, picked from the dtypes (equal dtypes copy). Returns 0, or
 * STARNN_EINVAL (with the error recorded) for an unknown dtype. */
int starnn_convert_cpu(starnn_dtype src, starnn_dtype dst, size_t rows, size_t cols, const void *x, size_t ldx,
                       void *y, size_t ldy);

/* Row helpers for the kernels of other operations that compute in fp32
 * on 16-bit data (gemm, bias, mse, adam's cast): widen n elements of dtype
 * src to fp32, or narrow n fp32 values to dtype dst, with the kernels above
 * (the same rounding); fp32 is a copy. */
void starnn_widen_row_cpu(starnn_dtype src, size_t n, const void *x, float *y);
void starnn_narrow_row_cpu(starnn_dtype dst, size_t n, const float *x, void *y);

/* codelets/cuda/convert.cu: the cuda_fp16.h / cuda_bf16.h
 * round-to-nearest-even intrinsics. */
void starnn_convert_fp32_to_fp16_cuda(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy,
                                      void *stream);
void starnn_convert_fp32_to_bf16_cuda(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy,
                                      void *stream);
void starnn_convert_fp16_to_fp32_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy,
                                      void *stream);
void starnn_convert_bf16_to_fp32_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy,
                                      void *stream);
void starnn_convert_fp16_to_bf16_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                      size_t ldy, void *stream);
void starnn_convert_bf16_to_fp16_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                      size_t ldy, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/convert.c, on ctx->queue (runtime/base/opencl.h): the
 * program starnn_opencl_program_convert (codelets/opencl/convert.cl),
 * integer arithmetic on bit patterns (codelets/opencl/common.cl): the CPU
 * kernels' results bit for bit (a signalling fp16 NaN widens quiet, as
 * with F16C). x and y are cl_mem with the offsets of the views' first
 * elements. CL_SUCCESS, or the OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_convert;
cl_int starnn_convert_fp32_to_fp16_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x,
                                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_convert_fp32_to_bf16_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x,
                                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_convert_fp16_to_fp32_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x,
                                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_convert_bf16_to_fp32_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x,
                                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_convert_fp16_to_bf16_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x,
                                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_convert_bf16_to_fp16_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x,
                                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
#endif

#ifdef __cplusplus
}
#endif
#endif
