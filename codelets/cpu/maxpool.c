/* CPU kernels of maxpool (2x2, stride 2), NCHW and blocked. One channel
 * plane (or block plane) at a time; the inner loops are branch-free selects
 * that vectorise,
 * compiled per instruction set (codelets/cpu/simd.h). The selection rule
 * (see codelets/kernels/maxpool.h) is take(), applied in the same order by both
 * passes, so that the backward routes to the element the forward took.
 *
 * fp16 / bf16 data (the _mp kernels): each row of windows is taken BLOCK
 * windows at a time, widened into buffers on the stack
 * (codelets/cpu/halfrow.h), the fp32 loops run on them and the results are
 * rounded once: bitwise the fp32 kernels' results on the widened data,
 * rounded (the forward's maximum is one of the inputs: exact). */
#include "codelets/cpu/halfrow.h"
#include "codelets/cpu/simd.h"
#include "codelets/kernels/maxpool.h"
#include "runtime/base/half.h"

/* Windows per block of a 16-bit row: 2 * BLOCK input elements per row. */
#define BLOCK (STARNN_HALFROW_CHUNK / 2)
/* 16-bit rows are widened BLOCK / B windows at a time, or one window of
 * B > BLOCK lanes (NHWC): buffers of BUF floats per output row */
#define BUF (BLOCK > STARNN_CBLOCK_MAX ? BLOCK : STARNN_CBLOCK_MAX)

/* Running max step of PyTorch's rule: take v when v > m or v is NaN. */
STARNN_SIMD_INLINE int take(float v, float m)
{
	return (v > m) | (v != v); /* no branch: keeps the loops vectorisable */
}

/* Window (a b / c d): its max, and which element (0..3, row-major). */
STARNN_SIMD_INLINE float pick(float a, float b, float c, float d)
{
	float m = a;
	m = take(b, m) ? b : m;
	m = take(c, m) ? c : m;
	m = take(d, m) ? d : m;
	return m;
}

/* ------------------------------------------------------------- the loops
 * One loop nest for both layouts: B lanes per pixel. Blocked data
 * (runtime/core/tensor.h: B = 8 or 16 for nChw8c / nChw16c, B = c for NHWC): the channels k0 .. k0 + B - 1 of a
 * sample are one block plane [h][w][B] (output [h/2][w/2][B]) that starts
 * where channel k0's NCHW plane would; element (row, col, lane) at
 * (row * w + col) * B + lane; the loops over lanes vectorise. NCHW data is
 * the case B = 1 (a block plane is a channel plane; the loops over output
 * columns vectorise). 16-bit rows go BLOCK / B windows at a time. */

/* One row of wo windows, B lanes each: x0 / x1 the two input rows. */
STARNN_SIMD_INLINE void fwd_row_blk(size_t B, size_t wo, const float *restrict x0, const float *restrict x1,
                                    float *restrict y)
{
	for (size_t j = 0; j < wo; j++)
		for (size_t l = 0; l < B; l++) {
			size_t a = 2 * j * B + l;
			y[j * B + l] = pick(x0[a], x0[a + B], x1[a], x1[a + B]);
		}
}

STARNN_SIMD_INLINE void maxpool_fwd_blk_body(starnn_dtype dt, size_t B, size_t n, size_t c, size_t h, size_t w,
                                             const void *x, size_t ldx, void *y, size_t ldy)
{
	const size_t ho = h / 2, wo = w / 2, es = starnn_halfrow_es(dt), step = dt == STARNN_FP32 ? wo : B <= BLOCK ? BLOCK / B : 1;
	float b0[2 * BUF], b1[2 * BUF], yb[BUF];
	for (size_t r = 0; r < n; r++)
		for (size_t k0 = 0; k0 < c; k0 += B) {
			const char *xp = (const char *)x + (r * ldx + k0 * h * w) * es;
			char *yp = (char *)y + (r * ldy + k0 * ho * wo) * es;
			for (size_t i = 0; i < ho; i++) {
				const char *x0 = xp + 2 * i * w * B * es, *x1 = x0 + w * B * es;
				char *yr = yp + i * wo * B * es;
				for (size_t j0 = 0; j0 < wo; j0 += step) {
					size_t len = wo - j0 < step ? wo - j0 : step;
					const float *f0 = starnn_halfrow_load(dt, x0 + 2 * j0 * B * es, 2 * len * B, b0);
					const float *f1 = starnn_halfrow_load(dt, x1 + 2 * j0 * B * es, 2 * len * B, b1);
					float *out = starnn_halfrow_out(dt, yr + j0 * B * es, yb);
					fwd_row_blk(B, len, f0, f1, out);
					starnn_halfrow_store(dt, out, len * B, yr + j0 * B * es);
				}
			}
		}
}

