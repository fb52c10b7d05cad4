/* General matrix product on fp32 tensors, row-major:
 *   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
 * Shapes (as the tensors' rows x cols matrix views, see runtime/tensor.h;
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

#include "runtime/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels (codelets/cpu/gemm.c, codelets/cuda/gemm.cu). m, n, k must fit
 * in an int (the submit function checks). The CUDA kernel runs cuBLAS on
 * cublas_handle (a cublasHandle_t bound to the worker's stream) and records
 * a deferred STARNN_ECUDA error if cuBLAS fails. */
void starnn_gemm_cpu(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc);
void starnn_gemm_cuda(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc, void *cublas_handle);

/* Codelets: C in STARPU_RW (beta != 0) and in STARPU_W (beta == 0); both
 * use the performance model starnn_gemm_fp32. */
extern struct starpu_codelet starnn_gemm_cl;
extern struct starpu_codelet starnn_gemm_w_cl;

/* Task submission: checks dtypes and shapes (transA, transB in {0, 1}). */
int starnn_gemm(int transA, int transB, float alpha, starnn_tensor *A, starnn_tensor *B, float beta,
                starnn_tensor *C);

#ifdef __cplusplus
}
#endif
#endif
