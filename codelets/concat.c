/* StarPU codelets of concat (fp32, fp16, bf16: CPU, CUDA and OpenCL) and the
 * no-copy channel views. */
#include "codelets/concat.h"
#include "codelets/halfwrap.h"
#include "codelets/kernels/concat.h"
#include "runtime/core/codelet.h"

struct concat_args {
	float beta_a, beta_b;
};

#ifdef STARNN_USE_CUDA
#define CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CUDA_IMPL(fn)
#endif

#ifdef STARNN_USE_OPENCL
/* Both directions, any dtype: the OpenCL kernels take dt. */
static void concat_fwd_opencl_dt(void *buffers[], starnn_dtype dt)
{
	struct starnn_clmat a = starnn_cl_buffer(buffers, 0), b = starnn_cl_buffer(buffers, 1),
	                    c = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(concat);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "concat_fwd",
		                       starnn_concat_fwd_opencl(ctx, dt, c.rows, a.cols, a.mem, a.off, a.ld, b.cols, b.mem,
		                                                b.off, b.ld, c.mem, c.off, c.ld));
}

static void concat_bwd_opencl_dt(void *buffers[], void *cl_arg, starnn_dtype dt)
{
	const struct concat_args *a = cl_arg;
	struct starnn_clmat dc = starnn_cl_buffer(buffers, 0), da = starnn_cl_buffer(buffers, 1),
	                    db = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(concat);
	if (ctx)
		STARNN_OPENCL_LAUNCHED(ctx, "concat_bwd",
		                       starnn_concat_bwd_opencl(ctx, dt, dc.rows, da.cols, db.cols, dc.mem, dc.off, dc.ld,
		                                                a->beta_a, da.mem, da.off, da.ld, a->beta_b, db.mem,
		                                                db.off, db.ld));
}
#define CC_OPENCL(dt, DT)                                                                                   \
	static void concat_fwd_##dt##_opencl(void *buffers[], void *cl_arg)                                 \
	{                                                                                                   \
		(void)cl_arg;                                                                               \
		concat_fwd_opencl_dt(buffers, DT);                                                          \
	}                                                                                                   \
	static void concat_bwd_##dt##_opencl(void *buffers[], void *cl_arg)                                 \
	{                                                                                                   \
		concat_bwd_opencl_dt(buffers, cl_arg, DT);                                                  \
	}
#else
#define CC_OPENCL(dt, DT)
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

CC_OPENCL(fp32, STARNN_FP32)

static STARNN_PERFMODEL(concat_fwd, fp32);
struct starpu_codelet starnn_concat_fwd_cl = {
	.name = "concat_fwd",
	.cpu_funcs = {concat_fwd_cpu},
	.cpu_funcs_name = {"concat_fwd_cpu"},
	CUDA_IMPL(concat_fwd_cuda)
	STARNN_OPENCL_FUNCS(concat_fwd_fp32_opencl)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	STARNN_MODELS(concat_fwd, fp32),
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
		CUDA_IMPL(concat_bwd_cuda) STARNN_OPENCL_FUNCS(concat_bwd_fp32_opencl)                        \
		.nbuffers = 3, .modes = {STARPU_R, mode_a, mode_b},                                            \
		STARNN_MODELS(concat_bwd, fp32),                                                               \
	}
struct starpu_codelet starnn_concat_bwd_cl[2][2] = {
	{CONCAT_BWD_CL(STARPU_W, STARPU_W), CONCAT_BWD_CL(STARPU_W, STARPU_RW)},
	{CONCAT_BWD_CL(STARPU_RW, STARPU_W), CONCAT_BWD_CL(STARPU_RW, STARPU_RW)},
};

/* ------------------------------------------------------- mixed precision
 * fp16 / bf16 a, b, cat (da, db, dcat). CPU: the _mp kernels on the 16-bit
 * buffers. CUDA: widened to fp32 inside the task (codelets/halfwrap.h), the
 * fp32 kernels run, outputs rounded back. The forward and beta 0 are exact
 * copies; beta 1 rounds the sum once. */

