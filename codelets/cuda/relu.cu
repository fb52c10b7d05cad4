/* CUDA kernels of relu_fwd / relu_bwd: a 2-D grid over (rows, cols), so
 * strided views need no special case. Same selects as the CPU kernels. */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/relu.h"

__global__ static void relu_fwd_kernel(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy)
{
	STARNN_GRID_2D(r, c, rows, cols) {
		float v = x[r * ldx + c];
		y[r * ldy + c] = v < 0.0f ? 0.0f : v;
	}
}

__global__ static void relu_bwd_kernel(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy,
                                       size_t lddy, float *dx, size_t lddx)
{
	STARNN_GRID_2D(r, c, rows, cols) {
		float g = dy[r * lddy + c];
		dx[r * lddx + c] = x[r * ldx + c] > 0.0f ? g : 0.0f;
	}
}

extern "C" void starnn_relu_fwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy,
                                     void *stream)
{
	starnn_launch_2d(rows, cols, stream, relu_fwd_kernel, rows, cols, x, ldx, y, ldy);
}

extern "C" void starnn_relu_bwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy,
                                     size_t lddy, float *dx, size_t lddx, void *stream)
{
	starnn_launch_2d(rows, cols, stream, relu_bwd_kernel, rows, cols, x, ldx, dy, lddy, dx, lddx);
}

/* ------------------------------------------------------- mixed precision */

/* Bit-pattern selects, as the CPU kernels (codelets/cpu/relu.c). */
__global__ static void relu_fwd_half_kernel(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                            size_t ldy, uint16_t inf)
{
	STARNN_GRID_2D(r, c, rows, cols) {
		uint16_t v = x[r * ldx + c], m = v & 0x7fffu;
		bool neg = (v & 0x8000u) && m != 0 && m <= inf;
		y[r * ldy + c] = neg ? (uint16_t)0 : v;
	}
}

__global__ static void relu_bwd_half_kernel(size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                            const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx, uint16_t inf)
{
	STARNN_GRID_2D(r, c, rows, cols) {
		uint16_t v = x[r * ldx + c], m = v & 0x7fffu;
		bool pos = !(v & 0x8000u) && m != 0 && m <= inf;
		dx[r * lddx + c] = pos ? dy[r * lddy + c] : (uint16_t)0;
	}
}

extern "C" void starnn_relu_fwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                          uint16_t *y, size_t ldy, void *stream)
{
	uint16_t inf = dt == STARNN_FP16 ? 0x7c00u : 0x7f80u;
	starnn_launch_2d(rows, cols, stream, relu_fwd_half_kernel, rows, cols, x, ldx, y, ldy, inf);
}

extern "C" void starnn_relu_bwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                          const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx, void *stream)
{
	uint16_t inf = dt == STARNN_FP16 ? 0x7c00u : 0x7f80u;
	starnn_launch_2d(rows, cols, stream, relu_bwd_half_kernel, rows, cols, x, ldx, dy, lddy, dx, lddx, inf);
}
