/* CUDA kernels of convt2d (2x2, stride 2): strided-batched cuBLAS sgemm over
 * the samples of a chunk, plus own kernels that scatter Z into y (adding the
 * bias), gather dy into G, and reduce dy into db. The Z / G workspace (one
 * chunk of samples, <= 64 MiB unless one sample needs more) comes from
 * cudaMallocAsync on the worker's stream, so nothing synchronises.
 *
 * The native 16-bit kernels (codelets/kernels/convt2d.h, *_cuda_half) run the same
 * GEMMs through cublasGemm(StridedBatched)Ex with fp16 / bf16 A and B, fp32
 * C and CUBLAS_COMPUTE_32F (tensor cores, fp32 accumulation); the scatter /
 * gather / bias kernels are the same templates instantiated for the 16-bit
 * type (a gather is a permutation: G stays 16-bit, exactly), and every
 * 16-bit output element is rounded once, to nearest even, from its fp32
 * value (codelets/cuda/half.cuh).
 *
 * Row-major to cuBLAS (column-major): a row-major r x c matrix with ld is
 * the column-major c x r matrix with the same ld, so the row-major product
 * C = A B is computed as the column-major C^T = B^T A^T (see gemm.cu).
 * Formulas and layouts: codelets/kernels/convt2d.h. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "codelets/kernels/convt2d.h"
#include "codelets/cuda/common.cuh"
#include "codelets/cuda/half.cuh"
#include "runtime/base/error.h"

/* Element e of one sample of y / dy (o*4*h*w of them) <-> its place in the
 * sample's Z / G (4o x h*w): row o*4 + a*2 + b, column i*w + j. */
__device__ static inline size_t z_index(size_t e, size_t h, size_t w)
{
	size_t hw4 = 4 * h * w, oc = e / hw4, rem = e % hw4, p = rem / (2 * w), q = rem % (2 * w);
	return (oc * 4 + (p & 1) * 2 + (q & 1)) * (h * w) + (p / 2) * w + q / 2;
}

/* T: float (the fp32 kernels; starnn_store / starnn_to_f32 are then plain
 * stores and loads), __half or __nv_bfloat16 (y, dy of the native 16-bit
 * kernels): y = round(z + bias), z and bias fp32. */
template <typename T>
__global__ static void scatter_kernel(size_t rows, size_t cols, size_t h, size_t w, const float *z,
                                      const float *bias, T *y, size_t ldy)
{
	STARNN_GRID_2D(r, e, rows, cols)
		starnn_store(&y[r * ldy + e], z[r * cols + z_index(e, h, w)] + bias[e / (4 * h * w)]);
}

template <typename T>
__global__ static void gather_kernel(size_t rows, size_t cols, size_t h, size_t w, const T *dy, size_t lddy, T *g)
{
	STARNN_GRID_2D(r, e, rows, cols)
		g[r * cols + z_index(e, h, w)] = dy[r * lddy + e];
}

/* One block per output channel: db[o] = beta db[o] + sum of its planes
 * (fp32 sums of dy's values, whatever dy's type). */