static void concat_fwd_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	(void)cl_arg;
	struct starnn_mat a = starnn_buffer(buffers, 0), b = starnn_buffer(buffers, 1), c = starnn_buffer(buffers, 2);
	if (!cuda) {
		starnn_concat_fwd_mp_cpu(dt, c.rows, a.cols, a.ptr, a.ld, b.cols, b.ptr, b.ld, c.ptr, c.ld);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "concat_fwd_half", cuda);
	struct starnn_mat aw = starnn_hw_in(&h, dt, a, 1), bw = starnn_hw_in(&h, dt, b, 1), cw = starnn_hw_in(&h, dt, c, 0);
	if (!h.failed) {
		starnn_concat_fwd_cuda(c.rows, a.cols, aw.ptr, aw.ld, b.cols, bw.ptr, bw.ld, cw.ptr, cw.ld, h.stream);
		STARNN_CUDA_LAUNCHED("concat_fwd_half");
		starnn_hw_out(&h, dt, cw, c);
	}
	starnn_hw_end(&h);
#endif
}

static void concat_bwd_half(void *buffers[], void *cl_arg, starnn_dtype dt, int cuda)
{
	const struct concat_args *a = cl_arg;
	struct starnn_mat dc = starnn_buffer(buffers, 0), da = starnn_buffer(buffers, 1), db = starnn_buffer(buffers, 2);
	if (!cuda) {
		starnn_concat_bwd_mp_cpu(dt, dc.rows, da.cols, db.cols, dc.ptr, dc.ld, a->beta_a, da.ptr, da.ld, a->beta_b,
		                         db.ptr, db.ld);
		return;
	}
#ifdef STARNN_USE_CUDA
	struct starnn_hw h;
	starnn_hw_begin(&h, "concat_bwd_half", cuda);
	struct starnn_mat dcw = starnn_hw_in(&h, dt, dc, 1), daw = starnn_hw_in(&h, dt, da, a->beta_a != 0.0f),
	                  dbw = starnn_hw_in(&h, dt, db, a->beta_b != 0.0f);
	if (!h.failed) {
		starnn_concat_bwd_cuda(dc.rows, da.cols, db.cols, dcw.ptr, dcw.ld, a->beta_a, daw.ptr, daw.ld, a->beta_b,
		                       dbw.ptr, dbw.ld, h.stream);
		STARNN_CUDA_LAUNCHED("concat_bwd_half");
		starnn_hw_out(&h, dt, daw, da);
		starnn_hw_out(&h, dt, dbw, db);
	}
	starnn_hw_end(&h);
#endif
}

#ifdef STARNN_USE_CUDA
#define CC_HALF_CUDA(fn, dt, DT)                                                                            \
	static void fn##_##dt##_cuda(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 1); }
#else
#define CC_HALF_CUDA(fn, dt, DT)
#endif
#define CC_HALF_FNS(fn, dt, DT)                                                                             \
	static void fn##_##dt##_cpu(void *buffers[], void *cl_arg) { fn##_half(buffers, cl_arg, DT, 0); }   \
	CC_HALF_CUDA(fn, dt, DT)
