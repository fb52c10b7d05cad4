/* Transposed convolution 2x2, stride 2, with bias, NCHW fp32
 * (torch.nn.ConvTranspose2d(C, O, kernel_size=2, stride=2)):
 *   x [N, C, H, W], w [C, O, 2, 2] (PyTorch's in, out, kh, kw), b [O]
 *   y [N, O, 2H, 2W]:  y[n,o,2i+a,2j+b] = b[o] + sum_c x[n,c,i,j] w[c,o,a,b]
 * The 2x2 windows of y do not overlap, so with O4 = 4*O, HW = H*W:
 *   forward:     Z_n (O4 x HW) = w^T (O4 x C) x_n (C x HW), scattered to y
 *                 (row (o,a,b) of Z, column (i,j) -> y[n,o,2i+a,2j+b]) + b;
 *   bwd_data:    dx_n (C x HW) = beta dx_n + w (C x O4) G_n (O4 x HW),
 *                 G_n = dy_n gathered the same way;
 *   bwd_weight:  dw (C x O4) = beta dw + sum_n x_n G_n^T,
 *                db[o] = beta db[o] + sum_{n,p,q} dy[n,o,p,q].
 * beta == 0 overwrites without reading (the codelets then access the
 * outputs in STARPU_W mode); beta = 1 accumulates micro-batch gradients.
 *
 * CPU: OpenBLAS sgemm per sample on tiles of whole input rows (the tile of
 * Z / G stays small), with the scatter / gather in plain loops. CUDA:
 * strided-batched cuBLAS sgemm over samples, own scatter / gather / bias
 * kernels, the Z / G workspace from cudaMallocAsync on the worker's stream.
 *
 * Kernels see the tensors as matrices (runtime/core/tensor.h): x, dx: n rows of
 * c*h*w with ld; y, dy: n rows of o*4*h*w with ld; w, dw: c rows of 4*o with
 * ld; b, db: o contiguous floats. Each row of x / y is dense inside (the
 * channels of one sample), so channel and batch partitions work. Kernels
 * return 0 or a negative STARNN_E* code (workspace allocation); the CUDA
 * kernels also record deferred errors for CUDA / cuBLAS failures. */
#ifndef STARNN_CONVT2D_H
#define STARNN_CONVT2D_H

#include <stddef.h>
#include <starpu.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels (codelets/cpu/convt2d.c, codelets/cuda/convt2d.cu). c, 4*o,
 * h*w and every ld must fit in an int (the submit function checks). */
int starnn_convt2d_fwd_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                           const float *wt, size_t ldw, const float *bias, float *y, size_t ldy);
int starnn_convt2d_bwd_data_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *wt, size_t ldw,
                                const float *dy, size_t lddy, float beta, float *dx, size_t lddx);
int starnn_convt2d_bwd_weight_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                                  const float *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db);
int starnn_convt2d_fwd_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                            const float *wt, size_t ldw, const float *bias, float *y, size_t ldy,
                            void *cublas_handle, void *stream);
int starnn_convt2d_bwd_data_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *wt, size_t ldw,
                                 const float *dy, size_t lddy, float beta, float *dx, size_t lddx,
                                 void *cublas_handle, void *stream);
int starnn_convt2d_bwd_weight_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                                   const float *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db,
                                   void *cublas_handle, void *stream);

