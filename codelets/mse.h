/* Mean squared error loss, fp32.
 *   mse_fwd: loss = beta * loss + scale * sum_i (pred_i - target_i)^2
 *   mse_bwd: dpred_i = 2 * scale * (pred_i - target_i)
 * scale is typically 1 / numel of the FULL batch, so that the losses of
 * micro-batches add up to the loss of the batch: the first micro-batch
 * writes with beta = 0 (loss is not read then), the others accumulate with
 * beta = 1. A loss-scaling factor (mixed precision) is folded into the
 * scale of mse_bwd. The sum is accumulated in double (CPU and CUDA).
 * Shapes: pred, target, dpred are rows x cols, each with its own leading
 * dimension (batch / channel parts accepted); loss is one element. */
#ifndef STARNN_MSE_H
#define STARNN_MSE_H

#include <stddef.h>

#include "runtime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels (codelets/cpu/mse.c, codelets/cuda/mse.cu). loss points to one
 * float. starnn_mse_fwd_cuda returns 0 or a cudaError_t code. */
void starnn_mse_fwd_cpu(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float beta, float *loss);
void starnn_mse_bwd_cpu(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float *dpred, size_t ldd);
int starnn_mse_fwd_cuda(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float beta, float *loss, void *stream);
void starnn_mse_bwd_cuda(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                         float scale, float *dpred, size_t ldd, void *stream);

/* Task submission. pred and target (and dpred) have the same shape. */
int starnn_mse_fwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *loss, float scale, float beta);
int starnn_mse_bwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *dpred, float scale);

#ifdef __cplusplus
}
#endif
#endif
