/* conv2d kernels: 2-D convolution, odd square kernel k (3x3, 1x1 ...),
 * stride 1, 'same' zero padding (pad = k / 2), with bias; a
 * cross-correlation with PyTorch's OIHW weights. Pure: raw pointers,
 * shapes and arguments, no StarPU (codelets/conv2d.c is the glue).
 *
 * Shapes (one call sees a part of the tensors: a micro-batch, a channel
 * slice; its C and O come from the geometry, its strides separately):
 *   x, dx  [n, c, h, w]   samples ldx apart
 *   y, dy  [n, o, h, w]   samples ldy apart
 *   w, dw  [o, c, k, k]   rows (output channels) ldw apart: o x c*k*k
 *   b, db  [o]
 *   fwd:         y[n,o,h,w] = b[o] + sum_{c,i,j} w[o,c,i,j] x[n,c,h+i-pad,w+j-pad]
 *   bwd_data:    dx = beta * dx + conv_transpose(dy, w)
 *   bwd_weight:  dw = beta * dw + sum_n dy[n] (x) x[n]
 *   bwd_bias:    db = beta * db + sum_{n,h,w} dy[n,:,h,w]
 * beta is 0 (dx / dw / db overwritten, not read: stale NaN does not
 * propagate) or 1 (accumulate: skip gradients, micro-batches).
 * Activations are NCHW (xb, yb 0 or 1) or in blocks of b channels
 * (runtime/base/types.h: starnn_chan_offset; 8 / 16: oneDNN's nChw8c /
 * nChw16c; b = c: NHWC), which the oneDNN kernels and the direct kernels
 * take; the im2col kernels take NCHW.
 *
 * Errors: kernels that can fail return 0 or a negative STARNN_E* code
 * with the message recorded (runtime/base/error.h). Every route choice
 * arrives as an argument (struct starnn_conv2d_routes); what the kernels
 * probe themselves is what the processor and oneDNN can do
 * (starnn_conv2d_dnnl_block, starnn_conv2d_dnnl_bf16). How the routes are
 * chosen and measured: docs/convolutions.md. */
#ifndef STARNN_KERNELS_CONV2D_H
#define STARNN_KERNELS_CONV2D_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The geometry of one kernel call (of the parts a task sees). */
struct starnn_conv2d_geom {
	size_t n, c, o;  /* batch, input channels, output channels */
	size_t h, w, k;  /* image height and width, kernel size (odd) */
	/* Layouts of the activations on the input side (x, dx) and the output
	 * side (y, dy): 0 or 1 NCHW, 8 / 16 nChw8c / nChw16c, c or o NHWC (the
	 * oneDNN and direct kernels only; the others take NCHW). */
	size_t xb, yb;
	/* The layout of dw in the weight-gradient pass: dwb 0 OIHW; else blocks
	 * of dwb output x dwib input channels, dwi its i_inner (OIhw16i16o: 16,
	 * 0, 16; Acdb16a: 16, 0, 1), as starnn_conv2d_dnnl_dw_layout names it. */
	size_t dwb, dwi, dwib;
};

enum starnn_conv2d_pass {
	STARNN_CONV2D_FWD = 0,
	STARNN_CONV2D_BWD_DATA = 1,
	STARNN_CONV2D_BWD_WEIGHT = 2,
};

/* The cost of one pass in floating-point operations (2 per multiply-add). */
double starnn_conv2d_flops(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass);

/* ------------------------------------------------------------ the routes
 * Which kernels the oneDNN backend's passes take (docs/convolutions.md
 * says why and how each was measured). Every field 0 is auto, the
 * default: a rule of the shape and the processor, so that a run's results
 * do not change from one step to the next. The codelets pass the routes
 * in force (codelets/conv2d_routes.h); a NULL routes pointer is all auto. */

/* The fp32 (and native bf16) weight gradient:
 *   auto    fp32 k x k layers of at least STARNN_CONV2D_WGRAD_MIN_C input and
 *           STARNN_CONV2D_WGRAD_MIN_O output channels on at most
 *           STARNN_CONV2D_WGRAD_GEMM_MAX_HW pixels take gemm where oneDNN's
 *           fp32 layout is nChw8c or nChw16c; then, on nChw8c (AVX2),
 *           direct for the other 3x3 layers it takes; on nChw16c direct
 *           only where x is NCHW (the first layer); oneDNN elsewhere. bf16
 *           (native): gemm for the same wide layers where oneDNN picks NHWC
 *           for bf16 (AMX), oneDNN elsewhere;
 *   dnnl    oneDNN's pass everywhere;
 *   gemm    every fp32 k x k (k > 1) layer, and every bf16 one of odd k:
 *           fp32 im2col + OpenBLAS sgemm (blocked x, dy copied to NCHW);
 *           bf16 im2col and one bf16 matmul of oneDNN, into OIHW dw;
 *   direct  every fp32 layer starnn_conv2d_wgrad_direct_ok takes. */
