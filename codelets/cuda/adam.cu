/* CUDA kernel of the Adam / AdamW update: elementwise over a 2-D grid
 * (strided views), IEEE sqrt and division as on the CPU. */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/adam.h"

__global__ static void adam_kernel(size_t rows, size_t cols, struct starnn_adam_step s, float *w, size_t ldw,
                                   const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv)
{
	const float b1 = s.p.beta1, b2 = s.p.beta2, eps = s.p.eps;
	const float l2 = s.p.decoupled ? 0.0f : s.p.weight_decay;
	STARNN_GRID_2D(r, c, rows, cols)
	{
		float wv = w[r * ldw + c];
		float g = s.grad_scale * grad[r * ldg + c] + l2 * wv;
		float mv = b1 * m[r * ldm + c] + (1.0f - b1) * g;
		float vv = b2 * v[r * ldv + c] + (1.0f - b2) * g * g;
		m[r * ldm + c] = mv;
		v[r * ldv + c] = vv;
		float denom = sqrtf(vv) / s.bc2_sqrt + eps;
		w[r * ldw + c] = wv * s.decay - s.step_size * mv / denom;
	}
}

extern "C" void starnn_adam_cuda(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                                 const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv,
                                 void *stream)
{
	starnn_launch_2d(rows, cols, stream, adam_kernel, rows, cols, *s, w, ldw, grad, ldg, m, ldm, v, ldv);
}

/* The same update with t and grad_scale read from the loss-scale state
 * (device memory); the bias corrections are computed in double as
 * starnn_adam_step_init does on the host. Every thread returns when the
 * overflow flag is set. */
__global__ static void adam_amp_kernel(size_t rows, size_t cols, struct starnn_adam_params p, const float *state,
                                       const float *flag, float *w, size_t ldw, const float *grad, size_t ldg,
                                       float *m, size_t ldm, float *v, size_t ldv)
{
	if (flag[0] != 0.0f)
		return;
	const double t = (double)(long long)state[3] + 1.0;
	const float gs = 1.0f / state[0];
	const float step_size = (float)((double)p.lr / (1.0 - pow((double)p.beta1, t)));
	const float bc2_sqrt = (float)sqrt(1.0 - pow((double)p.beta2, t));
	const float decay = p.decoupled ? (float)(1.0 - (double)p.lr * (double)p.weight_decay) : 1.0f;
	const float b1 = p.beta1, b2 = p.beta2, eps = p.eps;
	const float l2 = p.decoupled ? 0.0f : p.weight_decay;
	STARNN_GRID_2D(r, c, rows, cols)
	{
		float wv = w[r * ldw + c];
		float g = gs * grad[r * ldg + c] + l2 * wv;
		float mv = b1 * m[r * ldm + c] + (1.0f - b1) * g;
		float vv = b2 * v[r * ldv + c] + (1.0f - b2) * g * g;
		m[r * ldm + c] = mv;
		v[r * ldv + c] = vv;
		float denom = sqrtf(vv) / bc2_sqrt + eps;
		w[r * ldw + c] = wv * decay - step_size * mv / denom;
	}
}

extern "C" void starnn_adam_amp_cuda(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                                     const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m,
                                     size_t ldm, float *v, size_t ldv, void *stream)
{
	starnn_launch_2d(rows, cols, stream, adam_amp_kernel, rows, cols, *p, state, flag, w, ldw, grad, ldg, m, ldm, v,
	                 ldv);
}
