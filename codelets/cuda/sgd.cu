/* CUDA kernel of the SGD update: elementwise over a 2-D grid (strided views). */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/sgd.h"

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
