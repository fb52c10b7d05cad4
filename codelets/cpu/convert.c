/* CPU kernels of convert. Every kernel works row by row (strided views) on
 * row functions of n elements, at the instruction-set level picked at run
 * time (codelets/cpu/simd.h):
 *   fp32 <-> fp16: AVX-512: vcvtps2ph / vcvtph2ps on 16 lanes, the row's
 *                  tail with masked loads and stores; AVX2 level, and
 *                  generic level on a CPU with F16C: the same instructions
 *                  on 8 lanes, the tail through a padded block; otherwise
 *                  runtime/base/half.h. Rounding to nearest even comes from the
 *                  immediate (MXCSR's rounding mode does not matter), and
 *                  these instructions neither flush subnormals nor honour
 *                  DAZ/FTZ, so every path gives runtime/base/half.h's results.
 *   fp32 <-> bf16: branch-free integer loops, the arithmetic of
 *                  starnn_float_to_bf16 / starnn_bf16_to_float; they
 *                  vectorise at every level (zmm with AVX-512). AVX512-BF16's
 *                  vcvtneps2bf16 is not used: it flushes subnormals.
 *   fp16 <-> bf16: through an fp32 block on the stack (exact for both). */
#include <string.h>

#include "codelets/cpu/halfrow.h"
#include "codelets/cpu/simd.h"
#include "codelets/kernels/convert.h"
#include "runtime/base/error.h"
#include "runtime/base/half.h"

#ifdef STARNN_SIMD_X86
#include <immintrin.h>
#endif

/* ------------------------------------------------------------ fp32 <-> fp16 */

#ifdef STARNN_SIMD_X86
__attribute__((target("f16c,avx"))) static void row_f32_to_f16_f16c(size_t n, const float *x, uint16_t *y)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
		_mm_storeu_si128((__m128i *)(y + i), h);
	}
	if (i < n) {
		float in[8] = {0};
		uint16_t out[8];
		memcpy(in, x + i, (n - i) * sizeof *in);
		_mm_storeu_si128((__m128i *)out, _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT));
		memcpy(y + i, out, (n - i) * sizeof *out);
	}
}

__attribute__((target("f16c,avx"))) static void row_f16_to_f32_f16c(size_t n, const uint16_t *x, float *y)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
	if (i < n) {
		uint16_t in[8] = {0};
		float out[8];
		memcpy(in, x + i, (n - i) * sizeof *in);
		_mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)in)));
		memcpy(y + i, out, (n - i) * sizeof *out);
	}
}

/* 16 lanes; two vectors per step to keep two loads in flight. */
STARNN_TARGET_AVX512 static void rows_f32_to_f16_avx512(size_t rows, size_t n, const float *x, size_t ldx,
                                                        uint16_t *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++, x += ldx, y += ldy) {
		size_t i = 0;
		for (; i + 32 <= n; i += 32) {
			__m256i h0 = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
			__m256i h1 = _mm512_cvtps_ph(_mm512_loadu_ps(x + i + 16), _MM_FROUND_TO_NEAREST_INT);
			_mm256_storeu_si256((__m256i *)(y + i), h0);
			_mm256_storeu_si256((__m256i *)(y + i + 16), h1);
		}
		for (; i < n; i += 16) {
			__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
			__m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
			_mm256_mask_storeu_epi16(y + i, m, h);
		}
	}
}

STARNN_TARGET_AVX512 static void rows_f16_to_f32_avx512(size_t rows, size_t n, const uint16_t *x, size_t ldx,
                                                        float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++, x += ldx, y += ldy) {
		size_t i = 0;
		for (; i + 32 <= n; i += 32) {
			__m512 f0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i)));
			__m512 f1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i + 16)));
			_mm512_storeu_ps(y + i, f0);
			_mm512_storeu_ps(y + i + 16, f1);
		}
		for (; i < n; i += 16) {
			__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
			_mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
		}
	}
}
#endif

static void rows_f32_to_f16(size_t rows, size_t n, const float *x, size_t ldx, uint16_t *y, size_t ldy)
{
#ifdef STARNN_SIMD_X86
	int level = starnn_simd_level();
	if (level == STARNN_SIMD_AVX512) {
		rows_f32_to_f16_avx512(rows, n, x, ldx, y, ldy);
		return;
	}
	if (level == STARNN_SIMD_AVX2 || starnn_cpu_has_f16c()) {
		for (size_t r = 0; r < rows; r++)
			row_f32_to_f16_f16c(n, x + r * ldx, y + r * ldy);
		return;
	}
#endif
	for (size_t r = 0; r < rows; r++)
		for (size_t i = 0; i < n; i++)
			y[r * ldy + i] = starnn_float_to_half(x[r * ldx + i]);
}

static void rows_f16_to_f32(size_t rows, size_t n, const uint16_t *x, size_t ldx, float *y, size_t ldy)
{
#ifdef STARNN_SIMD_X86
	int level = starnn_simd_level();
	if (level == STARNN_SIMD_AVX512) {
		rows_f16_to_f32_avx512(rows, n, x, ldx, y, ldy);
		return;
	}
	if (level == STARNN_SIMD_AVX2 || starnn_cpu_has_f16c()) {
		for (size_t r = 0; r < rows; r++)
			row_f16_to_f32_f16c(n, x + r * ldx, y + r * ldy);
		return;
	}
#endif
	for (size_t r = 0; r < rows; r++)
		for (size_t i = 0; i < n; i++)
			y[r * ldy + i] = starnn_half_to_float(x[r * ldx + i]);
}

