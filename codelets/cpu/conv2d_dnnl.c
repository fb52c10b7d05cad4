/* CPU kernels of conv2d on oneDNN convolution primitives (fp32, and bf16
 * with fp32 accumulation: AVX512-BF16 / AMX on processors that have them).
 *
 * starnn's tensors are NCHW (weights OIHW), possibly channel slices of a
 * larger tensor (rows ldx apart). oneDNN's fast direct convolutions work on
 * blocked layouts (nChw16c, OIhw16i16o ...), which the primitive chooses
 * (format "any"); each call reorders its inputs into per-thread buffers of
 * those layouts, runs the primitive and reorders the result back, adding it
 * to beta times the old values when beta != 0 (a reorder with a sum post-op: one
 * rounding for 16-bit outputs, the sum done in fp32). Where the primitive
 * takes a plain layout (the 13-channel input of a UNet) no reorder is made.
 *
 * Everything runs on the calling thread: oneDNN's OpenMP team is set to one
 * thread (starnn's parallelism comes from several tasks, one per core).
 * Scratchpads are user-managed, per thread: oneDNN's default one is global
 * (per library), and workers running primitives at once corrupted it.
 * Primitives are created once per shape and cached per thread (creation
 * costs up to milliseconds: code generation); the cache is freed when the
 * thread exits. Reordered operands and scratchpads live in the thread's
 * scratch buffers (runtime/base/scratch.h).
 *
 * Kernels know nothing of StarPU: errors are returned as STARNN_E* codes
 * with the message recorded (runtime/base/error.h). */
#include <config.h>

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/axpy.h"
#include "codelets/conv2d.h"
#include "codelets/convt2d.h"
#include "codelets/cpu/halfrow.h"
#include "runtime/core/choice.h"
#include "runtime/base/error.h"
#include "runtime/base/half.h"
#include "runtime/base/scratch.h"

/* The backend choice (both builds). */
static int backend_forced = -1; /* starnn_conv2d_cpu_backend_set, else -1 */
static int backend_env = -1;    /* from STARNN_CONV2D_CPU; -2: an unknown value */
static pthread_once_t backend_once = PTHREAD_ONCE_INIT;

static void backend_read_env(void)
{
	const char *e = getenv("STARNN_CONV2D_CPU");
	if (!e || !*e)
		backend_env = -1;
	else if (!strcmp(e, "dnnl") || !strcmp(e, "onednn"))
		backend_env = STARNN_CONV2D_DNNL;
	else if (!strcmp(e, "im2col"))
		backend_env = STARNN_CONV2D_IM2COL;
	else
		backend_env = -2;
}

int starnn_conv2d_cpu_backend_check(void)
{
	pthread_once(&backend_once, backend_read_env);
	if (backend_forced < 0 && backend_env == -2)
		return starnn_error(STARNN_EINVAL, "STARNN_CONV2D_CPU is '%s': expected dnnl or im2col",
		                    getenv("STARNN_CONV2D_CPU"));
#ifndef STARNN_HAVE_DNNL
	if (backend_forced < 0 && backend_env == STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL,
		                    "STARNN_CONV2D_CPU=dnnl: this starnn was built without oneDNN (Debian: apt-get install "
		                    "libdnnl-dev, then configure again)");
#endif
	return 0;
}

enum starnn_conv2d_backend starnn_conv2d_cpu_backend(void)
{
	pthread_once(&backend_once, backend_read_env);
#ifdef STARNN_HAVE_DNNL
	if (backend_forced >= 0)
		return (enum starnn_conv2d_backend)backend_forced;
	return backend_env == STARNN_CONV2D_IM2COL ? STARNN_CONV2D_IM2COL : STARNN_CONV2D_DNNL;
#else
	return STARNN_CONV2D_IM2COL;
#endif
}

int starnn_conv2d_cpu_backend_set(enum starnn_conv2d_backend b)
{
	if (b != STARNN_CONV2D_IM2COL && b != STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL, "conv2d: unknown CPU backend %d", (int)b);
#ifndef STARNN_HAVE_DNNL
	if (b == STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL, "conv2d: this starnn was built without oneDNN");
#endif
	backend_forced = (int)b;
	return 0;
}

const char *starnn_conv2d_cpu_backend_name(enum starnn_conv2d_backend b)
{
	return b == STARNN_CONV2D_DNNL ? "oneDNN convolution primitives" : "im2col + OpenBLAS sgemm";
}

/* The weight-gradient route (codelets/conv2d.h: STARNN_CONV2D_WGRAD). */
static const char *const wgrad_names[] = {"auto", "dnnl", "onednn", "gemm", "direct"};
static const int wgrad_values[] = {STARNN_CONV2D_WGRAD_AUTO, STARNN_CONV2D_WGRAD_DNNL, STARNN_CONV2D_WGRAD_DNNL,
                                   STARNN_CONV2D_WGRAD_GEMM, STARNN_CONV2D_WGRAD_DIRECT};
static struct starnn_choice wgrad_choice = {"STARNN_CONV2D_WGRAD", "auto, dnnl, gemm or direct", wgrad_names, wgrad_values,
                                     5, -1, 0, 0, PTHREAD_MUTEX_INITIALIZER};

int starnn_conv2d_wgrad_check(void)
{
	return starnn_choice_check(&wgrad_choice);
}

int starnn_conv2d_wgrad_set(enum starnn_conv2d_wgrad mode)
{
	return starnn_choice_set(&wgrad_choice, (int)mode, STARNN_CONV2D_WGRAD_DIRECT, "conv2d: unknown weight-gradient route");
}

static int wgrad_mode(void)
{
	return starnn_choice_mode(&wgrad_choice);
}

/* The route of 1x1 convolutions into NCHW (codelets/conv2d.h:
 * STARNN_CONV2D_1X1). */
static const char *const onebyone_names[] = {"auto", "dnnl", "onednn", "gemm"};
static const int onebyone_values[] = {STARNN_CONV2D_1X1_AUTO, STARNN_CONV2D_1X1_DNNL, STARNN_CONV2D_1X1_DNNL,
                                      STARNN_CONV2D_1X1_GEMM};
static struct starnn_choice onebyone_choice = {"STARNN_CONV2D_1X1", "auto, dnnl or gemm", onebyone_names, onebyone_values, 4,
                                        -1, 0, 0, PTHREAD_MUTEX_INITIALIZER};

int starnn_conv2d_1x1_check(void)
{
	return starnn_choice_check(&onebyone_choice);
}

int starnn_conv2d_1x1_set(enum starnn_conv2d_1x1 mode)
{
	return starnn_choice_set(&onebyone_choice, (int)mode, STARNN_CONV2D_1X1_GEMM, "conv2d: unknown 1x1 route");
}

#ifdef STARNN_HAVE_DNNL /* (without oneDNN: the stubs at the end) */
int starnn_conv2d_1x1_gemm(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	const int mode = starnn_choice_mode(&onebyone_choice);
	if (dt != STARNN_FP32 || mode == STARNN_CONV2D_1X1_DNNL || !starnn_conv2d_1x1_nchw_ok(g))
		return 0;
	return 1; /* (auto and gemm alike: see codelets/conv2d.h) */
}
#endif

/* The route of forward passes from NCHW x (codelets/conv2d.h:
 * STARNN_CONV2D_NCHW_IN). */
static const char *const nchw_in_names[] = {"auto", "dnnl", "onednn", "direct"};
static const int nchw_in_values[] = {STARNN_CONV2D_NCHW_IN_AUTO, STARNN_CONV2D_NCHW_IN_DNNL, STARNN_CONV2D_NCHW_IN_DNNL,
                                     STARNN_CONV2D_NCHW_IN_DIRECT};
static struct starnn_choice nchw_in_choice = {"STARNN_CONV2D_NCHW_IN", "auto, dnnl or direct", nchw_in_names, nchw_in_values,
                                       4, -1, 0, 0, PTHREAD_MUTEX_INITIALIZER};

int starnn_conv2d_nchw_in_check(void)
{
	return starnn_choice_check(&nchw_in_choice);
}

int starnn_conv2d_nchw_in_set(enum starnn_conv2d_nchw_in mode)
{
	return starnn_choice_set(&nchw_in_choice, (int)mode, STARNN_CONV2D_NCHW_IN_DIRECT, "conv2d: unknown NCHW-input route");
}

#ifdef STARNN_HAVE_DNNL /* (without oneDNN: the stubs at the end) */
int starnn_conv2d_nchw_in_direct(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	const int mode = starnn_choice_mode(&nchw_in_choice);
	if (dt != STARNN_FP32 || mode == STARNN_CONV2D_NCHW_IN_DNNL || !starnn_conv2d_fwd_nchw_direct_ok(g))
		return 0;
	return mode == STARNN_CONV2D_NCHW_IN_DIRECT || starnn_conv2d_dnnl_block(STARNN_FP32) == 8;
}
#endif

/* The algorithm of fp32 3 x 3 convolutions (codelets/conv2d.h:
 * STARNN_CONV2D_ALGO). */
static const char *const algo_names[] = {"auto", "direct", "winograd"};
static const int algo_values[] = {STARNN_CONV2D_ALGO_AUTO, STARNN_CONV2D_ALGO_DIRECT, STARNN_CONV2D_ALGO_WINOGRAD};
static struct starnn_choice algo_choice = {"STARNN_CONV2D_ALGO", "auto, direct or winograd", algo_names, algo_values,
                                           3, -1, 0, 0, PTHREAD_MUTEX_INITIALIZER};

int starnn_conv2d_algo_check(void)
{
	return starnn_choice_check(&algo_choice);
}

int starnn_conv2d_algo_set(enum starnn_conv2d_algo mode)
{
	return starnn_choice_set(&algo_choice, (int)mode, STARNN_CONV2D_ALGO_WINOGRAD, "conv2d: unknown algorithm");
}

const char *starnn_conv2d_algo_given(void)
{
	return starnn_choice_given(&algo_choice);
}

#ifdef STARNN_HAVE_DNNL /* (without oneDNN: the stubs at the end) */
int starnn_conv2d_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt)
{
	const int mode = starnn_choice_mode(&algo_choice);
	if (dt != STARNN_FP32 || g->k != 3 || mode == STARNN_CONV2D_ALGO_DIRECT)
		return 0;
	if (mode == STARNN_CONV2D_ALGO_WINOGRAD)
		return 1;
	if (starnn_conv2d_dnnl_block(STARNN_FP32) != 16 || g->h * g->w < STARNN_CONV2D_WINO_MIN_HW)
		return 0;
	if (pass == STARNN_CONV2D_BWD_WEIGHT)
		return g->c >= 16 && g->o >= 16 && g->c * g->o <= STARNN_CONV2D_WINO_MAX_WGRAD_CO;
	const size_t in = pass == STARNN_CONV2D_BWD_DATA ? g->o : g->c, out = pass == STARNN_CONV2D_BWD_DATA ? g->c : g->o;
	return in >= 32 && out >= 16;
}
#endif

/* The transposed convolutions' route (codelets/convt2d.h: STARNN_CONVT2D). */
static const char *const convt_names[] = {"auto", "dnnl", "onednn", "direct"};
static const int convt_values[] = {STARNN_CONVT2D_AUTO, STARNN_CONVT2D_DNNL, STARNN_CONVT2D_DNNL,
                                   STARNN_CONVT2D_DIRECT};
static struct starnn_choice convt_choice = {"STARNN_CONVT2D", "auto, dnnl or direct", convt_names, convt_values, 4, -1, 0, 0,
                                     PTHREAD_MUTEX_INITIALIZER};

int starnn_convt2d_route_check(void)
{
	return starnn_choice_check(&convt_choice);
}

int starnn_convt2d_route_set(enum starnn_convt2d_route mode)
{
	return starnn_choice_set(&convt_choice, (int)mode, STARNN_CONVT2D_DIRECT, "convt2d: unknown route");
}

#ifdef STARNN_HAVE_DNNL /* (without oneDNN: the stubs at the end) */
int starnn_convt2d_direct(size_t ch, size_t b, starnn_dtype dt)
{
	const int mode = starnn_choice_mode(&convt_choice);
	if (dt != STARNN_FP32 || mode == STARNN_CONVT2D_DNNL || !starnn_convt2d_direct_ok(ch, b))
		return 0;
	return mode == STARNN_CONVT2D_DIRECT || starnn_conv2d_dnnl_block(STARNN_FP32) == 8;
}
#endif

#ifdef STARNN_HAVE_DNNL
#include <dnnl.h>
#include <dnnl_debug.h>

/* Debian's oneDNN runs on OpenMP (the setting is per calling thread). */
extern void omp_set_num_threads(int n);

/* One cached convolution: the primitive, the reorders around it and the
 * memory objects (their data pointers are set at each call). */
struct dnnl_conv {
	/* key */
	int kind, pass, dt, bias, accumulate; /* kind: 0 convolution, 1 transposed 2x2/2 */
	float beta;                           /* accumulate: out = new + beta * out */
	size_t n, c, o, h, w, k, lda, ldb, ldout;
	size_t xb, yb; /* activation layouts (struct starnn_conv2d_geom); 1: NCHW */
	int wino;      /* ask for the Winograd kernel (starnn_conv2d_winograd) */
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
	 * added) by up_spread; 0: not that route */
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
 * matmul primitive rather than its dnnl_gemm_bf16bf16f32 (used below for
 * the transposed convolutions): at 512 x 4608 x 256, one thread, AMX,
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

static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_success;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int thread_key_ok;

static void conv_destroy(struct dnnl_conv *e)
{
	if (!e)
		return;
	dnnl_primitive_t p[] = {e->conv, e->re_a, e->re_b, e->re_out};
	for (size_t i = 0; i < sizeof p / sizeof *p; i++)
		if (p[i])
			dnnl_primitive_destroy(p[i]);
	dnnl_memory_t m[] = {e->ua,         e->ub,         e->uout,       e->ia,         e->ib,
	                     e->iout,       e->bias_mem,   e->scratch[0], e->scratch[1], e->scratch[2],
	                     e->scratch[3]};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (m[i])
			dnnl_memory_destroy(m[i]);
	free(e);
}

static void mm_destroy(struct dnnl_mm *e)
{
	if (!e)
		return;
	if (e->prim)
		dnnl_primitive_destroy(e->prim);
	dnnl_memory_t m[] = {e->a, e->b, e->c, e->scratch};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (m[i])
			dnnl_memory_destroy(m[i]);
	free(e);
}

static void thread_free(void *arg)
{
	struct dnnl_thread *t = arg;
	for (int i = 0; i < CACHE_SLOTS; i++)
		conv_destroy(t->slot[i]);
	for (int i = 0; i < MM_SLOTS; i++)
		mm_destroy(t->mm[i]);
	if (t->stream)
		dnnl_stream_destroy(t->stream);
	free(t);
}

static void engine_init(void)
{
	engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
	thread_key_ok = pthread_key_create(&thread_key, thread_free) == 0;
}

static struct dnnl_thread *thread_state(void)
{
	pthread_once(&engine_once, engine_init);
	if (engine_status != dnnl_success) {
		starnn_error(STARNN_EINVAL, "conv2d (oneDNN): cannot create the CPU engine: %s",
		             dnnl_status2str(engine_status));
		return NULL;
	}
	if (!thread_key_ok) {
		starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot create the thread key");
		return NULL;
	}
	struct dnnl_thread *t = pthread_getspecific(thread_key);
	if (t)
		return t;
	t = calloc(1, sizeof *t);
	if (!t) {
		starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): out of memory");
		return NULL;
	}
	dnnl_status_t s = dnnl_stream_create(&t->stream, engine, dnnl_stream_default_flags);
	if (s != dnnl_success || pthread_setspecific(thread_key, t) != 0) {
		if (t->stream)
			dnnl_stream_destroy(t->stream);
		free(t);
		starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot create a stream: %s", dnnl_status2str(s));
		return NULL;
	}
	omp_set_num_threads(1);
	return t;
}

/* Reorder buffer i (0 a, 1 b, 2 out, 3 scratchpad, 4 a bias gradient; 5,
 * 6 and 8 convt_wgrad_gemm's D, Z and NHWC x; 7 wgrad_tiled's sum): the
 * worker thread's scratch (runtime/base/scratch.h). */
static void *thread_buf(int i, size_t bytes)
{
	return starnn_scratch(STARNN_SCRATCH_DNNL + i, bytes);
}

/* The convolution a cache entry is for, in words (error messages only:
 * formatted when something fails, not at every call). */
static const char *describe(char *buf, size_t n, const struct dnnl_conv *k)
{
	snprintf(buf, n, "%s%s %s n %zu c %zu o %zu %zux%zu k %zu", k->kind ? "transposed " : "",
	         k->pass == STARNN_CONV2D_FWD        ? "forward"
	         : k->pass == STARNN_CONV2D_BWD_DATA ? "backward data"
	                                             : "backward weights",
	         k->dt == (int)dnnl_bf16 ? "bf16" : "fp32", k->n, k->c, k->o, k->h, k->w, k->k);
	return buf;
}

#define DNNL_TRY(call, what)                                                                               \
	do {                                                                                               \
		dnnl_status_t s_ = (call);                                                                 \
		if (s_ != dnnl_success) {                                                                  \
			rc = starnn_error(STARNN_EINVAL, "conv2d (oneDNN): %s failed: %s (%s)", what,     \
			                  dnnl_status2str(s_), describe(shape, sizeof shape, e));          \
			goto fail;                                                                         \
		}                                                                                          \
	} while (0)

static dnnl_data_type_t dnnl_dt(starnn_dtype dt)
{
	return dt == STARNN_BF16 ? dnnl_bf16 : dnnl_f32;
}

