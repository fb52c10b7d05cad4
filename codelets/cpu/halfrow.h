/* Pieces of rows of fp32 / fp16 / bf16 data, seen as fp32, for the CPU
 * kernels that compute in fp32 on 16-bit tensors (batchnorm, maxpool,
 * concat): a kernel takes a row in chunks of at most a few hundred elements,
 * widens each chunk into a buffer on the stack (it stays in L1), computes
 * in fp32 and rounds its 16-bit results once, on the way out. fp32 data is
 * used in place. The widening is exact and the rounding is that of
 * codelets/kernels/convert.h (nearest even), so a 16-bit kernel's output is
 * bitwise the rounded result of the fp32 kernel on the widened data.
 *
 * bf16 is converted inline (integer arithmetic that vectorises in every
 * clone of codelets/cpu/simd.h); fp16 calls the convert kernels (F16C). */
#ifndef STARNN_CPU_HALFROW_H
#define STARNN_CPU_HALFROW_H

#include <stdint.h>
#include <string.h>

#include "codelets/cpu/simd.h"
#include "codelets/kernels/convert.h"
#include "runtime/base/types.h"

/* Elements widened at a time: 256 floats = 1 KiB per buffer. */
#define STARNN_HALFROW_CHUNK 256

STARNN_SIMD_INLINE void starnn_bf16_widen(size_t n, const uint16_t *restrict x, float *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)x[i] << 16;
		memcpy(y + i, &u, sizeof u);
	}
}

/* starnn_float_to_bf16 without branches, on fp32 bits u (a uint32_t or a
 * vector of them): NaN -> quiet NaN with the sign and top payload bits;
 * otherwise add 0x7fff plus the lowest kept bit and truncate (ties to even;
 * the carry rounds up into the exponent, up to Inf). The results are in
 * the low 16 bits. The NaN test is a signed compare of non-negative values
 * (SSE2 has it); SI is int32_t or its vector type. */
#define STARNN_BF16_ROUNDED(u) (((u) + 0x7fffu + (((u) >> 16) & 1u)) >> 16)
#define STARNN_BF16_QUIET(u) (((u) >> 16) | 0x0040u)
#define STARNN_BF16_NAN(u, SI) ((SI)((u) & 0x7fffffffu) > 0x7f800000)

/* (A select compiles to faster code here than the masks of
 * STARNN_BF16X16_NARROW: 0.88-0.93x in the bf16 batch-norm passes.) */
STARNN_SIMD_INLINE void starnn_bf16_narrow(size_t n, const float *restrict x, uint16_t *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, x + i, sizeof u);
		y[i] = (uint16_t)(STARNN_BF16_NAN(u, int32_t) ? STARNN_BF16_QUIET(u) : STARNN_BF16_ROUNDED(u));
	}
}

/* 16 lanes at a time in registers, for the AVX-512 clones' paths that skip
 * the chunk buffers (GCC vectors; the same conversions as above, so the
 * same bits). A starnn_vf16 is an __m512 for the intrinsics. */
typedef float starnn_vf16 __attribute__((vector_size(64)));
typedef int32_t starnn_vi16 __attribute__((vector_size(64)));
typedef uint32_t starnn_vu16 __attribute__((vector_size(64)));
typedef uint16_t starnn_vh16 __attribute__((vector_size(32)));
/* 16 bf16 values at p widened to fp32 (exact): each value becomes the high
 * half of its lane, by one shuffle with zeros. GCC 12 splits a 16-lane
 * __builtin_convertvector into two halves and a merge: the batch-norm apply
 * passes ran 1.09-1.17x faster with the shuffle (tools/bench/memops
 * --cblock 16). Code with intrinsics uses STARNN_BF16X16_WIDEN_PS. */
typedef uint16_t starnn_vh32 __attribute__((vector_size(64)));
#define STARNN_BF16X16_LANE(i) 16, i
#define STARNN_BF16X16_WIDEN(p)                                                                                \
	__extension__({                                                                                        \
		starnn_vh16 h_, z_ = {0};                                                                      \
		memcpy(&h_, (p), sizeof h_);                                                                   \
		(starnn_vf16) __builtin_shufflevector(                                                         \
		    h_, z_, STARNN_BF16X16_LANE(0), STARNN_BF16X16_LANE(1), STARNN_BF16X16_LANE(2),            \
		    STARNN_BF16X16_LANE(3), STARNN_BF16X16_LANE(4), STARNN_BF16X16_LANE(5),                    \
		    STARNN_BF16X16_LANE(6), STARNN_BF16X16_LANE(7), STARNN_BF16X16_LANE(8),                    \
		    STARNN_BF16X16_LANE(9), STARNN_BF16X16_LANE(10), STARNN_BF16X16_LANE(11),                  \
		    STARNN_BF16X16_LANE(12), STARNN_BF16X16_LANE(13), STARNN_BF16X16_LANE(14),                 \
		    STARNN_BF16X16_LANE(15));                                                                  \
	})
#ifdef STARNN_SIMD_X86
/* The same widening with AVX-512 intrinsics (zero-extend, shift): in the
 * batch-norm sums, whose conversions to double also take the shuffle port,
 * the shuffle form ran at 0.94-0.96x of this one. */
#define STARNN_BF16X16_WIDEN_PS(p)                                                                             \
	_mm512_castsi512_ps(                                                                                   \
	    _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))
#endif
/* 16 fp32 values v rounded to bf16 as starnn_bf16_narrow: a starnn_vu16
 * whose lanes hold the bf16 bits in their low halves. */
#define STARNN_BF16X16_BITS(v)                                                                                 \
	__extension__({                                                                                        \
		starnn_vu16 u_ = (starnn_vu16)(v);                                                             \
		starnn_vu16 n_ = (starnn_vu16)STARNN_BF16_NAN(u_, starnn_vi16);                                \
		(STARNN_BF16_QUIET(u_) & n_) | (STARNN_BF16_ROUNDED(u_) & ~n_);                                \
	})
/* The same stored at p. */
#define STARNN_BF16X16_NARROW(p, v)                                                                            \
	__extension__({                                                                                        \
		starnn_vh16 h_ = __builtin_convertvector(STARNN_BF16X16_BITS(v), starnn_vh16);                 \
		memcpy((p), &h_, sizeof h_);                                                                   \
	})

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
