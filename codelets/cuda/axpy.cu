/* CUDA kernels of axpy / scale / add: a 2-D grid, x over columns (coalesced)
 * and y over rows, so strided views need no special case. */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/axpy.h"

__global__ static void axpy_kernel(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y,
                                   size_t ldy)
{
	STARNN_GRID_2D(r, c, rows, cols)
		y[r * ldy + c] += alpha * x[r * ldx + c];
}

__global__ static void scale_kernel(size_t rows, size_t cols, float alpha, float *y, size_t ldy)
{
	STARNN_GRID_2D(r, c, rows, cols)
		y[r * ldy + c] *= alpha;
}

__global__ static void add_kernel(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float beta,
                                  const float *y, size_t ldy, float *z, size_t ldz)
{
	STARNN_GRID_2D(r, c, rows, cols)
		z[r * ldz + c] = alpha * x[r * ldx + c] + beta * y[r * ldy + c];
}

extern "C" void starnn_axpy_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y,
                                 size_t ldy, void *stream)
{
	starnn_launch_2d(rows, cols, stream, axpy_kernel, rows, cols, alpha, x, ldx, y, ldy);
}

extern "C" void starnn_scale_cuda(size_t rows, size_t cols, float alpha, float *y, size_t ldy, void *stream)
{
	starnn_launch_2d(rows, cols, stream, scale_kernel, rows, cols, alpha, y, ldy);
}

extern "C" void starnn_add_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float beta,
                                const float *y, size_t ldy, float *z, size_t ldz, void *stream)
{
	starnn_launch_2d(rows, cols, stream, add_kernel, rows, cols, alpha, x, ldx, beta, y, ldy, z, ldz);
}