/* An activation [n, c, h, w] with samples ld elements apart: NCHW (cb 1),
 * NHWC (cb = c), or channels in blocks of cb (c a multiple of cb; oneDNN's
 * nChw8c / nChw16c for 8 / 16): runtime/core/tensor.h, oneDNN's blocked layouts
 * with the samples' stride replaced (channel slices of a larger tensor). */
static dnnl_status_t act_md(dnnl_memory_desc_t *md, size_t n, size_t c, size_t h, size_t w, size_t ld,
                            dnnl_data_type_t dt, size_t cb)
{
	dnnl_dims_t dims = {(dnnl_dim_t)n, (dnnl_dim_t)c, (dnnl_dim_t)h, (dnnl_dim_t)w};
	/* one block of 8 or 16 is described as oneDNN's nChw8c / nChw16c where
	 * those are its pick (the same bytes as NHWC, not the same descriptor) */
	int pick = starnn_conv2d_dnnl_block(dt == dnnl_bf16 ? STARNN_BF16 : STARNN_FP32);
	if (cb == c && c > 1 && pick != (int)cb) {
		dnnl_dims_t strides = {(dnnl_dim_t)ld, 1, (dnnl_dim_t)(w * c), (dnnl_dim_t)c};
		return dnnl_memory_desc_init_by_strides(md, 4, dims, dt, strides);
	}
	if (cb == 8 || cb == 16) {
		dnnl_status_t s = dnnl_memory_desc_init_by_tag(md, 4, dims, dt, cb == 16 ? dnnl_nChw16c : dnnl_nChw8c);
		if (s == dnnl_success && (c % cb || md->format_kind != dnnl_blocked))
			s = dnnl_invalid_arguments;
		if (s == dnnl_success)
			md->format_desc.blocking.strides[0] = (dnnl_dim_t)ld;
		return s;
	}
	if (cb > 1) {
		/* nChw16c's descriptor, its block and strides made cb's */
		dnnl_status_t s = dnnl_memory_desc_init_by_tag(md, 4, dims, dt, dnnl_nChw16c);
		if (s == dnnl_success && (c % cb || md->format_kind != dnnl_blocked))
			s = dnnl_invalid_arguments;
		if (s == dnnl_success) {
			dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
			md->padded_dims[1] = (dnnl_dim_t)c;
			bd->inner_nblks = 1, bd->inner_blks[0] = (dnnl_dim_t)cb, bd->inner_idxs[0] = 1;
			bd->strides[0] = (dnnl_dim_t)ld;
			bd->strides[1] = (dnnl_dim_t)(h * w * cb);
			bd->strides[2] = (dnnl_dim_t)(w * cb);
			bd->strides[3] = (dnnl_dim_t)cb;
		}
		return s;
	}
	dnnl_dims_t strides = {(dnnl_dim_t)ld, (dnnl_dim_t)(h * w), (dnnl_dim_t)w, 1};
	return dnnl_memory_desc_init_by_strides(md, 4, dims, dt, strides);
}

/* Weights as oneDNN sees them, [o, c, k, k]: a convolution's OIHW with
 * rows (output channels) ld elements apart; a transposed convolution's
 * PyTorch IOHW [c, o, 2, 2] with rows (input channels) ld apart. */
static dnnl_status_t wei_md(dnnl_memory_desc_t *md, int kind, size_t o, size_t c, size_t k, size_t ld,
                            dnnl_data_type_t dt)
{
	dnnl_dims_t dims = {(dnnl_dim_t)o, (dnnl_dim_t)c, (dnnl_dim_t)k, (dnnl_dim_t)k};
	dnnl_dims_t strides = {(dnnl_dim_t)ld, (dnnl_dim_t)(k * k), (dnnl_dim_t)k, 1};
	if (kind == 1)
		strides[0] = (dnnl_dim_t)(k * k), strides[1] = (dnnl_dim_t)ld;
	return dnnl_memory_desc_init_by_strides(md, 4, dims, dt, strides);
}

/* The blocked weight layouts that runtime/core/tensor.h describes (fp32
 * OIhw8i8o, OIhw8o8i, OIhw16i16o, OIhw16o16i: what the AVX2 and AVX-512
 * fp32 kernels take; bf16 in pairs, ABcd8b16a2b and ABcd8a16b2a: what the
 * AVX512-BF16 kernels take) and their oneDNN tags. */
static const struct {
	dnnl_format_tag_t tag;
	dnnl_data_type_t type;
	uint32_t ob, ib, i_inner, pair;
} known_layouts[] = {{dnnl_ABcd8b8a, dnnl_f32, 8, 8, 0, 0},       {dnnl_ABcd8a8b, dnnl_f32, 8, 8, 1, 0},
                     {dnnl_ABcd16b16a, dnnl_f32, 16, 16, 0, 0},    {dnnl_ABcd16a16b, dnnl_f32, 16, 16, 1, 0},
                     {dnnl_ABcd8b16a2b, dnnl_bf16, 16, 16, 0, 2}, {dnnl_ABcd8a16b2a, dnnl_bf16, 16, 16, 1, 2},
                     /* output channels alone in blocks, [O / ob][taps][I][ob] (inputs of a few channels:
                      * the first layer): one block of all the input channels (ib 0 here: I, rounded up to
                      * pairs for bf16, AcdB16a2b: [O / 16][taps][I / 2][16][2]) */
                     {dnnl_Acdb8a, dnnl_f32, 8, 0, 0, 0},          {dnnl_Acdb16a, dnnl_f32, 16, 0, 0, 0},
                     {dnnl_AcdB16a2b, dnnl_bf16, 16, 0, 0, 2}};

/* A transposed convolution's weights as oneDNN sees them are [o, c, 2, 2]
 * (wei_md), PyTorch's [c, o, 2, 2] transposed: its "BA" layouts, whose
 * outer blocks run over c then o, are the layouts above of PyTorch's
 * tensor (rows c, inner channels o), with the roles of a and b swapped. */
static const struct {
	dnnl_format_tag_t tag;
	dnnl_data_type_t type;
	uint32_t ob, ib, i_inner, pair;
} deconv_layouts[] = {{dnnl_BAcd16a16b, dnnl_f32, 16, 16, 0, 0},
                      {dnnl_BAcd16b16a, dnnl_f32, 16, 16, 1, 0},
                      {dnnl_BAcd8a16b2a, dnnl_bf16, 16, 16, 0, 2}}; /* (oneDNN 2.6 has no 8-blocks of these) */

/* The tag of the fp32 layout of blocks of ob x ib, i_inner ii (0: none) of
 * a convolution's weights (kind 0; ib other than ob: one block of all the
 * input channels, Acdb<ob>a) or a transposed convolution's (kind 1). */
static dnnl_format_tag_t blocked_tag(int kind, size_t ob, size_t ib, size_t ii)
{
	if (kind) {
		for (size_t k = 0; k < sizeof deconv_layouts / sizeof deconv_layouts[0]; k++)
			if (deconv_layouts[k].type == dnnl_f32 && deconv_layouts[k].ob == ob && deconv_layouts[k].ib == ib &&
			    deconv_layouts[k].i_inner == ii)
				return deconv_layouts[k].tag;
		return dnnl_format_tag_undef;
	}
	for (size_t k = 0; k < sizeof known_layouts / sizeof known_layouts[0]; k++)
		if (known_layouts[k].type == dnnl_f32 && known_layouts[k].ob == ob && known_layouts[k].i_inner == ii &&
		    (known_layouts[k].ib == ib || (!known_layouts[k].ib && ib != ob)))
			return known_layouts[k].tag;
	return dnnl_format_tag_undef;
}

/* The user layout of an activation of e's pass: act_md's, or for a tile
 * (e->fh != 0) a window of rows x cols pixels in the image's layout (its
 * strides; the caller points the data at the window's first pixel). */
static dnnl_status_t act_window_md(dnnl_memory_desc_t *md, const struct dnnl_conv *e, size_t c, size_t rows,
                                   size_t cols, size_t ld, dnnl_data_type_t dt, size_t cb)
{
	if (!e->fh)
		return act_md(md, e->n, c, rows, cols, ld, dt, cb);
	dnnl_status_t s = act_md(md, e->n, c, e->fh, e->fw, ld, dt, cb);
	if (s == dnnl_success && md->format_kind == dnnl_blocked) {
		md->dims[2] = md->padded_dims[2] = (dnnl_dim_t)rows;
		md->dims[3] = md->padded_dims[3] = (dnnl_dim_t)cols;
	} else if (s == dnnl_success)
		s = dnnl_invalid_arguments;
	return s;
}

/* Attributes with a user-managed scratchpad. */
static dnnl_status_t user_scratchpad_attr(dnnl_primitive_attr_t *attr)
{
	dnnl_status_t s = dnnl_primitive_attr_create(attr);
	if (s == dnnl_success)
		s = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
	return s;
}

/* The scratchpad memory object a primitive needs (*mem NULL: none), its
 * size raised into *bytes. */
static dnnl_status_t scratchpad_of(const_dnnl_primitive_desc_t pd, dnnl_memory_t *mem, size_t *bytes)
{
	*mem = NULL;
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	size_t n = md ? dnnl_memory_desc_get_size(md) : 0;
	if (!n)
		return dnnl_success;
	if (n > *bytes)
		*bytes = n;
	return dnnl_memory_create(mem, md, engine, DNNL_MEMORY_NONE);
}

/* Attributes with a user-managed scratchpad and, where accumulate, a sum
 * post-op (dst = beta dst + result); *attr and *po as far as they were made. */
static dnnl_status_t sum_attr(dnnl_primitive_attr_t *attr, dnnl_post_ops_t *po, int accumulate, float beta)
{
	dnnl_status_t s = user_scratchpad_attr(attr);
	if (s == dnnl_success && accumulate && (s = dnnl_post_ops_create(po)) == dnnl_success &&
	    (s = dnnl_post_ops_append_sum(*po, beta)) == dnnl_success)
		s = dnnl_primitive_attr_set_post_ops(*attr, *po);
	return s;
}

/* Frees what building a primitive left (each may be NULL). */
static void desc_free(dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr, dnnl_post_ops_t po)
{
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
}

/* A reorder from -> to into *re (NULL when the layouts are equal), with
 * dst = beta dst + src (a sum post-op) when accumulate; *scratch its
 * scratchpad memory object (handle set later), its size raised into
 * *scratch_bytes. */
static dnnl_status_t make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, int accumulate,
                                  float beta, dnnl_primitive_t *re, dnnl_memory_t *scratch, size_t *scratch_bytes)
{
	*re = NULL;
	if (!accumulate && dnnl_memory_desc_equal(from, to))
		return dnnl_success;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t s = sum_attr(&attr, &po, accumulate, beta);
	if (s == dnnl_success && (s = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, attr)) == dnnl_success &&
	    (s = dnnl_primitive_create(re, pd)) == dnnl_success)
		s = scratchpad_of(pd, scratch, scratch_bytes);
	desc_free(pd, attr, po);
	return s;
}

static size_t md_bytes(const dnnl_memory_desc_t *md)
{
	return dnnl_memory_desc_get_size(md);
}

/* bf16 weight gradients whose input is at most this many pixels high and
 * wide use the AMX kernel (correct up to 192x192 on the UNet's channel
 * counts, checked by tests/codelets/conv2d; 4-5x faster than the next
 * implementation); larger ones avoid it, and on AMX are computed in tiles
 * that fit (wgrad_tiled). Wider inputs are not safe even when small:
 * oneDNN 2.6 crashes on 16x360 (32 -> 32 channels) and gets 96x320 wrong
 * (13 -> 32). */
#define AMX_WGRAD_MAX_SIDE ((size_t)192)

/* The first implementation of op_desc whose name does not contain avoid
 * (NULL: the first), else the first one. oneDNN 2.6's AMX bf16 backward
 * weights convolution (jit:avx512_core_amx_bf16) computes wrong gradients
 * on 384x384 images and writes 3 KiB before its diff_weights buffer
 * (tools/bench/conv and tests/codelets/conv2d reproduce it), so bf16
 * weight gradients of large images avoid it. */
static dnnl_status_t pd_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                               const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint, const char *avoid)
{
	if (!avoid)
		return dnnl_primitive_desc_create(pd, op_desc, attr, engine, hint);
	dnnl_primitive_desc_iterator_t it;
	dnnl_status_t s = dnnl_primitive_desc_iterator_create(&it, op_desc, attr, engine, hint);
	if (s != dnnl_success)
		return s;
	dnnl_primitive_desc_t first = NULL;
	*pd = NULL;
	do {
		dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
		if (!cand)
			break;
		const char *impl = NULL;
		if (dnnl_primitive_desc_query(cand, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
		    !strstr(impl, avoid)) {
			*pd = cand;
			break;
		}
		if (!first)
			first = cand;
		else
			dnnl_primitive_desc_destroy(cand);
	} while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
	dnnl_primitive_desc_iterator_destroy(it);
	if (*pd) {
		if (first)
			dnnl_primitive_desc_destroy(first);
		return dnnl_success;
	}
	*pd = first;
	return first ? dnnl_success : dnnl_unimplemented;
}

/* conv_build's answer when oneDNN's pick for a bf16 transposed weight
 * gradient is its AMX kernel (see conv_create). */
#define BUILD_WIDEN 1

/* Builds the cached convolution for a pass with primitive type pdt (the
 * user's dt, or fp32 for a widened bf16 pass). User layouts: a, b inputs
 * and out (ld: their row strides), per pass:
 *   fwd:        a = x [n,c,h,w], b = w [o,c,k,k], out = y [n,o,h,w]
 *   bwd_data:   a = dy,           b = w,           out = dx
 *   bwd_weight: a = x,            b = dy,          out = dw (fp32) */
static int conv_build(struct dnnl_conv *e, dnnl_data_type_t pdt)
{
	char shape[160];
	int rc = 0;
	const size_t n = e->n, c = e->c, o = e->o, h = e->h, w = e->w, k = e->k;
	/* dt: the user's buffers; the primitive's are pdt (a widened pass
	 * converts in the input reorders it makes anyway) */
	const dnnl_data_type_t dt = (dnnl_data_type_t)e->dt;
	/* internal (primitive) output type: the 16-bit result of a backward
	 * data pass is summed in fp32 when accumulating */
	const dnnl_data_type_t dt_dx = e->accumulate ? dnnl_f32 : pdt;
	dnnl_memory_desc_t ux, uw, uy, ax, aw, ay, adx, adw, ub;
	/* convolution: stride 1, 'same' padding; transposed: 2x2, stride 2 */
	const int kind = e->kind;
	const size_t yh = kind ? 2 * h : h, yw = kind ? 2 * w : w;
	/* a tile's input: its output pixels and their neighbours within the
	 * image (e->pad: zero padding where there are none) */
	const size_t tile = e->fh != 0;
	const size_t xh = tile ? h + k - 1 - (size_t)(e->pad[0] + e->pad[1]) : h,
	             xw = tile ? w + k - 1 - (size_t)(e->pad[2] + e->pad[3]) : w;
	dnnl_dims_t xd = {(dnnl_dim_t)n, (dnnl_dim_t)c, (dnnl_dim_t)xh, (dnnl_dim_t)xw};
	dnnl_dims_t wd = {(dnnl_dim_t)o, (dnnl_dim_t)c, (dnnl_dim_t)k, (dnnl_dim_t)k};
	dnnl_dims_t yd = {(dnnl_dim_t)n, (dnnl_dim_t)o, (dnnl_dim_t)yh, (dnnl_dim_t)yw};
	dnnl_dims_t bd = {(dnnl_dim_t)o};
	dnnl_dims_t stride = {1, 1}, pad = {(dnnl_dim_t)(k / 2), (dnnl_dim_t)(k / 2)}, padr = {pad[0], pad[1]};
	if (kind)
		stride[0] = stride[1] = 2, pad[0] = pad[1] = padr[0] = padr[1] = 0;
	if (tile)
		pad[0] = e->pad[0], padr[0] = e->pad[1], pad[1] = e->pad[2], padr[1] = e->pad[3];
	/* Winograd where asked (e->wino), until oneDNN declines it: then the
	 * direct kernel (retry) */
	dnnl_alg_kind_t alg = kind ? dnnl_deconvolution_direct
	                           : e->wino && pdt == dnnl_f32 ? dnnl_convolution_winograd : dnnl_convolution_direct;
	dnnl_primitive_desc_t fpd = NULL, pd = NULL;
	dnnl_primitive_attr_t attr = NULL;
	DNNL_TRY(user_scratchpad_attr(&attr), "attributes");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ax, 4, xd, pdt, dnnl_format_tag_any), "src descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&aw, 4, wd, pdt, dnnl_format_tag_any), "weights descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ay, 4, yd, pdt, dnnl_format_tag_any), "dst descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&adx, 4, xd, dt_dx, dnnl_format_tag_any), "diff src descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&adw, 4, wd, dnnl_f32, dnnl_format_tag_any), "diff weights descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ub, 1, bd, dnnl_f32, dnnl_x), "bias descriptor");
	/* (a primitive descriptor oneDNN declines with the Winograd algorithm:
	 * everything again with the direct one) */
#define WINO_OR_TRY(call, what)                                                                                \
	do {                                                                                                   \
		dnnl_status_t w_ = (call);                                                                     \
		if (w_ != dnnl_success && alg == dnnl_convolution_winograd) {                                  \
			desc_free(pd, NULL, NULL), desc_free(fpd, NULL, NULL);                                 \
			pd = fpd = NULL;                                                                       \
			alg = dnnl_convolution_direct;                                                         \
			goto retry;                                                                            \
		}                                                                                              \
		DNNL_TRY(w_, what);                                                                            \
	} while (0)
