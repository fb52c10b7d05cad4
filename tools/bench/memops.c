/* bench-memops: GB/s of the memory-bound CPU kernels (convert, batchnorm,
 * maxpool, concat, relu, axpy, sgd, adam; wire compress / decompress of
 * every format beside a plain memcpy of the fp32 tensor, the baseline) at
 * the UNet's tensor shapes, for one or several builds of libstarnn side by
 * side in one process.
 *
 * Each --lib is dlopen'ed on its own (RTLD_LOCAL | RTLD_DEEPBIND), so an
 * older build (e.g. main, built in another directory) and this one run
 * interleaved on the same data: a noisy period of the shared machine hits
 * both alike. LIB@LEVEL forces an instruction-set level in that library
 * (generic, avx2, avx512; codelets/cpu/simd.h; ignored by builds without
 * it). The kernels are called directly, on one thread, without StarPU.
 *
 * 16-bit kernels: a library with the native _mp kernels is timed on them;
 * for one without (before they existed) the bench does what that build's
 * codelets did (codelets/halfwrap.h): convert the inputs to fp32 scratch,
 * run the fp32 kernel, convert the outputs back.
 *
 * Blocked layouts (runtime/core/tensor.h): the batch-norm and max-pool kernels
 * the UNet runs on oneDNN's channel blocks (starnn_bn_*_blk_cpu,
 * starnn_maxpool_*_blk_cpu) are timed on the same data read as nChw8c and
 * nChw16c (lines "KERNEL/8c", "KERNEL/16c"; --cblock picks one, 0 none);
 * builds without them show "-".
 *
 * Shapes: 128 = [4, 16, 128, 128] (UNet level 0 at 128x128, f = 16, batch
 * 4), 384 = [1, 32, 384, 384] (384x384, f = 32, batch 1). Bytes per call
 * are the tensors read plus the tensors written, once each (scratch
 * traffic of the emulated 16-bit path not counted: the same work is
 * credited with the same bytes; compress / decompress: the fp32 tensor
 * plus its wire; memcpy: the fp32 tensor read and written). Builds without
 * the wire kernels (before them) show "-" on those lines. Each line gives the median GB/s over
 * --reps calls per library and, with two or more, the ratio of the last to
 * the first.
 *
 *   bench-memops [--lib PATH[@LEVEL]]... [--shape 128|384|all]
 *                [--dtype fp32|bf16|fp16|all] [--reps N] [--only SUBSTRING]
 *                [--cblock 8|16|0|all]
 * Without --lib: this build's library (at its best level). */
#include <config.h>

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codelets/adam.h"
#include "codelets/sgd.h"
#include "codelets/wire.h"
#include "runtime/base/half.h"
#include "runtime/core/tensor.h"

#define MAX_LIBS 6
#define MAX_REPS 1000

/* ----------------------------------------------------------- the libraries */

typedef int (*convert_fn)(starnn_dtype, starnn_dtype, size_t, size_t, const void *, size_t, void *, size_t);
typedef void (*bn_stats_fn)(size_t, size_t, size_t, const float *, size_t, double *, int);
typedef void (*bn_stats_mp_fn)(starnn_dtype, size_t, size_t, size_t, const void *, size_t, double *, int);
typedef void (*bn_apply_fn)(size_t, size_t, size_t, const float *, size_t, const float *, const float *, int, float,
                            const float *, const float *, int, float *, size_t);
typedef void (*bn_apply_mp_fn)(starnn_dtype, size_t, size_t, size_t, const void *, size_t, const float *,
                               const float *, int, float, const float *, const float *, int, void *, size_t);
typedef void (*bn_reduce_fn)(size_t, size_t, size_t, const float *, size_t, const float *, size_t, const float *,
                             size_t, const float *, double *, int);
typedef void (*bn_reduce_mp_fn)(starnn_dtype, size_t, size_t, size_t, const void *, size_t, const void *, size_t,
                                const void *, size_t, const float *, double *, int);
typedef void (*bn_bapply_fn)(size_t, size_t, size_t, const float *, size_t, const float *, size_t, const float *,
                             size_t, const float *, const float *, const float *, size_t, const double *, size_t,
                             double, float, float *, size_t);
typedef void (*bn_bapply_mp_fn)(starnn_dtype, size_t, size_t, size_t, const void *, size_t, const void *, size_t,
                                const void *, size_t, const float *, const float *, const float *, size_t,
                                const double *, size_t, double, float, void *, size_t);
typedef void (*mp_fwd_fn)(size_t, size_t, size_t, size_t, const float *, size_t, float *, size_t);
typedef void (*mp_fwd_mp_fn)(starnn_dtype, size_t, size_t, size_t, size_t, const void *, size_t, void *, size_t);
typedef void (*mp_bwd_fn)(size_t, size_t, size_t, size_t, const float *, size_t, const float *, size_t, float,
                          float *, size_t);
typedef void (*mp_bwd_mp_fn)(starnn_dtype, size_t, size_t, size_t, size_t, const void *, size_t, const void *,
                             size_t, float, void *, size_t);
typedef void (*cc_fwd_fn)(size_t, size_t, const float *, size_t, size_t, const float *, size_t, float *, size_t);
typedef void (*cc_fwd_mp_fn)(starnn_dtype, size_t, size_t, const void *, size_t, size_t, const void *, size_t, void *,
                             size_t);
