/* fp16 / bf16 loads and stores for the mixed-precision CUDA kernels: every
 * element is computed in fp32 and rounded once, to nearest even, by the
 * cuda_fp16.h / cuda_bf16.h intrinsics (as codelets/cuda/convert.cu). */
#ifndef STARNN_CUDA_HALF_CUH
#define STARNN_CUDA_HALF_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ static inline float starnn_to_f32(float v) { return v; }
__device__ static inline float starnn_to_f32(__half v) { return __half2float(v); }
__device__ static inline float starnn_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ static inline void starnn_store(float *p, float v) { *p = v; }
__device__ static inline void starnn_store(__half *p, float v) { *p = __float2half_rn(v); }
__device__ static inline void starnn_store(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

#endif
