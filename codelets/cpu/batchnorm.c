/* CPU kernels of batch normalisation (see codelets/kernels/batchnorm.h).
 * Data are walked plane by plane (one sample, one channel: inner contiguous
 * elements), so strided rows (ld > cols) need no special case and the inner
 * loops vectorise; each kernel is compiled per instruction set and picked
 * at run time (codelets/cpu/simd.h: zmm registers with AVX-512, the same
 * results at every level).
 *
 * Reductions sum in double over LANES = 16 independent accumulators
 * (explicit vectors: the compiler does not vectorise a double reduction it
 * may not reorder), then the plane's last (inner mod LANES) values, then
 * the lanes in order: a fixed order, the same at every instruction set; the
 * independent chains hide the latency of the additions.
 *
 * fp16 / bf16 data (the _mp kernels): a plane is taken CHUNK elements at a
 * time, widened into buffers on the stack (codelets/cpu/halfrow.h), the
 * fp32 loops run on them and 16-bit results are rounded once. CHUNK is a
 * multiple of LANES, so a reduction adds the same values in the same order
 * as over the widened plane: every result is bitwise that of the fp32
 * kernel on the widened data (rounded, for y and dx). fp32 planes are used
 * in place, in one piece.
 *
 * Length (about 1,000 lines): the forward, backward, evaluation and
 * fused-ReLU kernels in three dtypes and the blocked layouts, one kernel
 * file per operation (codelets/ops.list). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "codelets/cpu/halfrow.h"
#include "codelets/cpu/simd.h"
#include "codelets/kernels/batchnorm.h"

#ifdef STARNN_SIMD_X86
#include <immintrin.h>
#endif

#define LANES 16
#define CHUNK STARNN_HALFROW_CHUNK
_Static_assert(CHUNK % LANES == 0, "a chunk must hold whole groups of lanes");

/* Elements taken at a time from a plane of inner elements. */
STARNN_SIMD_INLINE size_t step_of(starnn_dtype dt, size_t inner)
{
	return dt == STARNN_FP32 ? inner : CHUNK;
}

STARNN_SIMD_INLINE size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Plane (r, k) of a [n, c * inner] matrix of dt, rows ld apart. */
STARNN_SIMD_INLINE const char *plane(starnn_dtype dt, const void *base, size_t r, size_t ld, size_t k, size_t inner)
{
	return (const char *)base + (r * ld + k * inner) * starnn_halfrow_es(dt);
}

/* Accumulators of a plane: lane l sums the elements i with i mod LANES == l. */
struct lanes {
	double a[LANES], b[LANES];
};

/* ---------------------------------------------------------------- bn_stats */

/* s->a[l] += v[i + l], s->b[l] += v[i + l]^2 in double over the whole groups
 * of LANES of v[0, len); returns how many elements that took. Explicit
 * vectors VD of W doubles (OF widens W floats), LANES / W of them per sum:
 * the lanes hold the same sums at every width. */
#define STATS_LOOP(VD, W, OF)                                                                                  \
	do {                                                                                                   \
		VD a_[LANES / W], b_[LANES / W];                                                               \
		memcpy(a_, s->a, sizeof a_), memcpy(b_, s->b, sizeof b_);                                      \
		for (; i + LANES <= len; i += LANES)                                                           \
			for (int q = 0; q < LANES / W; q++) {                                                  \
				VD t = OF(v + i + W * q);                                                      \
				a_[q] += t;                                                                    \
				b_[q] += t * t;                                                                \
			}                                                                                      \
		memcpy(s->a, a_, sizeof a_), memcpy(s->b, b_, sizeof b_);                                      \
	} while (0)

STARNN_SIMD_INLINE size_t stats_run(int level, size_t len, const float *v, struct lanes *s)
{
	size_t i = 0;
	if (level == STARNN_SIMD_AVX512)
		STATS_LOOP(starnn_vd8, 8, STARNN_VD8_OF);
	else if (level == STARNN_SIMD_AVX2)
		STATS_LOOP(starnn_vd4, 4, STARNN_VD4_OF);
	else
		STATS_LOOP(starnn_vd2, 2, STARNN_VD2_OF);
	return i;
}

STARNN_SIMD_INLINE void bn_stats_impl(int level, starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x,
                                      size_t ldx, double *sums, int accumulate)
{
	const size_t es = starnn_halfrow_es(dt), step = step_of(dt, inner);
	float buf[CHUNK];
	if (!accumulate)
		memset(sums, 0, 2 * c * sizeof *sums);
	for (size_t k = 0; k < c; k++) {
		double s0 = 0, s1 = 0;
		for (size_t r = 0; r < n; r++) {
			const char *p = plane(dt, x, r, ldx, k, inner);
			struct lanes acc = {{0}, {0}};
			double sa = 0, sb = 0;
			for (size_t i0 = 0; i0 < inner; i0 += step) {
				size_t len = min_sz(step, inner - i0);
				const float *v = starnn_halfrow_load(dt, p + i0 * es, len, buf);
				for (size_t i = stats_run(level, len, v, &acc); i < len; i++) { /* the plane's last values */
					double t = v[i];
					sa += t;
					sb += t * t;
				}
			}
			for (int l = 0; l < LANES; l++)
				sa += acc.a[l], sb += acc.b[l];
			s0 += sa;
			s1 += sb;
		}
		sums[k] += s0;
		sums[c + k] += s1;
	}
}
STARNN_SIMD_CLONES_LEVEL(bn_stats_impl,
                         (starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                          double *sums, int accumulate),
                         dt, n, c, inner, x, ldx, sums, accumulate)

void starnn_bn_stats_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, double *sums, int accumulate)
{
	STARNN_SIMD_CALL(bn_stats_impl, (STARNN_FP32, n, c, inner, x, ldx, sums, accumulate));
}

void starnn_bn_stats_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                            double *sums, int accumulate)
{
	STARNN_SIMD_CALL(bn_stats_impl, (dt, n, c, inner, x, ldx, sums, accumulate));
}

/* ------------------------------------------------------------- bn_finalize */

/* Totals of channel k over the slots. */
static void slot_totals(const double *slots, size_t nslots, size_t lds, size_t c, size_t k, double *s1, double *s2)
{
	double a = 0, b = 0;
	for (size_t j = 0; j < nslots; j++) {
		a += slots[j * lds + k];
		b += slots[j * lds + c + k];
	}
	*s1 = a;
	*s2 = b;
}

void starnn_bn_slot_add_cpu(size_t n, const double *slot, double *total)
{
	for (size_t i = 0; i < n; i++)
		total[i] += slot[i];
}

