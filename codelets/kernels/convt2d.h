/* convt2d kernels: transposed convolution 2x2, stride 2, with bias
 * (torch.nn.ConvTranspose2d(C, O, kernel_size=2, stride=2)). Pure: raw
 * pointers, shapes and arguments, no StarPU (codelets/convt2d.c is the
 * glue).
 *
 * Shapes, as matrices (each row of x / y is the dense channels of one
 * sample, so batch and channel parts work):
 *   x, dx  [n, c, h, w]       n rows of c*h*w, samples ldx (lddx) apart
 *   y, dy  [n, o, 2h, 2w]     n rows of o*4*h*w, samples ldy (lddy) apart
 *   w, dw  [c, o, 2, 2]       PyTorch's (in, out, kh, kw): c rows of 4*o,
 *                             ldw (lddw) apart
 *   b, db  [o]                o contiguous floats
 *   y[n,o,2i+a,2j+b] = b[o] + sum_c x[n,c,i,j] w[c,o,a,b]
 * The 2x2 windows of y do not overlap, so with O4 = 4*O, HW = H*W:
 *   forward:     Z_n (O4 x HW) = w^T (O4 x C) x_n (C x HW), scattered to y
 *                 (row (o,a,b) of Z, column (i,j) -> y[n,o,2i+a,2j+b]) + b;
 *   bwd_data:    dx_n (C x HW) = beta dx_n + w (C x O4) G_n (O4 x HW),
 *                 G_n = dy_n gathered the same way;
 *   bwd_weight:  dw (C x O4) = beta dw + sum_n x_n G_n^T,
 *                db[o] = beta db[o] + sum_{n,p,q} dy[n,o,p,q].
 * beta == 0 overwrites without reading; beta = 1 accumulates micro-batch
 * gradients. Layouts xb, yb of x (dx) and y (dy) as conv2d's
 * (codelets/kernels/conv2d.h), for the oneDNN and direct kernels. Kernels
 * return 0 or a negative STARNN_E* code (workspace allocation); the CUDA
 * kernels also record deferred errors for CUDA / cuBLAS failures. */
#ifndef STARNN_KERNELS_CONVT2D_H
#define STARNN_KERNELS_CONVT2D_H

#include <stddef.h>

#include "codelets/kernels/conv2d.h"
#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* CPU (codelets/cpu/convt2d.c): OpenBLAS sgemm per sample on tiles of
 * whole input rows (the tile of Z / G stays small), with the scatter /
 * gather in plain loops; NCHW. c, 4*o, h*w and every ld must fit in an
 * int. */
int starnn_convt2d_fwd_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                           const float *wt, size_t ldw, const float *bias, float *y, size_t ldy);
int starnn_convt2d_bwd_data_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *wt, size_t ldw,
                                const float *dy, size_t lddy, float beta, float *dx, size_t lddx);
int starnn_convt2d_bwd_weight_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                                  const float *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db);
/* db[o] = beta * db[o] + sum of dy[:, o, :, :] (dy [n, o, 2h, 2w], fp32 or
 * bf16 / fp16, rows lddy apart), accumulated in double. */
void starnn_convt2d_bias_grad_cpu(size_t n, size_t o, size_t h, size_t w, starnn_dtype dt, const void *dy,
                                  size_t lddy, float beta, float *db);

/* Direct fp32 kernels (codelets/cpu/convt2d.c: AVX2 + FMA) for the
 * layouts oneDNN's AVX2 kernels keep: x / dx in blocks of xb channels and
 * y / dy in blocks of yb (1: NCHW), w / dw PyTorch's [c, o, 2, 2]. The
 * pass's vector side must be in blocks (a multiple of 8) with a multiple
 * of 8 channels, the other side may be in any layout:
 *   forward and weight gradient: y / dy, starnn_convt2d_direct_ok(o, yb);
 *   data gradient: dx, starnn_convt2d_direct_ok(c, xb)
 * (also: x86 with AVX2 in use). bias may be NULL (none). work holds
 * starnn_convt2d_direct_workspace(c, o) floats (8-byte aligned). Sums in
 * fp32 (db: partial sums added in double). They read the strided dy
 * halves of a UNet's concatenations in place and write y / dx / dw where
 * they go: no reorder of w, dw or activations. */
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
/* Whether the pass whose vector side has ch channels in blocks of b runs
 * on a direct kernel in dt under routes r (r->convt; the oneDNN backend's
 * answer: 0 without oneDNN). */
int starnn_convt2d_direct(size_t ch, size_t b, starnn_dtype dt, const struct starnn_conv2d_routes *r);

/* oneDNN (codelets/cpu/conv2d_dnnl_convt.c: its deconvolution primitives,
 * the forward as a 1x1 convolution spread into y; the direct kernels above
 * where the routes take them; the bf16 weight gradient as one bf16 GEMM
 * where bf16 is native). dt: fp32, or bf16 for x, w, y (dy, dx) with fp32
 * accumulation; bias, dw fp32. The weight pass computes the bias gradient
 * (db = beta * db + the sum of dy) unless db is NULL. Return 0 or a
 * STARNN_E* code. */
int starnn_convt2d_fwd_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *wt,
                            size_t ldw, const float *bias, void *y, size_t ldy);
int starnn_convt2d_bwd_data_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                 starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *wt, size_t ldw,
                                 const void *dy, size_t lddy, float beta, void *dx, size_t lddx);
int starnn_convt2d_bwd_weight_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x, size_t ldx,
                                   const void *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db);
