/* A small test harness for starnn's tests (header only).
 *
 * A codelet test file is one object linked up to three times (ops.am): as
 * tests/codelets/NAME (the CPU implementations, the kernels against naive
 * loops, finite differences); in CUDA builds, as tests/codelets/NAME_cuda:
 * the same codelet checks run on CUDA workers against the CPU kernels, and
 * the program exits 77 (automake's SKIP) without a GPU; and as
 * tests/codelets/NAME_opencl (in every build, once the operation has
 * codelets/opencl/NAME.cl: autogen.sh): the codelet checks on an OpenCL
 * worker, which the test asks StarPU for (STARPU_NOPENCL=1 and
 * STARPU_OPENCL_ON_CPUS=1 unless set: POCL's CPU device will do), skipping
 * (77) in a build without OpenCL or where no OpenCL worker starts. The name
 * a program runs under picks its backend (TEST_BACKEND, from
 * /proc/self/exe: "_cuda" or "_opencl" at its end); a test compiled with
 * STARNN_TEST_CUDA or STARNN_TEST_OPENCL defined has that backend whatever
 * its name (tests/runtime/opencl). TEST_ON_DEVICE is either device backend:
 * where a test checks the CPU kernels directly, it does so when
 * !TEST_ON_DEVICE. */
#ifndef STARNN_TESTLIB_H
#define STARNN_TESTLIB_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/features.h"
#include "runtime/base/half.h"
#include "runtime/starnn.h"

static int test_failures;
static int test_checks;

enum { TEST_BACKEND_CPU = 0, TEST_BACKEND_CUDA = 1, TEST_BACKEND_OPENCL = 2 };
#if defined(STARNN_TEST_CUDA)
#define TEST_BACKEND TEST_BACKEND_CUDA
#elif defined(STARNN_TEST_OPENCL)
#define TEST_BACKEND TEST_BACKEND_OPENCL
#else
#define TEST_BACKEND test_backend_of_name()
/* The backend the program's name asks for: the file /proc/self/exe names
 * (libtool runs .libs/NAME or .libs/lt-NAME), by its end. A name that
 * cannot be read stops the test: a device build run as the CPU one would
 * pass without checking its device. */
static int test_backend_of_name(void)
{
	static int backend = -1;
	if (backend < 0) {
		char path[4096];
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		if (n <= 0) {
			fprintf(stderr, "FAIL: cannot read /proc/self/exe: the test's name picks its backend\n");
			exit(1);
		}
		path[n] = '\0';
		size_t len = (size_t)n;
		const char *cuda = "_cuda", *opencl = "_opencl";
		if (len > strlen(cuda) && strcmp(path + len - strlen(cuda), cuda) == 0)
			backend = TEST_BACKEND_CUDA;
		else if (len > strlen(opencl) && strcmp(path + len - strlen(opencl), opencl) == 0)
			backend = TEST_BACKEND_OPENCL;
		else
			backend = TEST_BACKEND_CPU;
	}
	return backend;
}
#endif
#define TEST_ON_CUDA (TEST_BACKEND == TEST_BACKEND_CUDA)
#define TEST_ON_OPENCL (TEST_BACKEND == TEST_BACKEND_OPENCL)
#define TEST_ON_DEVICE (TEST_ON_CUDA || TEST_ON_OPENCL)
/* The workers of this test's codelet checks, for messages. */
#define TEST_WORKERS (TEST_ON_CUDA ? "CUDA" : TEST_ON_OPENCL ? "OpenCL" : "CPU")

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

/* The OpenCL build of a test: one OpenCL worker unless the user asked
 * otherwise (POCL's CPU device counts only with STARPU_OPENCL_ON_CPUS=1);
 * STARNN_TEST_STARPU_HOME_OPENCL (set by make check) for StarPU's files,
 * whose bus calibration differs from the CPU tests' (sharing one home,
 * each kind of run would recalibrate and rewrite it under the other).
 * Skips in a build without OpenCL, and with STARNN_TEST_OPENCL_OPS=off
 * (.ci/run's second StarPU build and distcheck: the same kernels and
 * launchers already passed on POCL in its first stage). */
