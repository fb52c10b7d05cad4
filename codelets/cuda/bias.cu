/* CUDA kernels of bias_add / bias_grad.
 * bias_add: a 2-D elementwise grid over y (n x channels*inner).
 * bias_grad: one block per channel (grid-stride over channels); the block's
 * threads sum that channel's n * inner elements, then reduce with warp
 * shuffles and a shared array of per-warp sums. No atomics: each db[c] is
 * written by one thread, so the result is deterministic. */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/cuda/half.cuh"
#include "codelets/kernels/bias.h"

__global__ static void bias_add_kernel(size_t n, size_t cols, size_t inner, const float *b, float *y, size_t ldy)
{
	STARNN_GRID_2D(r, k, n, cols)
		y[r * ldy + k] += b[k / inner];
}

#define GRAD_THREADS 256
#define WARP 32

__device__ static float warp_sum(float v)
{
	for (int off = WARP / 2; off > 0; off /= 2)
		v += __shfl_down_sync(0xffffffffu, v, off);
	return v;
}

__global__ static void __launch_bounds__(GRAD_THREADS)
bias_grad_kernel(size_t n, size_t channels, size_t inner, const float *dy, size_t lddy, float beta, float *db)
{
	__shared__ float warp_sums[GRAD_THREADS / WARP];
	const unsigned lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
	const size_t count = n * inner;
	/* c depends on blockIdx only: every thread of the block takes the same
	 * trips, so the __syncthreads() below are reached by all. */
	for (size_t c = blockIdx.x; c < channels; c += gridDim.x) {
		const float *base = dy + c * inner;
		float s = 0.0f;
		for (size_t j = threadIdx.x; j < count; j += GRAD_THREADS) {
			size_t r = j / inner, i = j - r * inner;
			s += base[r * lddy + i];
		}
		s = warp_sum(s);
		if (lane == 0)
			warp_sums[warp] = s;
		__syncthreads();
		if (warp == 0) {
			s = lane < GRAD_THREADS / WARP ? warp_sums[lane] : 0.0f;
			s = warp_sum(s);
			if (lane == 0)
				db[c] = beta == 0.0f ? s : beta * db[c] + s;
		}
		__syncthreads(); /* warp_sums is reused by the next channel */
	}
}

extern "C" void starnn_bias_add_cuda(size_t n, size_t channels, size_t inner, const float *b, float *y, size_t ldy,
                                     void *stream)
{
	size_t cols = channels * inner;
	if (inner == 0)
		return;
	starnn_launch_2d(n, cols, stream, bias_add_kernel, n, cols, inner, b, y, ldy);
}

extern "C" void starnn_bias_grad_cuda(size_t n, size_t channels, size_t inner, const float *dy, size_t lddy,
                                      float beta, float *db, void *stream)
{
	if (channels == 0)
		return;
	unsigned blocks = channels < 65535 ? (unsigned)channels : 65535u;
	/* n * inner == 0 still writes db = beta * db (the empty sum is 0). */
	bias_grad_kernel<<<blocks, GRAD_THREADS, 0, (cudaStream_t)stream>>>(n, channels, inner, dy, lddy, beta, db);
}

/* ------------------------------------------------------- mixed precision */

template <typename T>
__global__ static void bias_add_half_kernel(size_t n, size_t cols, size_t inner, const float *b, T *y, size_t ldy)
{
	STARNN_GRID_2D(r, k, n, cols)
		starnn_store(&y[r * ldy + k], starnn_to_f32(y[r * ldy + k]) + b[k / inner]);
}

/* As bias_grad_kernel, summing the widened 16-bit values in fp32. */
template <typename T>
__global__ static void __launch_bounds__(GRAD_THREADS)
bias_grad_half_kernel(size_t n, size_t channels, size_t inner, const T *dy, size_t lddy, float beta, float *db)
{
	__shared__ float warp_sums[GRAD_THREADS / WARP];
	const unsigned lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
	const size_t count = n * inner;
	for (size_t c = blockIdx.x; c < channels; c += gridDim.x) {
		const T *base = dy + c * inner;
		float s = 0.0f;
		for (size_t j = threadIdx.x; j < count; j += GRAD_THREADS) {
			size_t r = j / inner, i = j - r * inner;
			s += starnn_to_f32(base[r * lddy + i]);
		}
		s = warp_sum(s);
		if (lane == 0)
			warp_sums[warp] = s;
		__syncthreads();
		if (warp == 0) {
			s = lane < GRAD_THREADS / WARP ? warp_sums[lane] : 0.0f;
			s = warp_sum(s);
			if (lane == 0)
				db[c] = beta == 0.0f ? s : beta * db[c] + s;
		}
		__syncthreads();
	}
}

extern "C" void starnn_bias_add_half_cuda(starnn_dtype dt, size_t n, size_t channels, size_t inner, const float *b,
                                          void *y, size_t ldy, void *stream)
{
	size_t cols = channels * inner;
	if (inner == 0)
		return;
	if (dt == STARNN_FP16)
		starnn_launch_2d(n, cols, stream, bias_add_half_kernel<__half>, n, cols, inner, b, (__half *)y, ldy);
	else
		starnn_launch_2d(n, cols, stream, bias_add_half_kernel<__nv_bfloat16>, n, cols, inner, b,
		                 (__nv_bfloat16 *)y, ldy);
}

extern "C" void starnn_bias_grad_half_cuda(starnn_dtype dt, size_t n, size_t channels, size_t inner, const void *dy,
                                           size_t lddy, float beta, float *db, void *stream)
{
	if (channels == 0)
		return;
	unsigned blocks = channels < 65535 ? (unsigned)channels : 65535u;
	cudaStream_t s = (cudaStream_t)stream;
	if (dt == STARNN_FP16)
		bias_grad_half_kernel<__half><<<blocks, GRAD_THREADS, 0, s>>>(n, channels, inner, (const __half *)dy, lddy,
		                                                            beta, db);
	else
		bias_grad_half_kernel<__nv_bfloat16><<<blocks, GRAD_THREADS, 0, s>>>(
			n, channels, inner, (const __nv_bfloat16 *)dy, lddy, beta, db);
}
