/* CPU kernels of mse_fwd / mse_bwd. Row by row (strided views); the forward
 * sum is accumulated in double with 8 independent partial sums (see
 * cpu/reduce.c), the backward loop vectorises. */
#include "codelets/kernels/convert.h"
#include "codelets/kernels/mse.h"

#define LANES 8

static double sqdiff_row(const float *p, const float *t, size_t n)
{
	double acc[LANES] = {0};
	size_t c = 0;
	for (; c + LANES <= n; c += LANES)
		for (int k = 0; k < LANES; k++) {
			double d = (double)p[c + k] - (double)t[c + k];
			acc[k] += d * d;
		}
	double s = 0;
	for (; c < n; c++) {
		double d = (double)p[c] - (double)t[c];
		s += d * d;
	}
	for (int k = 0; k < LANES; k++)
		s += acc[k];
	return s;
}

void starnn_mse_fwd_cpu(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float beta, float *loss)
{
	double s = 0;
	for (size_t r = 0; r < rows; r++)
		s += sqdiff_row(pred + r * ldp, target + r * ldt, cols);
	s *= (double)scale;
	*loss = (float)(beta != 0.0f ? (double)beta * (double)*loss + s : s);
}

void starnn_mse_bwd_cpu(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float *dpred, size_t ldd)
{
	float k = 2.0f * scale;
	for (size_t r = 0; r < rows; r++) {
		const float *restrict p = pred + r * ldp, *restrict t = target + r * ldt;
		float *restrict d = dpred + r * ldd;
		for (size_t c = 0; c < cols; c++)
			d[c] = k * (p[c] - t[c]);
	}
}

/* ------------------------------------------------------- mixed precision */

/* pred rows go through fp32 blocks of CHUNK elements on the stack. */
#define CHUNK 512

void starnn_mse_fwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                             const float *target, size_t ldt, float scale, float beta, float *loss)
{
	float tmp[CHUNK];
	size_t es = dt == STARNN_FP32 ? 4 : 2;
	double s = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c += CHUNK) {
			size_t len = cols - c < CHUNK ? cols - c : CHUNK;
			starnn_widen_row_cpu(dt, len, (const char *)pred + (r * ldp + c) * es, tmp);
			s += sqdiff_row(tmp, target + r * ldt + c, len);
		}
	s *= (double)scale;
	*loss = (float)(beta != 0.0f ? (double)beta * (double)*loss + s : s);
}

void starnn_mse_bwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                             const float *target, size_t ldt, float scale, const float *state, void *dpred,
                             size_t ldd)
{
	float tmp[CHUNK];
	size_t es = dt == STARNN_FP32 ? 4 : 2;
	float k = 2.0f * scale, ls = state ? state[0] : 1.0f;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c += CHUNK) {
			size_t len = cols - c < CHUNK ? cols - c : CHUNK;
			const float *t = target + r * ldt + c;
			starnn_widen_row_cpu(dt, len, (const char *)pred + (r * ldp + c) * es, tmp);
			for (size_t j = 0; j < len; j++)
				tmp[j] = (k * (tmp[j] - t[j])) * ls;
			starnn_narrow_row_cpu(dt, len, tmp, (char *)dpred + (r * ldd + c) * es);
		}
}
