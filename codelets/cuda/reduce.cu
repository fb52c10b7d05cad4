/* CUDA kernels of sum / sumsq: the double-accumulating two-pass reduction of
 * reduce.cuh. A dense tensor (ld == cols) is reduced as one long row so that
 * every block gets work whatever the shape. */
#include <cuda_runtime.h>

#include "codelets/cuda/reduce.cuh"
#include "codelets/kernels/reduce.h"

namespace {

struct sum_term {
	const float *x;
	size_t ld;
	__device__ double operator()(size_t r, size_t c) const
	{
		return (double)x[r * ld + c];
	}
};

struct sumsq_term {
	const float *x;
	size_t ld;
	__device__ double operator()(size_t r, size_t c) const
	{
		double v = x[r * ld + c];
		return v * v;
	}
};

} // namespace

template <typename F>
static int reduce(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out, void *stream)
{
	if (ldx == cols) {
		cols *= rows;
		rows = rows ? 1 : 0;
	}
	F f = {x, ldx};
	return starnn_reduce_launch(rows, cols, f, 1.0, beta, out, stream);
}

extern "C" int starnn_sum_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out,
                               void *stream)
{
	return reduce<sum_term>(rows, cols, x, ldx, beta, out, stream);
}

extern "C" int starnn_sumsq_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out,
                                 void *stream)
{
	return reduce<sumsq_term>(rows, cols, x, ldx, beta, out, stream);
}
