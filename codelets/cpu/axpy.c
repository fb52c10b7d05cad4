/* CPU kernels of axpy / scale / add. Row by row so that strided views
 * (ld > cols) work; the inner loops vectorise, compiled per instruction set
 * (codelets/cpu/simd.h). */
#include "codelets/cpu/simd.h"
#include "codelets/kernels/axpy.h"

STARNN_SIMD_INLINE void axpy_impl(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y,
                                  size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx;
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++)
			yr[c] += alpha * xr[c];
	}
}
STARNN_SIMD_CLONES(axpy_impl, (size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy),
                   (rows, cols, alpha, x, ldx, y, ldy))

void starnn_axpy_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy)
{
	STARNN_SIMD_CALL(axpy_impl, (rows, cols, alpha, x, ldx, y, ldy));
}

STARNN_SIMD_INLINE void scale_impl(size_t rows, size_t cols, float alpha, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++)
			yr[c] *= alpha;
	}
}
STARNN_SIMD_CLONES(scale_impl, (size_t rows, size_t cols, float alpha, float *y, size_t ldy),
                   (rows, cols, alpha, y, ldy))

void starnn_scale_cpu(size_t rows, size_t cols, float alpha, float *y, size_t ldy)
{
	STARNN_SIMD_CALL(scale_impl, (rows, cols, alpha, y, ldy));
}

STARNN_SIMD_INLINE void add_impl(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float beta,
                                 const float *y, size_t ldy, float *z, size_t ldz)
{
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx, *yr = y + r * ldy;
		float *zr = z + r * ldz;
		for (size_t c = 0; c < cols; c++)
			zr[c] = alpha * xr[c] + beta * yr[c];
	}
}
STARNN_SIMD_CLONES(add_impl,
                   (size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float beta, const float *y,
                    size_t ldy, float *z, size_t ldz),
                   (rows, cols, alpha, x, ldx, beta, y, ldy, z, ldz))

void starnn_add_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                    float beta, const float *y, size_t ldy, float *z, size_t ldz)
{
	STARNN_SIMD_CALL(add_impl, (rows, cols, alpha, x, ldx, beta, y, ldy, z, ldz));
}