/* The same reading their weights from whole, a copy of all of PyTorch's
 * [c, o, 2, 2] tensor in a blocked layout (its description as the copy's
 * header): where it is the layout oneDNN reads and the part is whole
 * blocks of it, the weights are a contiguous slice; else w is reordered as
 * without it (whole NULL). Backward data: a layout of w's rows, the
 * part's input channels row0 .. row0 + c. Forward: a layout of the 1x1
 * convolution [4o, c] the forward runs as where oneDNN picks a blocked
 * output layout (a layout of w's transpose: trans), the part's output
 * channels o0 .. o0 + o reading from row0 = 4 o0.
 * starnn_convt2d_dnnl_fwd_layout / _bwd_data_layout: that layout of the
 * pass of this geometry (dt the primitive's, dy and dx dense) where
 * runtime/base/types.h describes it (then 1, *L with header and align 0),
 * 0 otherwise (the direct kernels, layouts not described, no oneDNN). */
int starnn_convt2d_fwd_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x, size_t ldx,
                                   const void *wt, size_t ldw, const void *whole, size_t row0, const float *bias,
                                   void *y, size_t ldy);
int starnn_convt2d_dnnl_fwd_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                   struct starnn_blocked_weights *L);
int starnn_convt2d_bwd_data_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *wt,
                                        size_t ldw, const void *whole, size_t row0, const void *dy, size_t lddy,
                                        float beta, void *dx, size_t lddx);
int starnn_convt2d_dnnl_bwd_data_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                        struct starnn_blocked_weights *L);
/* Whether this thread's fp32 primitive of the forward (fwd 1) or the
 * backward-data pass (beta its) of this geometry, its input rows ldin
 * apart, w's ldw, its output's ldout, reads its weights from whole at row0
 * as they are (the widened 16-bit passes widen w only where it does not);
 * 0 too where the pass does not run on oneDNN's primitives. */
int starnn_convt2d_dnnl_sliced_ok(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  const struct starnn_conv2d_routes *r, size_t ldin, size_t ldw, size_t ldout,
                                  float beta, const void *whole, size_t row0);
/* The weight gradient into dw in layout L (ob 0: [c, o, 2, 2] rows lddw
 * apart, as above; else dense in L, a layout of PyTorch's tensor: rows c,
 * inner channels o), which the route of this pass must write
 * (starnn_convt2d_dnnl_dw_layout); STARNN_EINVAL otherwise.
 * starnn_convt2d_dnnl_dw_layout: whether that pass (dt: the primitive's, x
 * and dy dense) runs oneDNN's deconvolution, whose dw layout, a blocked
 * fp32 one of whole blocks, goes into *L (then 1); 0 on the routes of
 * their own (the bf16 GEMM, the direct kernels). */
int starnn_convt2d_bwd_weight_dnnl_in(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                      starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x,
                                      size_t ldx, const void *dy, size_t lddy, float beta, float *dw, size_t lddw,
                                      float *db, const struct starnn_blocked_weights *L);
int starnn_convt2d_dnnl_dw_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                  struct starnn_blocked_weights *L);

/* CUDA (codelets/cuda/convt2d.cu): strided-batched cuBLAS sgemm over
 * samples, own scatter / gather / bias kernels, the Z / G workspace from
 * cudaMallocAsync on the worker's stream. NCHW. */
int starnn_convt2d_fwd_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                            const float *wt, size_t ldw, const float *bias, float *y, size_t ldy,
                            void *cublas_handle, void *stream);
int starnn_convt2d_bwd_data_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *wt, size_t ldw,
                                 const float *dy, size_t lddy, float beta, float *dx, size_t lddx,
                                 void *cublas_handle, void *stream);
int starnn_convt2d_bwd_weight_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                                   const float *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db,
                                   void *cublas_handle, void *stream);
/* Native 16-bit CUDA kernels (the mixed-precision codelets' native CUDA
 * mode: one switch for conv2d and convt2d). dt is STARNN_FP16 or
 * STARNN_BF16, the type of x, w, y, dy, dx; bias, dw, db fp32. The GEMMs
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
 * ARCH_MISMATCH before any output was written (the caller then widens); or
 * a negative STARNN_E* code with the error already deferred
 * (starnn_defer_error), as the fp32 CUDA kernels. */
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

#ifdef STARNN_USE_OPENCL
/* OpenCL (codelets/opencl/convt2d.c, the program
 * starnn_opencl_program_convt2d: codelets/opencl/convt2d.cl) on
 * ctx->queue: direct kernels, one work-item per output element, fp32
 * sums; NCHW. dt is the type of x, w, y (dy, dx): fp32, or fp16 / bf16
 * widened element by element, a 16-bit output rounded once; bias, dw, db
 * fp32. Each operand a cl_mem with the offset of its view's first element
 * (elements) and its stride as above. The weight pass computes the bias
 * gradient too (db = beta db + the sum of dy). CL_SUCCESS, or the OpenCL
 * error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_convt2d;
cl_int starnn_convt2d_fwd_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t c, size_t o, size_t h, size_t w,
                                 starnn_dtype dt, cl_mem x, size_t x_off, size_t ldx, cl_mem wt, size_t w_off,
                                 size_t ldw, cl_mem b, size_t b_off, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_convt2d_bwd_data_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t c, size_t o, size_t h, size_t w,
                                      starnn_dtype dt, cl_mem wt, size_t w_off, size_t ldw, cl_mem dy, size_t dy_off,
                                      size_t lddy, float beta, cl_mem dx, size_t dx_off, size_t lddx);
cl_int starnn_convt2d_bwd_weight_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t c, size_t o, size_t h,
                                        size_t w, starnn_dtype dt, cl_mem x, size_t x_off, size_t ldx, cl_mem dy,
                                        size_t dy_off, size_t lddy, float beta, cl_mem dw, size_t dw_off, size_t lddw,
                                        cl_mem db, size_t db_off);
#endif

#ifdef __cplusplus
}
#endif
#endif
