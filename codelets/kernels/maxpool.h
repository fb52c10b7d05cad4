/* Kernels of max-pooling 2x2, stride 2, no padding (the rule for ties and
 * NaN, PyTorch's, is spelled out in codelets/maxpool.h): maxpool_fwd: y =
 * max over each window of x; maxpool_bwd: dx = beta dx + dy routed to the
 * element each window picked (the argmax recomputed from x; beta 0 does not
 * read dx). Shapes: n rows (samples) of c*h*w (x, dx) or c*(h/2)*(w/2) (y,
 * dy) elements, each with its own leading dimension; h and w are the
 * input's spatial sizes (an odd last row / column is ignored). The _mp
 * kernels take data of dtype dt (fp32, fp16 or bf16; 16-bit data as
 * uint16_t patterns), widened in blocks on the stack and rounded once. The
 * _blk kernels take data in blocks of cb channels (runtime/base/types.h:
 * starnn_chan_offset; cb 8 or 16 with c a multiple of cb, 1: NCHW). The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_MAXPOOL_H
#define STARNN_KERNELS_MAXPOOL_H

#include <stddef.h>

#include "runtime/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/maxpool.c */
void starnn_maxpool_fwd_cpu(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, float *y,
                            size_t ldy);
void starnn_maxpool_bwd_cpu(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, const float *dy,
                            size_t lddy, float beta, float *dx, size_t lddx);
void starnn_maxpool_fwd_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                               void *y, size_t ldy);
void starnn_maxpool_bwd_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t h, size_t w, const void *x, size_t ldx,
                               const void *dy, size_t lddy, float beta, void *dx, size_t lddx);
void starnn_maxpool_fwd_blk_cpu(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, const void *x,
                                size_t ldx, void *y, size_t ldy);
void starnn_maxpool_bwd_blk_cpu(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, const void *x,
                                size_t ldx, const void *dy, size_t lddy, float beta, void *dx, size_t lddx);

/* codelets/cuda/maxpool.cu */
void starnn_maxpool_fwd_cuda(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, float *y,
                             size_t ldy, void *stream);
void starnn_maxpool_bwd_cuda(size_t n, size_t c, size_t h, size_t w, const float *x, size_t ldx, const float *dy,
                             size_t lddy, float beta, float *dx, size_t lddx, void *stream);

#ifdef __cplusplus
}
#endif
#endif
