/* amp: dynamic loss scaling for mixed-precision training, inside the task
 * graph (no host synchronisation per step).
 *
 * The loss-scale state is a 4-element fp32 tensor (one row of 4):
 *   state[0] scale          the factor the loss gradient is multiplied by
 *   state[1] good_steps     clean steps since the last change of the scale
 *   state[2] skipped_steps  steps skipped for Inf/NaN gradients (total)
 *   state[3] applied_steps  optimizer steps applied (total): Adam's step
 *                           count t - 1 and SGD's "first step" test, so that
 *                           skipped steps do not advance them (as PyTorch's
 *                           GradScaler skips optimizer.step())
 * Counters are fp32: exact up to 2^24 steps (beyond, Adam's bias
 * corrections are 1 to fp32 precision anyway).
 * The overflow flag is a 1-element fp32 tensor: 0 = clean, 1 = some
 * gradient held an Inf or NaN.
 *
 * One training step with loss scaling:
 *   fill(0, flag)
 *   forward; mse_bwd_mp(..., state): the loss gradient times state[0]
 *   backward; reduce gradients
 *   amp_nonfinite(grad, flag)                    for every gradient
 *   sgd_amp / adam_amp(..., state, flag)          unscale by 1 / state[0],
 *                                                 skip all when flag is set
 *   amp_scale_update(state, flag, ...)           after every optimizer task
 * The host reads the state only when it wants to report it.
 *
 *   amp_nonfinite:    flag = 1 if any element of x is Inf or NaN, else
 *                     flag is left as it is (so successive tasks OR into it).
 *                     x: fp32, fp16 or bf16, rows x cols with its own ld.
 *   amp_scale_update: if flag: scale = max(scale * backoff, min_scale),
 *                              good_steps = 0, skipped_steps += 1
 *                     else:    applied_steps += 1, good_steps += 1, and when
 *                              good_steps reaches growth_interval:
 *                              scale = min(scale * growth, max_scale),
 *                              good_steps = 0
 *                     With dynamic == 0 the scale never changes (a static
 *                     scale: overflowing steps are still skipped and
 *                     counted).
 * Perfmodels: starnn_amp_nonfinite_{fp32,fp16,bf16},
 * starnn_amp_scale_update_fp32. */
#ifndef STARNN_AMP_H
#define STARNN_AMP_H

#include <stddef.h>
#include <stdint.h>

#include "codelets/kernels/amp.h"
#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STARNN_AMP_INIT_SCALE 65536.0f     /* 2^16 */
#define STARNN_AMP_MIN_SCALE 1.0f
#define STARNN_AMP_MAX_SCALE 16777216.0f   /* 2^24 */
#define STARNN_AMP_GROWTH_INTERVAL 2000

/* STARNN_AMP_STATE_LEN, struct starnn_amp_policy (dynamic, growth_interval,
 * growth, backoff, min_scale, max_scale) and the kernels:
 * codelets/kernels/amp.h. */

/* The defaults above: dynamic, 2000, x2, x0.5, [1, 2^24]. */
void starnn_amp_policy_default(struct starnn_amp_policy *p);

/* Host view of the state. */
struct starnn_amp_state {
	float scale;
	int64_t good_steps, skipped_steps, applied_steps;
};

/* Submission. state: an fp32 tensor of STARNN_AMP_STATE_LEN elements;
 * flag: a 1-element fp32 tensor. */
int starnn_amp_nonfinite(starnn_tensor *x, starnn_tensor *flag);
int starnn_amp_scale_update(starnn_tensor *state, starnn_tensor *flag, const struct starnn_amp_policy *p);

/* Host helpers (they wait for the tensor): write a fresh state with the
 * given scale and zero counters; read it back. */
int starnn_amp_state_init(starnn_tensor *state, float scale);
int starnn_amp_state_read(starnn_tensor *state, struct starnn_amp_state *out);
/* Checks that state and flag have the shapes above (used by the optimizer
 * variants). op names the caller in the message. */
int starnn_amp_check(const char *op, const starnn_tensor *state, const starnn_tensor *flag);

#ifdef __cplusplus
}
#endif
#endif
