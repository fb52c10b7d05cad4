/* conv2d: 2-D convolution of NCHW tensors, odd square kernel k (3x3, 1x1
 * ...), stride 1, 'same' zero padding (pad = k / 2), with bias. A
 * cross-correlation with PyTorch's OIHW weight layout:
 *   fwd:         y[n,o,h,w] = b[o] + sum_{c,i,j} w[o,c,i,j] x[n,c,h+i-pad,w+j-pad]
 *   bwd_data:    dx = beta * dx + conv_transpose(dy, w)
 *   bwd_weight:  dw = beta * dw + sum_n dy[n] (x) x[n]
 *   bwd_bias:    db = beta * db + sum_{n,h,w} dy[n,:,h,w] (in the weight task)
 * Shapes: x [N,C,H,W], y / dy [N,O,H,W], w [O,C,k,k], b [O]; any of them
 * may be a part (micro-batch, channel slice) of a larger tensor, and the
 * activations may be in the blocked layout the CPU kernels want
 * (starnn_conv2d_act_cblock, codelets/conv2d_routes.h). beta is 0
 * (overwrite, not read) or 1 (accumulate: skip gradients in a UNet,
 * micro-batch gradients).
 *
 * Large problems are split into several tasks (along the batch, or along
 * channels) so that every worker gets a share even at batch 1. CPU
 * workers run oneDNN (where starnn was built with it) or im2col +
 * OpenBLAS sgemm, CUDA workers cuDNN; the kernels are
 * codelets/kernels/conv2d.h, how they are chosen docs/convolutions.md.
 * The functions check dtypes and shapes (else STARNN_EINVAL with a
 * message) and return 0 or a STARNN_E* code. Performance models:
 * starnn_conv2d_{fwd,bwd_data,bwd_weight,bwd_weight_bias}_{fp32,fp16,bf16}
 * (bwd_weight_bias: the weight task that also computes the bias
 * gradient), and those of the passes that read weights packed into
 * oneDNN's layouts (codelets/conv2d_internal.h). */
#ifndef STARNN_CONV2D_H
#define STARNN_CONV2D_H

#include "runtime/core/tensor.h"


#ifdef __cplusplus
extern "C" {
#endif

/* All fp32. */
int starnn_conv2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y);
int starnn_conv2d_bwd_data(starnn_tensor *dy, starnn_tensor *w, float beta, starnn_tensor *dx);
/* db may be NULL: no bias gradient. */
int starnn_conv2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db);

/* Mixed precision: x, w, y (dy, dx) all fp16 or all bf16 (w is the 16-bit
 * copy of the fp32 master weights); b, dw, db fp32. Products accumulate in
 * fp32 and 16-bit outputs are rounded once (to nearest even). bf16 runs
 * natively on oneDNN CPUs that have bf16 kernels, 16-bit cuDNN on CUDA
 * workers in native mode (starnn_cuda_half_conv); elsewhere the 16-bit
 * buffers are widened to fp32 inside the task and the fp32 kernels run on
 * them (codelets/halfwrap.h). All-fp32 tensors submit the fp32 codelets. */
int starnn_conv2d_fwd_mp(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y);
int starnn_conv2d_bwd_data_mp(starnn_tensor *dy, starnn_tensor *w, float beta, starnn_tensor *dx);
int starnn_conv2d_bwd_weight_mp(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw,
                                starnn_tensor *db);

/* Both backward passes of one convolution (dx may be NULL: no input
 * gradient), as starnn_conv2d_bwd_data + starnn_conv2d_bwd_weight, but the
 * two independent passes share the workers: each is split into at most
 * half as many tasks as there are workers (at batch 1 on 2 cores: one task
 * each, side by side, rather than two channel parts each). _mp: fp16 / bf16
 * activations as above. */
int starnn_conv2d_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                      float beta_w, starnn_tensor *dw, starnn_tensor *db);
int starnn_conv2d_bwd_mp(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                         float beta_w, starnn_tensor *dw, starnn_tensor *db);

#ifdef __cplusplus
}
#endif
#endif