enum starnn_conv2d_wgrad {
	STARNN_CONV2D_WGRAD_AUTO = 0,
	STARNN_CONV2D_WGRAD_DNNL = 1,
	STARNN_CONV2D_WGRAD_GEMM = 2,
	STARNN_CONV2D_WGRAD_DIRECT = 3,
};
#define STARNN_CONV2D_WGRAD_MIN_C 64
#define STARNN_CONV2D_WGRAD_MIN_O 128
#define STARNN_CONV2D_WGRAD_GEMM_MAX_HW 64
/* fp32 1x1 convolutions from blocked x into NCHW y (the UNet's output
 * layer, starnn_conv2d_1x1_nchw_ok): auto and gemm take the sgemm kernels
 * below wherever they apply (16-bit passes of such layers are widened for
 * them); dnnl oneDNN's 1x1 convolution, which reorders y / dy and w / dw
 * in every call. */
enum starnn_conv2d_1x1 {
	STARNN_CONV2D_1X1_AUTO = 0,
	STARNN_CONV2D_1X1_DNNL = 1,
	STARNN_CONV2D_1X1_GEMM = 2,
};
/* fp32 3x3 forwards from NCHW x into blocked y (the first layer,
 * starnn_conv2d_fwd_nchw_direct_ok): auto takes the direct kernel where
 * oneDNN's fp32 layout is nChw8c (its AVX2 kernels copy x into padded
 * nChw8c), direct wherever it applies, dnnl oneDNN. */
enum starnn_conv2d_nchw_in {
	STARNN_CONV2D_NCHW_IN_AUTO = 0,
	STARNN_CONV2D_NCHW_IN_DNNL = 1,
	STARNN_CONV2D_NCHW_IN_DIRECT = 2,
};
/* The algorithm of oneDNN's fp32 3x3 convolutions (every pass): direct
 * kernels, or its Winograd F(4x4, 3x3) kernel (jit_wino_4x3, AVX-512)
 * wherever oneDNN has one for the shape (else direct). auto asks for
 * Winograd where oneDNN's fp32 layout is nChw16c, on images of at least
 * STARNN_CONV2D_WINO_MIN_HW pixels, with at least 32 channels into the
 * pass (the forward's input channels, the backward-data pass's output
 * ones) and 16 out of it; weight gradients with at least 16 channels on
 * both sides and at most STARNN_CONV2D_WINO_MAX_WGRAD_CO input x output
 * channels, on the whole image. Winograd rounds differently: its error is
 * bounded by the values of a whole 6 x 6 tile, not by each output's own
 * terms (tests/codelets/conv2d). */
enum starnn_conv2d_algo {
	STARNN_CONV2D_ALGO_AUTO = 0,
	STARNN_CONV2D_ALGO_DIRECT = 1,
	STARNN_CONV2D_ALGO_WINOGRAD = 2,
};
#define STARNN_CONV2D_WINO_MIN_HW 256
#define STARNN_CONV2D_WINO_MAX_WGRAD_CO (512 * 512)
/* The fp32 transposed convolutions (codelets/kernels/convt2d.h): auto
 * takes starnn's direct kernels where they apply and oneDNN's fp32 layout
 * is nChw8c (its AVX2 kernels); direct wherever they apply; dnnl oneDNN
 * (its deconvolution; the forward as a 1x1 convolution to 4o channels
 * spread into y). */
enum starnn_convt2d_route {
	STARNN_CONVT2D_AUTO = 0,
	STARNN_CONVT2D_DNNL = 1,
	STARNN_CONVT2D_DIRECT = 2,
};
struct starnn_conv2d_routes {
	enum starnn_conv2d_wgrad wgrad;
	enum starnn_conv2d_1x1 onebyone;
	enum starnn_conv2d_nchw_in nchw_in;
	enum starnn_conv2d_algo algo;
	enum starnn_convt2d_route convt;
};

