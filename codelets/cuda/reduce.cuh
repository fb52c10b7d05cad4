/* A full reduction to one float, accumulated in double, shared by the
 * reducing kernels (reduce.cu, mse.cu). No StarPU here.
 *
 * Two passes on the caller's stream: up to STARNN_REDUCE_MAX_BLOCKS blocks
 * each reduce a grid-stride share of a rows x cols index space to one double
 * partial (a stream-ordered scratch buffer from cudaMallocAsync: safe when
 * several tasks run at once on streams of the same GPU); then one block sums
 * the partials in a fixed order and writes
 *   out = beta * out + scale * sum        (out not read when beta == 0).
 * The result is deterministic for a given shape (no atomics).
 *
 * F is a functor with `__device__ double operator()(size_t r, size_t c) const`
 * giving the term of element (r, c). */
#ifndef STARNN_CUDA_REDUCE_CUH
#define STARNN_CUDA_REDUCE_CUH

#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"

#define STARNN_REDUCE_THREADS 256
#define STARNN_REDUCE_MAX_BLOCKS 1024u
#define STARNN_REDUCE_FINAL_THREADS 1024

/* Sum of v over the block, valid in thread 0. blockDim.x must be a multiple
 * of 32 (at most 1024); call at most once per kernel (shared scratch). */
__device__ static inline double starnn_block_sum(double v)
{
	__shared__ double warp_sums[32];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
	if (lane == 0)
		warp_sums[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0.0;
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_down_sync(0xffffffffu, v, o);
	}
	return v;
}

template <typename F>
__global__ static void starnn_reduce_partials_kernel(size_t rows, size_t cols, F f, double *partials)
{
	double acc = 0;
	for (size_t r = blockIdx.y; r < rows; r += gridDim.y)
		for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < cols; c += (size_t)gridDim.x * blockDim.x)
			acc += f(r, c);
	acc = starnn_block_sum(acc);
	if (threadIdx.x == 0)
		partials[blockIdx.y * gridDim.x + blockIdx.x] = acc;
}

__global__ static void starnn_reduce_final_kernel(const double *partials, unsigned n, double scale, float beta,
                                                  float *out)
{
	double acc = 0;
	for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
		acc += partials[i];
	acc = starnn_block_sum(acc);
	if (threadIdx.x == 0) {
		double s = scale * acc;
		*out = (float)(beta != 0.0f ? (double)beta * (double)*out + s : s);
	}
}

/* Returns 0 or a cudaError_t code. */
template <typename F>
static inline int starnn_reduce_launch(size_t rows, size_t cols, F f, double scale, float beta, float *out,
                                       void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	if (rows == 0 || cols == 0) {
		/* Empty sum: out = beta * out. */
		starnn_reduce_final_kernel<<<1, 32, 0, s>>>(NULL, 0, scale, beta, out);
		return (int)cudaGetLastError();
	}
	unsigned gx = starnn_blocks(cols, STARNN_REDUCE_THREADS, STARNN_REDUCE_MAX_BLOCKS);
	size_t gy = STARNN_REDUCE_MAX_BLOCKS / gx;
	if (gy > rows)
		gy = rows;
	unsigned n = gx * (unsigned)gy;
	double *partials = NULL;
	cudaError_t err = cudaMallocAsync((void **)&partials, n * sizeof *partials, s);
	if (err != cudaSuccess)
		return (int)err;
	starnn_reduce_partials_kernel<<<dim3(gx, (unsigned)gy), STARNN_REDUCE_THREADS, 0, s>>>(rows, cols, f, partials);
	starnn_reduce_final_kernel<<<1, STARNN_REDUCE_FINAL_THREADS, 0, s>>>(partials, n, scale, beta, out);
	err = cudaGetLastError();
	cudaError_t ferr = cudaFreeAsync(partials, s);
	return (int)(err != cudaSuccess ? err : ferr);
}

#endif
