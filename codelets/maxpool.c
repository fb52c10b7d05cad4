/* StarPU codelets of maxpool (fp32). */
#include <config.h>

#include <stddef.h>

#include "codelets/maxpool.h"
#include "runtime/codelet.h"

/* Leading fields (input H, W) are the footprint key: the buffers' matrix
 * shapes give C*H*W but not H and W. */
struct maxpool_args {
	int64_t h, w;
	float beta;
};

static uint32_t maxpool_footprint(struct starpu_task *task)
{
	return starnn_footprint_args(task, offsetof(struct maxpool_args, beta));
}

/* Channels of a buffer of x (cols = c * h * w; views hold whole channels). */
static size_t channels(const struct starnn_mat *x, const struct maxpool_args *a)
{
	return x->cols / (size_t)(a->h * a->w);
}

/* ---------------------------------------------------------------- forward */

static void maxpool_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_maxpool_fwd_cpu(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, x.ptr, x.ld, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void maxpool_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_maxpool_fwd_cuda(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, x.ptr, x.ld, y.ptr, y.ld,
	                        starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("maxpool_fwd");
}
#endif

static STARNN_PERFMODEL_FP(maxpool_fwd, fp32, maxpool_footprint);
struct starpu_codelet starnn_maxpool_fwd_cl = {
	.name = "maxpool_fwd",
	.cpu_funcs = {maxpool_fwd_cpu},
	.cpu_funcs_name = {"maxpool_fwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {maxpool_fwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_W},
	.model = &starnn_maxpool_fwd_fp32_model,
};

/* --------------------------------------------------------------- backward */

static void maxpool_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_maxpool_bwd_cpu(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, x.ptr, x.ld, dy.ptr, dy.ld,
	                       a->beta, dx.ptr, dx.ld);
}

#ifdef STARNN_USE_CUDA
static void maxpool_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct maxpool_args *a = cl_arg;
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_maxpool_bwd_cuda(x.rows, channels(&x, a), (size_t)a->h, (size_t)a->w, x.ptr, x.ld, dy.ptr, dy.ld,
	                        a->beta, dx.ptr, dx.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("maxpool_bwd");
}
#endif

static STARNN_PERFMODEL_FP(maxpool_bwd, fp32, maxpool_footprint);
struct starpu_codelet starnn_maxpool_bwd_cl = {
	.name = "maxpool_bwd",
	.cpu_funcs = {maxpool_bwd_cpu},
	.cpu_funcs_name = {"maxpool_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {maxpool_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	.model = &starnn_maxpool_bwd_fp32_model,
};
struct starpu_codelet starnn_maxpool_bwd_w_cl = {
	.name = "maxpool_bwd",
	.cpu_funcs = {maxpool_bwd_cpu},
	.cpu_funcs_name = {"maxpool_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {maxpool_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.model = &starnn_maxpool_bwd_fp32_model,
};

/* ------------------------------------------------------------- submission */

/* x [N, C, H, W] (H, W >= 2) and its pooled y [N, C, H/2, W/2]. */
static int check_shapes(const char *op, const starnn_tensor *x, const char *yname, const starnn_tensor *y)
{
	char dx[128], dy[128];
	starnn_tensor_describe(x, dx, sizeof dx);
	starnn_tensor_describe(y, dy, sizeof dy);
	if (x->dtype != STARNN_FP32 || y->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s and %s", op, dx, dy);
	if (x->ndim != 4 || y->ndim != 4)
		return starnn_error(STARNN_EINVAL, "%s: 4-D NCHW tensors expected, got %s and %s", op, dx, dy);
	if (x->shape[2] < 2 || x->shape[3] < 2)
		return starnn_error(STARNN_EINVAL, "%s: input %s smaller than the 2x2 window", op, dx);
	if (y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1] || y->shape[2] != x->shape[2] / 2 ||
	    y->shape[3] != x->shape[3] / 2)
		return starnn_error(STARNN_EINVAL, "%s: %s must be [%lld,%lld,%lld,%lld] for input %s, got %s", op, yname,
		                    (long long)x->shape[0], (long long)x->shape[1], (long long)(x->shape[2] / 2),
		                    (long long)(x->shape[3] / 2), dx, dy);
	return 0;
}

int starnn_maxpool_fwd(starnn_tensor *x, starnn_tensor *y)
{
	STARNN_CHECK(check_shapes("maxpool_fwd", x, "y", y));
	struct maxpool_args a = {x->shape[2], x->shape[3], 0.0f};
	struct starnn_task_desc d = {.cl = &starnn_maxpool_fwd_cl, .args = &a, .args_size = sizeof a, .tensors = {x, y}};
	return starnn_submit(&d);
}

int starnn_maxpool_bwd(starnn_tensor *x, starnn_tensor *dy, float beta, starnn_tensor *dx)
{
	char d1[128], d2[128];
	STARNN_CHECK(check_shapes("maxpool_bwd", x, "dy", dy));
	if (dx->dtype != STARNN_FP32 || !starnn_tensor_same_shape(x, dx))
		return starnn_error(STARNN_EINVAL, "maxpool_bwd: dx %s must have the shape and dtype of x %s",
		                    starnn_tensor_describe(dx, d1, sizeof d1), starnn_tensor_describe(x, d2, sizeof d2));
	struct maxpool_args a = {x->shape[2], x->shape[3], beta};
	struct starnn_task_desc d = {.cl = beta == 0.0f ? &starnn_maxpool_bwd_w_cl : &starnn_maxpool_bwd_cl,
	                             .args = &a,
	                             .args_size = sizeof a,
	                             .tensors = {x, dy, dx}};
	return starnn_submit(&d);
}
