/* Kernels of gemm: C = alpha op(A) op(B) + beta C, row-major, op(X) = X or
 * X^T (transA, transB in {0, 1}). Shapes: op(A) M x K (A stored M x K, or
 * K x M when transA), op(B) K x N (B stored K x N, or N x K when transB),
 * C M x N; each with its own leading dimension. m, n, k fit in an int (the
 * submit function checks). beta == 0 overwrites C without reading it (BLAS
 * semantics). The CUDA kernels run cuBLAS on cublas_handle (a
 * cublasHandle_t bound to the worker's stream) and record a deferred
 * STARNN_ECUDA error (runtime/base/error.h) if cuBLAS fails. The _half
 * kernels take A and B of dtype ab (fp16 or bf16) and C of dtype cdt (fp32
 * or ab), accumulate in fp32 and round a 16-bit C once; the combination is
 * checked by the caller. */
#ifndef STARNN_KERNELS_GEMM_H
#define STARNN_KERNELS_GEMM_H

#include <stddef.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/gemm.c: cblas_sgemm (OpenBLAS, single-threaded inside a
 * worker). _half: bf16 through oneDNN's dnnl_gemm_bf16bf16f32 where the
 * build and the processor have it, otherwise (and for fp16) the operands
 * widened to fp32 into the thread's scratch (runtime/base/scratch.h) and
 * cblas_sgemm; a scratch failure is a deferred STARNN_ENOMEM. */
void starnn_gemm_cpu(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc);
void starnn_gemm_half_cpu(starnn_dtype ab, starnn_dtype cdt, int transA, int transB, size_t m, size_t n, size_t k,
                          float alpha, const void *a, size_t lda, const void *b, size_t ldb, float beta, void *c,
                          size_t ldc);
/* The CPU route of bf16 products in this build and on this processor, in
 * words. */
const char *starnn_gemm_bf16_cpu_route(void);

/* codelets/cuda/gemm.cu: cublasSgemm; _half: cublasGemmEx with
 * CUBLAS_COMPUTE_32F. */
void starnn_gemm_cuda(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc, void *cublas_handle);
void starnn_gemm_half_cuda(starnn_dtype ab, starnn_dtype cdt, int transA, int transB, size_t m, size_t n, size_t k,
                           float alpha, const void *a, size_t lda, const void *b, size_t ldb, float beta, void *c,
                           size_t ldc, void *cublas_handle);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/gemm.c, on ctx->queue (runtime/base/opencl.h), each
 * operand a cl_mem with the offset of its view's first element (elements),
 * shapes as above. fp32: CLBlastSgemm (k == 0: C = beta C on the program
 * starnn_opencl_program_gemm); _half: the kernels of that program
 * (codelets/opencl/gemm.cl), the 16-bit operands widened element by
 * element, fp32 sums, a 16-bit C rounded once. CL_SUCCESS, or the OpenCL
 * (or CLBlast) error, ctx->failed_* saying where. */
extern const struct starnn_opencl_program starnn_opencl_program_gemm;
cl_int starnn_gemm_opencl(struct starnn_opencl_ctx *ctx, int transA, int transB, size_t m, size_t n, size_t k,
                          float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                          float beta, cl_mem c, size_t c_off, size_t ldc);
cl_int starnn_gemm_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype ab, starnn_dtype cdt, int transA,
                               int transB, size_t m, size_t n, size_t k, float alpha, cl_mem a, size_t a_off,
                               size_t lda, cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c, size_t c_off,
                               size_t ldc);
#endif

#ifdef __cplusplus
}
#endif
#endif
