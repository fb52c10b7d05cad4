/* CPU kernels of convert. Every kernel works row by row (strided views) on
 * row functions of n elements:
 *   fp32 <-> fp16: F16C (8 lanes, round to nearest even by immediate, so
 *                  MXCSR's rounding mode does not matter) when the CPU has
 *                  it; runtime/half.h otherwise. The tail of a row goes
 *                  through the same instruction via a padded block, so
 *                  every element of a tensor is converted the same way.
 *   fp32 <-> bf16: branch-free integer loops, the arithmetic of
 *                  starnn_float_to_bf16 / starnn_bf16_to_float; they
 *                  vectorise.
 *   fp16 <-> bf16: through an fp32 block on the stack (exact for both). */
#include <string.h>

#include "codelets/convert.h"
#include "runtime/error.h"
#include "runtime/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CONVERT_HAVE_F16C_PATH 1
#endif

/* ------------------------------------------------------------ fp32 <-> fp16 */

#ifdef CONVERT_HAVE_F16C_PATH
static int cpu_has_f16c(void)
{
	return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}

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
#else
static int cpu_has_f16c(void)
{
	return 0;
}
#endif

static void row_f32_to_f16(size_t n, const float *x, uint16_t *y, int f16c)
{
#ifdef CONVERT_HAVE_F16C_PATH
	if (f16c) {
		row_f32_to_f16_f16c(n, x, y);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		y[i] = starnn_float_to_half(x[i]);
}

static void row_f16_to_f32(size_t n, const uint16_t *x, float *y, int f16c)
{
#ifdef CONVERT_HAVE_F16C_PATH
	if (f16c) {
		row_f16_to_f32_f16c(n, x, y);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		y[i] = starnn_half_to_float(x[i]);
}

/* ------------------------------------------------------------ fp32 <-> bf16 */

/* starnn_float_to_bf16 without branches: NaN -> quiet NaN with the sign and
 * top payload bits; otherwise add 0x7fff plus the lowest kept bit and
 * truncate (ties to even; the carry rounds up into the exponent, up to Inf).
 * The NaN test is a signed compare of non-negative values (SSE2 has it). */
static void row_f32_to_bf16(size_t n, const float *restrict x, uint16_t *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, x + i, sizeof u);
		uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
		uint32_t quiet = (u >> 16) | 0x0040u;
		y[i] = (uint16_t)((int32_t)(u & 0x7fffffffu) > 0x7f800000 ? quiet : rounded);
	}
}

static void row_bf16_to_f32(size_t n, const uint16_t *restrict x, float *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)x[i] << 16;
		memcpy(y + i, &u, sizeof u);
	}
}

/* ------------------------------------------------------------------ kernels */

void starnn_convert_fp32_to_fp16_cpu(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy)
{
	int f16c = cpu_has_f16c();
	for (size_t r = 0; r < rows; r++)
		row_f32_to_f16(cols, x + r * ldx, y + r * ldy, f16c);
}

void starnn_convert_fp16_to_fp32_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy)
{
	int f16c = cpu_has_f16c();
	for (size_t r = 0; r < rows; r++)
		row_f16_to_f32(cols, x + r * ldx, y + r * ldy, f16c);
}

void starnn_convert_fp32_to_bf16_cpu(size_t rows, size_t cols, const float *x, size_t ldx, uint16_t *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++)
		row_f32_to_bf16(cols, x + r * ldx, y + r * ldy);
}

void starnn_convert_bf16_to_fp32_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, float *y, size_t ldy)
{
	for (size_t r = 0; r < rows; r++)
		row_bf16_to_f32(cols, x + r * ldx, y + r * ldy);
}

/* fp16 <-> bf16 in blocks of BLOCK elements through fp32 on the stack. */
#define BLOCK 512

void starnn_convert_fp16_to_bf16_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                     size_t ldy)
{
	int f16c = cpu_has_f16c();
	float tmp[BLOCK];
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c += BLOCK) {
			size_t n = cols - c < BLOCK ? cols - c : BLOCK;
			row_f16_to_f32(n, x + r * ldx + c, tmp, f16c);
			row_f32_to_bf16(n, tmp, y + r * ldy + c);
		}
}

void starnn_convert_bf16_to_fp16_cpu(size_t rows, size_t cols, const uint16_t *x, size_t ldx, uint16_t *y,
                                     size_t ldy)
{
	int f16c = cpu_has_f16c();
	float tmp[BLOCK];
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c += BLOCK) {
			size_t n = cols - c < BLOCK ? cols - c : BLOCK;
			row_bf16_to_f32(n, x + r * ldx + c, tmp);
			row_f32_to_f16(n, tmp, y + r * ldy + c, f16c);
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
		row_f16_to_f32(n, x, y, cpu_has_f16c());
	else if (src == STARNN_BF16)
		row_bf16_to_f32(n, x, y);
	else
		memcpy(y, x, n * sizeof *y);
}

void starnn_narrow_row_cpu(starnn_dtype dst, size_t n, const float *x, void *y)
{
	if (dst == STARNN_FP16)
		row_f32_to_f16(n, x, y, cpu_has_f16c());
	else if (dst == STARNN_BF16)
		row_f32_to_bf16(n, x, y);
	else
		memcpy(y, x, n * sizeof *x);
}