void starnn_bn_finalize_cpu(size_t c, size_t nslots, const double *slots, size_t lds, double count, float eps,
                            float momentum, int update_running, float *mean, float *invstd, float *running_mean,
                            float *running_var)
{
	for (size_t k = 0; k < c; k++) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		double m = s1 / count, var = s2 / count - m * m;
		if (var < 0)
			var = 0;
		mean[k] = (float)m;
		invstd[k] = (float)(1.0 / sqrt(var + (double)eps));
		if (update_running) {
			double unbiased = count > 1 ? var * count / (count - 1) : var;
			running_mean[k] = (float)((1.0 - momentum) * running_mean[k] + (double)momentum * m);
			running_var[k] = (float)((1.0 - momentum) * running_var[k] + (double)momentum * unbiased);
		}
	}
}

/* ---------------------------------------------------------------- bn_apply */

STARNN_SIMD_INLINE void apply_run(size_t len, const float *restrict x, float m, float s, float b, int relu,
                                  float *restrict y)
{
	if (relu) {
		for (size_t i = 0; i < len; i++) {
			float v = (x[i] - m) * s + b;
			y[i] = v < 0 ? 0 : v;
		}
	} else {
		for (size_t i = 0; i < len; i++)
			y[i] = (x[i] - m) * s + b;
	}
}

STARNN_SIMD_INLINE void bn_apply_impl(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                                      const float *mean, const float *stat, int var_given, float eps,
                                      const float *gamma, const float *beta, int relu, void *y, size_t ldy)
{
	const size_t es = starnn_halfrow_es(dt), step = step_of(dt, inner);
	float xbuf[CHUNK], ybuf[CHUNK];
	for (size_t k = 0; k < c; k++) {
		double istd = var_given ? 1.0 / sqrt((double)stat[k] + eps) : stat[k];
		const float m = mean[k], s = (float)(gamma[k] * istd), b = beta[k];
		for (size_t r = 0; r < n; r++) {
			const char *xp = plane(dt, x, r, ldx, k, inner);
			char *yp = (char *)plane(dt, y, r, ldy, k, inner);
			for (size_t i0 = 0; i0 < inner; i0 += step) {
				size_t len = min_sz(step, inner - i0);
				const float *xv = starnn_halfrow_load(dt, xp + i0 * es, len, xbuf);
				float *yv = starnn_halfrow_out(dt, yp + i0 * es, ybuf);
				apply_run(len, xv, m, s, b, relu, yv);
				starnn_halfrow_store(dt, yv, len, yp + i0 * es);
			}
		}
	}
}
STARNN_SIMD_CLONES(bn_apply_impl,
                   (starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx, const float *mean,
                    const float *stat, int var_given, float eps, const float *gamma, const float *beta, int relu,
                    void *y, size_t ldy),
                   (dt, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y, ldy))

void starnn_bn_apply_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *mean,
                         const float *stat, int var_given, float eps, const float *gamma, const float *beta, int relu,
                         float *y, size_t ldy)
{
	STARNN_SIMD_CALL(bn_apply_impl,
	                 (STARNN_FP32, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y, ldy));
}

void starnn_bn_apply_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                            const float *mean, const float *stat, int var_given, float eps, const float *gamma,
                            const float *beta, int relu, void *y, size_t ldy)
{
	STARNN_SIMD_CALL(bn_apply_impl, (dt, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y, ldy));
}

/* ----------------------------------------------------------- bn_bwd_reduce */

/* s->a[l] += g, s->b[l] += g * ((double)x - m) over the whole groups of
 * LANES, as stats_run, with g = dy, or dy masked by y > 0 (y not NULL).
 * The mask is a bitwise and with the compare's result: the bits of dy or
 * +0, as the scalar y > 0 ? dy : 0.0f. */
#define MASK_POS(g, y) ((__typeof__(g))((__typeof__((y) > 0))(g) & ((y) > 0)))
#define BWD_LOOP(VD, W, OF)                                                                                    \
	do {                                                                                                   \
		VD a_[LANES / W], b_[LANES / W];                                                               \
		memcpy(a_, s->a, sizeof a_), memcpy(b_, s->b, sizeof b_);                                      \
		for (; i + LANES <= len; i += LANES)                                                           \
			for (int q = 0; q < LANES / W; q++) {                                                  \
				VD g = OF(dy + i + W * q);                                                     \
				if (y) {                                                                       \
					VD yq = OF(y + i + W * q);                                             \
					g = MASK_POS(g, yq);                                                   \
				}                                                                              \
				a_[q] += g;                                                                    \
				b_[q] += g * (OF(x + i + W * q) - m);                                          \
			}                                                                                      \
		memcpy(s->a, a_, sizeof a_), memcpy(s->b, b_, sizeof b_);                                      \
	} while (0)

STARNN_SIMD_INLINE size_t bwd_run(int level, size_t len, const float *x, const float *dy, const float *y, double m,
                                  struct lanes *s)
{
	size_t i = 0;
	if (level == STARNN_SIMD_AVX512)
		BWD_LOOP(starnn_vd8, 8, STARNN_VD8_OF);
	else if (level == STARNN_SIMD_AVX2)
		BWD_LOOP(starnn_vd4, 4, STARNN_VD4_OF);
	else
		BWD_LOOP(starnn_vd2, 2, STARNN_VD2_OF);
	return i;
}

STARNN_SIMD_INLINE void bn_bwd_reduce_impl(int level, starnn_dtype dt, size_t n, size_t c, size_t inner,
                                           const void *x, size_t ldx, const void *dy, size_t lddy, const void *y,
                                           size_t ldy, const float *mean, double *sums, int accumulate)
{
	const size_t es = starnn_halfrow_es(dt), step = step_of(dt, inner);
	float xbuf[CHUNK], gbuf[CHUNK], ybuf[CHUNK];
	if (!accumulate)
		memset(sums, 0, 2 * c * sizeof *sums);
	for (size_t k = 0; k < c; k++) {
		const double m = mean[k];
		double s0 = 0, s1 = 0;
		for (size_t r = 0; r < n; r++) {
			const char *xp = plane(dt, x, r, ldx, k, inner), *gp = plane(dt, dy, r, lddy, k, inner);
			const char *yp = y ? plane(dt, y, r, ldy, k, inner) : NULL;
			/* sum g, sum g * (x - m), g = dy or dy masked by y > 0 */
			struct lanes acc = {{0}, {0}};
			double sa = 0, sb = 0;
			for (size_t i0 = 0; i0 < inner; i0 += step) {
				size_t len = min_sz(step, inner - i0);
				const float *xv = starnn_halfrow_load(dt, xp + i0 * es, len, xbuf);
				const float *gv = starnn_halfrow_load(dt, gp + i0 * es, len, gbuf);
				const float *yv = yp ? starnn_halfrow_load(dt, yp + i0 * es, len, ybuf) : NULL;
				for (size_t i = bwd_run(level, len, xv, gv, yv, m, &acc); i < len; i++) {
					double g = !yv || yv[i] > 0 ? gv[i] : 0.0f;
					sa += g;
					sb += g * ((double)xv[i] - m);
				}
			}
			for (int l = 0; l < LANES; l++)
				sa += acc.a[l], sb += acc.b[l];
			s0 += sa;
			s1 += sb;
		}
		sums[k] += s0;
		sums[c + k] += s1;
	}
}
STARNN_SIMD_CLONES_LEVEL(bn_bwd_reduce_impl,
                         (starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                          const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean, double *sums,
                          int accumulate),
                         dt, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate)

