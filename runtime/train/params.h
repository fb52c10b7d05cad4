/* Trainable parameters, independent of any model: a set of named
 * parameters and what one training step does with them once the model's
 * backward has written its gradients.
 *
 * Per parameter (starnn_param):
 *   master   fp32 value ("master weights" in mixed precision), the tensor a
 *            checkpoint saves under the parameter's name;
 *   compute  what forward and backward read: a copy of master in the
 *            compute dtype (STARNN_PARAM_COMPUTE_COPY with a 16-bit compute
 *            dtype; refreshed by starnn_params_convert), else master;
 *   grad     nslices fp32 tensors shaped like master: the backward of
 *            micro-batch p writes grad[p] (beta 0); after the reduction
 *            grad[0] holds the sum;
 *   state    the optimizer state (Adam: exp_avg, exp_avg_sq; SGD:
 *            momentum_buffer), fp32, zero at the start.
 * Per set: the optimizer settings, the compute dtype and, with loss
 * scaling, the loss-scale state and overflow flag (codelets/amp.h).
 *
 * One training step, all submitted without waiting:
 *   starnn_params_convert(ps)           master -> compute copies (those
 *                                       the last update did not write)
 *   forward; backward writing p->grad[slice], multiplying the loss
 *     gradient by starnn_params_loss_scale(ps) when it is not NULL
 *   starnn_params_reduce(ps)            micro-batch slices, then ranks
 *   starnn_params_update(ps, step)      optimizer, warm-up, loss scaling
 *
 * Reduction order (fixed, so results do not depend on scheduling): for
 * each parameter, a tree of axpy tasks over its slices, stride 1, 2, 4 ...:
 * grad[i] += grad[i + stride] for i = 0, 2 stride, 4 stride ... (log2 n
 * levels, the tasks of a level independent). Then the gradient hook (the
 * cross-rank reduction's place) is called for that parameter.
 *
 * The host <-> device edge (master_host in the configuration, --master
 * host; docs/device-edge.md): the masters and their update stay on the
 * host (the update's tasks on CPU workers), and the models read each
 * parameter through starnn_param_in(p, slice), the copy on the device that
 * micro-batch `slice` runs on: device slice % ndevices of the set's
 * devices (the memory nodes of CUDA / OpenCL workers, in StarPU's order;
 * none: main memory alone, with the same tasks). The first read of a
 * device's copy after an update submits, once per master version: on a
 * CPU worker, compress(master) into the wire (one per version, whatever
 * the number of devices); on the device, decompress(wire) into the
 * device's fp32 copy (registered without a home copy: StarPU allocates it
 * there, and only the wire crosses); with a 16-bit compute dtype and
 * STARNN_PARAM_COMPUTE_COPY, a conversion on the device into its 16-bit
 * copy. The copies are pinned to their device (runtime/core/submit.h:
 * starnn_tensor_pin), and so is grad[slice]: the tasks that read a copy or
 * write a gradient slice run there, and those that read their outputs
 * follow. The reduction sends each gradient slice of such a parameter to
 * the host (compress on its device in wire_grads' format, decompress on a
 * CPU worker into a host slice) and runs the tree there; the update reads
 * the host sum. Parameters the models never read through starnn_param_in
 * (the batch norms' own, read by their layer) keep today's path.
 *
 * Names: the parameter's name is its path in checkpoints (e.g.
 * "enc0/conv1/weight", PyTorch's state_dict key with '/' for '.'); the
 * StarPU tensors are named "<name>.grad<i>", "<name>.exp_avg",
 * "<name>.exp_avg_sq" or "<name>.momentum", "<name>.h" (compute copy),
 * with '.' for '/'. */
#ifndef STARNN_PARAMS_H
#define STARNN_PARAMS_H

#include <stdint.h>

#include "runtime/core/tensor.h"
#include "runtime/train/awp.h"

