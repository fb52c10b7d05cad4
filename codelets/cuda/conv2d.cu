/* CUDA implementations of conv2d on cuDNN (no StarPU here).
 *
 * Tensor descriptors describe the strided views the tasks get: sample
 * stride = the matrix leading dimension, channel stride H*W. cuDNN filter
 * descriptors are always packed, so a channel part of w / dw (rows ld
 * apart) goes through a packed copy. Math is restricted to FMA (no TF32)
 * so that fp32 results match the CPU's. Algorithms come from cuDNN's
 * heuristics (cudnnGet*Algorithm_v7), cached per shape; workspaces are
 * stream-ordered allocations (cudaMallocAsync: the pool makes them cheap). */
#include <config.h>

#include <cuda_runtime.h>

#include "codelets/conv2d.h"
#include "runtime/error.h"

#ifdef STARNN_USE_CUDNN
#include <cudnn.h>

#include <mutex>

namespace {

/* ---------------------------------------------------- algorithm cache */

struct AlgoKey {
	int pass, device;
	size_t n, c, o, h, w, k, ldx, ldy;
	bool operator==(const AlgoKey &b) const
	{
		return pass == b.pass && device == b.device && n == b.n && c == b.c && o == b.o && h == b.h && w == b.w &&
		       k == b.k && ldx == b.ldx && ldy == b.ldy;
	}
};

struct AlgoCache {
	enum { SIZE = 256 };
	std::mutex lock;
	AlgoKey keys[SIZE];
	int algos[SIZE];
	int count = 0, next = 0;

	bool find(const AlgoKey &key, int *algo)
	{
		std::lock_guard<std::mutex> g(lock);
		for (int i = 0; i < count; i++)
			if (keys[i] == key) {
				*algo = algos[i];
				return true;
			}
		return false;
	}
	void put(const AlgoKey &key, int algo)
	{
		std::lock_guard<std::mutex> g(lock);
		int i = count < SIZE ? count++ : next++ % SIZE;
		keys[i] = key;
		algos[i] = algo;
	}
};
AlgoCache algo_cache;

/* ------------------------------------------------ descriptors (RAII) */

struct Conv {
	const char *op;
	cudnnHandle_t handle = nullptr;
	cudaStream_t stream = nullptr;
	cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;
	cudnnFilterDescriptor_t wd = nullptr;
	cudnnConvolutionDescriptor_t cd = nullptr;
	void *ws = nullptr, *wpack = nullptr;
	AlgoKey key;

	Conv(const char *op_, void *h, void *s) : op(op_), handle((cudnnHandle_t)h), stream((cudaStream_t)s) {}
	~Conv()
	{
		if (ws)
			cudaFreeAsync(ws, stream);
		if (wpack)
			cudaFreeAsync(wpack, stream);
		if (xd)
			cudnnDestroyTensorDescriptor(xd);
		if (yd)
			cudnnDestroyTensorDescriptor(yd);
		if (bd)
			cudnnDestroyTensorDescriptor(bd);
		if (wd)
			cudnnDestroyFilterDescriptor(wd);
		if (cd)
			cudnnDestroyConvolutionDescriptor(cd);
	}

	int fail(const char *what, cudnnStatus_t st)
	{
		return starnn_error(STARNN_ECUDA, "%s: %s: %s", op, what, cudnnGetErrorString(st));
	}
	int fail_cuda(const char *what, cudaError_t err)
	{
		return starnn_error(STARNN_ECUDA, "%s: %s: %s", op, what, cudaGetErrorString(err));
	}

