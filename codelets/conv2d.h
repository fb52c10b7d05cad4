/* 2-D convolution on NCHW fp32 tensors: odd square kernel k (3x3, 1x1 ...),
 * stride 1, 'same' zero padding (pad = k / 2), with bias. Cross-correlation
 * with PyTorch's OIHW weight layout:
 *   fwd:         y[n,o,h,w] = b[o] + sum_{c,i,j} w[o,c,i,j] x[n,c,h+i-pad,w+j-pad]
 *   bwd_data:    dx = beta * dx + conv_transpose(dy, w)
 *   bwd_weight:  dw = beta * dw + sum_n dy[n] (x) x[n]
 *   bwd_bias:    db = beta * db + sum_{n,h,w} dy[n,:,h,w] (in the bwd_weight task)
 * (beta = 1 accumulates: skip gradients in a UNet, micro-batch gradients).
 *
 * Shapes as tensors: x [N,C,H,W], y / dy [N,O,H,W], w [O,C,k,k], b [O].
 * As matrices (runtime/core/tensor.h) x is N x C*H*W with leading dimension ldx,
 * w is O x C*k*k with ldw; a channel part of x (axis 1) or of w (axis 1)
 * is the same with fewer columns, so every kernel takes its C and O from
 * the geometry and its leading dimensions separately. */
#ifndef STARNN_CONV2D_H
#define STARNN_CONV2D_H

#include <stddef.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The geometry of one kernel call (of the parts a task sees). */
struct starnn_conv2d_geom {
	size_t n, c, o;  /* batch, input channels, output channels */
	size_t h, w, k;  /* image height and width, kernel size (odd) */
	/* Layouts of the activations (runtime/core/tensor.h: cblock) on the input
	 * side (x, dx) and the output side (y, dy): 0 or 1 NCHW, 8 / 16
	 * nChw8c / nChw16c (the oneDNN kernels only; the others take NCHW). */
	size_t xb, yb;
	/* The layout of dw in the weight-gradient pass (runtime/core/tensor.h:
	 * wl): dwb 0 OIHW; else blocks of dwb output x dwib input channels,
	 * dwi its i_inner (OIhw16i16o: 16, 0, 16; Acdb16a: 16, 0, 1), as
	 * starnn_conv2d_dnnl_dw_layout names it. */
	size_t dwb, dwi, dwib;
};

enum starnn_conv2d_pass {
	STARNN_CONV2D_FWD = 0,
	STARNN_CONV2D_BWD_DATA = 1,
	STARNN_CONV2D_BWD_WEIGHT = 2,
};

/* CPU kernels (codelets/cpu/conv2d.c): im2col into a workspace (blocks of
 * output rows sized for the cache) + single-threaded OpenBLAS sgemm; 1x1
 * kernels are plain GEMMs. work holds starnn_conv2d_cpu_workspace(g, pass)
 * floats (0 for k = 1: work may be NULL). b may be NULL (no bias). */
size_t starnn_conv2d_cpu_workspace(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass);
void starnn_conv2d_fwd_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                           size_t ldw, const float *b, float *y, size_t ldy, float *work);
void starnn_conv2d_bwd_data_cpu(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy, const float *w,
                                size_t ldw, float beta, float *dx, size_t ldx, float *work);
void starnn_conv2d_bwd_weight_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy,
                                  size_t ldy, float beta, float *dw, size_t ldw, float *work);
/* 1x1 convolutions from x in blocks of xb > 1 channels (runtime/core/tensor.h;
 * c a multiple of xb) to y in NCHW, as a UNet's output layer (16 channels
 * in nChw8c -> 12 in NCHW): one OpenBLAS sgemm per channel block and
 * sample, reading x / dx where they are (codelets/cpu/conv2d.c). The
 * oneDNN backend runs them there (STARNN_CONV2D_1X1) instead of oneDNN's
 * 1x1 convolution, which reorders y / dy between NCHW and its blocked
 * layout, and w / dw, in every call. b / db may be NULL (none); beta as
 * above (0: dx / dw / db not read). starnn_conv2d_1x1_nchw_ok: whether g is
 * such a convolution. */
int starnn_conv2d_1x1_nchw_ok(const struct starnn_conv2d_geom *g);
void starnn_conv2d_1x1_nchw_fwd_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                    size_t ldw, const float *b, float *y, size_t ldy);
void starnn_conv2d_1x1_nchw_bwd_data_cpu(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy,
                                         const float *w, size_t ldw, float beta, float *dx, size_t ldx);