/* The routes' answers for one pass of g in dt (the oneDNN backend's;
 * without oneDNN: DNNL, 0). starnn_conv2d_dnnl_wgrad_route: the weight
 * gradient's route, STARNN_CONV2D_WGRAD_DNNL, _GEMM or _DIRECT;
 * starnn_conv2d_dnnl_winograd: whether the pass asks oneDNN for its
 * Winograd kernel; starnn_conv2d_1x1_gemm: whether g's passes take the
 * 1x1 sgemm kernels (then no weights are packed for them);
 * starnn_conv2d_nchw_in_direct: whether g's forward takes the direct NCHW
 * kernel (no weights packed for it either). */
enum starnn_conv2d_wgrad starnn_conv2d_dnnl_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                                        const struct starnn_conv2d_routes *r);
int starnn_conv2d_dnnl_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt,
                                const struct starnn_conv2d_routes *r);
int starnn_conv2d_1x1_gemm(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *r);
int starnn_conv2d_nchw_in_direct(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *r);

/* ------------------------------------------ CPU: im2col + OpenBLAS sgemm
 * (codelets/cpu/conv2d.c) im2col into a workspace (blocks of output rows
 * sized for the cache) + single-threaded sgemm; 1x1 kernels are plain
 * GEMMs. NCHW only. work holds starnn_conv2d_cpu_workspace(g, pass) floats
 * (0 for k = 1: work may be NULL). b may be NULL (no bias). */
size_t starnn_conv2d_cpu_workspace(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass);
void starnn_conv2d_fwd_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                           size_t ldw, const float *b, float *y, size_t ldy, float *work);
void starnn_conv2d_bwd_data_cpu(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy, const float *w,
                                size_t ldw, float beta, float *dx, size_t ldx, float *work);
void starnn_conv2d_bwd_weight_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy,
                                  size_t ldy, float beta, float *dw, size_t ldw, float *work);
/* db[o] = beta * db[o] + sum of dy[n, o, :, :] over n (n x o*hw, ldy): the
 * im2col route's bias gradient (oneDNN's weight pass computes its own). */
void starnn_conv2d_bwd_bias_cpu(size_t n, size_t o, size_t hw, const float *dy, size_t ldy, float beta, float *db);
/* The same for dy in blocks of yb channels, yb and o multiples of 8 (the
 * direct kernels' bias gradient): the 8 lanes of a block side by side,
 * float partial sums over runs of 64 pixels, added in double. */
void starnn_conv2d_bias_blocked_cpu(size_t n, size_t o, size_t hw, size_t yb, const float *dy, size_t ldy, float beta,
                                   float *db);
/* 1x1 convolutions from x in blocks of xb > 1 channels (c a multiple of
 * xb) to y in NCHW, as a UNet's output layer (16 channels in nChw8c -> 12
 * in NCHW): one OpenBLAS sgemm per channel block and sample, reading x /
 * dx where they are. b / db may be NULL (none); beta as above.
 * starnn_conv2d_1x1_nchw_ok: whether g is such a convolution. */
int starnn_conv2d_1x1_nchw_ok(const struct starnn_conv2d_geom *g);
void starnn_conv2d_1x1_nchw_fwd_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                    size_t ldw, const float *b, float *y, size_t ldy);
void starnn_conv2d_1x1_nchw_bwd_data_cpu(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy,
                                         const float *w, size_t ldw, float beta, float *dx, size_t ldx);
void starnn_conv2d_1x1_nchw_bwd_weight_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                           const float *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db);

/* ----------------------------------------- CPU: starnn's direct kernels
 * (codelets/cpu/conv2d.c: AVX2 + FMA, accumulators in registers)
 * The forward from x in NCHW (any c) into y in blocks of 8 or a multiple
 * (yb), 3x3: the model's first layer (13 input frames), which oneDNN's
 * AVX2 kernel takes only after copying x into padded nChw8c. Weights
 * packed per call into work (starnn_conv2d_fwd_nchw_direct_workspace
 * floats); x read where it is; per output pixel and channel the sum over
 * (c, kh, kw) in that order, the bias first (b may be NULL).
 * starnn_conv2d_fwd_nchw_direct_ok: k == 3, x NCHW, yb a multiple of 8, o
 * a multiple of 8, w >= 2, AVX2. */
