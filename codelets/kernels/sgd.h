/* Kernels of SGD with momentum, dampening, weight decay and Nesterov (as
 * torch.optim.SGD; the update is spelled out in codelets/sgd.h). Shapes: w,
 * grad, buf are rows x cols, row-major, each with its own leading
 * dimension; with momentum 0, buf is neither read nor written. The _amp
 * kernels read the step from a loss-scale state and an overflow flag
 * (codelets/kernels/amp.h; device pointers for CUDA): flag[0] != 0 skips
 * the step, else grad_scale = 1 / state[0] and first = (state[3] == 0). The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_SGD_H
#define STARNN_KERNELS_SGD_H

#include <stddef.h>

#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct starnn_sgd_params {
	float lr, momentum, dampening, weight_decay;
	int nesterov;
};

/* What the kernels get: the parameters of one step. grad_scale multiplies
 * grad first (1 = none); first (step 1) sets buf = g, as PyTorch does when
 * it creates the momentum buffer. */
struct starnn_sgd_step {
	struct starnn_sgd_params p;
	float grad_scale;
	int first;
};

/* codelets/cpu/sgd.c */
void starnn_sgd_cpu(size_t rows, size_t cols, const struct starnn_sgd_step *s, float *w, size_t ldw,
                    const float *grad, size_t ldg, float *buf, size_t ldb);
void starnn_sgd_amp_cpu(size_t rows, size_t cols, const struct starnn_sgd_params *p, const float *state,
                        const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *buf,
                        size_t ldb);

/* codelets/cuda/sgd.cu */
void starnn_sgd_cuda(size_t rows, size_t cols, const struct starnn_sgd_step *s, float *w, size_t ldw,
                     const float *grad, size_t ldg, float *buf, size_t ldb, void *stream);
void starnn_sgd_amp_cuda(size_t rows, size_t cols, const struct starnn_sgd_params *p, const float *state,
                         const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *buf,
                         size_t ldb, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/sgd.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_sgd (codelets/opencl/sgd.cl).
 * Each operand is a cl_mem with the offset of its view's first element
 * (state and flag: of their first float); shapes as above. CL_SUCCESS, or
 * the OpenCL error (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_sgd;
cl_int starnn_sgd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, const struct starnn_sgd_step *s,
                         cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off, size_t ldg, cl_mem buf,
                         size_t b_off, size_t ldb);
cl_int starnn_sgd_amp_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                             const struct starnn_sgd_params *p, cl_mem state, size_t state_off, cl_mem flag,
                             size_t flag_off, cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off,
                             size_t ldg, cl_mem buf, size_t b_off, size_t ldb);
#endif

#ifdef __cplusplus
}
#endif
#endif
