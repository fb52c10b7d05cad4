/* Kernels of copy: y = x, bytes moved. Shapes: x and y are rows x cols
 * elements of elem_size bytes (4 for fp32, 2 for fp16 / bf16), row-major,
 * each with its own leading dimension (in elements); they must not overlap.
 * And fp32 weights w [o][i * taps] (o rows ldw apart, OIHW) into and out
 * of a copy in a blocked weight layout L (runtime/base/types.h:
 * struct starnn_blocked_weights), whose storage begins at copy: the
 * optimizers' packed copies of conv2d's weights, kept current tile by tile
 * while the update's rows are in cache. The CUDA kernel is one
 * cudaMemcpy2DAsync on stream (a cudaStream_t); it returns 0 or the
 * cudaError_t. */
#ifndef STARNN_KERNELS_COPY_H
#define STARNN_KERNELS_COPY_H

#include <stddef.h>

#include "runtime/base/types.h"
#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/copy.c */
void starnn_copy_cpu(size_t rows, size_t cols, size_t elem_size, const void *x, size_t ldx, void *y, size_t ldy);

/* Output channels [o0, o1) x input channels [i0, i1) of w into the copy in
 * layout L, block by block in the copy's order; the copy's other elements
 * and padding are left as they are. put_rows: rows [r0, r1), every input
 * channel. */
void starnn_blocked_put_cpu(const struct starnn_blocked_weights *L, size_t o0, size_t o1, size_t i0, size_t i1,
                            const float *w, size_t ldw, void *copy);
void starnn_blocked_put_rows_cpu(const struct starnn_blocked_weights *L, size_t r0, size_t r1, const float *w,
                                 size_t ldw, void *copy);
/* The inverse of starnn_blocked_put_cpu: output channels [o0, o1) x input
 * channels [i0, i1) of the fp32 data of layout L whose storage begins at
 * copy into rows of w, element (o, i, t) at w[(o - o0) * ldw + (i - i0) *
 * taps + t]. */
void starnn_blocked_get_cpu(const struct starnn_blocked_weights *L, size_t o0, size_t o1, size_t i0, size_t i1,
                            const void *copy, float *w, size_t ldw);
/* A whole copy of w in layout L into copy (L->header bytes or more): L
 * itself as the header (so that a reader knows the layout), zero padding,
 * the weights (starnn_blocked_put_rows_cpu). */
void starnn_blocked_make_cpu(const struct starnn_blocked_weights *L, const float *w, size_t ldw, void *copy);
/* For a task that updates rows x cols fp32 weights w element by element
 * and keeps n copies of them current: calls update(ctx, r0, r1, c0, c1)
 * over tiles of whole blocks of the copies and of G (the layout of a
 * gradient it reads, NULL or ob 0: none; a band of rows up to 1 MB: the
 * tile's w and optimizer state stay in cache), and after each tile writes
 * it (as updated) into every copy (starnn_blocked_put_cpu). */
void starnn_update_with_copies(size_t rows, size_t cols,
                               void (*update)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1), void *ctx,
                               const float *w, size_t ldw, int n, const struct starnn_blocked_weights *L,
                               void *const *copies, const struct starnn_blocked_weights *G);
/* The same where the values the copies take are not w's (fp32 copies of
 * a 16-bit tensor: codelets/convert.c): tile(ctx, r0, r1, c0, c1, &ldt)
 * writes its part and returns the tile's values for the copies (fp32,
 * rows ldt apart, from (r0, c0)), or NULL to stop (an error it recorded). */
void starnn_tiles_with_copies(size_t rows, size_t cols,
                              const float *(*tile)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1, size_t *ldt),
                              void *ctx, int n, const struct starnn_blocked_weights *L, void *const *copies,
                              const struct starnn_blocked_weights *G);

/* codelets/cuda/copy.cu */
int starnn_copy_cuda(size_t rows, size_t cols, size_t elem_size, const void *x, size_t ldx, void *y, size_t ldy,
                     void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/copy.c, on ctx->queue (runtime/base/opencl.h): the
 * program starnn_opencl_program_copy (codelets/opencl/copy.cl), elements
 * of 4 or 2 bytes (another size: CL_INVALID_VALUE); x and y are cl_mem
 * with the offsets of the views' first elements. The blocked-layout
 * kernels above have no OpenCL version: they serve packed weights, which
 * exist for the CPU kernels only. CL_SUCCESS, or the OpenCL error
 * (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_copy;
cl_int starnn_copy_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, size_t elem_size, cl_mem x,
                          size_t x_off, size_t ldx, cl_mem y, size_t y_off, size_t ldy);
#endif

#ifdef __cplusplus
}
#endif
#endif