int starnn_conv2d_fwd_nchw_direct_ok(const struct starnn_conv2d_geom *g);
size_t starnn_conv2d_fwd_nchw_direct_workspace(const struct starnn_conv2d_geom *g);
void starnn_conv2d_fwd_nchw_direct_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                       size_t ldw, const float *b, float *y, size_t ldy, float *work);
/* The fp32 3x3 weight gradient: dw = beta * dw + dy * x (OIHW, rows ldw
 * apart) and, unless db is NULL, db = beta * db + the sum of dy, with x and
 * dy read in their layouts (g->xb, g->yb: NCHW or blocks of a multiple of
 * 8 channels) and no reorder. It needs k == 3, o a multiple of 4 and an
 * AVX2 processor (with STARNN_CPU_SIMD not below avx2):
 * starnn_conv2d_wgrad_direct_ok; any c. work holds
 * starnn_conv2d_wgrad_direct_workspace(g) floats. Accumulation is in fp32
 * over the n*h*w products of each weight, in another order than oneDNN's:
 * results agree within rounding. */
int starnn_conv2d_wgrad_direct_ok(const struct starnn_conv2d_geom *g);
size_t starnn_conv2d_wgrad_direct_workspace(const struct starnn_conv2d_geom *g);
void starnn_conv2d_bwd_weight_direct_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                         const float *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db,
                                         float *work);

/* ------------------------------------------------------------ CPU: oneDNN
 * (codelets/cpu/conv2d_dnnl_*.c, where configure found oneDNN; without it
 * codelets/cpu/conv2d_nodnnl.c answers: kernels STARNN_EINVAL, probes and
 * layouts 0.) The passes on oneDNN's direct (or Winograd) convolution
 * primitives, blocked layouts chosen by oneDNN: activations described as
 * they are where they already are in its layout, other operands reordered
 * into per-thread buffers around each call and the result reordered back,
 * added to the old values when beta != 0 (one rounding). dt is the type of
 * x, w and y (dy, dx): STARNN_FP32 or STARNN_BF16 (fp32 accumulation,
 * outputs rounded once); b, dw, db are fp32. The routes r choose the
 * passes that run on starnn's own kernels instead. Single-threaded
 * (oneDNN's OpenMP team is one thread on the calling thread); primitives
 * cached per thread. The weight pass also computes the bias gradient (db =
 * beta * db + sum of dy over n, h, w) unless db is NULL. */
int starnn_conv2d_fwd_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *r,
                           const void *x, size_t ldx, const void *w, size_t ldw, const float *b, void *y, size_t ldy);
int starnn_conv2d_bwd_data_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                const struct starnn_conv2d_routes *r, const void *dy, size_t ldy, const void *w,
                                size_t ldw, float beta, void *dx, size_t ldx);
int starnn_conv2d_bwd_weight_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *dy,
                                  size_t ldy, float beta, float *dw, size_t ldw, float *db);

/* The activation layout oneDNN's convolutions pick here for dt (fp32, or
 * bf16 when starnn_conv2d_dnnl_bf16()): 16 (nChw16c), 8 (nChw8c),
 * STARNN_CONV2D_NHWC (channels innermost: bf16 on AMX), or 0 (NCHW, or no
 * oneDNN). Probed once. */
#define STARNN_CONV2D_NHWC (-1)
int starnn_conv2d_dnnl_block(starnn_dtype dt);
/* 1 when the oneDNN kernels run bf16 on this processor (probed once with
 * all six passes on a tiny shape: oneDNN has bf16 convolutions only on
 * AVX-512 and newer ISAs), else 0 (also without oneDNN). */
int starnn_conv2d_dnnl_bf16(void);

/* Weights packed once for many calls. oneDNN's fast kernels read the
 * weights in their own blocked layouts (OIhw16i16o, AcdB16b32a2b ...), so
 * every call above reorders w from OIHW first. starnn_conv2d_dnnl_pack
 * reorders w once into `packed` (bytes of starnn_conv2d_dnnl_pack_bytes:
 * the layout's descriptor, then the weights) for the primitive of one
 * pass (STARNN_CONV2D_FWD or STARNN_CONV2D_BWD_DATA) of geometry g, dtype
 * dt and the activations' row strides lda (x, or dy) and ldout (y, or
 * dx), beta (backward data); the _packed kernels then take the packed
 * weights as they are when that is the layout their primitive reads, and
 * reorder w as before otherwise (packed for another geometry, or NULL).
 * pack_bytes is 0 when the primitive reads w as it is (nothing to pack),
 * for other passes and dtypes, and without oneDNN. */
