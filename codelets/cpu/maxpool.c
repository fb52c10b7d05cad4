/* CPU kernels of maxpool (2x2, stride 2). One channel plane at a time; the
 * inner loops over output columns are branch-free selects that vectorise.
 * The selection rule (see codelets/maxpool.h) is spelled once, in pick(),
 * and used by both passes so that the backward routes to the element the
 * forward took. */
#include "codelets/maxpool.h"

/* Running max step of PyTorch's rule: take v when v > m or v is NaN. */
static inline int take(float v, float m)
{
	return v > m || v != v;
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
				const float *x0 = xp + 2 * i * w, *x1 = x0 + w;
				float *d0 = dp + 2 * i * w, *d1 = d0 + w;
				const float *g = gp + i * wo;
				for (size_t j = 0; j < wo; j++) {
					int k;
					(void)pick(x0[2 * j], x0[2 * j + 1], x1[2 * j], x1[2 * j + 1], &k);
					float gj = g[j];
					d0[2 * j] = acc(beta, d0[2 * j], k == 0 ? gj : 0.0f);
					d0[2 * j + 1] = acc(beta, d0[2 * j + 1], k == 1 ? gj : 0.0f);
					d1[2 * j] = acc(beta, d1[2 * j], k == 2 ? gj : 0.0f);
					d1[2 * j + 1] = acc(beta, d1[2 * j + 1], k == 3 ? gj : 0.0f);
				}
				if (w & 1) /* the ignored last column */
					d0[w - 1] = acc(beta, d0[w - 1], 0.0f), d1[w - 1] = acc(beta, d1[w - 1], 0.0f);
			}
			if (h & 1) { /* the ignored last row */
				float *dl = dp + (h - 1) * w;
				for (size_t j = 0; j < w; j++)
					dl[j] = acc(beta, dl[j], 0.0f);
			}
		}
}
