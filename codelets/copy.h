/* copy: y = x, for two tensors of the same dtype (fp32, fp16 or bf16) and
 * the same shape. Each has its own leading dimension, so a dense tensor can
 * be copied into a channel part of another (a concatenation) and back.
 * The kernels move bytes: elem_size is 4 (fp32) or 2 (fp16 / bf16).
 * Perfmodels: starnn_copy_fp32, starnn_copy_fp16, starnn_copy_bf16. */
#ifndef STARNN_COPY_H
#define STARNN_COPY_H

#include <stddef.h>

#include "runtime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels (codelets/cpu/copy.c, codelets/cuda/copy.cu). x and y must not
 * overlap. ldx, ldy are in elements. The CUDA kernel is one
 * cudaMemcpy2DAsync on the stream; it returns 0 or the cudaError_t. */
void starnn_copy_cpu(size_t rows, size_t cols, size_t elem_size, const void *x, size_t ldx, void *y, size_t ldy);
int starnn_copy_cuda(size_t rows, size_t cols, size_t elem_size, const void *x, size_t ldx, void *y, size_t ldy,
                     void *stream);

/* Task submission. copy(x, x) does nothing. */
int starnn_copy(starnn_tensor *x, starnn_tensor *y);

#ifdef __cplusplus
}
#endif
#endif
