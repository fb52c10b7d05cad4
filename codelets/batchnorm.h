/* Batch normalisation over NCHW fp32 tensors (also [N, C] and [N, C, L]),
 * as torch.nn.BatchNorm2d, with an optional fused ReLU:
 *   training:  mean, var = per-channel batch mean and biased variance over
 *              N, H, W (M = N*H*W values per channel);
 *              y = gamma * (x - mean) * invstd + beta, invstd = 1/sqrt(var + eps)
 *              running_mean = (1 - momentum) * running_mean + momentum * mean
 *              running_var  = (1 - momentum) * running_var  + momentum * var * M/(M-1)
 *   evaluation: the same with mean = running_mean, var = running_var;
 *   fused ReLU: y = max(bn(x), 0).
 *   backward (training): with dy masked by (y > 0) under the fused ReLU,
 *              dx = gamma*invstd/M * (M*dy - sum(dy) - xhat*sum(dy*xhat)),
 *              dgamma = sum(dy*xhat), dbeta = sum(dy).
 *
 * Micro-batches: the statistics are over the whole batch, so the work is cut
 * into steps that run on any part of a batch split and combine through a
 * small workspace (the "work" tensor, see below):
 *   forward:  bn_stats (each part -> its own workspace slot: per-channel sum
 *             and sum of squares, in double) -> bn_finalize (all slots ->
 *             mean, invstd, running stats) -> bn_apply (each part);
 *   backward: bn_bwd_reduce (each part -> its slot: sum(dy), sum(dy*(x-mean)))
 *             -> bn_bwd_params (dgamma, dbeta) and bn_bwd_apply (each part).
 * Each part writes its own slot, so the per-part tasks run in parallel; the
 * combining tasks add the slots in a fixed order (deterministic on CPU).
 * starnn_batchnorm_fwd / _bwd submit all of it for an array of parts.
 *
 * The workspace: an fp32 tensor [S, 4*C] whose rows are S slots, each slot
 * holding 2*C doubles (the floats' storage reinterpreted: sums of fp32 data
 * in fp32 would lose the variance to cancellation). Its contents are opaque:
 * create it with starnn_batchnorm_work_create(), read it only through these
 * operations. The tasks that fill a slot take a one-row tensor (the
 * workspace itself when S = 1, else a part of its split into S rows).
 *
 * Shapes: x, y, dy, dx: [N, C, ...] with inner = H*W elements per channel,
 * rows N elements ld apart (micro-batch parts and strided views are fine);
 * per-channel vectors (gamma, beta, running stats, mean, invstd, dgamma,
 * dbeta): C elements in one row ([C] or [1, C]).
 * Outputs must not alias inputs (distinct tensors). */
#ifndef STARNN_BATCHNORM_H
#define STARNN_BATCHNORM_H

#include <stddef.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STARNN_BN_MOMENTUM 0.1f
#define STARNN_BN_EPS 1e-5f

/* ------------------------------------------------------- the steps as tasks
 * slot: a one-row workspace tensor [1, 4C]; work: the whole workspace
 * [S, 4C], of which the first nslots rows are read. count: values per
 * channel over the whole batch (N_total * H * W). */

/* A workspace of nslots slots for c channels, named name. */
int starnn_batchnorm_work_create(starnn_tensor **out, const char *name, int64_t c, int nslots);

int starnn_bn_stats(starnn_tensor *x, starnn_tensor *slot, int accumulate);
/* total += slot (two one-row workspace tensors of the same channels): the
 * slots of several parts combined in a fixed order, so that the combining
 * steps read one slot (the same sums, in the same order, as reading them
 * all) without splitting a workspace into rows. */
int starnn_bn_slot_add(starnn_tensor *total, starnn_tensor *slot);
int starnn_bn_finalize(starnn_tensor *work, int nslots, double count, float eps, float momentum, int update_running,
                       starnn_tensor *mean, starnn_tensor *invstd, starnn_tensor *running_mean,
                       starnn_tensor *running_var);
/* Training mode: stat = invstd from bn_finalize; evaluation mode (var_given):
 * mean = running_mean, stat = running_var. */
int starnn_bn_apply(starnn_tensor *x, starnn_tensor *mean, starnn_tensor *stat, int var_given, float eps,
                    starnn_tensor *gamma, starnn_tensor *beta, int relu, starnn_tensor *y);
/* y: the fused forward's output, or NULL without ReLU. */
int starnn_bn_bwd_reduce(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *y, starnn_tensor *mean,
                         starnn_tensor *slot, int accumulate);
int starnn_bn_bwd_params(starnn_tensor *work, int nslots, starnn_tensor *invstd, float beta, starnn_tensor *dgamma,
                         starnn_tensor *dbeta);
int starnn_bn_bwd_apply(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *y, starnn_tensor *mean,
                        starnn_tensor *invstd, starnn_tensor *gamma, starnn_tensor *work, int nslots, double count,
                        float beta, starnn_tensor *dx);

