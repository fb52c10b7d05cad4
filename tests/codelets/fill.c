/* fill: kernels against naive loops (strided: padding untouched), codelets
 * (CPU, or CUDA / OpenCL in the _cuda / _opencl builds) for fp32 / fp16 /
 * bf16 on whole tensors and on channel views (only the view's rows x cols
 * change), the value conversion (rounding, overflow to Inf, NaN), and bad
 * arguments. Results are compared bit for bit. */
#include "codelets/fill.h"
#include "codelets/kernels/fill.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

static void kernels_vs_naive(void)
{
	size_t rows = 5, cols = 7, ld = 11, n = rows * ld;
	float *y = test_random(n, -1, 1), *ref = malloc(n * sizeof *ref);
	memcpy(ref, y, n * sizeof *y);
	starnn_fill_f32_cpu(rows, cols, 2.5f, y, ld);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			ref[r * ld + c] = 2.5f;
	test_close("fill_f32_cpu strided", y, ref, n, 0, 0);

	uint16_t h[55], href[55];
	for (size_t i = 0; i < n; i++)
		h[i] = href[i] = (uint16_t)(i * 977u);
	starnn_fill_16_cpu(rows, cols, 0xbeefu, h, ld);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			href[r * ld + c] = 0xbeefu;
	TEST_ASSERT(memcmp(h, href, sizeof h) == 0, "fill_16_cpu strided differs from the naive loop");
	free(y), free(ref);
}

/* The bit pattern of value in dtype, as the submit function must make it. */
static uint32_t expected_bits(starnn_dtype dt, float v)
{
	return dt == STARNN_FP32 ? starnn_f32_bits(v) : dt == STARNN_FP16 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
}

static uint32_t element(const void *buf, starnn_dtype dt, size_t i)
{
	if (dt == STARNN_FP32)
		return ((const uint32_t *)buf)[i];
	return ((const uint16_t *)buf)[i];
}

static void codelets(starnn_dtype dt)
{
	const char *dn = starnn_dtype_name(dt);
	int64_t shape[4] = {4, 3, 5, 7};
	size_t numel = 4 * 3 * 5 * 7, rows = 4, cols = numel / rows, inner = 35, es = starnn_dtype_size(dt);
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, "y", dt, 4, shape));
	unsigned char *init = malloc(numel * es), *got = malloc(numel * es);
	for (size_t i = 0; i < numel * es; i++)
		init[i] = (unsigned char)(i * 131u + 7u);
	TEST_OK(starnn_tensor_write(t, init));

	/* Values: ordinary, rounded (1/3), overflowing fp16 (1e5), NaN, -0. */
	const float values[] = {1.0f / 3.0f, 1e5f, -0.0f, NAN, 65519.0f};
	for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
		TEST_OK(starnn_fill(values[k], t));
		TEST_OK(starnn_tensor_read(t, got));
		uint32_t want = expected_bits(dt, values[k]);
		size_t bad = 0;
		for (size_t i = 0; i < numel; i++)
			bad += element(got, dt, i) != want;
		TEST_ASSERT(bad == 0, "fill %s with %g: %zu of %zu elements are not 0x%x", dn, values[k], bad, numel,
		            (unsigned)want);
	}
	TEST_ASSERT(dt != STARNN_FP16 || expected_bits(dt, 1e5f) == 0x7c00u, "fp16 of 1e5 must be Inf");

	/* Channel views: channel 0 and channels 1-2 of every row, different values. */
	TEST_OK(starnn_tensor_write(t, init));
	int64_t sizes[2] = {1, 2};
	starnn_tensor **p;
	TEST_OK(starnn_tensor_split(t, 1, 2, sizes, &p));
	TEST_OK(starnn_fill(-3.25f, p[1]));
	TEST_OK(starnn_tensor_read(t, got));
	size_t bad = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			size_t i = r * cols + c;
			uint32_t want = c < inner ? element(init, dt, i) : expected_bits(dt, -3.25f);
			bad += element(got, dt, i) != want;
		}
	TEST_ASSERT(bad == 0, "fill %s of channels 1-2: %zu elements wrong (channel 0 must stay)", dn, bad);
	TEST_OK(starnn_fill(7.0f, p[0]));
	TEST_OK(starnn_tensor_read(t, got));
	bad = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			bad += element(got, dt, r * cols + c) != expected_bits(dt, c < inner ? 7.0f : -3.25f);
	TEST_ASSERT(bad == 0, "fill %s of channel 0 then 1-2: %zu elements wrong", dn, bad);

	starnn_tensor_destroy(t);
	free(init), free(got);
}

static void bad_arguments(void)
{
	TEST_ASSERT(starnn_fill(1.0f, NULL) == STARNN_EINVAL, "fill of NULL must fail");
	starnn_tensor *t;
	TEST_OK(starnn_tensor_new(&t, "t", STARNN_FP32, 1, 8));
	t->dtype = (starnn_dtype)7; /* a corrupted dtype must be refused, not guessed */
	TEST_ASSERT(starnn_fill(1.0f, t) == STARNN_EINVAL, "fill of a tensor with dtype 7 must fail");
	t->dtype = STARNN_FP32;
	starnn_tensor_destroy(t);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE)
		kernels_vs_naive();
	codelets(STARNN_FP32);
	codelets(STARNN_FP16);
	codelets(STARNN_BF16);
	bad_arguments();
	return test_finish();
}
