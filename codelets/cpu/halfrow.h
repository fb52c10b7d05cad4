/* Pieces of rows of fp32 / fp16 / bf16 data, seen as fp32, for the CPU
 * kernels that compute in fp32 on 16-bit tensors (batchnorm, maxpool,
 * concat): a kernel takes a row in chunks of at most a few hundred elements,
 * widens each chunk into a buffer on the stack (it stays in L1), computes
 * in fp32 and rounds its 16-bit results once, on the way out. fp32 data is
 * used in place. The widening is exact and the rounding is that of
 * codelets/convert.h (nearest even), so a 16-bit kernel's output is
 * bitwise the rounded result of the fp32 kernel on the widened data.
 *
 * bf16 is converted inline (integer arithmetic that vectorises in every
 * clone of codelets/cpu/simd.h); fp16 calls the convert kernels (F16C). */
#ifndef STARNN_CPU_HALFROW_H
#define STARNN_CPU_HALFROW_H

#include <stdint.h>
#include <string.h>

#include "codelets/convert.h"
#include "codelets/cpu/simd.h"
#include "runtime/tensor.h"

/* Elements widened at a time: 256 floats = 1 KiB per buffer. */
#define STARNN_HALFROW_CHUNK 256

STARNN_SIMD_INLINE void starnn_bf16_widen(size_t n, const uint16_t *restrict x, float *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)x[i] << 16;
		memcpy(y + i, &u, sizeof u);
	}
}

/* starnn_float_to_bf16 without branches: NaN -> quiet NaN with the sign and
 * top payload bits; otherwise add 0x7fff plus the lowest kept bit and
 * truncate (ties to even; the carry rounds up into the exponent, up to Inf).
 * The NaN test is a signed compare of non-negative values (SSE2 has it). */
STARNN_SIMD_INLINE void starnn_bf16_narrow(size_t n, const float *restrict x, uint16_t *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, x + i, sizeof u);
		uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
		uint32_t quiet = (u >> 16) | 0x0040u;
		y[i] = (uint16_t)((int32_t)(u & 0x7fffffffu) > 0x7f800000 ? quiet : rounded);
	}
}

/* Bytes per element of dt. */
STARNN_SIMD_INLINE size_t starnn_halfrow_es(starnn_dtype dt)
{
	return dt == STARNN_FP32 ? 4 : 2;
}

/* Element i of a row of dt. */
STARNN_SIMD_INLINE const void *starnn_halfrow_at(starnn_dtype dt, const void *p, size_t i)
{
	return (const char *)p + i * starnn_halfrow_es(dt);
}

/* n elements of dt at p as fp32: p itself for fp32, else widened into buf
 * (n <= its size). */
STARNN_SIMD_INLINE const float *starnn_halfrow_load(starnn_dtype dt, const void *p, size_t n, float *buf)
{
	if (dt == STARNN_FP32)
		return (const float *)p;
	if (dt == STARNN_BF16)
		starnn_bf16_widen(n, (const uint16_t *)p, buf);
	else
		starnn_convert_fp16_to_fp32_cpu(1, n, (const uint16_t *)p, n, buf, n);
	return buf;
}

/* Where a kernel writes n fp32 results that go to p: p itself for fp32,
 * else buf (then starnn_halfrow_store rounds them into p). */
STARNN_SIMD_INLINE float *starnn_halfrow_out(starnn_dtype dt, void *p, float *buf)
{
	return dt == STARNN_FP32 ? (float *)p : buf;
}

STARNN_SIMD_INLINE void starnn_halfrow_store(starnn_dtype dt, const float *buf, size_t n, void *p)
{
	if (dt == STARNN_BF16)
		starnn_bf16_narrow(n, buf, (uint16_t *)p);
	else if (dt == STARNN_FP16)
		starnn_convert_fp32_to_fp16_cpu(1, n, buf, n, (uint16_t *)p, n);
}

#endif
