/* CUDA kernels of batch normalisation (see codelets/kernels/batchnorm.h).
 * Reductions (bn_stats, bn_bwd_reduce): grid.y over channels, grid.x over
 * chunks of the channel's n*inner values; each thread sums in double, the
 * block reduces by warp shuffles and adds its result to the slot with a
 * double atomicAdd (sm_60+). Elementwise steps: grid.y over (sample,
 * channel) planes, grid.x over the plane, the per-channel coefficients
 * computed once per plane. */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/batchnorm.h"

#define RED_THREADS 256

__device__ static inline double warp_sum(double v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}

/* Sums a and b over the block (blockDim.x a multiple of 32); thread 0 gets
 * the totals. Every thread of the block must call it. */
__device__ static inline void block_sum2(double &a, double &b)
{
	__shared__ double sa[32], sb[32];
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	a = warp_sum(a);
	b = warp_sum(b);
	if (lane == 0) {
		sa[w] = a;
		sb[w] = b;
	}
	__syncthreads();
	if (w == 0) {
		a = lane < nw ? sa[lane] : 0.0;
		b = lane < nw ? sb[lane] : 0.0;
		a = warp_sum(a);
		b = warp_sum(b);
	}
	__syncthreads(); /* sa / sb are reused by the next channel */
}

__global__ static void stats_kernel(size_t n, size_t c, size_t inner, const float *x, size_t ldx, double *sums)
{
	size_t per = n * inner;
	for (size_t k = blockIdx.y; k < c; k += gridDim.y) {
		double a = 0, b = 0;
		for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < per; j += (size_t)gridDim.x * blockDim.x) {
			size_t r = j / inner, i = j - r * inner;
			double v = x[r * ldx + k * inner + i];
			a += v;
			b += v * v;
		}
		block_sum2(a, b);
		if (threadIdx.x == 0) {
			atomicAdd(&sums[k], a);
			atomicAdd(&sums[c + k], b);
		}
	}
}

__global__ static void bwd_reduce_kernel(size_t n, size_t c, size_t inner, const float *x, size_t ldx,
                                         const float *dy, size_t lddy, const float *y, size_t ldy, const float *mean,
                                         double *sums)
{
	size_t per = n * inner;
	for (size_t k = blockIdx.y; k < c; k += gridDim.y) {
		double a = 0, b = 0, m = mean[k];
		for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < per; j += (size_t)gridDim.x * blockDim.x) {
			size_t r = j / inner, i = j - r * inner, col = k * inner + i;
			double g = (!y || y[r * ldy + col] > 0) ? dy[r * lddy + col] : 0.0f;
			a += g;
			b += g * ((double)x[r * ldx + col] - m);
		}
		block_sum2(a, b);
		if (threadIdx.x == 0) {
			atomicAdd(&sums[k], a);
			atomicAdd(&sums[c + k], b);
		}
	}
}

__device__ static inline void slot_totals(const double *slots, size_t nslots, size_t lds, size_t c, size_t k,
                                          double *s1, double *s2)
{
	double a = 0, b = 0;
	for (size_t j = 0; j < nslots; j++) {
		a += slots[j * lds + k];
		b += slots[j * lds + c + k];
	}
	*s1 = a;
	*s2 = b;
}

__global__ static void finalize_kernel(size_t c, size_t nslots, const double *slots, size_t lds, double count,
                                       float eps, float momentum, int update_running, float *mean, float *invstd,
                                       float *running_mean, float *running_var)
{
	STARNN_GRID_1D(k, c) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		double m = s1 / count, var = s2 / count - m * m;
		if (var < 0)
			var = 0;
		mean[k] = (float)m;
		invstd[k] = (float)(1.0 / sqrt(var + (double)eps));
		if (update_running) {
			double unbiased = count > 1 ? var * count / (count - 1) : var;
			running_mean[k] = (float)((1.0 - momentum) * running_mean[k] + (double)momentum * m);
			running_var[k] = (float)((1.0 - momentum) * running_var[k] + (double)momentum * unbiased);
		}
	}
}

__global__ static void bwd_params_kernel(size_t c, size_t nslots, const double *slots, size_t lds,
                                         const float *invstd, float beta, float *dgamma, float *dbeta)
{
	STARNN_GRID_1D(k, c) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		float dg = (float)(invstd[k] * s2), db = (float)s1;
		dgamma[k] = beta == 0 ? dg : dg + beta * dgamma[k];
		dbeta[k] = beta == 0 ? db : db + beta * dbeta[k];
	}
}

#define PLANE_LOOP(p, r, k, n, c)                                                                  \
	for (size_t p = blockIdx.y; p < (n) * (c); p += gridDim.y)                                 \
		for (size_t r = p / (c), k = p - r * (c), once_ = 1; once_; once_ = 0)

#define INNER_LOOP(i, inner) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (inner); i += (size_t)gridDim.x * blockDim.x)

__global__ static void apply_kernel(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *mean,
                                    const float *stat, int var_given, float eps, const float *gamma,
                                    const float *beta, int relu, float *y, size_t ldy)
{
	PLANE_LOOP(p, r, k, n, c) {
		double istd = var_given ? 1.0 / sqrt((double)stat[k] + eps) : (double)stat[k];
		const float m = mean[k], s = (float)(gamma[k] * istd), b = beta[k];
		const float *xp = x + r * ldx + k * inner;
		float *yp = y + r * ldy + k * inner;
		INNER_LOOP(i, inner) {
			float v = (xp[i] - m) * s + b;
			yp[i] = relu && v < 0 ? 0.0f : v;
		}
	}
}