static inline void test_opencl_setup(void)
{
#ifndef STARNN_USE_OPENCL
	printf("SKIP: this starnn was built without OpenCL (config.summary: OpenCL kernels)\n");
	exit(TEST_SKIP);
#endif
	const char *ops = getenv("STARNN_TEST_OPENCL_OPS");
	if (ops && strcmp(ops, "off") == 0) {
		printf("SKIP: STARNN_TEST_OPENCL_OPS=off\n");
		exit(TEST_SKIP);
	}
	if (ops && *ops && strcmp(ops, "all") != 0 && strcmp(ops, "one-device") != 0) {
		fprintf(stderr, "STARNN_TEST_OPENCL_OPS='%s': expected all, one-device or off\n", ops);
		exit(1);
	}
	setenv("STARPU_NOPENCL", "1", 0);
	setenv("STARPU_OPENCL_ON_CPUS", "1", 0);
	const char *home = getenv("STARNN_TEST_STARPU_HOME_OPENCL");
	if (home && *home)
		setenv("STARPU_HOME", home, 1);
}

/* Starts starnn for a test; in CUDA or OpenCL mode restricts tasks to
 * those workers and skips when there is none. */
static inline void test_init(void)
{
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = 1;
	if (TEST_ON_OPENCL)
		test_opencl_setup();
	int rc = starnn_init(&cfg);
	if (rc < 0) {
		fprintf(stderr, "starnn_init: %s\n", starnn_last_error());
		if (rc == STARNN_ENODEV && TEST_ON_DEVICE)
			printf("SKIP: no %s worker starts here\n", TEST_WORKERS);
		exit(rc == STARNN_ENODEV && TEST_ON_DEVICE ? TEST_SKIP : 1);
	}
	if (TEST_ON_CUDA) {
		if (starnn_ncuda_workers() == 0) {
			printf("SKIP: no CUDA worker (no GPU here)\n");
			starnn_shutdown();
			exit(TEST_SKIP);
		}
		starnn_set_where(STARPU_CUDA);
	} else if (TEST_ON_OPENCL) {
		if (starnn_nopencl_workers() == 0) {
			printf("SKIP: no OpenCL worker\n");
			starnn_shutdown();
			exit(TEST_SKIP);
		}
		starnn_set_where(STARPU_OPENCL);
	} else {
		starnn_set_where(STARPU_CPU);
	}
}

/* Bit for bit: got[i] == want[i] as patterns of es bytes (NaN payloads
 * and the sign of zero included); reports the first difference. For the
 * device codelets that promise the CPU kernels' bits (docs/opencl.md). */
static inline int test_same_bits(const char *what, const void *got, const void *want, size_t n, size_t es)
{
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < n; i++)
		if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) && bad++ == 0)
			first = i;
	test_checks++;
	if (bad) {
		test_failures++;
		uint32_t g = 0, w = 0;
		memcpy(&g, (const char *)got + first * es, es < 4 ? es : 4);
		memcpy(&w, (const char *)want + first * es, es < 4 ? es : 4);
		fprintf(stderr,
		        "FAIL %s: %zu of %zu elements differ from the reference's bits; first [%zu]: 0x%0*x, expected "
		        "0x%0*x\n",
		        what, bad, n, first, (int)(2 * es), g, (int)(2 * es), w);
		return 0;
	}
	return 1;
}

/* Host-only work in a test (references computed on the CPU; no task
 * waited for in between): idle StarPU CPU workers poll for tasks in a
 * tight loop (StarPU's default, non-blocking drivers) and take the cores
 * from it and from the tests running beside it; between these two calls
 * they sleep (starpu_pause). Tasks submitted before or in between start
 * after test_host_end. Calls nest. */
static inline void test_host_begin(void)
{
	starpu_pause();
}
static inline void test_host_end(void)
{
	starpu_resume();
}

/* Marks a test's naive reference loop (the definition that starnn's
 * results are compared with): the sanitizer builds leave it uninstrumented.
 * The sanitizers are there to check starnn's code; a wrong index in a
 * reference shows as a mismatch against starnn's result. Instrumented, the
 * O(n c o h w k^2) loops took 79% of tests/codelets/conv2d's run under
 * ASan + UBSan (63 s; 17 s without). */
