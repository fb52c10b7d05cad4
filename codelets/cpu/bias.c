/* CPU kernels of bias_add / bias_grad. Row by row so that strided views
 * (ld > cols) work; the inner loops vectorise. */
#include "codelets/kernels/bias.h"
#include "codelets/kernels/convert.h"

/* y: n x (channels * inner), ld; b: channels. */
void starnn_bias_add_cpu(size_t n, size_t channels, size_t inner, const float *b, float *y, size_t ldy)
{
	for (size_t r = 0; r < n; r++) {
		float *yr = y + r * ldy;
		if (inner == 1) {
			for (size_t c = 0; c < channels; c++)
				yr[c] += b[c];
			continue;
		}
		for (size_t c = 0; c < channels; c++) {
			float bc = b[c];
			float *p = yr + c * inner;
			for (size_t i = 0; i < inner; i++)
				p[i] += bc;
		}
	}
}

/* Sum of len floats: 8 independent partial sums (vectorisable without
 * -ffast-math, and more accurate than one running sum). */
static inline double sum_f32(const float *p, size_t len)
{
	float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	size_t i = 0;
	for (; i + 8 <= len; i += 8)
		for (int j = 0; j < 8; j++)
			acc[j] += p[i + j];
	double s = 0;
	for (; i < len; i++)
		s += p[i];
	for (int j = 0; j < 8; j++)
		s += acc[j];
	return s;
}

/* dy: n x (channels * inner), ld; db: channels. Channels are taken in
 * blocks whose double accumulators live on the stack; db is read only when
 * beta != 0 (it may hold garbage otherwise). */
void starnn_bias_grad_cpu(size_t n, size_t channels, size_t inner, const float *dy, size_t lddy, float beta,
                          float *db)
{
	enum { BLOCK = 256 };
	double acc[BLOCK];
	for (size_t c0 = 0; c0 < channels; c0 += BLOCK) {
		size_t nc = channels - c0 < BLOCK ? channels - c0 : BLOCK;
		for (size_t c = 0; c < nc; c++)
			acc[c] = 0;
		for (size_t r = 0; r < n; r++) {
			const float *row = dy + r * lddy + c0 * inner;
			if (inner == 1)
				for (size_t c = 0; c < nc; c++)
					acc[c] += row[c];
			else
				for (size_t c = 0; c < nc; c++)
					acc[c] += sum_f32(row + c * inner, inner);
		}
		for (size_t c = 0; c < nc; c++)
			db[c0 + c] = beta == 0.0f ? (float)acc[c] : (float)((double)beta * db[c0 + c] + acc[c]);
	}
}

/* ------------------------------------------------------- mixed precision */

/* 16-bit rows go through fp32 blocks of CHUNK elements on the stack. */
#define CHUNK 512

void starnn_bias_add_half_cpu(starnn_dtype dt, size_t n, size_t channels, size_t inner, const float *b, void *y,
                              size_t ldy)
{
	float tmp[CHUNK];
	for (size_t r = 0; r < n; r++) {
		uint16_t *yr = (uint16_t *)y + r * ldy;
		if (inner == 1) {
			for (size_t c0 = 0; c0 < channels; c0 += CHUNK) {
				size_t len = channels - c0 < CHUNK ? channels - c0 : CHUNK;
				starnn_widen_row_cpu(dt, len, yr + c0, tmp);
				for (size_t j = 0; j < len; j++)
					tmp[j] += b[c0 + j];
				starnn_narrow_row_cpu(dt, len, tmp, yr + c0);
			}
			continue;
		}
		for (size_t c = 0; c < channels; c++) {
			float bc = b[c];
			uint16_t *p = yr + c * inner;
			for (size_t i0 = 0; i0 < inner; i0 += CHUNK) {
				size_t len = inner - i0 < CHUNK ? inner - i0 : CHUNK;
				starnn_widen_row_cpu(dt, len, p + i0, tmp);
				for (size_t j = 0; j < len; j++)
					tmp[j] += bc;
				starnn_narrow_row_cpu(dt, len, tmp, p + i0);
			}
		}
	}
}

void starnn_bias_grad_half_cpu(starnn_dtype dt, size_t n, size_t channels, size_t inner, const void *dy, size_t lddy,
                               float beta, float *db)
{
	enum { BLOCK = 256 };
	double acc[BLOCK];
	float tmp[CHUNK];
	for (size_t c0 = 0; c0 < channels; c0 += BLOCK) {
		size_t nc = channels - c0 < BLOCK ? channels - c0 : BLOCK;
		for (size_t c = 0; c < nc; c++)
			acc[c] = 0;
		for (size_t r = 0; r < n; r++) {
			const uint16_t *row = (const uint16_t *)dy + r * lddy + c0 * inner;
			if (inner == 1) {
				starnn_widen_row_cpu(dt, nc, row, tmp);
				for (size_t c = 0; c < nc; c++)
					acc[c] += tmp[c];
				continue;
			}
			for (size_t c = 0; c < nc; c++)
				for (size_t i0 = 0; i0 < inner; i0 += CHUNK) {
					size_t len = inner - i0 < CHUNK ? inner - i0 : CHUNK;
					starnn_widen_row_cpu(dt, len, row + c * inner + i0, tmp);
					acc[c] += sum_f32(tmp, len);
				}
		}
		for (size_t c = 0; c < nc; c++)
			db[c0 + c] = beta == 0.0f ? (float)acc[c] : (float)((double)beta * db[c0 + c] + acc[c]);
	}
}