void starnn_bn_bwd_reduce_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                              size_t lddy, const float *y, size_t ldy, const float *mean, double *sums, int accumulate)
{
	STARNN_SIMD_CALL(bn_bwd_reduce_impl, (STARNN_FP32, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate));
}

void starnn_bn_bwd_reduce_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                                 const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean,
                                 double *sums, int accumulate)
{
	STARNN_SIMD_CALL(bn_bwd_reduce_impl, (dt, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate));
}

/* ----------------------------------------------------------- bn_bwd_params */

void starnn_bn_bwd_params_cpu(size_t c, size_t nslots, const double *slots, size_t lds, const float *invstd,
                              float beta, float *dgamma, float *dbeta)
{
	for (size_t k = 0; k < c; k++) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		float dg = (float)(invstd[k] * s2), db = (float)s1;
		dgamma[k] = beta == 0 ? dg : dg + beta * dgamma[k];
		dbeta[k] = beta == 0 ? db : db + beta * dbeta[k];
	}
}

/* ------------------------------------------------------------ bn_bwd_apply */

/* dp = a*g + kk - d*(x - m) (+ beta * dp), g = gp or gp masked by yp > 0. */
STARNN_SIMD_INLINE void bwd_apply_run(size_t len, const float *restrict xp, const float *restrict gp,
                                      const float *restrict yp, float a, float kk, float d, float m, float beta,
                                      float *restrict dp)
{
	if (yp && beta != 0) {
		for (size_t i = 0; i < len; i++) {
			float gi = gp[i], g = yp[i] > 0 ? gi : 0.0f; /* loaded unconditionally: a select */
			dp[i] = a * g + kk - d * (xp[i] - m) + beta * dp[i];
		}
	} else if (yp) {
		for (size_t i = 0; i < len; i++) {
			float gi = gp[i], g = yp[i] > 0 ? gi : 0.0f;
			dp[i] = a * g + kk - d * (xp[i] - m);
		}
	} else if (beta != 0) {
		for (size_t i = 0; i < len; i++)
			dp[i] = a * gp[i] + kk - d * (xp[i] - m) + beta * dp[i];
	} else {
		for (size_t i = 0; i < len; i++)
			dp[i] = a * gp[i] + kk - d * (xp[i] - m);
	}
}

STARNN_SIMD_INLINE void bn_bwd_apply_impl(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x,
                                          size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy,
                                          const float *mean, const float *invstd, const float *gamma, size_t nslots,
                                          const double *slots, size_t lds, double count, float beta, void *dx,
                                          size_t lddx)
{
	const size_t es = starnn_halfrow_es(dt), step = step_of(dt, inner);
	float xbuf[CHUNK], gbuf[CHUNK], ybuf[CHUNK], dbuf[CHUNK];
	for (size_t k = 0; k < c; k++) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		/* dx = A*g + K - D*(x - m): A = gamma*invstd, K = -A*sum(g)/M,
		 * D = A*invstd*sum(g*xhat)/M, sum(g*xhat) = invstd*s2. */
		double istd = invstd[k], ad = gamma[k] * istd;
		const float a = (float)ad, kk = (float)(-ad * s1 / count), d = (float)(ad * istd * istd * s2 / count);
		const float m = mean[k];
		for (size_t r = 0; r < n; r++) {
			const char *xp = plane(dt, x, r, ldx, k, inner), *gp = plane(dt, dy, r, lddy, k, inner);
			const char *yp = y ? plane(dt, y, r, ldy, k, inner) : NULL;
			char *dp = (char *)plane(dt, dx, r, lddx, k, inner);
			for (size_t i0 = 0; i0 < inner; i0 += step) {
				size_t len = min_sz(step, inner - i0);
				const float *xv = starnn_halfrow_load(dt, xp + i0 * es, len, xbuf);
				const float *gv = starnn_halfrow_load(dt, gp + i0 * es, len, gbuf);
				const float *yv = yp ? starnn_halfrow_load(dt, yp + i0 * es, len, ybuf) : NULL;
				float *dv = starnn_halfrow_out(dt, dp + i0 * es, dbuf);
				if (dt != STARNN_FP32 && beta != 0)
					starnn_halfrow_load(dt, dp + i0 * es, len, dbuf); /* the old dx, widened in place */
				bwd_apply_run(len, xv, gv, yv, a, kk, d, m, beta, dv);
				starnn_halfrow_store(dt, dv, len, dp + i0 * es);
			}
		}
	}
}
STARNN_SIMD_CLONES(bn_bwd_apply_impl,
                   (starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx, const void *dy,
                    size_t lddy, const void *y, size_t ldy, const float *mean, const float *invstd,
                    const float *gamma, size_t nslots, const double *slots, size_t lds, double count, float beta,
                    void *dx, size_t lddx),
                   (dt, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma, nslots, slots, lds, count, beta,
                    dx, lddx))

void starnn_bn_bwd_apply_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                             size_t lddy, const float *y, size_t ldy, const float *mean, const float *invstd,
                             const float *gamma, size_t nslots, const double *slots, size_t lds, double count,
                             float beta, float *dx, size_t lddx)
{
	STARNN_SIMD_CALL(bn_bwd_apply_impl, (STARNN_FP32, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma,
	                                     nslots, slots, lds, count, beta, dx, lddx));
}

void starnn_bn_bwd_apply_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                                const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean,
                                const float *invstd, const float *gamma, size_t nslots, const double *slots,
                                size_t lds, double count, float beta, void *dx, size_t lddx)
{
	STARNN_SIMD_CALL(bn_bwd_apply_impl, (dt, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma, nslots,
	                                     slots, lds, count, beta, dx, lddx));
}

