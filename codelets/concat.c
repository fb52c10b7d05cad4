/* StarPU codelets of concat (fp32) and the no-copy channel views. */
#include <config.h>

#include "codelets/concat.h"
#include "runtime/codelet.h"

struct concat_args {
	float beta_a, beta_b;
};

#ifdef STARNN_USE_CUDA
#define CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CUDA_IMPL(fn)
#endif

/* ---------------------------------------------------------------- forward */

static void concat_fwd_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1), c = starnn_buffer(buffers, 2);
	starnn_concat_fwd_cpu(c.rows, a.cols, a.ptr, a.ld, b.cols, b.ptr, b.ld, c.ptr, c.ld);
}

#ifdef STARNN_USE_CUDA
static void concat_fwd_cuda(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1), c = starnn_buffer(buffers, 2);
	starnn_concat_fwd_cuda(c.rows, a.cols, a.ptr, a.ld, b.cols, b.ptr, b.ld, c.ptr, c.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("concat_fwd");
}
#endif

static STARNN_PERFMODEL(concat_fwd, fp32);
struct starpu_codelet starnn_concat_fwd_cl = {
	.name = "concat_fwd",
	.cpu_funcs = {concat_fwd_cpu},
	.cpu_funcs_name = {"concat_fwd_cpu"},
	CUDA_IMPL(concat_fwd_cuda)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.model = &starnn_concat_fwd_fp32_model,
};

/* --------------------------------------------------------------- backward */

static void concat_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct concat_args *a = cl_arg;
	struct starnn_mat dc = starnn_buffer(buffers, 0), da = starnn_buffer(buffers, 1), db = starnn_buffer(buffers, 2);
	starnn_concat_bwd_cpu(dc.rows, da.cols, db.cols, dc.ptr, dc.ld, a->beta_a, da.ptr, da.ld, a->beta_b, db.ptr,
	                      db.ld);
}

#ifdef STARNN_USE_CUDA
static void concat_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct concat_args *a = cl_arg;
	struct starnn_mat dc = starnn_buffer(buffers, 0), da = starnn_buffer(buffers, 1), db = starnn_buffer(buffers, 2);
	starnn_concat_bwd_cuda(dc.rows, da.cols, db.cols, dc.ptr, dc.ld, a->beta_a, da.ptr, da.ld, a->beta_b, db.ptr,
	                       db.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("concat_bwd");
}
#endif

static STARNN_PERFMODEL(concat_bwd, fp32);
#define CONCAT_BWD_CL(mode_a, mode_b)                                                                          \
	{                                                                                                      \
		.name = "concat_bwd", .cpu_funcs = {concat_bwd_cpu}, .cpu_funcs_name = {"concat_bwd_cpu"},     \
		CUDA_IMPL(concat_bwd_cuda).nbuffers = 3, .modes = {STARPU_R, mode_a, mode_b},                  \
		.model = &starnn_concat_bwd_fp32_model,                                                        \
	}
struct starpu_codelet starnn_concat_bwd_cl[2][2] = {
	{CONCAT_BWD_CL(STARPU_W, STARPU_W), CONCAT_BWD_CL(STARPU_W, STARPU_RW)},
	{CONCAT_BWD_CL(STARPU_RW, STARPU_W), CONCAT_BWD_CL(STARPU_RW, STARPU_RW)},
};

/* ------------------------------------------------------------- submission */

int starnn_concat_views(starnn_tensor *cat, int64_t c1, starnn_tensor **a, starnn_tensor **b)
{
	char d[128];
	if (!cat || !a || !b)
		return starnn_error(STARNN_EINVAL, "concat_views: cat, a and b are required");
	if (cat->ndim < 2 || c1 <= 0 || c1 >= cat->shape[1])
		return starnn_error(STARNN_EINVAL, "concat_views: cannot split %s after channel %lld",
		                    starnn_tensor_describe(cat, d, sizeof d), (long long)c1);
	int64_t sizes[2] = {c1, cat->shape[1] - c1};
	starnn_tensor **parts;
	STARNN_CHECK(starnn_tensor_split(cat, 1, 2, sizes, &parts));
	*a = parts[0];
	*b = parts[1];
	return 0;
}

/* a [N, C1, ...] and b [N, C2, ...] concatenate into cat [N, C1+C2, ...]. */
static int check_shapes(const char *op, const starnn_tensor *a, const starnn_tensor *b, const starnn_tensor *cat)
{
	char da[128], db[128], dc[128];
	if (!a || !b || !cat)
		return starnn_error(STARNN_EINVAL, "%s: three tensors are required", op);
	starnn_tensor_describe(a, da, sizeof da);
	starnn_tensor_describe(b, db, sizeof db);
	starnn_tensor_describe(cat, dc, sizeof dc);
	if (a->dtype != STARNN_FP32 || b->dtype != STARNN_FP32 || cat->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s, %s, %s", op, da, db, dc);
	int ok = a->ndim >= 2 && a->ndim == b->ndim && a->ndim == cat->ndim && a->shape[0] == cat->shape[0] &&
	         b->shape[0] == cat->shape[0] && a->shape[1] + b->shape[1] == cat->shape[1];
	for (int i = 2; ok && i < a->ndim; i++)
		ok = a->shape[i] == cat->shape[i] && b->shape[i] == cat->shape[i];
	if (!ok)
		return starnn_error(STARNN_EINVAL, "%s: %s and %s do not concatenate along channels into %s", op, da, db,
		                    dc);
	return 0;
}

int starnn_concat_fwd(starnn_tensor *a, starnn_tensor *b, starnn_tensor *cat)
{
	STARNN_CHECK(check_shapes("concat_fwd", a, b, cat));
	struct starnn_task_desc d = {.cl = &starnn_concat_fwd_cl, .tensors = {a, b, cat}};
	return starnn_submit(&d);
}

int starnn_concat_bwd(starnn_tensor *dcat, float beta_a, starnn_tensor *da, float beta_b, starnn_tensor *db)
{
	STARNN_CHECK(check_shapes("concat_bwd", da, db, dcat));
	struct concat_args a = {beta_a, beta_b};
	struct starnn_task_desc d = {.cl = &starnn_concat_bwd_cl[beta_a != 0.0f][beta_b != 0.0f],
	                             .args = &a,
	                             .args_size = sizeof a,
	                             .tensors = {dcat, da, db}};
	return starnn_submit(&d);
}
