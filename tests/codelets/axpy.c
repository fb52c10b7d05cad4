/* axpy / scale / add: kernels against naive loops (dense and strided), and
 * the codelets (CPU, or CUDA in the _cuda build) against direct kernel
 * calls, on whole tensors and on batch / channel partitions. */
#include "codelets/axpy.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

static void naive_axpy(size_t n, float a, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] + a * x[i];
}

static void kernels_vs_naive(size_t cols)
{
	/* A strided view: 5 rows of cols inside rows of cols + 4. */
	size_t rows = 5, ld = cols + 4, n = rows * ld;
	float *x = test_random(n, -1, 1), *y = test_random(n, -1, 1), *z = test_random(n, -1, 1);
	float *ref = malloc(n * sizeof *ref), *zref = malloc(n * sizeof *zref);
	memcpy(ref, y, n * sizeof *y);
	memcpy(zref, z, n * sizeof *z);

	starnn_axpy_cpu(rows, cols, 0.5f, x, ld, y, ld);
	for (size_t r = 0; r < rows; r++)
		naive_axpy(cols, 0.5f, x + r * ld, ref + r * ld);
	test_close("axpy_cpu strided", y, ref, n, 0, 0); /* padding untouched too */

	starnn_scale_cpu(rows, cols, -3.0f, y, ld);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			ref[r * ld + c] *= -3.0f;
	test_close("scale_cpu strided", y, ref, n, 0, 0);

	starnn_add_cpu(rows, cols, 2.0f, x, ld, -1.5f, y, ld, z, ld);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			zref[r * ld + c] = 2.0f * x[r * ld + c] + -1.5f * y[r * ld + c];
	test_close("add_cpu strided", z, zref, n, 0, 0);
	free(x), free(y), free(z), free(ref), free(zref);
}

/* Codelet result vs the CPU kernel called directly on the same data. */
static void codelets_vs_kernels(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w};
	size_t numel = (size_t)(n * c * h * w);
	float *x = test_random(numel, -2, 2), *y = test_random(numel, -2, 2);
	starnn_tensor *tx = test_tensor("x", 4, shape, x), *ty = test_tensor("y", 4, shape, y);
	starnn_tensor *tz = test_tensor("z", 4, shape, NULL);
	size_t rows = (size_t)n, cols = numel / (size_t)n;

	float *ref = malloc(numel * sizeof *ref), *zref = malloc(numel * sizeof *zref);
	memcpy(ref, y, numel * sizeof *y);
	starnn_axpy_cpu(rows, cols, 0.25f, x, cols, ref, cols);
	starnn_scale_cpu(rows, cols, 3.0f, ref, cols);
	starnn_add_cpu(rows, cols, 1.0f, x, cols, -2.0f, ref, cols, zref, cols);

	TEST_OK(starnn_axpy(0.25f, tx, ty));
	TEST_OK(starnn_scale(3.0f, ty));
	TEST_OK(starnn_add(1.0f, tx, -2.0f, ty, tz));
	float *gy = test_read(ty), *gz = test_read(tz);
	/* Same operations, same order: CPU bit-exact, CUDA within rounding (FMA). */
	float tol = TEST_ON_CUDA ? 1e-6f : 0;
	test_close("axpy+scale codelets", gy, ref, numel, tol, tol);
	test_close("add codelet", gz, zref, numel, tol, tol);

	/* The same through partitions: micro-batches for y, channel halves for z. */
	if (n >= 2) {
		TEST_OK(starnn_tensor_split(ty, 0, 2, NULL, NULL));
		for (int p = 0; p < 2; p++)
			TEST_OK(starnn_scale(0.5f, ty->parts[p]));
		starnn_scale_cpu(rows, cols, 0.5f, ref, cols);
		free(gy);
		gy = test_read(ty);
		test_close("scale on batch parts", gy, ref, numel, tol, tol);
	}
	if (c >= 2) {
		int64_t sizes[2] = {1, c - 1};
		TEST_OK(starnn_tensor_split(tz, 1, 2, sizes, NULL));
		/* z channel 0 += x channel 0 would need x split too: scale the parts differently. */
		TEST_OK(starnn_scale(2.0f, tz->parts[0]));
		TEST_OK(starnn_scale(-1.0f, tz->parts[1]));
		size_t inner = (size_t)(h * w);
		for (size_t r = 0; r < rows; r++)
			for (size_t k = 0; k < cols; k++)
				zref[r * cols + k] *= k < inner ? 2.0f : -1.0f;
		free(gz);
		gz = test_read(tz);
		test_close("scale on channel parts", gz, zref, numel, tol, tol);
	}

	char d[128];
	TEST_ASSERT(starnn_axpy(1.0f, tx, tz->parts ? tz->parts[0] : ty) == STARNN_EINVAL || !tz->parts,
	            "axpy with mismatched shapes must fail (%s)", starnn_tensor_describe(tx, d, sizeof d));
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tz);
	free(x), free(y), free(ref), free(zref), free(gy), free(gz);
}

int main(void)
{
	test_init();
	if (!TEST_ON_CUDA) {
		/* at every instruction-set level; exact, so the levels agree too */
		SC_FOR_EACH_LEVEL(lv) {
			kernels_vs_naive(7);
			kernels_vs_naive(1000);
		}
		sc_level_done();
	}
	codelets_vs_kernels(1, 1, 1, 1);
	codelets_vs_kernels(4, 3, 5, 7);
	codelets_vs_kernels(3, 16, 32, 32);
	return test_finish();
}