template <typename T>
__global__ static void bias_grad_kernel(size_t n, size_t hw4, const T *dy, size_t lddy, float beta, float *db)
{
	__shared__ float part[256];
	size_t oc = blockIdx.x;
	float s = 0.0f;
	for (size_t r = 0; r < n; r++) {
		const T *p = dy + r * lddy + oc * hw4;
		for (size_t k = threadIdx.x; k < hw4; k += blockDim.x)
			s += starnn_to_f32(p[k]);
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
		starnn_launch_2d(cnt, per, stream, scatter_kernel<float>, cnt, per, h, w, (const float *)z, bias,
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
		starnn_launch_2d(cnt, per, stream, gather_kernel<float>, cnt, per, h, w, dy + s0 * lddy, lddy, g);
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
		starnn_launch_2d(cnt, per, stream, gather_kernel<float>, cnt, per, h, w, dy + s0 * lddy, lddy, g);
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
	bias_grad_kernel<float><<<(unsigned)o, 256, 0, st>>>(n, 4 * hw, dy, lddy, beta, db);
	return 0;
}

/* ------------------------------------------------------- native 16-bit */

/* dx = round(t + beta * dx): t the fp32 GEMM result (rows of cols, dense),
 * the blend in fp32 on the exactly widened old dx, one rounding to T.
 * beta == 0 does not read dx (it may hold anything, NaN included). */
template <typename T>
__global__ static void blend_kernel(size_t rows, size_t cols, const float *t, float beta, T *dx, size_t lddx)
{
	STARNN_GRID_2D(r, e, rows, cols)
	{
		float v = t[r * cols + e];
		if (beta != 0.0f)
			v += beta * starnn_to_f32(dx[r * lddx + e]);
		starnn_store(&dx[r * lddx + e], v);
	}
}

namespace {

/* The workspaces of one native call, freed (stream-ordered) on every way
 * out. */
struct HalfCall {
	const char *op;
	cudaStream_t stream;
	void *ws[2] = {nullptr, nullptr};
	bool wrote = false; /* an output has been written (or accumulated into) */

	HalfCall(const char *name, void *s) : op(name), stream((cudaStream_t)s) {}
	~HalfCall()
	{
		for (void *p : ws)
			if (p)
				cudaFreeAsync(p, stream);
	}
	int alloc(int slot, size_t bytes)
	{
		cudaError_t err = cudaMallocAsync(&ws[slot], bytes ? bytes : 1, stream);
		if (err != cudaSuccess) {
			ws[slot] = nullptr;
			starnn_defer_error(STARNN_ECUDA, "%s: cudaMallocAsync of %zu bytes failed: %s", op, bytes,
			                   cudaGetErrorString(err));
			return STARNN_ECUDA;
		}
		return 0;
	}
	/* cuBLAS answered st. NOT_SUPPORTED and ARCH_MISMATCH (no kernel for
	 * these types, or this device lacks them, e.g. bf16 before sm_80) before
	 * any output was touched: STARNN_CONVT2D_UNSUPPORTED, the caller widens.
	 * Anything else, or after a partial write (a widened rerun would
	 * accumulate twice): a deferred error, as the fp32 kernels. */
	int blas(const char *what, cublasStatus_t st)
	{
		if (st == CUBLAS_STATUS_SUCCESS)
			return 0;
		if (!wrote && (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH))
			return STARNN_CONVT2D_UNSUPPORTED;
		starnn_defer_error(STARNN_ECUDA, "%s: %s failed: %s", op, what, cublasGetStatusString(st));
		return STARNN_ECUDA;
	}
};

template <typename T> struct HalfOf;
template <> struct HalfOf<__half> {
	static constexpr cudaDataType_t type = CUDA_R_16F;
};
template <> struct HalfOf<__nv_bfloat16> {
	static constexpr cudaDataType_t type = CUDA_R_16BF;
};

/* GEMM algorithm: cuBLAS' default with tensor ops (all that _TENSOR_OP
 * still means since CUDA 11: 16-bit inputs with COMPUTE_32F may use tensor
 * cores; products of 16-bit values are exact in fp32, sums are fp32). */
const cublasGemmAlgo_t half_algo = CUBLAS_GEMM_DEFAULT_TENSOR_OP;

/* Same GEMM as starnn_convt2d_fwd_cuda, on 16-bit x and w into the fp32 Z,
 * then y = round(Z + b). */
template <typename T>
int fwd_half(size_t n, size_t c, size_t o, size_t h, size_t w, const T *x, size_t ldx, const T *wt, size_t ldw,
             const float *bias, T *y, size_t ldy, cublasHandle_t hdl, void *stream)
{
	HalfCall hc("convt2d_fwd_half", stream);
	const cudaDataType_t dt = HalfOf<T>::type;
	size_t hw = h * w, o4 = 4 * o, per = o4 * hw, nb = chunk_samples(n, per);
	int rc;
	if ((rc = hc.alloc(0, nb * per * sizeof(float))) != 0)
		return rc;
	float *z = (float *)hc.ws[0];
	const float one = 1.0f, zero = 0.0f;
	for (size_t s0 = 0; s0 < n; s0 += nb) {
		size_t cnt = n - s0 < nb ? n - s0 : nb;
		/* Z_n^T (hw x o4, fp32) = x_n^T (hw x c) (w^T)^T, as in the fp32 kernel. */
		if ((rc = hc.blas("cublasGemmStridedBatchedEx",
		                  cublasGemmStridedBatchedEx(hdl, CUBLAS_OP_N, CUBLAS_OP_T, (int)hw, (int)o4, (int)c, &one,
		                                             x + s0 * ldx, dt, (int)hw, (long long)ldx, wt, dt, (int)ldw, 0,
		                                             &zero, z, CUDA_R_32F, (int)hw, (long long)per, (int)cnt,
		                                             CUBLAS_COMPUTE_32F, half_algo))) != 0)
			return rc;
		starnn_launch_2d(cnt, per, stream, scatter_kernel<T>, cnt, per, h, w, (const float *)z, bias, y + s0 * ldy,
		                 ldy);
		hc.wrote = true;
	}
	return 0;
}

/* G (16-bit, gathered from dy) and w into an fp32 T, then
 * dx = round(T + beta dx). */
template <typename T>
int bwd_data_half(size_t n, size_t c, size_t o, size_t h, size_t w, const T *wt, size_t ldw, const T *dy, size_t lddy,
                  float beta, T *dx, size_t lddx, cublasHandle_t hdl, void *stream)
{
	HalfCall hc("convt2d_bwd_data_half", stream);
	const cudaDataType_t dt = HalfOf<T>::type;
	size_t hw = h * w, o4 = 4 * o, per = o4 * hw, chw = c * hw;
	/* per sample: G (per 16-bit values) and T (chw floats), in floats */
	size_t nb = chunk_samples(n, (per * sizeof(T) + chw * sizeof(float) + sizeof(float) - 1) / sizeof(float));
	int rc;
	if ((rc = hc.alloc(0, nb * per * sizeof(T))) != 0 || (rc = hc.alloc(1, nb * chw * sizeof(float))) != 0)
		return rc;
	T *g = (T *)hc.ws[0];
	float *t = (float *)hc.ws[1];
	const float one = 1.0f, zero = 0.0f;
	for (size_t s0 = 0; s0 < n; s0 += nb) {
		size_t cnt = n - s0 < nb ? n - s0 : nb;
		starnn_launch_2d(cnt, per, stream, gather_kernel<T>, cnt, per, h, w, dy + s0 * lddy, lddy, g);
		/* T_n^T (hw x c, fp32) = G_n^T (hw x o4) w^T (o4 x c), as in the fp32 kernel. */
		if ((rc = hc.blas("cublasGemmStridedBatchedEx",
		                  cublasGemmStridedBatchedEx(hdl, CUBLAS_OP_N, CUBLAS_OP_N, (int)hw, (int)c, (int)o4, &one, g,
		                                             dt, (int)hw, (long long)per, wt, dt, (int)ldw, 0, &zero, t,
		                                             CUDA_R_32F, (int)hw, (long long)chw, (int)cnt,
		                                             CUBLAS_COMPUTE_32F, half_algo))) != 0)
			return rc;
		starnn_launch_2d(cnt, chw, stream, blend_kernel<T>, cnt, chw, (const float *)t, beta, dx + s0 * lddx, lddx);
		hc.wrote = true;
	}
	return 0;
}

/* dw (fp32) = beta dw + sum_n G_n x_n^T with 16-bit G_n and x_n, per sample
 * as the fp32 kernel (cuBLAS' beta: 0 does not read dw); db from dy
 * directly, fp32 sums. */
template <typename T>
int bwd_weight_half(size_t n, size_t c, size_t o, size_t h, size_t w, const T *x, size_t ldx, const T *dy,
                    size_t lddy, float beta, float *dw, size_t lddw, float *db, cublasHandle_t hdl, void *stream)
{
	HalfCall hc("convt2d_bwd_weight_half", stream);
	const cudaDataType_t dt = HalfOf<T>::type;
	size_t hw = h * w, o4 = 4 * o, per = o4 * hw;
	size_t nb = chunk_samples(n, (per * sizeof(T) + sizeof(float) - 1) / sizeof(float));
	int rc;
	if ((rc = hc.alloc(0, nb * per * sizeof(T))) != 0)
		return rc;
	T *g = (T *)hc.ws[0];
	const float one = 1.0f;
	float bw = beta;
	for (size_t s0 = 0; s0 < n; s0 += nb) {
		size_t cnt = n - s0 < nb ? n - s0 : nb;
		starnn_launch_2d(cnt, per, stream, gather_kernel<T>, cnt, per, h, w, dy + s0 * lddy, lddy, g);
		for (size_t r = 0; r < cnt; r++) {
			/* dw^T (o4 x c) (+)= G_n (o4 x hw, stored hw x o4: T) x_n^T (hw x c: N). */
			if ((rc = hc.blas("cublasGemmEx",
			                  cublasGemmEx(hdl, CUBLAS_OP_T, CUBLAS_OP_N, (int)o4, (int)c, (int)hw, &one, g + r * per,
			                               dt, (int)hw, x + (s0 + r) * ldx, dt, (int)hw, &bw, dw, CUDA_R_32F,
			                               (int)lddw, CUBLAS_COMPUTE_32F, half_algo))) != 0)
				return rc;
			hc.wrote = true;
			bw = 1.0f;
		}
	}
	bias_grad_kernel<T><<<(unsigned)o, 256, 0, hc.stream>>>(n, 4 * hw, dy, lddy, beta, db);
	return 0;
}

int bad_dtype(const char *op, starnn_dtype dt)
{
	starnn_defer_error(STARNN_EINVAL, "%s: fp16 or bf16 expected, got %s", op, starnn_dtype_name(dt));
	return STARNN_EINVAL;
}

} // namespace

extern "C" int starnn_convt2d_fwd_cuda_half(size_t n, size_t c, size_t o, size_t h, size_t w, starnn_dtype dt,
                                            const void *x, size_t ldx, const void *wt, size_t ldw, const float *bias,
                                            void *y, size_t ldy, void *cublas_handle, void *stream)
{
	cublasHandle_t hdl = (cublasHandle_t)cublas_handle;
	if (dt == STARNN_FP16)
		return fwd_half(n, c, o, h, w, (const __half *)x, ldx, (const __half *)wt, ldw, bias, (__half *)y, ldy, hdl,
		                stream);
	if (dt == STARNN_BF16)
		return fwd_half(n, c, o, h, w, (const __nv_bfloat16 *)x, ldx, (const __nv_bfloat16 *)wt, ldw, bias,
		                (__nv_bfloat16 *)y, ldy, hdl, stream);
	return bad_dtype("convt2d_fwd_half", dt);
}

extern "C" int starnn_convt2d_bwd_data_cuda_half(size_t n, size_t c, size_t o, size_t h, size_t w, starnn_dtype dt,
                                                 const void *wt, size_t ldw, const void *dy, size_t lddy, float beta,
                                                 void *dx, size_t lddx, void *cublas_handle, void *stream)
{
	cublasHandle_t hdl = (cublasHandle_t)cublas_handle;
	if (dt == STARNN_FP16)
		return bwd_data_half(n, c, o, h, w, (const __half *)wt, ldw, (const __half *)dy, lddy, beta, (__half *)dx,
		                     lddx, hdl, stream);
	if (dt == STARNN_BF16)
		return bwd_data_half(n, c, o, h, w, (const __nv_bfloat16 *)wt, ldw, (const __nv_bfloat16 *)dy, lddy, beta,
		                     (__nv_bfloat16 *)dx, lddx, hdl, stream);
	return bad_dtype("convt2d_bwd_data_half", dt);
}

extern "C" int starnn_convt2d_bwd_weight_cuda_half(size_t n, size_t c, size_t o, size_t h, size_t w, starnn_dtype dt,
                                                   const void *x, size_t ldx, const void *dy, size_t lddy, float beta,
                                                   float *dw, size_t lddw, float *db, void *cublas_handle,
                                                   void *stream)
{
	cublasHandle_t hdl = (cublasHandle_t)cublas_handle;
	if (dt == STARNN_FP16)
		return bwd_weight_half(n, c, o, h, w, (const __half *)x, ldx, (const __half *)dy, lddy, beta, dw, lddw, db,
		                       hdl, stream);
	if (dt == STARNN_BF16)
		return bwd_weight_half(n, c, o, h, w, (const __nv_bfloat16 *)x, ldx, (const __nv_bfloat16 *)dy, lddy, beta,
		                       dw, lddw, db, hdl, stream);
	return bad_dtype("convt2d_bwd_weight_half", dt);
}