__global__ static void bwd_apply_kernel(size_t n, size_t c, size_t inner, const float *x, size_t ldx,
                                        const float *dy, size_t lddy, const float *y, size_t ldy, const float *mean,
                                        const float *invstd, const float *gamma, size_t nslots, const double *slots,
                                        size_t lds, double count, float beta, float *dx, size_t lddx)
{
	PLANE_LOOP(p, r, k, n, c) {
		double s1, s2;
		slot_totals(slots, nslots, lds, c, k, &s1, &s2);
		double istd = invstd[k], ad = gamma[k] * istd;
		const float a = (float)ad, kk = (float)(-ad * s1 / count), d = (float)(ad * istd * istd * s2 / count);
		const float m = mean[k];
		const float *xp = x + r * ldx + k * inner, *gp = dy + r * lddy + k * inner;
		const float *yp = y ? y + r * ldy + k * inner : NULL;
		float *dp = dx + r * lddx + k * inner;
		INNER_LOOP(i, inner) {
			float g = (!yp || yp[i] > 0) ? gp[i] : 0.0f;
			float v = a * g + kk - d * (xp[i] - m);
			dp[i] = beta == 0 ? v : v + beta * dp[i];
		}
	}
}

/* Geometry of the reductions: up to ~1024 blocks in all. */
static void reduce_grid(size_t n, size_t c, size_t inner, dim3 *grid)
{
	unsigned gy = (unsigned)(c < 65535 ? c : 65535);
	size_t per = n * inner, want = (per + RED_THREADS * 4 - 1) / (RED_THREADS * 4);
	size_t cap = 1024 / gy ? 1024 / gy : 1;
	*grid = dim3((unsigned)(want < 1 ? 1 : want < cap ? want : cap), gy);
}

/* Geometry of the plane loops. */
static void plane_grid(size_t n, size_t c, size_t inner, dim3 *grid, dim3 *block)
{
	unsigned t = inner >= 256 ? 256 : (unsigned)((inner + 31) / 32 * 32);
	size_t gx = (inner + t - 1) / t, planes = n * c;
	*block = dim3(t);
	*grid = dim3((unsigned)(gx < 64 ? gx : 64), (unsigned)(planes < 65535 ? planes : 65535));
}

extern "C" void starnn_bn_stats_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx, double *sums,
                                     int accumulate, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	if (!accumulate && cudaMemsetAsync(sums, 0, 2 * c * sizeof *sums, s) != cudaSuccess)
		return; /* the error stays for the caller's cudaGetLastError() */
	if (n == 0 || c == 0 || inner == 0)
		return;
	dim3 grid;
	reduce_grid(n, c, inner, &grid);
	stats_kernel<<<grid, RED_THREADS, 0, s>>>(n, c, inner, x, ldx, sums);
}

extern "C" void starnn_bn_finalize_cuda(size_t c, size_t nslots, const double *slots, size_t lds, double count,
                                        float eps, float momentum, int update_running, float *mean, float *invstd,
                                        float *running_mean, float *running_var, void *stream)
{
	starnn_launch_1d(c, stream, finalize_kernel, c, nslots, slots, lds, count, eps, momentum, update_running, mean,
	                 invstd, running_mean, running_var);
}

extern "C" void starnn_bn_apply_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *mean,
                                     const float *stat, int var_given, float eps, const float *gamma,
                                     const float *beta, int relu, float *y, size_t ldy, void *stream)
{
	if (n == 0 || c == 0 || inner == 0)
		return;
	dim3 grid, block;
	plane_grid(n, c, inner, &grid, &block);
	apply_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(n, c, inner, x, ldx, mean, stat, var_given, eps, gamma,
	                                                       beta, relu, y, ldy);
}

extern "C" void starnn_bn_bwd_reduce_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx,
                                          const float *dy, size_t lddy, const float *y, size_t ldy, const float *mean,
                                          double *sums, int accumulate, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	if (!accumulate && cudaMemsetAsync(sums, 0, 2 * c * sizeof *sums, s) != cudaSuccess)
		return;
	if (n == 0 || c == 0 || inner == 0)
		return;
	dim3 grid;
	reduce_grid(n, c, inner, &grid);
	bwd_reduce_kernel<<<grid, RED_THREADS, 0, s>>>(n, c, inner, x, ldx, dy, lddy, y, ldy, mean, sums);
}

__global__ static void slot_add_kernel(size_t n, const double *slot, double *total)
{
	STARNN_GRID_1D(i, n) total[i] += slot[i];
}

extern "C" void starnn_bn_slot_add_cuda(size_t n, const double *slot, double *total, void *stream)
{
	starnn_launch_1d(n, stream, slot_add_kernel, n, slot, total);
}

extern "C" void starnn_bn_bwd_params_cuda(size_t c, size_t nslots, const double *slots, size_t lds,
                                          const float *invstd, float beta, float *dgamma, float *dbeta, void *stream)
{
	starnn_launch_1d(c, stream, bwd_params_kernel, c, nslots, slots, lds, invstd, beta, dgamma, dbeta);
}

extern "C" void starnn_bn_bwd_apply_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx,
                                         const float *dy, size_t lddy, const float *y, size_t ldy, const float *mean,
                                         const float *invstd, const float *gamma, size_t nslots, const double *slots,
                                         size_t lds, double count, float beta, float *dx, size_t lddx, void *stream)
{
	if (n == 0 || c == 0 || inner == 0)
		return;
	dim3 grid, block;
	plane_grid(n, c, inner, &grid, &block);
	bwd_apply_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(n, c, inner, x, ldx, dy, lddy, y, ldy, mean, invstd,
	                                                           gamma, nslots, slots, lds, count, beta, dx, lddx);
}
