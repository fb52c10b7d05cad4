/* wire: compress / decompress of fp32 tensors that cross a memory boundary
 * (host <-> GPU, rank <-> rank). The sending side runs compress (fp32 ->
 * wire bytes), the receiving side decompress (wire bytes -> fp32); the wire
 * buffer is a 1-D u8 tensor of starnn_wire_bytes(f, n) bytes.
 *
 * The formats (byte layouts, rounding, non-finite values) are those the
 * kernels implement: codelets/kernels/wire.h.
 *
 * n = 0: starnn_wire_bytes is 0 and the kernels do nothing; tensors always
 * have n >= 1, so the submit functions never see it.
 *
 * The ladder of adaptive weight precision is 8 -> 16 -> 24 -> 32 bits:
 * starnn_wire_ladder gives the format of a width for the truncating family
 * (int8, trunc16, trunc24, fp32) or the rounding one (int8, rne16, rne24,
 * fp32).
 *
 * x (compress) and y (decompress) may be views; their values are taken in
 * row-major order.
 *
 * Naming: performance models starnn_compress_<format> and
 * starnn_decompress_<format>, codelets / task names compress_<format> and
 * decompress_<format>. */
#ifndef STARNN_WIRE_H
#define STARNN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/tensor.h"
/* The formats, their descriptors and the kernels (which tests and
 * programs call directly). */
#include "codelets/kernels/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The formats, their names, sizes and the ladder: codelets/kernels/wire.h. */

/* Task submission. x: fp32, any shape (a view is fine), n = numel(x);
 * wire: u8 with numel(wire) = starnn_wire_bytes(f, n), contiguous. Errors
 * (STARNN_EINVAL, with the tensors described): NULL, unknown format, wrong
 * dtype, wrong wire size, a strided wire. */
int starnn_compress(starnn_tensor *x, starnn_wire_format f, starnn_tensor *wire);
/* wire as above for n = numel(y); y: fp32, any shape (a view is fine). */
int starnn_decompress(starnn_tensor *wire, starnn_wire_format f, starnn_tensor *y);

#ifdef __cplusplus
}
#endif
#endif
