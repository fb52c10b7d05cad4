/* Kernels of relu_fwd / relu_bwd: y = max(x, 0) (NaN propagates), dx = x > 0
 * ? dy : 0 (the backward takes the forward INPUT x). Shapes: x, y, dy, dx
 * are rows x cols, row-major, each with its own leading dimension. y may
 * equal x and dx may equal dy (the same pointer and ld: in place); no other
 * overlap. The _half kernels take fp16 or bf16 (dt) bit patterns and select
 * on them: their results are exactly the fp32 kernels' on the widened
 * values. The CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_RELU_H
#define STARNN_KERNELS_RELU_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/relu.c */
void starnn_relu_fwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy);
void starnn_relu_bwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                         float *dx, size_t lddx);
void starnn_relu_fwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                              size_t ldy);
void starnn_relu_bwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                              const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx);

/* codelets/cuda/relu.cu */
void starnn_relu_fwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy, void *stream);
void starnn_relu_bwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                          float *dx, size_t lddx, void *stream);
void starnn_relu_fwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                               size_t ldy, void *stream);
void starnn_relu_bwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                               const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx, void *stream);

#ifdef __cplusplus
}
#endif
#endif