void starnn_conv2d_1x1_nchw_bwd_weight_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                           const float *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db);
/* Where those convolutions run on the oneDNN backend (fp32): environment
 * variable STARNN_CONV2D_1X1=auto|dnnl|gemm, read once;
 * starnn_conv2d_1x1_set overrides it; starnn_conv2d_1x1_check:
 * STARNN_EINVAL with a message for another value. auto (the default) and
 * gemm: the sgemm kernels above wherever they apply (fp32, and 16-bit
 * passes widened to fp32: native bf16 passes of such layers are widened
 * for them, codelets/conv2d.c); dnnl: oneDNN's 1x1 convolution.
 * starnn_conv2d_1x1_gemm: whether g's passes in dt take the sgemm kernels
 * (then no weights are packed for them). */
enum starnn_conv2d_1x1 {
	STARNN_CONV2D_1X1_AUTO = 0,
	STARNN_CONV2D_1X1_DNNL = 1,
	STARNN_CONV2D_1X1_GEMM = 2,
};
int starnn_conv2d_1x1_set(enum starnn_conv2d_1x1 mode);
int starnn_conv2d_1x1_check(void);
int starnn_conv2d_1x1_gemm(const struct starnn_conv2d_geom *g, starnn_dtype dt);
/* Where the forward passes that starnn_conv2d_fwd_nchw_direct_ok takes
 * (3x3 from NCHW x into blocked y: the first layer) run on the oneDNN
 * backend (fp32): STARNN_CONV2D_NCHW_IN=auto|dnnl|direct, read once;
 * _set overrides it; _check: STARNN_EINVAL with a message for another
 * value. auto (the default): the direct kernel where oneDNN's fp32 layout
 * is nChw8c (its AVX2 kernels); direct: wherever it applies; dnnl:
 * oneDNN. starnn_conv2d_nchw_in_direct: whether g's forward in dt takes
 * the direct kernel (then no weights are packed for it). */
enum starnn_conv2d_nchw_in {
	STARNN_CONV2D_NCHW_IN_AUTO = 0,
	STARNN_CONV2D_NCHW_IN_DNNL = 1,
	STARNN_CONV2D_NCHW_IN_DIRECT = 2,
};
int starnn_conv2d_nchw_in_set(enum starnn_conv2d_nchw_in mode);
int starnn_conv2d_nchw_in_check(void);
int starnn_conv2d_nchw_in_direct(const struct starnn_conv2d_geom *g, starnn_dtype dt);
/* db[o] = beta * db[o] + sum of dy[n, o, :, :] over n (n x o*hw, ldy): the
 * im2col route's bias gradient (oneDNN's weight pass computes its own). */
void starnn_conv2d_bwd_bias_cpu(size_t n, size_t o, size_t hw, const float *dy, size_t ldy, float beta, float *db);
/* The same for dy in blocks of yb channels, yb and o multiples of 8 (the
 * direct kernels' bias gradient): the 8 lanes of a block side by side,
 * float partial sums over runs of 64 pixels, added in double. */
void starnn_conv2d_bias_blocked_cpu(size_t n, size_t o, size_t hw, size_t yb, const float *dy, size_t ldy, float beta,
                                   float *db);
/* The direct fp32 3x3 weight gradient: dw = beta * dw + dy * x (OIHW, rows
 * ldw apart) and, unless db is NULL, db = beta * db + the sum of dy, with
 * x and dy read in their layouts (g->xb, g->yb: NCHW or blocks of a
 * multiple of 8 channels) and no reorder. An AVX2 + FMA kernel with the
 * accumulators in registers (codelets/cpu/conv2d.c says how): on an AVX2
 * processor it runs the narrow and middle UNet layers 1.2-1.5x faster
 * than oneDNN 2.6's jit:avx2 pass (tools/bench/conv --wgrad). It needs
 * k == 3, o a multiple of 4 and an AVX2 processor (with STARNN_CPU_SIMD
 * not below avx2): starnn_conv2d_wgrad_direct_ok; any c. work holds
 * starnn_conv2d_wgrad_direct_workspace(g) floats. Accumulation is in
 * fp32 over the n*h*w products of each weight, in a different order from
 * oneDNN's: results agree within rounding. */
/* The forward pass from x in NCHW (any c) into y in blocks of 8 or a
 * multiple (yb), 3x3, on AVX2: the model's first layer (13 input frames),
 * which oneDNN's AVX2 kernel takes only after copying x into padded
 * nChw8c. Weights packed per call into work
 * (starnn_conv2d_fwd_nchw_direct_workspace floats); x read where it is;
 * per output pixel and channel the sum over (c, kh, kw) in that order, the
 * bias first (b may be NULL). starnn_conv2d_fwd_nchw_direct_ok: k == 3, x
 * NCHW, yb a multiple of 8, o a multiple of 8, w >= 2, AVX2. */
