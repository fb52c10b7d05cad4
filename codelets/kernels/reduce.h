/* Kernels of the full reductions sum and sumsq: out = beta * out + sum_i
 * x_i (or x_i^2), accumulated in double and rounded to fp32 once; beta 0
 * does not read out. Shapes: x is rows x cols, row-major, leading dimension
 * ldx; out points to one float (host memory for the CPU kernels, device
 * memory for CUDA). The CUDA kernels are asynchronous on stream (a
 * cudaStream_t) and return 0 or a cudaError_t code (they allocate a small
 * stream-ordered buffer for the per-block partial sums). */
#ifndef STARNN_KERNELS_REDUCE_H
#define STARNN_KERNELS_REDUCE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/reduce.c */
void starnn_sum_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out);
void starnn_sumsq_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out);

/* codelets/cuda/reduce.cu */
int starnn_sum_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out, void *stream);
int starnn_sumsq_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float beta, float *out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
