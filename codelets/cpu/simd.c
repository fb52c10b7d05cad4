/* Instruction-set level of the CPU kernels (codelets/cpu/simd.h). */
#include <stdatomic.h>

#include "codelets/cpu/simd.h"

/* -1 until the first call; then the level in use. Every thread computes the
 * same value, so a race on the first calls is harmless. */
static atomic_int level_in_use = -1;
/* The highest level the default choice takes (starnn_simd_set_ceiling). */
static atomic_int level_ceiling = STARNN_SIMD_AVX512;

int starnn_cpu_has_f16c(void)
{
#if defined(STARNN_SIMD_X86) && defined(__clang__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2"); /* clang cannot ask for F16C; every AVX2 CPU has it */
#elif defined(STARNN_SIMD_X86)
	__builtin_cpu_init();
	return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#else
	return 0;
#endif
}

int starnn_simd_max_level(void)
{
#ifdef STARNN_SIMD_X86
	__builtin_cpu_init();
	/* libgcc's checks include the OS's support (XGETBV) of the vector state. */
	int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && starnn_cpu_has_f16c();
	if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return STARNN_SIMD_AVX512;
	if (avx2)
		return STARNN_SIMD_AVX2;
#endif
	return STARNN_SIMD_GENERIC;
}

const char *starnn_simd_name(int level)
{
	return level == STARNN_SIMD_AVX512 ? "avx512" : level == STARNN_SIMD_AVX2 ? "avx2" : "generic";
}

void starnn_simd_set_ceiling(int level)
{
	atomic_store_explicit(&level_ceiling, level, memory_order_relaxed);
	atomic_store_explicit(&level_in_use, -1, memory_order_relaxed); /* chosen again at the next call */
}

int starnn_simd_set_level(int level)
{
	if (level < 0) { /* back to the default: detected again at the next call */
		atomic_store_explicit(&level_in_use, -1, memory_order_relaxed);
		return starnn_simd_level();
	}
	int max = starnn_simd_max_level();
	if (level > max)
		level = max;
	atomic_store_explicit(&level_in_use, level, memory_order_relaxed);
	return level;
}

int starnn_simd_level(void)
{
	int l = atomic_load_explicit(&level_in_use, memory_order_relaxed);
	if (l >= 0)
		return l;
	l = starnn_simd_max_level();
	int ceiling = atomic_load_explicit(&level_ceiling, memory_order_relaxed);
	if (ceiling < l)
		l = ceiling;
	atomic_store_explicit(&level_in_use, l, memory_order_relaxed);
	return l;
}
