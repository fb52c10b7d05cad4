/* CPU kernels of axpy / scale / add. Row by row so that strided views
 * (ld > cols) work; the inner loops vectorise. */
#include "codelets/axpy.h"

void starnn_axpy_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx;
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++)
			yr[c] += alpha * xr[c];
	}
}

void starnn_scale_cpu(size_t rows, size_t cols, float alpha, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++)
			yr[c] *= alpha;
	}
}

void starnn_add_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                    float beta, const float *y, size_t ldy, float *z, size_t ldz)
{
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx, *yr = y + r * ldy;
		float *zr = z + r * ldz;
		for (size_t c = 0; c < cols; c++)
			zr[c] = alpha * xr[c] + beta * yr[c];
	}
}
