/* CUDA kernels of convt2d (2x2, stride 2): strided-batched cuBLAS sgemm over
 * the samples of a chunk, plus own kernels that scatter Z into y (adding the
 * bias), gather dy into G, and reduce dy into db. The Z / G workspace (one
 * chunk of samples, <= 64 MiB unless one sample needs more) comes from
 * cudaMallocAsync on the worker's stream, so nothing synchronises.
 *
 * Row-major to cuBLAS (column-major): a row-major r x c matrix with ld is
 * the column-major c x r matrix with the same ld, so the row-major product
 * C = A B is computed as the column-major C^T = B^T A^T (see gemm.cu).
 * Formulas and layouts: codelets/convt2d.h. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "codelets/convt2d.h"
#include "codelets/cuda/common.cuh"
#include "runtime/error.h"

/* Element e of one sample of y / dy (o*4*h*w of them) <-> its place in the
 * sample's Z / G (4o x h*w): row o*4 + a*2 + b, column i*w + j. */
__device__ static inline size_t z_index(size_t e, size_t h, size_t w)
{
	size_t hw4 = 4 * h * w, oc = e / hw4, rem = e % hw4, p = rem / (2 * w), q = rem % (2 * w);
	return (oc * 4 + (p & 1) * 2 + (q & 1)) * (h * w) + (p / 2) * w + q / 2;
}

__global__ static void scatter_kernel(size_t rows, size_t cols, size_t h, size_t w, const float *z,
                                      const float *bias, float *y, size_t ldy)
{
	STARNN_GRID_2D(r, e, rows, cols)
		y[r * ldy + e] = z[r * cols + z_index(e, h, w)] + bias[e / (4 * h * w)];
}

__global__ static void gather_kernel(size_t rows, size_t cols, size_t h, size_t w, const float *dy, size_t lddy,
                                     float *g)
{
	STARNN_GRID_2D(r, e, rows, cols)
		g[r * cols + z_index(e, h, w)] = dy[r * lddy + e];
}

/* One block per output channel: db[o] = beta db[o] + sum of its planes. */
__global__ static void bias_grad_kernel(size_t n, size_t hw4, const float *dy, size_t lddy, float beta, float *db)
{
	__shared__ float part[256];
	size_t oc = blockIdx.x;
	float s = 0.0f;
	for (size_t r = 0; r < n; r++) {
		const float *p = dy + r * lddy + oc * hw4;
		for (size_t k = threadIdx.x; k < hw4; k += blockDim.x)
			s += p[k];
	}
	part[threadIdx.x] = s;
	__syncthreads();
	for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
		if (threadIdx.x < stride)
			part[threadIdx.x] += part[threadIdx.x + stride];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		db[oc] = beta == 0.0f ? part[0] : beta * db[oc] + part[0];
}

/* Samples per chunk so that the workspace stays <= 64 MiB (at least 1). */
static size_t chunk_samples(size_t n, size_t per_sample)
{
	size_t nb = ((size_t)64 << 20) / (per_sample * sizeof(float));
	if (nb < 1)
		nb = 1;
	return nb < n ? nb : n;
}

static int workspace(const char *op, float **ws, size_t elems, cudaStream_t stream)
{
	cudaError_t err = cudaMallocAsync((void **)ws, elems * sizeof(float), stream);
	if (err != cudaSuccess) {
		starnn_defer_error(STARNN_ECUDA, "%s: cudaMallocAsync of %zu bytes failed: %s", op,
		                   elems * sizeof(float), cudaGetErrorString(err));
		return STARNN_ECUDA;
	}
	return 0;
}

static int blas_failed(const char *op, const char *what, cublasStatus_t st, float *ws, cudaStream_t stream)
{
	starnn_defer_error(STARNN_ECUDA, "%s: %s failed: %s", op, what, cublasGetStatusString(st));
	cudaFreeAsync(ws, stream);
	return STARNN_ECUDA;
}

