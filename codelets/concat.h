/* Channel concatenation of NCHW tensors (the UNet decoder's
 * torch.cat([a, b], dim=1)) and its backward split:
 *   a [N, C1, H, W], b [N, C2, H, W]  <->  cat [N, C1+C2, H, W]
 *
 * Preferred path, no copy: register cat once and let the producers write
 * into its channel views (starnn_concat_views: a StarPU partition plan of
 * cat by channels, made once, no task). Tasks that then read the whole cat
 * (or dcat's views in the backward) see the data: the runtime partitions
 * and gathers as the tasks need, asynchronously.
 *
 * Copy path, for when a and b already exist as separate tensors:
 *   concat_fwd:  cat[:, :C1] = a, cat[:, C1:] = b
 *   concat_bwd:  da = beta_a da + dcat[:, :C1], db = beta_b db + dcat[:, C1:]
 * (beta = 1 lets a skip connection's gradient accumulate into the gradient
 * it already has; beta == 0 overwrites without reading, in STARPU_W mode).
 *
 * In the tensors' matrix view (runtime/core/tensor.h: one row per sample) a
 * channel concatenation is a column concatenation, so the kernels need no
 * H, W: a has ca = C1*H*W columns, b has cb = C2*H*W, cat has ca + cb; each
 * its own leading dimension (views of other tensors are accepted). */
#ifndef STARNN_CONCAT_H
#define STARNN_CONCAT_H

#include <stddef.h>
#include <stdint.h>
#include <starpu.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/concat.h. */

/* Codelets. concat_bwd: [beta_a != 0][beta_b != 0] picks STARPU_RW or
 * STARPU_W for da and db; all four share the model starnn_concat_bwd_fp32. */
extern struct starpu_codelet starnn_concat_fwd_cl;
extern struct starpu_codelet starnn_concat_bwd_cl[2][2];

/* The no-copy path: plans the split of cat [N, C, ...] (ndim >= 2) into
 * channels [0, c1) and [c1, C) and returns the two views (tensors of their
 * own, owned by cat: do not destroy them). Submits no task. The same plan is
 * reused on later calls with the same c1. 0 < c1 < C, else STARNN_EINVAL. */
int starnn_concat_views(starnn_tensor *cat, int64_t c1, starnn_tensor **a, starnn_tensor **b);

/* The copy path: fp32, same ndim, same N and spatial sizes, cat's channels
 * the sum of a's and b's; else STARNN_EINVAL. */
int starnn_concat_fwd(starnn_tensor *a, starnn_tensor *b, starnn_tensor *cat);
int starnn_concat_bwd(starnn_tensor *dcat, float beta_a, starnn_tensor *da, float beta_b, starnn_tensor *db);

/* Mixed precision (copy path): a, b, cat (da, db, dcat) all fp16 or all
 * bf16; on CPU the _mp kernels above, on CUDA the fp32 kernels on widened
 * copies (codelets/halfwrap.h): copies are exact, beta 1 rounds the sum
 * once. fp32 tensors submit the fp32 codelets. Perfmodels
 * starnn_concat_{fwd,bwd}_{fp16,bf16}. (The no-copy views above work for
 * any dtype.) */
int starnn_concat_fwd_mp(starnn_tensor *a, starnn_tensor *b, starnn_tensor *cat);
int starnn_concat_bwd_mp(starnn_tensor *dcat, float beta_a, starnn_tensor *da, float beta_b, starnn_tensor *db);

#ifdef __cplusplus
}
#endif
#endif
