/* convt2d: transposed convolution 2x2, stride 2, with bias, NCHW
 * (torch.nn.ConvTranspose2d(C, O, kernel_size=2, stride=2)):
 *   x [N, C, H, W], w [C, O, 2, 2] (PyTorch's in, out, kh, kw), b [O]
 *   y [N, O, 2H, 2W]:  y[n,o,2i+a,2j+b] = b[o] + sum_c x[n,c,i,j] w[c,o,a,b]
 *   bwd_data:    dx = beta dx + the gradient of y with respect to x
 *   bwd_weight:  dw = beta dw + ..., db = beta db + sum_{n,p,q} dy[n,o,p,q]
 * beta == 0 overwrites without reading; beta = 1 accumulates micro-batch
 * gradients. Any tensor may be a part (micro-batch, channel slice) of a
 * larger one, and the activations may be in the blocked layout the CPU
 * kernels want (codelets/conv2d_routes.h: starnn_conv2d_act_cblock).
 *
 * A large call is cut into one task per worker: along the batch when it
 * has a sample per task, else along channels (forward: output channels of
 * y, w and b; backward data: input channels of dx and w; the weight
 * gradient along output channels of dy, dw and db). CPU workers run
 * oneDNN or starnn's direct kernels (where starnn was built with oneDNN)
 * or OpenBLAS sgemm, CUDA workers batched cuBLAS; the kernels are
 * codelets/kernels/convt2d.h, how they are chosen docs/convolutions.md.
 * The functions check dtypes and shapes (else STARNN_EINVAL with a
 * message) and return 0 or a STARNN_E* code. Performance models
 * starnn_convt2d_{fwd,bwd_data,bwd_weight}_{fp32,fp16,bf16} (the 16-bit
 * ones' footprints include the CUDA mode), and
 * starnn_convt2d_{fwd,bwd_data}_sliced_* for the passes that read a whole
 * blocked copy of w. */
#ifndef STARNN_CONVT2D_H
#define STARNN_CONVT2D_H

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* All fp32; b, db required. */
int starnn_convt2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y);
int starnn_convt2d_bwd_data(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx);
int starnn_convt2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw,
                              starnn_tensor *db);

/* Mixed precision: x, w (the 16-bit copy of the weights), y, dy, dx all
 * fp16 or all bf16; b, dw, db fp32. Widened to fp32 inside the task, the
 * fp32 kernels accumulate in fp32, 16-bit outputs are rounded once
 * (codelets/halfwrap.h); bf16 on oneDNN CPUs that have bf16 kernels and
 * 16-bit cuBLAS on CUDA workers in native mode (starnn_cuda_half_conv,
 * taken at submission) compute natively (widening where cuBLAS declines
 * the types). All-fp32 tensors submit the fp32 codelets. */
int starnn_convt2d_fwd_mp(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y);
int starnn_convt2d_bwd_data_mp(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx);
int starnn_convt2d_bwd_weight_mp(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw,
                                 starnn_tensor *db);

/* Both backward passes of one transposed convolution, as
 * starnn_convt2d_bwd_data + starnn_convt2d_bwd_weight, but the two
 * independent passes share the workers: each is split into at most half as
 * many tasks as there are workers (at batch 1 on 2 cores: one task each,
 * side by side, and the whole weight gradient in oneDNN's layout, rather
 * than two channel parts each). _mp: fp16 / bf16 activations as above. */
int starnn_convt2d_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                       float beta_w, starnn_tensor *dw, starnn_tensor *db);
int starnn_convt2d_bwd_mp(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *w, float beta_x, starnn_tensor *dx,
                          float beta_w, starnn_tensor *dw, starnn_tensor *db);

#ifdef __cplusplus
}
#endif
#endif
