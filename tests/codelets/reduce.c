/* sum / sumsq: kernels on strided views, the beta (accumulate) flag, the
 * double accumulation (a sum float accumulation gets wrong), the codelets
 * (CPU, or CUDA in the _cuda build) on whole tensors, micro-batch parts
 * accumulated with beta = 1 and channel parts (ld > cols), and bad
 * arguments -> STARNN_EINVAL.
 *
 * Tolerances: every result is checked against the sum in double from the
 * definition (terms x or x^2 of floats: exact in double), with the sum of
 * |term| as its magnitude. Both the CPU and the CUDA kernels accumulate in
 * double (in their own orders: 8 lanes row by row; a grid-stride and tree
 * reduction) and round once to float, so one result is within
 *     lambda sqrt(n) 2^-53 mag  +  2^-24 |exact|
 * (tests/testlib.h, test_close_sum_out with u = TEST_U64, uout = TEST_U32):
 * the double sum's rounding bound plus the single rounding to float, a
 * hard bound: a correct kernel may reach 0.5 ulp of the result, i.e. up to
 * ~1 of this bound when |exact| is just above a power of two. A result
 * accumulated over several tasks (beta = 1: micro-batch or channel parts)
 * is rounded to float once per task; each stored partial adds 2^-24 of its
 * own magnitude (parts_bound). Exact cases (empty sums, the double
 * accumulation checks on exactly representable data) are compared with ==.
 *
 * Except on CUDA (another order), the codelets' results are also the CPU
 * kernels' bit for bit (test_same_bits, same_as_cpu): the OpenCL kernels
 * run the CPU kernels' loops in their order (docs/opencl.md). */
#include "codelets/kernels/reduce.h"
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

/* One double sum of nterms terms of magnitude mag, then float roundings of
 * the partials stored between tasks (their exact values stored[0..k-1],
 * the last one the result): each rounding adds 2^-24 of what it rounds
 * (including the error so far). */
static double parts_bound(double mag, size_t nterms, const double *stored, int k)
{
	double b = TEST_SUM_LAMBDA * sqrt((double)(nterms ? nterms : 1)) * TEST_U64 * mag;
	for (int j = 0; j < k; j++)
		b += TEST_U32 * (fabs(stored[j]) + b);
	return b;
}

/* The CPU kernel's steps on host data: each (x part, beta) in turn into
 * one float starting from NaN (beta 0 first: not read); got must be its
 * bits, except on CUDA. */
struct cpu_step {
	size_t rows, cols;
	const float *x;
	size_t ld;
	float beta;
};

static void same_as_cpu(const char *what, const float *got, int square, const struct cpu_step *steps, int nsteps)
{
	if (TEST_ON_CUDA)
		return;
	float want = NAN;
	for (int i = 0; i < nsteps; i++)
		(square ? starnn_sumsq_cpu : starnn_sum_cpu)(steps[i].rows, steps[i].cols, steps[i].x, steps[i].ld,
		                                             steps[i].beta, &want);
	test_same_bits(what, got, &want, 1, 4);
}