/* One row of windows, B lanes each: x0 / x1 the two input rows, d0 / d1
 * those of dx, g the row of dy. pick()'s steps as float selects: the
 * element taken last holds the gradient. `accumulate` is a constant at each
 * call, so both versions of the loop are branch-free and vectorise. */
STARNN_SIMD_INLINE void route_row_blk(size_t B, size_t wo, const float *restrict x0, const float *restrict x1,
                                      const float *restrict g, int accumulate, float beta, float *restrict d0,
                                      float *restrict d1)
{
	for (size_t j = 0; j < wo; j++)
		for (size_t l = 0; l < B; l++) {
			size_t p = 2 * j * B + l, q = p + B;
			float a = x0[p], b = x0[q], c = x1[p], d = x1[q];
			float gj = g[j * B + l], m = a, g0 = gj, g1 = 0.0f, g2 = 0.0f, g3 = 0.0f;
			int t = take(b, m);
			m = t ? b : m, g0 = t ? 0.0f : g0, g1 = t ? gj : 0.0f;
			t = take(c, m);
			m = t ? c : m, g0 = t ? 0.0f : g0, g1 = t ? 0.0f : g1, g2 = t ? gj : 0.0f;
			t = take(d, m);
			g0 = t ? 0.0f : g0, g1 = t ? 0.0f : g1, g2 = t ? 0.0f : g2, g3 = t ? gj : 0.0f;
			if (accumulate) {
				g0 += beta * d0[p], g1 += beta * d0[q];
				g2 += beta * d1[p], g3 += beta * d1[q];
			}
			d0[p] = g0, d0[q] = g1, d1[p] = g2, d1[q] = g3;
		}
}

/* dx elements that get no gradient (an odd last row / column): beta * dx,
 * or 0 when beta == 0 (dx not read), as the fp32 computation rounded. */
STARNN_SIMD_INLINE void scale_run(starnn_dtype dt, size_t len, float beta, char *p)
{
	const size_t es = starnn_halfrow_es(dt);
	float buf[STARNN_HALFROW_CHUNK];
	for (size_t i0 = 0; i0 < len; i0 += STARNN_HALFROW_CHUNK) {
		size_t m = len - i0 < STARNN_HALFROW_CHUNK ? len - i0 : STARNN_HALFROW_CHUNK;
		float *v = starnn_halfrow_out(dt, p + i0 * es, buf);
		if (beta == 0.0f) {
			for (size_t i = 0; i < m; i++)
				v[i] = 0.0f;
		} else {
			if (dt != STARNN_FP32)
				starnn_halfrow_load(dt, p + i0 * es, m, buf);
			for (size_t i = 0; i < m; i++)
				v[i] = beta * v[i] + 0.0f;
		}
		starnn_halfrow_store(dt, v, m, p + i0 * es);
	}
}

STARNN_SIMD_INLINE void maxpool_bwd_blk_body(starnn_dtype dt, size_t B, size_t n, size_t c, size_t h, size_t w,
                                             const void *x, size_t ldx, const void *dy, size_t lddy, float beta,
                                             void *dx, size_t lddx)
{
	const size_t ho = h / 2, wo = w / 2, es = starnn_halfrow_es(dt), step = dt == STARNN_FP32 ? wo : B <= BLOCK ? BLOCK / B : 1;
	const size_t rb = w * B * es; /* bytes of one row of a block plane */
	float b0[2 * BUF], b1[2 * BUF], gb[BUF], e0[2 * BUF], e1[2 * BUF];
	for (size_t r = 0; r < n; r++)
		for (size_t k0 = 0; k0 < c; k0 += B) {
			const char *xp = (const char *)x + (r * ldx + k0 * h * w) * es;
			const char *gp = (const char *)dy + (r * lddy + k0 * ho * wo) * es;
			char *dp = (char *)dx + (r * lddx + k0 * h * w) * es;
			for (size_t i = 0; i < ho; i++) {
				const char *x0 = xp + 2 * i * rb, *x1 = x0 + rb, *gr = gp + i * wo * B * es;
				char *d0 = dp + 2 * i * rb, *d1 = d0 + rb;
				for (size_t j0 = 0; j0 < wo; j0 += step) {
					size_t len = wo - j0 < step ? wo - j0 : step, o = 2 * j0 * B * es, ne = 2 * len * B;
					const float *f0 = starnn_halfrow_load(dt, x0 + o, ne, b0);
					const float *f1 = starnn_halfrow_load(dt, x1 + o, ne, b1);
					const float *g = starnn_halfrow_load(dt, gr + j0 * B * es, len * B, gb);
					float *o0 = starnn_halfrow_out(dt, d0 + o, e0), *o1 = starnn_halfrow_out(dt, d1 + o, e1);
					if (beta == 0.0f) {
						route_row_blk(B, len, f0, f1, g, 0, beta, o0, o1);
					} else {
						if (dt != STARNN_FP32) {
							starnn_halfrow_load(dt, d0 + o, ne, e0);
							starnn_halfrow_load(dt, d1 + o, ne, e1);
						}
						route_row_blk(B, len, f0, f1, g, 1, beta, o0, o1);
					}
					starnn_halfrow_store(dt, o0, ne, d0 + o);
					starnn_halfrow_store(dt, o1, ne, d1 + o);
				}
				if (w & 1) { /* the ignored last column: B lanes */
					scale_run(dt, B, beta, d0 + (w - 1) * B * es);
					scale_run(dt, B, beta, d1 + (w - 1) * B * es);
				}
			}
			if (h & 1) /* the ignored last row */
				scale_run(dt, w * B, beta, dp + (h - 1) * rb);
		}
}

