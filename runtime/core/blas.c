/* OpenBLAS core selection.
 *
 * OpenBLAS 0.3.21 (Debian 12) picks its kernels from the CPU model number;
 * on Xeons newer than it knows it falls back to the generic "Prescott"
 * SSE3 kernels, 5x slower than its AVX-512 ones here. The choice is made
 * when the library loads, before main(), so the only remedy is to restart
 * the program with OPENBLAS_CORETYPE set. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/core/init.h"

#ifdef HAVE_OPENBLAS_GET_CORENAME
char *openblas_get_corename(void);
#endif

const char *starnn_blas_core(void)
{
#ifdef HAVE_OPENBLAS_GET_CORENAME
	return openblas_get_corename();
#else
	return NULL;
#endif
}

void starnn_blas_autoselect(char **argv)
{
	const char *core = starnn_blas_core();
	if (!core || strcasecmp(core, "prescott") != 0)
		return;
	int keep = 0;
	if (getenv("OPENBLAS_CORETYPE") || starnn_env_flag("STARNN_KEEP_BLAS_CORE", &keep) < 0 || keep)
		return; /* the user chose */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f"))
		return;
	if (setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) != 0)
		return;
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with the slow kernels, saying so */
	unsetenv("OPENBLAS_CORETYPE");
	fprintf(stderr, "starnn: OpenBLAS uses its generic kernels; set OPENBLAS_CORETYPE=SkylakeX for speed\n");
}
