/* Kernels of bias_add (y[s, ch, i] += b[ch]) and bias_grad (db[ch] = beta
 * db[ch] + sum over s, i of dy[s, ch, i]; beta 0 does not read db). Shapes:
 * y, dy are n rows (samples) of channels * inner elements (inner = H*W, 1
 * for [N, C]), rows ld apart; b, db are channels contiguous fp32 values.
 * The _half kernels take y / dy of dtype dt (fp16 or bf16): bias_add adds
 * in fp32 and rounds once, bias_grad sums the widened values in double as
 * the fp32 kernel does. The CUDA kernels are asynchronous on stream (a
 * cudaStream_t). */
#ifndef STARNN_KERNELS_BIAS_H
#define STARNN_KERNELS_BIAS_H

#include <stddef.h>

#include "runtime/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/bias.c */
void starnn_bias_add_cpu(size_t n, size_t channels, size_t inner, const float *b, float *y, size_t ldy);
void starnn_bias_grad_cpu(size_t n, size_t channels, size_t inner, const float *dy, size_t lddy, float beta,
                          float *db);
void starnn_bias_add_half_cpu(starnn_dtype dt, size_t n, size_t channels, size_t inner, const float *b, void *y,
                              size_t ldy);
void starnn_bias_grad_half_cpu(starnn_dtype dt, size_t n, size_t channels, size_t inner, const void *dy, size_t lddy,
                               float beta, float *db);

/* codelets/cuda/bias.cu */
void starnn_bias_add_cuda(size_t n, size_t channels, size_t inner, const float *b, float *y, size_t ldy,
                          void *stream);
void starnn_bias_grad_cuda(size_t n, size_t channels, size_t inner, const float *dy, size_t lddy, float beta,
                           float *db, void *stream);
void starnn_bias_add_half_cuda(starnn_dtype dt, size_t n, size_t channels, size_t inner, const float *b, void *y,
                               size_t ldy, void *stream);
void starnn_bias_grad_half_cuda(starnn_dtype dt, size_t n, size_t channels, size_t inner, const void *dy,
                                size_t lddy, float beta, float *db, void *stream);

#ifdef __cplusplus
}
#endif
#endif
