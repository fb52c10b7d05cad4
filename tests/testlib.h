/* A small test harness for starnn's tests (header only).
 *
 * A test file is built twice: as tests/codelets/NAME (the CPU
 * implementations, the kernels against naive loops, finite differences)
 * and, in CUDA builds, as tests/codelets/NAME_cuda with STARNN_TEST_CUDA
 * defined: the same codelet checks run on CUDA workers against the CPU
 * kernels, and the program exits 77 (automake's SKIP) without a GPU. */
#ifndef STARNN_TESTLIB_H
#define STARNN_TESTLIB_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/starnn.h"

static int test_failures;
static int test_checks;

#ifdef STARNN_TEST_CUDA
#define TEST_ON_CUDA 1
#else
#define TEST_ON_CUDA 0
#endif

#define TEST_SKIP 77

/* Fails the test with a message unless cond holds. */
#define TEST_ASSERT(cond, ...)                                                         \
	do {                                                                           \
		test_checks++;                                                         \
		if (!(cond)) {                                                         \
			test_failures++;                                               \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);           \
			fprintf(stderr, __VA_ARGS__);                                  \
			fputc('\n', stderr);                                           \
		}                                                                      \
	} while (0)

/* A starnn call that must succeed; on failure the test stops. */
#define TEST_OK(expr)                                                                  \
	do {                                                                           \
		int test_rc_ = (expr);                                                 \
		test_checks++;                                                         \
		if (test_rc_ < 0) {                                                    \
			fprintf(stderr, "FAIL %s:%d: %s returned %d (%s): %s\n", __FILE__, __LINE__, #expr, \
			        test_rc_, starnn_strerror(test_rc_), starnn_last_error()); \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

/* Starts starnn for a test; in CUDA mode restricts tasks to CUDA workers
 * and skips when there is none. */
static inline void test_init(void)
{
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = 1;
	int rc = starnn_init(&cfg);
	if (rc < 0) {
		fprintf(stderr, "starnn_init: %s\n", starnn_last_error());
		exit(rc == STARNN_ENODEV && TEST_ON_CUDA ? TEST_SKIP : 1);
	}
	if (TEST_ON_CUDA) {
		if (starnn_ncuda_workers() == 0) {
			printf("SKIP: no CUDA worker (no GPU here)\n");
			starnn_shutdown();
			exit(TEST_SKIP);
		}
		starnn_set_where(STARPU_CUDA);
	} else {
		starnn_set_where(STARPU_CPU);
	}
}

/* Shuts starnn down and reports. */
static inline int test_finish(void)
{
	int rc = starnn_shutdown();
	if (rc < 0) {
		fprintf(stderr, "FAIL: starnn_shutdown: %s\n", starnn_last_error());
		test_failures++;
	}
	printf("%s: %d checks, %d failed\n", test_failures ? "FAIL" : "PASS", test_checks, test_failures);
	return test_failures ? 1 : 0;
}

/* Deterministic uniform numbers in [lo, hi). */
static uint64_t test_rng_state = 0x9e3779b97f4a7c15ull;
static inline void test_seed(uint64_t s)
{
	test_rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}
static inline float test_uniform(float lo, float hi)
{
	test_rng_state ^= test_rng_state << 13;
	test_rng_state ^= test_rng_state >> 7;
	test_rng_state ^= test_rng_state << 17;
	return lo + (hi - lo) * (float)((test_rng_state >> 40) * (1.0 / 16777216.0));
}
static inline float *test_random(size_t n, float lo, float hi)
{
	float *p = malloc((n ? n : 1) * sizeof *p);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = test_uniform(lo, hi);
	return p;
}

/* Compares got with ref elementwise: |got - ref| <= atol + rtol * |ref|.
 * NaN anywhere counts as a mismatch. Reports the worst element. */
static inline int test_close(const char *what, const float *got, const float *ref, size_t n, float rtol, float atol)
{
	size_t bad = 0, worst = 0;
	double worst_excess = -1;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)ref[i]);
		double lim = atol + rtol * fabs((double)ref[i]);
		double excess = isnan(d) ? INFINITY : d - lim;
		if (excess > 0)
			bad++;
		if (excess > worst_excess) {
			worst_excess = excess;
			worst = i;
		}
	}
	test_checks++;
	if (bad) {
		test_failures++;
		fprintf(stderr, "FAIL %s: %zu of %zu elements differ; worst [%zu]: got %.9g, expected %.9g (rtol %g, atol %g)\n",
		        what, bad, n, worst, n ? got[worst] : 0.0, n ? ref[worst] : 0.0, rtol, atol);
		return 0;
	}
	return 1;
}

/* A tensor filled from host data (fp32). */
static inline starnn_tensor *test_tensor(const char *name, int ndim, const int64_t *shape, const float *data)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, STARNN_FP32, ndim, shape));
	if (data)
		TEST_OK(starnn_tensor_write(t, data));
	return t;
}

/* Reads a tensor into a new host array. */
static inline float *test_read(starnn_tensor *t)
{
	float *p = malloc(starnn_tensor_numel(t) * sizeof *p);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	TEST_OK(starnn_tensor_read_f32(t, p));
	return p;
}

/* Central finite difference of a scalar function f of the vector x along
 * element i: (f(x + h e_i) - f(x - h e_i)) / 2h, in double precision.
 * f should accumulate in double so that the difference is meaningful. */
static inline double test_fd(double (*f)(const float *x, void *ctx), float *x, size_t i, double h, void *ctx)
{
	float xi = x[i], xp = (float)(xi + h), xm = (float)(xi - h);
	x[i] = xp;
	double fp = f(x, ctx);
	x[i] = xm;
	double fm = f(x, ctx);
	x[i] = xi;
	return (fp - fm) / ((double)xp - (double)xm); /* the steps actually taken */
}

#endif
