/* General matrix product on fp32 tensors, row-major:
 *   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
 * Shapes (as the tensors' rows x cols matrix views, see runtime/core/tensor.h;
 * a 4-D tensor [N, C, H, W] is the N x C*H*W matrix):
 *   op(A): M x K  (A stored M x K, or K x M when transA)
 *   op(B): K x N  (B stored K x N, or N x K when transB)
 *   C:     M x N
 * Every operand has its own leading dimension, so partitions (micro-batches,
 * channel slices) are accepted as they are.
 * beta == 0 overwrites C without reading it (BLAS semantics: NaN or garbage
 * in C does not propagate); the codelet then accesses C in STARPU_W mode so
 * that StarPU need not fetch it. */
#ifndef STARNN_GEMM_H
#define STARNN_GEMM_H

#include <stddef.h>
#include <starpu.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels: codelets/kernels/gemm.h. */

/* Codelets: C in STARPU_RW (beta != 0) and in STARPU_W (beta == 0); both
 * use the performance model starnn_gemm_fp32. */
extern struct starpu_codelet starnn_gemm_cl;
extern struct starpu_codelet starnn_gemm_w_cl;

/* Task submission: checks dtypes and shapes (transA, transB in {0, 1}). */
int starnn_gemm(int transA, int transB, float alpha, starnn_tensor *A, starnn_tensor *B, float beta,
                starnn_tensor *C);

/* Mixed precision: A and B both fp16 or both bf16, C fp32 or of A's dtype;
 * products accumulate in fp32 and a 16-bit C is rounded once at the end
 * (with beta != 0 its old value is read widened to fp32).
 *   CPU, bf16: oneDNN's dnnl_gemm_bf16bf16f32 (AVX512-BF16 / AMX) when
 *        starnn is configured with it (STARNN_HAVE_DNNL); otherwise, and
 *        for fp16 always, the operands are widened to fp32 (F16C for fp16)
 *        into a per-thread scratch buffer and cblas_sgemm runs on them.
 *   CUDA: cublasGemmEx with CUBLAS_COMPUTE_32F (tensor cores).
 * Perfmodels starnn_gemm_fp16 and starnn_gemm_bf16 (the footprint covers
 * the transposes and C's dtype). Submission of any of these combinations;
 * all-fp32 operands submit starnn_gemm (the same task as before). Shapes
 * as for starnn_gemm. */
int starnn_gemm_mp(int transA, int transB, float alpha, starnn_tensor *A, starnn_tensor *B, float beta,
                   starnn_tensor *C);

/* The CPU route of bf16 products in this build, in words: "oneDNN bf16
 * GEMM ..." or "fp32 conversion + OpenBLAS sgemm ..." (the kernels' answer,
 * codelets/kernels/gemm.h, declared here too for programs that report it). */
const char *starnn_gemm_bf16_cpu_route(void);

#ifdef __cplusplus
}
#endif
#endif
