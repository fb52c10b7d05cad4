/* Kernels of axpy / scale / add (fp32): y = alpha x + y, y = alpha y,
 * z = alpha x + beta y. Shapes: every operand is rows x cols, row-major,
 * with its own leading dimension ld (elements between row starts), so a
 * part of a tensor (micro-batch, channel slice) is passed as it is. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_AXPY_H
#define STARNN_KERNELS_AXPY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/axpy.c */
void starnn_axpy_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy);
void starnn_scale_cpu(size_t rows, size_t cols, float alpha, float *y, size_t ldy);
void starnn_add_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                    float beta, const float *y, size_t ldy, float *z, size_t ldz);

/* codelets/cuda/axpy.cu */
void starnn_axpy_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy,
                      void *stream);
void starnn_scale_cuda(size_t rows, size_t cols, float alpha, float *y, size_t ldy, void *stream);
void starnn_add_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                     float beta, const float *y, size_t ldy, float *z, size_t ldz, void *stream);

#ifdef __cplusplus
}
#endif
#endif
