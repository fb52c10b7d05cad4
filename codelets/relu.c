/* StarPU codelets of relu_fwd / relu_bwd (fp32), with in-place forms: StarPU
 * does not accept one handle twice in a task when one access writes, so
 * y == x (and dx == dy) get a codelet with a single RW buffer. */
#include <config.h>

#include "codelets/relu.h"
#include "runtime/codelet.h"

/* -------------------------------------------------------------- forward */

static void relu_fwd_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_relu_fwd_cpu(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld);
}

static void relu_fwd_inplace_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_relu_fwd_cpu(y.rows, y.cols, y.ptr, y.ld, y.ptr, y.ld);
}

#ifdef STARNN_USE_CUDA
static void relu_fwd_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);
	starnn_relu_fwd_cuda(y.rows, y.cols, x.ptr, x.ld, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_fwd");
}

static void relu_fwd_inplace_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat y = starnn_buffer(buffers, 0);
	starnn_relu_fwd_cuda(y.rows, y.cols, y.ptr, y.ld, y.ptr, y.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_fwd_inplace");
}
#endif

static STARNN_PERFMODEL(relu_fwd, fp32);
struct starpu_codelet starnn_relu_fwd_cl = {
	.name = "relu_fwd",
	.cpu_funcs = {relu_fwd_cpu},
	.cpu_funcs_name = {"relu_fwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_fwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_W},
	.model = &starnn_relu_fwd_fp32_model,
};

static STARNN_PERFMODEL(relu_fwd_inplace, fp32);
struct starpu_codelet starnn_relu_fwd_inplace_cl = {
	.name = "relu_fwd_inplace",
	.cpu_funcs = {relu_fwd_inplace_cpu},
	.cpu_funcs_name = {"relu_fwd_inplace_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_fwd_inplace_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.model = &starnn_relu_fwd_inplace_fp32_model,
};

/* ------------------------------------------------------------- backward */

static void relu_bwd_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_relu_bwd_cpu(dx.rows, dx.cols, x.ptr, x.ld, dy.ptr, dy.ld, dx.ptr, dx.ld);
}

static void relu_bwd_inplace_cpu(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	starnn_relu_bwd_cpu(g.rows, g.cols, x.ptr, x.ld, g.ptr, g.ld, g.ptr, g.ld);
}

#ifdef STARNN_USE_CUDA
static void relu_bwd_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), dy = starnn_buffer(buffers, 1), dx = starnn_buffer(buffers, 2);
	starnn_relu_bwd_cuda(dx.rows, dx.cols, x.ptr, x.ld, dy.ptr, dy.ld, dx.ptr, dx.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_bwd");
}

static void relu_bwd_inplace_cuda(void *buffers[], void *cl_arg)
{
	struct starnn_mat x = starnn_buffer(buffers, 0), g = starnn_buffer(buffers, 1);
	starnn_relu_bwd_cuda(g.rows, g.cols, x.ptr, x.ld, g.ptr, g.ld, g.ptr, g.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("relu_bwd_inplace");
}
#endif

static STARNN_PERFMODEL(relu_bwd, fp32);
struct starpu_codelet starnn_relu_bwd_cl = {
	.name = "relu_bwd",
	.cpu_funcs = {relu_bwd_cpu},
	.cpu_funcs_name = {"relu_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.model = &starnn_relu_bwd_fp32_model,
};

static STARNN_PERFMODEL(relu_bwd_inplace, fp32);
struct starpu_codelet starnn_relu_bwd_inplace_cl = {
	.name = "relu_bwd_inplace",
	.cpu_funcs = {relu_bwd_inplace_cpu},
	.cpu_funcs_name = {"relu_bwd_inplace_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {relu_bwd_inplace_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	.model = &starnn_relu_bwd_inplace_fp32_model,
};

/* ------------------------------------------------------------ submission */

int starnn_relu_fwd(starnn_tensor *x, starnn_tensor *y)
{
	STARNN_CHECK(starnn_check_like("relu_fwd", "x", x, "y", y));
	if (x == y) {
		struct starnn_task_desc d = {.cl = &starnn_relu_fwd_inplace_cl, .tensors = {y}};
		return starnn_submit(&d);
	}
	struct starnn_task_desc d = {.cl = &starnn_relu_fwd_cl, .tensors = {x, y}};
	return starnn_submit(&d);
}

int starnn_relu_bwd(starnn_tensor *x, starnn_tensor *dy, starnn_tensor *dx)
{
	STARNN_CHECK(starnn_check_like("relu_bwd", "x", x, "dy", dy));
	STARNN_CHECK(starnn_check_like("relu_bwd", "x", x, "dx", dx));
	if (dx == x)
		return starnn_error(STARNN_EINVAL, "relu_bwd: dx cannot be the forward input x ('%s'): "
		                    "the mask needs x; write into dy instead", x->name);
	if (dx == dy) {
		struct starnn_task_desc d = {.cl = &starnn_relu_bwd_inplace_cl, .tensors = {x, dx}};
		return starnn_submit(&d);
	}
	struct starnn_task_desc d = {.cl = &starnn_relu_bwd_cl, .tensors = {x, dy, dx}};
	return starnn_submit(&d);
}
