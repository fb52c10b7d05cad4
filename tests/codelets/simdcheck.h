/* Helpers for the tests of the CPU kernels compiled per instruction set
 * (codelets/cpu/simd.h) and of the native 16-bit (_mp) kernels:
 *   - SC_FOR_EACH_LEVEL runs a block at every level this CPU has, generic
 *     first, so that every clone is checked here and not only the best
 *     one; sc_level_done() returns to the default level;
 *   - the clones promise bitwise equal results (no contraction, fixed
 *     summation order): sc_same compares bytes;
 *   - 16-bit data: arrays of uint16_t patterns, widened / rounded with
 *     runtime/base/half.h (the reference, independent of the kernels). */
#ifndef STARNN_TEST_SIMDCHECK_H
#define STARNN_TEST_SIMDCHECK_H

#include "codelets/cpu/simd.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

#define SC_FOR_EACH_LEVEL(lv)                                                                                \
	for (int lv = STARNN_SIMD_GENERIC; lv <= starnn_simd_max_level() && (starnn_simd_set_level(lv), 1); lv++)

static inline void sc_level_done(void)
{
	starnn_simd_set_level(-1);
}

/* Bytes a and b equal; reports the first differing element of size es. */
static inline int sc_same(const char *what, const void *a, const void *b, size_t n, size_t es)
{
	const unsigned char *x = a, *y = b;
	size_t diff = 0, first = 0;
	for (size_t i = 0; i < n; i++)
		if (memcmp(x + i * es, y + i * es, es) != 0 && !diff++)
			first = i;
	TEST_ASSERT(diff == 0, "%s (level %s): %zu of %zu elements differ, first [%zu]", what,
	            starnn_simd_name(starnn_simd_level()), diff, n, first);
	return diff == 0;
}

static inline size_t sc_es(starnn_dtype dt)
{
	return dt == STARNN_FP32 ? 4 : 2;
}

/* Element i of an array of dt as fp32 (exact). */
static inline float sc_get(starnn_dtype dt, const void *p, size_t i)
{
	if (dt == STARNN_FP32)
		return ((const float *)p)[i];
	uint16_t h = ((const uint16_t *)p)[i];
	return dt == STARNN_FP16 ? starnn_half_to_float(h) : starnn_bf16_to_float(h);
}

/* Element i of an array of dt set to v rounded to nearest even. */
static inline void sc_put(starnn_dtype dt, void *p, size_t i, float v)
{
	if (dt == STARNN_FP32)
		((float *)p)[i] = v;
	else
		((uint16_t *)p)[i] = dt == STARNN_FP16 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
}

/* n values of dt, uniform in [lo, hi) (rounded); a malloc'ed array. */
static inline void *sc_random(starnn_dtype dt, size_t n, float lo, float hi)
{
	void *p = malloc((n ? n : 1) * sc_es(dt));
	for (size_t i = 0; i < n; i++)
		sc_put(dt, p, i, test_uniform(lo, hi));
	return p;
}

/* The n values of an array of dt widened to fp32 (malloc'ed). */
static inline float *sc_widen(starnn_dtype dt, const void *p, size_t n)
{
	float *f = malloc((n ? n : 1) * sizeof *f);
	for (size_t i = 0; i < n; i++)
		f[i] = sc_get(dt, p, i);
	return f;
}

/* A copy of n elements of dt. */
static inline void *sc_dup(starnn_dtype dt, const void *p, size_t n)
{
	void *q = malloc((n ? n : 1) * sc_es(dt));
	memcpy(q, p, n * sc_es(dt));
	return q;
}

/* out (dt, n elements) = ref rounded to dt: what a 16-bit kernel must give. */
static inline void *sc_rounded(starnn_dtype dt, const float *ref, size_t n)
{
	void *q = malloc((n ? n : 1) * sc_es(dt));
	for (size_t i = 0; i < n; i++)
		sc_put(dt, q, i, ref[i]);
	return q;
}

#endif
