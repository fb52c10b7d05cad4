/* fp32 working copies of 16-bit task buffers, for the mixed-precision
 * codelets that compute a 16-bit operation with the fp32 kernels
 * (conv2d, convt2d on fp16 / bf16 tensors; batchnorm, maxpool and concat
 * on CUDA only: their CPU kernels read 16-bit data in chunks widened on the
 * stack, codelets/cpu/halfrow.h):
 * inputs are widened to fp32 (exactly: fp32 holds every fp16 and bf16
 * value), the fp32 kernel runs with fp32 accumulation, and 16-bit outputs
 * are rounded once to nearest even (codelets/kernels/convert.h).
 *
 *   CPU:  the copies live in the worker thread's scratch buffers
 *         (runtime/base/scratch.h: kept at their largest size, freed when the
 *         worker exits); they are not in starnn's tensor memory count.
 *   CUDA: stream-ordered cudaMallocAsync / cudaFreeAsync on the worker's
 *         stream, conversions with the kernels of codelets/cuda/convert.cu.
 *
 * Use inside a codelet function:
 *   struct starnn_hw h;
 *   starnn_hw_begin(&h, "op_bf16", cuda);
 *   struct starnn_mat xw = starnn_hw_in(&h, dt, x, 1);   input, loaded
 *   struct starnn_mat yw = starnn_hw_in(&h, dt, y, 0);   output (load if RW)
 *   if (!h.failed) { fp32 kernel on xw, yw; starnn_hw_out(&h, dt, yw, y); }
 *   starnn_hw_end(&h);
 * An fp32 buffer (dt == STARNN_FP32) passes through unchanged. On failure
 * (allocation) a deferred error is recorded and h.failed is set. */
#ifndef STARNN_HALFWRAP_H
#define STARNN_HALFWRAP_H

#include <stdlib.h>
#include <string.h>

#include "codelets/kernels/convert.h"
#include "runtime/core/codelet.h"
#include "runtime/base/scratch.h"

#ifdef STARNN_USE_CUDA
#include <cuda_runtime.h>
#endif

#define STARNN_HW_SLOTS STARNN_SCRATCH_HALF_SLOTS

/* Slot `slot` of this thread's scratch (runtime/base/scratch.h), at least n
 * floats; NULL (deferred error recorded) on failure. */
static inline float *starnn_hw_scratch(int slot, size_t n, const char *op)
{
	if (slot < 0 || slot >= STARNN_HW_SLOTS) {
		starnn_defer_error(STARNN_ENOMEM, "%s: no scratch slot %d", op, slot);
		return NULL;
	}
	float *p = starnn_scratch(STARNN_SCRATCH_HALF + slot, n * sizeof(float));
	if (!p)
		starnn_defer_error(STARNN_ENOMEM, "%s: cannot allocate %zu floats of scratch", op, n);
	return p;
}

struct starnn_hw {
	const char *op;
	int cuda;
	void *stream;
	int nslot;          /* next CPU scratch slot */
	int failed;
	void *alloc[STARNN_HW_SLOTS];
	int nalloc;
};

static inline void starnn_hw_begin(struct starnn_hw *h, const char *op, int cuda)
{
	memset(h, 0, sizeof *h);
	h->op = op;
	h->cuda = cuda;
	if (cuda)
		h->stream = starnn_cuda_stream();
}

/* A dense fp32 (ld = cols) copy of m (of dtype dt), holding m's values when
 * load; m itself when dt is fp32. */
static inline struct starnn_mat starnn_hw_in(struct starnn_hw *h, starnn_dtype dt, struct starnn_mat m, int load)
{
	if (dt == STARNN_FP32 || h->failed)
		return m;
	struct starnn_mat w = {NULL, m.rows, m.cols, m.cols};
	size_t n = m.rows * m.cols;
	if (h->cuda) {
#ifdef STARNN_USE_CUDA
		if (h->nalloc >= STARNN_HW_SLOTS) {
			starnn_defer_error(STARNN_ENOMEM, "%s: too many half buffers", h->op);
			h->failed = 1;
			return m;
		}
		cudaError_t err = cudaMallocAsync(&w.ptr, (n ? n : 1) * sizeof(float), (cudaStream_t)h->stream);
		if (err != cudaSuccess) {
			starnn_defer_error(STARNN_ECUDA, "%s: cudaMallocAsync of %zu floats: %s", h->op, n,
			                   cudaGetErrorString(err));
			h->failed = 1;
			return m;
		}
		h->alloc[h->nalloc++] = w.ptr;
		if (load) {
			if (dt == STARNN_FP16)
				starnn_convert_fp16_to_fp32_cuda(m.rows, m.cols, m.ptr, m.ld, w.ptr, w.ld, h->stream);
			else
				starnn_convert_bf16_to_fp32_cuda(m.rows, m.cols, m.ptr, m.ld, w.ptr, w.ld, h->stream);
			STARNN_CUDA_LAUNCHED(h->op);
		}
#else
		h->failed = 1;
		starnn_defer_error(STARNN_ENODEV, "%s: no CUDA in this build", h->op);
		return m;
#endif
	} else {
		w.ptr = starnn_hw_scratch(h->nslot++, n ? n : 1, h->op);
		if (!w.ptr) {
			h->failed = 1;
			return m;
		}
		if (load)
			starnn_convert_cpu(dt, STARNN_FP32, m.rows, m.cols, m.ptr, m.ld, w.ptr, w.ld);
	}
	return w;
}

/* Rounds the fp32 result w into m (of dtype dt); nothing for fp32. */
static inline void starnn_hw_out(struct starnn_hw *h, starnn_dtype dt, struct starnn_mat w, struct starnn_mat m)
{
	if (dt == STARNN_FP32 || h->failed)
		return;
	if (h->cuda) {
#ifdef STARNN_USE_CUDA
		if (dt == STARNN_FP16)
			starnn_convert_fp32_to_fp16_cuda(m.rows, m.cols, w.ptr, w.ld, m.ptr, m.ld, h->stream);
		else
			starnn_convert_fp32_to_bf16_cuda(m.rows, m.cols, w.ptr, w.ld, m.ptr, m.ld, h->stream);
		STARNN_CUDA_LAUNCHED(h->op);
#endif
	} else {
		starnn_convert_cpu(STARNN_FP32, dt, m.rows, m.cols, w.ptr, w.ld, m.ptr, m.ld);
	}
}

static inline void starnn_hw_end(struct starnn_hw *h)
{
#ifdef STARNN_USE_CUDA
	for (int i = 0; i < h->nalloc; i++)
		cudaFreeAsync(h->alloc[i], (cudaStream_t)h->stream);
#endif
	h->nalloc = 0;
}

/* The 16-bit dtype of a codelet's data buffers, or -1: for submit checks. */
static inline int starnn_hw_is_half(starnn_dtype dt)
{
	return dt == STARNN_FP16 || dt == STARNN_BF16;
}

#endif
