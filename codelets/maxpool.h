/* Max-pooling 2x2, stride 2, no padding, on NCHW fp32 tensors
 * (torch.nn.MaxPool2d(2)):
 *   x  [N, C, H, W]  ->  y [N, C, H/2, W/2]   (floor: an odd last row /
 *                                              column of x is ignored)
 *   y[n,c,i,j] = max over the window x[n,c,2i..2i+1,2j..2j+1].
 * Ties and NaN follow PyTorch's CPU kernel: the window is scanned in
 * row-major order (x[2i,2j], x[2i,2j+1], x[2i+1,2j], x[2i+1,2j+1]) and an
 * element is taken when it is > the running max or NaN; so the first of
 * equal maxima wins, and a NaN (the last one) wins over everything.
 *
 * Backward: dx = beta * dx + route(dy), where route puts dy[n,c,i,j] on the
 * element of the window picked by the rule above and 0 elsewhere (also on
 * an ignored odd last row / column). The argmax is recomputed from x with
 * the very same comparisons as the forward, so no index mask and no y are
 * needed. beta == 0 overwrites dx without reading it (the codelet then
 * accesses dx in STARPU_W mode).
 *
 * Kernels see the tensors as matrices (runtime/core/tensor.h): n rows (samples)
 * of c*h*w (x, dx) or c*(h/2)*(w/2) (y, dy) elements, each with its own
 * leading dimension, so channel and batch partitions are accepted. h and w
 * are the input's spatial sizes. */
#ifndef STARNN_MAXPOOL_H
#define STARNN_MAXPOOL_H

#include <stddef.h>
#include <starpu.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/maxpool.h. */

/* Codelets: maxpool_bwd with dx in STARPU_RW (beta != 0) and STARPU_W
 * (beta == 0), both with the model starnn_maxpool_bwd_fp32. */
extern struct starpu_codelet starnn_maxpool_fwd_cl;
extern struct starpu_codelet starnn_maxpool_bwd_cl;
extern struct starpu_codelet starnn_maxpool_bwd_w_cl;

/* Task submission. x, y (dx, dy) 4-D fp32 with y = [N, C, H/2, W/2] for
 * x = [N, C, H, W], H, W >= 2; anything else is STARNN_EINVAL. */
int starnn_maxpool_fwd(starnn_tensor *x, starnn_tensor *y);
int starnn_maxpool_bwd(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dx);

/* Mixed precision: x, y, dy, dx all fp16 or all bf16, computed in fp32: on
 * CPU by the _mp kernels, on CUDA by the fp32 kernels on widened copies
 * (codelets/halfwrap.h); the forward is exact, the backward rounds once.
 * All-fp32 tensors submit the fp32 codelets. Perfmodels
 * starnn_maxpool_{fwd,bwd}_{fp16,bf16}. */
int starnn_maxpool_fwd_mp(starnn_tensor *x, starnn_tensor *y);
int starnn_maxpool_bwd_mp(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dx);

#ifdef __cplusplus
}
#endif
#endif
