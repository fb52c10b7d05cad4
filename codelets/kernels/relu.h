/* Kernels of relu_fwd / relu_bwd: y = max(x, 0) (NaN propagates), dx = x > 0
 * ? dy : 0 (the backward takes the forward INPUT x). Shapes: x, y, dy, dx
 * are rows x cols, row-major, each with its own leading dimension. y may
 * equal x and dx may equal dy (the same pointer and ld: in place); no other
 * overlap. The _half kernels take fp16 or bf16 (dt) bit patterns and select
 * on them: their results are exactly the fp32 kernels' on the widened
 * values. The CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_RELU_H
#define STARNN_KERNELS_RELU_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/relu.c */
void starnn_relu_fwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy);
void starnn_relu_bwd_cpu(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                         float *dx, size_t lddx);
void starnn_relu_fwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                              size_t ldy);
void starnn_relu_bwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                              const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx);

/* codelets/cuda/relu.cu */
void starnn_relu_fwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, float *y, size_t ldy, void *stream);
void starnn_relu_bwd_cuda(size_t rows, size_t cols, const float *x, size_t ldx, const float *dy, size_t lddy,
                          float *dx, size_t lddx, void *stream);
void starnn_relu_fwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                               size_t ldy, void *stream);
void starnn_relu_bwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const uint16_t *x, size_t ldx,
                               const uint16_t *dy, size_t lddy, uint16_t *dx, size_t lddx, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/relu.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_relu (codelets/opencl/relu.cl).
 * Each operand is a cl_mem with the offset of its view's first element;
 * shapes and in-place rules as above. CL_SUCCESS, or the OpenCL error
 * (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_relu;
cl_int starnn_relu_fwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off,
                              size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_relu_bwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem x, size_t x_off,
                              size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem dx, size_t dx_off, size_t lddx);
cl_int starnn_relu_fwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols, cl_mem x,
                                   size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_relu_bwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols, cl_mem x,
                                   size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem dx,
                                   size_t dx_off, size_t lddx);
#endif

#ifdef __cplusplus
}
#endif
#endif
