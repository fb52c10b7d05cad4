/* The oneDNN kernels' shared internals (codelets/cpu/conv2d_dnnl_*.c
 * only): the cache entries and per-thread state, and the functions the
 * files call in one another. Kernel code: oneDNN, runtime/base and the
 * kernel headers, no StarPU.
 *
 *   conv2d_dnnl_cache.c   the primitive cache: engine, per-thread state and
 *                         buffers, keys, running an entry
 *   conv2d_dnnl_build.c   building an entry: memory descriptors, attributes,
 *                         reorders, the (de)convolution primitives
 *   conv2d_dnnl_layout.c  weight layouts: the formats runtime/base/types.h
 *                         describes, the layout probes, packed weights and
 *                         slices of whole copies; the processor probes
 *   conv2d_dnnl_pass.c    running a pass (samples of strided activations),
 *                         conv2d's forward and backward-data routes
 *   conv2d_dnnl_wgrad.c   conv2d's weight-gradient routes
 *   conv2d_dnnl_convt.c   convt2d's passes, its bf16 weight-gradient GEMM,
 *                         the spread of the 1x1 forward (AVX-512) */
#ifndef STARNN_CPU_CONV2D_DNNL_H
#define STARNN_CPU_CONV2D_DNNL_H

#include <stddef.h>
#include <stdint.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "codelets/kernels/axpy.h"
#include "codelets/kernels/conv2d.h"
#include "codelets/kernels/convt2d.h"
#include "runtime/base/error.h"

/* One cached convolution: the primitive, the reorders around it and the
 * memory objects (their data pointers are set at each call). */
struct dnnl_conv {
	/* key */
	int kind, pass, dt, bias, accumulate; /* kind: 0 convolution, 1 transposed 2x2/2 */
	float beta;                           /* accumulate: out = new + beta * out */
	size_t n, c, o, h, w, k, lda, ldb, ldout;
	size_t xb, yb; /* activation layouts (struct starnn_conv2d_geom); 1: NCHW */
	int wino;      /* ask for the Winograd kernel (starnn_conv2d_dnnl_winograd) */
	size_t dwb, dwi, dwib; /* weight gradient: dw's blocked layout (struct starnn_conv2d_geom); dwb 0: OIHW */
	/* primitives: a and b are the inputs, out the output; re_* are NULL
	 * when the user's layout is the primitive's */
	dnnl_primitive_t conv, re_a, re_b, re_out;
	dnnl_memory_t ua, ub, uout, ia, ib, iout, bias_mem;
	/* user-managed scratchpads of conv, re_a, re_b, re_out (NULL: none): the
	 * library's default scratchpad is one global buffer, not safe when
	 * several workers run primitives at once */
	dnnl_memory_t scratch[4];
	size_t bytes_a, bytes_b, bytes_out, bytes_scratch; /* per-thread buffers (0: none) */
	int arg_a, arg_b, arg_out;
	/* an fp32 transposed forward run as a 1x1 convolution (conv_build_up):
	 * its output z [n, 4o, h, w] in nChw{zb}c, spread into y (and the bias
	 * added) by starnn_dnnl_up_spread; 0: not that route */
	size_t zb;
	/* a tile of a weight gradient (wgrad_tiled): h x w output pixels of an
	 * fh x fw image (the user layouts' strides are the image's), pad the
	 * zero padding at the tile's top, bottom, left and right (k / 2 where
	 * the tile is on the image's border, else 0: there the input tile
	 * takes its neighbours' pixels); fh = 0: the whole image */
	size_t fh, fw;
	int pad[4];
	/* (not key) on the first tile's entry: whether all the tiles' outputs
	 * have its layout, so that wgrad_tiled sums them in it; 0: not known
	 * yet, 1: yes, -1: no */
	int tiles_same;
};

#define CACHE_SLOTS 512
/* One cached matmul of the bf16 weight gradient's gemm route
 * (wgrad_gemm_bf16): C (m x n, fp32, rows ldc apart) = beta C + A (m x k,
 * bf16, stored k-major: [k][m]) B (k x n, bf16, row-major). oneDNN's
 * matmul primitive rather than its dnnl_gemm_bf16bf16f32 (used for the
 * transposed convolutions, conv2d_dnnl_convt.c): at 512 x 4608 x 256, one thread, AMX,
 * 1.43 against 2.19 ms (the function packs both operands at each call). */
struct dnnl_mm {
	size_t m, n, k, ldc;
	float beta;
	dnnl_primitive_t prim;
	dnnl_memory_t a, b, c, scratch;
	size_t bytes_scratch;
};
#define MM_SLOTS 32

struct dnnl_thread {
	dnnl_stream_t stream;
	struct dnnl_conv *slot[CACHE_SLOTS];
	int next;              /* round-robin replacement */
	struct dnnl_conv *last; /* the entry found last (a widened task's check, then its pass) */
	struct dnnl_mm *mm[MM_SLOTS];
	int mm_next;
};