retry:;
	/* the forward primitive (also the hint of the backward ones) */
	dnnl_convolution_desc_t cd;
	if (kind)
		DNNL_TRY(dnnl_deconvolution_forward_desc_init(&cd, dnnl_forward_training, alg, &ax, &aw,
		                                              e->bias ? &ub : NULL, &ay, stride, pad, padr),
		         "forward descriptor");
	else
		DNNL_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, alg, &ax, &aw,
		                                            e->bias ? &ub : NULL, &ay, stride, pad, padr),
		         "forward descriptor");
	WINO_OR_TRY(dnnl_primitive_desc_create(&fpd, &cd, attr, engine, NULL), "forward primitive descriptor");
	dnnl_query_t qa, qb, qout;
	const dnnl_memory_desc_t *ua = NULL, *ubm = NULL, *uo = NULL;
	if (e->pass == STARNN_CONV2D_FWD) {
		DNNL_TRY(act_md(&ux, n, c, h, w, e->lda, dt, e->xb), "x layout");
		DNNL_TRY(wei_md(&uw, kind, o, c, k, e->ldb, dt), "w layout");
		DNNL_TRY(act_md(&uy, n, o, yh, yw, e->ldout, dt, e->yb), "y layout");
		pd = fpd, fpd = NULL;
		qa = dnnl_query_src_md, qb = dnnl_query_weights_md, qout = dnnl_query_dst_md;
		e->arg_a = DNNL_ARG_SRC, e->arg_b = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DST;
		ua = &ux, ubm = &uw, uo = &uy;
	} else if (e->pass == STARNN_CONV2D_BWD_DATA) {
		DNNL_TRY(act_md(&uy, n, o, yh, yw, e->lda, dt, e->yb), "dy layout");
		DNNL_TRY(wei_md(&uw, kind, o, c, k, e->ldb, dt), "w layout");
		DNNL_TRY(act_md(&ux, n, c, h, w, e->ldout, dt, e->xb), "dx layout");
		dnnl_convolution_desc_t bd_;
		if (kind)
			DNNL_TRY(dnnl_deconvolution_backward_data_desc_init(&bd_, alg, &adx, &aw, &ay, stride, pad, pad),
			         "backward data descriptor");
		else
			DNNL_TRY(dnnl_convolution_backward_data_desc_init(&bd_, alg, &adx, &aw, &ay, stride, pad, pad),
			         "backward data descriptor");
		WINO_OR_TRY(dnnl_primitive_desc_create(&pd, &bd_, attr, engine, fpd), "backward data primitive descriptor");
		qa = dnnl_query_diff_dst_md, qb = dnnl_query_weights_md, qout = dnnl_query_diff_src_md;
		e->arg_a = DNNL_ARG_DIFF_DST, e->arg_b = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DIFF_SRC;
		ua = &uy, ubm = &uw, uo = &ux;
	} else {
		DNNL_TRY(act_window_md(&ux, e, c, xh, xw, e->lda, dt, e->xb), "x layout");
		DNNL_TRY(act_window_md(&uy, e, o, yh, yw, e->ldb, dt, e->yb), "dy layout");
		if (e->dwb)
			DNNL_TRY(dnnl_memory_desc_init_by_tag(&uw, 4, wd, dnnl_f32, blocked_tag(kind, e->dwb, e->dwib, e->dwi)),
			         "dw layout");
		else
			DNNL_TRY(wei_md(&uw, kind, o, c, k, e->ldout, dnnl_f32), "dw layout");
		dnnl_convolution_desc_t wd_;
		if (kind)
			DNNL_TRY(dnnl_deconvolution_backward_weights_desc_init(&wd_, alg, &ax, &adw, e->bias ? &ub : NULL, &ay,
			                                                       stride, pad, padr),
			         "backward weights descriptor");
		else
			DNNL_TRY(dnnl_convolution_backward_weights_desc_init(&wd_, alg, &ax, &adw, e->bias ? &ub : NULL, &ay,
			                                                     stride, pad, padr),
			         "backward weights descriptor");
		WINO_OR_TRY(pd_create(&pd, &wd_, attr, fpd,
		                      pdt == dnnl_bf16 && (xh > AMX_WGRAD_MAX_SIDE || xw > AMX_WGRAD_MAX_SIDE) ? "amx" : NULL),
		            "backward weights primitive descriptor");
		const char *impl = NULL;
		if (kind && pdt == dnnl_bf16 &&
		    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
		    strstr(impl, "amx")) {
			rc = BUILD_WIDEN;
			goto fail;
		}
		qa = dnnl_query_src_md, qb = dnnl_query_diff_dst_md, qout = dnnl_query_diff_weights_md;
		e->arg_a = DNNL_ARG_SRC, e->arg_b = DNNL_ARG_DIFF_DST, e->arg_out = DNNL_ARG_DIFF_WEIGHTS;
		ua = &ux, ubm = &uy, uo = &uw;
	}
	const dnnl_memory_desc_t *ia = dnnl_primitive_desc_query_md(pd, qa, 0),
	                         *ib = dnnl_primitive_desc_query_md(pd, qb, 0),
	                         *io = dnnl_primitive_desc_query_md(pd, qout, 0);
	if (!ia || !ib || !io) {
		rc = starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the primitive has no memory descriptors (%s)",
		                  describe(shape, sizeof shape, e));
		goto fail;
	}
	DNNL_TRY(dnnl_primitive_create(&e->conv, pd), "convolution primitive");
	DNNL_TRY(scratchpad_of(pd, &e->scratch[0], &e->bytes_scratch), "scratchpad");
	DNNL_TRY(make_reorder(ua, ia, 0, 0.0f, &e->re_a, &e->scratch[1], &e->bytes_scratch), "input reorder");
	DNNL_TRY(make_reorder(ubm, ib, 0, 0.0f, &e->re_b, &e->scratch[2], &e->bytes_scratch), "input reorder");
	DNNL_TRY(make_reorder(io, uo, e->accumulate, e->beta, &e->re_out, &e->scratch[3], &e->bytes_scratch),
	         "output reorder");
	e->bytes_a = e->re_a ? md_bytes(ia) : 0;
	e->bytes_b = e->re_b ? md_bytes(ib) : 0;
	e->bytes_out = e->re_out ? md_bytes(io) : 0;
	DNNL_TRY(dnnl_memory_create(&e->ua, ua, engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->ub, ubm, engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->uout, uo, engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_a)
		DNNL_TRY(dnnl_memory_create(&e->ia, ia, engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_b)
		DNNL_TRY(dnnl_memory_create(&e->ib, ib, engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_out)
		DNNL_TRY(dnnl_memory_create(&e->iout, io, engine, DNNL_MEMORY_NONE), "memory");
	if (e->bias)
		DNNL_TRY(dnnl_memory_create(&e->bias_mem, &ub, engine, DNNL_MEMORY_NONE), "memory");
fail:
	desc_free(pd, attr, NULL);
	desc_free(fpd, NULL, NULL);
	return rc;
#undef WINO_OR_TRY
}

/* A transposed 2x2 / stride-2 convolution's forward is a 1x1 convolution
 * to 4o channels followed by a spread of its pixels: with w PyTorch's
 * [c, o, 2, 2], y[n, oc, 2i + a, 2j + b] = b[oc] + sum_c x[n, c, i, j]
 * w[c, oc, a, b], so z = conv1x1(x, W) with W[oc * 4 + a * 2 + b, c] =
 * w[c, oc, a, b] (w itself read with strides {1, ld}: no copy) holds every
 * y value, at channel oc * 4 + a * 2 + b of pixel (i, j). oneDNN 2.6 runs
 * its deconvolution (jit:avx2) at 8-39 GFLOP/s on the UNet's up-sampling
 * shapes and its 1x1 convolution (jit_1x1:avx2) at 85-99 GFLOP/s (one
 * thread, batch 2, an AVX2 EPYC); in bf16 on AVX512-BF16 without AMX its
 * deconvolution (jit_bf16:avx512_core_bf16) runs at 3.7-22 GFLOP/s (one
 * thread, batch 1, a Zen 4 EPYC: DNNL_VERBOSE of 128x128 amp-bf16 steps).
 * z is fp32 in both dtypes: a bf16 pass sums in fp32, adds the bias and
 * rounds once in up_spread, as the deconvolution does. Built where oneDNN
 * picks a blocked layout for z (nChw8c / nChw16c, 4o a multiple of the
 * block: fp32 on AVX2 / AVX-512, bf16 on AVX512-BF16; bf16 on AMX is left
 * to the deconvolution by conv_create); returns 1 when it does not (the
 * caller builds the deconvolution), else 0 or the error. */
#define BUILD_NOT_UP 1
static int conv_build_up(struct dnnl_conv *e)
{
	char shape[160];
	int rc = 0;
	const size_t n = e->n, c = e->c, o = e->o, h = e->h, w = e->w;
	const dnnl_data_type_t dt = (dnnl_data_type_t)e->dt;
	dnnl_dims_t xd = {(dnnl_dim_t)n, (dnnl_dim_t)c, (dnnl_dim_t)h, (dnnl_dim_t)w};
	dnnl_dims_t wd = {(dnnl_dim_t)(4 * o), (dnnl_dim_t)c, 1, 1};
	dnnl_dims_t zd = {(dnnl_dim_t)n, (dnnl_dim_t)(4 * o), (dnnl_dim_t)h, (dnnl_dim_t)w};
	dnnl_dims_t wstrides = {1, (dnnl_dim_t)e->ldb, 1, 1};
	dnnl_dims_t stride = {1, 1}, pad = {0, 0};
	dnnl_memory_desc_t ax, aw, az, ux, uw, z8, z16;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_attr_t attr = NULL;
	DNNL_TRY(user_scratchpad_attr(&attr), "attributes");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ax, 4, xd, dt, dnnl_format_tag_any), "src descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&aw, 4, wd, dt, dnnl_format_tag_any), "weights descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&az, 4, zd, dnnl_f32, dnnl_format_tag_any), "dst descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&z8, 4, zd, dnnl_f32, dnnl_nChw8c), "dst descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&z16, 4, zd, dnnl_f32, dnnl_nChw16c), "dst descriptor");
	dnnl_convolution_desc_t cd;
	DNNL_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &ax, &aw, NULL,
	                                            &az, stride, pad, pad),
	         "forward descriptor");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL), "forward primitive descriptor");
	const dnnl_memory_desc_t *ia = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
	                         *ib = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
	                         *io = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	if (!ia || !ib || !io) {
		rc = starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the primitive has no memory descriptors (%s)",
		                  describe(shape, sizeof shape, e));
		goto fail;
	}
	size_t zb = dnnl_memory_desc_equal(io, &z8) && (4 * o) % 8 == 0     ? 8
	            : dnnl_memory_desc_equal(io, &z16) && (4 * o) % 16 == 0 ? 16
	                                                                      : 0;
	if (!zb) {
		rc = BUILD_NOT_UP;
		goto fail;
	}
	DNNL_TRY(act_md(&ux, n, c, h, w, e->lda, dt, e->xb), "x layout");
	DNNL_TRY(dnnl_memory_desc_init_by_strides(&uw, 4, wd, dt, wstrides), "w layout");
	DNNL_TRY(dnnl_primitive_create(&e->conv, pd), "convolution primitive");
	DNNL_TRY(scratchpad_of(pd, &e->scratch[0], &e->bytes_scratch), "scratchpad");
	DNNL_TRY(make_reorder(&ux, ia, 0, 0.0f, &e->re_a, &e->scratch[1], &e->bytes_scratch), "input reorder");
	DNNL_TRY(make_reorder(&uw, ib, 0, 0.0f, &e->re_b, &e->scratch[2], &e->bytes_scratch), "input reorder");
	e->bytes_a = e->re_a ? md_bytes(ia) : 0;
	e->bytes_b = e->re_b ? md_bytes(ib) : 0;
	e->bytes_out = md_bytes(io);
	DNNL_TRY(dnnl_memory_create(&e->ua, &ux, engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->ub, &uw, engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_a)
		DNNL_TRY(dnnl_memory_create(&e->ia, ia, engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_b)
		DNNL_TRY(dnnl_memory_create(&e->ib, ib, engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->iout, io, engine, DNNL_MEMORY_NONE), "memory");
	e->arg_a = DNNL_ARG_SRC, e->arg_b = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DST;
	e->zb = zb;
fail:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return rc;
}

#ifdef STARNN_SIMD_X86
#include <immintrin.h>
/* up_spread where z and y are both in blocks of 16 (AVX-512): lane l of y's
 * block ob at output pixel (2i + a, 2j + b) is lane 4 (l % 4) + ab of z's
 * block 4 ob + l / 4 at pixel (i, j) (ab = 2a + b), so each (a, b) is two
 * two-source permutes of the pixel's four z vectors and a blend. The same
 * fp32 addition as the scalar loop, and bf16 rounded by
 * STARNN_BF16X16_NARROW (codelets/cpu/halfrow.h: starnn_float_to_bf16's
 * bits): bit for bit its results. */
STARNN_TARGET_AVX512 static void up_spread16_avx512(size_t n, size_t o, size_t h, size_t w, int bf16,
                                                     const float *z, const float *bias, void *y, size_t ldy)
{
	const size_t hw = h * w;
	__m512i idx[4];
	for (int ab = 0; ab < 4; ab++) {
		int v[16];
		for (int l = 0; l < 16; l++)
			v[l] = (l % 8) / 4 * 16 + 4 * (l % 4) + ab;
		idx[ab] = _mm512_loadu_si512(v);
	}
	for (size_t ob = 0; ob < o / 16; ob++) {
		const __m512 bv = bias ? _mm512_loadu_ps(bias + ob * 16) : _mm512_setzero_ps();
		for (size_t r = 0; r < n; r++) {
			const float *zb = z + r * 4 * o * hw + 4 * ob * hw * 16;
			const size_t y0 = r * ldy + ob * 16 * 4 * hw;
			for (size_t i = 0; i < h; i++)
				for (size_t j = 0; j < w; j++) {
					const float *zp = zb + (i * w + j) * 16;
					const __m512 z0 = _mm512_loadu_ps(zp), z1 = _mm512_loadu_ps(zp + hw * 16);
					const __m512 z2 = _mm512_loadu_ps(zp + 2 * hw * 16), z3 = _mm512_loadu_ps(zp + 3 * hw * 16);
					for (int ab = 0; ab < 4; ab++) {
						const __m512 lo = _mm512_permutex2var_ps(z0, idx[ab], z1);
						const __m512 hi = _mm512_permutex2var_ps(z2, idx[ab], z3);
						const __m512 v = _mm512_add_ps(_mm512_mask_blend_ps(0xFF00, lo, hi), bv);
						const size_t at = y0 + ((2 * i + (size_t)(ab >> 1)) * 2 * w + 2 * j + (size_t)(ab & 1)) * 16;
						if (bf16)
							STARNN_BF16X16_NARROW((uint16_t *)y + at, (starnn_vf16)v);
						else
							_mm512_storeu_ps((float *)y + at, v);
					}
				}
		}
	}
}
#endif

/* y[n, oc, 2i + a, 2j + b] = z[n, oc * 4 + a * 2 + b, i, j] + bias[oc] (no
 * bias: NULL), z in nChw{e->zb}c, y in e->yb's layout (runtime/core/tensor.h:
 * channels in blocks of B, NCHW for B = 1; a block plane starts where its
 * first channel's NCHW plane would) and e's dtype (bf16: the fp32 sum
 * rounded once), samples ldy apart. y is written row after row; each
 * lane's z offset is worked out once per block and (a, b). Blocks of 16
 * on both sides take up_spread16_avx512 where AVX-512 is in use. */
static void up_spread(const struct dnnl_conv *e, const float *z, const float *bias, void *y, size_t ldy)
{
	const size_t n = e->n, o = e->o, h = e->h, w = e->w, hw = h * w, Z = e->zb, B = e->yb;
	const int bf16 = e->dt == (int)dnnl_bf16;
#ifdef STARNN_SIMD_X86
	if (Z == 16 && B == 16 && starnn_simd_level() >= STARNN_SIMD_AVX512) {
		up_spread16_avx512(n, o, h, w, bf16, z, bias, y, ldy);
		return;
	}
#endif
	size_t zoff[4][STARNN_CBLOCK_MAX];
	float bl[STARNN_CBLOCK_MAX];
	for (size_t ob = 0; ob < o / B; ob++) {
		for (size_t l = 0; l < B; l++) {
			bl[l] = bias ? bias[ob * B + l] : 0.0f;
			for (size_t ab = 0; ab < 4; ab++) {
				size_t q = (ob * B + l) * 4 + ab;
				zoff[ab][l] = q / Z * hw * Z + q % Z;
			}
		}
		for (size_t r = 0; r < n; r++) {
			const float *zn = z + r * 4 * o * hw;
			size_t yo = r * ldy + ob * B * 4 * hw;
			for (size_t i = 0; i < h; i++)
				for (size_t a = 0; a < 2; a++)
					for (size_t j = 0; j < w; j++) {
						const float *zp = zn + (i * w + j) * Z;
						for (size_t b = 0; b < 2; b++, yo += B) {
							const size_t *zo = zoff[a * 2 + b];
							if (bf16) {
								uint16_t *yp = (uint16_t *)y + yo;
								for (size_t l = 0; l < B; l++)
									yp[l] = starnn_float_to_bf16(zp[zo[l]] + bl[l]);
							} else {
								float *yp = (float *)y + yo;
								for (size_t l = 0; l < B; l++)
									yp[l] = zp[zo[l]] + bl[l];
							}
						}
					}
		}
	}
}

/* The cached convolution of a pass: in its own type, except the weight
 * gradient of a bf16 transposed convolution where oneDNN picks its AMX
 * kernel. oneDNN 2.6's AMX kernel for that pass (2x2, stride 2) is 1.1-3x
 * slower than its fp32 kernel at the UNet's shapes on a Sapphire Rapids
 * (DNNL_VERBOSE, 128x128 amp-bf16 steps: 2.7 against 0.8 ms at 32 -> 16
 * channels, 64x64 -> 128x128), so there the pass runs the fp32 kernel on
 * x and dy widened inside the reorders into its blocked layout (exact:
 * every bf16 value is an fp32 value; products and sums in fp32 as in the
 * bf16 kernel). The codelets take convt_wgrad_gemm before it wherever
 * bf16 is native; this stays for layouts that route declines. */
static int conv_create(struct dnnl_conv *e)
{
	/* (up_spread's per-lane tables hold STARNN_CBLOCK_MAX lanes: a block
	 * the tensor layer allows; bf16 on AMX keeps the deconvolution, whose
	 * NHWC kernel the route was not measured against) */
	const int up_dt = e->dt == (int)dnnl_f32 ||
	                  (e->dt == (int)dnnl_bf16 && starnn_conv2d_dnnl_block(STARNN_BF16) != STARNN_CONV2D_NHWC);
	if (e->kind == 1 && e->pass == STARNN_CONV2D_FWD && up_dt && !e->accumulate && e->yb <= STARNN_CBLOCK_MAX) {
		int up = conv_build_up(e);
		if (up != BUILD_NOT_UP)
			return up;
	}
	int rc = conv_build(e, (dnnl_data_type_t)e->dt);
	return rc == BUILD_WIDEN ? conv_build(e, dnnl_f32) : rc;
}

static int key_equal(const struct dnnl_conv *a, const struct dnnl_conv *b)
{
	return a->kind == b->kind && a->pass == b->pass && a->dt == b->dt && a->bias == b->bias && a->accumulate == b->accumulate && a->beta == b->beta &&
	       a->n == b->n && a->c == b->c && a->o == b->o && a->h == b->h && a->w == b->w && a->k == b->k &&
	       a->lda == b->lda && a->ldb == b->ldb && a->ldout == b->ldout && a->xb == b->xb && a->yb == b->yb &&
	       a->fh == b->fh && a->fw == b->fw && !memcmp(a->pad, b->pad, sizeof a->pad) && a->wino == b->wino &&
	       a->dwb == b->dwb && a->dwi == b->dwi && a->dwib == b->dwib;
}

static struct dnnl_conv conv_key(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g, size_t lda,
                                 size_t ldb, int bias, float beta, size_t ldout)
{
	struct dnnl_conv key = {.kind = kind, .pass = pass, .dt = (int)dnnl_dt(sdt), .bias = bias,
	                        .accumulate = beta != 0.0f, .beta = beta, .n = g->n, .c = g->c, .o = g->o, .h = g->h,
	                        .w = g->w, .k = g->k, .lda = lda, .ldb = ldb, .ldout = ldout,
	                        .xb = g->xb > 1 ? g->xb : 1, .yb = g->yb > 1 ? g->yb : 1,
	                        .wino = !kind && starnn_conv2d_winograd(g, (enum starnn_conv2d_pass)pass, sdt)};
	if (pass == STARNN_CONV2D_BWD_WEIGHT)
		key.dwb = g->dwb, key.dwi = g->dwi, key.dwib = g->dwib;
	return key;
}

/* The thread's cached convolution for key in *out, created on first use;
 * 0 or the error. */
static int conv_entry(struct dnnl_thread *t, const struct dnnl_conv *key, struct dnnl_conv **out)
{
	*out = NULL;
	if (t->last && key_equal(t->last, key)) {
		*out = t->last;
		return 0;
	}
	for (int i = 0; i < CACHE_SLOTS; i++)
		if (t->slot[i] && key_equal(t->slot[i], key)) {
			*out = t->last = t->slot[i];
			return 0;
		}
	struct dnnl_conv *e = malloc(sizeof *e);
	if (!e)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): out of memory");
	*e = *key;
	int rc = conv_create(e);
	if (rc < 0) {
		conv_destroy(e);
		return rc;
	}
	conv_destroy(t->slot[t->next]);
	t->slot[t->next] = e;
	t->next = (t->next + 1) % CACHE_SLOTS;
	*out = t->last = e;
	return 0;
}

