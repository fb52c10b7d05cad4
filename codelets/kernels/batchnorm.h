/* Kernels of batch normalisation (the operation and how its steps combine
 * over micro-batches: codelets/batchnorm.h). Shapes: x, y, dy, dx are n
 * rows (samples) of c channels of inner elements each (inner = H*W; 1 for
 * [N, C]), rows ld apart; per-channel vectors (gamma, beta, mean, invstd,
 * running statistics, dgamma, dbeta) are c contiguous floats. A slot
 * (sums) is 2*c doubles: per-channel sums (of x and x^2 forward, of g and
 * g * (x - mean) backward); slots is nslots of them, lds doubles apart;
 * accumulate adds to a slot instead of overwriting it. y, when given to a
 * backward kernel (NULL: no fused ReLU), masks dy by (y > 0). The _mp
 * kernels take data of dtype dt (fp32, fp16 or bf16; 16-bit data as
 * uint16_t patterns), widened in chunks on the stack, y / dx rounded once:
 * bitwise the fp32 kernels on the widened data, rounded. The _blk kernels
 * take data in blocks of cb channels (runtime/base/types.h:
 * starnn_chan_offset; cb a multiple of 8 dividing c, NHWC when cb = c), the
 * output side (y, dy) in blocks of cby, a multiple of cb dividing c. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t); their sums use
 * atomics in double (not bitwise reproducible from run to run). The
 * OpenCL kernels (NCHW, every dtype) are the CPU kernels' bits. */
#ifndef STARNN_KERNELS_BATCHNORM_H
#define STARNN_KERNELS_BATCHNORM_H

#include <stddef.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/batchnorm.c */

/* sums[0:c) (+)= sum of x, sums[c:2c) (+)= sum of x^2, per channel. */
void starnn_bn_stats_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, double *sums, int accumulate);
/* From the slots' totals over count values per channel: mean, invstd, and
 * (when update_running) the running statistics. */
void starnn_bn_finalize_cpu(size_t c, size_t nslots, const double *slots, size_t lds, double count, float eps,
                            float momentum, int update_running, float *mean, float *invstd, float *running_mean,
                            float *running_var);
/* y = gamma * (x - mean) * invstd + beta (then max(., 0) when relu). With
 * var_given, stat is a variance (evaluation mode: invstd = 1/sqrt(stat + eps)),
 * else it is invstd. */
void starnn_bn_apply_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *mean,
                         const float *stat, int var_given, float eps, const float *gamma, const float *beta, int relu,
                         float *y, size_t ldy);
/* g = dy, masked by (y > 0) when y is not NULL (fused ReLU):
 * sums[0:c) (+)= sum g, sums[c:2c) (+)= sum g * (x - mean). */
void starnn_bn_bwd_reduce_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                              size_t lddy, const float *y, size_t ldy, const float *mean, double *sums, int accumulate);
/* dgamma = sum(g*xhat) + beta * dgamma, dbeta = sum(g) + beta * dbeta, the
 * sums taken over the nslots slots (beta 0: old values not read). */
void starnn_bn_bwd_params_cpu(size_t c, size_t nslots, const double *slots, size_t lds, const float *invstd,
                              float beta, float *dgamma, float *dbeta);
/* dx = gamma*invstd * (g - sum(g)/count - xhat * sum(g*xhat)/count) + beta * dx,
 * the sums over the nslots slots; y (NULL: no ReLU) masks dy as above. */
void starnn_bn_bwd_apply_cpu(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                             size_t lddy, const float *y, size_t ldy, const float *mean, const float *invstd,
                             const float *gamma, size_t nslots, const double *slots, size_t lds, double count,
                             float beta, float *dx, size_t lddx);

/* The data kernels on data of dtype dt (fp32, fp16 or bf16; 16-bit data as
 * uint16_t patterns), per-channel vectors and sums as above: 16-bit data
 * are read in chunks widened to fp32 on the stack and y / dx rounded once
 * (nearest even), so the results are bitwise those of the fp32 kernels on
 * the widened data (rounded). dt == STARNN_FP32 is the fp32 kernel. */
void starnn_bn_stats_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                            double *sums, int accumulate);
void starnn_bn_apply_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                            const float *mean, const float *stat, int var_given, float eps, const float *gamma,
                            const float *beta, int relu, void *y, size_t ldy);
void starnn_bn_bwd_reduce_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                                 const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean,
                                 double *sums, int accumulate);
void starnn_bn_bwd_apply_mp_cpu(starnn_dtype dt, size_t n, size_t c, size_t inner, const void *x, size_t ldx,
                                const void *dy, size_t lddy, const void *y, size_t ldy, const float *mean,
                                const float *invstd, const float *gamma, size_t nslots, const double *slots,
                                size_t lds, double count, float beta, void *dx, size_t lddx);

/* The same on blocked data (runtime/base/types.h: blocks of cb channels, a
 * multiple of 8, c a multiple of cb; nChw8c / nChw16c, NHWC when cb = c;
 * rows ld apart as above). The output side (y, dy) is in blocks of cby, a
 * multiple of cb dividing c (cby = cb: the same layout; a concatenation in
 * blocks of its halves normalised into one NHWC tensor: cb = c / 2, cby =
 * c). A channel's sums run in another order than the NCHW kernels'
 * (agreeing to double rounding); y and dx are computed element by element
 * as there. */