size_t starnn_conv2d_dnnl_pack_bytes(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, const struct starnn_conv2d_routes *r, size_t lda, size_t ldw,
                                     size_t ldout, float beta);
/* The same, and *layout: where the packed weights are in a blocked fp32
 * (or bf16 pair) layout that runtime/base/types.h describes (OIhw8i8o,
 * OIhw8o8i and their 16-blocks: what AVX2 and AVX-512 take), that layout
 * with the packed buffer's descriptor as its header, so that other code
 * (the optimizers) can write the weights into a buffer made by
 * starnn_conv2d_dnnl_pack; ob = 0 otherwise. */
size_t starnn_conv2d_dnnl_pack_info(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                    starnn_dtype dt, const struct starnn_conv2d_routes *r, size_t lda, size_t ldw,
                                    size_t ldout, float beta, struct starnn_blocked_weights *layout);
int starnn_conv2d_dnnl_pack(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, size_t lda, const void *w, size_t ldw, size_t ldout,
                            float beta, void *packed, size_t bytes);
/* Whether the fp32 primitive of that pass (on this thread, as
 * starnn_conv2d_dnnl_pack_bytes's arguments) reads `packed` as it is: then
 * a _packed call with it does not read w (the 16-bit codelets, which run
 * the fp32 primitives on widened copies, skip widening w). 0 where not, and
 * on routes that do not run oneDNN (1x1 sgemm, the direct first layer). */
int starnn_conv2d_dnnl_packed_ok(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                 const struct starnn_conv2d_routes *r, size_t lda, size_t ldw, size_t ldout,
                                 float beta, const void *packed);
/* The same for starnn_conv2d_fwd_dnnl_sliced's whole copy and row0. */
int starnn_conv2d_dnnl_sliced_ok(const struct starnn_conv2d_geom *g, const struct starnn_conv2d_routes *r, size_t ldx,
                                 size_t ldw, size_t ldy, const void *whole, size_t row0);
int starnn_conv2d_fwd_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *w,
                                  size_t ldw, const void *packed, const float *b, void *y, size_t ldy);
int starnn_conv2d_bwd_data_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                       const struct starnn_conv2d_routes *r, const void *dy, size_t ldy, const void *w,
                                       size_t ldw, const void *packed, float beta, void *dx, size_t ldx);
/* The forward of a part of w's rows (output channels row0 .. row0 + o)
 * reading its weights from whole, a copy of all of w in a blocked layout
 * (the layout's description, struct starnn_blocked_weights, as its
 * header): where the primitive's layout is the copy's and the part is
 * whole blocks of it, its weights are a contiguous slice; else w is
 * reordered as without it. */
int starnn_conv2d_fwd_dnnl_sliced(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *w,
                                  size_t ldw, const void *whole, size_t row0, const float *b, void *y, size_t ldy);
/* Whether the weight-gradient pass of g (dt: the primitive's, x and dy
 * dense) runs oneDNN's primitive on the whole image and writes dw in a
 * blocked fp32 layout that runtime/base/types.h describes, with the
 * channels in whole blocks: then 1 and that layout in *L (header and align
 * 0), in which the pass writes dw without a reorder when g->dwb, dwi name
 * it; 0 otherwise (other routes: the 1x1 sgemm, the GEMM and direct weight
 * gradients, tiles; other layouts; no oneDNN). */
int starnn_conv2d_dnnl_dw_layout(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *r, struct starnn_blocked_weights *L);

/* ------------------------------------------------------- CUDA: cuDNN
 * (codelets/cuda/conv2d.cu, compiled with -DSTARNN_USE_CUDNN where
 * configure found cuDNN) given the worker's cuDNN handle (bound to
 * stream). They return 0 or a STARNN_E* code with the message recorded
 * (starnn_error). NCHW only. */
int starnn_conv2d_fwd_cuda(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                           size_t ldw, const float *b, float *y, size_t ldy, void *cudnn, void *stream);
int starnn_conv2d_bwd_data_cuda(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy, const float *w,
                                size_t ldw, float beta, float *dx, size_t ldx, void *cudnn, void *stream);
