/* CPU kernels of concat: row by row (one row = one sample), memcpy when
 * copying, a vectorised loop when accumulating. */
#include <string.h>

#include "codelets/concat.h"

/* The build's -O2 does not vectorise the accumulating loops. */
#if defined(__GNUC__) && !defined(__clang__)
#endif

void starnn_concat_fwd_cpu(size_t rows, size_t ca, const float *a, size_t lda, size_t cb, const float *b, size_t ldb,
                           float *cat, size_t ldcat)
{
	for (size_t r = 0; r < rows; r++) {
		memcpy(cat + r * ldcat, a + r * lda, ca * sizeof *a);
		memcpy(cat + r * ldcat + ca, b + r * ldb, cb * sizeof *b);
	}
}

/* d = beta d + s over rows x cols; beta == 0: a copy, d not read. */
static void part_bwd(size_t rows, size_t cols, const float *s, size_t lds, float beta, float *d, size_t ldd)
{
	for (size_t r = 0; r < rows; r++) {
		const float *sr = s + r * lds;
		float *dr = d + r * ldd;
		if (beta == 0.0f) {
			memcpy(dr, sr, cols * sizeof *dr);
		} else if (beta == 1.0f) {
			for (size_t c = 0; c < cols; c++)
				dr[c] += sr[c];
		} else {
			for (size_t c = 0; c < cols; c++)
				dr[c] = beta * dr[c] + sr[c];
		}
	}
}

void starnn_concat_bwd_cpu(size_t rows, size_t ca, size_t cb, const float *dcat, size_t ldcat, float beta_a,
                           float *da, size_t lda, float beta_b, float *db, size_t ldb)
{
	part_bwd(rows, ca, dcat, ldcat, beta_a, da, lda);
	part_bwd(rows, cb, dcat + ca, ldcat, beta_b, db, ldb);
}
