/* CUDA kernels of fill: a 2-D grid over (rows, cols); 16-bit types are
 * stored as their bit patterns. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/fill.h"

template <typename T>
__global__ static void fill_kernel(size_t rows, size_t cols, T value, T *y, size_t ldy)
{
	STARNN_GRID_2D(r, c, rows, cols)
		y[r * ldy + c] = value;
}

extern "C" void starnn_fill_f32_cuda(size_t rows, size_t cols, float value, float *y, size_t ldy, void *stream)
{
	starnn_launch_2d(rows, cols, stream, fill_kernel<float>, rows, cols, value, y, ldy);
}

extern "C" void starnn_fill_16_cuda(size_t rows, size_t cols, uint16_t bits, uint16_t *y, size_t ldy, void *stream)
{
	starnn_launch_2d(rows, cols, stream, fill_kernel<uint16_t>, rows, cols, bits, y, ldy);
}
