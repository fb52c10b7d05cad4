/* Kernels of Adam / AdamW (as torch.optim.Adam / AdamW; the update is
 * spelled out in codelets/adam.h). Shapes: w, grad, m, v are rows x cols,
 * row-major, each with its own leading dimension. A step's bias
 * corrections come computed in double (starnn_adam_step_init), so the
 * kernels do not depend on t otherwise. The _amp kernels read the step
 * from a loss-scale state and an overflow flag (codelets/kernels/amp.h;
 * device pointers for CUDA): flag[0] != 0 skips the step, else t =
 * state[3] + 1 and grad_scale = 1 / state[0]. The _cast kernels also write
 * h = the updated w narrowed to hdt (fp16 or bf16, rounded as
 * codelets/kernels/convert.h does), chunk by chunk while w is in cache. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_ADAM_H
#define STARNN_KERNELS_ADAM_H

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

struct starnn_adam_params {
	float lr, beta1, beta2, eps, weight_decay;
	int decoupled; /* AdamW: decay the weights, not the gradient */
};

/* What the kernels get: the parameters of one step. */
struct starnn_adam_step {
	struct starnn_adam_params p;
	float grad_scale;
	float step_size; /* lr / (1 - beta1^t) */
	float bc2_sqrt;  /* sqrt(1 - beta2^t) */
	float decay;     /* 1 - lr * weight_decay if decoupled, else 1 */
};

/* Fills s for step t (1-based) with the bias corrections computed in
 * double (codelets/cpu/adam.c; the CUDA _amp kernel does the same on the
 * device). */
void starnn_adam_step_init(struct starnn_adam_step *s, const struct starnn_adam_params *p, int64_t t,
                           float grad_scale);

/* codelets/cpu/adam.c */
void starnn_adam_cpu(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                     const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv);
void starnn_adam_amp_cpu(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                         const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m, size_t ldm,
                         float *v, size_t ldv);
void starnn_adam_cast_cpu(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                          const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv, starnn_dtype hdt,
                          void *h, size_t ldh);
void starnn_adam_amp_cast_cpu(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                              const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m,
                              size_t ldm, float *v, size_t ldv, starnn_dtype hdt, void *h, size_t ldh);

/* codelets/cuda/adam.cu */
void starnn_adam_cuda(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                      const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv, void *stream);
void starnn_adam_amp_cuda(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                          const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m,
                          size_t ldm, float *v, size_t ldv, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/adam.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_adam (codelets/opencl/adam.cl).
 * Each operand is a cl_mem with the offset of its view's first element
 * (state and flag: of their first float); shapes as above. The _amp ones
 * read the flag and the state back first (blocking) and compute the step
 * on the host, as the CPU kernel does. CL_SUCCESS, or the OpenCL error
 * (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_adam;
cl_int starnn_adam_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, const struct starnn_adam_step *s,
                          cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off, size_t ldg, cl_mem m,
                          size_t m_off, size_t ldm, cl_mem v, size_t v_off, size_t ldv);
cl_int starnn_adam_amp_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                              const struct starnn_adam_params *p, cl_mem state, size_t state_off, cl_mem flag,
                              size_t flag_off, cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off,
                              size_t ldg, cl_mem m, size_t m_off, size_t ldm, cl_mem v, size_t v_off, size_t ldv);
cl_int starnn_adam_cast_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                               const struct starnn_adam_step *s, cl_mem w, size_t w_off, size_t ldw, cl_mem grad,
                               size_t g_off, size_t ldg, cl_mem m, size_t m_off, size_t ldm, cl_mem v, size_t v_off,
                               size_t ldv, starnn_dtype hdt, cl_mem h, size_t h_off, size_t ldh);
cl_int starnn_adam_amp_cast_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                                   const struct starnn_adam_params *p, cl_mem state, size_t state_off, cl_mem flag,
                                   size_t flag_off, cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off,
                                   size_t ldg, cl_mem m, size_t m_off, size_t ldm, cl_mem v, size_t v_off, size_t ldv,
                                   starnn_dtype hdt, cl_mem h, size_t h_off, size_t ldh);
#endif

#ifdef __cplusplus
}
#endif
#endif
