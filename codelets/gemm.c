/* StarPU codelets of gemm (fp32; CPU, CUDA and OpenCL): C = alpha * op(A) * op(B) + beta * C.
 *
 * Two codelets share the kernels and the performance model: with beta == 0
 * the result does not depend on C, so C is accessed in STARPU_W mode and
 * StarPU neither fetches C to the worker's memory node nor orders the task
 * after readers of the old C beyond what W requires; with beta != 0 C is
 * STARPU_RW. */
#include <limits.h>
#include <math.h>
#include <stddef.h>

#include "codelets/gemm.h"
#include "codelets/kernels/gemm.h"
#include "runtime/core/codelet.h"

/* Copied into the task. The transposes lead: they change the cost for the
 * same buffer shapes, so the footprint covers them (alpha, beta do not). */
struct gemm_args {
	int transA, transB;
	float alpha, beta;
};

static uint32_t gemm_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct gemm_args, alpha));
}

/* Buffers: A, B, C. M, N from C; K from A (its cols, or rows if transposed). */
static void gemm_cpu(void *buffers[], void *cl_arg)
{
	const struct gemm_args *g = cl_arg;
	struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1), c = starnn_buffer(buffers, 2);
	size_t k = g->transA ? a.rows : a.cols;
	starnn_gemm_cpu(g->transA, g->transB, c.rows, c.cols, k, g->alpha, a.ptr, a.ld, b.ptr, b.ld, g->beta, c.ptr,
	                c.ld);
}

#ifdef STARNN_USE_CUDA
static void gemm_cuda(void *buffers[], void *cl_arg)
{
	const struct gemm_args *g = cl_arg;
	struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1), c = starnn_buffer(buffers, 2);
	size_t k = g->transA ? a.rows : a.cols;
	starnn_gemm_cuda(g->transA, g->transB, c.rows, c.cols, k, g->alpha, a.ptr, a.ld, b.ptr, b.ld, g->beta, c.ptr,
	                 c.ld, starnn_cublas_handle());
}
#endif

#ifdef STARNN_USE_OPENCL
static void gemm_opencl(void *buffers[], void *cl_arg)
{
	const struct gemm_args *g = cl_arg;
	struct starnn_clmat a = starnn_cl_buffer(buffers, 0), b = starnn_cl_buffer(buffers, 1);
	struct starnn_clmat c = starnn_cl_buffer(buffers, 2);
	size_t k = g->transA ? a.rows : a.cols;
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(gemm);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "gemm",
		                       starnn_gemm_opencl(ctx, g->transA, g->transB, c.rows, c.cols, k, g->alpha, a.mem, a.off,
		                                          a.ld, b.mem, b.off, b.ld, g->beta, c.mem, c.off, c.ld));
}
#endif

static STARNN_PERFMODEL_FP(gemm, fp32, gemm_footprint);

