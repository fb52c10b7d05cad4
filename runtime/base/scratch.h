/* Per-thread scratch buffers for the temporaries of CPU kernels.
 *
 * Each thread (in practice: each StarPU CPU worker) owns STARNN_SCRATCH_SLOTS
 * buffers, 64-byte aligned, grown to the largest size asked for and freed
 * when the thread exits. A worker runs one task at a time, so every codelet
 * shares the same buffers; a task that needs several temporaries at once
 * takes them from distinct slots, and each user owns its slots (below), so
 * that nesting (a 16-bit wrapper around a kernel with its own workspace)
 * never hands out one buffer twice. Scratch memory is not in starnn's
 * tensor memory count (runtime/core/tensor.h). */
#ifndef STARNN_SCRATCH_H
#define STARNN_SCRATCH_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

enum {
	STARNN_SCRATCH_HALF = 0,  /* codelets/halfwrap.h: fp32 copies of 16-bit buffers, 6 slots */
	STARNN_SCRATCH_HALF_SLOTS = 6,
	STARNN_SCRATCH_CONV = 6,  /* codelets/conv2d.c: the im2col workspace */
	STARNN_SCRATCH_DNNL = 7,  /* codelets/cpu/conv2d_dnnl.c: reordered a, b, out, the scratchpad, a bias gradient,
	                           * the transposed weight gradient's gathered dy and product, a tiled weight
	                           * gradient's sum, the transposed weight gradient's NHWC x */
	STARNN_SCRATCH_DNNL_SLOTS = 9,
	STARNN_SCRATCH_GEMM = 16, /* codelets/cpu/gemm.c: widened 16-bit operands */
	STARNN_SCRATCH_GRAD = 17, /* codelets/copy.c: an optimizer's tile of a blocked gradient, as rows */
	STARNN_SCRATCH_SLOTS = 18
};

/* Slot `slot` of the calling thread's scratch, at least `bytes` long (its
 * old contents are lost when it grows). NULL when the memory cannot be
 * had or the slot is out of range: the caller reports the error. */
void *starnn_scratch(int slot, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