/* ------------------------------------------------------- blocked layouts
 * Data in blocks of B channels, B a multiple of 8 up to STARNN_CBLOCK_MAX
 * (runtime/core/tensor.h: nChw8c / nChw16c, NHWC when B = c): channels k0 .. k0 + B - 1 of
 * a sample are one block plane of inner * B elements, pixel-major, channel
 * k0 + j at j mod B; such a plane starts where channel k0's plane would in
 * NCHW (plane(..., k0, inner)). The kernels walk a block plane in chunks of
 * whole pixels (at most BLK_BUF elements, widened there when 16-bit) and
 * keep B lanes, one per channel, in groups of 8: the loops over a group
 * vectorise without reordering any channel's sum. A channel's reduction runs sample by sample, pixel by pixel, in
 * double: a fixed order (deterministic, the same at every instruction
 * set), not the plain kernels' order (results agree to double rounding).
 * bf16 blocks of a multiple of 16 channels skip the chunk buffers in the
 * AVX-512 clone: the four kernels read (and write) the bf16 data straight
 * from registers, 16 lanes at a time, with the same operations per
 * element and the same per-lane chains, so the same bits. */

#define BLK_MAX STARNN_CBLOCK_MAX
/* a chunk: at most BLK_BUF elements (whole pixels) */
#define BLK_BUF (CHUNK > BLK_MAX ? CHUNK : BLK_MAX)

/* W lanes of a pixel (explicit vectors VF of W floats: GCC does not
 * vectorise the loops over lanes by itself; W = 8 with AVX2 and AVX-512, 4
 * in the generic clone, whose xmm registers would otherwise hold a split
 * 8-float vector in memory): unaligned loads and stores; (macros: a
 * function taking or returning a vector would change the ABI in the
 * generic clone). */
#define VF_AT(VF, p) __extension__({ VF v_; memcpy(&v_, (p), sizeof v_); v_; })
#define VF_PUT(p, v) __extension__({ __typeof__(v) w_ = (v); memcpy((p), &w_, sizeof w_); })
/* v where v >= 0 or NaN, else +0 (as the scalar v < 0 ? 0 : v). */
#define VF_RELU(v) __extension__({ __typeof__(v) r_ = (v); (__typeof__(r_))((__typeof__(r_ < 0))r_ & ~(r_ < 0)); })

/* The lanes' sums live in arrays, and each chunk of whole pixels is walked
 * once per G groups of 8 lanes with those groups' sums in registers (fp32
 * data is walked in chunks too, so that a chunk stays in L1 across its
 * groups). The callers pass B = 8 and 16 as constants (the loops then
 * unroll).
 *
 * The sums of groups q .. q + G - 1 (lanes q .. q + 8 G - 1, in sa, sb)
 * over the pixels of a chunk of len elements in blocks of B: 8 / W vectors
 * VD of W doubles (OF widens W floats) per group, the clone's register
 * width (wider vectors are kept in memory by GCC 12). Each lane adds its
 * values pixel by pixel in one chain, so the sums are the same at every
 * width and for every G; the G groups' chains are independent, which is
 * what lets one pass run at the adds' throughput rather than their
 * latency (one group: a chain of 4-cycle adds per pixel). */
#define BLK_STATS_GROUP(VD, W, OF, G)                                                                          \
	do {                                                                                                   \
		VD a_[G][8 / W], b_[G][8 / W];                                                                 \
		memcpy(a_, sa + q, sizeof a_), memcpy(b_, sb + q, sizeof b_);                                  \
		for (size_t i = q; i < len; i += B)                                                            \
			for (int g_ = 0; g_ < G; g_++)                                                         \
				for (int h = 0; h < 8 / W; h++) {                                              \
					VD t = OF(v + i + 8 * g_ + W * h);                                     \
					a_[g_][h] += t, b_[g_][h] += t * t;                                    \
				}                                                                              \
		memcpy(sa + q, a_, sizeof a_), memcpy(sb + q, b_, sizeof b_);                                  \
	} while (0)

/* Groups walked per pass by a clone (its accumulators in registers: 32
 * zmm with AVX-512, 16 ymm / xmm otherwise). */
#define BLK_GROUPS_AVX512 4
#define BLK_GROUPS_AVX2 2

/* Every group of a block of B lanes by GROUP (BLK_STATS_GROUP or
 * BLK_BWD_GROUP) in the clone's width, as many at a time as it keeps in
 * registers (level: the clone's, in scope). */
#define BLK_WALK(GROUP)                                                                                        \
	do {                                                                                                   \
		size_t q = 0;                                                                                  \
		if (level == STARNN_SIMD_AVX512) {                                                             \
			for (; q + 8 * BLK_GROUPS_AVX512 <= B; q += 8 * BLK_GROUPS_AVX512)                     \
				GROUP(starnn_vd8, 8, STARNN_VD8_OF, BLK_GROUPS_AVX512);                        \
			for (; q + 16 <= B; q += 16)                                                           \
				GROUP(starnn_vd8, 8, STARNN_VD8_OF, 2);                                        \
			for (; q < B; q += 8)                                                                  \
				GROUP(starnn_vd8, 8, STARNN_VD8_OF, 1);                                        \
		} else if (level == STARNN_SIMD_AVX2) {                                                        \
			for (; q + 8 * BLK_GROUPS_AVX2 <= B; q += 8 * BLK_GROUPS_AVX2)                         \
				GROUP(starnn_vd4, 4, STARNN_VD4_OF, BLK_GROUPS_AVX2);                          \
			for (; q < B; q += 8)                                                                  \
				GROUP(starnn_vd4, 4, STARNN_VD4_OF, 1);                                        \
		} else {                                                                                       \
			for (; q < B; q += 8)                                                                  \
				GROUP(starnn_vd2, 2, STARNN_VD2_OF, 1);                                        \
		}                                                                                              \
	} while (0)

/* bf16 blocks of a multiple of 16 channels in the AVX-512 clone: 16 lanes
 * at a time straight from and to the bf16 data (widened and rounded in
 * registers, as starnn_bf16_widen / starnn_bf16_narrow do), pixel by
 * pixel: no buffers, one pass. The arithmetic per element is the chunked
 * kernels' (same operations in the same order), so the bits are the same. */
STARNN_SIMD_INLINE int bf16_in_registers(int level, starnn_dtype dt, size_t B)
{
	return level == STARNN_SIMD_AVX512 && dt == STARNN_BF16 && B % 16 == 0;
}
#define BLK16_AT(p) __extension__({ starnn_vf16 f_; memcpy(&f_, (p), sizeof f_); f_; })

/* The output side (y and dy) may be in blocks of P channels, a multiple of
 * the input side's B (x and dx): a concatenation in blocks of its halves,
 * normalised into one NHWC tensor for the convolution that reads it. The
 * B lanes from channel k of sample r are then a row of B elements per
 * pixel, the rows P apart (P = B: plane()). */
STARNN_SIMD_INLINE const char *plane_of(starnn_dtype dt, const void *base, size_t r, size_t ld, size_t k,
                                        size_t inner, size_t P)
{
	return (const char *)base + (r * ld + k / P * P * inner + k % P) * starnn_halfrow_es(dt);
}

