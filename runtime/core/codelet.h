/* What a codelet file (codelets/<op>.c) needs: buffer accessors, the
 * performance-model declaration, the CUDA stream / cuBLAS handle of the
 * running worker, the OpenCL helpers (runtime/core/opencl.h: cl_mem
 * buffers, the worker's program context, STARNN_OPENCL_FUNCS), error
 * reporting from inside a task, and the build's features
 * (runtime/base/features.h: STARNN_USE_CUDA, STARNN_USE_OPENCL ...), so
 * that a codelet file includes this header before its first #ifdef
 * STARNN_USE_CUDA and needs no <config.h>.
 *
 * Pattern of a codelet file (see codelets/axpy.c, or what tools/dev/new-op
 * writes):
 *   - an args struct (copied into the task) whose leading fields are those
 *     that change the cost (shapes, transposes), listed in its footprint;
 *   - cpu, cuda and opencl functions that unpack buffers and call the pure
 *     kernels declared in codelets/kernels/<op>.h (codelets/cpu/<op>.c,
 *     codelets/cuda/<op>.cu, codelets/opencl/<op>.{cl,c}: no StarPU there);
 *   - STARNN_PERFMODEL(op, fp32) (time and energy models) and the struct
 *     starpu_codelet, whose initialiser takes both with
 *     STARNN_MODELS(op, fp32);
 *   - the public submit function, which checks shapes and calls
 *     starnn_submit(). */
#ifndef STARNN_CODELET_H
#define STARNN_CODELET_H

#include <starpu.h>

#include "runtime/base/error.h"
#include "runtime/base/features.h"
#include "runtime/core/opencl.h"
#include "runtime/core/submit.h"
#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A task buffer as a strided matrix: rows x cols, rows ld elements apart. */
struct starnn_mat {
	void *ptr;
	size_t rows, cols, ld;
};

static inline struct starnn_mat starnn_buffer(void *buffers[], int i)
{
	struct starnn_mat m;
	m.ptr = (void *)STARPU_MATRIX_GET_PTR(buffers[i]);
	m.cols = STARPU_MATRIX_GET_NX(buffers[i]);
	m.rows = STARPU_MATRIX_GET_NY(buffers[i]);
	m.ld = STARPU_MATRIX_GET_LD(buffers[i]);
	return m;
}

/* Footprint = StarPU's data footprint (every buffer's rows and cols)
 * combined with the first key_bytes of the args struct. */
uint32_t starnn_footprint_args(struct starpu_task *task, size_t key_bytes);
uint32_t starnn_footprint_shape(struct starpu_task *task);

/* Even sizes of a split of extent into at most nparts parts of whole units
 * (a blocked tensor's cblock for a channel split, runtime/core/tensor.h; else
 * 1), the first parts one unit larger; returns the part count. */
int starnn_part_sizes(int64_t extent, int nparts, int64_t unit, int64_t *sizes);
/* For a codelet's can_execute: whether worker `workerid` takes a task whose
 * data is blocked (CPU workers only: the CUDA and OpenCL implementations
 * take NCHW). */
int starnn_worker_takes(unsigned workerid, int blocked);

/* The models of operation `op` in `dtype`, both history-based, keyed by the
 * same footprint (by default the shapes of the buffers):
 *   starnn_<op>_<dtype>_model         symbol "starnn_<op>_<dtype>": time
 *                                     (us), learnt by StarPU as tasks run;
 *   starnn_<op>_<dtype>_energy_model  symbol "starnn_<op>_<dtype>_energy":
 *                                     joules per task, which StarPU 1.3
 *                                     cannot measure without NVML built
 *                                     in: tools/energy-calibrate fills it
 *                                     (starpu_perfmodel_update_history).
 * One declaration with two declarators, so that `static
 * STARNN_PERFMODEL(op, dtype);` makes both static. A codelet takes both
 * with STARNN_MODELS(op, dtype) in its initialiser. */
#define STARNN_PERFMODEL_FP(op, dtype, fn)                                     \
	struct starpu_perfmodel starnn_##op##_##dtype##_model = {              \
		.type = STARPU_HISTORY_BASED,                                  \
		.symbol = "starnn_" #op "_" #dtype,                            \
		.footprint = fn,                                               \
	},                                                                     \
	starnn_##op##_##dtype##_energy_model = {                               \
		.type = STARPU_HISTORY_BASED,                                  \
		.symbol = "starnn_" #op "_" #dtype "_energy",                  \
		.footprint = fn,                                               \
	}
/* The same, keyed by the shapes of the buffers. */
#define STARNN_PERFMODEL(op, dtype) STARNN_PERFMODEL_FP(op, dtype, starnn_footprint_shape)

/* The .model and .energy_model fields of a struct starpu_codelet
 * initialiser: STARNN_MODELS(axpy, fp32) for the models of
 * STARNN_PERFMODEL(axpy, fp32); STARNN_MODELS_OF(starnn_axpy_fp32) names
 * them by their common stem (for macros that receive one). */
#define STARNN_MODELS_OF(stem) .model = &stem##_model, .energy_model = &stem##_energy_model
#define STARNN_MODELS(op, dtype) STARNN_MODELS_OF(starnn_##op##_##dtype)

/* The running CUDA worker's stream and cuBLAS handle (void * to keep CUDA
 * headers out of C files that do not need them); NULL without CUDA. */
void *starnn_cuda_stream(void);
void *starnn_cublas_handle(void);
/* The running CUDA worker's cuDNN handle, bound to its stream; NULL when
 * starnn was built without cuDNN. */
void *starnn_cudnn_handle(void);
/* Called by starnn_init / starnn_shutdown. */
void starnn_cudnn_init(void);
void starnn_cudnn_shutdown(void);

/* Argument check shared by the element-wise operations: a and b are non-NULL
 * fp32 tensors with the same matrix view (rows x cols) and the same layout
 * (starnn_check_layouts); the message names the operation, both arguments
 * and their shapes. */
int starnn_check_like(const char *op, const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b);
/* a and b (non-NULL) hold their elements in the same order: the same
 * layout (runtime/core/tensor.h: cblock; 1 for tensors that are not 4-D). Two
 * tensors of one matrix view in different layouts hold the same values at
 * different places, so an element-wise operation between them would pair
 * unrelated values: refused, with both layouts named. */
int starnn_check_layouts(const char *op, const char *an, const starnn_tensor *a, const char *bn,
                         const starnn_tensor *b);

/* An optimizer's w and its gradient: starnn_check_like, but for a gradient
 * in a blocked weight layout (runtime/core/tensor.h: wl), which the optimizers
 * read through it, against w in OIHW. */
int starnn_check_grad(const char *op, const starnn_tensor *w, const starnn_tensor *grad);
/* STARNN_EINVAL with a message where a and b are the same tensor (an
 * update that reads one and writes the other). */
int starnn_check_distinct(const char *op, const char *an, const starnn_tensor *a, const char *bn, const starnn_tensor *b);

/* For CUDA implementations: records a deferred error when a launch failed. */
void starnn_cuda_check_launch(const char *op, const char *file, int line);
#define STARNN_CUDA_LAUNCHED(op) starnn_cuda_check_launch((op), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif
#endif
