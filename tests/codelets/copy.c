/* copy: the kernel against naive loops (strided -> dense, dense -> strided,
 * 2- and 4-byte elements, padding untouched), the codelets (CPU, or CUDA in
 * the _cuda build) for fp32 / fp16 / bf16 on whole tensors and between
 * channel views and dense tensors, compared byte for byte with direct
 * kernel calls, and bad arguments -> STARNN_EINVAL. */
#include "codelets/copy.h"
#include "tests/testlib.h"

static uint64_t bits_state = 0x243f6a8885a308d3ull;
static void random_bytes(void *p, size_t n)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		bits_state ^= bits_state << 13, bits_state ^= bits_state >> 7, bits_state ^= bits_state << 17;
		b[i] = (unsigned char)(bits_state >> 32);
	}
}

static void kernel_vs_naive(size_t es)
{
	size_t rows = 5, cols = 7, ld = 11;
	unsigned char *s = malloc(rows * ld * es), *d = malloc(rows * cols * es), *s2 = malloc(rows * ld * es);
	unsigned char *ref = malloc(rows * ld * es);
	random_bytes(s, rows * ld * es);
	random_bytes(s2, rows * ld * es);
	memcpy(ref, s2, rows * ld * es);

	starnn_copy_cpu(rows, cols, es, s, ld, d, cols); /* strided -> dense */
	size_t bad = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t b = 0; b < cols * es; b++)
			bad += d[r * cols * es + b] != s[r * ld * es + b];
	TEST_ASSERT(bad == 0, "copy_cpu strided -> dense (%zu-byte elements): %zu bytes wrong", es, bad);

	starnn_copy_cpu(rows, cols, es, d, cols, s2, ld); /* dense -> strided */
	for (size_t r = 0; r < rows; r++)
		for (size_t b = 0; b < cols * es; b++)
			ref[r * ld * es + b] = d[r * cols * es + b];
	TEST_ASSERT(memcmp(s2, ref, rows * ld * es) == 0,
	            "copy_cpu dense -> strided (%zu-byte elements) differs (or touched the padding)", es);

	starnn_copy_cpu(rows, cols, es, s, ld, s2, ld); /* strided -> strided */
	for (size_t r = 0; r < rows; r++)
		memcpy(ref + r * ld * es, s + r * ld * es, cols * es);
	TEST_ASSERT(memcmp(s2, ref, rows * ld * es) == 0, "copy_cpu strided -> strided (%zu-byte elements)", es);
	free(s), free(d), free(s2), free(ref);
}

static void codelets(starnn_dtype dt)
{
	const char *dn = starnn_dtype_name(dt);
	int64_t n = 3, c = 4, h = 5, w = 6;
	int64_t shape[4] = {n, c, h, w}, pshape[4] = {n, c - 1, h, w};
	size_t es = starnn_dtype_size(dt), numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows;
	size_t inner = (size_t)(h * w), pcols = cols - inner, bytes = numel * es;
	unsigned char *x = malloc(bytes), *y0 = malloc(bytes), *got = malloc(bytes), *ref = malloc(bytes);
	random_bytes(x, bytes); /* any bit pattern, NaNs included: copy moves bytes */
	random_bytes(y0, bytes);
	starnn_tensor *tx, *ty, *td;
	TEST_OK(starnn_tensor_create(&tx, "x", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&ty, "y", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&td, "d", dt, 4, pshape));
	TEST_OK(starnn_tensor_write(tx, x));
	TEST_OK(starnn_tensor_write(ty, y0));

	TEST_OK(starnn_copy(tx, ty));
	TEST_OK(starnn_tensor_read(ty, got));
	starnn_copy_cpu(rows, cols, es, x, cols, ref, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s differs from the kernel", dn);
	TEST_OK(starnn_copy(ty, ty)); /* a no-op */

	/* x channels 1.. -> dense d -> y channels 1.., y channel 0 untouched. */
	TEST_OK(starnn_tensor_write(ty, y0));
	starnn_tensor **px, **py;
	int64_t sizes[2] = {1, c - 1};
	TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &px));
	TEST_OK(starnn_tensor_split(ty, 1, 2, sizes, &py));
	TEST_OK(starnn_copy(px[1], td));
	TEST_OK(starnn_copy(td, py[1]));
	unsigned char *dgot = malloc(rows * pcols * es), *dref = malloc(rows * pcols * es);
	TEST_OK(starnn_tensor_read(td, dgot));
	starnn_copy_cpu(rows, pcols, es, x + inner * es, cols, dref, pcols);
	TEST_ASSERT(memcmp(dgot, dref, rows * pcols * es) == 0, "copy codelet %s: channel view -> dense", dn);
	TEST_OK(starnn_tensor_read(ty, got));
	memcpy(ref, y0, bytes);
	starnn_copy_cpu(rows, pcols, es, dref, pcols, ref + inner * es, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s: dense -> channel view", dn);

	/* View to view of the same shape (channel 0 of x -> channel 0 of y, both strided). */
	TEST_OK(starnn_copy(px[0], py[0]));
	TEST_OK(starnn_tensor_read(ty, got));
	starnn_copy_cpu(rows, inner, es, x, cols, ref, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s: channel view -> channel view", dn);

	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(td);
	free(x), free(y0), free(got), free(ref), free(dgot), free(dref);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b, *hh;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 4, 6));
	TEST_OK(starnn_tensor_new(&hh, "h", STARNN_FP16, 2, 4, 5));
	TEST_ASSERT(starnn_copy(a, b) == STARNN_EINVAL, "copy 4x5 -> 4x6 must fail");
	TEST_ASSERT(starnn_copy(a, hh) == STARNN_EINVAL, "copy fp32 -> fp16 must fail (convert does that)");
	TEST_ASSERT(starnn_copy(NULL, a) == STARNN_EINVAL, "copy from NULL must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(hh);
}

int main(void)
{
	test_init();
	if (!TEST_ON_CUDA) {
		kernel_vs_naive(4);
		kernel_vs_naive(2);
	}
	codelets(STARNN_FP32);
	codelets(STARNN_FP16);
	codelets(STARNN_BF16);
	bad_arguments();
	return test_finish();
}