/* ------------------------------------------------------- packed weights
 * A packed buffer holds the memory descriptor of the layout it was packed
 * into, then (64-byte aligned) the weights in that layout. */
#define PACK_ALIGN 64

static size_t pack_data_offset(const void *packed)
{
	uintptr_t p = (uintptr_t)packed + sizeof(dnnl_memory_desc_t);
	return (size_t)(((p + PACK_ALIGN - 1) & ~(uintptr_t)(PACK_ALIGN - 1)) - (uintptr_t)packed);
}

/* The weights of e packed, or NULL when packed is NULL or was packed into
 * another layout than e's primitive takes (then e reorders w itself). */
static void *packed_weights(const struct dnnl_conv *e, const void *packed)
{
	if (!packed || !e->ib)
		return NULL;
	const dnnl_memory_desc_t *md = NULL;
	if (dnnl_memory_get_memory_desc(e->ib, &md) != dnnl_success || !md ||
	    !dnnl_memory_desc_equal((const dnnl_memory_desc_t *)packed, md))
		return NULL;
	return (char *)packed + pack_data_offset(packed);
}

static int pack_pass_ok(int pass)
{
	return pass == STARNN_CONV2D_FWD || pass == STARNN_CONV2D_BWD_DATA;
}

/* Fills *L where md (a transposed convolution's weights, [o, c, 2, 2])
 * is one of deconv_layouts: a layout of PyTorch's [c, o, 2, 2]; ob = 0
 * otherwise. */
static void deconv_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if (md->ndims != 4)
		return;
	for (size_t k = 0; k < sizeof deconv_layouts / sizeof deconv_layouts[0]; k++) {
		dnnl_memory_desc_t ref;
		if (md->data_type != deconv_layouts[k].type ||
		    dnnl_memory_desc_init_by_tag(&ref, 4, md->dims, deconv_layouts[k].type, deconv_layouts[k].tag) !=
		            dnnl_success ||
		    !dnnl_memory_desc_equal(&ref, md))
			continue;
		*L = (struct starnn_blocked_weights){(uint32_t)md->dims[1], (uint32_t)md->dims[0],
		                                     (uint32_t)(md->dims[2] * md->dims[3]), deconv_layouts[k].ob,
		                                     deconv_layouts[k].ib, deconv_layouts[k].i_inner, 0, 0,
		                                     deconv_layouts[k].pair, 0};
		return;
	}
}

/* Fills *L where md is one of known_layouts; ob = 0 otherwise. */
static void pack_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if (md->ndims != 4)
		return;
	for (size_t k = 0; k < sizeof known_layouts / sizeof known_layouts[0]; k++) {
		dnnl_memory_desc_t ref;
		if (md->data_type != known_layouts[k].type ||
		    dnnl_memory_desc_init_by_tag(&ref, 4, md->dims, known_layouts[k].type, known_layouts[k].tag) != dnnl_success ||
		    !dnnl_memory_desc_equal(&ref, md))
			continue;
		*L = (struct starnn_blocked_weights){(uint32_t)md->dims[0],
		                                     (uint32_t)md->dims[1],
		                                     (uint32_t)(md->dims[2] * md->dims[3]),
		                                     known_layouts[k].ob,
		                                     known_layouts[k].ib ? known_layouts[k].ib
		                                                          : (uint32_t)(md->dims[1] + (known_layouts[k].pair ? 1 : 0)) /
		                                                                    (known_layouts[k].pair ? 2 : 1) *
		                                                                    (known_layouts[k].pair ? 2 : 1),
		                                     known_layouts[k].i_inner,
		                                     (uint32_t)sizeof(dnnl_memory_desc_t),
		                                     PACK_ALIGN,
		                                     known_layouts[k].pair, 0};
		return;
	}
}

size_t starnn_conv2d_dnnl_pack_bytes(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, size_t lda, size_t ldw, size_t ldout, float beta)
{
	return starnn_conv2d_dnnl_pack_info(pass, g, dt, lda, ldw, ldout, beta, NULL);
}

/* The answers of the layout probes below (starnn_conv2d_dnnl_pack_info,
 * probe_layout), remembered per primitive key for the process: some are
 * asked at each submission of a pass (a transposed convolution's copies,
 * conv2d's sliced copies at batch 1), and each answer costs building a
 * primitive on the submitting thread. A key's answer does not change
 * within a process (the threads' caches rely on the same: key_equal).
 * probe: which question (probe_layout's out | up << 1 | deconv << 2);
 * bytes: the size of the layout's data; a full table replaces its entries
 * in turn. Only answers from a primitive that was built are kept (a
 * failure, such as memory, is asked again). */
#define MEMO_SLOTS 256
struct layout_memo {
	struct dnnl_conv key;
	int probe;
	size_t bytes;
	struct starnn_blocked_weights L;
};
static struct layout_memo memo[MEMO_SLOTS];
static int memo_count, memo_next;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static int memo_get(const struct dnnl_conv *key, int probe, size_t *bytes, struct starnn_blocked_weights *L)
{
	int found = 0;
	pthread_mutex_lock(&memo_lock);
	for (int i = 0; i < memo_count && !found; i++)
		if (memo[i].probe == probe && key_equal(&memo[i].key, key)) {
			*bytes = memo[i].bytes;
			*L = memo[i].L;
			found = 1;
		}
	pthread_mutex_unlock(&memo_lock);
	return found;
}

static void memo_put(const struct dnnl_conv *key, int probe, size_t bytes, const struct starnn_blocked_weights *L)
{
	pthread_mutex_lock(&memo_lock);
	struct layout_memo *m;
	if (memo_count < MEMO_SLOTS)
		m = &memo[memo_count++];
	else
		m = &memo[memo_next], memo_next = (memo_next + 1) % MEMO_SLOTS;
	m->key = *key;
	m->probe = probe;
	m->bytes = bytes;
	m->L = *L;
	pthread_mutex_unlock(&memo_lock);
}

static void pack_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L);
static int probe_layout(const struct dnnl_conv *key, int out, int up,
                        void (*take)(const dnnl_memory_desc_t *, struct starnn_blocked_weights *),
                        struct starnn_blocked_weights *L, size_t *data);

size_t starnn_conv2d_dnnl_pack_info(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                    starnn_dtype dt, size_t lda, size_t ldw, size_t ldout, float beta,
                                    struct starnn_blocked_weights *layout)
{
	if (layout)
		memset(layout, 0, sizeof *layout);
	if (!pack_pass_ok(pass) || (dt != STARNN_FP32 && dt != STARNN_BF16) || !g->n || !g->c || !g->o || !g->h ||
	    !g->w || starnn_conv2d_1x1_gemm(g, dt) ||
	    (pass == STARNN_CONV2D_FWD && starnn_conv2d_nchw_in_direct(g, dt))) /* (not on oneDNN: nothing to pack) */
		return 0;
	const struct dnnl_conv key = conv_key(0, (int)pass, dt, g, lda, ldw, pass == STARNN_CONV2D_FWD, beta, ldout);
	struct starnn_blocked_weights L;
	size_t data = 0;
	if (probe_layout(&key, 0, 0, pack_layout, &L, &data))
		L.header = (uint32_t)sizeof(dnnl_memory_desc_t), L.align = PACK_ALIGN; /* (a packed buffer's framing) */
	if (layout)
		*layout = L;
	return data ? sizeof(dnnl_memory_desc_t) + PACK_ALIGN + data : 0;
}

/* Whether the weight gradient of g runs on a route of its own that writes
 * OIHW dw (the 1x1 sgemm, the GEMM and direct routes, tiles) rather than
 * on oneDNN's primitive for the whole image. */
static size_t wgrad_tile_side(const struct starnn_conv2d_geom *g, starnn_dtype dt);
static int wgrad_writes_oihw(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	if (starnn_conv2d_1x1_gemm(g, dt))
		return 1;
	const enum starnn_conv2d_wgrad route = starnn_conv2d_wgrad_route(g, dt);
	return route == STARNN_CONV2D_WGRAD_GEMM || route == STARNN_CONV2D_WGRAD_DIRECT || wgrad_tile_side(g, dt);
}

static void deconv_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L);

/* The layout (runtime/core/tensor.h) of what the primitive of key reorders on
 * the weights' side: its output (out 1: a weight gradient) or its weights
 * input (0), recognised by take (pack_layout, deconv_layout); a 1x1
 * forward of a transposed convolution (up 1: its conv_build_up route
 * only) gives a layout of the transpose. Built here, on the submitting
 * thread, the first time a key is asked (then remembered: memo_get), and
 * not kept: the workers build the same primitive in their own caches.
 * 1 where *L names one (header and align 0), 0 otherwise; *data (may be
 * NULL): the bytes of that side in the primitive's layout, described or
 * not (0: the primitive does not reorder it). */
static int probe_layout(const struct dnnl_conv *key, int out, int up,
                        void (*take)(const dnnl_memory_desc_t *, struct starnn_blocked_weights *),
                        struct starnn_blocked_weights *L, size_t *data)
{
	memset(L, 0, sizeof *L);
	const int probe = out | up << 1 | (take == deconv_layout) << 2;
	size_t bytes = 0;
	if (data)
		*data = 0;
	if (memo_get(key, probe, &bytes, L)) {
		if (data)
			*data = bytes;
		return L->ob != 0;
	}
	pthread_once(&engine_once, engine_init);
	struct dnnl_conv *e = engine_status == dnnl_success ? malloc(sizeof *e) : NULL;
	if (!e)
		return 0;
	*e = *key;
	const dnnl_memory_desc_t *md = NULL;
	const int built = conv_create(e) == 0;
	if (built && (out ? e->re_out && e->iout : e->re_b && e->ib) && (!up || e->zb) &&
	    dnnl_memory_get_memory_desc(out ? e->iout : e->ib, &md) == dnnl_success && md) {
		take(md, L);
		L->trans = up && L->ob;
		L->header = L->align = 0;
		bytes = md_bytes(md);
	}
	conv_destroy(e);
	if (built)
		memo_put(key, probe, bytes, L);
	if (data)
		*data = bytes;
	return L->ob != 0;
}

int starnn_conv2d_dnnl_dw_layout(const struct starnn_conv2d_geom *g, starnn_dtype dt, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !g->n || !g->c || !g->o || !g->h || !g->w ||
	    wgrad_writes_oihw(g, dt))
		return 0;
	struct starnn_conv2d_geom plain = *g;
	plain.dwb = plain.dwi = plain.dwib = 0;
	const struct dnnl_conv key = conv_key(0, STARNN_CONV2D_BWD_WEIGHT, dt, &plain, g->c * g->h * g->w,
	                                      g->o * g->h * g->w, 1, 0.0f, g->c * g->k * g->k);
	if (probe_layout(&key, 1, 0, pack_layout, L, NULL) && (L->pair || g->o % L->ob || g->c % L->ib))
		memset(L, 0, sizeof *L);
	return L->ob != 0;
}

/* Runs reorder re of cache entry e alone (its scratchpad memory sm, NULL
 * for none, in the thread's scratchpad buffer): memory object fm with data
 * at from into tm with data at to; waits for it. */
static int run_reorder(struct dnnl_thread *t, const struct dnnl_conv *e, dnnl_primitive_t re, dnnl_memory_t sm,
                       dnnl_memory_t fm, const void *from, dnnl_memory_t tm, void *to, const char *what)
{
	char shape[160];
	int rc = 0;
	void *bs = e->bytes_scratch ? thread_buf(3, e->bytes_scratch) : NULL;
	if (e->bytes_scratch && !bs)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate %zu bytes of scratchpad (%s)",
		                    e->bytes_scratch, describe(shape, sizeof shape, e));
	if (sm)
		DNNL_TRY(dnnl_memory_set_data_handle(sm, bs), "set handle");
	DNNL_TRY(dnnl_memory_set_data_handle(fm, (void *)from), "set handle");
	DNNL_TRY(dnnl_memory_set_data_handle(tm, to), "set handle");
	dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, fm}, {DNNL_ARG_TO, tm}, {DNNL_ARG_SCRATCHPAD, sm}};
	DNNL_TRY(dnnl_primitive_execute(re, t->stream, sm ? 3 : 2, args), what);
	DNNL_TRY(dnnl_stream_wait(t->stream), "stream wait");
	return 0;
fail:
	return rc;
}

int starnn_conv2d_dnnl_pack(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            size_t lda, const void *w, size_t ldw, size_t ldout, float beta, void *packed,
                            size_t bytes)
{
	char shape[160];
	if (!pack_pass_ok(pass) || (dt != STARNN_FP32 && dt != STARNN_BF16))
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): weights are packed for the forward and backward-data "
		                                   "passes of fp32 and bf16 convolutions only");
	struct dnnl_thread *t = thread_state();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv key = conv_key(0, (int)pass, dt, g, lda, ldw, pass == STARNN_CONV2D_FWD, beta, ldout);
	struct dnnl_conv *e;
	STARNN_CHECK(conv_entry(t, &key, &e));
	const dnnl_memory_desc_t *md = NULL;
	if (!e->re_b || !e->ib || dnnl_memory_get_memory_desc(e->ib, &md) != dnnl_success || !md)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the primitive takes the weights as they are: nothing "
		                                   "to pack (%s)",
		                    describe(shape, sizeof shape, e));
	size_t off = pack_data_offset(packed);
	if (off + md_bytes(md) > bytes)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): %zu bytes cannot hold the packed weights (%zu; %s)",
		                    bytes, off + md_bytes(md), describe(shape, sizeof shape, e));
	memcpy(packed, md, sizeof *md);
	return run_reorder(t, e, e->re_b, e->scratch[2], e->ub, w, e->ib, (char *)packed + off, "weight packing");
}

/* Where packed weights are: a buffer of starnn_conv2d_dnnl_pack, or (row0
 * given, sliced) rows row0 .. of a whole blocked copy of
 * starnn_blocked_make_cpu. */
struct packed_ref {
	const void *buf;
	size_t row0;
	int sliced;
};

