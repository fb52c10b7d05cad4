/* axpy / scale / add: kernels against references in double (dense and
 * strided), and the codelets (CPU, or CUDA / OpenCL in the _cuda / _opencl
 * builds) against the same, on whole tensors and on batch / channel
 * partitions; except on CUDA (which contracts), the codelets' results are
 * also the CPU kernels' bit for bit (OpenCL: docs/opencl.md).
 *
 * Tolerances: each result is one or two fp32 operations on its inputs.
 * scale (alpha y) is one rounding: it must equal the correctly rounded
 * exact value, bit for bit, on any processor. axpy (y + alpha x) and add
 * (alpha x + beta y) round each product and then the sum, unless the
 * compiler fuses a product into an FMA (nvcc does by default; GCC may on
 * processors with FMA): then that product is not rounded. The bound is
 * therefore the products' own rounding errors (computed: |fl(alpha x) -
 * alpha x|, 0 when alpha is a power of two) plus one rounding of the sum,
 * 2^-24 of its magnitude (op_bound); when every product is exact the
 * result is one rounding of the exact sum (exact in double for these
 * data) and must equal it bit for bit. The tests use both kinds of
 * coefficients. */
#include "codelets/axpy.h"
#include "codelets/kernels/axpy.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

/* The rounding error of the fp32 product a * b (exact in double). */
static double prod_err(float a, float b)
{
	volatile double p = (double)a * (double)b; /* not folded into an fp32 product */
	volatile float pf = (float)p;
	return fabs((double)pf - p);
}

/* exact[i] with perr[i] the products' rounding errors: bit for bit the
 * rounded exact value when perr is 0, else within perr + u (|exact| +
 * perr) (see the file's comment). */
static void op_bound(const char *what, const float *got, const double *exact, const double *perr, size_t n)
{
	double *e = malloc((n + 1) * sizeof *e), *b = malloc((n + 1) * sizeof *b);
	for (size_t i = 0; i < n; i++) {
		if (perr[i] == 0)
			e[i] = (float)exact[i], b[i] = 0;
		else
			e[i] = exact[i], b[i] = (1 + TEST_U32) * (perr[i] + TEST_U32 * (fabs(exact[i]) + perr[i]));
	}
	test_close_bound(what, got, e, b, n);
	free(e), free(b);
}

/* y + a x over rows x cols inside rows of ld (padding: exact copies). */
static void ref_axpy(size_t rows, size_t cols, size_t ld, float a, const float *x, const float *y, double *e,
                     double *perr)
{
	for (size_t i = 0; i < rows * ld; i++)
		e[i] = y[i], perr[i] = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			size_t i = r * ld + c;
			e[i] = (double)y[i] + (double)a * x[i], perr[i] = prod_err(a, x[i]);
		}
}

/* alpha x + beta y over rows x cols inside rows of ld; old: z before. */
static void ref_add(size_t rows, size_t cols, size_t ld, float alpha, const float *x, float beta, const float *y,
                    const float *old, double *e, double *perr)
{
	for (size_t i = 0; i < rows * ld; i++)
		e[i] = old[i], perr[i] = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			size_t i = r * ld + c;
			e[i] = (double)alpha * x[i] + (double)beta * y[i];
			perr[i] = prod_err(alpha, x[i]) + prod_err(beta, y[i]);
		}
}

/* alpha y over rows x cols inside rows of ld: one rounding. */
static void ref_scale(size_t rows, size_t cols, size_t ld, float alpha, const float *y, double *e, double *perr)
{
	for (size_t i = 0; i < rows * ld; i++)
		e[i] = y[i], perr[i] = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			e[r * ld + c] = (double)alpha * y[r * ld + c];
}