#if defined(__GNUC__) || defined(__clang__)
#define TEST_REFERENCE __attribute__((no_sanitize("address", "undefined")))
#else
#define TEST_REFERENCE
#endif

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
	float *p = calloc(n ? n : 1, sizeof *p); /* (zeroed: n may be 0) */
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

/* ------------------------------------------------ tolerances of sums
 * Outputs that are sums (dot products, convolutions, reductions) are
 * checked against a reference computed in double with, for each output,
 * the magnitude of its terms: mag = sum |term| (for y = beta y0 + sum a b:
 * |beta y0| + sum |a b|). The bound follows from the computation, not from
 * a constant (Higham and Mary, "A new approach to probabilistic rounding
 * error analysis", SIAM J. Sci. Comput. 41(5), 2019, Thm 3.1): a sum of n
 * terms evaluated in any order in a precision of unit roundoff u has
 *     |computed - exact| <= lambda sqrt(n) u mag
 * with probability at least 1 - 2n exp(-lambda^2 (1-u)^2 / 2), rounding
 * errors being independent and of mean zero (round to nearest on random
 * data). lambda = 10 makes that 1 - 4e-18 n per output: no correct kernel,
 * whatever its blocking, split, worker count or processor, fails it. The
 * deterministic bound n u mag (any order, no assumption) is sqrt(n) / 10
 * times wider: at n = 2304 it would let a wrong term of average size pass
 * in some elements, the probabilistic one does not. The result's own
 * rounding to the output type adds uout |exact| (uout = u, or the unit
 * roundoff of a 16-bit output: TEST_U16, TEST_UBF16); TEST_SUM_FLOOR
 * absorbs subnormal results. u: TEST_U32 for fp32 arithmetic. */
#define TEST_U32 5.9604644775390625e-8 /* 2^-24 */
#define TEST_U16 4.8828125e-4         /* fp16: 2^-11 */
#define TEST_UBF16 3.90625e-3         /* bf16: 2^-8 */
#define TEST_U64 1.1102230246251565e-16 /* 2^-53: double accumulation */
#define TEST_SUM_LAMBDA 10.0
#define TEST_SUM_FLOOR 1e-30

static inline double test_sum_bound(double mag, double exact, size_t nterms, double u, double uout)
{
	double sum = TEST_SUM_LAMBDA * sqrt((double)(nterms ? nterms : 1)) * u * mag;
	return sum + uout * (fabs(exact) + sum) + TEST_SUM_FLOOR;
}

/* The comparison behind test_close_sum_out and test_close_bound: element
 * i passes when |got - exact| <= its bound (from mag, nterms, u, uout; or
 * given per element in bound). */
struct test_bound_ctx {
	const double *mag, *bound;
	size_t nterms;
	double u, uout;
};
static inline double test_bound_of(const struct test_bound_ctx *c, size_t i, const double *exact)
{
	return c->bound ? c->bound[i] + TEST_SUM_FLOOR : test_sum_bound(c->mag[i], exact[i], c->nterms, c->u, c->uout);
}
static inline int test_close_core(const char *what, const float *got, const double *exact, size_t n,
                                  const struct test_bound_ctx *c)
{
	size_t bad = 0, worst = 0;
	double worst_ratio = -1;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - exact[i]);
		double ratio = isnan(d) ? INFINITY : d / test_bound_of(c, i, exact);
		if (ratio > 1)
			bad++;
		if (ratio > worst_ratio) {
			worst_ratio = ratio;
			worst = i;
		}
	}
	test_checks++;
	char detail[96];
	if (c->bound)
		snprintf(detail, sizeof detail, "bound %.3g", n ? c->bound[worst] : 0.0);
	else
		snprintf(detail, sizeof detail, "term magnitude %.6g, %zu terms", n ? c->mag[worst] : 0.0, c->nterms);
	if (getenv("STARNN_TEST_VERBOSE"))
		printf("     %s: worst error %.3g of its bound (%s)\n", what, worst_ratio, detail);
	if (bad) {
		test_failures++;
		fprintf(stderr,
		        "FAIL %s: %zu of %zu elements outside the %s bound; worst [%zu]: got %.9g, exact %.12g, %s: "
		        "%.3g times the bound\n",
		        what, bad, n, c->bound ? "derived" : "rounding", worst, n ? got[worst] : 0.0, n ? exact[worst] : 0.0,
		        detail, worst_ratio);
		return 0;
	}
	return 1;
}