/* The weights of e's primitive in the whole blocked copy r->buf, from its
 * row r->row0: where the primitive's layout is the copy's (a blocked fp32
 * layout that runtime/core/tensor.h describes, its output-channel blocks
 * outermost, so rows row0 .. row0 + o are contiguous blocks), row0 is on a
 * block boundary and the part ends on one or at the copy's last row; NULL
 * otherwise (then e reorders w itself). */
static void *sliced_weights(const struct dnnl_conv *e, const struct packed_ref *r)
{
	const struct starnn_blocked_weights *L = r->buf;
	const dnnl_memory_desc_t *md = NULL;
	struct starnn_blocked_weights le;
	if (!e->ib || dnnl_memory_get_memory_desc(e->ib, &md) != dnnl_success || !md)
		return NULL;
	if (e->kind && !e->zb) /* (a transposed convolution's [o, c, 2, 2]: a layout of the rows c) */
		deconv_layout(md, &le);
	else
		pack_layout(md, &le);
	le.trans = e->kind && e->zb; /* (its forward's 1x1 weights [4o, c]: of the transpose) */
	if (!le.ob || le.ob != L->ob || le.ib != L->ib || le.i_inner != L->i_inner || le.pair != L->pair ||
	    le.trans != L->trans || le.i != L->i ||
	    le.taps != L->taps || r->row0 % L->ob || r->row0 + le.o > L->o ||
	    (le.o % L->ob && r->row0 + le.o != L->o))
		return NULL;
	const size_t ibs = (L->i + L->ib - 1) / L->ib; /* (elements of L's size: bf16 in pairs too) */
	return (char *)starnn_blocked_weights_data(L, (void *)r->buf) +
	       r->row0 / L->ob * ibs * L->taps * L->ob * L->ib * starnn_blocked_weights_es(L);
}

/* Whether the fp32 primitive of a pass (this thread's, for these
 * arguments) reads the weights of r as they are. */
static int reads_as_is(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, size_t lda, size_t ldw,
                       size_t ldout, float beta, const struct packed_ref *r)
{
	if (!r->buf || !pack_pass_ok(pass) || !g->n || !g->c || !g->o || !g->h || !g->w ||
	    starnn_conv2d_1x1_gemm(g, STARNN_FP32) ||
	    (pass == STARNN_CONV2D_FWD && starnn_conv2d_nchw_in_direct(g, STARNN_FP32)))
		return 0;
	struct dnnl_thread *t = thread_state();
	if (!t)
		return 0;
	struct dnnl_conv key = conv_key(0, (int)pass, STARNN_FP32, g, lda, ldw, pass == STARNN_CONV2D_FWD, beta, ldout);
	struct dnnl_conv *e;
	if (conv_entry(t, &key, &e) < 0)
		return 0; /* (the pass itself reports it) */
	return (r->sliced ? sliced_weights(e, r) : packed_weights(e, r->buf)) != NULL;
}

int starnn_conv2d_dnnl_packed_ok(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, size_t lda,
                                 size_t ldw, size_t ldout, float beta, const void *packed)
{
	const struct packed_ref r = {packed, 0, 0};
	return reads_as_is(pass, g, lda, ldw, ldout, beta, &r);
}

int starnn_conv2d_dnnl_sliced_ok(const struct starnn_conv2d_geom *g, size_t ldx, size_t ldw, size_t ldy,
                                 const void *whole, size_t row0)
{
	const struct packed_ref r = {whole, row0, 1};
	return reads_as_is(STARNN_CONV2D_FWD, g, ldx, ldw, ldy, 0.0f, &r);
}

/* bias: the forward's bias (read), or the backward weight pass's bias
 * gradient (written: beta * db + new); NULL: none. pk: b packed (NULL:
 * none; used when its layout is the primitive's, else b is reordered as
 * without it). */
static int conv_run_packed(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g, const void *a,
                           size_t lda, const void *b, size_t ldb, const struct packed_ref *pk, const float *bias,
                           float beta, void *out, size_t ldout);
static int conv_exec(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                     const float *bias, float beta, void *out);
static int conv_exec_acc(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                         const float *bias, float beta, void *out, float *acc, int acc_first, size_t reps,
                         size_t astep, size_t ostep);

static int conv_run(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g, const void *a,
                    size_t lda, const void *b, size_t ldb, const void *packed, const float *bias, float beta,
                    void *out, size_t ldout)
{
	const struct packed_ref r = {packed, 0, 0};
	return conv_run_packed(kind, pass, sdt, g, a, lda, b, ldb, packed ? &r : NULL, bias, beta, out, ldout);
}

/* The key a forward or backward-data pass runs on (conv_run_packed): its
 * own, or, where its activations are strided (samples further apart than
 * a sample's size) over several samples, one sample's with dense strides
 * (*per_sample 1: run once per sample). */
static struct dnnl_conv data_pass_key(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                                      size_t lda, size_t ldb, int bias, float beta, size_t ldout, int *per_sample)
{
	const size_t xs = g->c * g->h * g->w, ys = g->o * g->h * g->w * (kind ? 4 : 1);
	const size_t as = pass == STARNN_CONV2D_FWD ? xs : ys, os = pass == STARNN_CONV2D_FWD ? ys : xs;
	*per_sample = g->n > 1 && (lda > as || ldout > os);
	if (!*per_sample)
		return conv_key(kind, pass, sdt, g, lda, ldb, bias, beta, ldout);
	struct starnn_conv2d_geom g1 = *g;
	g1.n = 1;
	return conv_key(kind, pass, sdt, &g1, as, ldb, bias, beta, os);
}

static int conv_run_packed(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g, const void *a,
                           size_t lda, const void *b, size_t ldb, const struct packed_ref *pk, const float *bias,
                           float beta, void *out, size_t ldout)
{
	if (kind == 0 && g->n && g->o && g->h && g->w && starnn_conv2d_1x1_gemm(g, sdt)) {
		if (pass == STARNN_CONV2D_FWD)
			starnn_conv2d_1x1_nchw_fwd_cpu(g, a, lda, b, ldb, bias, out, ldout);
		else if (pass == STARNN_CONV2D_BWD_DATA)
			starnn_conv2d_1x1_nchw_bwd_data_cpu(g, a, lda, b, ldb, beta, out, ldout);
		else
			starnn_conv2d_1x1_nchw_bwd_weight_cpu(g, a, lda, b, ldb, beta, out, ldout, (float *)bias);
		return 0;
	}
	if (kind == 0 && pass == STARNN_CONV2D_FWD && g->n && g->o && g->h && g->w && g->c &&
	    starnn_conv2d_nchw_in_direct(g, sdt)) {
		float *work = thread_buf(2, starnn_conv2d_fwd_nchw_direct_workspace(g) * sizeof *work);
		if (!work)
			return starnn_error(STARNN_ENOMEM, "conv2d: cannot allocate the direct forward's workspace (c %zu o %zu)",
			                    g->c, g->o);
		starnn_conv2d_fwd_nchw_direct_cpu(g, a, lda, b, ldb, bias, out, ldout, work);
		return 0;
	}
	if (sdt != STARNN_FP32 && sdt != STARNN_BF16)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): %s: only fp32 and bf16 are supported",
		                    starnn_dtype_name(sdt));
	if (g->n == 0 || g->c == 0 || g->o == 0 || g->h == 0 || g->w == 0)
		return 0;
	/* An activation whose samples lie further apart than one sample's
	 * size (a channel view: a concatenation half of a micro-batch part)
	 * is not the dense layout any primitive takes, so the primitive's
	 * reorder would copy all of it. A forward or backward-data pass over
	 * several samples then runs sample by sample instead, each sample
	 * described as dense (one sample's stride is never used): no copy. */
	const size_t es = sdt == STARNN_FP32 ? 4 : 2;
	if (pass != STARNN_CONV2D_BWD_WEIGHT) {
		int per_sample;
		const struct dnnl_conv key = data_pass_key(kind, pass, sdt, g, lda, ldb, bias != NULL, beta, ldout, &per_sample);
		return per_sample ? conv_exec_acc(&key, a, b, pk, bias, beta, out, NULL, 0, g->n, lda * es, ldout * es)
		                  : conv_exec(&key, a, b, pk, bias, beta, out);
	}
	const size_t xs = g->c * g->h * g->w, ys = g->o * g->h * g->w * (kind ? 4 : 1);
	/* The same for a weight gradient whose dw is in the primitive's own
	 * layout (g->dwb: dense, no output reorder): the first sample into dw
	 * and db (with beta), each other one into this thread's scratch, added
	 * to them (starnn's sums, not oneDNN's accumulating reorders). */
	if (g->dwb && g->n > 1 && (lda > xs || ldb > ys)) {
		struct starnn_conv2d_geom g1 = *g;
		g1.n = 1;
		const struct dnnl_conv key0 = conv_key(kind, pass, sdt, &g1, xs, ys, bias != NULL, beta, ldout),
		                       key = conv_key(kind, pass, sdt, &g1, xs, ys, bias != NULL, 0.0f, ldout);
		const size_t nw = g->o * g->c * g->k * g->k;
		float *tmp = thread_buf(7, (nw + g->o) * sizeof *tmp), *dw = out, *db = (float *)bias;
		if (!tmp)
			return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate a weight gradient's sample sum");
		STARNN_CHECK(conv_exec(&key0, a, b, NULL, bias, beta, out));
		for (size_t k = 1; k < g->n; k++) {
			STARNN_CHECK(conv_exec(&key, (const char *)a + k * lda * es, (const char *)b + k * ldb * es, NULL,
			                       db ? tmp + nw : NULL, 0.0f, tmp));
			starnn_axpy_cpu(1, nw, 1.0f, tmp, nw, dw, nw);
			if (db)
				starnn_axpy_cpu(1, g->o, 1.0f, tmp + nw, g->o, db, g->o);
		}
		return 0;
	}
	struct dnnl_conv key = conv_key(kind, pass, sdt, g, lda, ldb, bias != NULL, beta, ldout);
	return conv_exec(&key, a, b, pk, bias, beta, out);
}

/* Runs the thread's cached convolution for key (made on first use) on a,
 * b into out, as conv_run_packed. */
static int conv_exec(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                     const float *bias, float beta, void *out)
{
	return conv_exec_acc(key, a, b, pk, bias, beta, out, NULL, 0, 1, 0, 0);
}

/* As conv_exec, reps times: a and out advanced by astep and ostep bytes
 * each time (the samples of conv_run_packed; forward and backward-data
 * passes only, no bias gradient), the weights reordered once. With acc,
 * the primitive's output, in its own layout (the entry's internal output,
 * which it must have), is not reordered into out but copied into acc
 * (acc_first, the first time) or added to it (wgrad_tiled's sum, then
 * reordered once by conv_reorder_out). */
static int conv_exec_acc(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                         const float *bias, float beta, void *out, float *acc, int acc_first, size_t reps,
                         size_t astep, size_t ostep)
{
	char shape[160];
	const int pass = key->pass;
	struct dnnl_thread *t = thread_state();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv *e;
	STARNN_CHECK(conv_entry(t, key, &e));
	int rc = 0;
	void *pw = !pk ? NULL : pk->sliced ? sliced_weights(e, pk) : packed_weights(e, pk->buf);
	void *ba = e->bytes_a ? thread_buf(0, e->bytes_a) : NULL,
	     *bb = pw ? pw : e->bytes_b ? thread_buf(1, e->bytes_b) : NULL,
	     *bo = e->bytes_out ? thread_buf(2, e->bytes_out) : NULL,
	     *bs = e->bytes_scratch ? thread_buf(3, e->bytes_scratch) : NULL;
	if ((e->bytes_a && !ba) || (e->bytes_b && !bb) || (e->bytes_out && !bo) || (e->bytes_scratch && !bs))
		return starnn_error(STARNN_ENOMEM,
		                    "conv2d (oneDNN): cannot allocate %zu + %zu + %zu + %zu bytes of buffers (%s)", e->bytes_a,
		                    e->bytes_b, e->bytes_out, e->bytes_scratch, describe(shape, sizeof shape, e));
	for (int i = 0; i < 4; i++)
		if (e->scratch[i])
			DNNL_TRY(dnnl_memory_set_data_handle(e->scratch[i], bs), "set handle");
	DNNL_TRY(dnnl_memory_set_data_handle(e->ub, (void *)b), "set handle");
	if (e->ia)
		DNNL_TRY(dnnl_memory_set_data_handle(e->ia, ba), "set handle");
	if (e->ib)
		DNNL_TRY(dnnl_memory_set_data_handle(e->ib, bb), "set handle");
	if (e->iout)
		DNNL_TRY(dnnl_memory_set_data_handle(e->iout, bo), "set handle");
	/* the bias gradient of an accumulating pass goes to a temporary first
	 * (db = beta * db + new, added below) */
	float *dbias = NULL;
	if (e->bias_mem && pass == STARNN_CONV2D_BWD_WEIGHT && beta != 0.0f) {
		dbias = thread_buf(4, e->o * sizeof *dbias);
		if (!dbias)
			return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate the bias gradient (%s)",
			                    describe(shape, sizeof shape, e));
	}
	if (e->bias_mem)
		DNNL_TRY(dnnl_memory_set_data_handle(e->bias_mem, dbias ? dbias : (void *)bias), "set handle");
	/* the primitives run one after the other on this thread (the CPU
	 * stream executes synchronously), so they share one scratchpad buffer */
	if (e->re_b && !pw) {
		dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->ub}, {DNNL_ARG_TO, e->ib}, {DNNL_ARG_SCRATCHPAD, e->scratch[2]}};
		DNNL_TRY(dnnl_primitive_execute(e->re_b, t->stream, e->scratch[2] ? 3 : 2, args), "input reorder");
	}
	for (size_t rep = 0; rep < reps; rep++) {
		DNNL_TRY(dnnl_memory_set_data_handle(e->ua, (void *)((const char *)a + rep * astep)), "set handle");
		if (e->uout)
			DNNL_TRY(dnnl_memory_set_data_handle(e->uout, (char *)out + rep * ostep), "set handle");
		if (e->re_a) {
			dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->ua}, {DNNL_ARG_TO, e->ia}, {DNNL_ARG_SCRATCHPAD, e->scratch[1]}};
			DNNL_TRY(dnnl_primitive_execute(e->re_a, t->stream, e->scratch[1] ? 3 : 2, args), "input reorder");
		}
		dnnl_exec_arg_t args[5];
		int nargs = 0;
		args[nargs++] = (dnnl_exec_arg_t){e->arg_a, e->ia ? e->ia : e->ua};
		args[nargs++] = (dnnl_exec_arg_t){e->arg_b, e->ib ? e->ib : e->ub};
		args[nargs++] = (dnnl_exec_arg_t){e->arg_out, e->iout ? e->iout : e->uout};
		if (e->bias_mem)
			args[nargs++] = (dnnl_exec_arg_t){pass == STARNN_CONV2D_BWD_WEIGHT ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS,
			                                  e->bias_mem};
		if (e->scratch[0])
			args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch[0]};
		DNNL_TRY(dnnl_primitive_execute(e->conv, t->stream, nargs, args), "convolution");
		if (acc) {
			DNNL_TRY(dnnl_stream_wait(t->stream), "stream wait");
			const float *r = bo;
			const size_t nf = e->bytes_out / sizeof *acc;
			if (acc_first && rep == 0)
				memcpy(acc, r, nf * sizeof *acc);
			else
				starnn_axpy_cpu(1, nf, 1.0f, r, nf, acc, nf);
		} else if (e->re_out) {
			dnnl_exec_arg_t ra[] = {{DNNL_ARG_FROM, e->iout}, {DNNL_ARG_TO, e->uout}, {DNNL_ARG_SCRATCHPAD, e->scratch[3]}};
			DNNL_TRY(dnnl_primitive_execute(e->re_out, t->stream, e->scratch[3] ? 3 : 2, ra), "output reorder");
		}
		DNNL_TRY(dnnl_stream_wait(t->stream), "stream wait");
		if (e->zb)
			up_spread(e, bo, bias, (char *)out + rep * ostep, e->ldout);
	}
	if (dbias) {
		float *db = (float *)bias;
		for (size_t i = 0; i < e->o; i++)
			db[i] = beta * db[i] + dbias[i];
	}
	return 0;
fail:
	return rc;
}

enum starnn_conv2d_wgrad starnn_conv2d_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	/* auto's gemm layers (both dtypes): wide, on few pixels */
	const int wide = g->c >= STARNN_CONV2D_WGRAD_MIN_C && g->o >= STARNN_CONV2D_WGRAD_MIN_O &&
	                 g->h * g->w <= STARNN_CONV2D_WGRAD_GEMM_MAX_HW;
	if (dt == STARNN_BF16 && g->k >= 3 && g->k % 2 && starnn_conv2d_dnnl_bf16()) {
		const int mode = wgrad_mode();
		if (mode == STARNN_CONV2D_WGRAD_GEMM)
			return STARNN_CONV2D_WGRAD_GEMM;
		return mode == STARNN_CONV2D_WGRAD_AUTO && wide &&
		               starnn_conv2d_dnnl_block(STARNN_BF16) == STARNN_CONV2D_NHWC
		           ? STARNN_CONV2D_WGRAD_GEMM
		           : STARNN_CONV2D_WGRAD_DNNL;
	}
	if (dt != STARNN_FP32 || g->k < 2)
		return STARNN_CONV2D_WGRAD_DNNL;
	const int direct = starnn_conv2d_wgrad_direct_ok(g);
	switch (wgrad_mode()) {
	case STARNN_CONV2D_WGRAD_GEMM:
		return STARNN_CONV2D_WGRAD_GEMM;
	case STARNN_CONV2D_WGRAD_DIRECT:
		return direct ? STARNN_CONV2D_WGRAD_DIRECT : STARNN_CONV2D_WGRAD_DNNL;
	case STARNN_CONV2D_WGRAD_DNNL:
		return STARNN_CONV2D_WGRAD_DNNL;
	default: {
		const int blk = starnn_conv2d_dnnl_block(STARNN_FP32);
		if (blk != 8 && blk != 16)
			return STARNN_CONV2D_WGRAD_DNNL;
		if (wide)
			return STARNN_CONV2D_WGRAD_GEMM;
		if (blk == 8)
			return direct ? STARNN_CONV2D_WGRAD_DIRECT : STARNN_CONV2D_WGRAD_DNNL;
		/* AVX-512: oneDNN's 16-lane kernel, but where x is NCHW (input
		 * channels not a multiple of 16: a UNet's first layer) */
		return direct && g->xb <= 1 && g->c % 16 ? STARNN_CONV2D_WGRAD_DIRECT : STARNN_CONV2D_WGRAD_DNNL;
	}
	}
}

