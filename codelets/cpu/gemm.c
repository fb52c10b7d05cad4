/* CPU kernel of gemm: OpenBLAS cblas_sgemm in row-major order. OpenBLAS
 * is single-threaded inside StarPU workers (parallelism comes from tasks).
 * A, B, C are strided row-major matrices; cblas takes the leading
 * dimensions as they are (lda >= stored cols of A, etc.). */
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "codelets/kernels/convert.h"
#include "codelets/kernels/gemm.h"
#include "runtime/base/error.h"
#include "runtime/base/features.h" /* STARNN_HAVE_DNNL */
#include "runtime/base/scratch.h"

void starnn_gemm_cpu(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
	if (m == 0 || n == 0)
		return;
	cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, (int)m,
	            (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* ------------------------------------------------------- mixed precision */

/* Scratch for the widened operands: the thread's slot for it
 * (runtime/base/scratch.h: grown on demand, kept between tasks). */
static float *scratch_get(size_t floats)
{
	return starnn_scratch(STARNN_SCRATCH_GEMM, floats * sizeof(float));
}

/* rows x cols of dtype dt (ld) -> dense fp32 (ld = cols). */
static void widen(starnn_dtype dt, size_t rows, size_t cols, const void *x, size_t ld, float *y)
{
	size_t es = dt == STARNN_FP32 ? 4 : 2;
	for (size_t r = 0; r < rows; r++)
		starnn_widen_row_cpu(dt, cols, (const char *)x + r * ld * es, y + r * cols);
}

#ifdef STARNN_HAVE_DNNL
/* oneDNN 2.6 exports this row-major bf16 GEMM without declaring it in
 * dnnl.h: C (fp32) = alpha op(A) op(B) + beta C, bf16 as uint16_t. */
typedef int64_t dnnl_dim_t_;
extern int dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t_ M, dnnl_dim_t_ N, dnnl_dim_t_ K, float alpha,
                                 const uint16_t *A, dnnl_dim_t_ lda, const uint16_t *B, dnnl_dim_t_ ldb, float beta,
                                 float *C, dnnl_dim_t_ ldc);
/* Debian's oneDNN runs on OpenMP: one thread per StarPU worker (tasks give
 * the parallelism, as with OpenBLAS). The setting is per calling thread. */
extern void omp_set_num_threads(int n);

static int dnnl_gemm(int transA, int transB, size_t m, size_t n, size_t k, float alpha, const uint16_t *a, size_t lda,
                     const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc)
{
	static __thread int omp_single;
	if (!omp_single) {
		omp_set_num_threads(1);
		omp_single = 1;
	}
	return dnnl_gemm_bf16bf16f32(transA ? 'T' : 'N', transB ? 'T' : 'N', (dnnl_dim_t_)m, (dnnl_dim_t_)n,
	                             (dnnl_dim_t_)k, alpha, a, (dnnl_dim_t_)lda, b, (dnnl_dim_t_)ldb, beta, c,
	                             (dnnl_dim_t_)ldc);
}

/* oneDNN has bf16 GEMM only on ISAs that have bf16 (AVX-512 and newer); on
 * AVX2-only processors it returns dnnl_unimplemented for every shape.
 * Probed once with a 1x1x1 product. */
static int dnnl_bf16_ok;
static pthread_once_t dnnl_bf16_once = PTHREAD_ONCE_INIT;

static void dnnl_bf16_probe(void)
{
	const uint16_t one = 0x3f80; /* 1.0 in bf16 */
	float c = 0.0f;
	dnnl_bf16_ok = dnnl_gemm(0, 0, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1) == 0 && c == 1.0f;
}
#endif

/* 1 where bf16 products take oneDNN's bf16 GEMM. */
static int use_dnnl_bf16(void)
{
#ifdef STARNN_HAVE_DNNL
	pthread_once(&dnnl_bf16_once, dnnl_bf16_probe);
	return dnnl_bf16_ok;
#else
	return 0;
#endif
}

const char *starnn_gemm_bf16_cpu_route(void)
{
	if (use_dnnl_bf16())
		return "oneDNN bf16 GEMM (dnnl_gemm_bf16bf16f32)";
#ifdef STARNN_HAVE_DNNL
	return "fp32 conversion + OpenBLAS sgemm (oneDNN has no bf16 GEMM on this processor)";
#else
	return "fp32 conversion + OpenBLAS sgemm";
#endif
}

void starnn_gemm_half_cpu(starnn_dtype ab, starnn_dtype cdt, int transA, int transB, size_t m, size_t n, size_t k,
                          float alpha, const void *a, size_t lda, const void *b, size_t ldb, float beta, void *c,
                          size_t ldc)
{
	if (m == 0 || n == 0)
		return;
	size_t ar = transA ? k : m, ac = transA ? m : k, br = transB ? n : k, bc = transB ? k : n;
	int use_dnnl = ab == STARNN_BF16 && use_dnnl_bf16();
	size_t need = (cdt == STARNN_FP32 ? 0 : m * n) + (use_dnnl ? 0 : ar * ac + br * bc);
	float *scratch = need ? scratch_get(need) : NULL;
	if (need && !scratch) {
		starnn_defer_error(STARNN_ENOMEM, "gemm: no memory for the %zu-float fp32 scratch of a %s product", need,
		                   starnn_dtype_name(ab));
		return;
	}
	/* C as fp32: itself, or a dense scratch (holding the old C if beta != 0). */
	float *cf = cdt == STARNN_FP32 ? c : scratch;
	size_t ldcf = cdt == STARNN_FP32 ? ldc : n;
	if (cdt != STARNN_FP32 && beta != 0.0f)
		widen(cdt, m, n, c, ldc, cf);
	if (use_dnnl) {
#ifdef STARNN_HAVE_DNNL
		int st = dnnl_gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cf, ldcf);
		if (st != 0) {
			starnn_defer_error(STARNN_EINVAL, "gemm: dnnl_gemm_bf16bf16f32(m %zu, n %zu, k %zu) failed: status %d",
			                   m, n, k, st);
			return;
		}
#endif
	} else {
		float *af = scratch + (cdt == STARNN_FP32 ? 0 : m * n), *bf = af + ar * ac;
		widen(ab, ar, ac, a, lda, af);
		widen(ab, br, bc, b, ldb, bf);
		if (k == 0) /* BLAS: C = beta C */
			ac = ac ? ac : 1, bc = bc ? bc : 1;
		cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, (int)m,
		            (int)n, (int)k, alpha, af, (int)ac, bf, (int)bc, beta, cf, (int)ldcf);
	}
	if (cdt != STARNN_FP32) {
		size_t es = 2;
		for (size_t r = 0; r < m; r++)
			starnn_narrow_row_cpu(cdt, n, cf + r * n, (char *)c + r * ldc * es);
	}
}
