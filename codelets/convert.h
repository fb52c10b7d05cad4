/* convert: y = x converted between fp32, fp16 and bf16 (all six ordered
 * pairs; equal dtypes fall back to copy). Rounding is to nearest, ties to
 * even; Inf is kept and NaN stays NaN with its sign (narrowing makes it a
 * quiet NaN; widening fp16 -> fp32 with F16C or on CUDA may set the quiet
 * bit of a signalling NaN, which runtime/base/half.h keeps); fp16 subnormals are
 * produced and read exactly; too large values become Inf.
 * fp16 <-> bf16 goes through fp32, which holds both exactly, so there is a
 * single rounding. The reference for every result is runtime/base/half.h.
 *
 * Shapes: x and y are rows x cols, each with its own leading dimension
 * (views are fine). 16-bit data is passed as uint16_t bit patterns.
 *
 * Naming: unlike the other operations (starnn_<op>_<dtype>), convert's
 * performance models and codelets are named by the pair, source first:
 * perfmodel symbol starnn_convert_<src>_to_<dst>, e.g.
 * starnn_convert_fp32_to_bf16, and codelet / task name
 * "convert_fp32_to_bf16". */
#ifndef STARNN_CONVERT_H
#define STARNN_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Task submission: the codelet is picked from x's and y's dtypes; equal
 * dtypes submit starnn_copy(x, y). x and y must have the same rows x cols. */
int starnn_convert(starnn_tensor *x, starnn_tensor *y);

#ifdef __cplusplus
}
#endif
#endif