int starnn_conv2d_fwd_nchw_direct_ok(const struct starnn_conv2d_geom *g);
size_t starnn_conv2d_fwd_nchw_direct_workspace(const struct starnn_conv2d_geom *g);
void starnn_conv2d_fwd_nchw_direct_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                       size_t ldw, const float *b, float *y, size_t ldy, float *work);
int starnn_conv2d_wgrad_direct_ok(const struct starnn_conv2d_geom *g);
size_t starnn_conv2d_wgrad_direct_workspace(const struct starnn_conv2d_geom *g);
void starnn_conv2d_bwd_weight_direct_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                         const float *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db,
                                         float *work);

/* oneDNN kernels (codelets/cpu/conv2d_dnnl.c, when configure found
 * oneDNN): the same passes on oneDNN's direct convolution primitives
 * (blocked layouts chosen by oneDNN; the NCHW / OIHW buffers are reordered
 * into per-thread buffers around each call, the result reordered back and
 * added to the old values when beta != 0). dt is the type of x, w and y
 * (dy, dx): STARNN_FP32 or STARNN_BF16 (fp32 accumulation, outputs rounded
 * once); b, dw are fp32. Single-threaded (oneDNN's OpenMP team is set to 1
 * thread on the calling thread). They return 0 or a STARNN_E* code with the
 * message recorded. Without oneDNN they return STARNN_EINVAL. */
int starnn_conv2d_fwd_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                           const void *w, size_t ldw, const float *b, void *y, size_t ldy);
int starnn_conv2d_bwd_data_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy, size_t ldy,
                                const void *w, size_t ldw, float beta, void *dx, size_t ldx);
/* The weight pass also computes the bias gradient in the same primitive
 * (db = beta * db + sum of dy over n, h, w; fp32) unless db is NULL. */
int starnn_conv2d_bwd_weight_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db);

/* Weights packed once for many calls. oneDNN's fast kernels read the
 * weights in their own blocked layouts (OIhw16i16o, AcdB16b32a2b ...), so
 * every call above reorders w from OIHW first: a layer's forward at batch
 * parts 2 reorders it twice, its backward-data pass twice more.
 * starnn_conv2d_dnnl_pack reorders w once into `packed` (bytes of
 * starnn_conv2d_dnnl_pack_bytes: the layout's descriptor, then the
 * weights) for the primitive of one pass (STARNN_CONV2D_FWD or
 * STARNN_CONV2D_BWD_DATA) of geometry g, dtype dt and the activations' row
 * strides lda (x, or dy) and ldout (y, or dx), beta (backward data); the
 * _packed kernels then take the packed weights as they are when that is
 * the layout their primitive reads, and reorder w as before otherwise
 * (packed for another geometry, or NULL). pack_bytes is 0 when the
 * primitive reads w as it is (nothing to pack), for other passes and
 * dtypes, and without oneDNN. */
size_t starnn_conv2d_dnnl_pack_bytes(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, size_t lda, size_t ldw, size_t ldout, float beta);
/* The same, and *layout: where the packed weights are in a blocked fp32
 * layout that runtime/core/tensor.h describes (OIhw8i8o, OIhw8o8i and their
 * 16-blocks: what AVX2 and AVX-512 take), that layout with the packed
 * buffer's descriptor as its header, so that other code (the optimizers)
 * can write the weights into a buffer made by starnn_conv2d_dnnl_pack;
 * ob = 0 otherwise. */
size_t starnn_conv2d_dnnl_pack_info(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                    starnn_dtype dt, size_t lda, size_t ldw, size_t ldout, float beta,
                                    struct starnn_blocked_weights *layout);
/* Whether the weight-gradient pass of g (dt: the primitive's, x and dy
 * dense) runs oneDNN's primitive on the whole image and writes dw in a
 * blocked fp32 layout that runtime/core/tensor.h describes, with the channels
 * in whole blocks: then 1 and that layout in *L (header and align 0), in
 * which the pass writes dw without a reorder when g->dwb, dwi name it; 0
 * otherwise (other routes: the 1x1 sgemm, the GEMM and direct weight
 * gradients, tiles; other layouts; no oneDNN). */
