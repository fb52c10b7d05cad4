/* The CPU kernels' instruction-set level from the environment: a user's
 * STARNN_CPU_SIMD=generic|avx2|avx512 lowers the default level of
 * codelets/cpu/simd.h (never above what the CPU has; any other value is
 * ignored), read once, when the library loads, before any kernel runs: the
 * kernels themselves read no environment. */
#include <stdlib.h>
#include <string.h>

#include "codelets/cpu/simd.h"

__attribute__((constructor)) static void simd_ceiling_from_env(void)
{
	const char *env = getenv("STARNN_CPU_SIMD");
	if (!env || !*env)
		return;
	for (int k = STARNN_SIMD_GENERIC; k <= STARNN_SIMD_AVX512; k++)
		if (strcmp(env, starnn_simd_name(k)) == 0)
			starnn_simd_set_ceiling(k);
}