/* Native 16-bit CUDA kernels for the mixed-precision codelets on CUDA
 * workers with STARNN_CUDA_HALF_CONV=native (starnn_cuda_half_conv,
 * codelets/conv2d.h: one switch for conv2d and convt2d). dt is STARNN_FP16
 * or STARNN_BF16, the type of x, w, y, dy, dx; bias, dw, db fp32. The GEMMs
 * are those of the fp32 kernels through cublasGemmStridedBatchedEx /
 * cublasGemmEx with 16-bit A and B, fp32 C, CUBLAS_COMPUTE_32F and
 * CUBLAS_GEMM_DEFAULT_TENSOR_OP (tensor cores, fp32 accumulation):
 *   fwd:        Z (fp32) = w^T x_n, then y = round(Z + b): the fp32 bias is
 *               added to the fp32 sum and the result rounded once (to
 *               nearest even) by the scatter kernel;
 *   bwd_data:   T (fp32) = w G_n (G_n gathered 16-bit, a permutation), then
 *               dx = round(T + beta * dx) in fp32, rounded once; beta == 0
 *               does not read dx;
 *   bwd_weight: dw = beta dw + sum_n x_n G_n^T directly into the fp32 dw
 *               (cuBLAS' beta; 0 does not read dw), db = beta db + fp32
 *               sums of the 16-bit dy.
 * Return 0; STARNN_CONVT2D_UNSUPPORTED when cuBLAS answers NOT_SUPPORTED or
 * ARCH_MISMATCH before any output was written (the caller then widens, see
 * starnn_convt2d_fwd_mp); or a negative STARNN_E* code with the error
 * already deferred (starnn_defer_error), as the fp32 CUDA kernels. */
#define STARNN_CONVT2D_UNSUPPORTED 1
int starnn_convt2d_fwd_cuda_half(size_t n, size_t c, size_t o, size_t h, size_t w, starnn_dtype dt, const void *x,
                                 size_t ldx, const void *wt, size_t ldw, const float *bias, void *y, size_t ldy,
                                 void *cublas_handle, void *stream);
int starnn_convt2d_bwd_data_cuda_half(size_t n, size_t c, size_t o, size_t h, size_t w, starnn_dtype dt,
                                      const void *wt, size_t ldw, const void *dy, size_t lddy, float beta, void *dx,
                                      size_t lddx, void *cublas_handle, void *stream);
int starnn_convt2d_bwd_weight_cuda_half(size_t n, size_t c, size_t o, size_t h, size_t w, starnn_dtype dt,
                                        const void *x, size_t ldx, const void *dy, size_t lddy, float beta, float *dw,
                                        size_t lddw, float *db, void *cublas_handle, void *stream);

/* oneDNN kernels (codelets/cpu/conv2d_dnnl.c: oneDNN deconvolution
 * primitives, blocked layouts with reorders around each call, as for
 * conv2d), used by the CPU codelets where starnn has oneDNN and the
 * conv2d CPU backend is oneDNN (starnn_conv2d_cpu_backend). dt: fp32, or
 * bf16 for x, w, y (dy, dx) with fp32 accumulation; bias, dw fp32. The
 * weight pass computes the bias gradient in the same primitive (db = beta *
 * db + the sum of dy) unless db is NULL. Return 0 or a STARNN_E* code. */
/* xb, yb: the layouts of x (dx) and y (dy), as struct starnn_conv2d_geom's. */
int starnn_convt2d_fwd_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb, starnn_dtype dt,
                            const void *x, size_t ldx, const void *wt, size_t ldw, const float *bias, void *y,
                            size_t ldy);
int starnn_convt2d_bwd_data_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                 starnn_dtype dt, const void *wt, size_t ldw, const void *dy, size_t lddy, float beta,
                                 void *dx, size_t lddx);
/* The same reading its weights from whole, a copy of all of PyTorch's [c,
 * o, 2, 2] tensor (whose input channels row0 .. row0 + c these are) in a
 * blocked layout made by starnn_blocked_make_cpu (codelets/copy.h: the
 * layout's description as its header; codelets/conv2d.h:
 * starnn_conv2d_blocked_copy): where it is the layout oneDNN's
 * deconvolution reads and the part is whole blocks of it, the weights are
 * a contiguous slice; else w is reordered as without it (whole NULL).
 * starnn_convt2d_dnnl_bwd_data_layout: that layout of the backward-data
 * pass of this geometry (dt the primitive's, dy and dx dense) where
 * runtime/core/tensor.h describes it (then 1, *L with header and align 0), 0
 * otherwise (the direct kernels, layouts not described, no oneDNN). */