/* ---------------------------------------------- conv2d_dnnl_cache.c */
extern dnnl_engine_t starnn_dnnl_engine;
/* Whether the CPU engine exists (made on first use). */
int starnn_dnnl_engine_ok(void);
/* The calling thread's state (made on first use: its stream, oneDNN's
 * OpenMP team set to one thread); NULL with the error recorded. */
struct dnnl_thread *starnn_dnnl_thread(void);
/* Buffer i of the thread (0 a, 1 b, 2 out, 3 scratchpad, 4 a bias
 * gradient; 5, 6 and 8 convt_wgrad_gemm's D, Z and NHWC x; 7 wgrad_tiled's
 * sum): the worker thread's scratch (runtime/base/scratch.h). */
void *starnn_dnnl_buf(int i, size_t bytes);
/* The convolution an entry is for, in words (error messages). */
const char *starnn_dnnl_describe(char *buf, size_t n, const struct dnnl_conv *k);
void starnn_dnnl_conv_destroy(struct dnnl_conv *e);
void starnn_dnnl_mm_destroy(struct dnnl_mm *e);
int starnn_dnnl_key_equal(const struct dnnl_conv *a, const struct dnnl_conv *b);
/* The key of a pass (kind 0 convolution, 1 transposed) of g in sdt: user
 * layouts a, b, out with row strides lda, ldb, ldout (a pass's operands:
 * starnn_dnnl_run), bias (0 or 1), beta; r: the routes (Winograd). */
struct dnnl_conv starnn_dnnl_key(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                                 const struct starnn_conv2d_routes *r, size_t lda, size_t ldb, int bias, float beta,
                                 size_t ldout);
/* The thread's cached convolution for key in *out, created on first use;
 * 0 or the error. */
int starnn_dnnl_entry(struct dnnl_thread *t, const struct dnnl_conv *key, struct dnnl_conv **out);
/* Runs reorder re of entry e alone (its scratchpad memory sm, NULL for
 * none, in the thread's scratchpad buffer): memory object fm with data at
 * from into tm with data at to; waits for it. */
int starnn_dnnl_run_reorder(struct dnnl_thread *t, const struct dnnl_conv *e, dnnl_primitive_t re, dnnl_memory_t sm,
                            dnnl_memory_t fm, const void *from, dnnl_memory_t tm, void *to, const char *what);
/* Where packed weights are: a buffer of starnn_conv2d_dnnl_pack, or (row0
 * given, sliced) rows row0 .. of a whole blocked copy. */
struct packed_ref {
	const void *buf;
	size_t row0;
	int sliced;
};
/* Runs the thread's cached convolution for key (made on first use) on a,
 * b into out (bias: the forward's bias, or the weight pass's bias gradient
 * beta * db + new; NULL: none; pk: b packed or NULL). _acc: reps times, a
 * and out advanced by astep and ostep bytes each time, the weights
 * reordered once; with acc, the primitive's output, in its own layout, is
 * not reordered into out but copied into acc (acc_first, the first time)
 * or added to it. */
int starnn_dnnl_exec(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                     const float *bias, float beta, void *out);
int starnn_dnnl_exec_acc(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                         const float *bias, float beta, void *out, float *acc, int acc_first, size_t reps,
                         size_t astep, size_t ostep);

/* ---------------------------------------------- conv2d_dnnl_build.c */
/* Builds e's primitives (e holds its key); 0, or the error with e as far
 * as it was made (starnn_dnnl_conv_destroy frees it). */
int starnn_dnnl_conv_create(struct dnnl_conv *e);
/* Attributes with a user-managed scratchpad and, where accumulate, a sum
 * post-op (dst = beta dst + result); *attr and *po as far as they were made. */
dnnl_status_t starnn_dnnl_sum_attr(dnnl_primitive_attr_t *attr, dnnl_post_ops_t *po, int accumulate, float beta);
/* The scratchpad memory object a primitive needs (*mem NULL: none), its
 * size raised into *bytes. */
dnnl_status_t starnn_dnnl_scratchpad_of(const_dnnl_primitive_desc_t pd, dnnl_memory_t *mem, size_t *bytes);
/* Frees what building a primitive left (each may be NULL). */
void starnn_dnnl_desc_free(dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr, dnnl_post_ops_t po);
/* bf16 weight gradients whose input is at most this many pixels high and
 * wide use the AMX kernel; larger ones avoid it, and on AMX are computed
 * in tiles that fit (conv2d_dnnl_build.c says why). */
#define AMX_WGRAD_MAX_SIDE ((size_t)192)

/* ---------------------------------------------- conv2d_dnnl_layout.c */
/* The oneDNN tag of the fp32 layout of blocks of ob x ib, i_inner ii of a
 * convolution's weights (kind 0) or a transposed convolution's (kind 1);
 * dnnl_format_tag_undef where there is none. */