void starnn_bn_stats_blk_cpu(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t inner, const void *x,
                             size_t ldx, double *sums, int accumulate);
void starnn_bn_apply_blk_cpu(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner, const void *x,
                             size_t ldx, const float *mean, const float *stat, int var_given, float eps,
                             const float *gamma, const float *beta, int relu, void *y, size_t ldy);
void starnn_bn_bwd_reduce_blk_cpu(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner,
                                  const void *x, size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy,
                                  const float *mean, double *sums, int accumulate);
void starnn_bn_bwd_apply_blk_cpu(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner,
                                 const void *x, size_t ldx, const void *dy, size_t lddy, const void *y, size_t ldy,
                                 const float *mean, const float *invstd, const float *gamma, size_t nslots,
                                 const double *slots, size_t lds, double count, float beta, void *dx, size_t lddx);

/* total[0:n) += slot[0:n): adds one slot to another (n = 2*c doubles). */
void starnn_bn_slot_add_cpu(size_t n, const double *slot, double *total);

/* codelets/cuda/batchnorm.cu: the same on a CUDA stream (device pointers). */
void starnn_bn_stats_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx, double *sums, int accumulate,
                          void *stream);
void starnn_bn_finalize_cuda(size_t c, size_t nslots, const double *slots, size_t lds, double count, float eps,
                             float momentum, int update_running, float *mean, float *invstd, float *running_mean,
                             float *running_var, void *stream);
void starnn_bn_apply_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *mean,
                          const float *stat, int var_given, float eps, const float *gamma, const float *beta, int relu,
                          float *y, size_t ldy, void *stream);
void starnn_bn_bwd_reduce_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                               size_t lddy, const float *y, size_t ldy, const float *mean, double *sums,
                               int accumulate, void *stream);
void starnn_bn_bwd_params_cuda(size_t c, size_t nslots, const double *slots, size_t lds, const float *invstd,
                               float beta, float *dgamma, float *dbeta, void *stream);
void starnn_bn_slot_add_cuda(size_t n, const double *slot, double *total, void *stream);
void starnn_bn_bwd_apply_cuda(size_t n, size_t c, size_t inner, const float *x, size_t ldx, const float *dy,
                              size_t lddy, const float *y, size_t ldy, const float *mean, const float *invstd,
                              const float *gamma, size_t nslots, const double *slots, size_t lds, double count,
                              float beta, float *dx, size_t lddx, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/batchnorm.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_batchnorm
 * (codelets/opencl/batchnorm.cl), NCHW data of dtype dt (fp32, fp16, bf16,
 * as the _mp kernels: 16-bit widened exactly, y / dx rounded once), the
 * CPU kernels' results bit for bit: each reduction runs the CPU's loops
 * for its channel in one work-item. Each operand is a cl_mem with the
 * offset of its view's first element (elements); slots (doubles) with
 * their offset and leading dimension in doubles; y NULL: no fused ReLU.
 * Shapes and arguments otherwise as the CPU kernels'. Needs a device with
 * cl_khr_fp64 (the program does not build elsewhere). CL_SUCCESS, or the
 * OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_batchnorm;
cl_int starnn_bn_stats_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                              cl_mem x, size_t x_off, size_t ldx, cl_mem sums, size_t sums_off, int accumulate);
cl_int starnn_bn_finalize_opencl(struct starnn_opencl_ctx *ctx, size_t c, size_t nslots, cl_mem slots,
                                 size_t slots_off, size_t lds, double count, float eps, float momentum,
                                 int update_running, cl_mem mean, size_t mean_off, cl_mem invstd, size_t invstd_off,
                                 cl_mem running_mean, size_t rm_off, cl_mem running_var, size_t rv_off);
cl_int starnn_bn_apply_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                              cl_mem x, size_t x_off, size_t ldx, cl_mem mean, size_t mean_off, cl_mem stat,
                              size_t stat_off, int var_given, float eps, cl_mem gamma, size_t gamma_off, cl_mem beta,
                              size_t beta_off, int relu, cl_mem y, size_t y_off, size_t ldy);
cl_int starnn_bn_bwd_reduce_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                                   cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem y,
                                   size_t y_off, size_t ldy, cl_mem mean, size_t mean_off, cl_mem sums,
                                   size_t sums_off, int accumulate);
cl_int starnn_bn_bwd_params_opencl(struct starnn_opencl_ctx *ctx, size_t c, size_t nslots, cl_mem slots,
                                   size_t slots_off, size_t lds, cl_mem invstd, size_t invstd_off, float beta,
                                   cl_mem dgamma, size_t dgamma_off, cl_mem dbeta, size_t dbeta_off);
cl_int starnn_bn_bwd_apply_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                                  cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem y,
                                  size_t y_off, size_t ldy, cl_mem mean, size_t mean_off, cl_mem invstd,
                                  size_t invstd_off, cl_mem gamma, size_t gamma_off, size_t nslots, cl_mem slots,
                                  size_t slots_off, size_t lds, double count, float beta, cl_mem dx, size_t dx_off,
                                  size_t lddx);
cl_int starnn_bn_slot_add_opencl(struct starnn_opencl_ctx *ctx, size_t n, cl_mem slot, size_t slot_off, cl_mem total,
                                 size_t total_off);
#endif

#ifdef __cplusplus
}
#endif
#endif
