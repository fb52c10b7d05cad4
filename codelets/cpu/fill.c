/* CPU kernels of fill: row by row (strided views), vectorisable stores. */
#include "codelets/kernels/fill.h"

void starnn_fill_f32_cpu(size_t rows, size_t cols, float value, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++)
			yr[c] = value;
	}
}

void starnn_fill_16_cpu(size_t rows, size_t cols, uint16_t bits, uint16_t *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		uint16_t *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++)
			yr[c] = bits;
	}
}
