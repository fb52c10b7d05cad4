/* Internal to runtime/train: what dist.c (the collectives) and shard.c
 * (the parameter-owner mode) give each other. */
#ifndef STARNN_DIST_INTERNAL_H
#define STARNN_DIST_INTERNAL_H

#include "runtime/train/params.h"

/* The owner's weights down its tree: w (format f) when compressed, else x
 * (fp32); src is the owner's exact master (x when there is none); norm
 * and step, when not NULL, are the owner's 1-element tensors of the
 * adaptive rule, sent the same way. */
int starnn_dist_weights_down(starnn_tensor *x, starnn_tensor *src, starnn_tensor *w, int f, starnn_tensor *norm,
                             starnn_tensor *step, int owner);
/* The gradient's sum over the ranks into the owner's t only. */
int starnn_dist_reduce_to(starnn_tensor *t, int wire, int owner);
/* t of rank `from` into t of rank 0 (a checkpoint's gathering). Every
 * rank calls it (the message tags follow the collectives' count); t is
 * used on ranks 0 and from only. */
int starnn_dist_to_rank0(starnn_tensor *t, int from);
/* The gradients' wire format (-1: none). */
int starnn_dist_grad_wire(void);
/* Whether a set is attached in the parameter-owner mode, and p's owner
 * there (-1: p is not in it). */
int starnn_dist_sharded(void);
int starnn_dist_owner_of(starnn_param *p);

#endif
