/* Level-1 operations on fp32 tensors of equal shape:
 *   axpy:  y = alpha * x + y
 *   scale: y = alpha * y
 *   add:   z = alpha * x + beta * y
 * Shapes: every operand is rows x cols with its own leading dimension
 * (elements between row starts), so partitions (micro-batches, channel
 * slices) are accepted as they are. */
#ifndef STARNN_AXPY_H
#define STARNN_AXPY_H

#include <stddef.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/axpy.h. */

/* Task submission. */
int starnn_axpy(float alpha, starnn_tensor *x, starnn_tensor *y);
int starnn_scale(float alpha, starnn_tensor *y);
int starnn_add(float alpha, starnn_tensor *x, float beta, starnn_tensor *y, starnn_tensor *z);

#ifdef __cplusplus
}
#endif
#endif
