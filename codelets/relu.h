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
#include <stdint.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/relu.h. */

/* Task submission. y == x (the same tensor) runs in place; so does dx == dy.
 * Perfmodels: starnn_relu_fwd_fp32, starnn_relu_bwd_fp32, and for the
 * in-place forms starnn_relu_fwd_inplace_fp32, starnn_relu_bwd_inplace_fp32. */
int starnn_relu_fwd(starnn_tensor *x, starnn_tensor *y);
int starnn_relu_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dx);

/* Mixed precision: x, y, dy, dx all fp16 or all bf16 (dt). ReLU is a
 * select, so the kernels work on the bit patterns and the results are
 * exactly those of the fp32 kernels on the widened values (x < 0 and x > 0
 * are read from the sign, the magnitude and the NaN range). Out of place
 * only (y != x, dx != dy, dx != x). Perfmodels starnn_relu_fwd_{fp16,bf16},
 * starnn_relu_bwd_{fp16,bf16}.
 * Submission for any one dtype (fp32 submits the fp32 codelets, in place
 * included). */
int starnn_relu_fwd_mp(starnn_tensor *x, starnn_tensor *y);
int starnn_relu_bwd_mp(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dx);

#ifdef __cplusplus
}
#endif
#endif
