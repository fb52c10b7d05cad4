/* OpenCL launchers of gemm (codelets/kernels/gemm.h): the fp32 product on
 * CLBlast (CLBlastSgemm, row-major, on the views' buffers and offsets, on
 * ctx->queue), an empty sum (k == 0, which CLBlast refuses) and the
 * mixed-precision products on the kernels of codelets/opencl/gemm.cl. */
#include "codelets/opencl/common.h" /* (first: CL_TARGET_OPENCL_VERSION before CL/cl.h) */
#include "codelets/kernels/gemm.h"

#include <clblast_c.h>
#include <pthread.h>

/* CLBlast 1.5 (Debian 12's) is not safe to call from two threads at once:
 * its first call for a device builds the routine's program and fills
 * process-wide caches (its database, programs, binaries) without a lock
 * that covers them (CLBlast issue 486, fixed upstream in July 2023 by pull
 * request 495, after the 1.5 releases). Two OpenCL workers calling it
 * together crashed in Database::Database (a SEGV copying a half-written
 * entry) or failed with its -2039 (a std::string exception). Every call
 * goes through this lock: a call enqueues the product on ctx->queue and
 * returns (the wait is the launcher's caller's, outside it), so the lock
 * covers host-side work only. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

cl_int starnn_gemm_opencl(struct starnn_opencl_ctx *ctx, int transA, int transB, size_t m, size_t n, size_t k,
                          float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                          float beta, cl_mem c, size_t c_off, size_t ldc)
{
	if (m == 0 || n == 0)
		return CL_SUCCESS;
	if (k == 0) { /* C = beta C (BLAS: nothing read for beta == 0) */
		const cl_ulong nn = n, co = c_off, lc = ldc;
		return STARNN_CL_RUN_2D(ctx, "gemm_beta", m, n, STARNN_CL_ARG(nn), STARNN_CL_ARG(beta), STARNN_CL_ARG(c),
		                        STARNN_CL_ARG(co), STARNN_CL_ARG(lc));
	}
	/* CLBlast's kernels do not read C when beta == 0 (its IsZero(beta)
	 * branches), as BLAS; its status codes are OpenCL's or its own
	 * (below -1000), which the error message shows as numbers. */
	pthread_mutex_lock(&clblast_lock);
	CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, transA ? CLBlastTransposeYes : CLBlastTransposeNo,
	                                    transB ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, a_off,
	                                    lda, b, b_off, ldb, beta, c, c_off, ldc, &ctx->queue, NULL);
	pthread_mutex_unlock(&clblast_lock);
	if (st != CLBlastSuccess) {
		ctx->failed_call = "CLBlastSgemm";
		ctx->failed_kernel = "sgemm (CLBlast)";
		ctx->failed_arg = -1;
	}
	return (cl_int)st;
}

cl_int starnn_gemm_half_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype ab, starnn_dtype cdt, int transA,
                               int transB, size_t m, size_t n, size_t k, float alpha, cl_mem a, size_t a_off,
                               size_t lda, cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c, size_t c_off,
                               size_t ldc)
{
	const cl_ulong nn = n, kk = k, ao = a_off, la = lda, bo = b_off, lb = ldb, co = c_off, lc = ldc;
	const cl_uint bf = ab == STARNN_BF16, ta = transA != 0, tb = transB != 0;
	return STARNN_CL_RUN_2D(ctx, cdt == STARNN_FP32 ? "gemm_half_f32" : "gemm_half_16", m, n, STARNN_CL_ARG(nn),
	                        STARNN_CL_ARG(kk), STARNN_CL_ARG(bf), STARNN_CL_ARG(ta), STARNN_CL_ARG(tb),
	                        STARNN_CL_ARG(alpha), STARNN_CL_ARG(a), STARNN_CL_ARG(ao), STARNN_CL_ARG(la),
	                        STARNN_CL_ARG(b), STARNN_CL_ARG(bo), STARNN_CL_ARG(lb), STARNN_CL_ARG(beta),
	                        STARNN_CL_ARG(c), STARNN_CL_ARG(co), STARNN_CL_ARG(lc));
}