typedef void (*cc_bwd_fn)(size_t, size_t, size_t, const float *, size_t, float, float *, size_t, float, float *,
                          size_t);
typedef void (*cc_bwd_mp_fn)(starnn_dtype, size_t, size_t, size_t, const void *, size_t, float, void *, size_t, float,
                             void *, size_t);
typedef void (*relu_fn)(size_t, size_t, const float *, size_t, float *, size_t);
typedef void (*relu_bwd_fn)(size_t, size_t, const float *, size_t, const float *, size_t, float *, size_t);
typedef void (*relu_half_fn)(starnn_dtype, size_t, size_t, const uint16_t *, size_t, uint16_t *, size_t);
typedef void (*relu_bwd_half_fn)(starnn_dtype, size_t, size_t, const uint16_t *, size_t, const uint16_t *, size_t,
                                 uint16_t *, size_t);
typedef void (*axpy_fn)(size_t, size_t, float, const float *, size_t, float *, size_t);
typedef void (*adam_fn)(size_t, size_t, const struct starnn_adam_step *, float *, size_t, const float *, size_t,
                        float *, size_t, float *, size_t);
typedef void (*sgd_fn)(size_t, size_t, const struct starnn_sgd_step *, float *, size_t, const float *, size_t, float *,
                       size_t);
typedef void (*bn_stats_blk_fn)(starnn_dtype, size_t, size_t, size_t, size_t, const void *, size_t, double *, int);
/* the blocked batch-norm passes with the output side's block (cby) after
 * cb; builds without starnn_batchnorm_out_layout_ok have no cby (the _v1
 * types) */
typedef void (*bn_apply_blk_fn)(starnn_dtype, size_t, size_t, size_t, size_t, size_t, const void *, size_t,
                                const float *, const float *, int, float, const float *, const float *, int, void *,
                                size_t);
typedef void (*bn_reduce_blk_fn)(starnn_dtype, size_t, size_t, size_t, size_t, size_t, const void *, size_t,
                                 const void *, size_t, const void *, size_t, const float *, double *, int);
typedef void (*bn_bapply_blk_fn)(starnn_dtype, size_t, size_t, size_t, size_t, size_t, const void *, size_t,
                                 const void *, size_t, const void *, size_t, const float *, const float *,
                                 const float *, size_t, const double *, size_t, double, float, void *, size_t);
typedef void (*bn_apply_blk_v1_fn)(starnn_dtype, size_t, size_t, size_t, size_t, const void *, size_t, const float *,
                                   const float *, int, float, const float *, const float *, int, void *, size_t);
typedef void (*bn_reduce_blk_v1_fn)(starnn_dtype, size_t, size_t, size_t, size_t, const void *, size_t, const void *,
                                    size_t, const void *, size_t, const float *, double *, int);
typedef void (*bn_bapply_blk_v1_fn)(starnn_dtype, size_t, size_t, size_t, size_t, const void *, size_t, const void *,
                                    size_t, const void *, size_t, const float *, const float *, const float *, size_t,
                                    const double *, size_t, double, float, void *, size_t);
typedef void (*mp_fwd_blk_fn)(starnn_dtype, size_t, size_t, size_t, size_t, size_t, const void *, size_t, void *,
                              size_t);
typedef void (*mp_bwd_blk_fn)(starnn_dtype, size_t, size_t, size_t, size_t, size_t, const void *, size_t,
                              const void *, size_t, float, void *, size_t);
typedef int (*set_level_fn)(int);
typedef int (*compress_fn)(starnn_wire_format, size_t, size_t, const float *, size_t, uint8_t *);
typedef int (*decompress_fn)(starnn_wire_format, size_t, size_t, const uint8_t *, float *, size_t);
typedef size_t (*wire_bytes_fn)(starnn_wire_format, size_t);
typedef const char *(*wire_name_fn)(starnn_wire_format);

struct lib {
	char label[64];
	void *h;
	int level; /* -1: the library's own choice */
	set_level_fn set_level;
	convert_fn convert;
	bn_stats_fn bn_stats;
	bn_stats_mp_fn bn_stats_mp;
	bn_apply_fn bn_apply;
	bn_apply_mp_fn bn_apply_mp;
	bn_reduce_fn bn_reduce;
	bn_reduce_mp_fn bn_reduce_mp;
	bn_bapply_fn bn_bapply;
	bn_bapply_mp_fn bn_bapply_mp;
	mp_fwd_fn mp_fwd;
	mp_fwd_mp_fn mp_fwd_mp;
	mp_bwd_fn mp_bwd;
	mp_bwd_mp_fn mp_bwd_mp;
	cc_fwd_fn cc_fwd;
	cc_fwd_mp_fn cc_fwd_mp;
	cc_bwd_fn cc_bwd;
	cc_bwd_mp_fn cc_bwd_mp;
	relu_fn relu;
	relu_bwd_fn relu_bwd;
	relu_half_fn relu_half;
	relu_bwd_half_fn relu_bwd_half;
	axpy_fn axpy;
	adam_fn adam;
	sgd_fn sgd;
	compress_fn compress; /* NULL: a build before wire */
	decompress_fn decompress;
	wire_bytes_fn wire_bytes;
	wire_name_fn wire_name;
	/* blocked layouts (NULL: a build before them) */
	bn_stats_blk_fn bn_stats_blk;
	bn_apply_blk_fn bn_apply_blk;
	bn_reduce_blk_fn bn_reduce_blk;
	bn_bapply_blk_fn bn_bapply_blk;
	int bn_blk_v1; /* the blocked passes above have no cby (older builds) */
	mp_fwd_blk_fn mp_fwd_blk;
	mp_bwd_blk_fn mp_bwd_blk;
};

