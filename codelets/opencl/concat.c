/* OpenCL launchers of concat (codelets/kernels/concat.h; the kernels:
 * codelets/opencl/concat.cl), fp32, fp16 and bf16. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/concat.h"

cl_int starnn_concat_fwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t ca, cl_mem a,
                                size_t a_off, size_t lda, size_t cb, cl_mem b, size_t b_off, size_t ldb, cl_mem cat,
                                size_t cat_off, size_t ldcat)
{
	const cl_ulong na = ca, nb = cb, ao = a_off, la = lda, bo = b_off, lb = ldb, co = cat_off, lc = ldcat;
	return STARNN_CL_RUN_2D(ctx, dt == STARNN_FP32 ? "concat_fwd_32" : "concat_fwd_16", rows, ca + cb,
	                        STARNN_CL_ARG(na), STARNN_CL_ARG(nb), STARNN_CL_ARG(a), STARNN_CL_ARG(ao),
	                        STARNN_CL_ARG(la), STARNN_CL_ARG(b), STARNN_CL_ARG(bo), STARNN_CL_ARG(lb),
	                        STARNN_CL_ARG(cat), STARNN_CL_ARG(co), STARNN_CL_ARG(lc));
}

/* d = beta d + s over rows x cols */
static cl_int part_bwd(struct starnn_opencl_ctx *ctx, const char *kernel, size_t rows, size_t cols, cl_mem s,
                       size_t s_off, size_t lds, float beta, cl_mem d, size_t d_off, size_t ldd)
{
	const cl_ulong c = cols, so = s_off, ls = lds, dof = d_off, ld = ldd;
	return STARNN_CL_RUN_2D(ctx, kernel, rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(s), STARNN_CL_ARG(so),
	                        STARNN_CL_ARG(ls), STARNN_CL_ARG(beta), STARNN_CL_ARG(d), STARNN_CL_ARG(dof),
	                        STARNN_CL_ARG(ld));
}

cl_int starnn_concat_bwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t ca, size_t cb,
                                cl_mem dcat, size_t dcat_off, size_t ldcat, float beta_a, cl_mem da, size_t da_off,
                                size_t lda, float beta_b, cl_mem db, size_t db_off, size_t ldb)
{
	const char *kernel = dt == STARNN_FP16 ? "concat_bwd_fp16" : dt == STARNN_BF16 ? "concat_bwd_bf16" : "concat_bwd_fp32";
	cl_int err = part_bwd(ctx, kernel, rows, ca, dcat, dcat_off, ldcat, beta_a, da, da_off, lda);
	if (err != CL_SUCCESS)
		return err;
	return part_bwd(ctx, kernel, rows, cb, dcat, dcat_off + ca, ldcat, beta_b, db, db_off, ldb);
}
