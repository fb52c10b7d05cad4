/* CUDA kernels of amp. nonfinite: a grid-stride test of the exponent bits;
 * threads that find an Inf/NaN store 1.0f into the flag (every writer
 * stores the same value, so the race is benign, and nobody writes 0).
 * scale_update: one thread. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/amp.h"

template <typename T>
__global__ static void nonfinite_kernel(size_t rows, size_t cols, const T *x, size_t ld, T mask, float *flag)
{
	bool bad = false;
	STARNN_GRID_2D(r, c, rows, cols)
		bad |= (x[r * ld + c] & mask) == mask;
	if (bad)
		*flag = 1.0f;
}

extern "C" void starnn_amp_nonfinite_cuda(starnn_dtype dtype, size_t rows, size_t cols, const void *x, size_t ld,
                                          float *flag, void *stream)
{
	if (dtype == STARNN_FP32)
		starnn_launch_2d(rows, cols, stream, nonfinite_kernel<uint32_t>, rows, cols, (const uint32_t *)x, ld,
		                 (uint32_t)0x7f800000u, flag);
	else
		starnn_launch_2d(rows, cols, stream, nonfinite_kernel<uint16_t>, rows, cols, (const uint16_t *)x, ld,
		                 (uint16_t)(dtype == STARNN_FP16 ? 0x7c00u : 0x7f80u), flag);
}

__global__ static void scale_update_kernel(struct starnn_amp_policy p, float *state, const float *flag)
{
	float scale = state[0], good = state[1];
	if (flag[0] != 0.0f) {
		if (p.dynamic)
			scale = fmaxf(scale * p.backoff, p.min_scale);
		good = 0.0f;
		state[2] += 1.0f;
	} else {
		state[3] += 1.0f;
		good += 1.0f;
		if (p.dynamic && good >= (float)p.growth_interval) {
			scale = fminf(scale * p.growth, p.max_scale);
			good = 0.0f;
		}
	}
	state[0] = scale;
	state[1] = good;
}

extern "C" void starnn_amp_scale_update_cuda(const struct starnn_amp_policy *p, float *state, const float *flag,
                                             void *stream)
{
	scale_update_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*p, state, flag);
}