/* The forward's as the backward data's below: whole is a copy of all of
 * w in the layout of the 1x1 convolution [4o, c] the forward runs as where
 * oneDNN picks a blocked output layout (a layout of w's transpose:
 * runtime/core/tensor.h trans), of which the part's output channels (o0 .. o0
 * + o: row0 = 4 o0) read their slice. starnn_convt2d_dnnl_fwd_layout:
 * that layout (then 1), 0 where the forward runs otherwise. */
int starnn_convt2d_fwd_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const void *x, size_t ldx, const void *wt, size_t ldw,
                                   const void *whole, size_t row0, const float *bias, void *y, size_t ldy);
int starnn_convt2d_dnnl_fwd_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, struct starnn_blocked_weights *L);
int starnn_convt2d_bwd_data_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const void *wt, size_t ldw, const void *whole, size_t row0,
                                        const void *dy, size_t lddy, float beta, void *dx, size_t lddx);
int starnn_convt2d_dnnl_bwd_data_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, struct starnn_blocked_weights *L);
/* Whether this thread's fp32 primitive of the forward (fwd 1) or the
 * backward-data pass (beta its) of this geometry, its input rows ldin
 * apart, w's ldw, its output's ldout, reads its weights from whole at row0
 * as they are (the widened 16-bit passes widen w only where it does not);
 * 0 too where the pass does not run on oneDNN's primitives. */
int starnn_convt2d_dnnl_sliced_ok(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  size_t ldin, size_t ldw, size_t ldout, float beta, const void *whole, size_t row0);
int starnn_convt2d_bwd_weight_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const void *x, size_t ldx, const void *dy, size_t lddy, float beta,
                                   float *dw, size_t lddw, float *db);
/* The weight gradient into dw in layout L (runtime/core/tensor.h: wl; ob 0:
 * [c, o, 2, 2] rows lddw apart, as above; else dense in L, a layout of
 * PyTorch's tensor: rows c, inner channels o), which the route of this
 * pass must write (starnn_convt2d_dnnl_dw_layout); STARNN_EINVAL
 * otherwise. starnn_convt2d_dnnl_dw_layout: whether that pass (dt: the
 * primitive's, x and dy dense) runs oneDNN's deconvolution, whose dw
 * layout, a blocked fp32 one of whole blocks, goes into *L (then 1); 0 on
 * the routes of their own (the bf16 GEMM, the direct kernels). */
int starnn_convt2d_bwd_weight_dnnl_in(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                      starnn_dtype dt, const void *x, size_t ldx, const void *dy, size_t lddy,
                                      float beta, float *dw, size_t lddw, float *db, const struct starnn_blocked_weights *L);
int starnn_convt2d_dnnl_dw_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  starnn_dtype dt, struct starnn_blocked_weights *L);
/* Direct fp32 kernels (codelets/cpu/convt2d.c: AVX2 + FMA), for the
 * layouts oneDNN's AVX2 kernels keep: x / dx in blocks of xb channels and
 * y / dy in blocks of yb (runtime/core/tensor.h; 1: NCHW), samples ldx / ldy /
 * lddy apart, w / dw PyTorch's [c, o, 2, 2] (rows ldw apart); beta as
 * above. The pass's vector side must be in blocks (a multiple of 8) with a
 * multiple of 8 channels, the other side may be in any layout:
 *   forward and weight gradient: y / dy, starnn_convt2d_direct_ok(o, yb);
 *   data gradient: dx, starnn_convt2d_direct_ok(c, xb)
 * (also: x86 with AVX2 in use). bias may be NULL (none). work holds
 * starnn_convt2d_direct_workspace(c, o) floats (8-byte aligned). Sums in
 * fp32 (db: partial sums added in double). Against oneDNN's passes
 * (tools/bench/conv --convt) they read the strided dy halves of the
 * UNet's concatenations in place and write y / dx / dw where they go: no
 * reorder of w, dw or activations, no z buffer spread into y. */
