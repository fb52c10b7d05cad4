/* CPU kernel of gemm: OpenBLAS cblas_sgemm in row-major order. OpenBLAS
 * is single-threaded inside StarPU workers (parallelism comes from tasks).
 * A, B, C are strided row-major matrices; cblas takes the leading
 * dimensions as they are (lda >= stored cols of A, etc.). */
#include <cblas.h>

#include "codelets/gemm.h"

void starnn_gemm_cpu(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
	if (m == 0 || n == 0)
		return;
	cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, (int)m,
	            (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}
