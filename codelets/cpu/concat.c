/* CPU kernels of concat: row by row (one row = one sample), memcpy when
 * copying, a vectorised loop when accumulating (compiled per instruction
 * set, codelets/cpu/simd.h).
 *
 * fp16 / bf16 data (the _mp kernels): copies copy the 16-bit patterns (the
 * same values as widening and rounding back; a signalling NaN keeps its
 * bits instead of being quietened); accumulations take a row in chunks
 * widened on the stack (codelets/cpu/halfrow.h), add in fp32 and round
 * once: bitwise the fp32 kernel's result on the widened data, rounded. */
#include <string.h>

#include "codelets/cpu/halfrow.h"
#include "codelets/cpu/simd.h"
#include "codelets/kernels/concat.h"

void starnn_concat_fwd_mp_cpu(starnn_dtype dt, size_t rows, size_t ca, const void *a, size_t lda, size_t cb,
                              const void *b, size_t ldb, void *cat, size_t ldcat)
{
	const size_t es = starnn_halfrow_es(dt);
	for (size_t r = 0; r < rows; r++) {
		char *cr = (char *)cat + r * ldcat * es;
		memcpy(cr, (const char *)a + r * lda * es, ca * es);
		memcpy(cr + ca * es, (const char *)b + r * ldb * es, cb * es);
	}
}

void starnn_concat_fwd_cpu(size_t rows, size_t ca, const float *a, size_t lda, size_t cb, const float *b, size_t ldb,
                           float *cat, size_t ldcat)
{
	starnn_concat_fwd_mp_cpu(STARNN_FP32, rows, ca, a, lda, cb, b, ldb, cat, ldcat);
}

/* d = beta d + s on n fp32 values (beta != 0). */
STARNN_SIMD_INLINE void acc_run(size_t n, const float *restrict s, float beta, float *restrict d)
{
	if (beta == 1.0f) {
		for (size_t c = 0; c < n; c++)
			d[c] += s[c];
	} else {
		for (size_t c = 0; c < n; c++)
			d[c] = beta * d[c] + s[c];
	}
}

/* d = beta d + s over rows x cols of dt; beta == 0: a copy, d not read. */
STARNN_SIMD_INLINE void part_bwd(starnn_dtype dt, size_t rows, size_t cols, const void *s, size_t lds, float beta,
                                 void *d, size_t ldd)
{
	const size_t es = starnn_halfrow_es(dt), step = dt == STARNN_FP32 ? cols : STARNN_HALFROW_CHUNK;
	float sbuf[STARNN_HALFROW_CHUNK], dbuf[STARNN_HALFROW_CHUNK];
	for (size_t r = 0; r < rows; r++) {
		const char *sr = (const char *)s + r * lds * es;
		char *dr = (char *)d + r * ldd * es;
		if (beta == 0.0f) {
			memcpy(dr, sr, cols * es);
			continue;
		}
		for (size_t c0 = 0; c0 < cols; c0 += step) {
			size_t len = cols - c0 < step ? cols - c0 : step;
			const float *sv = starnn_halfrow_load(dt, sr + c0 * es, len, sbuf);
			float *dv = starnn_halfrow_out(dt, dr + c0 * es, dbuf);
			if (dt != STARNN_FP32)
				starnn_halfrow_load(dt, dr + c0 * es, len, dbuf);
			acc_run(len, sv, beta, dv);
			starnn_halfrow_store(dt, dv, len, dr + c0 * es);
		}
	}
}

STARNN_SIMD_INLINE void concat_bwd_impl(starnn_dtype dt, size_t rows, size_t ca, size_t cb, const void *dcat,
                                        size_t ldcat, float beta_a, void *da, size_t lda, float beta_b, void *db,
                                        size_t ldb)
{
	part_bwd(dt, rows, ca, dcat, ldcat, beta_a, da, lda);
	part_bwd(dt, rows, cb, starnn_halfrow_at(dt, dcat, ca), ldcat, beta_b, db, ldb);
}
STARNN_SIMD_CLONES(concat_bwd_impl,
                   (starnn_dtype dt, size_t rows, size_t ca, size_t cb, const void *dcat, size_t ldcat, float beta_a,
                    void *da, size_t lda, float beta_b, void *db, size_t ldb),
                   (dt, rows, ca, cb, dcat, ldcat, beta_a, da, lda, beta_b, db, ldb))

void starnn_concat_bwd_cpu(size_t rows, size_t ca, size_t cb, const float *dcat, size_t ldcat, float beta_a,
                           float *da, size_t lda, float beta_b, float *db, size_t ldb)
{
	STARNN_SIMD_CALL(concat_bwd_impl, (STARNN_FP32, rows, ca, cb, dcat, ldcat, beta_a, da, lda, beta_b, db, ldb));
}

void starnn_concat_bwd_mp_cpu(starnn_dtype dt, size_t rows, size_t ca, size_t cb, const void *dcat, size_t ldcat,
                              float beta_a, void *da, size_t lda, float beta_b, void *db, size_t ldb)
{
	STARNN_SIMD_CALL(concat_bwd_impl, (dt, rows, ca, cb, dcat, ldcat, beta_a, da, lda, beta_b, db, ldb));
}