/* The len / B pixels of such rows from p as one fp32 chunk (in buf unless
 * P = B and fp32), as starnn_halfrow_load. */
STARNN_SIMD_INLINE const float *rows_load(starnn_dtype dt, const char *p, size_t len, size_t B, size_t P, float *buf)
{
	if (P == B)
		return starnn_halfrow_load(dt, p, len, buf);
	const size_t es = starnn_halfrow_es(dt);
	for (size_t i = 0; i < len; i += B) {
		const float *v = starnn_halfrow_load(dt, p + i / B * P * es, B, buf + i);
		if (v != buf + i)
			memcpy(buf + i, v, B * sizeof *buf);
	}
	return buf;
}

/* Where a chunk's results for such rows go (starnn_halfrow_out), and
 * their store. */
STARNN_SIMD_INLINE float *rows_out(starnn_dtype dt, char *p, size_t B, size_t P, float *buf)
{
	return P == B ? starnn_halfrow_out(dt, p, buf) : buf;
}

STARNN_SIMD_INLINE void rows_store(starnn_dtype dt, const float *v, size_t len, char *p, size_t B, size_t P)
{
	if (P == B) {
		starnn_halfrow_store(dt, v, len, p);
		return;
	}
	const size_t es = starnn_halfrow_es(dt);
	for (size_t i = 0; i < len; i += B) {
		if (dt == STARNN_FP32)
			memcpy(p + i / B * P * es, v + i, B * sizeof *v);
		else
			starnn_halfrow_store(dt, v + i, B, p + i / B * P * es);
	}
}
#define BLK16_RELU(v) __extension__({ starnn_vf16 r_ = (v); (starnn_vf16)((starnn_vi16)r_ & ~(r_ < 0)); })

#ifdef STARNN_SIMD_X86
/* BODY(NK) over the lanes of a block of B, in groups of NK = 4 (64 lanes)
 * while they last, then the 16, 32 or 48 left (NK a constant in each). */
#define BF16_LANE_GROUPS(BODY)                                                                                 \
	for (size_t q = 0; q < B; q += 64) {                                                                   \
		switch ((B - q) >= 64 ? 4 : (B - q) / 16) {                                                    \
		case 4:                                                                                        \
			BODY(4);                                                                               \
			break;                                                                                 \
		case 3:                                                                                        \
			BODY(3);                                                                               \
			break;                                                                                 \
		case 2:                                                                                        \
			BODY(2);                                                                               \
			break;                                                                                 \
		default:                                                                                       \
			BODY(1);                                                                               \
		}                                                                                              \
	}
/* The NK (constant) groups of 16 lanes from lane q of a bf16 block plane of
 * len elements: per lane a += v, b += v * v in double, pixel by pixel, as
 * BLK_STATS_GROUP (the same sums), straight from the bf16 data. */
#define BF16_STATS(NK)                                                                                         \
	do {                                                                                                   \
		__m512d a_[2 * NK], b_[2 * NK];                                                                \
		for (int h = 0; h < 2 * NK; h++)                                                               \
			a_[h] = _mm512_loadu_pd(sa + q + 8 * h), b_[h] = _mm512_loadu_pd(sb + q + 8 * h);       \
		for (size_t i = q; i < len; i += B)                                                            \
			for (int k = 0; k < NK; k++) {                                                         \
				__m512 vf = STARNN_BF16X16_WIDEN_PS(v + i + 16 * k);                           \
				__m512d v0 = _mm512_cvtps_pd(_mm512_castps512_ps256(vf));                     \
				__m512d v1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(vf, 1));                 \
				a_[2 * k] = _mm512_add_pd(a_[2 * k], v0);                                      \
				b_[2 * k] = _mm512_add_pd(b_[2 * k], _mm512_mul_pd(v0, v0));                   \
				a_[2 * k + 1] = _mm512_add_pd(a_[2 * k + 1], v1);                              \
				b_[2 * k + 1] = _mm512_add_pd(b_[2 * k + 1], _mm512_mul_pd(v1, v1));           \
			}                                                                                      \
		for (int h = 0; h < 2 * NK; h++)                                                               \
			_mm512_storeu_pd(sa + q + 8 * h, a_[h]), _mm512_storeu_pd(sb + q + 8 * h, b_[h]);       \
	} while (0)
/* Lanes in groups of up to 64 (their 16 sums in registers); blocks of
 * more than 64 lanes walk the plane once per group. */
STARNN_TARGET_AVX512 static void bf16_stats_avx512(size_t B, size_t len, const uint16_t *v, double *sa, double *sb)
{
	BF16_LANE_GROUPS(BF16_STATS);
}
#endif

STARNN_SIMD_INLINE void bn_stats_blk_any(int level, starnn_dtype dt, size_t B, size_t n, size_t c, size_t inner,
                                         const void *x, size_t ldx, double *sums, int accumulate)
{
	const size_t es = starnn_halfrow_es(dt), step = BLK_BUF / B * B, len_all = inner * B;
	float buf[BLK_BUF];
	double sa[BLK_MAX], sb[BLK_MAX];
	if (!accumulate)
		memset(sums, 0, 2 * c * sizeof *sums);
	for (size_t k0 = 0; k0 < c; k0 += B) {
		for (size_t j = 0; j < B; j++)
			sa[j] = 0, sb[j] = 0;
		for (size_t r = 0; r < n; r++) {
			const char *p = plane(dt, x, r, ldx, k0, inner);
#ifdef STARNN_SIMD_X86
			if (bf16_in_registers(level, dt, B)) {
				bf16_stats_avx512(B, len_all, (const uint16_t *)(const void *)p, sa, sb);
				continue;
			}
#endif
			for (size_t i0 = 0; i0 < len_all; i0 += step) {
				size_t len = min_sz(step, len_all - i0);
				const float *v = starnn_halfrow_load(dt, p + i0 * es, len, buf);
				BLK_WALK(BLK_STATS_GROUP);
			}
		}
		for (size_t j = 0; j < B; j++) {
			sums[k0 + j] += sa[j];
			sums[c + k0 + j] += sb[j];
		}
	}
}

STARNN_SIMD_INLINE void bn_stats_blk_impl(int level, starnn_dtype dt, size_t cb, size_t n, size_t c, size_t inner,
                                          const void *x, size_t ldx, double *sums, int accumulate)
{
	if (cb == 16)
		bn_stats_blk_any(level, dt, 16, n, c, inner, x, ldx, sums, accumulate);
	else if (cb == 8)
		bn_stats_blk_any(level, dt, 8, n, c, inner, x, ldx, sums, accumulate);
	else
		bn_stats_blk_any(level, dt, cb, n, c, inner, x, ldx, sums, accumulate);
}
STARNN_SIMD_CLONES_LEVEL(bn_stats_blk_impl,
                         (starnn_dtype dt, size_t cb, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                          double *sums, int accumulate),
                         dt, cb, n, c, inner, x, ldx, sums, accumulate)