int starnn_conv2d_dnnl_dw_layout(const struct starnn_conv2d_geom *g, starnn_dtype dt, struct starnn_blocked_weights *L);
/* The weight gradients' layouts (runtime/core/tensor.h: wl), for the submit
 * functions of conv2d and convt2d: a dw is written in a kernel's blocked
 * layout where its first writer finds one. starnn_dw_layout_open: whether
 * dw's layout is still to be chosen and may be blocked (one task writes all
 * of it, as yet unwritten, whole and dense; the oneDNN backend, no CUDA
 * worker, STARNN_CONV2D_PACK not off (off: every layout conversion left to
 * oneDNN's reorders); runtime/core/tensor.h allows it: one rank): then the
 * caller asks its kernel (starnn_conv2d_dnnl_dw_layout ...) and sets the
 * answer, OIHW otherwise, with starnn_tensor_set_wlayout.
 * starnn_dw_layout_check: STARNN_EINVAL with a message where dw is blocked
 * and not one oneDNN task writes it. */
int starnn_dw_layout_open(const starnn_tensor *dw, int one_task);
/* A whole copy of root (a whole weight tensor) in the blocked layout L
 * (runtime/core/tensor.h; L->o is taken from root, the header is L itself, the
 * data 64-byte aligned), made by a conv2d_pack_blocked task where root was
 * written since the copy was last made (16-bit root: its values widened,
 * then put into L, which rounds them back where L is bf16 in pairs), and
 * kept current by the optimizers as they write root (codelets/copy.h);
 * NULL where root has no room for one more derived tensor, or where the
 * copy cannot be made (*rc). The passes of root's row parts read slices of
 * it (starnn_conv2d_fwd_dnnl_sliced, starnn_convt2d_bwd_data_dnnl_sliced). */
starnn_tensor *starnn_conv2d_blocked_copy(starnn_tensor *root, const struct starnn_blocked_weights *L, int *rc);
int starnn_dw_layout_check(const char *op, const starnn_tensor *dw, int one_task);
int starnn_conv2d_dnnl_pack(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            size_t lda, const void *w, size_t ldw, size_t ldout, float beta, void *packed,
                            size_t bytes);
/* Whether the fp32 primitive of that pass (on this thread, as
 * starnn_conv2d_dnnl_pack_bytes's arguments) reads `packed` as it is: then
 * a _packed call with it does not read w (the 16-bit codelets, which run
 * the fp32 primitives on widened copies, skip widening w). 0 where not, and
 * on routes that do not run oneDNN (1x1 sgemm, the direct first layer). */
int starnn_conv2d_dnnl_packed_ok(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, size_t lda,
                                 size_t ldw, size_t ldout, float beta, const void *packed);
/* The same for starnn_conv2d_fwd_dnnl_sliced's whole copy and row0. */
int starnn_conv2d_dnnl_sliced_ok(const struct starnn_conv2d_geom *g, size_t ldx, size_t ldw, size_t ldy,
                                 const void *whole, size_t row0);
int starnn_conv2d_fwd_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *w, size_t ldw, const void *packed, const float *b, void *y, size_t ldy);
/* The forward of a part of w's rows (output channels row0 .. row0 + o)
 * reading its weights from whole, a copy of all of w in a blocked layout
 * made by starnn_blocked_make_cpu (codelets/copy.h: the layout's
 * description as its header): where the primitive's layout is the copy's
 * and the part is whole blocks of it, its weights are a contiguous slice;
 * else w is reordered as without it. */
int starnn_conv2d_fwd_dnnl_sliced(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *w, size_t ldw, const void *whole, size_t row0, const float *b, void *y,
                                  size_t ldy);
int starnn_conv2d_bwd_data_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy,
                                       size_t ldy, const void *w, size_t ldw, const void *packed, float beta, void *dx,
                                       size_t ldx);

/* Whether the submit functions below pack weights (the default: on):
 * where the forward and backward-data passes run on oneDNN's CPU kernels
 * and w is a whole tensor, a conv2d_pack_weight task packs w for the pass
 * (per geometry: the batch parts' sizes, layouts, strides) when w has been
 * written since it was last packed (runtime/core/tensor.h: version), and the
 * passes' tasks (conv2d_fwd_packed_*, conv2d_bwd_data_packed_*: CPU only)
 * read the packed copy, kept with w. With ON, an fp32 copy in a blocked
 * layout that runtime/core/tensor.h describes (starnn_conv2d_dnnl_pack_info) is
 * also offered to the tasks that update w: the optimizers (starnn_adam,
 * starnn_sgd and their _amp forms) write the copies read since their last
 * update as they update w, so that in a steady training step no packing
 * task runs (codelets/copy.h); TASKS leaves the packing to the pack tasks.
 * The environment variable STARNN_CONV2D_PACK=on|tasks|off chooses (read
 * once); starnn_conv2d_pack_set overrides it (tests, benchmarks; 1 is ON);
 * starnn_conv2d_pack_check returns STARNN_EINVAL with a message for another
 * value. pack_count: the pack tasks submitted since the program began. */