/* got (float) against exact (double) with the bound above per element;
 * mag[i] as described, nterms the number of terms of each sum (the longest
 * when they differ). NaN counts as a mismatch. Reports the worst element
 * and how far it is into its bound (1.0 = at the bound). */
static inline int test_close_sum_out(const char *what, const float *got, const double *exact, const double *mag,
                                     size_t n, size_t nterms, double u, double uout)
{
	struct test_bound_ctx c = {mag, NULL, nterms, u, uout};
	return test_close_core(what, got, exact, n, &c);
}

/* The usual case: the output has the arithmetic's precision. */
static inline int test_close_sum(const char *what, const float *got, const double *exact, const double *mag, size_t n,
                                 size_t nterms, double u)
{
	return test_close_sum_out(what, got, exact, mag, n, nterms, u, u);
}

/* Results whose bound the caller derives per element (elementwise
 * formulas: k roundings of u relative to the magnitudes of the terms; a
 * chain of roundings of stored partials): |got - exact| <= bound[i] (plus
 * TEST_SUM_FLOOR). NaN counts as a mismatch. Reports the worst element and
 * how far it is into its bound, as test_close_sum_out does. */
static inline int test_close_bound(const char *what, const float *got, const double *exact, const double *bound,
                                   size_t n)
{
	struct test_bound_ctx c = {NULL, bound, 0, 0, 0};
	return test_close_core(what, got, exact, n, &c);
}

/* test_close_bound of a strided result: got[r * ld + c] (rows x cols
 * inside rows of ld) against the reference's dense element r * cols + c
 * (bound eb); the padding against pad0, exactly. */
static inline int test_close_strided(const char *what, const float *got, size_t rows, size_t cols, size_t ld,
                                     const double *ex, const double *eb, const float *pad0)
{
	double *e = malloc(rows * ld * sizeof *e), *b = malloc(rows * ld * sizeof *b);
	if (!e || !b) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < ld; c++) {
			size_t i = r * ld + c;
			e[i] = c < cols ? ex[r * cols + c] : pad0[i];
			b[i] = c < cols ? eb[r * cols + c] : 0;
		}
	int rc = test_close_bound(what, got, e, b, rows * ld);
	free(e), free(b);
	return rc;
}

/* A double reference with its term magnitudes: n of each (malloc'd). */
struct test_sums {
	double *val, *mag;
	size_t n;
};
static inline struct test_sums test_sums_new(size_t n)
{
	struct test_sums r = {calloc(n ? n : 1, sizeof(double)), calloc(n ? n : 1, sizeof(double)), n};
	if (!r.val || !r.mag) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return r;
}
static inline void test_sums_free(struct test_sums *r)
{
	free(r->val), free(r->mag);
	r->val = r->mag = NULL;
}
/* Elements of an untouched region (padding) of a strided output: exact
 * copies of the input, magnitude 0, so any change fails. */
