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

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

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

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/maxpool.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of starnn_opencl_program_maxpool (codelets/opencl/maxpool.cl),
 * NCHW data of dt (fp32, fp16 or bf16), the _mp CPU kernels' results bit
 * for bit. Each operand is a cl_mem with the offset of its view's first
 * element (elements); shapes as above. CL_SUCCESS, or the OpenCL error
 * (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_maxpool;
cl_int starnn_maxpool_fwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t h,
                                 size_t w, cl_mem x, size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_maxpool_bwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t h,
                                 size_t w, cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy,
                                 float beta, cl_mem dx, size_t dx_off, size_t lddx);
#endif

#ifdef __cplusplus
}
#endif
#endif
