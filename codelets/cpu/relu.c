/* CPU kernels of relu_fwd / relu_bwd. Row by row so that strided views
 * work; the inner loops are branch-free selects that vectorise (every
 * operand is loaded unconditionally). No restrict: y may be x, dx may be dy. */
#include "codelets/relu.h"

/* In place, one pointer: the compiler needs no overlap check to vectorise. */
static void relu_fwd_inplace(size_t rows, size_t cols, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++) {
		float *yr = y + r * ldy;
		for (size_t c = 0; c < cols; c++) {
			float v = yr[c];
			yr[c] = v < 0.0f ? 0.0f : v;
		}
	}
}

static void relu_bwd_inplace(size_t rows, size_t cols, const float *x, size_t ldx, float *g, size_t ldg)
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

void starnn_relu_fwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy)
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

void starnn_relu_bwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                         float *dx, size_t lddx)
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
