/* sum / sumsq: kernels against double loops on strided views, the beta
 * (accumulate) flag, the double accumulation (a sum float accumulation gets
 * wrong), the codelets (CPU, or CUDA in the _cuda build) against direct
 * kernel calls on whole tensors, micro-batch parts accumulated with beta = 1
 * and channel parts (ld > cols), and bad arguments -> STARNN_EINVAL. */
#include "codelets/reduce.h"
#include "tests/testlib.h"

static double naive(size_t rows, size_t cols, const float *x, size_t ld, int square, double *sumabs)
{
	double s = 0, a = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			double v = x[r * ld + c];
			s += square ? v * v : v;
			a += square ? v * v : fabs(v);
		}
	if (sumabs)
		*sumabs = a;
	return s;
}

static void kernels_vs_naive(void)
{
	/* 5 rows of 7 inside rows of 11; the padding holds large values that
	 * would show if it were summed. */
	size_t rows = 5, cols = 7, ld = 11, n = rows * ld;
	float *x = test_random(n, -1, 1);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = cols; c < ld; c++)
			x[r * ld + c] = 1000.0f;
	for (int square = 0; square < 2; square++) {
		const char *what = square ? "sumsq_cpu" : "sum_cpu";
		void (*k)(size_t, size_t, const float *, size_t, float, float *) = square ? starnn_sumsq_cpu : starnn_sum_cpu;
		double s = naive(rows, cols, x, ld, square, NULL);
		float out = NAN, ref = (float)s;
		k(rows, cols, x, ld, 0.0f, &out); /* beta 0: the NaN is not read */
		char msg[64];
		snprintf(msg, sizeof msg, "%s strided beta=0", what);
		test_close(msg, &out, &ref, 1, 1e-6f, 0);
		out = 2.5f;
		ref = (float)(2.5 + s);
		k(rows, cols, x, ld, 1.0f, &out);
		snprintf(msg, sizeof msg, "%s strided beta=1", what);
		test_close(msg, &out, &ref, 1, 1e-6f, 0);
		out = 2.5f;
		ref = (float)(-1.25 + s);
		k(rows, cols, x, ld, -0.5f, &out);
		snprintf(msg, sizeof msg, "%s strided beta=-0.5", what);
		test_close(msg, &out, &ref, 1, 1e-6f, 0);
		/* Empty tensor: out = beta * out. */
		out = 3.0f;
		k(0, cols, x, ld, 1.0f, &out);
		TEST_ASSERT(out == 3.0f, "%s of nothing with beta 1 changed out to %g", what, (double)out);
	}

	/* 1e8 + 1000 ones - 1e8: a float accumulator loses every 1 (ulp(1e8) =
	 * 8) and gives 0; the double accumulation gives exactly 1000. Likewise
	 * sumsq of {1e4, 1 x 1000} = 100001000 exactly (a float multiple of 8). */
	size_t m = 1002;
	float *y = malloc(m * sizeof *y);
	for (size_t i = 0; i < m; i++)
		y[i] = 1.0f;
	y[0] = 1e8f;
	y[m - 1] = -1e8f;
	float out = 0;
	starnn_sum_cpu(1, m, y, m, 0.0f, &out);
	TEST_ASSERT(out == 1000.0f, "sum_cpu must accumulate in double: 1e8 + 1000 x 1 - 1e8 gave %.9g", (double)out);
	y[0] = 1e4f;
	starnn_sumsq_cpu(1, m - 1, y, m, 0.0f, &out);
	TEST_ASSERT(out == 100001000.0f, "sumsq_cpu must accumulate in double: got %.9g, expected 100001000",
	            (double)out);
	free(x), free(y);
}

