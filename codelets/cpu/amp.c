/* CPU kernels of amp: the Inf/NaN test is an OR over the exponent test of
 * the bit patterns (integer loops that vectorise, no floating-point
 * compares, so -ffast-math style assumptions cannot remove it); the scale
 * update is a few scalar operations. */
#include <string.h>

#include "codelets/kernels/amp.h"

/* An element is Inf or NaN when all its exponent bits are set. */
static int row_nonfinite_32(size_t n, const uint32_t *x)
{
	uint32_t any = 0;
	for (size_t i = 0; i < n; i++)
		any |= (uint32_t)((x[i] & 0x7f800000u) == 0x7f800000u);
	return any != 0;
}

static int row_nonfinite_16(size_t n, const uint16_t *x, uint16_t exp_mask)
{
	unsigned any = 0;
	for (size_t i = 0; i < n; i++)
		any |= (unsigned)((x[i] & exp_mask) == exp_mask);
	return any != 0;
}

int starnn_amp_nonfinite_cpu(starnn_dtype dtype, size_t rows, size_t cols, const void *x, size_t ld)
{
	for (size_t r = 0; r < rows; r++) {
		int bad;
		if (dtype == STARNN_FP32)
			bad = row_nonfinite_32(cols, (const uint32_t *)x + r * ld);
		else
			bad = row_nonfinite_16(cols, (const uint16_t *)x + r * ld,
			                       dtype == STARNN_FP16 ? 0x7c00u : 0x7f80u);
		if (bad)
			return 1;
	}
	return 0;
}

void starnn_amp_scale_update_cpu(const struct starnn_amp_policy *p, float *state, const float *flag)
{
	float scale = state[0], good = state[1];
	if (flag[0] != 0.0f) {
		if (p->dynamic) {
			scale *= p->backoff;
			scale = scale < p->min_scale ? p->min_scale : scale;
		}
		good = 0.0f;
		state[2] += 1.0f;
	} else {
		state[3] += 1.0f;
		good += 1.0f;
		if (p->dynamic && good >= (float)p->growth_interval) {
			scale *= p->growth;
			scale = scale > p->max_scale ? p->max_scale : scale;
			good = 0.0f;
		}
	}
	state[0] = scale;
	state[1] = good;
}