enum { STARNN_CONV2D_PACK_OFF = 0, STARNN_CONV2D_PACK_ON = 1, STARNN_CONV2D_PACK_TASKS = 2 };
int starnn_conv2d_pack(void);
void starnn_conv2d_pack_set(int mode);
int starnn_conv2d_pack_check(void);
uint64_t starnn_conv2d_pack_count(void);

/* The fp32 weight gradient of the oneDNN backend. On an AVX2 processor
 * oneDNN 2.6's weight-gradient kernel (jit:avx2) runs the UNet's 3x3 layers
 * at 40-70 GFLOP/s on one core, where its forward passes run at 50-95. Two
 * other routes are faster there (tools/bench/conv --wgrad):
 *   "direct": starnn_conv2d_bwd_weight_direct_cpu above, x and dy read in
 *     their layouts, dw written in OIHW: 1.14-1.52x oneDNN on the 28 3x3
 *     layers of the two bench-unet configurations;
 *   "gemm": blocked x and dy copied to NCHW in the thread's scratch (a few
 *     percent of the pass), then starnn_conv2d_bwd_weight_cpu (im2col +
 *     OpenBLAS sgemm) and starnn_conv2d_bwd_bias_cpu: faster than both for
 *     wide layers on small images (1.2-1.3x oneDNN for >= 128 -> 512
 *     channels at 8x8, where the direct kernel's sweeps are short).
 * Both write dw in OIHW: there is no reorder of the gradient back from
 * oneDNN's layout. STARNN_CONV2D_WGRAD=auto (the default) takes gemm for
 * fp32 k x k layers of at least STARNN_CONV2D_WGRAD_MIN_C input and
 * STARNN_CONV2D_WGRAD_MIN_O output channels at no more than
 * STARNN_CONV2D_WGRAD_GEMM_MAX_HW pixels where oneDNN's fp32 layout here
 * is nChw8c or nChw16c (its AVX2 or AVX-512 kernels); then where it is
 * nChw8c, direct for the other fp32 layers it takes
 * (starnn_conv2d_wgrad_direct_ok: 3x3, output channels a multiple of 4, an
 * AVX2 processor), and where it is nChw16c, direct only for those whose x
 * is NCHW (input channels not a multiple of 16: a UNet's first layer),
 * where oneDNN's 16-lane kernel is slower and copies x and dy into its
 * 8-channel blocks (tools/bench/conv --wgrad, AVX-512 Xeon, one thread,
 * against oneDNN with its reorder of dw: gemm 1.09-1.25x at 128 -> 512
 * and 512 -> 512 channels at 8x8, 0.93-0.99x at 24x24; direct 1.30-1.37x
 * at 13 -> 16 channels at 128x128, 1.01x at 13 -> 32 at 384x384, 0.55-0.81x
 * on the other layers); oneDNN's pass elsewhere (1x1). In bf16 (native:
 * starnn_conv2d_dnnl_bf16) the gemm route is im2col of x in bf16 and one
 * bf16 matmul of oneDNN (AMX where present) of dy by it, written into dw
 * in OIHW (plus the sum of dy's rows for db): auto takes it for the same
 * wide layers (>= MIN_C -> >= MIN_O channels at <= GEMM_MAX_HW pixels)
 * where oneDNN picks NHWC for bf16 (AMX), oneDNN's pass elsewhere
 * (tools/bench/conv --wgrad-bf16, AMX Xeon, one thread: gemm 1.56-1.72x
 * oneDNN with its reorder of dw at 128 -> 512 and 512 -> 512 channels at
 * 8x8, 0.47-0.59x at 16x16, 0.95-1.14x at 24x24). dnnl is oneDNN
 * everywhere; gemm puts every fp32 k x k (k > 1) weight gradient, and
 * every bf16 one of odd k, on the gemm route; direct every fp32 one the
 * direct kernel takes (oneDNN runs the others). The variable is
 * read once; starnn_conv2d_wgrad_set overrides it (tests, benchmarks);
 * starnn_conv2d_wgrad_check returns STARNN_EINVAL with a message for
 * another value (the submit functions call it). The choice depends only
 * on the shape and the processor, so a run's results do not change from
 * one step to the next. */
