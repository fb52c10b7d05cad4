/* StarPU codelets of convt2d (fp32). Buffers: fwd (x, w, b, y); bwd_data
 * (w, dy, dx); bwd_weight (x, dy, dw, db). */
#include <config.h>

#include <limits.h>
#include <stddef.h>

#include "codelets/convt2d.h"
#include "runtime/codelet.h"

/* Leading fields (input H, W) are the footprint key: the buffers' matrix
 * shapes give C*H*W and 4*O*H*W but not H and W. */
struct convt2d_args {
	int64_t h, w;
	float beta;
};

static uint32_t convt2d_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct convt2d_args, beta));
}

/* A kernel's error (workspace allocation) becomes the task's deferred error. */
static void report(int rc)
{
	if (rc < 0)
		starnn_defer_error(rc, "%s", starnn_last_error());
}

#ifdef STARNN_USE_CUDA
#define CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CUDA_IMPL(fn)
#endif

/* ---------------------------------------------------------------- forward */

static void convt2d_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), w = starnn_buffer(buffers, 1), b = starnn_buffer(buffers, 2),
	                  y = starnn_buffer(buffers, 3);
	report(starnn_convt2d_fwd_cpu(x.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w, x.ptr, x.ld, w.ptr, w.ld,
	                              b.ptr, y.ptr, y.ld));
}

#ifdef STARNN_USE_CUDA
static void convt2d_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), w = starnn_buffer(buffers, 1), b = starnn_buffer(buffers, 2),
	                  y = starnn_buffer(buffers, 3);
	starnn_convt2d_fwd_cuda(x.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w, x.ptr, x.ld, w.ptr, w.ld,
	                        b.ptr, y.ptr, y.ld, starnn_cublas_handle(), starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("convt2d_fwd");
}
#endif

static STARNN_PERFMODEL_FP(convt2d_fwd, fp32, convt2d_footprint);
struct starpu_codelet starnn_convt2d_fwd_cl = {
	.name = "convt2d_fwd",
	.cpu_funcs = {convt2d_fwd_cpu},
	.cpu_funcs_name = {"convt2d_fwd_cpu"},
	CUDA_IMPL(convt2d_fwd_cuda)
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
	.model = &starnn_convt2d_fwd_fp32_model,
};

/* --------------------------------------------------------- backward data */

static void convt2d_bwd_data_cpu(void *buffers[], void *cl_arg)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	report(starnn_convt2d_bwd_data_cpu(dx.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w, w.ptr, w.ld, dy.ptr,
	                                   dy.ld, a->beta, dx.ptr, dx.ld));
}

#ifdef STARNN_USE_CUDA
static void convt2d_bwd_data_cuda(void *buffers[], void *cl_arg)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat w = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_convt2d_bwd_data_cuda(dx.rows, w.rows, w.cols / 4, (size_t)a->h, (size_t)a->w, w.ptr, w.ld, dy.ptr,
	                             dy.ld, a->beta, dx.ptr, dx.ld, starnn_cublas_handle(), starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("convt2d_bwd_data");
}
#endif

static STARNN_PERFMODEL_FP(convt2d_bwd_data, fp32, convt2d_footprint);
struct starpu_codelet starnn_convt2d_bwd_data_cl = {
	.name = "convt2d_bwd_data",
	.cpu_funcs = {convt2d_bwd_data_cpu},
	.cpu_funcs_name = {"convt2d_bwd_data_cpu"},
	CUDA_IMPL(convt2d_bwd_data_cuda)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	.model = &starnn_convt2d_bwd_data_fp32_model,
};
struct starpu_codelet starnn_convt2d_bwd_data_w_cl = {
	.name = "convt2d_bwd_data",
	.cpu_funcs = {convt2d_bwd_data_cpu},
	.cpu_funcs_name = {"convt2d_bwd_data_cpu"},
	CUDA_IMPL(convt2d_bwd_data_cuda)
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.model = &starnn_convt2d_bwd_data_fp32_model,
};

/* ------------------------------------------------------- backward weight */

static void convt2d_bwd_weight_cpu(void *buffers[], void *cl_arg)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dw = starnn_buffer(buffers, 2),
	                  db = starnn_buffer(buffers, 3);
	report(starnn_convt2d_bwd_weight_cpu(x.rows, dw.rows, dw.cols / 4, (size_t)a->h, (size_t)a->w, x.ptr, x.ld,
	                                     dy.ptr, dy.ld, a->beta, dw.ptr, dw.ld, db.ptr));
}