#ifdef __cplusplus
extern "C" {
#endif

enum starnn_optim_kind { STARNN_OPTIM_ADAM = 0, STARNN_OPTIM_SGD = 1 };

struct starnn_optim {
	enum starnn_optim_kind kind;
	float lr;           /* peak learning rate */
	int warmup;         /* linear warm-up: lr * step / warmup while step < warmup (0: none) */
	float momentum;     /* SGD (dampening 0, no Nesterov) */
	float beta1, beta2, eps; /* Adam */
	float weight_decay; /* L2, added to the gradient (both) */
};
/* Adam with PyTorch's defaults: lr 1e-3, betas 0.9 / 0.999, eps 1e-8, no
 * weight decay, no warm-up, momentum 0. */
void starnn_optim_defaults(struct starnn_optim *o);

enum starnn_loss_scaling {
	STARNN_LOSS_SCALE_NONE = 0,
	STARNN_LOSS_SCALE_DYNAMIC = 1, /* from 2^16, halve on overflow, double after 2000 clean steps */
	STARNN_LOSS_SCALE_STATIC = 2,  /* static_scale; overflowing steps are still skipped */
};

struct starnn_params_config {
	struct starnn_optim optim;
	starnn_dtype compute;                  /* dtype of the compute copies */
	enum starnn_loss_scaling loss_scaling;
	float static_scale;                    /* STARNN_LOSS_SCALE_STATIC */
	/* The host <-> device edge (above); the rest is read only with it. */
	int master_host;
	int wire_weights;                      /* a starnn_wire_format, -1 fp32, STARNN_WIRE_ADAPTIVE */
	int wire_grads;                        /* a starnn_wire_format, -1 fp32 */
	struct starnn_awp_config awp;          /* wire_weights STARNN_WIRE_ADAPTIVE */
};

#define STARNN_PARAM_NAME_MAX 64
/* starnn_params_add flags */
#define STARNN_PARAM_COMPUTE_COPY 1 /* keep master's copy in the compute dtype (weights of 16-bit products) */
#define STARNN_PARAM_BORROWED 2     /* master stays the caller's (not destroyed with the set) */
/* Its gradient is already the sum over the replicas (its backward computed
 * it from statistics summed over them: synchronised batch norms): the
 * exchange between replicas leaves it (runtime/train/dist.h). */
#define STARNN_PARAM_REPLICA_SUMMED 4

typedef struct starnn_param {
	char name[STARNN_PARAM_NAME_MAX];
	starnn_tensor *master;
	starnn_tensor *compute;
	starnn_tensor **grad;
	int nslices;
	starnn_tensor *state[2];
	int flags;
	/* The parameter-owner mode (runtime/train/dist.h, --shard-optimizer): remote
	 * = another rank updates this parameter (no optimizer state here: its
	 * state[] are NULL); exact = the fp32 master the optimizer updates when
	 * master holds what every rank computes with (the weights as they came
	 * through a lossy wire format), NULL: master itself. */
	int remote;
	starnn_tensor *exact;
	/* The version of master (runtime/core/tensor.h) that the compute copy was
	 * last made from, UINT64_MAX: never. Adam's update writes the copy
	 * when it is current before the update (codelets/adam.h:
	 * starnn_adam_cast); starnn_params_convert submits a conversion only
	 * where it is not. */
	uint64_t compute_made;
	/* The host <-> device edge (params.c), NULL without it. */
	struct starnn_param_edge *edge;
} starnn_param;

/* The tensor that the tasks of micro-batch `slice` compute with: with the
 * host <-> device edge, the copy on slice's device in the compute dtype
 * (submitting its transfer when it is older than master); otherwise
 * compute (master when there is no compute copy). NULL on an error (its
 * message deferred to the next starnn_wait, runtime/base/error.h). */
starnn_tensor *starnn_param_in(starnn_param *p, int slice);

typedef struct starnn_params starnn_params;

/* Checks cfg (optimizer settings as PyTorch accepts them, loss scaling)
 * and makes an empty set; with loss scaling, its state and flag tensors.
 * STARNN_EINVAL with a message for bad settings. */
int starnn_params_new(starnn_params **out, const struct starnn_params_config *cfg);
/* Destroys every tensor of the set (masters unless borrowed). NULL is fine. */
void starnn_params_destroy(starnn_params *ps);

/* Adds master (fp32; the set owns it unless STARNN_PARAM_BORROWED) under
 * name, with nslices >= 1 gradient slices, the optimizer state and, with
 * STARNN_PARAM_COMPUTE_COPY and a 16-bit compute dtype, the compute copy.
 * *out (may be NULL) stays valid as long as the set. Names are unique. On
 * failure master is not taken. */
int starnn_params_add(starnn_params *ps, const char *name, starnn_tensor *master, int nslices, int flags,
                      starnn_param **out);
/* The parameters in the order they were added (the order of every loop
 * below). */
int starnn_params_count(const starnn_params *ps);
starnn_param *starnn_params_at(starnn_params *ps, int i);
/* Number of values of all masters. */
int64_t starnn_params_numel(const starnn_params *ps);
const struct starnn_params_config *starnn_params_get_config(const starnn_params *ps);

/* Submits the conversions master -> compute copy where the copy is not
 * current (nothing in fp32; nothing after an Adam update that wrote it). */
int starnn_params_convert(starnn_params *ps);

/* Called by the reduction for each parameter as soon as its micro-batch
 * sum is submitted (grad[0]); it may submit tasks that read and write
 * grad[0] (the cross-rank all-reduce: sum, or average, over ranks) and
 * returns 0 or a starnn error. NULL: none (one rank). */
typedef int (*starnn_grad_hook)(void *ctx, starnn_param *p);
void starnn_params_set_grad_hook(starnn_params *ps, starnn_grad_hook fn, void *ctx);
/* The other places where a distributed set takes part (runtime/train/dist.c):
 *   flag     with loss scaling, after this rank's overflow checks and
 *            before any optimizer task reads the flag (the OR over the
 *            ranks, when each rank checks only its own parameters);
 *   updated  after p's update was submitted, for every parameter in
 *            order, remote ones included (the owner's weights sent to
 *            every rank).
 * NULL members: nothing there. */
struct starnn_params_hooks {
	int (*flag)(void *ctx, starnn_tensor *flag);
	int (*updated)(void *ctx, starnn_param *p);
};
void starnn_params_set_hooks(starnn_params *ps, const struct starnn_params_hooks *h, void *ctx);
/* Frees p's optimizer state (a remote parameter), or makes it again (zero:
 * a checkpoint's or a resume's temporary copy). */
void starnn_params_drop_state(starnn_params *ps, starnn_param *p);
int starnn_params_make_state(starnn_params *ps, starnn_param *p);
/* Sums p's slices into grad[0] (the tree above), then calls the hook. */
int starnn_params_reduce_one(starnn_params *ps, starnn_param *p);
/* starnn_params_reduce_one for every parameter, in order. */
int starnn_params_reduce(starnn_params *ps);

/* The learning rate of step (1-based) with the warm-up. */
float starnn_params_lr(const starnn_params *ps, int64_t step);
/* Submits the update of every parameter at step (1-based) from the
 * reduced gradients grad[0]. Without loss scaling: Adam (bias corrections
 * of step) or SGD (step 1 initialises the momentum). With loss scaling:
 * clears the overflow flag, checks every gradient for Inf / NaN into it,
 * then the optimizer tasks unscale by 1 / scale and skip the whole update
 * when the flag is set (the step count of Adam and SGD is then the applied
 * steps of the state, not step), and the scale is updated. */
int starnn_params_update(starnn_params *ps, int64_t step);

/* Loss scaling. The state tensor that the loss gradient must be multiplied
 * by (starnn_mse_bwd_mp), NULL without loss scaling. */
starnn_tensor *starnn_params_loss_scale(starnn_params *ps);
/* The state (waits for it). STARNN_EINVAL without loss scaling. */
struct starnn_amp_state;
int starnn_params_get_amp_state(starnn_params *ps, struct starnn_amp_state *st);
/* Replaces the state (a resumed run), after the tasks that use it. The
 * scale must be positive and finite, the counters in [0, 2^24] (they are
 * fp32). STARNN_EINVAL without loss scaling or for bad values. */
int starnn_params_set_amp_state(starnn_params *ps, const struct starnn_amp_state *st);
/* Test hook: at update step `step` (0: never) the last parameter's reduced
 * gradient is overwritten with +Inf before the overflow checks (with loss
 * scaling), so that the step is skipped. */
void starnn_params_set_inject_inf_step(starnn_params *ps, int64_t step);

/* The host <-> device edge's bytes since the set was made: per device
 * (STARNN_EDGE_MAX_DEVICES at most), what crossed to it (weights) and from
 * it (gradient slices), as sent (wire bytes) and as fp32. ndevices 0
 * without the edge. node: each device's StarPU memory node (main memory's
 * when there is no device: the same tasks on CPU workers). */
#define STARNN_EDGE_MAX_DEVICES 8
struct starnn_edge_stats {
	int ndevices;
	int node[STARNN_EDGE_MAX_DEVICES];
	uint64_t down[STARNN_EDGE_MAX_DEVICES], down_raw[STARNN_EDGE_MAX_DEVICES];
	uint64_t up[STARNN_EDGE_MAX_DEVICES], up_raw[STARNN_EDGE_MAX_DEVICES];
	uint64_t down_messages[STARNN_EDGE_MAX_DEVICES], up_messages[STARNN_EDGE_MAX_DEVICES];
};
void starnn_params_edge_stats(const starnn_params *ps, struct starnn_edge_stats *st);
/* Adaptive weights (wire_weights STARNN_WIRE_ADAPTIVE): before the first
 * step, the masters' norms (the first observation, as on the rank edge:
 * runtime/train/shard.c); the layers' states as text, one line "<name>
 * <starnn_awp_layer_format>" per parameter (*text malloc'ed), and back (a
 * resumed run: before starnn_params_edge_begin). Without the adaptive
 * edge: begin does nothing, the text is empty, set is STARNN_EINVAL. */
int starnn_params_edge_begin(starnn_params *ps);
int starnn_params_edge_awp_state(const starnn_params *ps, char **text);
int starnn_params_edge_set_awp_state(starnn_params *ps, const char *text);
/* The adaptive rule's tensors of one parameter, for both edges (here and
 * runtime/train/shard.c): norm ||x||^2 and, for a rule that reads steps
 * (starnn_awp_uses_steps; else prev and step are NULL), step ||x -
 * prev||^2 with prev the x of the previous call (1-element norm and step).
 * _observe reads the pending norm and step (the previous call's) into the
 * layer's state: 1 when it gained bits; _submit submits this call's; _begin
 * those of a run's start (the step saved with a resumed state, else 0);
 * _pending the squared step of the observation pending (-1: none). */
int starnn_awp_tensors_observe(const struct starnn_awp_config *c, struct starnn_awp_layer *l, starnn_tensor *norm,
                               starnn_tensor *step);
int starnn_awp_tensors_submit(starnn_tensor *x, starnn_tensor *norm, starnn_tensor *prev, starnn_tensor *step);
int starnn_awp_tensors_begin(starnn_tensor *x, const struct starnn_awp_layer *l, starnn_tensor *norm,
                             starnn_tensor *prev, starnn_tensor *step);
int starnn_awp_tensors_pending(starnn_tensor *step, int pending, double *sq);
/* The weights' wire formats now (adaptive: "int8 x3, trunc16 x2"; a fixed
 * format: its name), into buf. */
void starnn_params_edge_formats(const starnn_params *ps, char *buf, size_t size);

/* What a checkpoint saves besides the masters: the optimizer state slots,
 * state[k] for k < starnn_params_nslots(), named as PyTorch's optimizer
 * state_dict names them ("exp_avg", "exp_avg_sq"; "momentum_buffer"). */
int starnn_params_nslots(const starnn_params *ps);
const char *starnn_params_slot_name(const starnn_params *ps, int k);

#ifdef __cplusplus
}
#endif
#endif