/* The error of the weight-gradient routes when their scratch cannot be had. */
static int wgrad_nomem(const struct starnn_conv2d_geom *g)
{
	return starnn_error(STARNN_ENOMEM, "conv2d: cannot allocate the weight gradient's buffers (n %zu c %zu o %zu %zux%zu)",
	                    g->n, g->c, g->o, g->h, g->w);
}

/* An activation [n, c, hw] in blocks of cb channels (runtime/core/tensor.h;
 * cb <= 1: NCHW), samples ld apart, copied to dense NCHW. */
static void to_nchw(const float *s, size_t n, size_t c, size_t hw, size_t ld, size_t cb, float *d)
{
	for (size_t r = 0; r < n; r++)
		for (size_t k0 = 0; k0 < c; k0 += cb) {
			const float *sp = s + r * ld + k0 * hw;
			float *dp = d + (r * c + k0) * hw;
			for (size_t p = 0; p < hw; p++)
				for (size_t l = 0; l < cb; l++)
					dp[l * hw + p] = sp[p * cb + l];
		}
}

/* The gemm route of the fp32 weight gradient (codelets/conv2d.h): blocked
 * x and dy to NCHW in the thread's scratch (NCHW ones are read in place),
 * then the im2col kernels, dw and db accumulated with beta as oneDNN's
 * route does. */
static int wgrad_gemm(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy, size_t ldy,
                      float beta, float *dw, size_t ldw, float *db)
{
	const size_t hw = g->h * g->w, xb = g->xb > 1 ? g->xb : 1, yb = g->yb > 1 ? g->yb : 1;
	struct starnn_conv2d_geom p = *g;
	p.xb = p.yb = 1;
	size_t nwork = starnn_conv2d_cpu_workspace(&p, STARNN_CONV2D_BWD_WEIGHT);
	float *work = thread_buf(2, (nwork ? nwork : 1) * sizeof *work);
	float *xs = xb > 1 ? thread_buf(0, g->n * g->c * hw * sizeof *xs) : NULL;
	float *dys = yb > 1 ? thread_buf(1, g->n * g->o * hw * sizeof *dys) : NULL;
	if (!work || (xb > 1 && !xs) || (yb > 1 && !dys))
		return wgrad_nomem(g);
	if (xs) {
		to_nchw(x, g->n, g->c, hw, ldx, xb, xs);
		x = xs, ldx = g->c * hw;
	}
	if (dys) {
		to_nchw(dy, g->n, g->o, hw, ldy, yb, dys);
		dy = dys, ldy = g->o * hw;
	}
	starnn_conv2d_bwd_weight_cpu(&p, x, ldx, dy, ldy, beta, dw, ldw, work);
	if (db)
		starnn_conv2d_bwd_bias_cpu(g->n, g->o, hw, dy, ldy, beta, db);
	return 0;
}

/* The direct route (codelets/conv2d.h): x and dy read in place. */
static int wgrad_direct(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy, size_t ldy,
                        float beta, float *dw, size_t ldw, float *db)
{
	float *work = thread_buf(2, starnn_conv2d_wgrad_direct_workspace(g) * sizeof *work);
	if (!work)
		return wgrad_nomem(g);
	starnn_conv2d_bwd_weight_direct_cpu(g, x, ldx, dy, ldy, beta, dw, ldw, db, work);
	return 0;
}

/* The matmul of the bf16 gemm route for (m, n, k, ldc, beta) into *out:
 * thread t's cached one, else a new one; an error when oneDNN has no bf16
 * matmul here. */
static int mm_entry(struct dnnl_thread *t, size_t m, size_t n, size_t k, size_t ldc, float beta,
                    struct dnnl_mm **out)
{
	for (int i = 0; i < MM_SLOTS; i++) {
		struct dnnl_mm *e = t->mm[i];
		if (e && e->m == m && e->n == n && e->k == k && e->ldc == ldc && e->beta == beta)
			return *out = e, 0;
	}
	struct dnnl_mm *e = calloc(1, sizeof *e);
	if (!e)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): out of memory");
	e->m = m, e->n = n, e->k = k, e->ldc = ldc, e->beta = beta;
	dnnl_memory_desc_t ad, bd, cd;
	dnnl_dims_t adims = {(dnnl_dim_t)m, (dnnl_dim_t)k}, bdims = {(dnnl_dim_t)k, (dnnl_dim_t)n},
	            cdims = {(dnnl_dim_t)m, (dnnl_dim_t)n};
	dnnl_dims_t as = {1, (dnnl_dim_t)m}, bs = {(dnnl_dim_t)n, 1}, cs = {(dnnl_dim_t)ldc, 1};
	dnnl_matmul_desc_t md;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t st;
	if ((st = dnnl_memory_desc_init_by_strides(&ad, 2, adims, dnnl_bf16, as)) != dnnl_success ||
	    (st = dnnl_memory_desc_init_by_strides(&bd, 2, bdims, dnnl_bf16, bs)) != dnnl_success ||
	    (st = dnnl_memory_desc_init_by_strides(&cd, 2, cdims, dnnl_f32, cs)) != dnnl_success ||
	    (st = dnnl_matmul_desc_init(&md, &ad, &bd, NULL, &cd)) != dnnl_success ||
	    (st = sum_attr(&attr, &po, beta != 0.0f, beta)) != dnnl_success)
		goto done;
	if ((st = dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL)) == dnnl_success &&
	    (st = dnnl_primitive_create(&e->prim, pd)) == dnnl_success &&
	    (st = scratchpad_of(pd, &e->scratch, &e->bytes_scratch)) == dnnl_success &&
	    (st = dnnl_memory_create(&e->a, &ad, engine, DNNL_MEMORY_NONE)) == dnnl_success &&
	    (st = dnnl_memory_create(&e->b, &bd, engine, DNNL_MEMORY_NONE)) == dnnl_success)
		st = dnnl_memory_create(&e->c, &cd, engine, DNNL_MEMORY_NONE);
done:
	desc_free(pd, attr, po);
	if (st != dnnl_success) {
		mm_destroy(e);
		return starnn_error(STARNN_EINVAL,
		                    "conv2d (oneDNN): no bf16 matmul of %zu x %zu x %zu for the weight gradient: %s", m, n,
		                    k, dnnl_status2str(st));
	}
	mm_destroy(t->mm[t->mm_next]);
	t->mm[t->mm_next] = e;
	t->mm_next = (t->mm_next + 1) % MM_SLOTS;
	*out = e;
	return 0;
}

/* acc[j] += the sum of column j of a rows x cols bf16 matrix (rows ld
 * apart), in double. */
static void col_sums_bf16(const uint16_t *a, size_t rows, size_t cols, size_t ld, double *acc)
{
	for (size_t p = 0; p < rows; p++)
		for (size_t j = 0; j < cols; j++)
			acc[j] += starnn_bf16_to_float(a[p * ld + j]);
}

/* The gemm route of the bf16 weight gradient (codelets/conv2d.h): with
 * P = h w pixels, K = n P and N = c k k,
 *   dw (o x N, OIHW) = beta dw + A B,   A = dy as o x K,
 *   B (K x N) = im2col of x: B[(r, p)][i k k + t] = x[r, i, p shifted by
 *   tap t] (0 outside the image),
 * one bf16 matmul of oneDNN (AMX where present) into dw in place (beta
 * by a sum post-op): no reorder of the gradient out of oneDNN's blocked
 * layout. A is dy itself where dy is NHWC (read k-major); dy in another
 * layout is gathered first. The bias gradient sums A's columns. */
static int wgrad_gemm_bf16(const struct starnn_conv2d_geom *g, const uint16_t *x, size_t ldx, const uint16_t *dy,
                           size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	const size_t H = g->h, W = g->w, P = H * W, C = g->c, O = g->o, k = g->k, kk = k * k, r = k / 2;
	const size_t K = g->n * P, N = C * kk;
	const size_t xb = g->xb > 1 ? g->xb : 1, yb = g->yb > 1 ? g->yb : 1;
	struct dnnl_thread *th = thread_state();
	if (!th)
		return STARNN_EINVAL; /* thread_state's message */
	struct dnnl_mm *e;
	STARNN_CHECK(mm_entry(th, O, N, K, ldw, beta, &e));
	uint16_t *B = thread_buf(0, K * N * sizeof *B);
	const int in_place = yb == O && ldy == P * O;
	uint16_t *A = in_place ? (uint16_t *)dy : thread_buf(1, K * O * sizeof *A);
	void *sp = e->bytes_scratch ? thread_buf(3, e->bytes_scratch) : NULL;
	if (!B || !A || (e->bytes_scratch && !sp))
		return wgrad_nomem(g);
	/* B: one row per output pixel, its k x k window of every channel */
	for (size_t s = 0; s < g->n; s++) {
		const uint16_t *xs = x + s * ldx;
		for (size_t h = 0; h < H; h++)
			for (size_t w = 0; w < W; w++) {
				uint16_t *row = B + ((s * H + h) * W + w) * N;
				for (size_t t = 0; t < kk; t++) {
					const size_t hh = h + t / k, ww = w + t % k; /* + r: the padded image */
					if (hh < r || hh - r >= H || ww < r || ww - r >= W) {
						for (size_t i = 0; i < C; i++)
							row[i * kk + t] = 0;
						continue;
					}
					const size_t pix = (hh - r) * W + (ww - r);
					if (xb == C) {
						const uint16_t *px = xs + pix * C;
						for (size_t i = 0; i < C; i++)
							row[i * kk + t] = px[i];
					} else {
						for (size_t i = 0; i < C; i++)
							row[i * kk + t] = xs[starnn_chan_offset(i, P, xb) + pix * xb];
					}
				}
			}
	}
	/* A, k-major ([K][O]): dy's pixels with their O channels side by side */
	if (!in_place)
		for (size_t s = 0; s < g->n; s++)
			for (size_t o = 0; o < O; o++) {
				const uint16_t *src = dy + s * ldy + starnn_chan_offset(o, P, yb);
				for (size_t p = 0; p < P; p++)
					A[(s * P + p) * O + o] = src[p * yb];
			}
	dnnl_status_t st;
	if ((st = dnnl_memory_set_data_handle(e->a, A)) != dnnl_success ||
	    (st = dnnl_memory_set_data_handle(e->b, B)) != dnnl_success ||
	    (st = dnnl_memory_set_data_handle(e->c, dw)) != dnnl_success ||
	    (e->scratch && (st = dnnl_memory_set_data_handle(e->scratch, sp)) != dnnl_success))
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the weight gradient's matmul: %s", dnnl_status2str(st));
	dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c},
	                           {DNNL_ARG_SCRATCHPAD, e->scratch}};
	if ((st = dnnl_primitive_execute(e->prim, th->stream, e->scratch ? 4 : 3, args)) != dnnl_success ||
	    (st = dnnl_stream_wait(th->stream)) != dnnl_success)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the weight gradient's matmul failed: %s",
		                    dnnl_status2str(st));
	if (db) {
		double *total = thread_buf(2, O * sizeof *total);
		if (!total)
			return wgrad_nomem(g);
		memset(total, 0, O * sizeof *total);
		col_sums_bf16(A, K, O, O, total);
		for (size_t o = 0; o < O; o++)
			db[o] = (beta == 0.0f ? 0.0f : beta * db[o]) + (float)total[o];
	}
	return 0;
}

int starnn_conv2d_fwd_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                           const void *w, size_t ldw, const float *b, void *y, size_t ldy)
{
	return conv_run(0, STARNN_CONV2D_FWD, dt, g, x, ldx, w, ldw, NULL, b, 0.0f, y, ldy);
}

int starnn_conv2d_fwd_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *w, size_t ldw, const void *packed, const float *b, void *y, size_t ldy)
{
	return conv_run(0, STARNN_CONV2D_FWD, dt, g, x, ldx, w, ldw, packed, b, 0.0f, y, ldy);
}

int starnn_conv2d_fwd_dnnl_sliced(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *w, size_t ldw, const void *whole, size_t row0, const float *b, void *y,
                                  size_t ldy)
{
	const struct packed_ref r = {whole, row0, 1};
	return conv_run_packed(0, STARNN_CONV2D_FWD, dt, g, x, ldx, w, ldw, whole ? &r : NULL, b, 0.0f, y, ldy);
}

int starnn_conv2d_bwd_data_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy, size_t ldy,
                                const void *w, size_t ldw, float beta, void *dx, size_t ldx)
{
	return conv_run(0, STARNN_CONV2D_BWD_DATA, dt, g, dy, ldy, w, ldw, NULL, NULL, beta, dx, ldx);
}

int starnn_conv2d_bwd_data_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy,
                                       size_t ldy, const void *w, size_t ldw, const void *packed, float beta, void *dx,
                                       size_t ldx)
{
	return conv_run(0, STARNN_CONV2D_BWD_DATA, dt, g, dy, ldy, w, ldw, packed, NULL, beta, dx, ldx);
}

/* fp32 weight gradients of oneDNN's kernel on images higher or wider than
 * FP32_WGRAD_TILE_MIN run in tiles of at most FP32_WGRAD_TILE output
 * pixels a side (wgrad_tiled): the tiles' rows stay in cache across the
 * kernel's passes over them. tools/bench/conv --wgrad (one thread, AVX-512
 * Xeon, 4 Dec 2026, against untiled): on the 384x384 UNet's 384x384 layers
 * 1.12-1.19x (1.52x on its first, 13 -> 32 channels), on its 192x192 ones
 * 0.97-1.11x; tiles of 64 or 96 pixels of the 128x128 UNet's 128x128
 * layers (batch 2) were 0.6-0.9x, hence the threshold. Whole 384x384 fp32
 * steps: 1.02x with tiles of 96, 1.03x with 64. */
#define FP32_WGRAD_TILE ((size_t)64)
#define FP32_WGRAD_TILE_MIN ((size_t)160)

/* The largest tile side (output pixels) of a weight gradient of g in dt
 * on oneDNN's kernel, 0 for no tiles: bf16 on AMX (where oneDNN picks
 * NHWC for bf16), an image higher or wider than the AMX kernel takes; fp32
 * on a large image (FP32_WGRAD_TILE_MIN) where oneDNN's fp32 layout is
 * nChw16c (AVX-512: where the tiles were measured); a 'same' convolution
 * (odd k) in both. */
static size_t wgrad_tile_side(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	/* (the tiles are for the direct kernels: Winograd takes the whole
	 * image, 1.11x a whole 384x384 fp32 step) */
	if (g->k % 2 == 0 || starnn_conv2d_winograd(g, STARNN_CONV2D_BWD_WEIGHT, dt) || starnn_conv2d_1x1_gemm(g, dt))
		return 0; /* (nor the 1x1 layers into NCHW, whole images on the sgemm kernels) */
	if (dt == STARNN_BF16)
		return 2 * g->k < AMX_WGRAD_MAX_SIDE && (g->h > AMX_WGRAD_MAX_SIDE || g->w > AMX_WGRAD_MAX_SIDE) &&
		               starnn_conv2d_dnnl_block(STARNN_BF16) == STARNN_CONV2D_NHWC
		           ? AMX_WGRAD_MAX_SIDE - 2 * (g->k / 2)
		           : 0;
	return dt == STARNN_FP32 && 2 * g->k < FP32_WGRAD_TILE &&
	               (g->h > FP32_WGRAD_TILE_MIN || g->w > FP32_WGRAD_TILE_MIN) &&
	               starnn_conv2d_dnnl_block(STARNN_FP32) == 16
	           ? FP32_WGRAD_TILE
	           : 0;
}

/* The key of the tile of output rows r0 .. and columns c0 .. (at most th
 * x tw) of a weight gradient of g: its input is the tile and its
 * neighbours within the image, zero-padded only at the image's border. */
static struct dnnl_conv tile_key(const struct starnn_conv2d_geom *g, starnn_dtype dt, size_t r0, size_t c0, size_t th,
                                 size_t tw, size_t ldx, size_t ldy, size_t ldw, int bias, float beta)
{
	const int r = (int)(g->k / 2);
	struct starnn_conv2d_geom tg = *g;
	tg.h = th < g->h - r0 ? th : g->h - r0;
	tg.w = tw < g->w - c0 ? tw : g->w - c0;
	struct dnnl_conv key = conv_key(0, STARNN_CONV2D_BWD_WEIGHT, dt, &tg, ldx, ldy, bias, beta, ldw);
	key.fh = g->h, key.fw = g->w;
	key.wino = 0; /* (the tiles are for the direct kernel) */
	key.pad[0] = r0 ? 0 : r;
	key.pad[1] = r0 + tg.h < g->h ? 0 : r;
	key.pad[2] = c0 ? 0 : r;
	key.pad[3] = c0 + tg.w < g->w ? 0 : r;
	return key;
}

/* The layout of an entry's internal output (its primitive's). */
static dnnl_status_t internal_out_md(const struct dnnl_conv *e, dnnl_memory_desc_t *md)
{
	const dnnl_memory_desc_t *m = NULL;
	dnnl_status_t s = dnnl_memory_get_memory_desc(e->iout, &m);
	if (s == dnnl_success && !m)
		s = dnnl_invalid_arguments;
	if (s == dnnl_success)
		*md = *m;
	return s;
}

