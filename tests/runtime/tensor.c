/* Tensors: creation and validation, host I/O in every dtype, partitions
 * (batch, channels, nested, several plans on one tensor) with tasks mixing
 * parts and wholes, and the error paths. */
#include "codelets/axpy.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

static void creation_and_errors(void)
{
	starnn_tensor *t = NULL;
	char d[128];
	TEST_OK(starnn_tensor_new(&t, "x", STARNN_FP32, 4, (int64_t)2, (int64_t)3, (int64_t)4, (int64_t)5));
	TEST_ASSERT(t->rows == 2 && t->cols == 60 && t->ld == 60, "x: rows %zu cols %zu", t->rows, t->cols);
	TEST_ASSERT(starnn_tensor_numel(t) == 120 && starnn_tensor_inner(t) == 20, "numel / inner");
	TEST_ASSERT(strcmp(starnn_tensor_describe(t, d, sizeof d), "x[2,3,4,5] fp32") == 0, "describe: %s", d);
	starnn_tensor_destroy(t);

	TEST_OK(starnn_tensor_new(&t, "v", STARNN_BF16, 1, (int64_t)7));
	TEST_ASSERT(t->rows == 1 && t->cols == 7, "1-D tensor is one row");
	TEST_ASSERT(starnn_tensor_split(t, 1, 1, NULL, NULL) == STARNN_EINVAL, "1-D split along axis 1 refused");
	starnn_tensor_destroy(t);

	/* a 1-D tensor (per-channel vector) splits along axis 0 into runs of
	 * its one row: parts [3], [2], [2]; tasks on the parts, then the whole */
	float v[7] = {1, 2, 3, 4, 5, 6, 7};
	int64_t vs[1] = {7}, sizes[3] = {3, 2, 2};
	t = test_tensor("v", 1, vs, v);
	starnn_tensor **p;
	TEST_OK(starnn_tensor_split(t, 0, 3, sizes, &p));
	TEST_ASSERT(p[1]->ndim == 1 && p[1]->shape[0] == 2 && p[1]->rows == 1 && p[1]->cols == 2 && p[1]->ld == 7,
	            "1-D part: shape %lld rows %zu cols %zu ld %zu", (long long)p[1]->shape[0], p[1]->rows, p[1]->cols,
	            p[1]->ld);
	for (int i = 0; i < 3; i++)
		TEST_OK(starnn_scale((float)(i + 2), p[i]));
	TEST_OK(starnn_scale(-1.0f, t));
	float *got = test_read(t);
	const float want[7] = {-2, -4, -6, -12, -15, -24, -28};
	for (int i = 0; i < 7; i++)
		TEST_ASSERT(got[i] == want[i], "1-D parts: v[%d] = %g, expected %g", i, (double)got[i], (double)want[i]);
	free(got);
	starnn_tensor_destroy(t);

	int64_t bad[2] = {3, 0};
	TEST_ASSERT(starnn_tensor_create(&t, "bad", STARNN_FP32, 2, bad) == STARNN_EINVAL && !t, "zero dim refused");
	TEST_ASSERT(strstr(starnn_last_error(), "dimension 1 is 0") != NULL, "message names the dimension: %s", starnn_last_error());
	TEST_ASSERT(starnn_tensor_create(&t, "bad", STARNN_FP32, 5, bad) == STARNN_EINVAL, "5-D refused");
	TEST_ASSERT(starnn_tensor_create(&t, "bad", (starnn_dtype)9, 2, bad) == STARNN_EINVAL, "bad dtype refused");
	starnn_dtype dt;
	TEST_ASSERT(starnn_dtype_parse("bf16", &dt) == 0 && dt == STARNN_BF16, "parse bf16");
	TEST_ASSERT(starnn_dtype_parse("fp64", &dt) == STARNN_EINVAL, "parse fp64 refused");
	TEST_ASSERT(starnn_dtype_parse("u8", &dt) == STARNN_EINVAL, "parse u8 refused: bytes are not a precision");
	starnn_tensor_destroy(NULL);
}