void starnn_bn_stats_blk_cpu(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t inner, const void *x,
                             size_t ldx, double *sums, int accumulate)
{
	STARNN_SIMD_CALL(bn_stats_blk_impl, (dt, cb, n, c, inner, x, ldx, sums, accumulate));
}

/* y = (x - m) * sc + b (relu: then max with +0) for group q's lanes over
 * the pixels of a chunk, W lanes at a time. */
#define BLK_APPLY_GROUP(VF, W)                                                                                 \
	do {                                                                                                   \
		for (size_t h = q; h < q + 8; h += W) {                                                        \
			VF vm = VF_AT(VF, m + h), vs = VF_AT(VF, sc + h), vb = VF_AT(VF, b + h);               \
			if (relu)                                                                              \
				for (size_t i = h; i < len; i += B)                                            \
					VF_PUT(yv + i, VF_RELU((VF_AT(VF, xv + i) - vm) * vs + vb));           \
			else                                                                                   \
				for (size_t i = h; i < len; i += B)                                            \
					VF_PUT(yv + i, (VF_AT(VF, xv + i) - vm) * vs + vb);                    \
		}                                                                                              \
	} while (0)

/* Each chunk of whole pixels walked once per group of 8 lanes, that
 * group's parameters in registers. */
STARNN_SIMD_INLINE void bn_apply_blk_any(int level, starnn_dtype dt, size_t B, size_t P, size_t n, size_t c,
                                         size_t inner, const void *x, size_t ldx, const float *mean,
                                         const float *stat, int var_given, float eps, const float *gamma,
                                         const float *beta, int relu, void *y, size_t ldy)
{
	const size_t es = starnn_halfrow_es(dt), step = BLK_BUF / B * B, len_all = inner * B;
	float xbuf[BLK_BUF], ybuf[BLK_BUF], m[BLK_MAX], sc[BLK_MAX], b[BLK_MAX];
	for (size_t k0 = 0; k0 < c; k0 += B) {
		for (size_t j = 0; j < B; j++) {
			size_t k = k0 + j;
			double istd = var_given ? 1.0 / sqrt((double)stat[k] + eps) : stat[k];
			m[j] = mean[k], sc[j] = (float)(gamma[k] * istd), b[j] = beta[k];
		}
		for (size_t r = 0; r < n; r++) {
			const char *xp = plane(dt, x, r, ldx, k0, inner);
			char *yp = (char *)plane_of(dt, y, r, ldy, k0, inner, P);
			if (bf16_in_registers(level, dt, B)) {
				const uint16_t *xh = (const uint16_t *)(const void *)xp;
				uint16_t *yh = (uint16_t *)(void *)yp;
				for (size_t i = 0, o = 0; i < len_all; i += B, o += P)
					for (size_t q = 0; q < B; q += 16) {
						starnn_vf16 v = STARNN_BF16X16_WIDEN(xh + i + q) - BLK16_AT(m + q);
						v = v * BLK16_AT(sc + q) + BLK16_AT(b + q);
						if (relu)
							v = BLK16_RELU(v);
						STARNN_BF16X16_NARROW(yh + o + q, v);
					}
				continue;
			}
			for (size_t i0 = 0; i0 < len_all; i0 += step) {
				size_t len = min_sz(step, len_all - i0);
				char *yc = yp + i0 / B * P * es;
				const float *xv = starnn_halfrow_load(dt, xp + i0 * es, len, xbuf);
				float *yv = rows_out(dt, yc, B, P, ybuf);
				for (size_t q = 0; q < B; q += 8) {
					if (level == STARNN_SIMD_GENERIC)
						BLK_APPLY_GROUP(starnn_vf4, 4);
					else
						BLK_APPLY_GROUP(starnn_vf8, 8);
				}
				rows_store(dt, yv, len, yc, B, P);
			}
		}
	}
}

STARNN_SIMD_INLINE void bn_apply_blk_impl(int level, starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c,
                                          size_t inner, const void *x, size_t ldx, const float *mean,
                                          const float *stat, int var_given, float eps, const float *gamma,
                                          const float *beta, int relu, void *y, size_t ldy)
{
	if (cb == 16)
		bn_apply_blk_any(level, dt, 16, cby, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y,
		                 ldy);
	else if (cb == 8)
		bn_apply_blk_any(level, dt, 8, cby, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y,
		                 ldy);
	else
		bn_apply_blk_any(level, dt, cb, cby, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y,
		                 ldy);
}
STARNN_SIMD_CLONES_LEVEL(bn_apply_blk_impl,
                         (starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner, const void *x,
                          size_t ldx, const float *mean, const float *stat, int var_given, float eps,
                          const float *gamma, const float *beta, int relu, void *y, size_t ldy),
                         dt, cb, cby, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y, ldy)

void starnn_bn_apply_blk_cpu(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner, const void *x,
                             size_t ldx, const float *mean, const float *stat, int var_given, float eps,
                             const float *gamma, const float *beta, int relu, void *y, size_t ldy)
{
	STARNN_SIMD_CALL(bn_apply_blk_impl,
	                 (dt, cb, cby, n, c, inner, x, ldx, mean, stat, var_given, eps, gamma, beta, relu, y, ldy));
}

/* As BLK_STATS_GROUP: sum g, sum g * (x - m) of groups q .. q + G - 1,
 * g = dy or dy masked by y > 0. */
#define BLK_BWD_GROUP(VD, W, OF, G)                                                                            \
	do {                                                                                                   \
		VD mq_[G][8 / W], a_[G][8 / W], b_[G][8 / W];                                                  \
		memcpy(mq_, m + q, sizeof mq_);                                                                \
		memcpy(a_, sa + q, sizeof a_), memcpy(b_, sb + q, sizeof b_);                                  \
		for (size_t i = q; i < len; i += B)                                                            \
			for (int g_ = 0; g_ < G; g_++)                                                         \
				for (int h = 0; h < 8 / W; h++) {                                              \
					const size_t e_ = i + 8 * g_ + W * h;                                  \
					VD g = OF(gv + e_);                                                    \
					if (yv) {                                                              \
						VD yq = OF(yv + e_);                                           \
						g = MASK_POS(g, yq);                                           \
					}                                                                      \
					a_[g_][h] += g, b_[g_][h] += g * (OF(xv + e_) - mq_[g_][h]);           \
				}                                                                              \
		memcpy(sa + q, a_, sizeof a_), memcpy(sb + q, b_, sizeof b_);                                  \
	} while (0)