	/* x [n,c,h,w] with sample stride ldx, y [n,o,h,w] with ldy, w [o,c,k,k]. */
	int setup(int pass, const starnn_conv2d_geom *g, size_t ldx, size_t ldy)
	{
		cudnnStatus_t st;
		if (!handle)
			return starnn_error(STARNN_ECUDA, "%s: no cuDNN handle on this worker", op);
		int n = (int)g->n, c = (int)g->c, o = (int)g->o, h = (int)g->h, w = (int)g->w, k = (int)g->k;
		int pad = k / 2;
		if ((st = cudnnCreateTensorDescriptor(&xd)) != CUDNN_STATUS_SUCCESS ||
		    (st = cudnnCreateTensorDescriptor(&yd)) != CUDNN_STATUS_SUCCESS ||
		    (st = cudnnCreateFilterDescriptor(&wd)) != CUDNN_STATUS_SUCCESS ||
		    (st = cudnnCreateConvolutionDescriptor(&cd)) != CUDNN_STATUS_SUCCESS)
			return fail("creating descriptors", st);
		if ((st = cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, n, c, h, w, (int)ldx, h * w, w, 1)) !=
		    CUDNN_STATUS_SUCCESS)
			return fail("input descriptor", st);
		if ((st = cudnnSetTensor4dDescriptorEx(yd, CUDNN_DATA_FLOAT, n, o, h, w, (int)ldy, h * w, w, 1)) !=
		    CUDNN_STATUS_SUCCESS)
			return fail("output descriptor", st);
		if ((st = cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, o, c, k, k)) !=
		    CUDNN_STATUS_SUCCESS)
			return fail("filter descriptor", st);
		if ((st = cudnnSetConvolution2dDescriptor(cd, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
		                                          CUDNN_DATA_FLOAT)) != CUDNN_STATUS_SUCCESS)
			return fail("convolution descriptor", st);
		if ((st = cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH)) != CUDNN_STATUS_SUCCESS)
			return fail("cudnnSetConvolutionMathType", st);
		int dev = 0;
		cudaGetDevice(&dev);
		key = AlgoKey{pass, dev, g->n, g->c, g->o, g->h, g->w, g->k, ldx, ldy};
		return 0;
	}

	int bias_desc(size_t o)
	{
		cudnnStatus_t st;
		if ((st = cudnnCreateTensorDescriptor(&bd)) != CUDNN_STATUS_SUCCESS ||
		    (st = cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, (int)o, 1, 1)) !=
		            CUDNN_STATUS_SUCCESS)
			return fail("bias descriptor", st);
		return 0;
	}

	int alloc(void **p, size_t bytes, const char *what)
	{
		*p = nullptr;
		if (!bytes)
			return 0;
		cudaError_t err = cudaMallocAsync(p, bytes, stream);
		if (err != cudaSuccess) {
			*p = nullptr;
			return fail_cuda(what, err);
		}
		return 0;
	}

	/* A packed [o, c*k*k] copy of w (rows ldw apart), or w itself when packed. */
	int packed_filter(const starnn_conv2d_geom *g, const float *w, size_t ldw, bool copy_in, float **out)
	{
		size_t row = g->c * g->k * g->k;
		if (ldw == row) {
			*out = (float *)w;
			return 0;
		}
		int rc = alloc(&wpack, g->o * row * sizeof(float), "cudaMallocAsync (packed filter)");
		if (rc < 0)
			return rc;
		if (copy_in) {
			cudaError_t err = cudaMemcpy2DAsync(wpack, row * sizeof(float), w, ldw * sizeof(float),
			                                    row * sizeof(float), g->o, cudaMemcpyDeviceToDevice, stream);
			if (err != cudaSuccess)
				return fail_cuda("cudaMemcpy2DAsync (pack filter)", err);
		}
		*out = (float *)wpack;
		return 0;
	}
};

} // namespace