enum starnn_conv2d_wgrad {
	STARNN_CONV2D_WGRAD_AUTO = 0,
	STARNN_CONV2D_WGRAD_DNNL = 1,
	STARNN_CONV2D_WGRAD_GEMM = 2,
	STARNN_CONV2D_WGRAD_DIRECT = 3,
};
#define STARNN_CONV2D_WGRAD_MIN_C 64
#define STARNN_CONV2D_WGRAD_MIN_O 128
#define STARNN_CONV2D_WGRAD_GEMM_MAX_HW 64
int starnn_conv2d_wgrad_set(enum starnn_conv2d_wgrad mode);
int starnn_conv2d_wgrad_check(void);
/* The route the weight gradient of g in dt takes: STARNN_CONV2D_WGRAD_DNNL
 * (oneDNN's primitive), _GEMM or _DIRECT. */
enum starnn_conv2d_wgrad starnn_conv2d_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt);

/* The algorithm of oneDNN's fp32 3 x 3 convolutions (every pass; CPU):
 * environment variable STARNN_CONV2D_ALGO=auto|direct|winograd, read once.
 * direct: oneDNN's direct kernels. winograd: its Winograd F(4x4, 3x3)
 * kernel (jit_wino_4x3, AVX-512 only) wherever oneDNN has one for the
 * shape, else direct; it rounds differently from the direct kernels, with
 * an error bounded by the values of a whole 6 x 6 tile rather than by each
 * output's own terms (tests/codelets/conv2d: within the direct sum's
 * per-output bound on random inputs at the UNet's kinds of shapes, at 0.03
 * - 0.10 of it against at most 0.02; forced onto a 2 x 2 image, one weight
 * gradient element whose terms were tiny came out at 5e3 times it). auto
 * (the default): Winograd where it
 * was measured faster (a Zen 4 EPYC, AVX-512; DNNL_VERBOSE of 128x128 and
 * 384x384 fp32 UNet steps, per pass and shape: 1.1 - 3.4x on the passes
 * below, 0.3 - 1.0x on the others): where oneDNN's fp32 layout is nChw16c,
 * on images of at least STARNN_CONV2D_WINO_MIN_HW pixels, with at least 32
 * channels into the pass (the forward's input channels, the backward-data
 * pass's output ones) and 16 out of it; weight gradients with at least 16
 * channels on both sides and at most STARNN_CONV2D_WINO_MAX_WGRAD_CO
 * input x output channels (1024 -> 1024 at 24x24: 0.35x), on the whole
 * image (not in the direct kernel's tiles). starnn_conv2d_algo_set
 * overrides the variable (tests, benchmarks); starnn_conv2d_algo_check
 * returns STARNN_EINVAL with a message for another value. The choice
 * depends only on the shape and the processor. */
enum starnn_conv2d_algo {
	STARNN_CONV2D_ALGO_AUTO = 0,
	STARNN_CONV2D_ALGO_DIRECT = 1,
	STARNN_CONV2D_ALGO_WINOGRAD = 2,
};
#define STARNN_CONV2D_WINO_MIN_HW 256
#define STARNN_CONV2D_WINO_MAX_WGRAD_CO (512 * 512)
int starnn_conv2d_algo_set(enum starnn_conv2d_algo mode);
int starnn_conv2d_algo_check(void);
/* The STARNN_CONV2D_ALGO value in force where the variable sets one
 * ("direct" ...), NULL where auto applies unasked (messages). */
const char *starnn_conv2d_algo_given(void);
/* Whether a pass of g in dt asks oneDNN for its Winograd kernel (it runs
 * the direct one where it has none for the shape). */
int starnn_conv2d_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt);

/* Which CPU kernels the conv2d codelets run: oneDNN where starnn was built
 * with it (the default: 1.5-2.7x faster than im2col in fp32 on AVX-512, and
 * the only route that computes bf16 natively), else im2col. The environment
 * variable STARNN_CONV2D_CPU=dnnl|im2col chooses (read once);
 * starnn_conv2d_cpu_backend_set overrides it (tests, benchmarks: set it
 * before submitting). starnn_conv2d_cpu_backend_check returns STARNN_EINVAL
 * with a message for a bad STARNN_CONV2D_CPU (the submit functions call
 * it). fp16 always takes the im2col route (oneDNN 2.6 has no fp16
 * convolution on CPUs). */
