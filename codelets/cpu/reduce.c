/* CPU kernels of sum / sumsq. Row by row (strided views), accumulated in
 * double with 8 independent partial sums so that the adds pipeline (and
 * vectorise) without reassociation flags; the float -> double rounding error
 * of a sum of n terms is then ~n * 1e-16 relative instead of ~n * 6e-8. */
#include "codelets/kernels/reduce.h"

#define LANES 8

static double sum_row(const float *x, size_t n)
{
	double acc[LANES] = {0};
	size_t c = 0;
	for (; c + LANES <= n; c += LANES)
		for (int k = 0; k < LANES; k++)
			acc[k] += (double)x[c + k];
	double s = 0;
	for (; c < n; c++)
		s += (double)x[c];
	for (int k = 0; k < LANES; k++)
		s += acc[k];
	return s;
}

static double sumsq_row(const float *x, size_t n)
{
	double acc[LANES] = {0};
	size_t c = 0;
	for (; c + LANES <= n; c += LANES)
		for (int k = 0; k < LANES; k++)
			acc[k] += (double)x[c + k] * (double)x[c + k];
	double s = 0;
	for (; c < n; c++)
		s += (double)x[c] * (double)x[c];
	for (int k = 0; k < LANES; k++)
		s += acc[k];
	return s;
}

/* out = beta * out + s, without reading out when beta == 0. */
static void store(float beta, double s, float *out)
{
	*out = (float)(beta != 0.0f ? (double)beta * (double)*out + s : s);
}

void starnn_sum_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out)
{
	double s = 0;
	for (size_t r = 0; r < rows; r++)
		s += sum_row(x + r * ldx, cols);
	store(beta, s, out);
}

void starnn_sumsq_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out)
{
	double s = 0;
	for (size_t r = 0; r < rows; r++)
		s += sumsq_row(x + r * ldx, cols);
	store(beta, s, out);
}
