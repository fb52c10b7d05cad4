/* CUDA kernel of gemm: cuBLAS (column-major) on row-major data.
 * A row-major matrix X (r x c, ld) is, read column-major, X^T (c x r, ld).
 * So the row-major product C = op(A) op(B) (M x N) is computed as the
 * column-major product C^T = op(B)^T op(A)^T (N x M, ldc): swap the
 * operands, keep each operand's own transpose flag, swap M and N. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "codelets/kernels/gemm.h"
#include "runtime/base/error.h"

extern "C" void starnn_gemm_cuda(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a,
                                 size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                                 void *cublas_handle)
{
	if (m == 0 || n == 0)
		return;
	/* alpha and beta are host values: StarPU's handles keep the default
	 * CUBLAS_POINTER_MODE_HOST. */
	cublasStatus_t st = cublasSgemm((cublasHandle_t)cublas_handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
	                                transA ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b, (int)ldb,
	                                a, (int)lda, &beta, c, (int)ldc);
	if (st != CUBLAS_STATUS_SUCCESS)
		starnn_defer_error(STARNN_ECUDA, "gemm: cublasSgemm(%c%c, m %zu, n %zu, k %zu) failed: %s",
		                   transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, cublasGetStatusString(st));
}

/* Mixed precision: cublasGemmEx with fp16 / bf16 A and B, C fp32 or of A's
 * dtype, fp32 accumulation (CUBLAS_COMPUTE_32F: alpha, beta are floats),
 * with the same operand swap as above. */
static cudaDataType_t cuda_type(starnn_dtype dt)
{
	return dt == STARNN_FP16 ? CUDA_R_16F : dt == STARNN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

extern "C" void starnn_gemm_half_cuda(starnn_dtype ab, starnn_dtype cdt, int transA, int transB, size_t m, size_t n,
                                      size_t k, float alpha, const void *a, size_t lda, const void *b, size_t ldb,
                                      float beta, void *c, size_t ldc, void *cublas_handle)
{
	if (m == 0 || n == 0)
		return;
	cublasStatus_t st = cublasGemmEx((cublasHandle_t)cublas_handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
	                                 transA ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b,
	                                 cuda_type(ab), (int)ldb, a, cuda_type(ab), (int)lda, &beta, c, cuda_type(cdt),
	                                 (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		starnn_defer_error(STARNN_ECUDA, "gemm: cublasGemmEx(%s -> %s, %c%c, m %zu, n %zu, k %zu) failed: %s",
		                   starnn_dtype_name(ab), starnn_dtype_name(cdt), transA ? 'T' : 'N', transB ? 'T' : 'N', m,
		                   n, k, cublasGetStatusString(st));
}