int starnn_convt2d_direct_ok(size_t ch, size_t b);
size_t starnn_convt2d_direct_workspace(size_t c, size_t o);
void starnn_convt2d_fwd_direct_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   const float *x, size_t ldx, const float *wt, size_t ldw, const float *bias,
                                   float *y, size_t ldy, float *work);
void starnn_convt2d_bwd_weight_direct_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                          const float *x, size_t ldx, const float *dy, size_t lddy, float beta,
                                          float *dw, size_t lddw, float *db, float *work);
void starnn_convt2d_bwd_data_direct_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        const float *wt, size_t ldw, const float *dy, size_t lddy, float beta,
                                        float *dx, size_t lddx, float *work);
/* Which kernels the oneDNN backend's fp32 passes take (environment
 * variable STARNN_CONVT2D, read once; starnn_convt2d_route_set overrides
 * it; starnn_convt2d_route_check: STARNN_EINVAL with a message for another
 * value). auto (the default): the direct kernels where they apply and
 * oneDNN's fp32 layout is nChw8c (its AVX2 kernels; on AVX-512 oneDNN
 * keeps its own: not measured there); direct: wherever they apply; dnnl:
 * oneDNN (its deconvolution; the forward as a 1x1 convolution to 4o
 * channels spread into y). starnn_convt2d_direct: whether the pass whose
 * vector side has ch channels in blocks of b runs on a direct kernel in
 * dt. */
int starnn_convt2d_direct(size_t ch, size_t b, starnn_dtype dt);
enum starnn_convt2d_route {
	STARNN_CONVT2D_AUTO = 0,
	STARNN_CONVT2D_DNNL = 1,
	STARNN_CONVT2D_DIRECT = 2,
};
int starnn_convt2d_route_set(enum starnn_convt2d_route mode);
int starnn_convt2d_route_check(void);
/* The start-up line's words when the CPU workers run the transposed
 * convolutions of a model in dt (fp32, or 16-bit) with activations in
 * blocks of cblock (starnn_conv2d_act_cblock) on the direct kernels; NULL
 * when they run on oneDNN or im2col + sgemm. */
const char *starnn_convt2d_cpu_route(starnn_dtype dt, int cblock);
/* db[o] = beta * db[o] + sum of dy[:, o, :, :] (dy [n, o, 2h, 2w], fp32 or
 * bf16 / fp16, rows lddy apart), accumulated in double. */
void starnn_convt2d_bias_grad_cpu(size_t n, size_t o, size_t h, size_t w, starnn_dtype dt, const void *dy,
                                  size_t lddy, float beta, float *db);

/* Codelets; the _w variants access the outputs in STARPU_W (beta == 0) and
 * share the models starnn_convt2d_bwd_data_fp32 / _bwd_weight_fp32. */
extern struct starpu_codelet starnn_convt2d_fwd_cl;
extern struct starpu_codelet starnn_convt2d_bwd_data_cl;
extern struct starpu_codelet starnn_convt2d_bwd_data_w_cl;
extern struct starpu_codelet starnn_convt2d_bwd_weight_cl;
extern struct starpu_codelet starnn_convt2d_bwd_weight_w_cl;

/* Task submission: checks dtypes (fp32) and shapes as above, else
 * STARNN_EINVAL. */
int starnn_convt2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y);
int starnn_convt2d_bwd_data(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx);
int starnn_convt2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw,
                              starnn_tensor *db);

/* Mixed precision: x, w (the 16-bit copy of the weights), y, dy, dx all
 * fp16 or all bf16; b, dw, db fp32. Widened to fp32 inside the task, the
 * fp32 kernels above accumulate in fp32, 16-bit outputs are rounded once
 * (codelets/halfwrap.h); bf16 on oneDNN CPUs and, with
 * STARNN_CUDA_HALF_CONV=native (taken at submission), the 16-bit cuBLAS
 * kernels above on CUDA workers compute natively (widening where cuBLAS
 * declines the types). All-fp32 tensors submit the fp32 codelets.
 * Perfmodels starnn_convt2d_{fwd,bwd_data,bwd_weight}_{fp16,bf16}, whose
 * footprints include the CUDA mode. */
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