static inline void test_sums_copy(struct test_sums *r, size_t i, float v)
{
	r->val[i] = v, r->mag[i] = 0;
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

/* ------------------------------------------------ element-wise operations
 * test_elementwise checks an element-wise operation (each output element
 * computed from the elements at the same place in its inputs) against a
 * reference function in double, through its submit function, on the
 * workers of this test (CPU, or CUDA in the _cuda build), for tensors of
 * one dtype (fp32, fp16 or bf16):
 *   - shapes [1, 1], [5, 7], [3, 1000] (long rows: the kernels' vector
 *     tails) and [2, 4, 3, 5];
 *   - strided views: the 4-D tensors split at channel 1 (parts [2, 1, 3, 5]
 *     and [2, 3, 3, 5], whose rows are 60 apart); the second part is
 *     computed first and the output's first channel must still hold what it
 *     held (bit for bit), then the first part;
 *   - inputs uniform in [lo, hi), rounded to the dtype (so the reference
 *     sees exactly what the kernel sees).
 * The tolerance is derived, per element: an operation that rounds
 * `roundings` times in fp32 is within roundings * 2^-24 * mag of the exact
 * result, mag being op->mag of the inputs (NULL: |exact|); a 16-bit output
 * adds its own rounding (2^-11 or 2^-8 relative, and half fp16's
 * subnormal step). roundings 0 means the result is a value every dtype
 * holds (a select, a copy): the comparison is then exact. NaN anywhere is
 * a mismatch. */
#define TEST_EW_MAXIN 4
struct test_ew {
	const char *name;   /* in the messages */
	int nin;            /* inputs, 1 .. TEST_EW_MAXIN */
	/* Submits the operation: in[0 .. nin - 1] -> out (all of one shape and dtype). */
	int (*submit)(starnn_tensor *const *in, starnn_tensor *out, void *ctx);
	/* The exact result of one element from its inputs; the magnitude its
	 * roundings scale with (NULL: |ref|). */
	double (*ref)(const double *in, void *ctx);
	double (*mag)(const double *in, void *ctx);
	int roundings;
	float lo, hi;
	void *ctx;
};

/* v rounded to dt (nearest even) and back: exact in fp32. */
static inline float test_round_to(starnn_dtype dt, float v)
{
	if (dt == STARNN_FP16)
		return starnn_half_to_float(starnn_float_to_half(v));
	if (dt == STARNN_BF16)
		return starnn_bf16_to_float(starnn_float_to_bf16(v));
	return v;
}

/* n values of dt: uniform in [lo, hi), rounded to dt (malloc'd, fp32). */
static inline float *test_random_dt(starnn_dtype dt, size_t n, float lo, float hi)
{
	float *v = test_random(n, lo, hi);
	for (size_t i = 0; i < n; i++)
		v[i] = test_round_to(dt, v[i]);
	return v;
}

/* The bound of one element (see above). */
static inline double test_ew_bound(const struct test_ew *op, starnn_dtype dt, const double *in, double exact)
{
	if (op->roundings == 0)
		return 0;
	double mag = op->mag ? op->mag(in, op->ctx) : fabs(exact);
	double b = op->roundings * TEST_U32 * mag;
	if (dt == STARNN_FP16)
		b += TEST_U16 * (fabs(exact) + b) + 0x1p-25;
	else if (dt == STARNN_BF16)
		b += TEST_UBF16 * (fabs(exact) + b);
	return b;
}

/* One shape: whole tensors, then (4-D) the two channel views. */
static inline void test_ew_shape(const struct test_ew *op, starnn_dtype dt, int ndim, const int64_t *shape)
{
	size_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= (size_t)shape[d];
	starnn_tensor *in[TEST_EW_MAXIN], *out;
	float *x[TEST_EW_MAXIN];
	for (int k = 0; k < op->nin; k++) {
		x[k] = test_random_dt(dt, n, op->lo, op->hi);
		TEST_OK(starnn_tensor_create(&in[k], "in", dt, ndim, shape));
		TEST_OK(starnn_tensor_write_f32(in[k], x[k]));
	}
	/* the output's old values: what the elements outside a view must keep */
	float *old = test_random_dt(dt, n, -3, 3);
	TEST_OK(starnn_tensor_create(&out, "out", dt, ndim, shape));
	TEST_OK(starnn_tensor_write_f32(out, old));

	double *exact = malloc(n * sizeof *exact), *bound = malloc(n * sizeof *bound);
	if (!exact || !bound) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		double a[TEST_EW_MAXIN];
		for (int k = 0; k < op->nin; k++)
			a[k] = x[k][i];
		exact[i] = op->ref(a, op->ctx);
		bound[i] = test_ew_bound(op, dt, a, exact[i]);
	}
	char what[160], dims[64];
	int len = 0;
	for (int d = 0; d < ndim; d++)
		len += snprintf(dims + len, sizeof dims - (size_t)len, "%s%lld", d ? ", " : "", (long long)shape[d]);

	/* whole tensors */
	TEST_OK(op->submit(in, out, op->ctx));
	float *got = test_read(out);
	snprintf(what, sizeof what, "%s %s [%s]", op->name, starnn_dtype_name(dt), dims);
	test_close_bound(what, got, exact, bound, n);
	free(got);

	if (ndim == 4 && shape[1] >= 2) { /* channel views: rows of c * hw inside rows of C * hw */
		int64_t sizes[2] = {1, shape[1] - 1};
		starnn_tensor **pin[TEST_EW_MAXIN], **pout, *vin[TEST_EW_MAXIN];
		TEST_OK(starnn_tensor_write_f32(out, old));
		for (int k = 0; k < op->nin; k++)
			TEST_OK(starnn_tensor_split(in[k], 1, 2, sizes, &pin[k]));
		TEST_OK(starnn_tensor_split(out, 1, 2, sizes, &pout));
		size_t rows = (size_t)shape[0], cols = n / rows, first = cols / (size_t)shape[1];
		double *e1 = malloc(n * sizeof *e1), *b1 = malloc(n * sizeof *b1);
		if (!e1 || !b1) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		for (int part = 1; part >= 0; part--) {
			for (int k = 0; k < op->nin; k++)
				vin[k] = pin[k][part];
			TEST_OK(op->submit(vin, pout[part], op->ctx));
			/* after part 1 alone, channel 0 of every sample is as it was */
			for (size_t i = 0; i < n; i++) {
				int untouched = part == 1 && i % cols < first;
				e1[i] = untouched ? old[i] : exact[i];
				b1[i] = untouched ? 0 : bound[i];
			}
			got = test_read(out);
			snprintf(what, sizeof what, "%s %s [%s], channel view%s", op->name, starnn_dtype_name(dt), dims,
			         part ? " [1:] (channel 0 untouched)" : "s [0:1] and [1:]");
			test_close_bound(what, got, e1, b1, n);
			free(got);
		}
		free(e1), free(b1);
	}
	for (int k = 0; k < op->nin; k++) {
		starnn_tensor_destroy(in[k]);
		free(x[k]);
	}
	starnn_tensor_destroy(out);
	free(old), free(exact), free(bound);
}

