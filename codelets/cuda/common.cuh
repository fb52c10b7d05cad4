/* Launch helpers shared by the CUDA kernels (no StarPU here). */
#ifndef STARNN_CUDA_COMMON_CUH
#define STARNN_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>

/* Grid-stride loops over a rows x cols index space: x covers columns so that
 * consecutive threads touch consecutive addresses. */
#define STARNN_GRID_2D(r, c, rows, cols)                                                        \
	for (size_t r = blockIdx.y * (size_t)blockDim.y + threadIdx.y; r < (rows); r += (size_t)gridDim.y * blockDim.y) \
		for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < (cols); c += (size_t)gridDim.x * blockDim.x)

#define STARNN_GRID_1D(i, n) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

static inline unsigned starnn_blocks(size_t n, unsigned threads, unsigned max_blocks)
{
	size_t b = (n + threads - 1) / threads;
	if (b < 1)
		b = 1;
	return (unsigned)(b < max_blocks ? b : max_blocks);
}

template <typename Kernel, typename... Args>
static inline void starnn_launch_2d(size_t rows, size_t cols, void *stream, Kernel kernel, Args... args)
{
	if (rows == 0 || cols == 0)
		return;
	dim3 block(cols >= 128 ? 128 : 32, cols >= 128 ? 2 : 8);
	dim3 grid(starnn_blocks(cols, block.x, 4096), starnn_blocks(rows, block.y, 65535));
	kernel<<<grid, block, 0, (cudaStream_t)stream>>>(args...);
}

template <typename Kernel, typename... Args>
static inline void starnn_launch_1d(size_t n, void *stream, Kernel kernel, Args... args)
{
	if (n == 0)
		return;
	kernel<<<starnn_blocks(n, 256, 65535), 256, 0, (cudaStream_t)stream>>>(args...);
}

#endif