/* ------------------------------------------------------------ fp32 <-> bf16 */

/* The integer loops of codelets/cpu/halfrow.h (starnn_float_to_bf16's
 * arithmetic, branch-free), cloned per instruction set. */
STARNN_SIMD_INLINE void rows_f32_to_bf16(size_t rows, size_t n, const float *x, size_t ldx, uint16_t *y,
                                         size_t ldy)
{
	for (size_t r = 0; r < rows; r++)
		starnn_bf16_narrow(n, x + r * ldx, y + r * ldy);
}
STARNN_SIMD_CLONES(rows_f32_to_bf16, (size_t rows, size_t n, const float *x, size_t ldx, uint16_t *y, size_t ldy),
                   (rows, n, x, ldx, y, ldy))

STARNN_SIMD_INLINE void rows_bf16_to_f32(size_t rows, size_t n, const uint16_t *x, size_t ldx, float *y,
                                         size_t ldy)
{
	for (size_t r = 0; r < rows; r++)
		starnn_bf16_widen(n, x + r * ldx, y + r * ldy);
}
STARNN_SIMD_CLONES(rows_bf16_to_f32, (size_t rows, size_t n, const uint16_t *x, size_t ldx, float *y, size_t ldy),
                   (rows, n, x, ldx, y, ldy))

/* ------------------------------------------------------------------ kernels */

void starnn_convert_fp32_to_fp16_cpu(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy)
{
	rows_f32_to_f16(rows, cols, x, ldx, y, ldy);
}

void starnn_convert_fp16_to_fp32_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy)
{
	rows_f16_to_f32(rows, cols, x, ldx, y, ldy);
}

void starnn_convert_fp32_to_bf16_cpu(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy)
{
	STARNN_SIMD_CALL(rows_f32_to_bf16, (rows, cols, x, ldx, y, ldy));
}

void starnn_convert_bf16_to_fp32_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy)
{
	STARNN_SIMD_CALL(rows_bf16_to_f32, (rows, cols, x, ldx, y, ldy));
}

/* fp16 <-> bf16 in blocks of BLOCK elements through fp32 on the stack. */
#define BLOCK 512

void starnn_convert_fp16_to_bf16_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                     size_t ldy)
{
	float tmp[BLOCK];
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c += BLOCK) {
			size_t n = cols - c < BLOCK ? cols - c : BLOCK;
			starnn_convert_fp16_to_fp32_cpu(1, n, x + r * ldx + c, n, tmp, n);
			starnn_convert_fp32_to_bf16_cpu(1, n, tmp, n, y + r * ldy + c, n);
		}
}

void starnn_convert_bf16_to_fp16_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                     size_t ldy)
{
	float tmp[BLOCK];
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c += BLOCK) {
			size_t n = cols - c < BLOCK ? cols - c : BLOCK;
			starnn_convert_bf16_to_fp32_cpu(1, n, x + r * ldx + c, n, tmp, n);
			starnn_convert_fp32_to_fp16_cpu(1, n, tmp, n, y + r * ldy + c, n);
		}
}

int starnn_convert_cpu(starnn_dtype src, starnn_dtype dst, size_t rows, size_t cols, const void *x, size_t ldx,
                       void *y, size_t ldy)
{
	if ((unsigned)src >= STARNN_NDTYPES || (unsigned)dst >= STARNN_NDTYPES)
		return starnn_error(STARNN_EINVAL, "convert: unknown dtype (%d -> %d)", (int)src, (int)dst);
	if (src == dst) {
		size_t es = src == STARNN_FP32 ? 4 : 2;
		for (size_t r = 0; r < rows; r++)
			memcpy((char *)y + r * ldy * es, (const char *)x + r * ldx * es, cols * es);
		return 0;
	}
	if (src == STARNN_FP32 && dst == STARNN_FP16)
		starnn_convert_fp32_to_fp16_cpu(rows, cols, x, ldx, y, ldy);
	else if (src == STARNN_FP32 && dst == STARNN_BF16)
		starnn_convert_fp32_to_bf16_cpu(rows, cols, x, ldx, y, ldy);
	else if (src == STARNN_FP16 && dst == STARNN_FP32)
		starnn_convert_fp16_to_fp32_cpu(rows, cols, x, ldx, y, ldy);
	else if (src == STARNN_BF16 && dst == STARNN_FP32)
		starnn_convert_bf16_to_fp32_cpu(rows, cols, x, ldx, y, ldy);
	else if (src == STARNN_FP16 && dst == STARNN_BF16)
		starnn_convert_fp16_to_bf16_cpu(rows, cols, x, ldx, y, ldy);
	else
		starnn_convert_bf16_to_fp16_cpu(rows, cols, x, ldx, y, ldy);
	return 0;
}

void starnn_widen_row_cpu(starnn_dtype src, size_t n, const void *x, float *y)
{
	if (src == STARNN_FP16)
		starnn_convert_fp16_to_fp32_cpu(1, n, x, n, y, n);
	else if (src == STARNN_BF16)
		starnn_convert_bf16_to_fp32_cpu(1, n, x, n, y, n);
	else
		memcpy(y, x, n * sizeof *y);
}

void starnn_narrow_row_cpu(starnn_dtype dst, size_t n, const float *x, void *y)
{
	if (dst == STARNN_FP16)
		starnn_convert_fp32_to_fp16_cpu(1, n, x, n, y, n);
	else if (dst == STARNN_BF16)
		starnn_convert_fp32_to_bf16_cpu(1, n, x, n, y, n);
	else
		memcpy(y, x, n * sizeof *x);
}