static struct lib libs[MAX_LIBS];
static int nlibs;

static void *sym(struct lib *l, const char *name, int required)
{
	void *p = dlsym(l->h, name);
	if (!p && required) {
		fprintf(stderr, "bench-memops: %s has no %s\n", l->label, name);
		exit(1);
	}
	return p;
}

static void open_lib(const char *arg)
{
	if (nlibs == MAX_LIBS) {
		fprintf(stderr, "bench-memops: at most %d --lib\n", MAX_LIBS);
		exit(2);
	}
	struct lib *l = &libs[nlibs];
	char path[4096];
	snprintf(path, sizeof path, "%s", arg);
	l->level = -1;
	char *at = strrchr(path, '@');
	if (at) {
		*at++ = 0;
		static const char *names[] = {"generic", "avx2", "avx512"};
		for (int k = 0; k < 3; k++)
			if (strcmp(at, names[k]) == 0)
				l->level = k;
		if (l->level < 0) {
			fprintf(stderr, "bench-memops: unknown level '%s' (generic, avx2, avx512)\n", at);
			exit(2);
		}
	}
	l->h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!l->h) {
		fprintf(stderr, "bench-memops: cannot load %s: %s\n", path, dlerror());
		exit(1);
	}
	/* label: the directory above .libs (the build), and the level */
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *s = strstr(dir, "/.libs/");
	if (s)
		*s = 0;
	char *base = strrchr(dir, '/');
	const char *b = base ? base + 1 : dir;
	if (base && strcmp(b, "_build") == 0) { /* .../NAME/_build: NAME */
		*base = 0;
		char *up = strrchr(dir, '/');
		b = up ? up + 1 : dir;
	}
	snprintf(l->label, sizeof l->label, "%.40s%s%.10s", b, at ? "@" : "", at ? at : "");
	l->set_level = (set_level_fn)sym(l, "starnn_simd_set_level", 0);
	if (l->level >= 0 && !l->set_level)
		fprintf(stderr, "bench-memops: %s has no instruction-set levels; @%s ignored\n", path, at);
	l->convert = (convert_fn)sym(l, "starnn_convert_cpu", 1);
	l->bn_stats = (bn_stats_fn)sym(l, "starnn_bn_stats_cpu", 1);
	l->bn_stats_mp = (bn_stats_mp_fn)sym(l, "starnn_bn_stats_mp_cpu", 0);
	l->bn_apply = (bn_apply_fn)sym(l, "starnn_bn_apply_cpu", 1);
	l->bn_apply_mp = (bn_apply_mp_fn)sym(l, "starnn_bn_apply_mp_cpu", 0);
	l->bn_reduce = (bn_reduce_fn)sym(l, "starnn_bn_bwd_reduce_cpu", 1);
	l->bn_reduce_mp = (bn_reduce_mp_fn)sym(l, "starnn_bn_bwd_reduce_mp_cpu", 0);
	l->bn_bapply = (bn_bapply_fn)sym(l, "starnn_bn_bwd_apply_cpu", 1);
	l->bn_bapply_mp = (bn_bapply_mp_fn)sym(l, "starnn_bn_bwd_apply_mp_cpu", 0);
	l->mp_fwd = (mp_fwd_fn)sym(l, "starnn_maxpool_fwd_cpu", 1);
	l->mp_fwd_mp = (mp_fwd_mp_fn)sym(l, "starnn_maxpool_fwd_mp_cpu", 0);
	l->mp_bwd = (mp_bwd_fn)sym(l, "starnn_maxpool_bwd_cpu", 1);
	l->mp_bwd_mp = (mp_bwd_mp_fn)sym(l, "starnn_maxpool_bwd_mp_cpu", 0);
	l->cc_fwd = (cc_fwd_fn)sym(l, "starnn_concat_fwd_cpu", 1);
	l->cc_fwd_mp = (cc_fwd_mp_fn)sym(l, "starnn_concat_fwd_mp_cpu", 0);
	l->cc_bwd = (cc_bwd_fn)sym(l, "starnn_concat_bwd_cpu", 1);
	l->cc_bwd_mp = (cc_bwd_mp_fn)sym(l, "starnn_concat_bwd_mp_cpu", 0);
	l->relu = (relu_fn)sym(l, "starnn_relu_fwd_cpu", 1);
	l->relu_bwd = (relu_bwd_fn)sym(l, "starnn_relu_bwd_cpu", 1);
	l->relu_half = (relu_half_fn)sym(l, "starnn_relu_fwd_half_cpu", 1);
	l->relu_bwd_half = (relu_bwd_half_fn)sym(l, "starnn_relu_bwd_half_cpu", 1);
	l->axpy = (axpy_fn)sym(l, "starnn_axpy_cpu", 1);
	l->adam = (adam_fn)sym(l, "starnn_adam_cpu", 1);
	l->sgd = (sgd_fn)sym(l, "starnn_sgd_cpu", 1);
	l->compress = (compress_fn)sym(l, "starnn_compress_cpu", 0);
	l->decompress = (decompress_fn)sym(l, "starnn_decompress_cpu", 0);
	l->wire_bytes = (wire_bytes_fn)sym(l, "starnn_wire_bytes", 0);
	l->wire_name = (wire_name_fn)sym(l, "starnn_wire_name", 0);
	if (!l->compress || !l->decompress || !l->wire_bytes || !l->wire_name)
		l->compress = NULL;
	l->bn_blk_v1 = !sym(l, "starnn_batchnorm_out_layout_ok", 0);
	l->bn_stats_blk = (bn_stats_blk_fn)sym(l, "starnn_bn_stats_blk_cpu", 0);
	l->bn_apply_blk = (bn_apply_blk_fn)sym(l, "starnn_bn_apply_blk_cpu", 0);
	l->bn_reduce_blk = (bn_reduce_blk_fn)sym(l, "starnn_bn_bwd_reduce_blk_cpu", 0);
	l->bn_bapply_blk = (bn_bapply_blk_fn)sym(l, "starnn_bn_bwd_apply_blk_cpu", 0);
	l->mp_fwd_blk = (mp_fwd_blk_fn)sym(l, "starnn_maxpool_fwd_blk_cpu", 0);
	l->mp_bwd_blk = (mp_bwd_blk_fn)sym(l, "starnn_maxpool_bwd_blk_cpu", 0);
	if (!l->bn_stats_blk || !l->bn_apply_blk || !l->bn_reduce_blk || !l->bn_bapply_blk || !l->mp_fwd_blk ||
	    !l->mp_bwd_blk)
		l->bn_stats_blk = NULL;
	nlibs++;
}