/* The whole check, in dtype dt. */
static inline void test_elementwise(const struct test_ew *op, starnn_dtype dt)
{
	static const int64_t s11[2] = {1, 1}, s57[2] = {5, 7}, s3k[2] = {3, 1000}, s4d[4] = {2, 4, 3, 5};
	test_ew_shape(op, dt, 2, s11);
	test_ew_shape(op, dt, 2, s57);
	test_ew_shape(op, dt, 2, s3k);
	test_ew_shape(op, dt, 4, s4d);
}

/* Activation layouts (runtime/core/tensor.h): n sample rows, ch channels of
 * hw pixels in blocks of b (1: NCHW), element (k, p) of a row at
 * starnn_chan_offset(k, hw, b) + p * b. test_to_blocked copies NCHW rows (ld
 * lds) into that layout (rows ld apart), test_from_blocked back; padding
 * past ch * hw is left as it is. */
static inline void test_to_blocked(size_t n, size_t ch, size_t hw, size_t b, const float *src, size_t lds, float *dst,
                                   size_t ld)
{
	for (size_t r = 0; r < n; r++)
		for (size_t k = 0; k < ch; k++)
			for (size_t p = 0; p < hw; p++)
				dst[r * ld + starnn_chan_offset(k, hw, b) + p * b] = src[r * lds + k * hw + p];
}

static inline void test_from_blocked(size_t n, size_t ch, size_t hw, size_t b, const float *src, size_t ld,
                                     float *dst, size_t ldd)
{
	for (size_t r = 0; r < n; r++)
		for (size_t k = 0; k < ch; k++)
			for (size_t p = 0; p < hw; p++)
				dst[r * ldd + k * hw + p] = src[r * ld + starnn_chan_offset(k, hw, b) + p * b];
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
