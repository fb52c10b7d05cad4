/* StarPU codelets of mse_fwd / mse_bwd (fp32). */
#include <config.h>

#include <math.h>

#include "codelets/mse.h"
#include "runtime/codelet.h"

#ifdef STARNN_USE_CUDA
#include <cuda_runtime.h>
#endif

struct mse_args {
	float scale, beta;
};

/* --------------------------------------------------------------- mse_fwd */

static void mse_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), l = starnn_buffer(buffers, 2);
	starnn_mse_fwd_cpu(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, a->beta, l.ptr);
}

#ifdef STARNN_USE_CUDA
static void mse_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), l = starnn_buffer(buffers, 2);
	int err = starnn_mse_fwd_cuda(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, a->beta, l.ptr,
	                              starnn_cuda_stream());
	if (err)
		starnn_defer_error(STARNN_ECUDA, "mse_fwd: %s", cudaGetErrorString((cudaError_t)err));
	STARNN_CUDA_LAUNCHED("mse_fwd");
}
#endif

static STARNN_PERFMODEL(mse_fwd, fp32);
struct starpu_codelet starnn_mse_fwd_cl = {
	.name = "mse_fwd",
	.cpu_funcs = {mse_fwd_cpu},
	.cpu_funcs_name = {"mse_fwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {mse_fwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_RW},
	.model = &starnn_mse_fwd_fp32_model,
};

/* --------------------------------------------------------------- mse_bwd */

static void mse_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), d = starnn_buffer(buffers, 2);
	starnn_mse_bwd_cpu(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, d.ptr, d.ld);
}

#ifdef STARNN_USE_CUDA
static void mse_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct mse_args *a = cl_arg;
	struct starnn_mat p = starnn_buffer(buffers, 0), t = starnn_buffer(buffers, 1), d = starnn_buffer(buffers, 2);
	starnn_mse_bwd_cuda(p.rows, p.cols, p.ptr, p.ld, t.ptr, t.ld, a->scale, d.ptr, d.ld, starnn_cuda_stream());
	STARNN_CUDA_LAUNCHED("mse_bwd");
}
#endif

static STARNN_PERFMODEL(mse_bwd, fp32);
struct starpu_codelet starnn_mse_bwd_cl = {
	.name = "mse_bwd",
	.cpu_funcs = {mse_bwd_cpu},
	.cpu_funcs_name = {"mse_bwd_cpu"},
#ifdef STARNN_USE_CUDA
	.cuda_funcs = {mse_bwd_cuda},
	.cuda_flags = {STARPU_CUDA_ASYNC},
#endif
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.model = &starnn_mse_bwd_fp32_model,
};

/* ------------------------------------------------------------ submission */

int starnn_mse_fwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *loss, float scale, float beta)
{
	char d[128];
	STARNN_CHECK(starnn_check_like("mse_fwd", "pred", pred, "target", target));
	if (loss->dtype != STARNN_FP32 || starnn_tensor_numel(loss) != 1)
		return starnn_error(STARNN_EINVAL, "mse_fwd: the loss must be a 1-element fp32 tensor, got %s",
		                    starnn_tensor_describe(loss, d, sizeof d));
	if (loss == pred || loss == target)
		return starnn_error(STARNN_EINVAL, "mse_fwd: the loss %s is also an input",
		                    starnn_tensor_describe(loss, d, sizeof d));
	if (!isfinite(scale) || !isfinite(beta))
		return starnn_error(STARNN_EINVAL, "mse_fwd: scale and beta must be finite, got %g and %g", (double)scale,
		                    (double)beta);
	struct mse_args a = {scale, beta};
	struct starnn_task_desc desc = {
		.cl = &starnn_mse_fwd_cl, .args = &a, .args_size = sizeof a, .tensors = {pred, target, loss}};
	return starnn_submit(&desc);
}

int starnn_mse_bwd(starnn_tensor *pred, starnn_tensor *target, starnn_tensor *dpred, float scale)
{
	char d[128];
	STARNN_CHECK(starnn_check_like("mse_bwd", "pred", pred, "target", target));
	STARNN_CHECK(starnn_check_like("mse_bwd", "pred", pred, "dpred", dpred));
	if (dpred == pred || dpred == target)
		return starnn_error(STARNN_EINVAL, "mse_bwd: the gradient %s is also an input",
		                    starnn_tensor_describe(dpred, d, sizeof d));
	if (!isfinite(scale))
		return starnn_error(STARNN_EINVAL, "mse_bwd: scale must be finite, got %g", (double)scale);
	struct mse_args a = {scale, 0.0f};
	struct starnn_task_desc desc = {
		.cl = &starnn_mse_bwd_cl, .args = &a, .args_size = sizeof a, .tensors = {pred, target, dpred}};
	return starnn_submit(&desc);
}
