/* CPU kernels of batch normalisation (see codelets/batchnorm.h).
 * Data are walked plane by plane (one sample, one channel: inner contiguous
 * floats), so strided rows (ld > cols) need no special case and the inner
 * loops vectorise. Reductions sum in double over LANES independent
 * accumulators (the compiler may not reorder a single double sum). */
#include <math.h>
#include <string.h>

#include "codelets/batchnorm.h"

#define LANES 8

/* s[0] += sum p, s[1] += sum p^2 over len floats. */
static void plane_sums(const float *p, size_t len, double *s)
{
	double a[LANES] = {0}, b[LANES] = {0};
	size_t i = 0;
	for (; i + LANES <= len; i += LANES)
		for (int l = 0; l < LANES; l++) {
			double v = p[i + l];
			a[l] += v;
			b[l] += v * v;
		}
	double sa = 0, sb = 0;
	for (; i < len; i++) {
		double v = p[i];
		sa += v;
		sb += v * v;
	}
	for (int l = 0; l < LANES; l++)
		sa += a[l], sb += b[l];
	s[0] += sa;
	s[1] += sb;
}

void starnn_bn_stats_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, double *sums, int accumulate)
{
	if (!accumulate)
		memset(sums, 0, 2 * c * sizeof *sums);
	for (size_t k = 0; k < c; k++) {
		double s[2] = {0, 0};
		for (size_t r = 0; r < n; r++)
			plane_sums(x + r * ldx + k * inner, inner, s);
		sums[k] += s[0];
		sums[c + k] += s[1];
	}
}

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

void starnn_bn_apply_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *mean,
                         const float *stat, int var_given, float eps, const float *gamma, const float *beta, int relu,
                         float *y, size_t ldy)
{
	for (size_t k = 0; k < c; k++) {
		double istd = var_given ? 1.0 / sqrt((double)stat[k] + eps) : stat[k];
		const float m = mean[k], s = (float)(gamma[k] * istd), b = beta[k];
		for (size_t r = 0; r < n; r++) {
			const float *xp = x + r * ldx + k * inner;
			float *yp = y + r * ldy + k * inner;
			if (relu) {
				for (size_t i = 0; i < inner; i++) {
					float v = (xp[i] - m) * s + b;
					yp[i] = v < 0 ? 0 : v;
				}
			} else {
				for (size_t i = 0; i < inner; i++)
					yp[i] = (xp[i] - m) * s + b;
			}
		}
	}
}

/* s[0] += sum g, s[1] += sum g * (x - m) with g = dy, or dy masked by y > 0. */
static void plane_bwd_sums(const float *x, const float *dy, const float *y, size_t len, double m, double *s)
{
	double a[LANES] = {0}, b[LANES] = {0};
	size_t i = 0;
	if (y) {
		for (; i + LANES <= len; i += LANES)
			for (int l = 0; l < LANES; l++) {
				double g = y[i + l] > 0 ? dy[i + l] : 0.0f;
				a[l] += g;
				b[l] += g * ((double)x[i + l] - m);
			}
	} else {
		for (; i + LANES <= len; i += LANES)
			for (int l = 0; l < LANES; l++) {
				double g = dy[i + l];
				a[l] += g;
				b[l] += g * ((double)x[i + l] - m);
			}
	}
	double sa = 0, sb = 0;
	for (; i < len; i++) {
		double g = !y || y[i] > 0 ? dy[i] : 0.0f;
		sa += g;
		sb += g * ((double)x[i] - m);
	}
	for (int l = 0; l < LANES; l++)
		sa += a[l], sb += b[l];
	s[0] += sa;
	s[1] += sb;
}

void starnn_bn_bwd_reduce_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                              size_t lddy, const float *y, size_t ldy, const float *mean, double *sums, int accumulate)
{
	if (!accumulate)
		memset(sums, 0, 2 * c * sizeof *sums);
	for (size_t k = 0; k < c; k++) {
		double s[2] = {0, 0};
		for (size_t r = 0; r < n; r++)
			plane_bwd_sums(x + r * ldx + k * inner, dy + r * lddy + k * inner,
			               y ? y + r * ldy + k * inner : NULL, inner, mean[k], s);
		sums[k] += s[0];
		sums[c + k] += s[1];
	}
}

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

void starnn_bn_bwd_apply_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                             size_t lddy, const float *y, size_t ldy, const float *mean, const float *invstd,
                             const float *gamma, size_t nslots, const double *slots, size_t lds, double count,
                             float beta, float *dx, size_t lddx)
{
	for (size_t k = 0; k < c; k++) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		/* dx = A*g + K - D*(x - m): A = gamma*invstd, K = -A*sum(g)/M,
		 * D = A*invstd*sum(g*xhat)/M, sum(g*xhat) = invstd*s2. */
		double istd = invstd[k], ad = gamma[k] * istd;
		const float a = (float)ad, kk = (float)(-ad * s1 / count), d = (float)(ad * istd * istd * s2 / count);
		const float m = mean[k];
		for (size_t r = 0; r < n; r++) {
			const float *xp = x + r * ldx + k * inner, *gp = dy + r * lddy + k * inner;
			const float *yp = y ? y + r * ldy + k * inner : NULL;
			float *dp = dx + r * lddx + k * inner;
			if (yp && beta != 0) {
				for (size_t i = 0; i < inner; i++) {
					float g = yp[i] > 0 ? gp[i] : 0.0f;
					dp[i] = a * g + kk - d * (xp[i] - m) + beta * dp[i];
				}
			} else if (yp) {
				for (size_t i = 0; i < inner; i++) {
					float g = yp[i] > 0 ? gp[i] : 0.0f;
					dp[i] = a * g + kk - d * (xp[i] - m);
				}
			} else if (beta != 0) {
				for (size_t i = 0; i < inner; i++)
					dp[i] = a * gp[i] + kk - d * (xp[i] - m) + beta * dp[i];
			} else {
				for (size_t i = 0; i < inner; i++)
					dp[i] = a * gp[i] + kk - d * (xp[i] - m);
			}
		}
	}
}
