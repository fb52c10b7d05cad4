/* CPU kernels of relu_fwd / relu_bwd. Row by row so that strided views
 * work; the inner loops are branch-free selects that vectorise (every
 * operand is loaded unconditionally), compiled per instruction set
 * (codelets/cpu/simd.h). No restrict: y may be x, dx may be dy. */
#include "codelets/cpu/simd.h"
#include "codelets/kernels/relu.h"

/* In place, one pointer: the compiler needs no overlap check to vectorise. */
STARNN_SIMD_INLINE void relu_fwd_inplace(size_t rows, size_t cols, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++) {
			float v = yr[c];
			yr[c] = v < 0.0f ? 0.0f : v;
		}
	}
}

STARNN_SIMD_INLINE void relu_bwd_inplace(size_t rows, size_t cols, const float *x, size_t ldx, float *g, size_t ldg)
{
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx;
		float *gr = g + r * ldg;
		for (size_t c = 0; c < cols; c++) {
			float v = gr[c];
			gr[c] = xr[c] > 0.0f ? v : 0.0f;
		}
	}
}

STARNN_SIMD_INLINE void relu_fwd_impl(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy)
{
	if (x == y && ldx == ldy) {
		relu_fwd_inplace(rows, cols, y, ldy);
		return;
	}
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx;
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++) {
			float v = xr[c];
			yr[c] = v < 0.0f ? 0.0f : v; /* NaN is not < 0: it propagates */
		}
	}
}
STARNN_SIMD_CLONES(relu_fwd_impl, (size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy),
                   (rows, cols, x, ldx, y, ldy))

void starnn_relu_fwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy)
{
	STARNN_SIMD_CALL(relu_fwd_impl, (rows, cols, x, ldx, y, ldy));
}

STARNN_SIMD_INLINE void relu_bwd_impl(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy,
                                      size_t lddy, float *dx, size_t lddx)
{
	if (dy == dx && lddy == lddx) {
		relu_bwd_inplace(rows, cols, x, ldx, dx, lddx);
		return;
	}
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx, *dyr = dy + r * lddy;
		float *dxr = dx + r * lddx;
		for (size_t c = 0; c < cols; c++) {
			float g = dyr[c];
			dxr[c] = xr[c] > 0.0f ? g : 0.0f;
		}
	}
}
STARNN_SIMD_CLONES(relu_bwd_impl,
                   (size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy, float *dx,
                    size_t lddx),
                   (rows, cols, x, ldx, dy, lddy, dx, lddx))

void starnn_relu_bwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                         float *dx, size_t lddx)
{
	STARNN_SIMD_CALL(relu_bwd_impl, (rows, cols, x, ldx, dy, lddy, dx, lddx));
}

/* ------------------------------------------------------- mixed precision */

/* 16-bit patterns: magnitude m = bits & 0x7fff; Inf is m == inf (0x7c00 for
 * fp16, 0x7f80 for bf16), NaN m > inf. v < 0: sign set, 0 < m <= inf;
 * v > 0: sign clear, 0 < m <= inf. -0 stays -0 forward, as in fp32. */
STARNN_SIMD_INLINE void relu_fwd_half_impl(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                           uint16_t *y, size_t ldy)
{
	const uint16_t inf = dt == STARNN_FP16 ? 0x7c00u : 0x7f80u;
	for (size_t r = 0; r < rows; r++) {
		const uint16_t *restrict xr = x + r * ldx;
		uint16_t *restrict yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++) {
			uint16_t v = xr[c], m = v & 0x7fffu;
			int neg = (v & 0x8000u) && m != 0 && m <= inf;
			yr[c] = neg ? 0 : v;
		}
	}
}
STARNN_SIMD_CLONES(relu_fwd_half_impl,
                   (starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                    size_t ldy),
                   (dt, rows, cols, x, ldx, y, ldy))

void starnn_relu_fwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                              size_t ldy)
{
	STARNN_SIMD_CALL(relu_fwd_half_impl, (dt, rows, cols, x, ldx, y, ldy));
}

STARNN_SIMD_INLINE void relu_bwd_half_impl(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                           const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx)
{
	const uint16_t inf = dt == STARNN_FP16 ? 0x7c00u : 0x7f80u;
	for (size_t r = 0; r < rows; r++) {
		const uint16_t *restrict xr = x + r * ldx, *restrict dyr = dy + r * lddy;
		uint16_t *restrict dxr = dx + r * lddx;
		for (size_t c = 0; c < cols; c++) {
			uint16_t v = xr[c], m = v & 0x7fffu, g = dyr[c]; /* loaded unconditionally: a select */
			int pos = !(v & 0x8000u) && m != 0 && m <= inf;
			dxr[c] = pos ? g : 0;
		}
	}
}
STARNN_SIMD_CLONES(relu_bwd_half_impl,
                   (starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, const uint16_t *dy,
                    size_t lddy, uint16_t *dx, size_t lddx),
                   (dt, rows, cols, x, ldx, dy, lddy, dx, lddx))

void starnn_relu_bwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                              const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx)
{
	STARNN_SIMD_CALL(relu_bwd_half_impl, (dt, rows, cols, x, ldx, dy, lddy, dx, lddx));
}