/* u8: byte buffers (wire buffers), 1 byte per element, raw I/O only. */
static void u8_io(void)
{
	TEST_ASSERT(starnn_dtype_size(STARNN_U8) == 1, "u8 is 1 byte, got %zu", starnn_dtype_size(STARNN_U8));
	TEST_ASSERT(strcmp(starnn_dtype_name(STARNN_U8), "u8") == 0, "u8 is named %s", starnn_dtype_name(STARNN_U8));
	TEST_ASSERT(starnn_dtype_size((starnn_dtype)STARNN_NDTYPES_ALL) == 0, "no dtype after u8");
	starnn_tensor *t;
	TEST_OK(starnn_tensor_new(&t, "bytes", STARNN_U8, 1, (int64_t)7));
	TEST_ASSERT(t->rows == 1 && t->cols == 7 && t->ld == 7, "u8 [7] is 1 x 7, ld 7: %zu x %zu, ld %zu", t->rows,
	            t->cols, t->ld);
	uint8_t src[7] = {0, 1, 2, 127, 128, 254, 255}, got[7] = {0};
	TEST_OK(starnn_tensor_write(t, src));
	TEST_OK(starnn_tensor_read(t, got));
	TEST_ASSERT(memcmp(src, got, sizeof src) == 0, "u8 bytes read back differ");
	float f[7];
	TEST_ASSERT(starnn_tensor_read_f32(t, f) == STARNN_EINVAL, "read_f32 of a u8 tensor refused");
	TEST_ASSERT(starnn_tensor_write_f32(t, f) == STARNN_EINVAL, "write_f32 of a u8 tensor refused");
	starnn_tensor_destroy(t);
}

static void half_io(void)
{
	float src[6] = {1.0f, -2.5f, 65504.0f, 1e-7f, 3.14159265f, -0.0f};
	float got[6];
	for (int dt = STARNN_FP16; dt <= STARNN_BF16; dt++) {
		starnn_tensor *t;
		TEST_OK(starnn_tensor_new(&t, "h", (starnn_dtype)dt, 2, (int64_t)2, (int64_t)3));
		TEST_OK(starnn_tensor_write_f32(t, src));
		TEST_OK(starnn_tensor_read_f32(t, got));
		for (int i = 0; i < 6; i++) {
			float want = dt == STARNN_FP16 ? starnn_half_to_float(starnn_float_to_half(src[i]))
			                               : starnn_bf16_to_float(starnn_float_to_bf16(src[i]));
			TEST_ASSERT(memcmp(&got[i], &want, sizeof want) == 0, "%s [%d]: %g != %g",
			            starnn_dtype_name((starnn_dtype)dt), i, got[i], want);
		}
		uint16_t raw[6];
		TEST_OK(starnn_tensor_read(t, raw));
		TEST_ASSERT(raw[0] == (dt == STARNN_FP16 ? 0x3c00 : 0x3f80), "raw 1.0 in %s: %04x",
		            starnn_dtype_name((starnn_dtype)dt), raw[0]);
		starnn_tensor_destroy(t);
	}
}

/* write_f32 / read_f32 of 16-bit tensors in NCHW and blocked layouts, long
 * enough rows for the vector row kernels (and their tails): the bits are
 * runtime/base/half.h's rounding, read back widened exactly, special values
 * (NaN, Inf, subnormals, ties, overflow) included. */
static void half_io_layouts(void)
{
	const int64_t N = 3, C = 16, H = 5, W = 7;
	const size_t n = (size_t)(N * C * H * W);
	float *src = malloc(n * sizeof *src), *got = malloc(n * sizeof *got);
	uint16_t *raw = malloc(n * sizeof *raw);
	TEST_ASSERT(src && got && raw, "out of memory");
	const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-39f, 6e-8f, 1e-45f, 65504.0f,
	                         65520.0f, 1e30f, -1e30f, 1.0f + 0x1p-8f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 3.4e38f};
	const size_t ns = sizeof special / sizeof special[0];
	uint32_t state = 12345;
	for (size_t i = 0; i < n; i++) {
		state = state * 1664525u + 1013904223u;
		src[i] = i % 37 < ns ? special[i % 37] : ((float)(state >> 8) / 16777216.0f - 0.5f) * 1000.0f;
	}
	const int blocks[] = {1, 8, 16};
	for (int dt = STARNN_FP16; dt <= STARNN_BF16; dt++)
		for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
			int64_t shape[4] = {N, C, H, W};
			starnn_tensor *t;
			TEST_OK(starnn_tensor_create(&t, "hl", (starnn_dtype)dt, 4, shape));
			if (blocks[bi] > 1)
				TEST_OK(starnn_tensor_set_cblock(t, blocks[bi]));
			TEST_OK(starnn_tensor_write_f32(t, src));
			TEST_OK(starnn_tensor_read(t, raw));
			TEST_OK(starnn_tensor_read_f32(t, got));
			size_t bad = 0;
			for (size_t i = 0; i < n; i++) {
				uint16_t want = dt == STARNN_FP16 ? starnn_float_to_half(src[i]) : starnn_float_to_bf16(src[i]);
				float wf = dt == STARNN_FP16 ? starnn_half_to_float(want) : starnn_bf16_to_float(want);
				if (raw[i] != want || memcmp(&got[i], &wf, sizeof wf) != 0) {
					if (bad++ == 0)
						fprintf(stderr, "%s block %d [%zu]: %g -> %04x (want %04x), read %g (want %g)\n",
						        starnn_dtype_name((starnn_dtype)dt), blocks[bi], i, src[i], raw[i], want, got[i], wf);
				}
			}
			TEST_ASSERT(bad == 0, "%s block %d: %zu of %zu values differ from runtime/base/half.h",
			            starnn_dtype_name((starnn_dtype)dt), blocks[bi], bad, n);
			starnn_tensor_destroy(t);
		}
	free(src);
	free(got);
	free(raw);
}

