/* Kernels of the mean squared error: mse_fwd: loss = beta * loss + scale *
 * sum_i (pred_i - target_i)^2, summed in double (beta 0 does not read the
 * loss); mse_bwd: dpred_i = 2 * scale * (pred_i - target_i). Shapes: pred,
 * target, dpred are rows x cols, row-major, each with its own leading
 * dimension; loss points to one float (device memory for CUDA). The _half
 * kernels take pred / dpred of dtype dt (fp16, bf16, or fp32 for the
 * scaled fp32 backward) and fp32 target: pred is widened, the backward
 * multiplies by the loss scale state[0] of a loss-scale state
 * (codelets/kernels/amp.h; 1 when state is NULL) and rounds once to dt. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t); the forward ones
 * return 0 or a cudaError_t code. */
#ifndef STARNN_KERNELS_MSE_H
#define STARNN_KERNELS_MSE_H

#include <stddef.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/mse.c */
void starnn_mse_fwd_cpu(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float beta, float *loss);
void starnn_mse_bwd_cpu(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float *dpred, size_t ldd);
void starnn_mse_fwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                             const float *target, size_t ldt, float scale, float beta, float *loss);
void starnn_mse_bwd_half_cpu(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                             const float *target, size_t ldt, float scale, const float *state, void *dpred,
                             size_t ldd);

/* codelets/cuda/mse.cu */
int starnn_mse_fwd_cuda(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                        float scale, float beta, float *loss, void *stream);
void starnn_mse_bwd_cuda(size_t rows, size_t cols, const float *pred, size_t ldp, const float *target, size_t ldt,
                         float scale, float *dpred, size_t ldd, void *stream);
int starnn_mse_fwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                             const float *target, size_t ldt, float scale, float beta, float *loss, void *stream);
void starnn_mse_bwd_half_cuda(starnn_dtype dt, size_t rows, size_t cols, const void *pred, size_t ldp,
                              const float *target, size_t ldt, float scale, const float *state, void *dpred,
                              size_t ldd, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/mse.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_mse (codelets/opencl/mse.cl).
 * Each operand is a cl_mem with the offset of its view's first element
 * (loss, state: of their first float; state NULL: no loss scaling); shapes
 * as above. The forward kernels need cl_khr_fp64. CL_SUCCESS, or the
 * OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_mse;
cl_int starnn_mse_fwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem pred, size_t p_off,
                             size_t ldp, cl_mem target, size_t t_off, size_t ldt, float scale, float beta, cl_mem loss,
                             size_t loss_off);
cl_int starnn_mse_bwd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, cl_mem pred, size_t p_off,
                             size_t ldp, cl_mem target, size_t t_off, size_t ldt, float scale, cl_mem dpred,
                             size_t d_off, size_t ldd);
cl_int starnn_mse_fwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols,
                                  cl_mem pred, size_t p_off, size_t ldp, cl_mem target, size_t t_off, size_t ldt,
                                  float scale, float beta, cl_mem loss, size_t loss_off);
cl_int starnn_mse_bwd_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t cols,
                                  cl_mem pred, size_t p_off, size_t ldp, cl_mem target, size_t t_off, size_t ldt,
                                  float scale, cl_mem state, size_t state_off, cl_mem dpred, size_t d_off, size_t ldd);
#endif

#ifdef __cplusplus
}
#endif
#endif
