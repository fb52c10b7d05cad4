/* Adam as PyTorch's torch.optim.Adam (amsgrad = False, maximize = False),
 * or AdamW (torch.optim.AdamW) with `decoupled`, on fp32 tensors:
 *   g  = grad_scale * grad (+ weight_decay * w      unless decoupled)
 *   w  = w * (1 - lr * weight_decay)                 if decoupled
 *   m  = beta1 * m + (1 - beta1) * g
 *   v  = beta2 * v + (1 - beta2) * g^2
 *   w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * which is lr * mhat / (sqrt(vhat) + eps) evaluated in PyTorch's order. The
 * bias corrections are computed on the host at submission (double) and
 * passed with the step, so the kernels do not depend on t otherwise.
 * grad_scale unscales gradients of mixed precision (1 = none).
 * Shapes: w, grad, m, v are rows x cols, each with its own leading
 * dimension. m and v start at zero (step 1). */
#ifndef STARNN_ADAM_H
#define STARNN_ADAM_H

#include <stddef.h>
#include <stdint.h>

#include "codelets/kernels/adam.h"
#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* struct starnn_adam_params (lr, beta1, beta2, eps, weight_decay,
 * decoupled), starnn_adam_step_init and the kernels:
 * codelets/kernels/adam.h. */

/* Submits one update of w at step t (1-based). Like PyTorch, rejects a
 * negative lr / eps / weight_decay and betas outside [0, 1). */
int starnn_adam(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                const struct starnn_adam_params *params, int64_t t, float grad_scale);

/* Mixed precision with dynamic loss scaling (codelets/amp.h): the same
 * update, with the step read inside the task from the loss-scale state and
 * the overflow flag (R buffers):
 *   flag[0] != 0: the step is skipped: w, m, v are left untouched;
 *   otherwise t = state[3] + 1 (the steps applied so far, plus this one:
 *   skipped steps do not advance the bias corrections) and grad_scale =
 *   1 / state[0]; the step is then exactly that of starnn_adam at t.
 * Perfmodel starnn_adam_amp_fp32. */
int starnn_adam_amp(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                    const struct starnn_adam_params *params, starnn_tensor *state, starnn_tensor *flag);

/* Mixed precision's compute copy written by the update (runtime/train/params.h):
 * the update of starnn_adam / starnn_adam_amp, then h = w narrowed to h's
 * dtype (fp16 or bf16, rounded as codelets/convert.h does: the same bits as
 * a convert task), chunk by chunk while the updated values are in cache,
 * in place of a convert task that reads w again before the next forward.
 * A step that adam_amp skips leaves w, and so h, as they were. On CPU the
 * _cast kernels (codelets/kernels/adam.h); on CUDA the update's kernel and then convert's, on the
 * task's stream. Where w or h has copies in a kernel's layout kept current
 * by their writers (runtime/core/tensor.h: starnn_tensor_copies), the functions
 * submit starnn_adam / starnn_adam_amp and starnn_convert as two tasks, which
 * keep them. Perfmodels starnn_adam_cast_<h's dtype>,
 * starnn_adam_amp_cast_<h's dtype>. */
int starnn_adam_cast(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                     const struct starnn_adam_params *params, int64_t t, float grad_scale, starnn_tensor *h);
int starnn_adam_amp_cast(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                         const struct starnn_adam_params *params, starnn_tensor *state, starnn_tensor *flag,
                         starnn_tensor *h);

#ifdef __cplusplus
}
#endif
#endif