#ifdef STARNN_SIMD_X86
/* The NK (constant) groups of 16 lanes from lane q of a bf16 block plane of
 * len elements: per lane a += g, b += g * (x - m) in double, pixel by pixel,
 * as BLK_BWD_GROUP (the same sums), straight from the bf16 data. */
#define BF16_BWD_REDUCE(NK)                                                                                    \
	do {                                                                                                   \
		__m512d a_[2 * NK], b_[2 * NK], m_[2 * NK];                                                     \
		for (int h = 0; h < 2 * NK; h++)                                                               \
			a_[h] = _mm512_loadu_pd(sa + q + 8 * h), b_[h] = _mm512_loadu_pd(sb + q + 8 * h),       \
			m_[h] = _mm512_loadu_pd(m + q + 8 * h);                                                  \
		for (size_t i = q, o = q; i < len; i += B, o += P)                                             \
			for (int k = 0; k < NK; k++) {                                                         \
				__m512 gf = STARNN_BF16X16_WIDEN_PS(g + o + 16 * k);                           \
				__m512 xf = STARNN_BF16X16_WIDEN_PS(x + i + 16 * k);                           \
				if (y) {                                                                       \
					__m512 yf = STARNN_BF16X16_WIDEN_PS(y + o + 16 * k);                   \
					gf = _mm512_maskz_mov_ps(                                              \
					    _mm512_cmp_ps_mask(yf, _mm512_setzero_ps(), _CMP_GT_OQ), gf);      \
				}                                                                              \
				__m512d g0 = _mm512_cvtps_pd(_mm512_castps512_ps256(gf));                     \
				__m512d g1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(gf, 1));                 \
				__m512d x0 = _mm512_cvtps_pd(_mm512_castps512_ps256(xf));                     \
				__m512d x1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(xf, 1));                 \
				a_[2 * k] = _mm512_add_pd(a_[2 * k], g0);                                      \
				b_[2 * k] = _mm512_add_pd(b_[2 * k], _mm512_mul_pd(g0, _mm512_sub_pd(x0, m_[2 * k]))); \
				a_[2 * k + 1] = _mm512_add_pd(a_[2 * k + 1], g1);                              \
				b_[2 * k + 1] =                                                                \
				    _mm512_add_pd(b_[2 * k + 1], _mm512_mul_pd(g1, _mm512_sub_pd(x1, m_[2 * k + 1]))); \
			}                                                                                      \
		for (int h = 0; h < 2 * NK; h++)                                                               \
			_mm512_storeu_pd(sa + q + 8 * h, a_[h]), _mm512_storeu_pd(sb + q + 8 * h, b_[h]);       \
	} while (0)
/* Lanes in groups of up to 64 (their 16 sums and 8 means in registers);
 * blocks of more than 64 lanes walk the plane once per group. g and y in
 * rows P apart (plane_of). */
STARNN_TARGET_AVX512 static void bf16_bwd_reduce_avx512(size_t B, size_t P, size_t len, const uint16_t *x,
                                                         const uint16_t *g, const uint16_t *y, const double *m,
                                                         double *sa, double *sb)
{
	BF16_LANE_GROUPS(BF16_BWD_REDUCE);
}
#endif

STARNN_SIMD_INLINE void bn_bwd_reduce_blk_any(int level, starnn_dtype dt, size_t B, size_t P, size_t n, size_t c,
                                              size_t inner, const void *x, size_t ldx, const void *dy, size_t lddy,
                                              const void *y, size_t ldy, const float *mean, double *sums,
                                              int accumulate)
{
	const size_t es = starnn_halfrow_es(dt), step = BLK_BUF / B * B, len_all = inner * B;
	float xbuf[BLK_BUF], gbuf[BLK_BUF], ybuf[BLK_BUF];
	double m[BLK_MAX], sa[BLK_MAX], sb[BLK_MAX];
	if (!accumulate)
		memset(sums, 0, 2 * c * sizeof *sums);
	for (size_t k0 = 0; k0 < c; k0 += B) {
		for (size_t j = 0; j < B; j++)
			m[j] = mean[k0 + j], sa[j] = 0, sb[j] = 0;
		for (size_t r = 0; r < n; r++) {
			const char *xp = plane(dt, x, r, ldx, k0, inner), *gp = plane_of(dt, dy, r, lddy, k0, inner, P);
			const char *yp = y ? plane_of(dt, y, r, ldy, k0, inner, P) : NULL;
#ifdef STARNN_SIMD_X86
			if (bf16_in_registers(level, dt, B)) {
				bf16_bwd_reduce_avx512(B, P, len_all, (const uint16_t *)(const void *)xp,
				                       (const uint16_t *)(const void *)gp, (const uint16_t *)(const void *)yp, m,
				                       sa, sb);
				continue;
			}
#endif
			for (size_t i0 = 0; i0 < len_all; i0 += step) {
				size_t len = min_sz(step, len_all - i0);
				const size_t o0 = i0 / B * P * es;
				const float *xv = starnn_halfrow_load(dt, xp + i0 * es, len, xbuf);
				const float *gv = rows_load(dt, gp + o0, len, B, P, gbuf);
				const float *yv = yp ? rows_load(dt, yp + o0, len, B, P, ybuf) : NULL;
				BLK_WALK(BLK_BWD_GROUP);
			}
		}
		for (size_t j = 0; j < B; j++) {
			sums[k0 + j] += sa[j];
			sums[c + k0 + j] += sb[j];
		}
	}
}

STARNN_SIMD_INLINE void bn_bwd_reduce_blk_impl(int level, starnn_dtype dt, size_t cb, size_t cby, size_t n,
                                               size_t c, size_t inner, const void *x, size_t ldx, const void *dy,
                                               size_t lddy, const void *y, size_t ldy, const float *mean,
                                               double *sums, int accumulate)
{
	if (cb == 16)
		bn_bwd_reduce_blk_any(level, dt, 16, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate);
	else if (cb == 8)
		bn_bwd_reduce_blk_any(level, dt, 8, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate);
	else
		bn_bwd_reduce_blk_any(level, dt, cb, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate);
}
STARNN_SIMD_CLONES_LEVEL(bn_bwd_reduce_blk_impl,
                         (starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner, const void *x,
                          size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean,
                          double *sums, int accumulate),
                         dt, cb, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate)

void starnn_bn_bwd_reduce_blk_cpu(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner,
                                  const void *x, size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy,
                                  const float *mean, double *sums, int accumulate)
{
	STARNN_SIMD_CALL(bn_bwd_reduce_blk_impl,
	                 (dt, cb, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums, accumulate));
}

/* dx = a g + k - d (x - m) (+ beta dx), g = dy or dy masked by y > 0, for
 * group q's lanes over the pixels of a chunk, as BLK_APPLY_GROUP. */