/* NCHW data: one lane (B = 1), a block plane is a channel plane. */
STARNN_SIMD_INLINE void maxpool_fwd_impl(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x,
                                         size_t ldx, void *y, size_t ldy)
{
	maxpool_fwd_blk_body(dt, 1, n, c, h, w, x, ldx, y, ldy);
}
STARNN_SIMD_CLONES(maxpool_fwd_impl,
                   (starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx, void *y,
                    size_t ldy),
                   (dt, n, c, h, w, x, ldx, y, ldy))

void starnn_maxpool_fwd_cpu(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, float *y,
                            size_t ldy)
{
	STARNN_SIMD_CALL(maxpool_fwd_impl, (STARNN_FP32, n, c, h, w, x, ldx, y, ldy));
}

void starnn_maxpool_fwd_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                               void *y, size_t ldy)
{
	STARNN_SIMD_CALL(maxpool_fwd_impl, (dt, n, c, h, w, x, ldx, y, ldy));
}

STARNN_SIMD_INLINE void maxpool_bwd_impl(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x,
                                         size_t ldx, const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	maxpool_bwd_blk_body(dt, 1, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx);
}
STARNN_SIMD_CLONES(maxpool_bwd_impl,
                   (starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                    const void *dy, size_t lddy, float beta, void *dx, size_t lddx),
                   (dt, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx))

void starnn_maxpool_bwd_cpu(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, const float *dy,
                            size_t lddy, float beta, float *dx, size_t lddx)
{
	STARNN_SIMD_CALL(maxpool_bwd_impl, (STARNN_FP32, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx));
}

void starnn_maxpool_bwd_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                               const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	STARNN_SIMD_CALL(maxpool_bwd_impl, (dt, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx));
}

/* Either layout: cb lanes (a multiple of 8; 1 or 0: NCHW). */
STARNN_SIMD_INLINE void maxpool_fwd_blk_impl(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w,
                                             const void *x, size_t ldx, void *y, size_t ldy)
{
	if (cb == 16)
		maxpool_fwd_blk_body(dt, 16, n, c, h, w, x, ldx, y, ldy);
	else if (cb == 8)
		maxpool_fwd_blk_body(dt, 8, n, c, h, w, x, ldx, y, ldy);
	else if (cb > 1)
		maxpool_fwd_blk_body(dt, cb, n, c, h, w, x, ldx, y, ldy);
	else
		maxpool_fwd_blk_body(dt, 1, n, c, h, w, x, ldx, y, ldy);
}
STARNN_SIMD_CLONES(maxpool_fwd_blk_impl,
                   (starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                    void *y, size_t ldy),
                   (dt, cb, n, c, h, w, x, ldx, y, ldy))

void starnn_maxpool_fwd_blk_cpu(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, const void *x,
                                size_t ldx, void *y, size_t ldy)
{
	STARNN_SIMD_CALL(maxpool_fwd_blk_impl, (dt, cb, n, c, h, w, x, ldx, y, ldy));
}

STARNN_SIMD_INLINE void maxpool_bwd_blk_impl(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w,
                                             const void *x, size_t ldx, const void *dy, size_t lddy, float beta,
                                             void *dx, size_t lddx)
{
	if (cb == 16)
		maxpool_bwd_blk_body(dt, 16, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx);
	else if (cb == 8)
		maxpool_bwd_blk_body(dt, 8, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx);
	else if (cb > 1)
		maxpool_bwd_blk_body(dt, cb, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx);
	else
		maxpool_bwd_blk_body(dt, 1, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx);
}
STARNN_SIMD_CLONES(maxpool_bwd_blk_impl,
                   (starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                    const void *dy, size_t lddy, float beta, void *dx, size_t lddx),
                   (dt, cb, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx))

void starnn_maxpool_bwd_blk_cpu(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, const void *x,
                                size_t ldx, const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	STARNN_SIMD_CALL(maxpool_bwd_blk_impl, (dt, cb, n, c, h, w, x, ldx, dy, lddy, beta, dx, lddx));
}