/* The codelets against the CPU kernels on the same data. */
static void codelets_vs_kernels(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w}, one = 1;
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * w);
	float *x = test_random(numel, -2, 2);
	starnn_tensor *tx = test_tensor("x", 4, shape, x);
	starnn_tensor *ts = test_tensor("s", 1, &one, NULL), *tq = test_tensor("q", 1, &one, NULL);
	/* CPU: same kernel, same data: bit-exact. CUDA: another summation order
	 * in double, then one rounding to float: within a few ulps, relative to
	 * the sum of magnitudes (cancellation). */
	double sumabs, sqabs;
	naive(rows, cols, x, cols, 0, &sumabs);
	naive(rows, cols, x, cols, 1, &sqabs);
	float tol_s = TEST_ON_CUDA ? (float)(1e-6 * sumabs) : 0, tol_q = TEST_ON_CUDA ? (float)(1e-6 * sqabs) : 0;

	float ref_s, ref_q, *got;
	starnn_sum_cpu(rows, cols, x, cols, 0.0f, &ref_s);
	starnn_sumsq_cpu(rows, cols, x, cols, 0.0f, &ref_q);
	TEST_OK(starnn_sum(tx, ts, 0.0f));
	TEST_OK(starnn_sumsq(tx, tq, 0.0f));
	got = test_read(ts);
	test_close("sum codelet", got, &ref_s, 1, 0, tol_s);
	free(got);
	got = test_read(tq);
	test_close("sumsq codelet", got, &ref_q, 1, 0, tol_q);
	free(got);

	/* Accumulate: out = 1 * out + sum(x) on top of the previous result. */
	TEST_OK(starnn_sum(tx, ts, 1.0f));
	float ref2 = ref_s;
	starnn_sum_cpu(rows, cols, x, cols, 1.0f, &ref2);
	got = test_read(ts);
	test_close("sum codelet beta=1", got, &ref2, 1, 0, 2 * tol_s);
	free(got);

	/* Micro-batches: part 0 overwrites, the others accumulate. */
	if (n >= 2) {
		TEST_OK(starnn_tensor_split(tx, 0, 2, NULL, NULL));
		TEST_OK(starnn_sumsq(tx->parts[0], tq, 0.0f));
		TEST_OK(starnn_sumsq(tx->parts[1], tq, 1.0f));
		size_t r0 = tx->parts[0]->rows;
		float ref = 0;
		starnn_sumsq_cpu(r0, cols, x, cols, 0.0f, &ref);
		starnn_sumsq_cpu(rows - r0, cols, x + r0 * cols, cols, 1.0f, &ref);
		got = test_read(tq);
		test_close("sumsq over batch parts, accumulated", got, &ref, 1, 0, tol_q);
		/* and it equals the whole sum up to one rounding of the partial */
		test_close("sumsq parts vs whole", got, &ref_q, 1, 1e-6f, tol_q);
		free(got);
		TEST_OK(starnn_tensor_gather(tx));
	} else if (c >= 2) {
		/* Channel parts: strided views (ld = cols > part cols). */
		int64_t sizes[2] = {1, c - 1};
		TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, NULL));
		TEST_OK(starnn_sum(tx->parts[1], ts, 0.0f));
		TEST_OK(starnn_sum(tx->parts[0], ts, 1.0f));
		float ref = 0;
		starnn_sum_cpu(rows, cols - inner, x + inner, cols, 0.0f, &ref);
		starnn_sum_cpu(rows, inner, x, cols, 1.0f, &ref);
		got = test_read(ts);
		test_close("sum over channel parts (strided), accumulated", got, &ref, 1, 0, 2 * tol_s);
		free(got);
		TEST_OK(starnn_tensor_gather(tx));
	}
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ts), starnn_tensor_destroy(tq);
	free(x);
}

static void channel_parts(void)
{
	/* N > 1 and C > 1: channel parts are strided over several rows. */
	int64_t shape[4] = {3, 4, 6, 5}, one = 1, sizes[2] = {3, 1};
	size_t numel = 3 * 4 * 6 * 5, cols = numel / 3, inner = 30;
	float *x = test_random(numel, -1, 1);
	starnn_tensor *tx = test_tensor("x", 4, shape, x), *tq = test_tensor("q", 1, &one, NULL);
	TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, NULL));
	TEST_OK(starnn_sumsq(tx->parts[0], tq, 0.0f));
	TEST_OK(starnn_sumsq(tx->parts[1], tq, 1.0f));
	float ref = 0, *got;
	starnn_sumsq_cpu(3, 3 * inner, x, cols, 0.0f, &ref);
	starnn_sumsq_cpu(3, inner, x + 3 * inner, cols, 1.0f, &ref);
	double exact = naive(3, cols, x, cols, 1, NULL);
	got = test_read(tq);
	test_close("sumsq over channel parts (strided)", got, &ref, 1, TEST_ON_CUDA ? 1e-6f : 0, 0);
	float fexact = (float)exact;
	test_close("sumsq over channel parts vs double loop", got, &fexact, 1, 1e-6f, 0);
	free(got);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(tq);
	free(x);
}

static void bad_arguments(void)
{
	starnn_tensor *x, *two, *h, *out;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&two, "two", STARNN_FP32, 1, 2));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, 3, 4));
	TEST_OK(starnn_tensor_new(&out, "out", STARNN_FP32, 1, 1));
	TEST_ASSERT(starnn_sum(x, two, 0.0f) == STARNN_EINVAL, "sum into a 2-element tensor must fail");
	TEST_ASSERT(starnn_sumsq(x, x, 0.0f) == STARNN_EINVAL, "sumsq into a 12-element tensor must fail");
	TEST_ASSERT(starnn_sum(h, out, 0.0f) == STARNN_EINVAL, "sum of an fp16 tensor must fail");
	TEST_ASSERT(starnn_sum(out, out, 0.0f) == STARNN_EINVAL, "sum of a tensor into itself must fail");
	TEST_ASSERT(starnn_sum(x, out, NAN) == STARNN_EINVAL, "sum with beta NaN must fail");
	starnn_tensor_destroy(x), starnn_tensor_destroy(two), starnn_tensor_destroy(h), starnn_tensor_destroy(out);
}

int main(void)
{
	test_init();
	if (!TEST_ON_CUDA)
		kernels_vs_naive();
	codelets_vs_kernels(1, 1, 1, 1);
	codelets_vs_kernels(1, 3, 5, 7);
	codelets_vs_kernels(4, 3, 5, 7);
	codelets_vs_kernels(3, 16, 32, 32);
	codelets_vs_kernels(2, 8, 128, 160); /* > 1024 blocks x 256 threads on CUDA */
	channel_parts();
	bad_arguments();
	return test_finish();
}