/* ----------------------------------------------------------------- the data */

struct shape {
	const char *name;
	size_t n, c, h, w;
};

/* Every buffer a kernel may touch, for one shape and dtype. */
struct bufs {
	starnn_dtype dt;
	size_t es, numel, n, c, h, w, inner, cols;
	void *x, *y, *dy, *dx, *x2, *cat;  /* data of dt; x2 / cat for concat */
	void *py, *pdy;                    /* pooled: numel / 4 */
	float *s[6];                       /* fp32 scratch of numel (halfwrap emulation) */
	float *mean, *invstd, *gamma, *beta;
	double *slot;
	float *w32, *g32, *m32, *v32;      /* optimizer state, numel each */
	uint8_t *wire;                     /* 4 numel + block scales: any format's wire */
	starnn_wire_format wf;             /* the format of K_COMPRESS / K_DECOMPRESS */
	size_t cb;                         /* channel block of the _BLK kernels */
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(float lo, float hi)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return lo + (hi - lo) * (float)((rng >> 40) * 0x1p-24);
}

static void *alloc(size_t bytes)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
		fprintf(stderr, "bench-memops: out of memory (%zu bytes)\n", bytes);
		exit(1);
	}
	return p;
}

/* n values uniform in [lo, hi) of dt. */
static void *random_data(starnn_dtype dt, size_t n, float lo, float hi)
{
	size_t es = dt == STARNN_FP32 ? 4 : 2;
	unsigned char *p = alloc(n * es);
	for (size_t i = 0; i < n; i++) {
		float v = uniform(lo, hi);
		if (dt == STARNN_FP32)
			memcpy(p + 4 * i, &v, 4);
		else {
			uint16_t hv = dt == STARNN_FP16 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
			memcpy(p + 2 * i, &hv, 2);
		}
	}
	return p;
}

static void bufs_make(struct bufs *b, const struct shape *s, starnn_dtype dt)
{
	memset(b, 0, sizeof *b);
	b->dt = dt;
	b->es = dt == STARNN_FP32 ? 4 : 2;
	b->n = s->n, b->c = s->c, b->h = s->h, b->w = s->w;
	b->inner = s->h * s->w;
	b->cols = s->c * b->inner;
	b->numel = s->n * b->cols;
	b->x = random_data(dt, b->numel, -2, 3);
	b->y = random_data(dt, b->numel, -1, 1);
	b->dy = random_data(dt, b->numel, -1, 1);
	b->dx = random_data(dt, b->numel, -1, 1);
	b->x2 = random_data(dt, b->numel, -1, 1);
	b->cat = random_data(dt, 2 * b->numel, -1, 1);
	b->py = random_data(dt, b->numel / 4, -1, 1);
	b->pdy = random_data(dt, b->numel / 4, -1, 1);
	for (int i = 0; i < 6; i++)
		b->s[i] = random_data(STARNN_FP32, 2 * b->numel, -1, 1);
	b->mean = random_data(STARNN_FP32, s->c, 0, 1);
	b->invstd = random_data(STARNN_FP32, s->c, 0.5f, 2);
	b->gamma = random_data(STARNN_FP32, s->c, 0.5f, 1.5f);
	b->beta = random_data(STARNN_FP32, s->c, -1, 1);
	b->slot = alloc(2 * s->c * sizeof(double));
	for (size_t k = 0; k < 2 * s->c; k++)
		b->slot[k] = uniform(-100, 100);
	b->w32 = random_data(STARNN_FP32, b->numel, -1, 1);
	b->g32 = random_data(STARNN_FP32, b->numel, -1, 1);
	b->m32 = random_data(STARNN_FP32, b->numel, -0.1f, 0.1f);
	b->v32 = random_data(STARNN_FP32, b->numel, 0, 0.1f);
	b->wire = alloc(4 * b->numel + 4 * (b->numel / STARNN_WIRE_BLOCK + 1));
}