#define CC_HALF_CL(fn, dt, stem, ma, mb)                                                                    \
	{                                                                                                   \
		.name = #fn "_" #dt, .cpu_funcs = {fn##_##dt##_cpu}, .cpu_funcs_name = {#fn "_" #dt "_cpu"}, \
		CUDA_IMPL(fn##_##dt##_cuda) STARNN_OPENCL_FUNCS(fn##_##dt##_opencl)                        \
		.nbuffers = 3, .modes = {STARPU_R, ma, mb}, STARNN_MODELS_OF(stem),                         \
	}
#define CC_HALF(dt, DT)                                                                                     \
	CC_HALF_FNS(concat_fwd, dt, DT)                                                                     \
	CC_HALF_FNS(concat_bwd, dt, DT)                                                                     \
	CC_OPENCL(dt, DT)                                                                                   \
	static STARNN_PERFMODEL(concat_fwd, dt);                                                            \
	static STARNN_PERFMODEL(concat_bwd, dt);                                                            \
	static struct starpu_codelet concat_fwd_##dt##_cl = {                                               \
		.name = "concat_fwd_" #dt,                                                                  \
		.cpu_funcs = {concat_fwd_##dt##_cpu},                                                       \
		.cpu_funcs_name = {"concat_fwd_" #dt "_cpu"},                                               \
		CUDA_IMPL(concat_fwd_##dt##_cuda)                                                           \
		STARNN_OPENCL_FUNCS(concat_fwd_##dt##_opencl)                                               \
		.nbuffers = 3,                                                                              \
		.modes = {STARPU_R, STARPU_R, STARPU_W},                                                    \
		STARNN_MODELS(concat_fwd, dt),                                                              \
	};                                                                                                  \
	static struct starpu_codelet concat_bwd_##dt##_cl[2][2] = {                                         \
		{CC_HALF_CL(concat_bwd, dt, starnn_concat_bwd_##dt, STARPU_W, STARPU_W),                    \
		 CC_HALF_CL(concat_bwd, dt, starnn_concat_bwd_##dt, STARPU_W, STARPU_RW)},                  \
		{CC_HALF_CL(concat_bwd, dt, starnn_concat_bwd_##dt, STARPU_RW, STARPU_W),                   \
		 CC_HALF_CL(concat_bwd, dt, starnn_concat_bwd_##dt, STARPU_RW, STARPU_RW)},                 \
	};

CC_HALF(fp16, STARNN_FP16)
CC_HALF(bf16, STARNN_BF16)

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
static int check_shapes(const char *op, const starnn_tensor *a, const starnn_tensor *b, const starnn_tensor *cat,
                        starnn_dtype dt)
{
	char da[128], db[128], dc[128];
	if (!a || !b || !cat)
		return starnn_error(STARNN_EINVAL, "%s: three tensors are required", op);
	starnn_tensor_describe(a, da, sizeof da);
	starnn_tensor_describe(b, db, sizeof db);
	starnn_tensor_describe(cat, dc, sizeof dc);
	if (a->dtype != dt || b->dtype != dt || cat->dtype != dt)
		return starnn_error(STARNN_EINVAL, "%s: %s tensors expected, got %s, %s, %s", op, starnn_dtype_name(dt), da,
		                    db, dc);
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
	STARNN_CHECK(check_shapes("concat_fwd", a, b, cat, STARNN_FP32));
	/* a copy: no arithmetic (the backward's beta blends count one per element) */
	struct starnn_task_desc d = {.cl = &starnn_concat_fwd_cl, .flops = STARNN_NO_FLOPS, .tensors = {a, b, cat}};
	return starnn_submit(&d);
}

int starnn_concat_bwd(starnn_tensor *dcat, float beta_a, starnn_tensor *da, float beta_b, starnn_tensor *db)
{
	STARNN_CHECK(check_shapes("concat_bwd", da, db, dcat, STARNN_FP32));
	struct concat_args a = {beta_a, beta_b};
	struct starnn_task_desc d = {.cl = &starnn_concat_bwd_cl[beta_a != 0.0f][beta_b != 0.0f],
	                             .args = &a,
	                             .args_size = sizeof a,
	                             .tensors = {dcat, da, db}};
	return starnn_submit(&d);
}

static starnn_dtype act_dtype(const starnn_tensor *t)
{
	return t && starnn_hw_is_half(t->dtype) ? t->dtype : STARNN_FP32;
}

int starnn_concat_fwd_mp(starnn_tensor *a, starnn_tensor *b, starnn_tensor *cat)
{
	starnn_dtype dt = act_dtype(a);
	if (dt == STARNN_FP32)
		return starnn_concat_fwd(a, b, cat);
	STARNN_CHECK(check_shapes("concat_fwd", a, b, cat, dt));
	struct starnn_task_desc d = {.cl = dt == STARNN_FP16 ? &concat_fwd_fp16_cl : &concat_fwd_bf16_cl,
	                             .flops = STARNN_NO_FLOPS, .tensors = {a, b, cat}};
	return starnn_submit(&d);
}

int starnn_concat_bwd_mp(starnn_tensor *dcat, float beta_a, starnn_tensor *da, float beta_b, starnn_tensor *db)
{
	starnn_dtype dt = act_dtype(dcat);
	if (dt == STARNN_FP32)
		return starnn_concat_bwd(dcat, beta_a, da, beta_b, db);
	STARNN_CHECK(check_shapes("concat_bwd", da, db, dcat, dt));
	struct concat_args a = {beta_a, beta_b};
	struct starpu_codelet(*cls)[2] = dt == STARNN_FP16 ? concat_bwd_fp16_cl : concat_bwd_bf16_cl;
	struct starnn_task_desc d = {.cl = &cls[beta_a != 0.0f][beta_b != 0.0f],
	                             .args = &a,
	                             .args_size = sizeof a,
	                             .tensors = {dcat, da, db}};
	return starnn_submit(&d);
}
