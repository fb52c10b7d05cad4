/* Kernels of concat (channel concatenation, the copy path):
 * concat_fwd: cat[:, :ca] = a, cat[:, ca:] = b;
 * concat_bwd: da = beta_a da + dcat[:, :ca], db = beta_b db + dcat[:, ca:]
 * (beta 0 does not read the output). Shapes: in the tensors' matrix view
 * (one row per sample) a channel concatenation is a column concatenation:
 * a has ca = C1*H*W columns, b has cb = C2*H*W, cat has ca + cb, rows rows;
 * each with its own leading dimension. The _mp kernels take data of dtype
 * dt (fp32, fp16 or bf16; 16-bit data as uint16_t patterns): copies move
 * the bit patterns; an accumulation widens chunks of a row to fp32 on the
 * stack, adds and rounds once. The CUDA kernels are asynchronous on stream
 * (a cudaStream_t). */
#ifndef STARNN_KERNELS_CONCAT_H
#define STARNN_KERNELS_CONCAT_H

#include <stddef.h>

#include "runtime/base/features.h"
#include "runtime/base/types.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/concat.c */
void starnn_concat_fwd_cpu(size_t rows, size_t ca, const float *a, size_t lda, size_t cb, const float *b, size_t ldb,
                           float *cat, size_t ldcat);
void starnn_concat_bwd_cpu(size_t rows, size_t ca, size_t cb, const float *dcat, size_t ldcat, float beta_a,
                           float *da, size_t lda, float beta_b, float *db, size_t ldb);
void starnn_concat_fwd_mp_cpu(starnn_dtype dt, size_t rows, size_t ca, const void *a, size_t lda, size_t cb,
                              const void *b, size_t ldb, void *cat, size_t ldcat);
void starnn_concat_bwd_mp_cpu(starnn_dtype dt, size_t rows, size_t ca, size_t cb, const void *dcat, size_t ldcat,
                              float beta_a, void *da, size_t lda, float beta_b, void *db, size_t ldb);

/* codelets/cuda/concat.cu */
void starnn_concat_fwd_cuda(size_t rows, size_t ca, const float *a, size_t lda, size_t cb, const float *b,
                            size_t ldb, float *cat, size_t ldcat, void *stream);
void starnn_concat_bwd_cuda(size_t rows, size_t ca, size_t cb, const float *dcat, size_t ldcat, float beta_a,
                            float *da, size_t lda, float beta_b, float *db, size_t ldb, void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/concat.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of starnn_opencl_program_concat (codelets/opencl/concat.cl), the
 * _mp CPU kernels' results bit for bit, for dt fp32, fp16 or bf16. Each
 * operand is a cl_mem with the offset of its view's first element
 * (elements); shapes as above. CL_SUCCESS, or the OpenCL error
 * (ctx->failed_* say where). */
extern const struct starnn_opencl_program starnn_opencl_program_concat;
cl_int starnn_concat_fwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t ca, cl_mem a,
                                size_t a_off, size_t lda, size_t cb, cl_mem b, size_t b_off, size_t ldb, cl_mem cat,
                                size_t cat_off, size_t ldcat);
cl_int starnn_concat_bwd_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t rows, size_t ca, size_t cb,
                                cl_mem dcat, size_t dcat_off, size_t ldcat, float beta_a, cl_mem da, size_t da_off,
                                size_t lda, float beta_b, cl_mem db, size_t db_off, size_t ldb);
#endif

#ifdef __cplusplus
}
#endif
#endif
