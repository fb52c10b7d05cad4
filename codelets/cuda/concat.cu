/* CUDA kernels of concat: one 2-D grid over rows x (ca + cb), x over the
 * columns (coalesced); each thread moves one element from / to a or b. */
#include <cuda_runtime.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/concat.h"

__global__ static void concat_fwd_kernel(size_t rows, size_t ca, const float *a, size_t lda, size_t cb,
                                         const float *b, size_t ldb, float *cat, size_t ldcat)
{
	STARNN_GRID_2D(r, c, rows, ca + cb)
		cat[r * ldcat + c] = c < ca ? a[r * lda + c] : b[r * ldb + (c - ca)];
}

__global__ static void concat_bwd_kernel(size_t rows, size_t ca, size_t cb, const float *dcat, size_t ldcat,
                                         float beta_a, float *da, size_t lda, float beta_b, float *db, size_t ldb)
{
	STARNN_GRID_2D(r, c, rows, ca + cb)
	{
		float s = dcat[r * ldcat + c];
		float *d = c < ca ? da + r * lda + c : db + r * ldb + (c - ca);
		float beta = c < ca ? beta_a : beta_b;
		*d = beta == 0.0f ? s : beta * *d + s;
	}
}

extern "C" void starnn_concat_fwd_cuda(size_t rows, size_t ca, const float *a, size_t lda, size_t cb,
                                       const float *b, size_t ldb, float *cat, size_t ldcat, void *stream)
{
	starnn_launch_2d(rows, ca + cb, stream, concat_fwd_kernel, rows, ca, a, lda, cb, b, ldb, cat, ldcat);
}

extern "C" void starnn_concat_bwd_cuda(size_t rows, size_t ca, size_t cb, const float *dcat, size_t ldcat,
                                       float beta_a, float *da, size_t lda, float beta_b, float *db, size_t ldb,
                                       void *stream)
{
	starnn_launch_2d(rows, ca + cb, stream, concat_bwd_kernel, rows, ca, cb, dcat, ldcat, beta_a, da, lda, beta_b,
	                 db, ldb);
}
