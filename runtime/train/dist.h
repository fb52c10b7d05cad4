/* Data-distributed training: one replica per MPI rank (StarPU-MPI),
 * what the ranks exchange during training. The process's launch (MPI
 * start, ranks, core binding, the configuration check) is
 * runtime/core/launch.h's; without mpirun (one rank) every collective below
 * returns at once. Models do not call these: the trainer
 * (runtime/train/trainer.h) does, and gives models what they need of the
 * replicas through runtime/train/replica.h.
 *
 * Collectives are submitted into the task graph like any operation, on
 * every rank in the same order (SPMD): StarPU-MPI detached point-to-point
 * requests (starpu_mpi_isend_detached / starpu_mpi_irecv_detached) ordered
 * by the tensors' implicit dependencies, and axpy tasks. Nothing waits.
 *
 * All-reduce (sum) order, fixed: a binomial tree over the ranks, stride
 * 1, 2, 4 ...: rank i (a multiple of 2 stride) adds what rank i + stride
 * holds, then rank 0 sends the sum back down the same tree. That is the
 * order in which starnn_params_reduce sums micro-batch slices, so when
 * every rank holds the same power-of-two number m of consecutive slices, N
 * ranks give bit for bit the sums of 1 rank with N * m slices. Every rank
 * ends with rank 0's bits. Tensors larger than the chunk size (65536
 * elements; starnn_dist_set_chunk) are cut into chunks along their first
 * axis, each with its own tree, so that sending one chunk overlaps adding
 * the previous one; the order of every element's sum is the same as
 * without chunks. A ring (reduce-scatter + all-gather) would move less
 * data per rank for large tensors but sums in another order than one rank
 * does. */
#ifndef STARNN_DIST_H
#define STARNN_DIST_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "runtime/train/awp.h"
#include "runtime/train/params.h"
#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The share of rank `rank` of n items cut in size consecutive parts as
 * evenly as possible (the first n % size parts one larger): [*begin,
 * *begin + *count). */
void starnn_dist_share(int64_t n, int rank, int size, int64_t *begin, int64_t *count);

/* Submits the broadcast of t (whole) from rank 0 to every rank. */
int starnn_dist_broadcast(starnn_tensor *t);
/* Submits the sum of t over the ranks into t on every rank (fp32, whole
 * tensor; order above). */
int starnn_dist_allreduce(starnn_tensor *t);
/* The same tree with add(acc, x) (acc += x, e.g. starnn_bn_slot_add on
 * double sums) in place of the fp32 axpy, on the whole tensor (no
 * chunks). */
typedef int (*starnn_dist_add_fn)(starnn_tensor *acc, starnn_tensor *x);
int starnn_dist_allreduce_with(starnn_tensor *t, starnn_dist_add_fn add);
/* Host values summed over the ranks, in the fixed tree order, on every
 * rank: v[0:n) becomes the sum of every rank's v (through the task
 * graph, as the other collectives; waits for the result). For figures
 * reported once per run (energy, counts), not for training data. */
int starnn_dist_sum_doubles(double *v, int n);
/* The gradients' all-reduce with the chunks sent compressed in wire
 * format `wire` (codelets/wire.h; STARNN_WIRE_FP32 or -1: uncompressed,
 * as starnn_dist_allreduce): a rank compresses its partial sum for its
 * parent; a parent decompresses what each child sent before adding it in
 * fp32; rank 0 compresses the sum once, keeps the decompressed copy
 * itself and sends the same bytes down, so every rank ends with the same
 * bits (the sum rounded to the format, each partial sum too). */
int starnn_dist_allreduce_wire(starnn_tensor *t, int wire);
/* The format of the gradient hook's all-reduce (-1 or STARNN_WIRE_FP32:
 * uncompressed; the default). */
int starnn_dist_set_wire_grads(int wire);
/* The parameter set's gradient hook (starnn_params_set_grad_hook):
 * all-reduces p->grad[0] (in the parameter-owner mode: reduces it to its
 * owner; nothing for a STARNN_PARAM_REPLICA_SUMMED parameter). ctx is
 * unused. */
int starnn_dist_grad_hook(void *ctx, starnn_param *p);
/* Submits the broadcast of every master of the set from rank 0. */
int starnn_dist_broadcast_params(starnn_params *ps);
/* What this rank exchanged since the start, by kind (the gradients'
 * all-reduce, broadcasts, the other all-reduces: batch-norm statistics,
 * host sums): bytes and messages it sent (counted when submitted) and
 * collectives submitted; and
 * exchange_s, the time during which at least one collective of this rank
 * was in flight: from its data being ready on this rank (each part) to
 * the completion of its last send or receive. Compute may run meanwhile:
 * exchange_s is not a cost by itself (tools/bench/dist measures how much
 * of it is hidden). Zeros without MPI. */
