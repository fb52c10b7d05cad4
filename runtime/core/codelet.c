#include <config.h>

#include <string.h>

#include "runtime/core/codelet.h"

#ifdef STARNN_USE_CUDA
#include <cuda_runtime.h>
#include <starpu_cublas_v2.h>
#endif
#ifdef STARNN_USE_CUDNN
#include <cudnn.h>

/* One cuDNN handle per CUDA worker, created on the worker's own thread and
 * bound to its stream (cuDNN handles are not to be shared across streams). */
static cudnnHandle_t cudnn_handles[STARPU_NMAXWORKERS];

static void cudnn_create(void *arg)
{
	int w = starpu_worker_get_id();
	(void)arg;
	cudnnStatus_t st = cudnnCreate(&cudnn_handles[w]);
	if (st != CUDNN_STATUS_SUCCESS) {
		starnn_defer_error(STARNN_ECUDA, "cudnnCreate on worker %d: %s", w, cudnnGetErrorString(st));
		cudnn_handles[w] = NULL;
		return;
	}
	cudnnSetStream(cudnn_handles[w], starpu_cuda_get_local_stream());
}

static void cudnn_destroy(void *arg)
{
	int w = starpu_worker_get_id();
	(void)arg;
	if (cudnn_handles[w])
		cudnnDestroy(cudnn_handles[w]);
	cudnn_handles[w] = NULL;
}

void starnn_cudnn_init(void)
{
	starpu_execute_on_each_worker(cudnn_create, NULL, STARPU_CUDA);
}

void starnn_cudnn_shutdown(void)
{
	starpu_execute_on_each_worker(cudnn_destroy, NULL, STARPU_CUDA);
}

void *starnn_cudnn_handle(void)
{
	int w = starpu_worker_get_id();
	return w >= 0 ? (void *)cudnn_handles[w] : NULL;
}
#else
void starnn_cudnn_init(void)
{
}

void starnn_cudnn_shutdown(void)
{
}

void *starnn_cudnn_handle(void)
{
	return NULL;
}
#endif

int starnn_check_like(const char *op, const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b)
{
	char da[128], db[128];
	if (!a || !b)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, !a ? an : bn);
	if (a->dtype != STARNN_FP32 || b->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: fp32 tensors expected, got %s = %s and %s = %s", op, an,
		                    starnn_tensor_describe(a, da, sizeof da), bn, starnn_tensor_describe(b, db, sizeof db));
	if (a->rows != b->rows || a->cols != b->cols)
		return starnn_error(STARNN_EINVAL, "%s: shapes differ: %s = %s and %s = %s", op, an,
		                    starnn_tensor_describe(a, da, sizeof da), bn, starnn_tensor_describe(b, db, sizeof db));
	return starnn_check_layouts(op, an, a, bn, b);
}

static int layout_of(const starnn_tensor *t)
{
	return t->ndim == 4 && t->cblock > 1 ? t->cblock : 1;
}

static int same_wlayout(const starnn_tensor *a, const starnn_tensor *b)
{
	return a->wl.ob == 0 ? b->wl.ob == 0 : !memcmp(&a->wl, &b->wl, sizeof a->wl);
}

static const char *layout_label(const starnn_tensor *t, char *buf, size_t size)
{
	if (t->wl.ob)
		return starnn_wlayout_name(&t->wl, buf, size);
	if (t->ndim != 4)
		return snprintf(buf, size, "row-major"), buf;
	return starnn_layout_name(layout_of(t), t->shape[1], buf, size);
}

int starnn_check_layouts(const char *op, const char *an, const starnn_tensor *a, const char *bn,
                         const starnn_tensor *b)
{
	char da[128], db[128], la[24], lb[24];
	if (!a || !b)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, !a ? an : bn);
	if (layout_of(a) == layout_of(b) && same_wlayout(a, b))
		return 0;
	return starnn_error(STARNN_EINVAL,
	                    "%s: the layouts differ: %s = %s is %s and %s = %s is %s; an element-wise operation needs its "
	                    "tensors in one layout (runtime/core/tensor.h: starnn_tensor_set_cblock, _set_wlayout)",
	                    op, an, starnn_tensor_describe(a, da, sizeof da), layout_label(a, la, sizeof la), bn,
	                    starnn_tensor_describe(b, db, sizeof db), layout_label(b, lb, sizeof lb));
}

uint32_t starnn_footprint_args(struct starpu_task *task, size_t key_bytes)
{
	uint32_t fp = starpu_task_data_footprint(task);
	if (task->cl_arg && key_bytes) {
		if (key_bytes > task->cl_arg_size)
			key_bytes = task->cl_arg_size;
		fp = starpu_hash_crc32c_be_n(task->cl_arg, key_bytes, fp);
	}
	return fp;
}

int starnn_part_sizes(int64_t extent, int nparts, int64_t unit, int64_t *sizes)
{
	int64_t units = extent / (unit > 0 ? unit : 1);
	if (nparts > units)
		nparts = (int)units;
	for (int i = 0; i < nparts; i++)
		sizes[i] = (unit > 0 ? unit : 1) * (units / nparts + (i < units % nparts));
	return nparts;
}

int starnn_worker_takes(unsigned workerid, int blocked)
{
	return !blocked || starpu_worker_get_type((int)workerid) == STARPU_CPU_WORKER;
}

uint32_t starnn_footprint_shape(struct starpu_task *task)
{
	return starpu_task_data_footprint(task);
}

#ifdef STARNN_USE_CUDA
void *starnn_cuda_stream(void)
{
	return (void *)starpu_cuda_get_local_stream();
}

void *starnn_cublas_handle(void)
{
	return (void *)starpu_cublas_get_local_handle();
}

void starnn_cuda_check_launch(const char *op, const char *file, int line)
{
	cudaError_t err = cudaGetLastError();
	if (err != cudaSuccess)
		starnn_defer_error_at(file, line, STARNN_ECUDA, "%s: CUDA kernel launch failed: %s", op, cudaGetErrorString(err));
}
#else
void *starnn_cuda_stream(void)
{
	return NULL;
}

void *starnn_cublas_handle(void)
{
	return NULL;
}

void starnn_cuda_check_launch(const char *op, const char *file, int line)
{
	(void)op;
	(void)file;
	(void)line;
}
#endif

int starnn_check_grad(const char *op, const starnn_tensor *w, const starnn_tensor *grad)
{
	char dw[128], dg[128], l[24];
	STARNN_CHECK(starnn_check_like(op, "w", w, "w", w));
	if (!grad)
		return starnn_error(STARNN_EINVAL, "%s: grad is NULL", op);
	if (w->wl.ob)
		return starnn_error(STARNN_EINVAL, "%s: w = %s must be in OIHW (rows), not %s", op,
		                    starnn_tensor_describe(w, dw, sizeof dw), starnn_wlayout_name(&w->wl, l, sizeof l));
	if (!grad->wl.ob)
		return starnn_check_like(op, "w", w, "grad", grad);
	if (grad->dtype != STARNN_FP32 || grad->rows != w->rows || grad->cols != w->cols || w->cblock > 1)
		return starnn_error(STARNN_EINVAL, "%s: grad = %s is not shaped like w = %s", op,
		                    starnn_tensor_describe(grad, dg, sizeof dg), starnn_tensor_describe(w, dw, sizeof dw));
	return 0;
}

int starnn_check_distinct(const char *op, const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b)
{
	char d[128];
	if (a == b)
		return starnn_error(STARNN_EINVAL, "%s: %s and %s are the same tensor %s", op, an, bn,
		                    starnn_tensor_describe(a, d, sizeof d));
	return 0;
}
