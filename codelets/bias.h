/* Per-channel bias on fp32 tensors:
 *   bias_add:  y[n, c, i] += b[c]
 *   bias_grad: db[c] = beta * db[c] + sum over n, i of dy[n, c, i]
 * y, dy: [N, C] or [N, C, H, W] (also [N, C, L]); i runs over the inner
 * dimensions (H*W; 1 for [N, C]). As matrices they are N x C*inner with
 * their own leading dimension, so micro-batch and channel partitions are
 * accepted as they are. b, db: C values (a 1-D tensor [C], or any tensor
 * that is one row of C elements).
 * bias_grad with beta == 0 overwrites db without reading it (its codelet
 * accesses db in STARPU_W mode); beta == 1 accumulates the gradients of
 * successive micro-batches. bias_grad(w) is the gradient of
 * L = sum(w .* y) with respect to b through bias_add. */
#ifndef STARNN_BIAS_H
#define STARNN_BIAS_H

#include <stddef.h>
#include <starpu.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/bias.h. */

/* Codelets: bias_add (b R, y RW); bias_grad (dy R, db RW) and, for
 * beta == 0, bias_grad_w (dy R, db W), sharing the model
 * starnn_bias_grad_fp32. */
extern struct starpu_codelet starnn_bias_add_cl;
extern struct starpu_codelet starnn_bias_grad_cl;
extern struct starpu_codelet starnn_bias_grad_w_cl;

/* Task submission; check dtypes and shapes. */
int starnn_bias_add(starnn_tensor *b, starnn_tensor *y);
int starnn_bias_grad(starnn_tensor *dy, float beta, starnn_tensor *db);

/* Mixed precision: y / dy fp16 or bf16 (dt), b / db fp32. bias_add computes
 * y + b in fp32 and rounds once to dt; bias_grad sums the widened dy in
 * double as the fp32 kernel does. Perfmodels starnn_bias_add_{fp16,bf16},
 * starnn_bias_grad_{fp16,bf16}. Submission for y / dy of any dtype (fp32
 * submits the fp32 codelets); b / db are fp32. */
int starnn_bias_add_mp(starnn_tensor *b, starnn_tensor *y);
int starnn_bias_grad_mp(starnn_tensor *dy, float beta, starnn_tensor *db);

#ifdef __cplusplus
}
#endif
#endif
