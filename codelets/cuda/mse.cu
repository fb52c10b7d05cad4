/* CUDA kernels of mse_fwd (the double-accumulating two-pass reduction of
 * reduce.cuh) and mse_bwd (elementwise, 2-D grid). */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/cuda/half.cuh"
#include "codelets/cuda/reduce.cuh"
#include "codelets/kernels/mse.h"

namespace {

struct sqdiff_term {
	const float *p, *t;
	size_t ldp, ldt;
	__device__ double operator()(size_t r, size_t c) const
	{
		double d = (double)p[r * ldp + c] - (double)t[r * ldt + c];
		return d * d;
	}
};

} // namespace

__global__ static void mse_bwd_kernel(size_t rows, size_t cols, const float *p, size_t ldp, const float *t,
                                      size_t ldt, float k, float *d, size_t ldd)
{
	STARNN_GRID_2D(r, c, rows, cols)
		d[r * ldd + c] = k * (p[r * ldp + c] - t[r * ldt + c]);
}

extern "C" int starnn_mse_fwd_cuda(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target,
                                   size_t ldt, float scale, float beta, float *loss, void *stream)
{
	if (ldp == cols && ldt == cols) {
		/* Dense: one long row, so that every block gets work. */
		cols *= rows;
		rows = rows ? 1 : 0;
	}
	sqdiff_term f = {pred, target, ldp, ldt};
	return starnn_reduce_launch(rows, cols, f, (double)scale, beta, loss, stream);
}

extern "C" void starnn_mse_bwd_cuda(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target,
                                    size_t ldt, float scale, float *dpred, size_t ldd, void *stream)
{
	starnn_launch_2d(rows, cols, stream, mse_bwd_kernel, rows, cols, pred, ldp, target, ldt, 2.0f * scale, dpred,
	                 ldd);
}

/* ------------------------------------------------------- mixed precision */

namespace {

template <typename T> struct sqdiff_half_term {
	const T *p;
	const float *t;
	size_t ldp, ldt;
	__device__ double operator()(size_t r, size_t c) const
	{
		double d = (double)starnn_to_f32(p[r * ldp + c]) - (double)t[r * ldt + c];
		return d * d;
	}
};

} // namespace

template <typename T>
static int mse_fwd_half(size_t rows, size_t cols, const void *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float beta, float *loss, void *stream)
{
	if (ldp == cols && ldt == cols) {
		cols *= rows;
		rows = rows ? 1 : 0;
	}
	sqdiff_half_term<T> f = {(const T *)pred, target, ldp, ldt};
	return starnn_reduce_launch(rows, cols, f, (double)scale, beta, loss, stream);
}

extern "C" int starnn_mse_fwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                                        const float *target, size_t ldt, float scale, float beta, float *loss,
                                        void *stream)
{
	if (dt == STARNN_FP16)
		return mse_fwd_half<__half>(rows, cols, pred, ldp, target, ldt, scale, beta, loss, stream);
	if (dt == STARNN_BF16)
		return mse_fwd_half<__nv_bfloat16>(rows, cols, pred, ldp, target, ldt, scale, beta, loss, stream);
	return mse_fwd_half<float>(rows, cols, pred, ldp, target, ldt, scale, beta, loss, stream);
}

/* state may be NULL (no loss scaling); it is read on the device. */
template <typename T>
__global__ static void mse_bwd_half_kernel(size_t rows, size_t cols, const T *p, size_t ldp, const float *t,
                                           size_t ldt, float k, const float *state, T *d, size_t ldd)
{
	const float ls = state ? state[0] : 1.0f;
	STARNN_GRID_2D(r, c, rows, cols)
		starnn_store(&d[r * ldd + c], (k * (starnn_to_f32(p[r * ldp + c]) - t[r * ldt + c])) * ls);
}

extern "C" void starnn_mse_bwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                                         const float *target, size_t ldt, float scale, const float *state,
                                         void *dpred, size_t ldd, void *stream)
{
	float k = 2.0f * scale;
	if (dt == STARNN_FP16)
		starnn_launch_2d(rows, cols, stream, mse_bwd_half_kernel<__half>, rows, cols, (const __half *)pred, ldp,
		                 target, ldt, k, state, (__half *)dpred, ldd);
	else if (dt == STARNN_BF16)
		starnn_launch_2d(rows, cols, stream, mse_bwd_half_kernel<__nv_bfloat16>, rows, cols,
		                 (const __nv_bfloat16 *)pred, ldp, target, ldt, k, state, (__nv_bfloat16 *)dpred, ldd);
	else
		starnn_launch_2d(rows, cols, stream, mse_bwd_half_kernel<float>, rows, cols, (const float *)pred, ldp,
		                 target, ldt, k, state, (float *)dpred, ldd);
}
