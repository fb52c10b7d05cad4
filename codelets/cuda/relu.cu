/* CUDA kernels of relu_fwd / relu_bwd: a 2-D grid over (rows, cols), so
 * strided views need no special case. Same selects as the CPU kernels. */
#include <cuda_runtime.h>

#include "codelets/relu.h"
#include "codelets/cuda/common.cuh"

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