static void bufs_free(struct bufs *b)
{
	void *p[] = {b->x, b->y, b->dy, b->dx, b->x2, b->cat, b->py, b->pdy, b->mean, b->invstd, b->gamma, b->beta,
	             b->slot, b->w32, b->g32, b->m32, b->v32, b->wire};
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		free(p[i]);
	for (int i = 0; i < 6; i++)
		free(b->s[i]);
}

/* ---------------------------------------------------------------- the kernels
 * One call of kernel k of library l on b; 16-bit without native kernels:
 * the old codelets' widen / fp32 kernel / narrow. */

enum kernel {
	K_TO32, K_FROM32, K_BN_STATS, K_BN_APPLY, K_BN_REDUCE, K_BN_BAPPLY, K_MP_FWD, K_MP_BWD, K_CC_FWD, K_CC_BWD,
	K_RELU, K_RELU_BWD, K_AXPY, K_SGD, K_ADAM, K_MEMCPY, K_COMPRESS, K_DECOMPRESS,
	/* blocked layouts, channel block b->cb */
	K_BN_STATS_BLK, K_BN_APPLY_BLK, K_BN_REDUCE_BLK, K_BN_BAPPLY_BLK, K_MP_FWD_BLK, K_MP_BWD_BLK, K_NKERNELS
};

static const char *const kernel_names[K_NKERNELS] = {
	"convert_to_fp32", "convert_from_fp32", "bn_stats", "bn_apply_relu", "bn_bwd_reduce_relu",
	"bn_bwd_apply_relu", "maxpool_fwd", "maxpool_bwd_beta1", "concat_fwd", "concat_bwd_beta1", "relu_fwd",
	"relu_bwd", "axpy", "sgd_momentum", "adam", "memcpy", "compress", "decompress", "bn_stats", "bn_apply_relu",
	"bn_bwd_reduce_relu", "bn_bwd_apply_relu", "maxpool_fwd", "maxpool_bwd_beta1"};

/* Whether kernel k is a blocked-layout one. */
static int kernel_blocked(enum kernel k)
{
	return k >= K_BN_STATS_BLK && k < K_NKERNELS;
}

/* Whether library l has kernel k (wire and blocked kernels came later). */
static int lib_has(const struct lib *l, enum kernel k)
{
	if (k == K_COMPRESS || k == K_DECOMPRESS)
		return l->compress != NULL;
	if (kernel_blocked(k))
		return l->bn_stats_blk != NULL;
	return 1;
}

/* The first library with the wire kernels, or NULL. */
static struct lib *wire_lib(void)
{
	for (int j = 0; j < nlibs; j++)
		if (libs[j].compress)
			return &libs[j];
	return NULL;
}

/* Bytes read + written by one call, per element of the [n, c, h, w] tensor. */
static double kernel_bytes(enum kernel k, const struct bufs *b)
{
	double e = (double)b->es, n = (double)b->numel;
	switch (k) {
	case K_TO32:
	case K_FROM32:
		return n * (e + 4);
	case K_BN_STATS:
	case K_BN_STATS_BLK:
		return n * e;
	case K_BN_APPLY:
	case K_BN_APPLY_BLK:
		return n * 2 * e;
	case K_BN_REDUCE:
	case K_BN_REDUCE_BLK:
		return n * 3 * e;
	case K_BN_BAPPLY:
	case K_BN_BAPPLY_BLK:
		return n * 4 * e;
	case K_MP_FWD:
	case K_MP_FWD_BLK:
		return n * 1.25 * e;
	case K_MP_BWD:
	case K_MP_BWD_BLK:
		return n * 3.25 * e; /* x, dy / 4, dx read and written */
	case K_CC_FWD:
		return n * 4 * e; /* a, b read; cat (2n) written */
	case K_CC_BWD:
		return n * 6 * e; /* dcat (2n) read; da, db read and written */
	case K_RELU:
		return n * 2 * e;
	case K_RELU_BWD:
		return n * 3 * e;
	case K_AXPY:
		return n * 12;
	case K_SGD:
		return n * 20;
	case K_ADAM:
		return n * 28;
	case K_MEMCPY:
		return n * 8;
	case K_COMPRESS:
	case K_DECOMPRESS:
		return n * 4 + (double)wire_lib()->wire_bytes(b->wf, b->numel);
	default:
		return 0;
	}
}

/* Whether kernel k is timed for b's dtype. */
static int kernel_applies(enum kernel k, starnn_dtype dt)
{
	if (k == K_TO32 || k == K_FROM32)
		return dt != STARNN_FP32;
	if (k == K_AXPY || k == K_SGD || k == K_ADAM || k == K_MEMCPY)
		return dt == STARNN_FP32;
	if (k == K_COMPRESS || k == K_DECOMPRESS)
		return dt == STARNN_FP32 && wire_lib();
	return 1;
}

static void widen(struct lib *l, struct bufs *b, const void *src, float *dst, size_t n)
{
	l->convert(b->dt, STARNN_FP32, 1, n, src, n, dst, n);
}

