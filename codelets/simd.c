/* The CPU kernels' instruction-set level from the user's setting
 * STARNN_CPU_SIMD=auto|generic|avx2|avx512 (runtime/core/choice.h, where
 * starnn_init checks it: another value is refused there with a message):
 * a level below auto lowers the default level of codelets/cpu/simd.h
 * (never above what the CPU has). Applied when the library loads, before
 * any kernel runs: the kernels themselves read no environment. */
#include "codelets/cpu/simd.h"
#include "runtime/core/choice.h"

__attribute__((constructor)) static void simd_ceiling_from_setting(void)
{
	/* choice values: 0 auto, 1 generic, 2 avx2, 3 avx512 */
	static const int levels[] = {-1, STARNN_SIMD_GENERIC, STARNN_SIMD_AVX2, STARNN_SIMD_AVX512};
	const int v = starnn_choice_mode(starnn_setting(STARNN_SETTING_CPU_SIMD));
	if (v > 0 && v < (int)(sizeof levels / sizeof *levels))
		starnn_simd_set_ceiling(levels[v]);
}