/* out (beta out + in, as key's entry's output reorder) from in, a result
 * in that entry's internal output layout. */
static int conv_reorder_out(const struct dnnl_conv *key, const float *in, void *out)
{
	struct dnnl_thread *t = thread_state();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv *e;
	STARNN_CHECK(conv_entry(t, key, &e));
	return run_reorder(t, e, e->re_out, e->scratch[3], e->iout, in, e->uout, out, "output reorder");
}

/* A weight gradient (and bias gradient) as the sum of those of tiles of
 * the output pixels, at most side a side (wgrad_tile_side): each tile's
 * input is its pixels and their neighbours, k / 2 around (in bf16 on AMX
 * at most AMX_WGRAD_MAX_SIDE a side, so that each runs on oneDNN's AMX
 * kernel, which is wrong or crashes on the whole image). The tiles are
 * windows of x and dy in their own layouts (no copies); the first adds to
 * beta * dw, the others to what it left. */
static int wgrad_tiled(const struct starnn_conv2d_geom *g, starnn_dtype dt, size_t side, const void *x, size_t ldx,
                       const void *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	const size_t r = g->k / 2;
	const size_t nr = (g->h + side - 1) / side, nc = (g->w + side - 1) / side;
	const size_t th = (g->h + nr - 1) / nr, tw = (g->w + nc - 1) / nc;
	/* a pixel's offset in a layout: NCHW one element, blocked cb (runtime/core/tensor.h) */
	const size_t xpix = g->xb > 1 ? g->xb : 1, ypix = g->yb > 1 ? g->yb : 1, es = dt == STARNN_FP32 ? 4 : 2;
	/* the tiles' dw summed in the primitives' own layout where they all
	 * have the same one (not the user's), then reordered into dw once:
	 * one reorder per weight gradient rather than one per tile */
	const struct dnnl_conv first = tile_key(g, dt, 0, 0, th, tw, ldx, ldy, ldw, db != NULL, beta);
	struct dnnl_thread *t = thread_state();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv *e0, *e;
	STARNN_CHECK(conv_entry(t, &first, &e0));
	const size_t bytes0 = e0->bytes_out;
	if (!e0->tiles_same) { /* once per entry */
		dnnl_memory_desc_t md0;
		int same = e0->re_out && e0->iout && bytes0 && !e0->zb && internal_out_md(e0, &md0) == dnnl_success;
		for (size_t r0 = 0; r0 < g->h && same; r0 += th)
			for (size_t c0 = 0; c0 < g->w && same; c0 += tw) {
				const struct dnnl_conv key = tile_key(g, dt, r0, c0, th, tw, ldx, ldy, ldw, db != NULL, 1.0f);
				dnnl_memory_desc_t md;
				STARNN_CHECK(conv_entry(t, &key, &e));
				same = e->iout && e->bytes_out == bytes0 && internal_out_md(e, &md) == dnnl_success &&
				       dnnl_memory_desc_equal(&md, &md0);
			}
		/* (the loop may have evicted e0 from the cache: look it up again) */
		STARNN_CHECK(conv_entry(t, &first, &e0));
		e0->tiles_same = same ? 1 : -1;
	}
	const int same = e0->tiles_same > 0;
	float *acc = same ? thread_buf(7, bytes0) : NULL;
	if (same && !acc)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate a tiled weight gradient's sum (%zu bytes)",
		                    bytes0);
	int k = 0;
	for (size_t r0 = 0; r0 < g->h; r0 += th)
		for (size_t c0 = 0; c0 < g->w; c0 += tw, k++) {
			const float tb = k ? 1.0f : beta;
			const struct dnnl_conv key = tile_key(g, dt, r0, c0, th, tw, ldx, ldy, ldw, db != NULL, tb);
			const size_t xr = r0 ? r0 - r : 0, xc = c0 ? c0 - r : 0;
			const char *xt = (const char *)x + (xr * g->w + xc) * xpix * es,
			           *dyt = (const char *)dy + (r0 * g->w + c0) * ypix * es;
			STARNN_CHECK(conv_exec_acc(&key, xt, dyt, NULL, db, tb, dw, acc, k == 0, 1, 0, 0));
		}
	return acc ? conv_reorder_out(&first, acc, dw) : 0;
}

int starnn_conv2d_bwd_weight_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	/* dw in a blocked layout: the primitive writes it (in any other layout
	 * through its output reorder); the other routes write OIHW only */
	if (g->dwb && (blocked_tag(0, g->dwb, g->dwib, g->dwi) == dnnl_format_tag_undef || wgrad_writes_oihw(g, dt)))
		return starnn_error(STARNN_EINVAL,
		                    "conv2d_bwd_weight (oneDNN): dw in blocks of %zu x %zu (i_inner %zu), which this pass's "
		                    "route does not write (n %zu c %zu o %zu %zux%zu k %zu)",
		                    g->dwb, g->dwib, g->dwi, g->n, g->c, g->o, g->h, g->w, g->k);
	if (g->n && g->c && g->o && g->h && g->w) {
		switch (starnn_conv2d_wgrad_route(g, dt)) {
		case STARNN_CONV2D_WGRAD_GEMM:
			return dt == STARNN_BF16 ? wgrad_gemm_bf16(g, x, ldx, dy, ldy, beta, dw, ldw, db)
			                         : wgrad_gemm(g, x, ldx, dy, ldy, beta, dw, ldw, db);
		case STARNN_CONV2D_WGRAD_DIRECT:
			return wgrad_direct(g, x, ldx, dy, ldy, beta, dw, ldw, db);
		default:
			break;
		}
		const size_t side = wgrad_tile_side(g, dt);
		if (side)
			return wgrad_tiled(g, dt, side, x, ldx, dy, ldy, beta, dw, ldw, db);
	}
	return conv_run(0, STARNN_CONV2D_BWD_WEIGHT, dt, g, x, ldx, dy, ldy, NULL, db, beta, dw, ldw);
}

static int convt_nomem(const char *pass, const struct starnn_conv2d_geom *g)
{
	return starnn_error(STARNN_ENOMEM, "convt2d: cannot allocate the %s's workspace (n %zu c %zu o %zu %zux%zu)", pass,
	                    g->n, g->c, g->o, g->h, g->w);
}

/* Transposed 2x2 / stride 2 (codelets/convt2d.h): x [n, c, h, w], w
 * PyTorch's [c, o, 2, 2] (rows ldw apart), y [n, o, 2h, 2w]. */
int starnn_convt2d_fwd_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb, starnn_dtype dt,
                            const void *x, size_t ldx, const void *wt, size_t ldw, const float *bias, void *y,
                            size_t ldy)
{
	return starnn_convt2d_fwd_dnnl_sliced(n, c, o, h, w, xb, yb, dt, x, ldx, wt, ldw, NULL, 0, bias, y, ldy);
}

int starnn_convt2d_fwd_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const void *x, size_t ldx, const void *wt, size_t ldw,
                                   const void *whole, size_t row0, const float *bias, void *y, size_t ldy)
{
	struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct packed_ref r = {whole, row0, 1};
	if (n && h && w && c && starnn_convt2d_direct(o, yb, dt)) {
		float *work = thread_buf(2, starnn_convt2d_direct_workspace(c, o) * sizeof *work);
		if (!work)
			return convt_nomem("forward", &g);
		starnn_convt2d_fwd_direct_cpu(n, c, o, h, w, xb, yb, x, ldx, wt, ldw, bias, y, ldy, work);
		return 0;
	}
	return conv_run_packed(1, STARNN_CONV2D_FWD, dt, &g, x, ldx, wt, ldw, whole ? &r : NULL, bias, 0.0f, y, ldy);
}

int starnn_convt2d_dnnl_fwd_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !n || !c || !o || !h || !w || starnn_convt2d_direct(o, yb, dt))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct dnnl_conv key = conv_key(1, STARNN_CONV2D_FWD, dt, &g, c * h * w, o * 4, 1, 0.0f, o * 4 * h * w);
	return probe_layout(&key, 0, 1, pack_layout, L, NULL); /* the 1x1 weights [4o, c]: of the transpose of [c, o, 2, 2] */
}

int starnn_convt2d_bwd_data_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                 starnn_dtype dt, const void *wt, size_t ldw, const void *dy, size_t lddy, float beta,
                                 void *dx, size_t lddx)
{
	return starnn_convt2d_bwd_data_dnnl_sliced(n, c, o, h, w, xb, yb, dt, wt, ldw, NULL, 0, dy, lddy, beta, dx, lddx);
}

int starnn_convt2d_dnnl_bwd_data_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !n || !c || !o || !h || !w || starnn_convt2d_direct(c, xb, dt))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct dnnl_conv key = conv_key(1, STARNN_CONV2D_BWD_DATA, dt, &g, o * 4 * h * w, o * 4, 0, 0.0f, c * h * w);
	return probe_layout(&key, 0, 0, deconv_layout, L, NULL);
}

int starnn_convt2d_bwd_data_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const void *wt, size_t ldw, const void *whole, size_t row0,
                                        const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct packed_ref r = {whole, row0, 1};
	if (n && h && w && starnn_convt2d_direct(c, xb, dt)) {
		float *work = thread_buf(2, starnn_convt2d_direct_workspace(c, o) * sizeof *work);
		if (!work)
			return convt_nomem("backward data", &g);
		starnn_convt2d_bwd_data_direct_cpu(n, c, o, h, w, xb, yb, wt, ldw, dy, lddy, beta, dx, lddx, work);
		return 0;
	}
	return conv_run_packed(1, STARNN_CONV2D_BWD_DATA, dt, &g, dy, lddy, wt, ldw, whole ? &r : NULL, NULL, beta, dx,
	                       lddx);
}

int starnn_convt2d_dnnl_sliced_ok(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  size_t ldin, size_t ldw, size_t ldout, float beta, const void *whole, size_t row0)
{
	if (!whole || !n || !c || !o || !h || !w ||
	    (fwd ? starnn_convt2d_direct(o, yb, STARNN_FP32) : starnn_convt2d_direct(c, xb, STARNN_FP32)))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	int per_sample;
	const struct dnnl_conv key = data_pass_key(1, fwd ? STARNN_CONV2D_FWD : STARNN_CONV2D_BWD_DATA, STARNN_FP32, &g,
	                                           ldin, ldw, fwd, fwd ? 0.0f : beta, ldout, &per_sample);
	struct dnnl_thread *t = thread_state();
	struct dnnl_conv *e;
	if (!t || conv_entry(t, &key, &e) < 0)
		return 0; /* (the pass itself reports it) */
	const struct packed_ref r = {whole, row0, 1};
	return sliced_weights(e, &r) != NULL;
}

/* oneDNN 2.6 exports this row-major GEMM without declaring it in dnnl.h
 * (codelets/cpu/gemm.c calls it too). */
extern dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
                                           float alpha, const uint16_t *A, dnnl_dim_t lda, const uint16_t *B,
                                           dnnl_dim_t ldb, float beta, float *C, dnnl_dim_t ldc);

/* Whether a transposed convolution's bf16 weight gradient runs as a GEMM
 * (convt_wgrad_gemm): wherever oneDNN has native bf16 (AMX; AVX512-BF16,
 * where oneDNN's bf16 deconvolution runs at 0.58-1.63x its fp32 one and
 * the GEMM at 1.19-1.85x, one thread, a Zen 4: tools/bench/conv
 * --convt-bf16), x and dy NCHW, NHWC or blocked (nChw16c). */
static int convt_wgrad_gemm_ok(size_t c, size_t o, size_t xb, size_t yb, starnn_dtype dt)
{
	return dt == STARNN_BF16 && (xb <= 1 || c % xb == 0) && (yb <= 1 || o % yb == 0) && starnn_conv2d_dnnl_bf16();
}

/* The sum of n bf16 values in double: 8 lanes (value i in lane i % 8),
 * then the lanes in order. */
static double row_sum_bf16(const uint16_t *v, size_t n)
{
	double lane[8] = {0};
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int q = 0; q < 8; q++)
			lane[q] += starnn_bf16_to_float(v[i + q]);
	for (; i < n; i++)
		lane[i % 8] += starnn_bf16_to_float(v[i]);
	double s = 0;
	for (int q = 0; q < 8; q++)
		s += lane[q];
	return s;
}

/* A bf16 transposed 2x2 / stride-2 convolution's weight and bias
 * gradients as one bf16 GEMM (AMX): dw[c, o, a, b] = sum over n, i, j of
 * x[n, c, i, j] dy[n, o, 2i + a, 2j + b], so with D[(n, i, j), (a, b, o)]
 * the dy values gathered (bf16, exact), Z = X^T D [c, 4o] in fp32
 * (dnnl_gemm_bf16bf16f32: one call for NHWC x and for blocked x gathered
 * into NHWC, one per image for NCHW), then dw = beta dw + Z
 * in PyTorch's [c, o, 2, 2] and db = beta db + the sums of dy per channel
 * (in double, pixel by pixel). oneDNN 2.6's own kernels for this pass are
 * slow at the UNet's shapes: its AMX deconvolution 1.1-3x slower than its
 * fp32 one (conv_create), which widens x and dy and ran at about 56
 * GFLOP/s on the 192 -> 384 up-sampling of a 384x384 UNet. NHWC is the
 * blocked layout of one block of all the channels: dy takes the same
 * gather in both. */
static int convt_wgrad_gemm(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                            const uint16_t *x, size_t ldx, const uint16_t *dy, size_t lddy, float beta, float *dw,
                            size_t lddw, float *db)
{
	const size_t hw = h * w, rows = n * hw, o4 = 4 * o, w2 = 2 * w, blk_x = xb > 1, blk_y = yb > 1;
	if (!thread_state()) /* (oneDNN's OpenMP team of this thread: one thread) */
		return STARNN_ENOMEM;
	uint16_t *d = thread_buf(5, rows * o4 * sizeof *d);
	float *z = thread_buf(6, c * o4 * sizeof *z);
	double *acc = db ? thread_buf(4, o * sizeof *acc) : NULL;
	if (!d || !z || (db && !acc))
		return starnn_error(STARNN_ENOMEM, "convt2d: cannot allocate the weight gradient's workspace (n %zu c %zu o %zu "
		                                   "%zux%zu)",
		                    n, c, o, h, w);
	if (acc)
		for (size_t k = 0; k < o; k++)
			acc[k] = 0;
	for (size_t nn = 0; nn < n; nn++) {
		const uint16_t *dyn = dy + nn * lddy;
		uint16_t *dn = d + nn * hw * o4;
		if (blk_y) {
			/* row by row of D (i), block by block of dy: pixels (2i + a,
			 * 2j) and (2i + a, 2j + 1), yb values each (2o side by side
			 * for NHWC) */
			for (size_t i = 0; i < h; i++)
				for (size_t a = 0; a < 2; a++)
					for (size_t kb = 0; kb < o; kb += yb) {
						const uint16_t *src = dyn + kb * 4 * hw + (2 * i + a) * w2 * yb;
						uint16_t *dst = dn + i * w * o4 + a * 2 * o + kb;
						for (size_t j = 0; j < w; j++, src += 2 * yb, dst += o4)
							if (yb == o) {
								memcpy(dst, src, 2 * o * sizeof *d);
							} else {
								memcpy(dst, src, yb * sizeof *d);
								memcpy(dst + o, src + yb, yb * sizeof *d);
							}
					}
			if (acc)
				for (size_t kb = 0; kb < o; kb += yb)
					col_sums_bf16(dyn + kb * 4 * hw, 4 * hw, yb, yb, acc + kb);
		} else {
			/* row by row of D (i): its w x 4o values stay in cache while
			 * the rows 2i and 2i + 1 of every channel's plane are read */
			for (size_t i = 0; i < h; i++)
				for (size_t a = 0; a < 2; a++)
					for (size_t k = 0; k < o; k++) {
						const uint16_t *src = dyn + k * 4 * hw + (2 * i + a) * w2;
						uint16_t *dst = dn + i * w * o4 + a * 2 * o + k;
						for (size_t j = 0; j < w; j++) {
							dst[j * o4] = src[2 * j];
							dst[j * o4 + o] = src[2 * j + 1];
						}
						if (acc) /* in 8 lanes of independent adds */
							acc[k] += row_sum_bf16(src, w2);
					}
		}
	}
	/* X^T: NHWC x is [pixels, c], one product over every image where the
	 * images are contiguous; blocked x is gathered into NHWC first (a
	 * product per block of xb rows would read D c / xb times); NCHW x is
	 * [c, pixels] per image */
	if (blk_x && xb < c) {
		uint16_t *xn = thread_buf(8, rows * c * sizeof *xn);
		if (!xn)
			return starnn_error(STARNN_ENOMEM, "convt2d: cannot allocate the weight gradient's workspace (n %zu c %zu "
			                                   "o %zu %zux%zu)",
			                    n, c, o, h, w);
		for (size_t nn = 0; nn < n; nn++)
			for (size_t cb = 0; cb < c; cb += xb) {
				const uint16_t *src = x + nn * ldx + cb * hw;
				uint16_t *dst = xn + nn * hw * c + cb;
				for (size_t p = 0; p < hw; p++)
					memcpy(dst + p * c, src + p * xb, xb * sizeof *xn);
			}
		x = xn, ldx = hw * c, xb = c;
	}
	const size_t parts = blk_x && (n == 1 || ldx == hw * c) ? 1 : n, kp = rows / parts;
	dnnl_status_t st = dnnl_success;
	for (size_t p = 0; p < parts && st == dnnl_success; p++)
		st = dnnl_gemm_bf16bf16f32(blk_x ? 'T' : 'N', 'N', (dnnl_dim_t)c, (dnnl_dim_t)o4, (dnnl_dim_t)kp, 1.0f,
		                           x + p * ldx, (dnnl_dim_t)(blk_x ? c : hw), d + p * kp * o4, (dnnl_dim_t)o4,
		                           p ? 1.0f : 0.0f, z, (dnnl_dim_t)o4);
	if (st != dnnl_success)
		return starnn_error(STARNN_EINVAL, "convt2d: oneDNN's bf16 GEMM failed (status %d; n %zu c %zu o %zu %zux%zu)",
		                    (int)st, n, c, o, h, w);
	for (size_t cc = 0; cc < c; cc++) {
		float *row = dw + cc * lddw;
		const float *zr = z + cc * o4;
		for (size_t k = 0; k < o; k++)
			for (size_t ab = 0; ab < 4; ab++) {
				const float v = zr[ab * o + k];
				row[k * 4 + ab] = beta != 0.0f ? beta * row[k * 4 + ab] + v : v;
			}
	}
	if (db)
		for (size_t k = 0; k < o; k++)
			db[k] = beta != 0.0f ? beta * db[k] + (float)acc[k] : (float)acc[k];
	return 0;
}

