/* SGD with momentum, dampening, weight decay and Nesterov, as PyTorch's
 * torch.optim.SGD (maximize = False), on fp32 tensors:
 *   g   = grad_scale * grad + weight_decay * w
 *   buf = first ? g : momentum * buf + (1 - dampening) * g   (momentum != 0)
 *   d   = momentum == 0 ? g : nesterov ? g + momentum * buf : buf
 *   w  -= lr * d
 * `first` (step 1) initialises the momentum buffer with g as PyTorch does
 * when it creates it. With momentum == 0 buf is neither read nor written.
 * grad_scale unscales gradients of mixed precision (1 = none).
 * Shapes: w, grad, buf are rows x cols, each with its own leading dimension. */
#ifndef STARNN_SGD_H
#define STARNN_SGD_H

#include <stddef.h>
#include <stdint.h>

#include "codelets/kernels/sgd.h"
#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* struct starnn_sgd_params (lr, momentum, dampening, weight_decay,
 * nesterov) and the kernels: codelets/kernels/sgd.h. */

/* Submits one update of w. step is 1-based (step 1 initialises buf);
 * grad_scale multiplies grad first (1 = none). Like PyTorch, rejects
 * negative lr / momentum / weight_decay and Nesterov without momentum or
 * with dampening. */
int starnn_sgd(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *buf, const struct starnn_sgd_params *params,
               int64_t step, float grad_scale);

/* Mixed precision with dynamic loss scaling (codelets/amp.h): the same
 * update, with the step read inside the task from the loss-scale state and
 * the overflow flag (R buffers):
 *   flag[0] != 0: the step is skipped, w and buf are left untouched;
 *   otherwise grad_scale = 1 / state[0] (unscaling) and first = (state[3]
 *   == 0: no step applied yet), so skipped steps do not count.
 * Perfmodel starnn_sgd_amp_fp32. */
int starnn_sgd_amp(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *buf, const struct starnn_sgd_params *params,
                   starnn_tensor *state, starnn_tensor *flag);

#ifdef __cplusplus
}
#endif
#endif