struct starpu_codelet starnn_gemm_cl = {
	.name = "gemm",
	.cpu_funcs = {gemm_cpu},
	.cpu_funcs_name = {"gemm_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {gemm_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(gemm_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	STARNN_MODELS(gemm, fp32),
};

struct starpu_codelet starnn_gemm_w_cl = {
	.name = "gemm",
	.cpu_funcs = {gemm_cpu},
	.cpu_funcs_name = {"gemm_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {gemm_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	STARNN_OPENCL_FUNCS(gemm_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(gemm, fp32),
};

/* ------------------------------------------------------------ submission */

/* Shared by the fp32 and the mixed-precision submissions (transposes and
 * dtypes already checked): aliasing, op(A) op(B) = C shapes, int limits. */
static int check_shapes(int transA, int transB, const starnn_tensor *A, const starnn_tensor *B,
                        const starnn_tensor *C, const char *da, const char *db, const char *dc)
{
	if (C == A || C == B)
		return starnn_error(STARNN_EINVAL, "gemm: C must not be an input: A %s, B %s, C %s", da, db, dc);
	size_t m = transA ? A->cols : A->rows, k = transA ? A->rows : A->cols;
	size_t kb = transB ? B->cols : B->rows, n = transB ? B->rows : B->cols;
	if (k != kb || C->rows != m || C->cols != n)
		return starnn_error(STARNN_EINVAL,
		                    "gemm: shapes do not match: op(A) is %zu x %zu (A %s as %zu x %zu%s), op(B) is %zu x %zu "
		                    "(B %s as %zu x %zu%s), C %s is %zu x %zu; need op(A) M x K, op(B) K x N, C M x N",
		                    m, k, da, A->rows, A->cols, transA ? ", transposed" : "", kb, n, db, B->rows, B->cols,
		                    transB ? ", transposed" : "", dc, C->rows, C->cols);
	/* BLAS and cuBLAS take int dimensions and leading dimensions. */
	if (m > INT_MAX || n > INT_MAX || k > INT_MAX || A->ld > INT_MAX || B->ld > INT_MAX || C->ld > INT_MAX)
		return starnn_error(STARNN_EINVAL, "gemm: dimensions beyond INT_MAX: A %s, B %s, C %s", da, db, dc);
	return 0;
}

/* 2 M N K: a multiply and an add per term of each of C's M x N sums
 * (beta's scaling of C left out). */
static double gemm_flops(int transA, const starnn_tensor *A, const starnn_tensor *C)
{
	size_t k = transA ? A->rows : A->cols;
	return 2.0 * (double)C->rows * (double)C->cols * (double)k;
}

int starnn_gemm(int transA, int transB, float alpha, starnn_tensor *A, starnn_tensor *B, float beta,
                starnn_tensor *C)
{
	char da[128], db[128], dc[128];
	if (!A || !B || !C)
		return starnn_error(STARNN_EINVAL, "gemm: NULL tensor (A %p, B %p, C %p)", (void *)A, (void *)B, (void *)C);
	starnn_tensor_describe(A, da, sizeof da);
	starnn_tensor_describe(B, db, sizeof db);
	starnn_tensor_describe(C, dc, sizeof dc);
	if ((transA != 0 && transA != 1) || (transB != 0 && transB != 1))
		return starnn_error(STARNN_EINVAL, "gemm: transA and transB must be 0 or 1, got %d and %d", transA, transB);
	if (A->dtype != STARNN_FP32 || B->dtype != STARNN_FP32 || C->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "gemm: fp32 tensors expected, got A %s, B %s, C %s", da, db, dc);
	STARNN_CHECK(check_shapes(transA, transB, A, B, C, da, db, dc));

	struct gemm_args g = {transA, transB, alpha, beta};
	struct starnn_task_desc d = {
		.cl = beta == 0.0f ? &starnn_gemm_w_cl : &starnn_gemm_cl,
		.args = &g,
		.args_size = sizeof g,
		.flops = gemm_flops(transA, A, C),
		.tensors = {A, B, C},
	};
	return starnn_submit(&d);
}

/* ------------------------------------------------------- mixed precision */

/* The transposes and C's dtype lead: they change the cost for the same
 * buffer shapes (the input dtype is the codelet's). */
struct gemm_half_args {
	int transA, transB, cdt;
	float alpha, beta;
};

static uint32_t gemm_half_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct gemm_half_args, alpha));
}

#ifdef STARNN_USE_CUDA
#define GEMM_HALF_CUDA(dt, DT)                                                                             \
	static void gemm_##dt##_cuda(void *buffers[], void *cl_arg)                                        \
	{                                                                                                  \
		const struct gemm_half_args *g = cl_arg;                                                   \
		struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1);            \
		struct starnn_mat c = starnn_buffer(buffers, 2);                                           \
		size_t k = g->transA ? a.rows : a.cols;                                                    \
		starnn_gemm_half_cuda(DT, (starnn_dtype)g->cdt, g->transA, g->transB, c.rows, c.cols, k,   \
		                      g->alpha, a.ptr, a.ld, b.ptr, b.ld, g->beta, c.ptr, c.ld,            \
		                      starnn_cublas_handle());                                             \
	}
#define GEMM_HALF_CUDA_FIELDS(dt) .cuda_funcs = {gemm_##dt##_cuda}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define GEMM_HALF_CUDA(dt, DT)
#define GEMM_HALF_CUDA_FIELDS(dt)
#endif

#ifdef STARNN_USE_OPENCL
#define GEMM_HALF_OPENCL(dt, DT)                                                                           \
	static void gemm_##dt##_opencl(void *buffers[], void *cl_arg)                                      \
	{                                                                                                  \
		const struct gemm_half_args *g = cl_arg;                                                   \
		struct starnn_clmat a = starnn_cl_buffer(buffers, 0), b = starnn_cl_buffer(buffers, 1);    \
		struct starnn_clmat c = starnn_cl_buffer(buffers, 2);                                      \
		size_t k = g->transA ? a.rows : a.cols;                                                    \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(gemm);                                   \
		if (ctx)                                                                                   \
			STARNN_OPENCL_LAUNCHED(ctx, "gemm_" #dt,                                           \
			                       starnn_gemm_half_opencl(ctx, DT, (starnn_dtype)g->cdt, g->transA, \
			                                               g->transB, c.rows, c.cols, k, g->alpha,   \
			                                               a.mem, a.off, a.ld, b.mem, b.off, b.ld,   \
			                                               g->beta, c.mem, c.off, c.ld));            \
	}
#else
#define GEMM_HALF_OPENCL(dt, DT)
#endif

/* For input dtype dt: CPU / CUDA functions, the model starnn_gemm_<dt>, and
 * the codelets with C in RW (beta != 0) and W (beta == 0). */