static void kernels_vs_naive(size_t cols)
{
	/* A strided view: 5 rows of cols inside rows of cols + 4. */
	size_t rows = 5, ld = cols + 4, n = rows * ld;
	float *x = test_random(n, -1, 1), *y = test_random(n, -1, 1), *z = test_random(n, -1, 1);
	double *e = malloc(n * sizeof *e), *perr = malloc(n * sizeof *perr);
	float *y0 = malloc(n * sizeof *y0);

	/* alpha 0.5: an exact product, one rounding */
	memcpy(y0, y, n * sizeof *y);
	starnn_axpy_cpu(rows, cols, 0.5f, x, ld, y, ld);
	ref_axpy(rows, cols, ld, 0.5f, x, y0, e, perr);
	op_bound("axpy_cpu strided, alpha 0.5", y, e, perr, n); /* padding untouched too */

	/* alpha 0.3: a rounded product (or an FMA) */
	memcpy(y0, y, n * sizeof *y);
	starnn_axpy_cpu(rows, cols, 0.3f, x, ld, y, ld);
	ref_axpy(rows, cols, ld, 0.3f, x, y0, e, perr);
	op_bound("axpy_cpu strided, alpha 0.3", y, e, perr, n);

	memcpy(y0, y, n * sizeof *y);
	starnn_scale_cpu(rows, cols, -3.0f, y, ld);
	ref_scale(rows, cols, ld, -3.0f, y0, e, perr);
	op_bound("scale_cpu strided", y, e, perr, n);

	float *z0 = malloc(n * sizeof *z0);
	memcpy(z0, z, n * sizeof *z);
	starnn_add_cpu(rows, cols, 2.0f, x, ld, -1.5f, y, ld, z, ld);
	ref_add(rows, cols, ld, 2.0f, x, -1.5f, y, z0, e, perr);
	op_bound("add_cpu strided", z, e, perr, n);
	free(x), free(y), free(z), free(e), free(perr), free(y0), free(z0);
}

/* The CPU kernels' results on host copies, which a codelet other than
 * CUDA's (no contraction) must give bit for bit. */
static void same_as_axpy_cpu(const char *what, const float *got, size_t rows, size_t cols, float alpha,
                             const float *x, const float *y)
{
	if (TEST_ON_CUDA)
		return;
	float *want = malloc(rows * cols * sizeof *want);
	memcpy(want, y, rows * cols * sizeof *want);
	starnn_axpy_cpu(rows, cols, alpha, x, cols, want, cols);
	test_same_bits(what, got, want, rows * cols, 4);
	free(want);
}

static void same_as_scale_cpu(const char *what, const float *got, size_t rows, size_t cols, size_t ld, float alpha,
                              const float *y)
{
	if (TEST_ON_CUDA)
		return;
	float *want = malloc(rows * ld * sizeof *want);
	memcpy(want, y, rows * ld * sizeof *want);
	starnn_scale_cpu(rows, cols, alpha, want, ld);
	test_same_bits(what, got, want, rows * ld, 4);
	free(want);
}

static void same_as_add_cpu(const char *what, const float *got, size_t rows, size_t cols, float alpha, const float *x,
                            float beta, const float *y)
{
	if (TEST_ON_CUDA)
		return;
	float *want = malloc(rows * cols * sizeof *want);
	starnn_add_cpu(rows, cols, alpha, x, cols, beta, y, cols, want, cols);
	test_same_bits(what, got, want, rows * cols, 4);
	free(want);
}

/* The codelets against the references, each step on the stored result of
 * the one before. */