/* Writes 0..n-1 into x; then tasks on batch parts, channel parts of a batch
 * part (nested), a second plan, and the whole, in one asynchronous chain. */
static void partitions(void)
{
	const int64_t N = 5, C = 4, H = 3, W = 2;
	size_t n = (size_t)(N * C * H * W), cols = (size_t)(C * H * W), inner = (size_t)(H * W);
	float *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref);
	for (size_t i = 0; i < n; i++)
		x[i] = ref[i] = (float)i;
	int64_t shape[4] = {N, C, H, W};
	starnn_tensor *t = test_tensor("t", 4, shape, x);

	starnn_tensor **mb;
	int64_t sizes[3] = {2, 1, 2};
	TEST_OK(starnn_tensor_split(t, 0, 3, sizes, &mb));
	TEST_ASSERT(t->parts == mb && t->nparts == 3, "first plan is t->parts");
	TEST_ASSERT(mb[1]->rows == 1 && mb[2]->shape[0] == 2 && mb[0]->cols == cols, "batch part geometry");
	TEST_ASSERT(strcmp(mb[1]->name, "t[1]") == 0, "part name %s", mb[1]->name);
	for (int p = 0; p < 3; p++)
		TEST_OK(starnn_scale((float)(p + 2), mb[p])); /* rows 0-1 x2, row 2 x3, rows 3-4 x4 */
	for (size_t r = 0; r < (size_t)N; r++)
		for (size_t k = 0; k < cols; k++)
			ref[r * cols + k] *= r < 2 ? 2.0f : r < 3 ? 3.0f : 4.0f;

	/* Nested: channels of micro-batch 2 (rows 3-4), 3 + 1 channels. */
	starnn_tensor **ch;
	int64_t csizes[2] = {3, 1};
	TEST_OK(starnn_tensor_split(mb[2], 1, 2, csizes, &ch));
	TEST_ASSERT(ch[0]->cols == 3 * inner && ch[0]->ld == cols && ch[1]->shape[1] == 1, "channel part geometry");
	TEST_OK(starnn_scale(-1.0f, ch[1]));
	for (size_t r = 3; r < 5; r++)
		for (size_t k = 3 * inner; k < cols; k++)
			ref[r * cols + k] *= -1.0f;

	/* A second plan of t (channel halves), while the first is active. */
	starnn_tensor **halves, **again;
	TEST_OK(starnn_tensor_split(t, 1, 2, NULL, &halves));
	TEST_OK(starnn_tensor_split(t, 1, 2, NULL, &again));
	TEST_ASSERT(halves == again && t->nplans == 2, "identical plan reused (%d plans)", t->nplans);
	TEST_OK(starnn_axpy(1.0f, halves[1], halves[0])); /* channels 0-1 += channels 2-3 */
	for (size_t r = 0; r < (size_t)N; r++)
		for (size_t k = 0; k < 2 * inner; k++)
			ref[r * cols + k] += ref[r * cols + k + 2 * inner];

	/* The whole again, then a part of the first plan again. */
	TEST_OK(starnn_scale(0.5f, t));
	TEST_OK(starnn_scale(10.0f, mb[1]));
	for (size_t k = 0; k < n; k++)
		ref[k] *= 0.5f;
	for (size_t k = 0; k < cols; k++)
		ref[2 * cols + k] *= 10.0f;

	float *got = test_read(t);
	test_close("mixed partitions", got, ref, n, 0, 0);
	float *part = test_read(ch[0]);
	float pref[2 * 3 * 6];
	for (size_t r = 0; r < 2; r++)
		memcpy(pref + r * 3 * inner, ref + (3 + r) * cols, 3 * inner * sizeof *ref);
	test_close("read of a nested part", part, pref, 2 * 3 * inner, 0, 0);

	TEST_ASSERT(starnn_tensor_split(t, 2, 2, NULL, NULL) == STARNN_EINVAL, "axis 2 refused");
	TEST_ASSERT(starnn_tensor_split(t, 0, 6, NULL, NULL) == STARNN_EINVAL, "6 parts of 5 refused");
	int64_t wrong[2] = {2, 2};
	TEST_ASSERT(starnn_tensor_split(t, 0, 2, wrong, NULL) == STARNN_EINVAL, "sizes not adding up refused");
	starnn_tensor_destroy(t);
	free(x), free(ref), free(got), free(part);
}

int main(void)
{
	test_init();
	creation_and_errors();
	half_io();
	half_io_layouts();
	u8_io();
	partitions();
	return test_finish();
}