int starnn_conv2d_bwd_weight_cuda(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                  const float *dy, size_t ldy, float beta, float *dw, size_t ldw, void *cudnn,
                                  void *stream);
int starnn_conv2d_bwd_bias_cuda(size_t n, size_t o, size_t h, size_t w, const float *dy, size_t ldy, float beta,
                                float *db, void *cudnn, void *stream);
/* Native 16-bit cuDNN kernels (the mixed-precision codelets' native CUDA
 * mode). dt is STARNN_FP16 or STARNN_BF16, the type of x, w, y (dy, dx);
 * products accumulate in fp32 (cuDNN's PSEUDO_HALF_CONFIG /
 * PSEUDO_BFLOAT16_CONFIG: 16-bit tensors, fp32 convolution compute type)
 * with tensor-core math allowed. They return 0, a STARNN_E* code with the
 * message recorded, or STARNN_CONV2D_UNSUPPORTED when cuDNN declines the
 * configuration (status NOT_SUPPORTED at descriptor, algorithm, workspace
 * or launch time): then nothing was written and the caller widens.
 *   fwd:        y = round(conv(x, w) + round(b)): the fp32 bias is rounded
 *               to dt once (cuDNN's fused bias takes the tensors' type),
 *               then added to the fp32 sum inside cuDNN's kernel, and the
 *               sum rounded once (cudnnConvolutionBiasActivationForward).
 *   bwd_data:   dx = round(conv_transpose(dy, w) + beta * dx), the blend
 *               done by cuDNN (see codelets/cuda/conv2d.cu for beta != 0).
 *   bwd_weight: no native 16-bit route: cuDNN has no configuration with
 *               16-bit x, dy and an fp32 dw. _tf32 is the fp32 kernel for
 *               fp32 buffers that hold widened fp16 / bf16 values: tensor-op
 *               math (TF32) is allowed, which is exact on such values
 *               (TF32 holds every fp16 and bf16 value, products are exact
 *               in fp32, sums stay fp32), restricted to the GEMM-type
 *               algorithms (no FFT / Winograd transforms, whose transformed
 *               operands TF32 would round). */
#define STARNN_CONV2D_UNSUPPORTED 1
int starnn_conv2d_fwd_cuda_half(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                const void *w, size_t ldw, const float *b, void *y, size_t ldy, void *cudnn,
                                void *stream);
int starnn_conv2d_bwd_data_cuda_half(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy, size_t ldy,
                                     const void *w, size_t ldw, float beta, void *dx, size_t ldx, void *cudnn,
                                     void *stream);
int starnn_conv2d_bwd_weight_cuda_tf32(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                       const float *dy, size_t ldy, float beta, float *dw, size_t ldw, void *cudnn,
                                       void *stream);

#ifdef STARNN_USE_OPENCL
/* ------------------------------------------------------------- OpenCL
 * (codelets/opencl/conv2d.c, the program starnn_opencl_program_conv2d:
 * codelets/opencl/conv2d.cl) on ctx->queue: direct kernels, one work-item
 * per output element, fp32 sums; NCHW only. dt is the type of x, w, y
 * (dy, dx): fp32, or fp16 / bf16 widened element by element, a 16-bit
 * output rounded once; b, dw, db fp32. Each operand a cl_mem with the
 * offset of its view's first element (elements) and its stride as above;
 * b from b_off (the part's first output channel). bwd_bias: db = beta db +
 * the sum of dy (n x o*hw, ldy) over n and hw. CL_SUCCESS, or the OpenCL
 * error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_conv2d;
cl_int starnn_conv2d_fwd_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                cl_mem x, size_t x_off, size_t ldx, cl_mem w, size_t w_off, size_t ldw, cl_mem b,
                                size_t b_off, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_conv2d_bwd_data_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, cl_mem dy, size_t dy_off, size_t ldy, cl_mem w, size_t w_off,
                                     size_t ldw, float beta, cl_mem dx, size_t dx_off, size_t ldx);
cl_int starnn_conv2d_bwd_weight_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_conv2d_geom *g,
                                       starnn_dtype dt, cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off,
                                       size_t ldy, float beta, cl_mem dw, size_t dw_off, size_t ldw);
cl_int starnn_conv2d_bwd_bias_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t o, size_t hw, starnn_dtype dt,
                                     cl_mem dy, size_t dy_off, size_t ldy, float beta, cl_mem db, size_t db_off);
#endif

#ifdef __cplusplus
}
#endif
#endif