extern "C" int starnn_convt2d_fwd_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x,
                                       size_t ldx, const float *wt, size_t ldw, const float *bias, float *y,
                                       size_t ldy, void *cublas_handle, void *stream)
{
	cublasHandle_t hdl = (cublasHandle_t)cublas_handle;
	cudaStream_t st = (cudaStream_t)stream;
	size_t hw = h * w, o4 = 4 * o, per = o4 * hw, nb = chunk_samples(n, per);
	float *z;
	if (workspace("convt2d_fwd", &z, nb * per, st))
		return STARNN_ECUDA;
	const float one = 1.0f, zero = 0.0f;
	for (size_t s0 = 0; s0 < n; s0 += nb) {
		size_t cnt = n - s0 < nb ? n - s0 : nb;
		/* Z_n^T (hw x o4) = x_n^T (hw x c) (w^T)^T, w^T read from w (o4 x c col-major, T). */
		cublasStatus_t bs = cublasSgemmStridedBatched(
			hdl, CUBLAS_OP_N, CUBLAS_OP_T, (int)hw, (int)o4, (int)c, &one, x + s0 * ldx, (int)hw,
			(long long)ldx, wt, (int)ldw, 0, &zero, z, (int)hw, (long long)per, (int)cnt);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return blas_failed("convt2d_fwd", "cublasSgemmStridedBatched", bs, z, st);
		starnn_launch_2d(cnt, per, stream, scatter_kernel, cnt, per, h, w, (const float *)z, bias,
		                 y + s0 * ldy, ldy);
	}
	cudaFreeAsync(z, st);
	return 0;
}

extern "C" int starnn_convt2d_bwd_data_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *wt,
                                            size_t ldw, const float *dy, size_t lddy, float beta, float *dx,
                                            size_t lddx, void *cublas_handle, void *stream)
{
	cublasHandle_t hdl = (cublasHandle_t)cublas_handle;
	cudaStream_t st = (cudaStream_t)stream;
	size_t hw = h * w, o4 = 4 * o, per = o4 * hw, nb = chunk_samples(n, per);
	float *g;
	if (workspace("convt2d_bwd_data", &g, nb * per, st))
		return STARNN_ECUDA;
	const float one = 1.0f;
	for (size_t s0 = 0; s0 < n; s0 += nb) {
		size_t cnt = n - s0 < nb ? n - s0 : nb;
		starnn_launch_2d(cnt, per, stream, gather_kernel, cnt, per, h, w, dy + s0 * lddy, lddy, g);
		/* dx_n^T (hw x c) = G_n^T (hw x o4) w^T (o4 x c), both read as stored (N, N). */
		cublasStatus_t bs = cublasSgemmStridedBatched(
			hdl, CUBLAS_OP_N, CUBLAS_OP_N, (int)hw, (int)c, (int)o4, &one, g, (int)hw, (long long)per, wt,
			(int)ldw, 0, &beta, dx + s0 * lddx, (int)hw, (long long)lddx, (int)cnt);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return blas_failed("convt2d_bwd_data", "cublasSgemmStridedBatched", bs, g, st);
	}
	cudaFreeAsync(g, st);
	return 0;
}

extern "C" int starnn_convt2d_bwd_weight_cuda(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x,
                                              size_t ldx, const float *dy, size_t lddy, float beta, float *dw,
                                              size_t lddw, float *db, void *cublas_handle, void *stream)
{
	cublasHandle_t hdl = (cublasHandle_t)cublas_handle;
	cudaStream_t st = (cudaStream_t)stream;
	size_t hw = h * w, o4 = 4 * o, per = o4 * hw, nb = chunk_samples(n, per);
	float *g;
	if (workspace("convt2d_bwd_weight", &g, nb * per, st))
		return STARNN_ECUDA;
	const float one = 1.0f;
	float bw = beta;
	for (size_t s0 = 0; s0 < n; s0 += nb) {
		size_t cnt = n - s0 < nb ? n - s0 : nb;
		starnn_launch_2d(cnt, per, stream, gather_kernel, cnt, per, h, w, dy + s0 * lddy, lddy, g);
		for (size_t r = 0; r < cnt; r++) {
			/* dw^T (o4 x c) (+)= G_n (o4 x hw, stored hw x o4: T) x_n^T (hw x c: N). */
			cublasStatus_t bs = cublasSgemm(hdl, CUBLAS_OP_T, CUBLAS_OP_N, (int)o4, (int)c, (int)hw, &one,
			                                g + r * per, (int)hw, x + (s0 + r) * ldx, (int)hw, &bw, dw,
			                                (int)lddw);
			if (bs != CUBLAS_STATUS_SUCCESS)
				return blas_failed("convt2d_bwd_weight", "cublasSgemm", bs, g, st);
			bw = 1.0f;
		}
	}
	cudaFreeAsync(g, st);
	bias_grad_kernel<<<(unsigned)o, 256, 0, st>>>(n, 4 * hw, dy, lddy, beta, db);
	return 0;
}