static void kernels_vs_naive(void)
{
	/* 5 rows of 7 inside rows of 11; the padding holds large values that
	 * would show if it were summed. */
	size_t rows = 5, cols = 7, ld = 11, n = rows * ld, nt = rows * cols;
	float *x = test_random(n, -1, 1);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = cols; c < ld; c++)
			x[r * ld + c] = 1000.0f;
	for (int square = 0; square < 2; square++) {
		const char *what = square ? "sumsq_cpu" : "sum_cpu";
		void (*k)(size_t, size_t, const float *, size_t, float, float *) = square ? starnn_sumsq_cpu : starnn_sum_cpu;
		double mag, s = naive(rows, cols, x, ld, square, &mag), ex, mg;
		float out = NAN;
		k(rows, cols, x, ld, 0.0f, &out); /* beta 0: the NaN is not read */
		char msg[64];
		snprintf(msg, sizeof msg, "%s strided beta=0", what);
		test_close_sum_out(msg, &out, &s, &mag, 1, nt, TEST_U64, TEST_U32);
		/* beta out: beta * 2.5 is exact in double, one more term */
		out = 2.5f;
		ex = 2.5 + s, mg = 2.5 + mag;
		k(rows, cols, x, ld, 1.0f, &out);
		snprintf(msg, sizeof msg, "%s strided beta=1", what);
		test_close_sum_out(msg, &out, &ex, &mg, 1, nt + 1, TEST_U64, TEST_U32);
		out = 2.5f;
		ex = -1.25 + s, mg = 1.25 + mag;
		k(rows, cols, x, ld, -0.5f, &out);
		snprintf(msg, sizeof msg, "%s strided beta=-0.5", what);
		test_close_sum_out(msg, &out, &ex, &mg, 1, nt + 1, TEST_U64, TEST_U32);
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

/* The codelets against the double sums. */
static void codelets_vs_naive(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w}, one = 1;
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * w);
	float *x = test_random(numel, -2, 2);
	starnn_tensor *tx = test_tensor("x", 4, shape, x);
	starnn_tensor *ts = test_tensor("s", 1, &one, NULL), *tq = test_tensor("q", 1, &one, NULL);
	double sumabs, sqabs, s = naive(rows, cols, x, cols, 0, &sumabs), q = naive(rows, cols, x, cols, 1, &sqabs);
	char what[128];

	float *got;
	TEST_OK(starnn_sum(tx, ts, 0.0f));
	TEST_OK(starnn_sumsq(tx, tq, 0.0f));
	got = test_read(ts);
	snprintf(what, sizeof what, "sum codelet [%lld,%lld,%lld,%lld]", (long long)n, (long long)c, (long long)h,
	         (long long)w);
	test_close_sum_out(what, got, &s, &sumabs, 1, numel, TEST_U64, TEST_U32);
	const struct cpu_step whole0 = {rows, cols, x, cols, 0.0f}, whole1 = {rows, cols, x, cols, 1.0f};
	same_as_cpu(what, got, 0, &whole0, 1);
	float first = *got;
	free(got);
	got = test_read(tq);
	snprintf(what, sizeof what, "sumsq codelet [%lld,%lld,%lld,%lld]", (long long)n, (long long)c, (long long)h,
	         (long long)w);
	test_close_sum_out(what, got, &q, &sqabs, 1, numel, TEST_U64, TEST_U32);
	same_as_cpu(what, got, 1, &whole0, 1);
	free(got);

	/* Accumulate: out = 1 * out + sum(x) on top of the stored result. */
	TEST_OK(starnn_sum(tx, ts, 1.0f));
	double ex = (double)first + s, mg = fabs((double)first) + sumabs;
	got = test_read(ts);
	test_close_sum_out("sum codelet beta=1", got, &ex, &mg, 1, numel + 1, TEST_U64, TEST_U32);
	same_as_cpu("sum codelet beta=1", got, 0, (const struct cpu_step[]){whole0, whole1}, 2);
	free(got);

	if (n >= 2) {
		/* Micro-batches: part 0 overwrites, the others accumulate; the
		 * parts add up to the whole sum. */
		TEST_OK(starnn_tensor_split(tx, 0, 2, NULL, NULL));
		TEST_OK(starnn_sumsq(tx->parts[0], tq, 0.0f));
		TEST_OK(starnn_sumsq(tx->parts[1], tq, 1.0f));
		size_t r0 = tx->parts[0]->rows;
		double stored[2] = {naive(r0, cols, x, cols, 1, NULL), q};
		double bound = parts_bound(sqabs, numel, stored, 2);
		got = test_read(tq);
		test_close_bound("sumsq over batch parts, accumulated", got, &q, &bound, 1);
		same_as_cpu("sumsq over batch parts, accumulated", got, 1,
		            (const struct cpu_step[]){{r0, cols, x, cols, 0.0f}, {rows - r0, cols, x + r0 * cols, cols, 1.0f}},
		            2);
		free(got);
		TEST_OK(starnn_tensor_gather(tx));
	} else if (c >= 2) {
		/* Channel parts: strided views (ld = cols > part cols). */
		int64_t sizes[2] = {1, c - 1};
		TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, NULL));
		TEST_OK(starnn_sum(tx->parts[1], ts, 0.0f));
		TEST_OK(starnn_sum(tx->parts[0], ts, 1.0f));
		double stored[2] = {naive(rows, cols - inner, x + inner, cols, 0, NULL), s};
		double bound = parts_bound(sumabs, numel, stored, 2);
		got = test_read(ts);
		test_close_bound("sum over channel parts (strided), accumulated", got, &s, &bound, 1);
		same_as_cpu("sum over channel parts (strided), accumulated", got, 0,
		            (const struct cpu_step[]){{rows, cols - inner, x + inner, cols, 0.0f}, {rows, inner, x, cols, 1.0f}},
		            2);
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
	double mag, exact = naive(3, cols, x, cols, 1, &mag);
	double stored[2] = {naive(3, 3 * inner, x, cols, 1, NULL), exact};
	double bound = parts_bound(mag, numel, stored, 2);
	float *got = test_read(tq);
	test_close_bound("sumsq over channel parts (strided) vs double loop", got, &exact, &bound, 1);
	same_as_cpu("sumsq over channel parts (strided) vs double loop", got, 1,
	            (const struct cpu_step[]){{3, 3 * inner, x, cols, 0.0f}, {3, inner, x + 3 * inner, cols, 1.0f}}, 2);
	free(got);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(tq);
	free(x);
}