dnnl_format_tag_t starnn_dnnl_blocked_tag(int kind, size_t ob, size_t ib, size_t ii);
/* *L where md is one of the layouts runtime/base/types.h describes, of a
 * convolution's weights (pack_layout) or of PyTorch's [c, o, 2, 2] from a
 * transposed convolution's [o, c, 2, 2] (deconv_layout); ob 0 otherwise. */
void starnn_dnnl_pack_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L);
void starnn_dnnl_deconv_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L);
/* The layout (runtime/base/types.h) of what the primitive of key reorders
 * on the weights' side: its output (out 1: a weight gradient) or its
 * weights input (0), recognised by take; up 1: the 1x1 forward of a
 * transposed convolution only (a layout of the transpose). Remembered per
 * key. 1 where *L names one (header and align 0); *data (may be NULL): the
 * bytes of that side in the primitive's layout (0: not reordered). */
int starnn_dnnl_probe_layout(const struct dnnl_conv *key, int out, int up,
                             void (*take)(const dnnl_memory_desc_t *, struct starnn_blocked_weights *),
                             struct starnn_blocked_weights *L, size_t *data);
/* The weights of e's primitive in a packed buffer (starnn_conv2d_dnnl_pack)
 * or in a whole blocked copy from row r->row0 (sliced); NULL where they
 * are in another layout than e's primitive reads (then e reorders w). */
void *starnn_dnnl_packed_weights(const struct dnnl_conv *e, const void *packed);
void *starnn_dnnl_sliced_weights(const struct dnnl_conv *e, const struct packed_ref *r);

/* ---------------------------------------------- conv2d_dnnl_pass.c */
/* A pass of either kind on oneDNN (conv2d's own routes first for kind 0):
 * user layouts as starnn_dnnl_key's; packed (NULL: none) or pk the
 * weights' copy; bias as starnn_dnnl_exec's. */
int starnn_dnnl_run(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                    const struct starnn_conv2d_routes *r, const void *a, size_t lda, const void *b, size_t ldb,
                    const void *packed, const float *bias, float beta, void *out, size_t ldout);
int starnn_dnnl_run_packed(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                           const struct starnn_conv2d_routes *r, const void *a, size_t lda, const void *b, size_t ldb,
                           const struct packed_ref *pk, const float *bias, float beta, void *out, size_t ldout);
/* The key a forward or backward-data pass runs on: its own, or, where its
 * activations are strided over several samples, one sample's with dense
 * strides (*per_sample 1: run once per sample). */
struct dnnl_conv starnn_dnnl_data_pass_key(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                                           const struct starnn_conv2d_routes *r, size_t lda, size_t ldb, int bias,
                                           float beta, size_t ldout, int *per_sample);

/* ---------------------------------------------- conv2d_dnnl_wgrad.c */
/* Whether the weight gradient of g runs on a route of its own that writes
 * OIHW dw (the 1x1 sgemm, the GEMM and direct routes, tiles) rather than
 * on oneDNN's primitive for the whole image. */
int starnn_dnnl_wgrad_writes_oihw(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r);
/* acc[j] += the sum of column j of a rows x cols bf16 matrix (rows ld
 * apart), in double. */
void starnn_dnnl_col_sums_bf16(const uint16_t *a, size_t rows, size_t cols, size_t ld, double *acc);

/* ---------------------------------------------- conv2d_dnnl_convt.c */
/* y[n, oc, 2i + a, 2j + b] = z[n, oc * 4 + a * 2 + b, i, j] + bias[oc]
 * (bias NULL: none): the transposed forward's 1x1 output z (nChw{e->zb}c)
 * spread into y (e->yb's layout and e's dtype), samples ldy apart. */
void starnn_dnnl_up_spread(const struct dnnl_conv *e, const float *z, const float *bias, void *y, size_t ldy);

/* ------------------------------------------------------------ helpers */
#define DNNL_TRY(call, what)                                                                               \
	do {                                                                                               \
		dnnl_status_t s_ = (call);                                                                 \
		if (s_ != dnnl_success) {                                                                  \
			rc = starnn_error(STARNN_EINVAL, "conv2d (oneDNN): %s failed: %s (%s)", what,     \
			                  dnnl_status2str(s_), starnn_dnnl_describe(shape, sizeof shape, e)); \
			goto fail;                                                                         \
		}                                                                                          \
	} while (0)

static inline dnnl_data_type_t dnnl_dt(starnn_dtype dt)
{
	return dt == STARNN_BF16 ? dnnl_bf16 : dnnl_f32;
}

static inline size_t md_bytes(const dnnl_memory_desc_t *md)
{
	return dnnl_memory_desc_get_size(md);
}

/* r, or all auto where r is NULL. */
static inline const struct starnn_conv2d_routes *starnn_dnnl_routes(const struct starnn_conv2d_routes *r)
{
	static const struct starnn_conv2d_routes all_auto;
	return r ? r : &all_auto;
}

#endif