#define GEMM_HALF_CODELETS(dt, DT)                                                                         \
	static void gemm_##dt##_cpu(void *buffers[], void *cl_arg)                                         \
	{                                                                                                  \
		const struct gemm_half_args *g = cl_arg;                                                   \
		struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1);            \
		struct starnn_mat c = starnn_buffer(buffers, 2);                                           \
		size_t k = g->transA ? a.rows : a.cols;                                                    \
		starnn_gemm_half_cpu(DT, (starnn_dtype)g->cdt, g->transA, g->transB, c.rows, c.cols, k,    \
		                     g->alpha, a.ptr, a.ld, b.ptr, b.ld, g->beta, c.ptr, c.ld);            \
	}                                                                                                  \
	GEMM_HALF_CUDA(dt, DT)                                                                             \
	GEMM_HALF_OPENCL(dt, DT)                                                                           \
	static STARNN_PERFMODEL_FP(gemm, dt, gemm_half_footprint);                                         \
	static struct starpu_codelet gemm_##dt##_cl = {                                                    \
		.name = "gemm_" #dt,                                                                       \
		.cpu_funcs = {gemm_##dt##_cpu},                                                            \
		.cpu_funcs_name = {"gemm_" #dt "_cpu"},                                                    \
		GEMM_HALF_CUDA_FIELDS(dt)                                                                  \
		STARNN_OPENCL_FUNCS(gemm_##dt##_opencl)                                                    \
		.nbuffers = 3,                                                                             \
		.modes = {STARPU_R, STARPU_R, STARPU_RW},                                                  \
		STARNN_MODELS(gemm, dt),                                                                   \
	};                                                                                                 \
	static struct starpu_codelet gemm_##dt##_w_cl = {                                                  \
		.name = "gemm_" #dt,                                                                       \
		.cpu_funcs = {gemm_##dt##_cpu},                                                            \
		.cpu_funcs_name = {"gemm_" #dt "_cpu"},                                                    \
		GEMM_HALF_CUDA_FIELDS(dt)                                                                  \
		STARNN_OPENCL_FUNCS(gemm_##dt##_opencl)                                                    \
		.nbuffers = 3,                                                                             \
		.modes = {STARPU_R, STARPU_R, STARPU_W},                                                   \
		STARNN_MODELS(gemm, dt),                                                                   \
	};

GEMM_HALF_CODELETS(fp16, STARNN_FP16)
GEMM_HALF_CODELETS(bf16, STARNN_BF16)

int starnn_gemm_mp(int transA, int transB, float alpha, starnn_tensor *A, starnn_tensor *B, float beta,
                   starnn_tensor *C)
{
	char da[128], db[128], dc[128];
	if (!A || !B || !C)
		return starnn_error(STARNN_EINVAL, "gemm: NULL tensor (A %p, B %p, C %p)", (void *)A, (void *)B, (void *)C);
	if (A->dtype == STARNN_FP32 && B->dtype == STARNN_FP32 && C->dtype == STARNN_FP32)
		return starnn_gemm(transA, transB, alpha, A, B, beta, C);
	starnn_tensor_describe(A, da, sizeof da);
	starnn_tensor_describe(B, db, sizeof db);
	starnn_tensor_describe(C, dc, sizeof dc);
	if ((A->dtype != STARNN_FP16 && A->dtype != STARNN_BF16) || B->dtype != A->dtype ||
	    (C->dtype != STARNN_FP32 && C->dtype != A->dtype))
		return starnn_error(STARNN_EINVAL,
		                    "gemm: mixed precision wants A and B both fp16 or both bf16 and C fp32 or of their "
		                    "dtype; got A %s, B %s, C %s",
		                    da, db, dc);
	if ((transA != 0 && transA != 1) || (transB != 0 && transB != 1))
		return starnn_error(STARNN_EINVAL, "gemm: transA and transB must be 0 or 1, got %d and %d", transA, transB);
	STARNN_CHECK(check_shapes(transA, transB, A, B, C, da, db, dc));
	if (!isfinite(alpha) || !isfinite(beta))
		return starnn_error(STARNN_EINVAL, "gemm: alpha and beta must be finite, got %g and %g", (double)alpha,
		                    (double)beta);

	struct gemm_half_args g = {transA, transB, (int)C->dtype, alpha, beta};
	int fp16 = A->dtype == STARNN_FP16;
	struct starnn_task_desc d = {
		.cl = beta == 0.0f ? (fp16 ? &gemm_fp16_w_cl : &gemm_bf16_w_cl) : (fp16 ? &gemm_fp16_cl : &gemm_bf16_cl),
		.args = &g,
		.args_size = sizeof g,
		.flops = gemm_flops(transA, A, C),
		.tensors = {A, B, C},
	};
	return starnn_submit(&d);
}
