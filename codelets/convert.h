/* convert: y = x converted between fp32, fp16 and bf16 (all six ordered
 * pairs; equal dtypes fall back to copy). Rounding is to nearest, ties to
 * even; Inf is kept and NaN stays NaN with its sign (narrowing makes it a
 * quiet NaN; widening fp16 -> fp32 with F16C or on CUDA may set the quiet
 * bit of a signalling NaN, which runtime/base/half.h keeps); fp16 subnormals are
 * produced and read exactly; too large values become Inf.
 * fp16 <-> bf16 goes through fp32, which holds both exactly, so there is a
 * single rounding. The reference for every result is runtime/base/half.h.
 *
 * Shapes: x and y are rows x cols, each with its own leading dimension
 * (views are fine). 16-bit data is passed as uint16_t bit patterns.
 *
 * Naming: unlike the other operations (starnn_<op>_<dtype>), convert's
 * performance models and codelets are named by the pair, source first:
 * perfmodel symbol starnn_convert_<src>_to_<dst>, e.g.
 * starnn_convert_fp32_to_bf16, and codelet / task name
 * "convert_fp32_to_bf16". */
#ifndef STARNN_CONVERT_H
#define STARNN_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CPU kernels (codelets/cpu/convert.c). fp32 <-> fp16 use F16C when the CPU
 * has it (checked at run time) and runtime/base/half.h otherwise; the bf16 ones
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
 * STARNN_EINVAL for an unknown dtype. */
int starnn_convert_cpu(starnn_dtype src, starnn_dtype dst, size_t rows, size_t cols, const void *x, size_t ldx,
                       void *y, size_t ldy);

/* Row helpers for the mixed-precision kernels of other operations (gemm,
 * bias, mse on fp16 / bf16 tensors): widen n elements of dtype src to fp32,
 * or narrow n fp32 values to dtype dst, with the kernels above (same
 * rounding); fp32 is a copy. Kernels that compute in fp32 on 16-bit
 * tensors take blocks of a row through a stack buffer with these. */
void starnn_widen_row_cpu(starnn_dtype src, size_t n, const void *x, float *y);
void starnn_narrow_row_cpu(starnn_dtype dst, size_t n, const float *x, void *y);

/* CUDA kernels (codelets/cuda/convert.cu): cuda_fp16.h / cuda_bf16.h
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

/* Task submission: the codelet is picked from x's and y's dtypes; equal
 * dtypes submit starnn_copy(x, y). x and y must have the same rows x cols. */
int starnn_convert(starnn_tensor *x, starnn_tensor *y);

#ifdef __cplusplus
}
#endif
#endif
