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

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct starnn_adam_params {
	float lr, beta1, beta2, eps, weight_decay;
	int decoupled; /* AdamW: decay the weights, not the gradient */
};

/* What the kernels get: the parameters of one step. */
struct starnn_adam_step {
	struct starnn_adam_params p;
	float grad_scale;
	float step_size; /* lr / (1 - beta1^t) */
	float bc2_sqrt;  /* sqrt(1 - beta2^t) */
	float decay;     /* 1 - lr * weight_decay if decoupled, else 1 */
};

/* Fills s for step t (1-based) with the bias corrections computed in double. */
void starnn_adam_step_init(struct starnn_adam_step *s, const struct starnn_adam_params *p, int64_t t,
                           float grad_scale);

/* Kernels (codelets/cpu/adam.c, codelets/cuda/adam.cu). */
void starnn_adam_cpu(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                     const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv);
void starnn_adam_cuda(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                      const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv, void *stream);

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
 * state and flag are device pointers for the CUDA kernel. Perfmodel
 * starnn_adam_amp_fp32. */
void starnn_adam_amp_cpu(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                         const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m, size_t ldm,
                         float *v, size_t ldv);
void starnn_adam_amp_cuda(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                          const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m,
                          size_t ldm, float *v, size_t ldv, void *stream);
int starnn_adam_amp(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                    const struct starnn_adam_params *params, starnn_tensor *state, starnn_tensor *flag);

/* Mixed precision's compute copy written by the update (runtime/train/params.h):
 * the update of starnn_adam / starnn_adam_amp, then h = w narrowed to h's
 * dtype (fp16 or bf16, rounded as codelets/convert.h does: the same bits as
 * a convert task), chunk by chunk while the updated values are in cache,
 * in place of a convert task that reads w again before the next forward.
 * A step that adam_amp skips leaves w, and so h, as they were. The CPU
 * kernels below; on CUDA the update's kernel and then convert's, on the
 * task's stream. Where w or h has copies in a kernel's layout kept current
 * by their writers (runtime/core/tensor.h: starnn_tensor_copies), the functions
 * submit starnn_adam / starnn_adam_amp and starnn_convert as two tasks, which
 * keep them. Perfmodels starnn_adam_cast_<h's dtype>,
 * starnn_adam_amp_cast_<h's dtype>. */
void starnn_adam_cast_cpu(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                          const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv, starnn_dtype hdt,
                          void *h, size_t ldh);
void starnn_adam_amp_cast_cpu(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                              const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m,
                              size_t ldm, float *v, size_t ldv, starnn_dtype hdt, void *h, size_t ldh);
int starnn_adam_cast(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                     const struct starnn_adam_params *params, int64_t t, float grad_scale, starnn_tensor *h);
int starnn_adam_amp_cast(starnn_tensor *w, starnn_tensor *grad, starnn_tensor *m, starnn_tensor *v,
                         const struct starnn_adam_params *params, starnn_tensor *state, starnn_tensor *flag,
                         starnn_tensor *h);

#ifdef __cplusplus
}
#endif
#endif