enum { STARNN_DIST_GRADIENTS, STARNN_DIST_BROADCAST, STARNN_DIST_OTHER, STARNN_DIST_WEIGHTS, STARNN_DIST_KINDS };
struct starnn_dist_stats {
	uint64_t bytes_sent[STARNN_DIST_KINDS], messages_sent[STARNN_DIST_KINDS];
	uint64_t raw_bytes[STARNN_DIST_KINDS]; /* what was sent, uncompressed (fp32) */
	uint64_t collectives[STARNN_DIST_KINDS];
	double exchange_s;
};
int starnn_dist_stats(struct starnn_dist_stats *out);
/* Collective (every rank calls it, nothing without MPI): the stats summed
 * over the ranks, per step of the steps this run made, as one line
 * "exchange: ..." on rank 0's out, and (json not NULL, rank 0) as one
 * record {"exchange":{...}} (README, "Reading the byte counts"). */
int starnn_dist_report(FILE *out, FILE *json, int64_t steps);
/* Chunk size of the all-reduce in elements (0: the default). */
void starnn_dist_set_chunk(size_t elems);

/* The parameter-owner mode (--shard-optimizer) and the weights' wire
 * format (--wire-weights): Study 2's weight compression on the rank edge.
 *
 * Each parameter has one owner rank (the largest parameters first, each
 * to the rank with the fewest values so far). Per step:
 *   gradients  reduced to the owner (the all-reduce's tree, rooted at the
 *              owner, without the way down; --wire-grads applies);
 *   update     only on the owner, which alone holds the optimizer state
 *              (1/N of it per rank) and the exact fp32 master;
 *   weights    the owner compresses the master in the parameter's wire
 *              format and sends it down a tree rooted at itself; every
 *              rank, the owner included, computes with the decompressed
 *              copy (param->master; the owner's exact master is
 *              param->exact), so the replicas stay identical.
 * With loss scaling the overflow flag is OR-ed over the ranks (each
 * checks the gradients it owns). On one rank (no mpirun) the same runs
 * without messages: the weights still go through their format, so one
 * rank computes what N ranks do.
 *
 * Wire: STARNN_DIST_WIRE_NONE (fp32), a starnn_wire_format, or
 * STARNN_DIST_WIRE_AWP: each parameter's format follows the adaptive rule
 * of runtime/train/awp.h on the norm of its exact master. The norm of step s
 * (after its update) decides the format the weights of step s + 1 are
 * sent in: it is computed by a task on the owner and sent with the
 * weights, and read on the host one step later, so that no step waits. */
#define STARNN_DIST_WIRE_NONE (-1)
#define STARNN_DIST_WIRE_AWP STARNN_WIRE_ADAPTIVE
struct starnn_dist_weights {
	int shard;
	int wire;
	struct starnn_awp_config awp;
};
/* Before starnn_dist_attach. STARNN_EINVAL for bad settings (a wire
 * format without shard, bad AWP settings). */
int starnn_dist_set_weights(const struct starnn_dist_weights *w);
const struct starnn_dist_weights *starnn_dist_get_weights(void);
/* Takes part in ps's steps (its flag and update hooks) as the settings
 * say; nothing without shard. Once all parameters are added. One set at
 * a time (the last attached). */
int starnn_dist_attach(starnn_params *ps);
/* Frees what attach made for ps (before starnn_params_destroy); nothing
 * when ps is not the attached set. */
void starnn_dist_detach(starnn_params *ps);
/* After the masters (and optimizer state) are loaded and broadcast from
 * rank 0: the owners keep the exact masters, the other ranks drop their
 * optimizer state, and the weights are sent in their format (so the
 * first step computes as every later one). A resumed run first gives the
 * adaptive state back (starnn_dist_weights_set_state). */
int starnn_dist_weights_begin(starnn_params *ps, int64_t step);
/* Collective, around a checkpoint that rank 0 writes: before, rank 0's
 * masters and optimizer state receive the owners' exact values; after,
 * rank 0 computes with the wire copies again and drops the others' state. */
int starnn_dist_checkpoint_begin(starnn_params *ps);
int starnn_dist_checkpoint_end(starnn_params *ps);
/* The adaptive state of every parameter as text ("name bits counter seen
 * n_ref" lines; malloc'ed, the caller frees), and back (a resumed run; a
 * name that is not a parameter, or a parameter left out, is an error). */
int starnn_dist_weights_state(char **text);
int starnn_dist_weights_set_state(const char *text);
/* Writes {"step":S,"wire_weights":{"<name>":"<format>",...}} with the
 * parameters whose format changed at the update of step <= S and not
 * logged yet (all of them at the first call: their formats at the start),
 * when any did; f NULL: only forgets them. */
void starnn_dist_weights_log(FILE *f, int64_t step);
/* "int8 12, trunc16 30, trunc24 2 (layers per format)" of the current
 * formats, "" without a wire format. */
void starnn_dist_weights_summary(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
