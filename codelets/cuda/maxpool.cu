/* CUDA kernels of maxpool (2x2, stride 2): one thread per output element
 * (forward) or per input element (backward: it recomputes its window's
 * choice, so every dx element is written by exactly one thread, odd
 * remainders included, without atomics). A 2-D grid: y over samples, x over
 * the elements of a sample (coalesced). The selection rule is the CPU
 * kernel's (codelets/maxpool.h). */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/maxpool.h"

__device__ static inline bool take(float v, float m)
{
	return v > m || v != v;
}

__device__ static inline float pick(const float *x0, const float *x1, int *k)
{
	float m = x0[0];
	int i = 0;
	if (take(x0[1], m))
		m = x0[1], i = 1;
	if (take(x1[0], m))
		m = x1[0], i = 2;
	if (take(x1[1], m))
		m = x1[1], i = 3;
	*k = i;
	return m;
}

__global__ static void maxpool_fwd_kernel(size_t n, size_t cols, size_t h, size_t w, const float *x, size_t ldx,
                                          float *y, size_t ldy)
{
	size_t ho = h / 2, wo = w / 2;
	STARNN_GRID_2D(r, e, n, cols)
	{
		size_t j = e % wo, t = e / wo, i = t % ho, ch = t / ho;
		const float *x0 = x + r * ldx + ch * h * w + 2 * i * w + 2 * j;
		int k;
		y[r * ldy + e] = pick(x0, x0 + w, &k);
	}
}

__global__ static void maxpool_bwd_kernel(size_t n, size_t cols, size_t h, size_t w, const float *x, size_t ldx,
                                          const float *dy, size_t lddy, float beta, float *dx, size_t lddx)
{
	size_t ho = h / 2, wo = w / 2;
	STARNN_GRID_2D(r, e, n, cols)
	{
		size_t q = e % w, t = e / w, p = t % h, ch = t / h;
		size_t i = p / 2, j = q / 2;
		float v = 0.0f;
		if (i < ho && j < wo) {
			const float *x0 = x + r * ldx + ch * h * w + 2 * i * w + 2 * j;
			int k;
			(void)pick(x0, x0 + w, &k);
			if (k == (int)((p & 1) * 2 + (q & 1)))
				v = dy[r * lddy + (ch * ho + i) * wo + j];
		}
		float *d = dx + r * lddx + e;
		*d = beta == 0.0f ? v : beta * *d + v;
	}
}

extern "C" void starnn_maxpool_fwd_cuda(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx,
                                        float *y, size_t ldy, void *stream)
{
	size_t cols = c * (h / 2) * (w / 2);
	starnn_launch_2d(n, cols, stream, maxpool_fwd_kernel, n, cols, h, w, x, ldx, y, ldy);
}

extern "C" void starnn_maxpool_bwd_cuda(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx,
                                        const float *dy, size_t lddy, float beta, float *dx, size_t lddx,
                                        void *stream)
{
	size_t cols = c * h * w;
	starnn_launch_2d(n, cols, stream, maxpool_bwd_kernel, n, cols, h, w, x, ldx, dy, lddy, beta, dx, lddx);
}
