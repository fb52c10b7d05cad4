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

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/mse.h. */

/* Task submission. pred and target (and dpred) have the same shape. */
int starnn_mse_fwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *loss, float scale, float beta);
int starnn_mse_bwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *dpred, float scale);

/* Mixed precision: pred (and dpred) fp16 or bf16 (dt), target and the
 * loss fp32. pred is widened to fp32; the forward sums in double as above;
 * the backward computes 2 * scale * ls * (pred - target) in fp32 and
 * rounds it once to dt, where ls is the loss scale state[0] of a
 * loss-scale state (codelets/amp.h) read inside the task, or 1 when state
 * is NULL. This is how the scaled loss gradient enters the graph without a
 * host synchronisation. Perfmodels starnn_mse_fwd_{fp16,bf16},
 * starnn_mse_bwd_{fp16,bf16}, starnn_mse_bwd_scaled_{fp32,fp16,bf16}.
 * Submission: pred of any dtype, target fp32 of the same shape, dpred of
 * pred's dtype; state NULL (no loss scaling) or a loss-scale state. All
 * fp32 without state submits the fp32 codelets. */
int starnn_mse_fwd_mp(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *loss, float scale, float beta);
int starnn_mse_bwd_mp(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *dpred, float scale,
                      starnn_tensor *state);

#ifdef __cplusplus
}
#endif
#endif