int starnn_convt2d_bwd_weight_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const void *x, size_t ldx, const void *dy, size_t lddy, float beta,
                                   float *dw, size_t lddw, float *db)
{
	const struct starnn_blocked_weights plain = {0};
	return starnn_convt2d_bwd_weight_dnnl_in(n, c, o, h, w, xb, yb, dt, x, ldx, dy, lddy, beta, dw, lddw, db, &plain);
}

/* Whether the transposed weight gradient runs on a route of its own
 * (the bf16 GEMM, the direct kernels), which writes [c, o, 2, 2] rows. */
static int convt_wgrad_own(size_t c, size_t o, size_t xb, size_t yb, starnn_dtype dt)
{
	return convt_wgrad_gemm_ok(c, o, xb, yb, dt) || starnn_convt2d_direct(o, yb, dt);
}

int starnn_convt2d_dnnl_dw_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  starnn_dtype dt, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !n || !c || !o || !h || !w || convt_wgrad_own(c, o, xb, yb, dt))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct dnnl_conv key = conv_key(1, STARNN_CONV2D_BWD_WEIGHT, dt, &g, c * h * w, o * 4 * h * w, 1, 0.0f, o * 4);
	if (probe_layout(&key, 1, 0, deconv_layout, L, NULL) && (L->pair || c % L->ob || o % L->ib))
		memset(L, 0, sizeof *L);
	return L->ob != 0;
}

int starnn_convt2d_bwd_weight_dnnl_in(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                      starnn_dtype dt, const void *x, size_t ldx, const void *dy, size_t lddy,
                                      float beta, float *dw, size_t lddw, float *db, const struct starnn_blocked_weights *L)
{
	struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, L->ob, L->i_inner, L->ib};
	if (L->ob && (blocked_tag(1, L->ob, L->ib, L->i_inner) == dnnl_format_tag_undef || convt_wgrad_own(c, o, xb, yb, dt)))
		return starnn_error(STARNN_EINVAL,
		                    "convt2d_bwd_weight (oneDNN): dw in blocks of %u x %u (i_inner %u), which this pass's "
		                    "route does not write (n %zu c %zu o %zu %zux%zu)",
		                    L->ob, L->ib, L->i_inner, n, c, o, h, w);
	if (n && c && o && h && w && convt_wgrad_gemm_ok(c, o, xb, yb, dt))
		return convt_wgrad_gemm(n, c, o, h, w, xb, yb, x, ldx, dy, lddy, beta, dw, lddw, db);
	if (n && h && w && starnn_convt2d_direct(o, yb, dt)) {
		float *work = thread_buf(2, starnn_convt2d_direct_workspace(c, o) * sizeof *work);
		if (!work)
			return convt_nomem("weight gradient", &g);
		starnn_convt2d_bwd_weight_direct_cpu(n, c, o, h, w, xb, yb, x, ldx, dy, lddy, beta, dw, lddw, db, work);
		return 0;
	}
	return conv_run(1, STARNN_CONV2D_BWD_WEIGHT, dt, &g, x, ldx, dy, lddy, NULL, db, beta, dw, lddw);
}

/* Whether oneDNN runs bf16 convolutions on this processor. oneDNN
 * implements bf16 only on ISAs that have it (AVX-512 and newer: emulated on
 * plain AVX-512, native with AVX512-BF16 / AMX); on AVX2-only processors
 * (AMD Zen 3, older Intel) every bf16 primitive is "unimplemented". Probed
 * once with the real kernels on a tiny shape (all six passes), so the
 * answer is what the library does here, not a guess from CPUID. */
static int bf16_ok;
static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;

static void bf16_probe(void)
{
	enum { N = 1, C = 2, O = 2, H = 4, W = 4 };
	uint16_t x[N * C * H * W] = {0}, w[O * C * 9] = {0}, y[N * O * H * W], wt[C * O * 4] = {0};
	uint16_t yt[N * O * 4 * H * W] = {0}, dx[N * C * H * W];
	float b[O] = {0}, dw[O * C * 9], dwt[C * O * 4];
	struct starnn_conv2d_geom g = {N, C, O, H, W, 3, 1, 1, 0, 0, 0};
	bf16_ok = conv_run(0, STARNN_CONV2D_FWD, STARNN_BF16, &g, x, C * H * W, w, C * 9, NULL, b, 0.0f, y, O * H * W) == 0 &&
	          conv_run(0, STARNN_CONV2D_BWD_DATA, STARNN_BF16, &g, y, O * H * W, w, C * 9, NULL, NULL, 0.0f, dx,
	                   C * H * W) == 0 &&
	          conv_run(0, STARNN_CONV2D_BWD_WEIGHT, STARNN_BF16, &g, x, C * H * W, y, O * H * W, NULL, NULL, 0.0f, dw,
	                   C * 9) == 0;
	g.k = 2;
	bf16_ok = bf16_ok &&
	          conv_run(1, STARNN_CONV2D_FWD, STARNN_BF16, &g, x, C * H * W, wt, O * 4, NULL, b, 0.0f, yt, O * 4 * H * W) == 0 &&
	          conv_run(1, STARNN_CONV2D_BWD_DATA, STARNN_BF16, &g, yt, O * 4 * H * W, wt, O * 4, NULL, NULL, 0.0f, dx,
	                   C * H * W) == 0 &&
	          conv_run(1, STARNN_CONV2D_BWD_WEIGHT, STARNN_BF16, &g, x, C * H * W, yt, O * 4 * H * W, NULL, NULL, 0.0f,
	                   dwt, O * 4) == 0;
}

int starnn_conv2d_dnnl_bf16(void)
{
	pthread_once(&bf16_once, bf16_probe);
	return bf16_ok;
}

/* The activation layout oneDNN's forward convolution picks for itself
 * (format "any") on a mid-sized UNet layer (64 -> 64 channels, 32x32, 3x3):
 * nChw16c on AVX-512, nChw8c on AVX2, NHWC for bf16 on AMX
 * (STARNN_CONV2D_NHWC), else 0. Probed once per dtype (fp32, bf16). */
static int block_of_dt[2] = {INT_MIN, INT_MIN};
static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;

static int block_probe(dnnl_data_type_t dt)
{
	if (thread_state() == NULL) /* creates the engine */
		return 0;
	dnnl_dims_t xd = {1, 64, 32, 32}, wd = {64, 64, 3, 3}, stride = {1, 1}, pad = {1, 1};
	dnnl_memory_desc_t ax, aw, ay, b8, b16, nhwc;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd = NULL;
	int block = 0;
	if (dnnl_memory_desc_init_by_tag(&ax, 4, xd, dt, dnnl_format_tag_any) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&aw, 4, wd, dt, dnnl_format_tag_any) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&ay, 4, xd, dt, dnnl_format_tag_any) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&b8, 4, xd, dt, dnnl_nChw8c) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&b16, 4, xd, dt, dnnl_nChw16c) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&nhwc, 4, xd, dt, dnnl_acdb) != dnnl_success ||
	    dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &ax, &aw, NULL, &ay,
	                                       stride, pad, pad) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &cd, NULL, engine, NULL) != dnnl_success)
		return 0;
	const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
	                         *dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	if (src && dst && dnnl_memory_desc_equal(src, &b16) && dnnl_memory_desc_equal(dst, &b16))
		block = 16;
	else if (src && dst && dnnl_memory_desc_equal(src, &b8) && dnnl_memory_desc_equal(dst, &b8))
		block = 8;
	else if (src && dst && dnnl_memory_desc_equal(src, &nhwc) && dnnl_memory_desc_equal(dst, &nhwc))
		block = STARNN_CONV2D_NHWC;
	dnnl_primitive_desc_destroy(pd);
	return block;
}

int starnn_conv2d_dnnl_block(starnn_dtype dt)
{
	int i = dt == STARNN_BF16 ? 1 : 0;
	/* probed once under the lock; read without it afterwards (the tasks'
	 * route choices ask at every call) */
	int b = __atomic_load_n(&block_of_dt[i], __ATOMIC_ACQUIRE);
	if (b != INT_MIN)
		return b;
	pthread_mutex_lock(&block_lock);
	if (block_of_dt[i] == INT_MIN)
		__atomic_store_n(&block_of_dt[i], block_probe(dnnl_dt(dt)), __ATOMIC_RELEASE);
	b = block_of_dt[i];
	pthread_mutex_unlock(&block_lock);
	return b;
}

#else /* no oneDNN */

int starnn_convt2d_fwd_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const void *x, size_t ldx, const void *wt, size_t ldw,
                                   const void *whole, size_t row0, const float *bias, void *y, size_t ldy)
{
	(void)whole, (void)row0;
	return starnn_convt2d_fwd_dnnl(n, c, o, h, w, xb, yb, dt, x, ldx, wt, ldw, bias, y, ldy);
}

int starnn_convt2d_dnnl_fwd_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, struct starnn_blocked_weights *L)
{
	(void)n, (void)c, (void)o, (void)h, (void)w, (void)xb, (void)yb, (void)dt;
	memset(L, 0, sizeof *L);
	return 0;
}

int starnn_convt2d_bwd_data_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const void *wt, size_t ldw, const void *whole, size_t row0,
                                        const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	(void)whole, (void)row0;
	return starnn_convt2d_bwd_data_dnnl(n, c, o, h, w, xb, yb, dt, wt, ldw, dy, lddy, beta, dx, lddx);
}

int starnn_convt2d_dnnl_bwd_data_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, struct starnn_blocked_weights *L)
{
	(void)n, (void)c, (void)o, (void)h, (void)w, (void)xb, (void)yb, (void)dt;
	memset(L, 0, sizeof *L);
	return 0;
}

int starnn_convt2d_dnnl_sliced_ok(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  size_t ldin, size_t ldw, size_t ldout, float beta, const void *whole, size_t row0)
{
	(void)fwd, (void)n, (void)c, (void)o, (void)h, (void)w, (void)xb, (void)yb, (void)ldin, (void)ldw, (void)ldout;
	(void)beta, (void)whole, (void)row0;
	return 0;
}

int starnn_conv2d_1x1_gemm(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	(void)g, (void)dt;
	return 0;
}

int starnn_conv2d_nchw_in_direct(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	(void)g, (void)dt;
	return 0;
}

int starnn_convt2d_direct(size_t ch, size_t b, starnn_dtype dt)
{
	(void)ch, (void)b, (void)dt;
	return 0;
}

int starnn_conv2d_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt)
{
	(void)g, (void)pass, (void)dt;
	return 0;
}

enum starnn_conv2d_wgrad starnn_conv2d_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	(void)g, (void)dt;
	return STARNN_CONV2D_WGRAD_DNNL;
}

int starnn_conv2d_dnnl_block(starnn_dtype dt)
{
	(void)dt;
	return 0;
}

int starnn_conv2d_dnnl_dw_layout(const struct starnn_conv2d_geom *g, starnn_dtype dt, struct starnn_blocked_weights *L)
{
	(void)g, (void)dt;
	memset(L, 0, sizeof *L);
	return 0;
}

int starnn_conv2d_dnnl_bf16(void)
{
	return 0;
}

static int no_dnnl(void)
{
	return starnn_error(STARNN_EINVAL, "conv2d: this starnn was built without oneDNN");
}

int starnn_conv2d_fwd_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                           const void *w, size_t ldw, const float *b, void *y, size_t ldy)
{
	(void)g, (void)dt, (void)x, (void)ldx, (void)w, (void)ldw, (void)b, (void)y, (void)ldy;
	return no_dnnl();
}

int starnn_conv2d_bwd_data_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy, size_t ldy,
                                const void *w, size_t ldw, float beta, void *dx, size_t ldx)
{
	(void)g, (void)dt, (void)dy, (void)ldy, (void)w, (void)ldw, (void)beta, (void)dx, (void)ldx;
	return no_dnnl();
}

int starnn_conv2d_bwd_weight_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	(void)g, (void)dt, (void)x, (void)ldx, (void)dy, (void)ldy, (void)beta, (void)dw, (void)ldw, (void)db;
	return no_dnnl();
}

int starnn_conv2d_fwd_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *w, size_t ldw, const void *packed, const float *b, void *y, size_t ldy)
{
	(void)packed;
	return starnn_conv2d_fwd_dnnl(g, dt, x, ldx, w, ldw, b, y, ldy);
}

int starnn_conv2d_bwd_data_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *dy,
                                       size_t ldy, const void *w, size_t ldw, const void *packed, float beta, void *dx,
                                       size_t ldx)
{
	(void)packed;
	return starnn_conv2d_bwd_data_dnnl(g, dt, dy, ldy, w, ldw, beta, dx, ldx);
}

size_t starnn_conv2d_dnnl_pack_bytes(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, size_t lda, size_t ldw, size_t ldout, float beta)
{
	(void)pass, (void)g, (void)dt, (void)lda, (void)ldw, (void)ldout, (void)beta;
	return 0;
}

size_t starnn_conv2d_dnnl_pack_info(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                    starnn_dtype dt, size_t lda, size_t ldw, size_t ldout, float beta,
                                    struct starnn_blocked_weights *layout)
{
	(void)pass, (void)g, (void)dt, (void)lda, (void)ldw, (void)ldout, (void)beta;
	if (layout)
		memset(layout, 0, sizeof *layout);
	return 0;
}

int starnn_conv2d_fwd_dnnl_sliced(const struct starnn_conv2d_geom *g, starnn_dtype dt, const void *x, size_t ldx,
                                  const void *w, size_t ldw, const void *whole, size_t row0, const float *b, void *y,
                                  size_t ldy)
{
	(void)whole, (void)row0;
	return starnn_conv2d_fwd_dnnl(g, dt, x, ldx, w, ldw, b, y, ldy);
}

int starnn_conv2d_dnnl_packed_ok(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, size_t lda,
                                 size_t ldw, size_t ldout, float beta, const void *packed)
{
	(void)pass, (void)g, (void)lda, (void)ldw, (void)ldout, (void)beta, (void)packed;
	return 0;
}

int starnn_conv2d_dnnl_sliced_ok(const struct starnn_conv2d_geom *g, size_t ldx, size_t ldw, size_t ldy,
                                 const void *whole, size_t row0)
{
	(void)g, (void)ldx, (void)ldw, (void)ldy, (void)whole, (void)row0;
	return 0;
}

int starnn_conv2d_dnnl_pack(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            size_t lda, const void *w, size_t ldw, size_t ldout, float beta, void *packed,
                            size_t bytes)
{
	(void)pass, (void)g, (void)dt, (void)lda, (void)w, (void)ldw, (void)ldout, (void)beta, (void)packed, (void)bytes;
	return no_dnnl();
}
int starnn_convt2d_fwd_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb, starnn_dtype dt,
                            const void *x, size_t ldx, const void *wt, size_t ldw, const float *bias, void *y,
                            size_t ldy)
{
	(void)xb, (void)yb, (void)n, (void)c, (void)o, (void)h, (void)w, (void)dt, (void)x, (void)ldx, (void)wt, (void)ldw, (void)bias;
	(void)y, (void)ldy;
	return no_dnnl();
}

int starnn_convt2d_bwd_data_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                 starnn_dtype dt, const void *wt, size_t ldw, const void *dy, size_t lddy, float beta,
                                 void *dx, size_t lddx)
{
	(void)xb, (void)yb, (void)n, (void)c, (void)o, (void)h, (void)w, (void)dt, (void)wt, (void)ldw, (void)dy, (void)lddy, (void)beta;
	(void)dx, (void)lddx;
	return no_dnnl();
}

int starnn_convt2d_bwd_weight_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const void *x, size_t ldx, const void *dy, size_t lddy, float beta,
                                   float *dw, size_t lddw, float *db)
{
	(void)xb, (void)yb, (void)n, (void)c, (void)o, (void)h, (void)w, (void)dt, (void)x, (void)ldx, (void)dy, (void)lddy, (void)beta;
	(void)dw, (void)lddw, (void)db;
	return no_dnnl();
}

int starnn_convt2d_bwd_weight_dnnl_in(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                      starnn_dtype dt, const void *x, size_t ldx, const void *dy, size_t lddy,
                                      float beta, float *dw, size_t lddw, float *db, const struct starnn_blocked_weights *L)
{
	(void)L;
	return starnn_convt2d_bwd_weight_dnnl(n, c, o, h, w, xb, yb, dt, x, ldx, dy, lddy, beta, dw, lddw, db);
}

int starnn_convt2d_dnnl_dw_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  starnn_dtype dt, struct starnn_blocked_weights *L)
{
	(void)n, (void)c, (void)o, (void)h, (void)w, (void)xb, (void)yb, (void)dt;
	memset(L, 0, sizeof *L);
	return 0;
}
#endif
