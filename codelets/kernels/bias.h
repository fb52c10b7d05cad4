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

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

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

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/bias.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of starnn_opencl_program_bias (codelets/opencl/bias.cl), the CPU
 * kernels' results bit for bit. Each operand is a cl_mem with the offset
 * of its view's first element (elements); shapes as above. CL_SUCCESS, or
 * the OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_bias;
cl_int starnn_bias_add_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t channels, size_t inner, cl_mem b,
                              size_t b_off, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_bias_grad_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t channels, size_t inner, cl_mem dy,
                               size_t dy_off, size_t lddy, float beta, cl_mem db, size_t db_off);
cl_int starnn_bias_add_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t channels,
                                   size_t inner, cl_mem b, size_t b_off, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_bias_grad_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t channels,
                                    size_t inner, cl_mem dy, size_t dy_off, size_t lddy, float beta, cl_mem db,
                                    size_t db_off);
#endif

#ifdef __cplusplus
}
#endif
#endif