/* Data of a huge range (2^-60 .. 2^60, both signs): the double sums round
 * and cancel, so any other order of the additions gives other bits. The
 * codelets against the double sums' bound and, except on CUDA, the CPU
 * kernels' bits. */
static void order_sensitive(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w}, one = 1;
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows;
	float *x = malloc(numel * sizeof *x);
	for (size_t i = 0; i < numel; i++)
		x[i] = ldexpf(test_uniform(-1, 1), (int)test_uniform(-60, 60));
	starnn_tensor *tx = test_tensor("x", 4, shape, x);
	starnn_tensor *ts = test_tensor("s", 1, &one, NULL), *tq = test_tensor("q", 1, &one, NULL);
	TEST_OK(starnn_sum(tx, ts, 0.0f));
	TEST_OK(starnn_sumsq(tx, tq, 0.0f));
	double sumabs, sqabs, s = naive(rows, cols, x, cols, 0, &sumabs), q = naive(rows, cols, x, cols, 1, &sqabs);
	const struct cpu_step whole = {rows, cols, x, cols, 0.0f};
	char what[128];
	float *got = test_read(ts);
	snprintf(what, sizeof what, "sum codelet, huge range [%lld,%lld,%lld,%lld]", (long long)n, (long long)c,
	         (long long)h, (long long)w);
	test_close_sum_out(what, got, &s, &sumabs, 1, numel, TEST_U64, TEST_U32);
	same_as_cpu(what, got, 0, &whole, 1);
	free(got);
	got = test_read(tq);
	snprintf(what, sizeof what, "sumsq codelet, huge range [%lld,%lld,%lld,%lld]", (long long)n, (long long)c,
	         (long long)h, (long long)w);
	test_close_sum_out(what, got, &q, &sqabs, 1, numel, TEST_U64, TEST_U32);
	same_as_cpu(what, got, 1, &whole, 1);
	free(got);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ts), starnn_tensor_destroy(tq);
	free(x);
}

/* Cancellation that only the CPU kernel's order gives its result: per row,
 * the tail (2^-10) summed first and then absorbed by lane 0 (2^60), lane 1
 * (-2^60) cancelling it, lane 2 (1) added last: 1, not 0 (lanes in another
 * order) or 1 + 2^-10 (the tail last); the second row's 3 after it. The sum
 * codelet, except on CUDA, against the CPU kernel's bits. */
static void fixed_order(void)
{
	int64_t shape[2] = {2, 19}, one = 1;
	float x[38] = {0};
	x[0] = 0x1p60f, x[1] = -0x1p60f, x[2] = 1.0f, x[16] = 0x1p-10f, x[19] = 3.0f;
	starnn_tensor *tx = test_tensor("x", 2, shape, x), *ts = test_tensor("s", 1, &one, NULL);
	TEST_OK(starnn_sum(tx, ts, 0.0f));
	float *got = test_read(ts);
	const struct cpu_step whole = {2, 19, x, 19, 0.0f};
	same_as_cpu("sum codelet, cancellation in the CPU kernel's order", got, 0, &whole, 1);
	free(got);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ts);
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
	if (!TEST_ON_DEVICE)
		kernels_vs_naive();
	codelets_vs_naive(1, 1, 1, 1);
	codelets_vs_naive(1, 3, 5, 7);
	codelets_vs_naive(4, 3, 5, 7);
	codelets_vs_naive(3, 16, 32, 32);
	codelets_vs_naive(2, 8, 128, 160); /* > 1024 blocks x 256 threads on CUDA */
	channel_parts();
	for (int k = 0; k < 8; k++) {
		order_sensitive(3, 2, 3, 3); /* rows of 18: two groups of 8 and a tail */
		order_sensitive(2, 5, 7, 11);
	}
	fixed_order();
	bad_arguments();
	return test_finish();
}