/* Batch statistics over several ranks (data-distributed training,
 * runtime/train/dist.h): when set, every training forward and backward calls
 * fn with each combined slot (forward: sums of x and x^2; backward: of g
 * and g * (x - mean)) before it is used; fn submits the slot's sum over
 * the ranks and sets *count (values per channel on this rank) to that over
 * all ranks. dgamma and dbeta then come from the sums over all ranks: they
 * are the whole batch's gradients on every rank (not to be summed again).
 * NULL (the default): this process's statistics only. */
typedef int (*starnn_bn_sync_fn)(void *ctx, starnn_tensor *slot, double *count);
void starnn_batchnorm_set_sync(starnn_bn_sync_fn fn, void *ctx);

/* ---------------------------------------------------- a batch-norm layer
 * The tensors of one BatchNorm2d (+ReLU), for the whole-operation calls. */
typedef struct starnn_batchnorm {
	int64_t channels;
	starnn_tensor *gamma, *beta;               /* [C] affine parameters */
	starnn_tensor *running_mean, *running_var; /* [C] */
	starnn_tensor *mean, *invstd;              /* [C] saved by the training forward */
	/* The slots of the parts: part 0 writes `work`, part p > 0 more[p - 1];
	 * the others are then added to `work` in part order (bn_slot_add) and
	 * the combining steps read `work` alone: no workspace is partitioned
	 * and gathered twice per step. */
	starnn_tensor *work;                       /* [1, 4C] */
	starnn_tensor **more;                      /* [max_parts - 1] of [1, 4C] */
	int max_parts;
	float momentum, eps;
	int relu;                                  /* fused ReLU after the affine map */
	/* Channel blocks: with fewer parts than workers (batch 1 in one part),
	 * the calls below also cut each part into nblocks channel blocks (the
	 * statistics of a channel do not depend on the others), each with its
	 * own workspace, so that every worker gets a share. */
	int nblocks;
	starnn_tensor **bwork;                     /* [nblocks] slots of part 0 */
	starnn_tensor **bmore;                     /* [nblocks * (max_parts - 1)] */
} starnn_batchnorm;

/* Creates the tensors (gamma 1, beta 0, running mean 0, running var 1, as
 * PyTorch) with a workspace for up to max_parts parts; momentum and eps at
 * their defaults. The fields may be changed afterwards (e.g. gamma replaced
 * by a tensor of the model's parameter store: then destroy() still frees
 * only what init created, as long as the field is restored before). */
int starnn_batchnorm_init(starnn_batchnorm *bn, const char *name, int64_t channels, int max_parts, int relu);
void starnn_batchnorm_destroy(starnn_batchnorm *bn);

/* Forward on the nparts parts x[i] -> y[i] of one batch (nparts = 1: a whole
 * tensor). Training: batch statistics over all parts, running statistics
 * updated, mean / invstd saved; else evaluation with the running statistics. */
int starnn_batchnorm_fwd(starnn_batchnorm *bn, int training, int nparts, starnn_tensor *const *x,
                         starnn_tensor *const *y);
/* Backward of the training forward: dx[i] = dL/dx[i] + dx_beta * dx[i];
 * dgamma, dbeta (both, or both NULL) = dL/dgamma + param_beta * old value.
 * y: the forward outputs (needed with the fused ReLU, else may be NULL). */
int starnn_batchnorm_bwd(starnn_batchnorm *bn, int nparts, starnn_tensor *const *x, starnn_tensor *const *y,
                         starnn_tensor *const *dy, starnn_tensor *const *dx, float dx_beta, starnn_tensor *dgamma,
                         starnn_tensor *dbeta, float param_beta);

/* Layouts (runtime/core/tensor.h): x and dx in one layout; y and dy in one
 * layout, x's or, where starnn_batchnorm_out_layout_ok, blocks of a
 * multiple of x's. A decoder's concatenation, in blocks of its halves
 * (the layout its writers keep), is normalised this way into the one NHWC
 * tensor its convolution reads. Other combinations are refused. */
int starnn_batchnorm_out_layout_ok(int64_t channels, int cb, int cby);

/* Mixed precision: the data x, y, dy, dx of every part all fp16 or all
 * bf16; parameters, running and batch statistics, the workspace and the
 * parameter gradients fp32 (statistics summed in double as for fp32). On
 * CPU the _mp kernels above read the 16-bit data directly (in chunks
 * widened on the stack); on CUDA the 16-bit parts are widened to fp32
 * inside the tasks and the fp32 kernels run on them (codelets/halfwrap.h).
 * Either way y and dx are rounded once from the fp32 result. fp32 data
 * runs the fp32 path. Perfmodels starnn_bn_{stats,apply,bwd_reduce,
 * bwd_reduce_relu,bwd_apply,bwd_apply_relu}_{fp16,bf16}. */
int starnn_batchnorm_fwd_mp(starnn_batchnorm *bn, int training, int nparts, starnn_tensor *const *x,
                            starnn_tensor *const *y);
int starnn_batchnorm_bwd_mp(starnn_batchnorm *bn, int nparts, starnn_tensor *const *x, starnn_tensor *const *y,
                            starnn_tensor *const *dy, starnn_tensor *const *dx, float dx_beta, starnn_tensor *dgamma,
                            starnn_tensor *dbeta, float param_beta);

#ifdef __cplusplus
}
#endif
#endif