static void narrow(struct lib *l, struct bufs *b, const float *src, void *dst, size_t n)
{
	l->convert(STARNN_FP32, b->dt, 1, n, src, n, dst, n);
}

static void run_kernel(struct lib *l, enum kernel k, struct bufs *b)
{
	const starnn_dtype dt = b->dt;
	const int half = dt != STARNN_FP32;
	const size_t n = b->n, c = b->c, h = b->h, w = b->w, inner = b->inner, cols = b->cols, N = b->numel;
	float **s = b->s;
	if (l->set_level) /* the same library may be loaded at several levels: set it every time */
		l->set_level(l->level);
	switch (k) {
	case K_TO32:
		l->convert(dt, STARNN_FP32, n, cols, b->x, cols, s[0], cols);
		break;
	case K_FROM32:
		l->convert(STARNN_FP32, dt, n, cols, s[0], cols, b->y, cols);
		break;
	case K_BN_STATS:
		if (!half)
			l->bn_stats(n, c, inner, b->x, cols, b->slot, 0);
		else if (l->bn_stats_mp)
			l->bn_stats_mp(dt, n, c, inner, b->x, cols, b->slot, 0);
		else {
			widen(l, b, b->x, s[0], N);
			l->bn_stats(n, c, inner, s[0], cols, b->slot, 0);
		}
		break;
	case K_BN_APPLY:
		if (!half)
			l->bn_apply(n, c, inner, b->x, cols, b->mean, b->invstd, 0, 1e-5f, b->gamma, b->beta, 1, b->y, cols);
		else if (l->bn_apply_mp)
			l->bn_apply_mp(dt, n, c, inner, b->x, cols, b->mean, b->invstd, 0, 1e-5f, b->gamma, b->beta, 1, b->y,
			               cols);
		else {
			widen(l, b, b->x, s[0], N);
			l->bn_apply(n, c, inner, s[0], cols, b->mean, b->invstd, 0, 1e-5f, b->gamma, b->beta, 1, s[1], cols);
			narrow(l, b, s[1], b->y, N);
		}
		break;
	case K_BN_REDUCE:
		if (!half)
			l->bn_reduce(n, c, inner, b->x, cols, b->dy, cols, b->y, cols, b->mean, b->slot, 0);
		else if (l->bn_reduce_mp)
			l->bn_reduce_mp(dt, n, c, inner, b->x, cols, b->dy, cols, b->y, cols, b->mean, b->slot, 0);
		else {
			widen(l, b, b->x, s[0], N), widen(l, b, b->dy, s[1], N), widen(l, b, b->y, s[2], N);
			l->bn_reduce(n, c, inner, s[0], cols, s[1], cols, s[2], cols, b->mean, b->slot, 0);
		}
		break;
	case K_BN_BAPPLY:
		if (!half)
			l->bn_bapply(n, c, inner, b->x, cols, b->dy, cols, b->y, cols, b->mean, b->invstd, b->gamma, 1,
			             b->slot, 2 * c, (double)N, 0.0f, b->dx, cols);
		else if (l->bn_bapply_mp)
			l->bn_bapply_mp(dt, n, c, inner, b->x, cols, b->dy, cols, b->y, cols, b->mean, b->invstd, b->gamma, 1,
			                b->slot, 2 * c, (double)N, 0.0f, b->dx, cols);
		else {
			widen(l, b, b->x, s[0], N), widen(l, b, b->dy, s[1], N), widen(l, b, b->y, s[2], N);
			l->bn_bapply(n, c, inner, s[0], cols, s[1], cols, s[2], cols, b->mean, b->invstd, b->gamma, 1,
			             b->slot, 2 * c, (double)N, 0.0f, s[3], cols);
			narrow(l, b, s[3], b->dx, N);
		}
		break;
	case K_MP_FWD:
		if (!half)
			l->mp_fwd(n, c, h, w, b->x, cols, b->py, cols / 4);
		else if (l->mp_fwd_mp)
			l->mp_fwd_mp(dt, n, c, h, w, b->x, cols, b->py, cols / 4);
		else {
			widen(l, b, b->x, s[0], N);
			l->mp_fwd(n, c, h, w, s[0], cols, s[1], cols / 4);
			narrow(l, b, s[1], b->py, N / 4);
		}
		break;
	case K_MP_BWD:
		if (!half)
			l->mp_bwd(n, c, h, w, b->x, cols, b->pdy, cols / 4, 1.0f, b->dx, cols);
		else if (l->mp_bwd_mp)
			l->mp_bwd_mp(dt, n, c, h, w, b->x, cols, b->pdy, cols / 4, 1.0f, b->dx, cols);
		else {
			widen(l, b, b->x, s[0], N), widen(l, b, b->pdy, s[1], N / 4), widen(l, b, b->dx, s[2], N);
			l->mp_bwd(n, c, h, w, s[0], cols, s[1], cols / 4, 1.0f, s[2], cols);
			narrow(l, b, s[2], b->dx, N);
		}
		break;
	case K_CC_FWD:
		if (!half)
			l->cc_fwd(n, cols, b->x, cols, cols, b->x2, cols, b->cat, 2 * cols);
		else if (l->cc_fwd_mp)
			l->cc_fwd_mp(dt, n, cols, b->x, cols, cols, b->x2, cols, b->cat, 2 * cols);
		else {
			widen(l, b, b->x, s[0], N), widen(l, b, b->x2, s[1], N);
			l->cc_fwd(n, cols, s[0], cols, cols, s[1], cols, s[2], 2 * cols);
			narrow(l, b, s[2], b->cat, 2 * N);
		}
		break;
	case K_CC_BWD:
		if (!half)
			l->cc_bwd(n, cols, cols, b->cat, 2 * cols, 1.0f, b->dx, cols, 1.0f, b->dy, cols);
		else if (l->cc_bwd_mp)
			l->cc_bwd_mp(dt, n, cols, cols, b->cat, 2 * cols, 1.0f, b->dx, cols, 1.0f, b->dy, cols);
		else {
			widen(l, b, b->cat, s[0], 2 * N), widen(l, b, b->dx, s[1], N), widen(l, b, b->dy, s[2], N);
			l->cc_bwd(n, cols, cols, s[0], 2 * cols, 1.0f, s[1], cols, 1.0f, s[2], cols);
			narrow(l, b, s[1], b->dx, N), narrow(l, b, s[2], b->dy, N);
		}
		break;
	case K_RELU:
		if (!half)
			l->relu(n, cols, b->x, cols, b->y, cols);
		else
			l->relu_half(dt, n, cols, b->x, cols, b->y, cols);
		break;
	case K_RELU_BWD:
		if (!half)
			l->relu_bwd(n, cols, b->x, cols, b->dy, cols, b->dx, cols);
		else
			l->relu_bwd_half(dt, n, cols, b->x, cols, b->dy, cols, b->dx, cols);
		break;
	case K_AXPY:
		l->axpy(1, N, 1e-3f, b->g32, N, b->w32, N);
		break;
	case K_SGD: {
		struct starnn_sgd_step st = {{1e-4f, 0.9f, 0.0f, 0.0f, 0}, 1.0f, 0};
		l->sgd(1, N, &st, b->w32, N, b->g32, N, b->m32, N);
		break;
	}
	case K_ADAM: {
		struct starnn_adam_step st = {{1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, 0}, 1.0f, 1e-4f / 0.1f, 0.0447f, 1.0f};
		l->adam(1, N, &st, b->w32, N, b->g32, N, b->m32, N, b->v32, N);
		break;
	}
	case K_MEMCPY:
		memcpy(b->y, b->x, N * sizeof(float));
		break;
	case K_COMPRESS:
		l->compress(b->wf, n, cols, b->x, cols, b->wire);
		break;
	case K_BN_STATS_BLK:
		l->bn_stats_blk(dt, b->cb, n, c, inner, b->x, cols, b->slot, 0);
		break;
	case K_BN_APPLY_BLK:
		if (l->bn_blk_v1)
			((bn_apply_blk_v1_fn)(void (*)(void))l->bn_apply_blk)(dt, b->cb, n, c, inner, b->x, cols, b->mean,
			                                                      b->invstd, 0, 1e-5f, b->gamma, b->beta, 1,
			                                                      b->y, cols);
		else
			l->bn_apply_blk(dt, b->cb, b->cb, n, c, inner, b->x, cols, b->mean, b->invstd, 0, 1e-5f, b->gamma,
			                b->beta, 1, b->y, cols);
		break;
	case K_BN_REDUCE_BLK:
		if (l->bn_blk_v1)
			((bn_reduce_blk_v1_fn)(void (*)(void))l->bn_reduce_blk)(dt, b->cb, n, c, inner, b->x, cols, b->dy,
			                                                        cols, b->y, cols, b->mean, b->slot, 0);
		else
			l->bn_reduce_blk(dt, b->cb, b->cb, n, c, inner, b->x, cols, b->dy, cols, b->y, cols, b->mean, b->slot,
			                 0);
		break;
	case K_BN_BAPPLY_BLK:
		if (l->bn_blk_v1)
			((bn_bapply_blk_v1_fn)(void (*)(void))l->bn_bapply_blk)(dt, b->cb, n, c, inner, b->x, cols, b->dy,
			                                                        cols, b->y, cols, b->mean, b->invstd,
			                                                        b->gamma, 1, b->slot, 2 * c, (double)N,
			                                                        0.0f, b->dx, cols);
		else
			l->bn_bapply_blk(dt, b->cb, b->cb, n, c, inner, b->x, cols, b->dy, cols, b->y, cols, b->mean,
			                 b->invstd, b->gamma, 1, b->slot, 2 * c, (double)N, 0.0f, b->dx, cols);
		break;
	case K_MP_FWD_BLK:
		l->mp_fwd_blk(dt, b->cb, n, c, h, w, b->x, cols, b->py, cols / 4);
		break;
	case K_MP_BWD_BLK:
		l->mp_bwd_blk(dt, b->cb, n, c, h, w, b->x, cols, b->pdy, cols / 4, 1.0f, b->dx, cols);
		break;
	case K_DECOMPRESS:
		l->decompress(b->wf, n, cols, b->wire, b->y, cols);
		break;
	default:
		break;
	}
}

