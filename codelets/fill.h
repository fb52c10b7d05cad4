/* fill: y = value, for fp32 / fp16 / bf16 tensors.
 * Shapes: y is rows x cols with leading dimension ldy; a strided view (a
 * channel part) fills only its rows x cols, never the elements in between.
 * The value is given as a float and converted once, at submission, to the
 * tensor's dtype (runtime/base/half.h: round to nearest even, overflow to Inf).
 * The 16-bit kernels take that bit pattern, so one kernel serves fp16 and
 * bf16. Perfmodels: starnn_fill_fp32, starnn_fill_fp16, starnn_fill_bf16. */
#ifndef STARNN_FILL_H
#define STARNN_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/fill.h. */

/* Task submission: every element of y becomes value (in y's dtype). */
int starnn_fill(float value, starnn_tensor *y);

#ifdef __cplusplus
}
#endif
#endif
