/* What a model sees of the replicas it is trained with: in data-parallel
 * training (mpirun, runtime/train/dist.h) every rank holds one replica of
 * the model and trains it on its share of each batch. A model asks for
 * what it needs by what it does, never by rank: its share of n items, a
 * tensor summed over the replicas (batch-norm statistics, losses), the
 * replicas' parts of a tensor side by side. Without mpirun there is one
 * replica and every sum below returns at once. The trainer
 * (runtime/train/trainer.h) does the rest: the batch share, the broadcast
 * of the initial weights, the gradients' exchange, the sharded optimizer. */
#ifndef STARNN_TRAIN_REPLICA_H
#define STARNN_TRAIN_REPLICA_H

#include <stdint.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of replicas (ranks; 1 without mpirun). */
int starnn_replicas(void);
/* This replica's share of n items cut in consecutive parts as evenly as
 * possible (the first n % replicas parts one larger): [*begin, *begin +
 * *count). */
void starnn_replica_share(int64_t n, int64_t *begin, int64_t *count);

/* Submits the sum of t over the replicas into t on every replica (fp32,
 * the fixed tree order of runtime/train/dist.h: bit for bit the sums one
 * replica makes of as many consecutive parts). */
int starnn_replica_sum(starnn_tensor *t);
/* The same with add(acc, x) (acc += x) in place of the fp32 sum, e.g.
 * starnn_bn_slot_add on batch-norm statistics (codelets/batchnorm.h). */
typedef int (*starnn_replica_add_fn)(starnn_tensor *acc, starnn_tensor *x);
int starnn_replica_sum_with(starnn_tensor *t, starnn_replica_add_fn add);
/* Host values summed over the replicas, on every replica (waits). For
 * figures reported once (evaluation metrics), not for training data. */
int starnn_replica_sum_doubles(double *v, int n);

/* The replicas' parts side by side: `all` is split along its first axis
 * into replicas() x k parts, of which this replica owns k
 * (starnn_replica_part(all, k, p), p < k). starnn_replica_gather zeroes
 * the other replicas' parts and sums `all` over the replicas: every
 * replica then holds every replica's parts, bit for bit (x + 0 = x); e.g.
 * the micro-batch losses of a step, summed on the host in the order one
 * replica with as many micro-batches would. */
starnn_tensor *starnn_replica_part(starnn_tensor *all, int k, int p);
int starnn_replica_gather(starnn_tensor *all, int k);

#ifdef __cplusplus
}
#endif
#endif
