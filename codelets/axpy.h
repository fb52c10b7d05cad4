/* Level-1 operations on fp32 tensors of equal shape:
 *   axpy:  y = alpha * x + y
 *   scale: y = alpha * y
 *   add:   z = alpha * x + beta * y
 * Shapes: every operand is rows x cols with its own leading dimension
 * (elements between row starts), so partitions (micro-batches, channel
 * slices) are accepted as they are. */
#ifndef STARNN_AXPY_H
#define STARNN_AXPY_H

#include <stddef.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels (codelets/cpu/axpy.c, codelets/cuda/axpy.cu). */
void starnn_axpy_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy);
void starnn_scale_cpu(size_t rows, size_t cols, float alpha, float *y, size_t ldy);
void starnn_add_cpu(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                    float beta, const float *y, size_t ldy, float *z, size_t ldz);
void starnn_axpy_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx, float *y, size_t ldy,
                      void *stream);
void starnn_scale_cuda(size_t rows, size_t cols, float alpha, float *y, size_t ldy, void *stream);
void starnn_add_cuda(size_t rows, size_t cols, float alpha, const float *x, size_t ldx,
                     float beta, const float *y, size_t ldy, float *z, size_t ldz, void *stream);

/* Task submission. */
int starnn_axpy(float alpha, starnn_tensor *x, starnn_tensor *y);
int starnn_scale(float alpha, starnn_tensor *y);
int starnn_add(float alpha, starnn_tensor *x, float beta, starnn_tensor *y, starnn_tensor *z);

#ifdef __cplusplus
}
#endif
#endif