enum starnn_conv2d_backend { STARNN_CONV2D_IM2COL = 0, STARNN_CONV2D_DNNL = 1 };
enum starnn_conv2d_backend starnn_conv2d_cpu_backend(void);
int starnn_conv2d_cpu_backend_set(enum starnn_conv2d_backend b);
int starnn_conv2d_cpu_backend_check(void);
const char *starnn_conv2d_cpu_backend_name(enum starnn_conv2d_backend b);
/* 1 when the oneDNN kernels run bf16 on this processor (probed once: oneDNN
 * has bf16 convolutions only on AVX-512 and newer ISAs), else 0 (also
 * without oneDNN). Where it is 0, the bf16 codelets widen to fp32 on CPU
 * workers, as fp16 does. */
/* The activation layout oneDNN's convolutions pick here for dt (fp32, or
 * bf16 when starnn_conv2d_dnnl_bf16()): 16 (nChw16c), 8 (nChw8c),
 * STARNN_CONV2D_NHWC (channels innermost: bf16 on AMX), or 0 (NCHW, or no
 * oneDNN). Probed once. */
#define STARNN_CONV2D_NHWC (-1)
int starnn_conv2d_dnnl_block(starnn_dtype dt);
int starnn_conv2d_dnnl_bf16(void);
/* How the CPU workers run the convolutions of activations of dtype dt, in
 * words for a program's start-up lines ("bf16 native (oneDNN)", "fp16
 * widened to fp32 (...why, and what it costs...)", for fp32 the weight
 * gradients on im2col + sgemm where they are); NULL for plain fp32 or when
 * there is no CPU worker. After starnn_init. */
/* The layout (runtime/core/tensor.h cblock) for activations of `channels`
 * channels in dt between the convolutions: the layout oneDNN picks
 * (starnn_conv2d_dnnl_block; cblock = channels for NHWC) when the CPU
 * backend is oneDNN, no CUDA worker runs (they take NCHW) and channels is a
 * multiple of the block (NHWC: of 8, at most STARNN_CBLOCK_MAX, and nparts,
 * the batch parts each operation on them is submitted as, at least the
 * CPU workers: NHWC has no channel-split tasks, so with fewer parts the
 * fp32 block, cut by channels and reordered around each AMX call); else 1.
 * STARNN_LAYOUT overrides oneDNN's pick: auto (the default), blocked
 * (nChw16c / nChw8c, the fp32 pick), nhwc, nchw; STARNN_EINVAL for
 * another value. */
int starnn_conv2d_act_cblock(int64_t channels, starnn_dtype dt, int nparts);
/* The start-up line's words for it ("nChw8c (...)" or "NCHW (why)"). */
const char *starnn_conv2d_layout_note(starnn_dtype dt, int nparts, char *buf, size_t size);
/* Whether the weight gradient of a k x k convolution of c -> o channels,
 * on a batch of `batch` images of hw pixels submitted as nparts
 * micro-batches, is better taken once on the whole batch (one task after
 * every part's output gradient, into one gradient) than once per part
 * (into slices that a reduction adds afterwards). Per part, each task
 * writes a whole weight gradient (oneDNN's, then its reorder to OIHW) and
 * the reduction reads them all again: where the weights outweigh the
 * activations, that traffic costs more than the parallelism of the parts
 * gives. auto: on where the weights hold at least half as many values as
 * the batch's input and output activations together (2 o c k^2 >=
 * batch hw (c + o): the UNet's two deepest levels; tools/bench/unet
 * measures it), for nparts > 1. STARNN_CONV2D_WGRAD_WHOLE=auto|on|off
 * overrides (on: every layer, with nparts > 1; off: none); STARNN_EINVAL
 * with a message for another value. Returns 1 or 0. */
int starnn_conv2d_wgrad_whole(int64_t c, int64_t o, int64_t k, int64_t batch, int64_t hw, int nparts);
/* The STARNN_CONV2D_WGRAD_WHOLE value in force where the variable sets
 * one ("on" ...), NULL where the rule applies unasked (messages). */
const char *starnn_conv2d_wgrad_whole_given(void);
const char *starnn_conv2d_cpu_route(starnn_dtype dt);

/* CUDA implementations (codelets/cuda/conv2d.cu) on cuDNN, given the
 * worker's cuDNN handle (bound to stream). They return 0 or a STARNN_E*
 * code with the message recorded (starnn_error). Built with cuDNN only
 * (STARNN_USE_CUDNN). */
int starnn_conv2d_fwd_cuda(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                           size_t ldw, const float *b, float *y, size_t ldy, void *cudnn, void *stream);
int starnn_conv2d_bwd_data_cuda(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy, const float *w,
                                size_t ldw, float beta, float *dx, size_t ldx, void *cudnn, void *stream);
