/* ReLU on fp32 tensors:
 *   relu_fwd: y  = max(x, 0)               (NaN propagates: y = x when x is NaN)
 *   relu_bwd: dx = x > 0 ? dy : 0          (takes the FORWARD INPUT x, not y;
 *                                           the derivative at x == 0 is taken as 0)
 * Shapes: x, y, dy, dx are rows x cols, each with its own leading dimension,
 * so batch and channel partitions are accepted as they are.
 * In place: relu_fwd(x, x) and relu_bwd(x, dy, dy) overwrite their input
 * (one RW buffer each; the kernels are elementwise, so y == x and dx == dy
 * are valid kernel arguments too). */
#ifndef STARNN_RELU_H
#define STARNN_RELU_H

#include <stddef.h>

#include "runtime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels (codelets/cpu/relu.c, codelets/cuda/relu.cu). y may equal x and
 * dx may equal dy (same pointer and ld); no other overlap is allowed. */
void starnn_relu_fwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy);
void starnn_relu_bwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                         float *dx, size_t lddx);
void starnn_relu_fwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy, void *stream);
void starnn_relu_bwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                          float *dx, size_t lddx, void *stream);

/* Task submission. y == x (the same tensor) runs in place; so does dx == dy.
 * Perfmodels: starnn_relu_fwd_fp32, starnn_relu_bwd_fp32, and for the
 * in-place forms starnn_relu_fwd_inplace_fp32, starnn_relu_bwd_inplace_fp32. */
int starnn_relu_fwd(starnn_tensor *x, starnn_tensor *y);
int starnn_relu_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dx);

#ifdef __cplusplus
}
#endif
#endif