#define BLK_BWD_APPLY_GROUP(VF, W)                                                                             \
	do {                                                                                                   \
		for (size_t h = q; h < q + 8; h += W) {                                                        \
			VF va = VF_AT(VF, a + h), vk = VF_AT(VF, kk + h), vd = VF_AT(VF, d + h),               \
			   vm = VF_AT(VF, m + h), vbeta = (VF){0} + beta;                                       \
			for (size_t i = h; i < len; i += B) {                                                  \
				VF g = VF_AT(VF, gv + i);                                                      \
				if (yv)                                                                        \
					g = MASK_POS(g, VF_AT(VF, yv + i));                                    \
				VF v = va * g + vk - vd * (VF_AT(VF, xv + i) - vm);                            \
				if (beta != 0)                                                                 \
					v = v + vbeta * VF_AT(VF, dv + i);                                     \
				VF_PUT(dv + i, v);                                                             \
			}                                                                                      \
		}                                                                                              \
	} while (0)

/* As bn_apply_blk_any. */
STARNN_SIMD_INLINE void bn_bwd_apply_blk_any(int level, starnn_dtype dt, size_t B, size_t P, size_t n, size_t c,
                                             size_t inner, const void *x, size_t ldx, const void *dy, size_t lddy, const void *y,
                                             size_t ldy, const float *mean, const float *invstd, const float *gamma,
                                             size_t nslots, const double *slots, size_t lds, double count,
                                             float beta, void *dx, size_t lddx)
{
	const size_t es = starnn_halfrow_es(dt), step = BLK_BUF / B * B, len_all = inner * B;
	float xbuf[BLK_BUF], gbuf[BLK_BUF], ybuf[BLK_BUF], dbuf[BLK_BUF];
	float a[BLK_MAX], kk[BLK_MAX], d[BLK_MAX], m[BLK_MAX];
	for (size_t k0 = 0; k0 < c; k0 += B) {
		for (size_t j = 0; j < B; j++) {
			size_t k = k0 + j;
			double s1, s2;
			slot_totals(slots, nslots, lds, c, k, &s1, &s2);
			double istd = invstd[k], ad = gamma[k] * istd;
			a[j] = (float)ad, kk[j] = (float)(-ad * s1 / count), d[j] = (float)(ad * istd * istd * s2 / count);
			m[j] = mean[k];
		}
		for (size_t r = 0; r < n; r++) {
			const char *xp = plane(dt, x, r, ldx, k0, inner), *gp = plane_of(dt, dy, r, lddy, k0, inner, P);
			const char *yp = y ? plane_of(dt, y, r, ldy, k0, inner, P) : NULL;
			char *dp = (char *)plane(dt, dx, r, lddx, k0, inner);
			if (bf16_in_registers(level, dt, B)) {
				const uint16_t *xh = (const uint16_t *)(const void *)xp, *gh = (const uint16_t *)(const void *)gp,
				               *yh = (const uint16_t *)(const void *)yp;
				uint16_t *dh = (uint16_t *)(void *)dp;
				const starnn_vf16 vbeta = (starnn_vf16){0} + beta;
				for (size_t i = 0, o = 0; i < len_all; i += B, o += P)
					for (size_t q = 0; q < B; q += 16) {
						starnn_vf16 g = STARNN_BF16X16_WIDEN(gh + o + q);
						if (yh)
							g = MASK_POS(g, STARNN_BF16X16_WIDEN(yh + o + q));
						starnn_vf16 xc = STARNN_BF16X16_WIDEN(xh + i + q) - BLK16_AT(m + q);
						starnn_vf16 v = BLK16_AT(a + q) * g + BLK16_AT(kk + q) - BLK16_AT(d + q) * xc;
						if (beta != 0)
							v = v + vbeta * STARNN_BF16X16_WIDEN(dh + i + q);
						STARNN_BF16X16_NARROW(dh + i + q, v);
					}
				continue;
			}
			for (size_t i0 = 0; i0 < len_all; i0 += step) {
				size_t len = min_sz(step, len_all - i0);
				const size_t o0 = i0 / B * P * es;
				const float *xv = starnn_halfrow_load(dt, xp + i0 * es, len, xbuf);
				const float *gv = rows_load(dt, gp + o0, len, B, P, gbuf);
				const float *yv = yp ? rows_load(dt, yp + o0, len, B, P, ybuf) : NULL;
				float *dv = starnn_halfrow_out(dt, dp + i0 * es, dbuf);
				if (dt != STARNN_FP32 && beta != 0)
					starnn_halfrow_load(dt, dp + i0 * es, len, dbuf); /* the old dx, widened in place */
				for (size_t q = 0; q < B; q += 8) {
					if (level == STARNN_SIMD_GENERIC)
						BLK_BWD_APPLY_GROUP(starnn_vf4, 4);
					else
						BLK_BWD_APPLY_GROUP(starnn_vf8, 8);
				}
				starnn_halfrow_store(dt, dv, len, dp + i0 * es);
			}
		}
	}
}

STARNN_SIMD_INLINE void bn_bwd_apply_blk_impl(int level, starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c,
                                              size_t inner, const void *x, size_t ldx, const void *dy, size_t lddy,
                                              const void *y, size_t ldy, const float *mean, const float *invstd,
                                              const float *gamma, size_t nslots, const double *slots, size_t lds,
                                              double count, float beta, void *dx, size_t lddx)
{
	if (cb == 16)
		bn_bwd_apply_blk_any(level, dt, 16, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma, nslots,
		                     slots, lds, count, beta, dx, lddx);
	else if (cb == 8)
		bn_bwd_apply_blk_any(level, dt, 8, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma, nslots,
		                     slots, lds, count, beta, dx, lddx);
	else
		bn_bwd_apply_blk_any(level, dt, cb, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma, nslots,
		                     slots, lds, count, beta, dx, lddx);
}
STARNN_SIMD_CLONES_LEVEL(bn_bwd_apply_blk_impl,
                         (starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner, const void *x,
                          size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean,
                          const float *invstd, const float *gamma, size_t nslots, const double *slots, size_t lds,
                          double count, float beta, void *dx, size_t lddx),
                         dt, cb, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma, nslots, slots, lds,
                         count, beta, dx, lddx)

void starnn_bn_bwd_apply_blk_cpu(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner,
                                 const void *x, size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy,
                                 const float *mean, const float *invstd, const float *gamma, size_t nslots,
                                 const double *slots, size_t lds, double count, float beta, void *dx, size_t lddx)
{
	STARNN_SIMD_CALL(bn_bwd_apply_blk_impl, (dt, cb, cby, n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd, gamma,
	                                         nslots, slots, lds, count, beta, dx, lddx));
}
