/* CUDA kernels of convert: one template over (source, destination) types;
 * every element goes through fp32 (exact for fp16 and bf16) and is rounded
 * once, to nearest even, by the cuda_fp16.h / cuda_bf16.h intrinsics. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/convert.h"

__device__ static inline float to_f32(float v) { return v; }
__device__ static inline float to_f32(__half v) { return __half2float(v); }
__device__ static inline float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ static inline T from_f32(float v);
template <> __device__ inline float from_f32<float>(float v) { return v; }
template <> __device__ inline __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename S, typename D>
__global__ static void convert_kernel(size_t rows, size_t cols, const S *x, size_t ldx, D *y, size_t ldy)
{
	STARNN_GRID_2D(r, c, rows, cols)
		y[r * ldy + c] = from_f32<D>(to_f32(x[r * ldx + c]));
}

template <typename S, typename D>
static void launch(size_t rows, size_t cols, const void *x, size_t ldx, void *y, size_t ldy, void *stream)
{
	starnn_launch_2d(rows, cols, stream, convert_kernel<S, D>, rows, cols, (const S *)x, ldx, (D *)y, ldy);
}

extern "C" void starnn_convert_fp32_to_fp16_cuda(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y,
                                                 size_t ldy, void *stream)
{
	launch<float, __half>(rows, cols, x, ldx, y, ldy, stream);
}

extern "C" void starnn_convert_fp32_to_bf16_cuda(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y,
                                                 size_t ldy, void *stream)
{
	launch<float, __nv_bfloat16>(rows, cols, x, ldx, y, ldy, stream);
}

extern "C" void starnn_convert_fp16_to_fp32_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y,
                                                 size_t ldy, void *stream)
{
	launch<__half, float>(rows, cols, x, ldx, y, ldy, stream);
}

extern "C" void starnn_convert_bf16_to_fp32_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y,
                                                 size_t ldy, void *stream)
{
	launch<__nv_bfloat16, float>(rows, cols, x, ldx, y, ldy, stream);
}

extern "C" void starnn_convert_fp16_to_bf16_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                                 uint16_t *y, size_t ldy, void *stream)
{
	launch<__half, __nv_bfloat16>(rows, cols, x, ldx, y, ldy, stream);
}

extern "C" void starnn_convert_bf16_to_fp16_cuda(size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                                                 uint16_t *y, size_t ldy, void *stream)
{
	launch<__nv_bfloat16, __half>(rows, cols, x, ldx, y, ldy, stream);
}