/* --------------------------------------------------------------------- main */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *dtype_name(starnn_dtype dt)
{
	return dt == STARNN_FP32 ? "fp32" : dt == STARNN_FP16 ? "fp16" : "bf16";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Times kernel k on b for every library (interleaved; median of reps
 * after a warm-up call) and prints its line. A library without the kernel
 * (wire, in older builds) shows "-". */
static void time_kernel(enum kernel k, struct bufs *b, const char *name, const char *shape, int reps)
{
	static double t[MAX_LIBS][MAX_REPS];
	for (int j = 0; j < nlibs; j++)
		if (lib_has(&libs[j], k))
			run_kernel(&libs[j], k, b); /* warm-up */
	for (int r = 0; r < reps; r++)
		for (int j = 0; j < nlibs; j++) {
			if (!lib_has(&libs[j], k))
				continue;
			double t0 = now();
			run_kernel(&libs[j], k, b);
			t[j][r] = now() - t0;
		}
	double bytes = kernel_bytes(k, b), gbs[MAX_LIBS];
	printf("%-24s %5s %5s %9.1f", name, shape, dtype_name(b->dt), bytes / 1e6);
	for (int j = 0; j < nlibs; j++) {
		if (!lib_has(&libs[j], k)) {
			gbs[j] = 0;
			printf(" %14s", "-");
			continue;
		}
		qsort(t[j], (size_t)reps, sizeof t[j][0], cmp_double);
		gbs[j] = bytes / t[j][reps / 2] / 1e9;
		printf(" %9.2f GB/s", gbs[j]);
	}
	if (nlibs > 1 && gbs[0] > 0 && gbs[nlibs - 1] > 0)
		printf(" %7.2f", gbs[nlibs - 1] / gbs[0]);
	printf("\n");
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-memops [--lib PATH[@generic|@avx2|@avx512]]... [--shape 128|384|all]\n"
	                "                    [--dtype fp32|bf16|fp16|all] [--reps N] [--only SUBSTRING]\n"
	                "                    [--cblock 8|16|0|all]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *shape_arg = "all", *dtype_arg = "all", *only = NULL, *cblock_arg = "all";
	int reps = 15;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc)
			open_lib(argv[++i]);
		else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc)
			shape_arg = argv[++i];
		else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc)
			dtype_arg = argv[++i];
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--cblock") == 0 && i + 1 < argc)
			cblock_arg = argv[++i];
		else
			usage();
	}
	if (reps < 1 || reps > MAX_REPS)
		usage();
	static const size_t cblocks_all[] = {8, 16};
	size_t cblocks[2], ncblocks = 0;
	for (size_t i = 0; i < 2; i++)
		if (!strcmp(cblock_arg, "all") || (size_t)atoi(cblock_arg) == cblocks_all[i])
			cblocks[ncblocks++] = cblocks_all[i];
	if (!ncblocks && strcmp(cblock_arg, "0") != 0)
		usage();
	if (nlibs == 0)
		open_lib(STARNN_BUILD_LIB);

	static const struct shape shapes[] = {{"128", 4, 16, 128, 128}, {"384", 1, 32, 384, 384}};
	static const starnn_dtype dtypes[] = {STARNN_FP32, STARNN_BF16, STARNN_FP16};
	printf("# bench-memops: median GB/s of %d calls (bytes read + written once per call), one thread\n", reps);
	for (int j = 0; j < nlibs; j++)
		printf("# lib %d: %s\n", j, libs[j].label);
	printf("%-24s %5s %5s %9s", "kernel", "shape", "dtype", "MB");
	for (int j = 0; j < nlibs; j++)
		printf(" %14.14s", libs[j].label);
	if (nlibs > 1)
		printf(" %7s", "ratio");
	printf("\n");
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
		if (strcmp(shape_arg, "all") != 0 && strcmp(shape_arg, shapes[si].name) != 0)
			continue;
		for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
			starnn_dtype dt = dtypes[di];
			if (strcmp(dtype_arg, "all") != 0 && strcmp(dtype_arg, dtype_name(dt)) != 0)
				continue;
			struct bufs b;
			bufs_make(&b, &shapes[si], dt);
			for (int k = 0; k < K_NKERNELS; k++) {
				if (k == K_DECOMPRESS || !kernel_applies((enum kernel)k, dt))
					continue;
				if (kernel_blocked((enum kernel)k)) {
					for (size_t bi = 0; bi < ncblocks; bi++) {
						char name[40];
						b.cb = cblocks[bi];
						snprintf(name, sizeof name, "%s/%zuc", kernel_names[k], b.cb);
						if (!only || strstr(name, only))
							time_kernel((enum kernel)k, &b, name, shapes[si].name, reps);
					}
					continue;
				}
				if (k != K_COMPRESS) {
					if (!only || strstr(kernel_names[k], only))
						time_kernel((enum kernel)k, &b, kernel_names[k], shapes[si].name, reps);
					continue;
				}
				/* each format's compress, then its decompress of that wire */
				for (int f = 0; f < STARNN_WIRE_NFORMATS; f++) {
					b.wf = (starnn_wire_format)f;
					for (int dir = 0; dir < 2; dir++) {
						char name[32];
						snprintf(name, sizeof name, "%s_%s", dir ? "decompress" : "compress",
						         wire_lib()->wire_name(b.wf));
						if (!only || strstr(name, only))
							time_kernel(dir ? K_DECOMPRESS : K_COMPRESS, &b, name, shapes[si].name, reps);
					}
				}
			}
			bufs_free(&b);
		}
	}
	return 0;
}