extern "C" int starnn_conv2d_fwd_cuda(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                      size_t ldw, const float *b, float *y, size_t ldy, void *cudnn, void *stream)
{
	Conv cv("conv2d_fwd", cudnn, stream);
	cudnnStatus_t st;
	int rc;
	float *wp = nullptr;
	if ((rc = cv.setup(STARNN_CONV2D_FWD, g, ldx, ldy)) < 0 || (rc = cv.packed_filter(g, w, ldw, true, &wp)) < 0)
		return rc;
	int algo;
	if (!algo_cache.find(cv.key, &algo)) {
		cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
		int count = 0;
		if ((st = cudnnGetConvolutionForwardAlgorithm_v7(cv.handle, cv.xd, cv.wd, cv.cd, cv.yd,
		                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf)) !=
		    CUDNN_STATUS_SUCCESS)
			return cv.fail("cudnnGetConvolutionForwardAlgorithm_v7", st);
		algo = -1;
		for (int i = 0; i < count && algo < 0; i++)
			if (perf[i].status == CUDNN_STATUS_SUCCESS)
				algo = (int)perf[i].algo;
		if (algo < 0)
			return starnn_error(STARNN_ECUDA, "conv2d_fwd: cuDNN has no algorithm for this shape");
		algo_cache.put(cv.key, algo);
	}
	size_t bytes = 0;
	if ((st = cudnnGetConvolutionForwardWorkspaceSize(cv.handle, cv.xd, cv.wd, cv.cd, cv.yd,
	                                                  (cudnnConvolutionFwdAlgo_t)algo, &bytes)) !=
	    CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnGetConvolutionForwardWorkspaceSize", st);
	if ((rc = cv.alloc(&cv.ws, bytes, "cudaMallocAsync (workspace)")) < 0)
		return rc;
	const float one = 1.0f, zero = 0.0f;
	if ((st = cudnnConvolutionForward(cv.handle, &one, cv.xd, x, cv.wd, wp, cv.cd, (cudnnConvolutionFwdAlgo_t)algo,
	                                  cv.ws, bytes, &zero, cv.yd, y)) != CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnConvolutionForward", st);
	if (b) {
		if ((rc = cv.bias_desc(g->o)) < 0)
			return rc;
		if ((st = cudnnAddTensor(cv.handle, &one, cv.bd, b, &one, cv.yd, y)) != CUDNN_STATUS_SUCCESS)
			return cv.fail("cudnnAddTensor (bias)", st);
	}
	return 0;
}

extern "C" int starnn_conv2d_bwd_data_cuda(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy,
                                           const float *w, size_t ldw, float beta, float *dx, size_t ldx,
                                           void *cudnn, void *stream)
{
	Conv cv("conv2d_bwd_data", cudnn, stream);
	cudnnStatus_t st;
	int rc;
	float *wp = nullptr;
	if ((rc = cv.setup(STARNN_CONV2D_BWD_DATA, g, ldx, ldy)) < 0 ||
	    (rc = cv.packed_filter(g, w, ldw, true, &wp)) < 0)
		return rc;
	int algo;
	if (!algo_cache.find(cv.key, &algo)) {
		cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
		int count = 0;
		if ((st = cudnnGetConvolutionBackwardDataAlgorithm_v7(cv.handle, cv.wd, cv.yd, cv.cd, cv.xd,
		                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count,
		                                                      perf)) != CUDNN_STATUS_SUCCESS)
			return cv.fail("cudnnGetConvolutionBackwardDataAlgorithm_v7", st);
		algo = -1;
		for (int i = 0; i < count && algo < 0; i++)
			if (perf[i].status == CUDNN_STATUS_SUCCESS)
				algo = (int)perf[i].algo;
		if (algo < 0)
			return starnn_error(STARNN_ECUDA, "conv2d_bwd_data: cuDNN has no algorithm for this shape");
		algo_cache.put(cv.key, algo);
	}
	size_t bytes = 0;
	if ((st = cudnnGetConvolutionBackwardDataWorkspaceSize(cv.handle, cv.wd, cv.yd, cv.cd, cv.xd,
	                                                       (cudnnConvolutionBwdDataAlgo_t)algo, &bytes)) !=
	    CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnGetConvolutionBackwardDataWorkspaceSize", st);
	if ((rc = cv.alloc(&cv.ws, bytes, "cudaMallocAsync (workspace)")) < 0)
		return rc;
	const float one = 1.0f;
	if ((st = cudnnConvolutionBackwardData(cv.handle, &one, cv.wd, wp, cv.yd, dy, cv.cd,
	                                       (cudnnConvolutionBwdDataAlgo_t)algo, cv.ws, bytes, &beta, cv.xd, dx)) !=
	    CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnConvolutionBackwardData", st);
	return 0;
}

extern "C" int starnn_conv2d_bwd_weight_cuda(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                             const float *dy, size_t ldy, float beta, float *dw, size_t ldw,
                                             void *cudnn, void *stream)
{
	Conv cv("conv2d_bwd_weight", cudnn, stream);
	cudnnStatus_t st;
	int rc;
	float *wp = nullptr;
	/* A channel part of dw is not packed: work in a packed copy (holding
	 * the old values when accumulating) and copy it back. */
	if ((rc = cv.setup(STARNN_CONV2D_BWD_WEIGHT, g, ldx, ldy)) < 0 ||
	    (rc = cv.packed_filter(g, dw, ldw, beta != 0.0f, &wp)) < 0)
		return rc;
	int algo;
	if (!algo_cache.find(cv.key, &algo)) {
		cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
		int count = 0;
		if ((st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(cv.handle, cv.xd, cv.yd, cv.cd, cv.wd,
		                                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count,
		                                                        perf)) != CUDNN_STATUS_SUCCESS)
			return cv.fail("cudnnGetConvolutionBackwardFilterAlgorithm_v7", st);
		algo = -1;
		for (int i = 0; i < count && algo < 0; i++)
			if (perf[i].status == CUDNN_STATUS_SUCCESS)
				algo = (int)perf[i].algo;
		if (algo < 0)
			return starnn_error(STARNN_ECUDA, "conv2d_bwd_weight: cuDNN has no algorithm for this shape");
		algo_cache.put(cv.key, algo);
	}
	size_t bytes = 0;
	if ((st = cudnnGetConvolutionBackwardFilterWorkspaceSize(cv.handle, cv.xd, cv.yd, cv.cd, cv.wd,
	                                                         (cudnnConvolutionBwdFilterAlgo_t)algo, &bytes)) !=
	    CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnGetConvolutionBackwardFilterWorkspaceSize", st);
	if ((rc = cv.alloc(&cv.ws, bytes, "cudaMallocAsync (workspace)")) < 0)
		return rc;
	const float one = 1.0f;
	if ((st = cudnnConvolutionBackwardFilter(cv.handle, &one, cv.xd, x, cv.yd, dy, cv.cd,
	                                         (cudnnConvolutionBwdFilterAlgo_t)algo, cv.ws, bytes, &beta, cv.wd,
	                                         wp)) != CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnConvolutionBackwardFilter", st);
	if (wp != dw) {
		size_t row = g->c * g->k * g->k;
		cudaError_t err = cudaMemcpy2DAsync(dw, ldw * sizeof(float), wp, row * sizeof(float), row * sizeof(float),
		                                    g->o, cudaMemcpyDeviceToDevice, cv.stream);
		if (err != cudaSuccess)
			return cv.fail_cuda("cudaMemcpy2DAsync (unpack filter gradient)", err);
	}
	return 0;
}

extern "C" int starnn_conv2d_bwd_bias_cuda(size_t n, size_t o, size_t h, size_t w, const float *dy, size_t ldy,
                                           float beta, float *db, void *cudnn, void *stream)
{
	Conv cv("conv2d_bwd_bias", cudnn, stream);
	cudnnStatus_t st;
	int rc;
	if (!cv.handle)
		return starnn_error(STARNN_ECUDA, "conv2d_bwd_bias: no cuDNN handle on this worker");
	if ((st = cudnnCreateTensorDescriptor(&cv.yd)) != CUDNN_STATUS_SUCCESS ||
	    (st = cudnnSetTensor4dDescriptorEx(cv.yd, CUDNN_DATA_FLOAT, (int)n, (int)o, (int)h, (int)w, (int)ldy,
	                                       (int)(h * w), (int)w, 1)) != CUDNN_STATUS_SUCCESS)
		return cv.fail("output gradient descriptor", st);
	if ((rc = cv.bias_desc(o)) < 0)
		return rc;
	const float one = 1.0f;
	if ((st = cudnnConvolutionBackwardBias(cv.handle, &one, cv.yd, dy, &beta, cv.bd, db)) != CUDNN_STATUS_SUCCESS)
		return cv.fail("cudnnConvolutionBackwardBias", st);
	return 0;
}

#else /* no cuDNN: the codelets have no CUDA implementation (see codelets/conv2d.c) */

extern "C" int starnn_conv2d_fwd_cuda(const struct starnn_conv2d_geom *, const float *, size_t, const float *, size_t,
                                      const float *, float *, size_t, void *, void *)
{
	return starnn_error(STARNN_ENODEV, "conv2d_fwd: starnn was built without cuDNN");
}
extern "C" int starnn_conv2d_bwd_data_cuda(const struct starnn_conv2d_geom *, const float *, size_t, const float *,
                                           size_t, float, float *, size_t, void *, void *)
{
	return starnn_error(STARNN_ENODEV, "conv2d_bwd_data: starnn was built without cuDNN");
}
extern "C" int starnn_conv2d_bwd_weight_cuda(const struct starnn_conv2d_geom *, const float *, size_t, const float *,
                                             size_t, float, float *, size_t, void *, void *)
{
	return starnn_error(STARNN_ENODEV, "conv2d_bwd_weight: starnn was built without cuDNN");
}
extern "C" int starnn_conv2d_bwd_bias_cuda(size_t, size_t, size_t, size_t, const float *, size_t, float, float *,
                                           void *, void *)
{
	return starnn_error(STARNN_ENODEV, "conv2d_bwd_bias: starnn was built without cuDNN");
}

#endif