#ifdef STARNN_USE_CUDA
static void convt2d_bwd_weight_cuda(void *buffers[], void *cl_arg)
{
	const struct convt2d_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dw = starnn_buffer(buffers, 2),
	                  db = starnn_buffer(buffers, 3);
	starnn_convt2d_bwd_weight_cuda(x.rows, dw.rows, dw.cols / 4, (size_t)a->h, (size_t)a->w, x.ptr, x.ld, dy.ptr,
	                               dy.ld, a->beta, dw.ptr, dw.ld, db.ptr, starnn_cublas_handle(),
	                               starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("convt2d_bwd_weight");
}
#endif

static STARNN_PERFMODEL_FP(convt2d_bwd_weight, fp32, convt2d_footprint);
struct starpu_codelet starnn_convt2d_bwd_weight_cl = {
	.name = "convt2d_bwd_weight",
	.cpu_funcs = {convt2d_bwd_weight_cpu},
	.cpu_funcs_name = {"convt2d_bwd_weight_cpu"},
	CUDA_IMPL(convt2d_bwd_weight_cuda)
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
	.model = &starnn_convt2d_bwd_weight_fp32_model,
};
struct starpu_codelet starnn_convt2d_bwd_weight_w_cl = {
	.name = "convt2d_bwd_weight",
	.cpu_funcs = {convt2d_bwd_weight_cpu},
	.cpu_funcs_name = {"convt2d_bwd_weight_cpu"},
	CUDA_IMPL(convt2d_bwd_weight_cuda)
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
	.model = &starnn_convt2d_bwd_weight_fp32_model,
};

/* ------------------------------------------------------------- submission */

/* x [N, C, H, W] (or dx), w [C, O, 2, 2] (or dw), b [O] (or db, may be
 * NULL when not part of the call), y [N, O, 2H, 2W] (or dy). */
static int check_shapes(const char *op, const starnn_tensor *x, const starnn_tensor *w, const starnn_tensor *b,
                        const starnn_tensor *y)
{
	char dx[128], dw[128], db[128], dy[128];
	starnn_tensor_describe(x, dx, sizeof dx);
	starnn_tensor_describe(w, dw, sizeof dw);
	starnn_tensor_describe(y, dy, sizeof dy);
	if (b)
		starnn_tensor_describe(b, db, sizeof db);
	if (x->dtype != STARNN_FP32 || w->dtype != STARNN_FP32 || y->dtype != STARNN_FP32 ||
	    (b && b->dtype != STARNN_FP32))
		return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s, %s, %s", op, dx, dw, dy);
	if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4)
		return starnn_error(STARNN_EINVAL, "%s: 4-D tensors expected, got %s, %s, %s", op, dx, dw, dy);
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3], o = w->shape[1];
	if (w->shape[0] != c || w->shape[2] != 2 || w->shape[3] != 2)
		return starnn_error(STARNN_EINVAL, "%s: weight %s must be [%lld, O, 2, 2] for input %s", op, dw,
		                    (long long)c, dx);
	if (y->shape[0] != n || y->shape[1] != o || y->shape[2] != 2 * h || y->shape[3] != 2 * wd)
		return starnn_error(STARNN_EINVAL, "%s: output %s must be [%lld,%lld,%lld,%lld] for input %s and weight %s",
		                    op, dy, (long long)n, (long long)o, (long long)(2 * h), (long long)(2 * wd), dx, dw);
	if (b && (b->ndim != 1 || b->shape[0] != o))
		return starnn_error(STARNN_EINVAL, "%s: bias %s must be [%lld]", op, db, (long long)o);
	/* BLAS takes int sizes and leading dimensions. */
	if (h * wd > INT_MAX || 4 * o > INT_MAX || c > INT_MAX || w->ld > INT_MAX)
		return starnn_error(STARNN_EINVAL, "%s: sizes of %s / %s too large for BLAS", op, dx, dw);
	return 0;
}

int starnn_convt2d_fwd(starnn_tensor *x, starnn_tensor *w, starnn_tensor *b, starnn_tensor *y)
{
	if (!x || !w || !b || !y)
		return starnn_error(STARNN_EINVAL, "convt2d_fwd: x, w, b and y are required");
	STARNN_CHECK(check_shapes("convt2d_fwd", x, w, b, y));
	struct convt2d_args a = {x->shape[2], x->shape[3], 0.0f};
	struct starnn_task_desc d = {
		.cl = &starnn_convt2d_fwd_cl, .args = &a, .args_size = sizeof a, .tensors = {x, w, b, y}};
	return starnn_submit(&d);
}

int starnn_convt2d_bwd_data(starnn_tensor *w, starnn_tensor *dy, float beta, starnn_tensor *dx)
{
	if (!w || !dy || !dx)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd_data: w, dy and dx are required");
	STARNN_CHECK(check_shapes("convt2d_bwd_data", dx, w, NULL, dy));
	struct convt2d_args a = {dx->shape[2], dx->shape[3], beta};
	struct starnn_task_desc d = {.cl = beta == 0.0f ? &starnn_convt2d_bwd_data_w_cl : &starnn_convt2d_bwd_data_cl,
	                             .args = &a,
	                             .args_size = sizeof a,
	                             .tensors = {w, dy, dx}};
	return starnn_submit(&d);
}

int starnn_convt2d_bwd_weight(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dw, starnn_tensor *db)
{
	if (!x || !dy || !dw || !db)
		return starnn_error(STARNN_EINVAL, "convt2d_bwd_weight: x, dy, dw and db are required");
	STARNN_CHECK(check_shapes("convt2d_bwd_weight", x, dw, db, dy));
	struct convt2d_args a = {x->shape[2], x->shape[3], beta};
	struct starnn_task_desc d = {
		.cl = beta == 0.0f ? &starnn_convt2d_bwd_weight_w_cl : &starnn_convt2d_bwd_weight_cl,
		.args = &a,
		.args_size = sizeof a,
		.tensors = {x, dy, dw, db}};
	return starnn_submit(&d);
}