static void codelets_vs_naive(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w};
	size_t numel = (size_t)(n * c * h * w);
	float *x = test_random(numel, -2, 2), *y = test_random(numel, -2, 2);
	starnn_tensor *tx = test_tensor("x", 4, shape, x), *ty = test_tensor("y", 4, shape, y);
	starnn_tensor *tz = test_tensor("z", 4, shape, NULL);
	size_t rows = (size_t)n, cols = numel / (size_t)n;
	double *e = malloc(numel * sizeof *e), *perr = malloc(numel * sizeof *perr);
	float *zero = calloc(numel, sizeof *zero);

	TEST_OK(starnn_axpy(0.25f, tx, ty));
	float *gy = test_read(ty);
	ref_axpy(rows, cols, cols, 0.25f, x, y, e, perr);
	op_bound("axpy codelet, alpha 0.25", gy, e, perr, numel);
	same_as_axpy_cpu("axpy codelet, alpha 0.25, bits", gy, rows, cols, 0.25f, x, y);
	TEST_OK(starnn_scale(3.0f, ty));
	float *prev = gy;
	gy = test_read(ty);
	ref_scale(rows, cols, cols, 3.0f, prev, e, perr);
	op_bound("scale codelet", gy, e, perr, numel);
	same_as_scale_cpu("scale codelet, bits", gy, rows, cols, cols, 3.0f, prev);
	free(prev);
	TEST_OK(starnn_add(1.0f, tx, -2.0f, ty, tz));
	float *gz = test_read(tz);
	ref_add(rows, cols, cols, 1.0f, x, -2.0f, gy, zero, e, perr);
	op_bound("add codelet, 1 and -2", gz, e, perr, numel);
	same_as_add_cpu("add codelet, 1 and -2, bits", gz, rows, cols, 1.0f, x, -2.0f, gy);
	/* a rounded product (an FMA on CUDA) */
	TEST_OK(starnn_axpy(0.3f, tx, ty));
	prev = gy;
	gy = test_read(ty);
	ref_axpy(rows, cols, cols, 0.3f, x, prev, e, perr);
	op_bound("axpy codelet, alpha 0.3", gy, e, perr, numel);
	same_as_axpy_cpu("axpy codelet, alpha 0.3, bits", gy, rows, cols, 0.3f, x, prev);
	free(prev);
	float *z1 = gz;
	TEST_OK(starnn_add(0.7f, tx, -1.3f, ty, tz));
	gz = test_read(tz);
	ref_add(rows, cols, cols, 0.7f, x, -1.3f, gy, z1, e, perr);
	op_bound("add codelet, 0.7 and -1.3", gz, e, perr, numel);
	same_as_add_cpu("add codelet, 0.7 and -1.3, bits", gz, rows, cols, 0.7f, x, -1.3f, gy);
	free(z1);

	/* The same through partitions: micro-batches for y, channel halves for z. */
	if (n >= 2) {
		TEST_OK(starnn_tensor_split(ty, 0, 2, NULL, NULL));
		for (int p = 0; p < 2; p++)
			TEST_OK(starnn_scale(0.5f, ty->parts[p]));
		prev = gy;
		gy = test_read(ty);
		ref_scale(rows, cols, cols, 0.5f, prev, e, perr);
		op_bound("scale on batch parts", gy, e, perr, numel);
		same_as_scale_cpu("scale on batch parts, bits", gy, rows, cols, cols, 0.5f, prev);
		free(prev);
	}
	if (c >= 2) {
		int64_t sizes[2] = {1, c - 1};
		TEST_OK(starnn_tensor_split(tz, 1, 2, sizes, NULL));
		/* z channel 0 += x channel 0 would need x split too: scale the parts differently. */
		TEST_OK(starnn_scale(2.0f, tz->parts[0]));
		TEST_OK(starnn_scale(-1.0f, tz->parts[1]));
		size_t inner = (size_t)(h * w);
		prev = gz;
		gz = test_read(tz);
		ref_scale(rows, inner, cols, 2.0f, prev, e, perr);
		for (size_t r = 0; r < rows; r++)
			for (size_t k = inner; k < cols; k++)
				e[r * cols + k] = -(double)prev[r * cols + k];
		op_bound("scale on channel parts", gz, e, perr, numel);
		if (!TEST_ON_CUDA) { /* channel 0 by 2, the others by -1: both exact */
			float *want = malloc(numel * sizeof *want);
			memcpy(want, prev, numel * sizeof *want);
			starnn_scale_cpu(rows, inner, 2.0f, want, cols);
			starnn_scale_cpu(rows, cols - inner, -1.0f, want + inner, cols);
			test_same_bits("scale on channel parts, bits", gz, want, numel, 4);
			free(want);
		}
		free(prev);
	}

	char d[128];
	TEST_ASSERT(starnn_axpy(1.0f, tx, tz->parts ? tz->parts[0] : ty) == STARNN_EINVAL || !tz->parts,
	            "axpy with mismatched shapes must fail (%s)", starnn_tensor_describe(tx, d, sizeof d));
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tz);
	free(x), free(y), free(gy), free(gz), free(e), free(perr), free(zero);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		/* at every instruction-set level */
		SC_FOR_EACH_LEVEL(lv) {
			kernels_vs_naive(7);
			kernels_vs_naive(1000);
		}
		sc_level_done();
	}
	codelets_vs_naive(1, 1, 1, 1);
	codelets_vs_naive(4, 3, 5, 7);
	codelets_vs_naive(3, 16, 32, 32);
	return test_finish();
}
