/* Full reductions of an fp32 tensor into a 1-element fp32 tensor:
 *   sum:   out = beta * out + sum_i x_i
 *   sumsq: out = beta * out + sum_i x_i^2
 * x is rows x cols with leading dimension ldx (any shape, strided views such
 * as batch or channel parts accepted). The sum is accumulated in double on
 * both CPU and CUDA and rounded to fp32 once at the end. beta = 1 adds the
 * result of a micro-batch to the partial result of the previous ones;
 * beta = 0 overwrites out without reading it (a NaN there is ignored). */
#ifndef STARNN_REDUCE_H
#define STARNN_REDUCE_H

#include <stddef.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/reduce.h. */

/* Task submission: x any fp32 tensor, out a 1-element fp32 tensor. */
int starnn_sum(starnn_tensor *x, starnn_tensor *out, float beta);
int starnn_sumsq(starnn_tensor *x, starnn_tensor *out, float beta);

#ifdef __cplusplus
}
#endif
#endif
