/* CUDA kernel of the SGD update: elementwise over a 2-D grid (strided views). */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/sgd.h"

__global__ static void sgd_kernel(size_t rows, size_t cols, struct starnn_sgd_step s, float *w, size_t ldw,
                                  const float *grad, size_t ldg, float *buf, size_t ldb)
{
	const float lr = s.p.lr, mom = s.p.momentum, keep = 1.0f - s.p.dampening, wd = s.p.weight_decay;
	STARNN_GRID_2D(r, c, rows, cols)
	{
		float wv = w[r * ldw + c];
		float g = s.grad_scale * grad[r * ldg + c] + wd * wv;
		float d = g;
		if (mom != 0.0f) {
			float b = s.first ? g : mom * buf[r * ldb + c] + keep * g;
			buf[r * ldb + c] = b;
			d = s.p.nesterov ? g + mom * b : b;
		}
		w[r * ldw + c] = wv - lr * d;
	}
}

extern "C" void starnn_sgd_cuda(size_t rows, size_t cols, const struct starnn_sgd_step *s, float *w, size_t ldw,
                                const float *grad, size_t ldg, float *buf, size_t ldb, void *stream)
{
	starnn_launch_2d(rows, cols, stream, sgd_kernel, rows, cols, *s, w, ldw, grad, ldg, buf, ldb);
}

/* The same update with grad_scale and first read from the loss-scale state
 * (device memory); every thread returns when the overflow flag is set. */
__global__ static void sgd_amp_kernel(size_t rows, size_t cols, struct starnn_sgd_params p, const float *state,
                                      const float *flag, float *w, size_t ldw, const float *grad, size_t ldg,
                                      float *buf, size_t ldb)
{
	if (flag[0] != 0.0f)
		return;
	const float lr = p.lr, mom = p.momentum, keep = 1.0f - p.dampening, wd = p.weight_decay;
	const float gs = 1.0f / state[0];
	const bool first = state[3] == 0.0f;
	STARNN_GRID_2D(r, c, rows, cols)
	{
		float wv = w[r * ldw + c];
		float g = gs * grad[r * ldg + c] + wd * wv;
		float d = g;
		if (mom != 0.0f) {
			float b = first ? g : mom * buf[r * ldb + c] + keep * g;
			buf[r * ldb + c] = b;
			d = p.nesterov ? g + mom * b : b;
		}
		w[r * ldw + c] = wv - lr * d;
	}
}

extern "C" void starnn_sgd_amp_cuda(size_t rows, size_t cols, const struct starnn_sgd_params *p, const float *state,
                                    const float *flag, float *w, size_t ldw, const float *grad, size_t ldg,
                                    float *buf, size_t ldb, void *stream)
{
	starnn_launch_2d(rows, cols, stream, sgd_amp_kernel, rows, cols, *p, state, flag, w, ldw, grad, ldg, buf, ldb);
}