int starnn_conv2d_bwd_weight_cuda(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                  const float *dy, size_t ldy, float beta, float *dw, size_t ldw, void *cudnn,
                                  void *stream);
int starnn_conv2d_bwd_bias_cuda(size_t n, size_t o, size_t h, size_t w, const float *dy, size_t ldy, float beta,
                                float *db, void *cudnn, void *stream);

/* Native 16-bit cuDNN kernels for the mixed-precision codelets on CUDA
 * workers (used when starnn_cuda_half_conv() is STARNN_CUDA_HALF_NATIVE).
 * dt is STARNN_FP16 or STARNN_BF16, the type of x, w, y (dy, dx); products
 * accumulate in fp32 (cuDNN's PSEUDO_HALF_CONFIG / PSEUDO_BFLOAT16_CONFIG:
 * 16-bit tensors, fp32 convolution compute type) with tensor-core math
 * allowed. They return 0, a STARNN_E* code with the message recorded, or
 * STARNN_CONV2D_UNSUPPORTED when cuDNN declines the configuration (status
 * NOT_SUPPORTED at descriptor, algorithm, workspace or launch time): then
 * nothing was written and the caller takes the widening route.
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

/* How the 16-bit conv2d and convt2d codelets compute on CUDA workers:
 *   STARNN_CUDA_HALF_WIDEN   the 16-bit buffers are widened to fp32 and the
 *                            fp32 kernels run (FMA math; the default),
 *   STARNN_CUDA_HALF_NATIVE  the native kernels above (convt2d: 16-bit
 *                            cuBLAS, codelets/convt2d.h), widening only where
 *                            cuDNN / cuBLAS declines a configuration.
 * The environment variable STARNN_CUDA_HALF_CONV=native|widen chooses (read
 * once); starnn_cuda_half_conv_set overrides it (tests, benchmarks: set it
 * before submitting; tasks take the mode current at submission).
 * starnn_cuda_half_conv_check returns STARNN_EINVAL with a message for a bad
 * STARNN_CUDA_HALF_CONV (the submit functions call it). CPU workers ignore
 * the mode. */
enum starnn_cuda_half_conv { STARNN_CUDA_HALF_WIDEN = 0, STARNN_CUDA_HALF_NATIVE = 1 };
enum starnn_cuda_half_conv starnn_cuda_half_conv(void);
int starnn_cuda_half_conv_set(enum starnn_cuda_half_conv m);
int starnn_cuda_half_conv_check(void);
const char *starnn_cuda_half_conv_name(enum starnn_cuda_half_conv m);

/* Task submission. x [N,C,H,W], w [O,C,k,k], b [O], y [N,O,H,W]; all fp32;
 * any of them may be a part (micro-batch, channel slice) of a larger
 * tensor. Large problems are split into several tasks (along the batch, or
 * along channels) so that every worker gets a share even at batch 1. */
int starnn_conv2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y);
/* dx = beta * dx + conv_transpose(dy, w); beta is 0 or 1 (accumulate). */
int starnn_conv2d_bwd_data(starnn_tensor *dy, starnn_tensor *w, float beta, starnn_tensor *dx);
/* dw = beta * dw + sum_n dy (x) x and db = beta * db + sum dy (db may be
 * NULL: no bias gradient). */
int starnn_conv2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db);

/* Mixed precision: x, w, y (dy, dx) all fp16 or all bf16 (w is the 16-bit
 * copy of the fp32 master weights); b, dw, db fp32. Products accumulate in
 * fp32 and 16-bit outputs are rounded once (to nearest even). The kernels:
 * the 16-bit buffers are widened to fp32 inside the task (CPU: per-worker
 * scratch; CUDA: stream-ordered buffers) and the fp32 kernels above run on
 * them (codelets/halfwrap.h); bf16 on oneDNN CPUs and, with
 * STARNN_CUDA_HALF_NATIVE, 16-bit cuDNN on CUDA workers compute natively
 * (above). Same task splitting as fp32. All-fp32 tensors
 * submit the fp32 codelets. Perfmodels starnn_conv2d_{fwd,bwd_data,
 * bwd_weight,bwd_weight_bias}_{fp16,bf16} (bwd_weight_bias: the weight task
 * that also computes the bias gradient). */
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

/* The cost of one pass in floating-point operations (2 per multiply-add),
 * for benchmarks and task sizing. */
double starnn_conv2d_flops(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass);

#ifdef __cplusplus
}
#endif
#endif
