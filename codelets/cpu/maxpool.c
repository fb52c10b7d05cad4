/* CPU kernels of maxpool (2x2, stride 2). One channel plane at a time; the
 * inner loops over output columns are branch-free selects that vectorise.
 * The selection rule (see codelets/maxpool.h) is take(), applied in the
 * same order by both passes, so that the backward routes to the element
 * the forward took. */
#include "codelets/maxpool.h"

/* The build's -O2 does not vectorise these loops (GCC's very-cheap cost
 * model); they run ~4x faster vectorised. */
#if defined(__GNUC__) && !defined(__clang__)
#endif

/* Running max step of PyTorch's rule: take v when v > m or v is NaN. */
static inline int take(float v, float m)
{
	return (v > m) | (v != v); /* no branch: keeps the loops vectorisable */
}

/* Window (a b / c d): its max, and which element (0..3, row-major). */
static inline float pick(float a, float b, float c, float d, int *k)
{
	float m = a;
	int i = 0;
	if (take(b, m))
		m = b, i = 1;
	if (take(c, m))
		m = c, i = 2;
	if (take(d, m))
		m = d, i = 3;
	*k = i;
	return m;
}

void starnn_maxpool_fwd_cpu(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, float *y,
                            size_t ldy)
{
	size_t ho = h / 2, wo = w / 2;
	for (size_t r = 0; r < n; r++)
		for (size_t ch = 0; ch < c; ch++) {
			const float *xp = x + r * ldx + ch * h * w;
			float *yp = y + r * ldy + ch * ho * wo;
			for (size_t i = 0; i < ho; i++) {
				const float *x0 = xp + 2 * i * w, *x1 = x0 + w;
				float *yr = yp + i * wo;
				for (size_t j = 0; j < wo; j++) {
					int k;
					yr[j] = pick(x0[2 * j], x0[2 * j + 1], x1[2 * j], x1[2 * j + 1], &k);
				}
			}
		}
}

/* dx = routed (beta == 0, dx not read) or beta * dx + routed. */
static inline float acc(float beta, float old, float v)
{
	return beta == 0.0f ? v : beta * old + v;
}

/* One row of windows: x0 / x1 the two input rows, d0 / d1 those of dx, g
 * the row of dy. pick()'s steps as float selects: the element taken last
 * holds the gradient. `accumulate` is a constant at each call, so both
 * versions of the loop are branch-free and vectorise. */
static inline __attribute__((always_inline)) void route_row(size_t wo, const float *x0, const float *x1,
                                                            const float *g, int accumulate, float beta, float *d0,
                                                            float *d1)
{
	for (size_t j = 0; j < wo; j++) {
		float a = x0[2 * j], b = x0[2 * j + 1], c = x1[2 * j], d = x1[2 * j + 1];
		float gj = g[j], m = a, g0 = gj, g1 = 0.0f, g2 = 0.0f, g3 = 0.0f;
		int t = take(b, m);
		m = t ? b : m, g0 = t ? 0.0f : g0, g1 = t ? gj : 0.0f;
		t = take(c, m);
		m = t ? c : m, g0 = t ? 0.0f : g0, g1 = t ? 0.0f : g1, g2 = t ? gj : 0.0f;
		t = take(d, m);
		g0 = t ? 0.0f : g0, g1 = t ? 0.0f : g1, g2 = t ? 0.0f : g2, g3 = t ? gj : 0.0f;
		if (accumulate) {
			g0 += beta * d0[2 * j], g1 += beta * d0[2 * j + 1];
			g2 += beta * d1[2 * j], g3 += beta * d1[2 * j + 1];
		}
		d0[2 * j] = g0, d0[2 * j + 1] = g1, d1[2 * j] = g2, d1[2 * j + 1] = g3;
	}
}

void starnn_maxpool_bwd_cpu(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, const float *dy,
                            size_t lddy, float beta, float *dx, size_t lddx)
{
	size_t ho = h / 2, wo = w / 2;
	for (size_t r = 0; r < n; r++)
		for (size_t ch = 0; ch < c; ch++) {
			const float *xp = x + r * ldx + ch * h * w;
			const float *gp = dy + r * lddy + ch * ho * wo;
			float *dp = dx + r * lddx + ch * h * w;
			for (size_t i = 0; i < ho; i++) {
				const float *x0 = xp + 2 * i * w;
				float *d0 = dp + 2 * i * w;
				if (beta == 0.0f)
					route_row(wo, x0, x0 + w, gp + i * wo, 0, beta, d0, d0 + w);
				else
					route_row(wo, x0, x0 + w, gp + i * wo, 1, beta, d0, d0 + w);
				if (w & 1) /* the ignored last column */
					d0[w - 1] = acc(beta, d0[w - 1], 0.0f), d0[2 * w - 1] = acc(beta, d0[2 * w - 1], 0.0f);
			}
			if (h & 1) { /* the ignored last row */
				float *dl = dp + (h - 1) * w;
				for (size_t j = 0; j < w; j++)
					dl[j] = acc(beta, dl[j], 0.0f);
			}
		}
}
