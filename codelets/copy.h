/* copy: y = x, for two tensors of the same dtype (fp32, fp16 or bf16) and
 * the same shape. Each has its own leading dimension, so a dense tensor can
 * be copied into a channel part of another (a concatenation) and back.
 * The kernels move bytes: elem_size is 4 (fp32) or 2 (fp16 / bf16), and
 * the two layouts (runtime/core/tensor.h: cblock) must be the same.
 * Perfmodels: starnn_copy_fp32, starnn_copy_fp16, starnn_copy_bf16. */
#ifndef STARNN_COPY_H
#define STARNN_COPY_H

#include <stddef.h>

#include "runtime/core/submit.h"
#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Task submission. copy(x, x) does nothing. */
int starnn_copy(starnn_tensor *x, starnn_tensor *y);

/* Updates that keep copies current (the optimizers: codelets/adam.c,
 * codelets/sgd.c). Where weights w are also kept in a kernel's blocked
 * layout (conv2d's packed weights: runtime/core/tensor.h, starnn_tensor_copies),
 * the task that updates w writes each chunk of updated rows into those
 * copies while it is in cache, instead of a packing task reading w again
 * before the next pass that reads them. CPU only: the copies exist only
 * where no device worker (CUDA, OpenCL) does.
 *
 * starnn_submit_with_copies submits d, a task that writes all of w, whose
 * first `base` tensors are set and whose args (args_size bytes, copied at
 * submission) hold *c: where w has copies (1 or 2), it fills *c with their
 * layouts, adds them to d as buffers base, base + 1 (read-write), submits
 * on cl[n - 1] (codelets of base + n buffers whose CPU function calls
 * starnn_copies_run) and records the copies as current; else it submits d
 * as it is. */
#define STARNN_MAX_COPIES 2
struct starnn_copies {
	struct starnn_blocked_weights L[STARNN_MAX_COPIES];
	int n;
	/* the layout of the gradient the update reads (runtime/core/tensor.h: wl;
	 * ob = 0: rows of w's shape): the tiles are whole blocks of it too */
	struct starnn_blocked_weights G;
};
/* grad: NULL, or the gradient the update reads (its buffer's matrix view
 * is w's, whatever its layout). Where grad is in a blocked weight layout,
 * the task goes to cl[n] with G set even without copies (n = 0), so that
 * its tiles read grad through G (starnn_copies_grad). cl has
 * STARNN_MAX_COPIES + 1 entries, by number of copies (cl[0] may be NULL
 * where grad is). */
int starnn_submit_with_copies(struct starnn_task_desc *d, int base, starnn_tensor *w, starnn_tensor *grad,
                              struct starnn_copies *c, const void *args, size_t args_size,
                              struct starpu_codelet *const cl[STARNN_MAX_COPIES + 1]);
/* In an update's tile (rows [r0, r1), columns [c0, c1) of w): the tile of
 * the gradient whose buffer begins at g (rows ldg apart) as rows, *ld
 * apart: g itself where c->G is not blocked, else gathered into this
 * thread's scratch (NULL with an error deferred when that cannot be had). */
const float *starnn_copies_grad(const struct starnn_copies *c, const float *g, size_t ldg, size_t r0, size_t r1,
                                size_t c0, size_t c1, size_t *ld);
/* One such codelet (CPU only, fp32) named #op, var##_cl, with the
 * perfmodel of op (STARNN_PERFMODEL(op, fp32): starnn_<op>_fp32, defined
 * once for its codelets of 1 and 2 copies, whose footprints differ). */
#define STARNN_COPIES_CL(var, op, fn, nb, ...) STARNN_COPIES_CL_DT(var, #op, op, fp32, fn, nb, __VA_ARGS__)
/* The same named label, with the perfmodel starnn_<op>_<dt> (the 16-bit
 * copies' writers: codelets/adam.c, codelets/convert.c). */
#define STARNN_COPIES_CL_DT(var, label, op, dt, fn, nb, ...)                                                  \
	static struct starpu_codelet var##_cl = {                                                             \
		.name = label,                                                                                \
		.cpu_funcs = {fn},                                                                            \
		.cpu_funcs_name = {#fn},                                                                      \
		.nbuffers = nb,                                                                               \
		.modes = {__VA_ARGS__},                                                                       \
		STARNN_MODELS(op, dt),                                                                        \
	};
/* In such a task's CPU function: update(ctx, r0, r1, c0, c1) over tiles of
 * w (buffer 0), each then written into the copies (buffers first, first +
 * 1 ...): starnn_update_with_copies. */
void starnn_copies_run(void *buffers[], int first, const struct starnn_copies *c,
                       void (*update)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
