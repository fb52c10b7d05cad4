/* convert between fp32, fp16 and bf16.
 * Kernels (CPU build): exhaustive over all 65536 fp16 and bf16 patterns
 * (to fp32 against runtime/base/half.h, back again exactly; NaN stays NaN),
 * fp16 <-> bf16 exhaustively against the scalar composition, fp32 -> fp16 /
 * bf16 on ~17 million fp32 patterns spread over the whole range plus every
 * fp16 rounding boundary (midpoints, ties, +-2 ulp) against runtime/base/half.h,
 * bit for bit; hand-picked known values; strided views; all of it at every
 * instruction-set level of the kernels (generic, AVX2, AVX-512).
 * Codelets (CPU, or CUDA / OpenCL in the _cuda / _opencl builds): every
 * ordered pair and the same-dtype copy, whole tensors and channel views,
 * against the CPU kernels; bad arguments -> STARNN_EINVAL. CUDA may give
 * another NaN for a NaN; OpenCL must give the CPU kernels' bits
 * (docs/opencl.md), NaN payloads included, save that it widens a
 * signalling fp16 NaN quiet as the CPU's F16C does (a CPU without F16C
 * keeps it signalling); in the _opencl build also every 16-bit pattern
 * and about a million fp32 ones (every fp16 rounding boundary) through
 * the codelets. */
#include "codelets/convert.h"
#include "codelets/kernels/convert.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

static uint64_t bits_state = 0x13198a2e03707344ull;
static uint32_t random_u32(void)
{
	bits_state ^= bits_state << 13, bits_state ^= bits_state >> 7, bits_state ^= bits_state << 17;
	return (uint32_t)(bits_state >> 32);
}

static int f16_is_nan(uint16_t h)
{
	return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}
static int bf16_is_nan(uint16_t h)
{
	return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
}
static int f32_is_nan(uint32_t u)
{
	return (u & 0x7fffffffu) > 0x7f800000u;
}

/* fp16 / bf16 -> fp32: bit-exact, except that a NaN may come out quieted. */
static int same_f32(uint32_t got, uint32_t want)
{
	if (f32_is_nan(want))
		return f32_is_nan(got) && (got | 0x00400000u) == (want | 0x00400000u);
	return got == want;
}

static void exhaustive_16(void)
{
	test_host_begin();
	size_t n = 65536;
	uint16_t *h = malloc(n * sizeof *h), *back = malloc(n * sizeof *back), *other = malloc(n * sizeof *other);
	float *f = malloc(n * sizeof *f);
	for (size_t i = 0; i < n; i++)
		h[i] = (uint16_t)i;

	/* fp16 -> fp32 -> fp16 */
	starnn_convert_fp16_to_fp32_cpu(1, n, h, n, f, n);
	starnn_convert_fp32_to_fp16_cpu(1, n, f, n, back, n);
	size_t bad_f = 0, bad_back = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t got = starnn_f32_bits(f[i]), want = starnn_f32_bits(starnn_half_to_float(h[i]));
		if (!same_f32(got, want) && bad_f++ < 5)
			fprintf(stderr, "  fp16 0x%04zx -> fp32 0x%08x, expected 0x%08x\n", i, got, want);
		int ok = f16_is_nan(h[i]) ? f16_is_nan(back[i]) && (back[i] & 0x8000u) == (h[i] & 0x8000u)
		                          : back[i] == h[i];
		if (!ok && bad_back++ < 5)
			fprintf(stderr, "  fp16 0x%04zx -> fp32 -> fp16 0x%04x\n", i, back[i]);
	}
	TEST_ASSERT(bad_f == 0, "fp16 -> fp32 on all 65536 patterns: %zu differ from starnn_half_to_float", bad_f);
	TEST_ASSERT(bad_back == 0, "fp16 -> fp32 -> fp16 on all 65536 patterns: %zu not exact", bad_back);

	/* fp16 -> bf16, one rounding, against the scalar composition. */
	starnn_convert_fp16_to_bf16_cpu(1, n, h, n, other, n);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += other[i] != starnn_float_to_bf16(starnn_half_to_float(h[i]));
	TEST_ASSERT(bad == 0, "fp16 -> bf16 on all 65536 patterns: %zu differ from the scalar reference", bad);

	/* bf16 -> fp32 -> bf16 */
	starnn_convert_bf16_to_fp32_cpu(1, n, h, n, f, n);
	starnn_convert_fp32_to_bf16_cpu(1, n, f, n, back, n);
	bad_f = bad_back = 0;
	for (size_t i = 0; i < n; i++) {
		bad_f += starnn_f32_bits(f[i]) != starnn_f32_bits(starnn_bf16_to_float(h[i]));
		int ok = bf16_is_nan(h[i]) ? bf16_is_nan(back[i]) && (back[i] & 0x8000u) == (h[i] & 0x8000u)
		                           : back[i] == h[i];
		bad_back += !ok;
	}
	TEST_ASSERT(bad_f == 0, "bf16 -> fp32 on all 65536 patterns: %zu differ from starnn_bf16_to_float", bad_f);
	TEST_ASSERT(bad_back == 0, "bf16 -> fp32 -> bf16 on all 65536 patterns: %zu not exact", bad_back);

	/* bf16 -> fp16, one rounding, against the scalar composition. */
	starnn_convert_bf16_to_fp16_cpu(1, n, h, n, other, n);
	bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += other[i] != starnn_float_to_half(starnn_bf16_to_float(h[i]));
	TEST_ASSERT(bad == 0, "bf16 -> fp16 on all 65536 patterns: %zu differ from the scalar reference", bad);
	free(h), free(back), free(other), free(f);
	test_host_end();
}

/* fp32 -> fp16 and fp32 -> bf16 kernels vs runtime/base/half.h on n patterns. */
static size_t check_f32_block(const uint32_t *u, size_t n, size_t *bad_bf)
{
	float *f = malloc(n * sizeof *f);
	uint16_t *h = malloc(n * sizeof *h), *b = malloc(n * sizeof *b);
	memcpy(f, u, n * sizeof *f);
	/* Rows of 1000 in rows of 1000: several full vectors and a tail each. */
	size_t cols = n < 1000 ? n : 1000, rows = n / cols, done = rows * cols;
	starnn_convert_fp32_to_fp16_cpu(rows, cols, f, cols, h, cols);
	starnn_convert_fp32_to_bf16_cpu(rows, cols, f, cols, b, cols);
	if (done < n) {
		starnn_convert_fp32_to_fp16_cpu(1, n - done, f + done, n - done, h + done, n - done);
		starnn_convert_fp32_to_bf16_cpu(1, n - done, f + done, n - done, b + done, n - done);
	}
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t want = starnn_float_to_half(f[i]);
		if (h[i] != want && bad++ < 5)
			fprintf(stderr, "  fp32 0x%08x (%.9g) -> fp16 0x%04x, expected 0x%04x\n", u[i], f[i], h[i], want);
		uint16_t wantb = starnn_float_to_bf16(f[i]);
		if (b[i] != wantb && (*bad_bf)++ < 5)
			fprintf(stderr, "  fp32 0x%08x (%.9g) -> bf16 0x%04x, expected 0x%04x\n", u[i], f[i], b[i], wantb);
	}
	free(f), free(h), free(b);
	return bad;
}

static void sampled_f32(void)
{
	test_host_begin();
	size_t chunk = 1 << 20, n = 0, bad = 0, bad_bf = 0, total = 0;
	uint32_t *u = malloc(chunk * sizeof *u);
	/* Every 257th pattern of the 2^32 (all exponents, both signs, NaNs,
	 * Infs, fp32 subnormals), and as many random ones. */
	for (uint64_t p = 0; p < (1ull << 32); p += 257) {
		u[n++] = (uint32_t)p;
		u[n++] = random_u32();
		if (n == chunk) {
			bad += check_f32_block(u, n, &bad_bf), total += n;
			n = 0;
		}
	}
	/* Every fp16 rounding boundary: the midpoint between each finite fp16
	 * (normal and subnormal, both signs; 65504 -> 65536 included) and the
	 * next, and 2 fp32 ulps either side. */
	for (uint32_t hb = 0; hb < 0x7c00u; hb++) {
		double lo = starnn_half_to_float((uint16_t)hb);
		double hi = hb + 1 == 0x7c00u ? 65536.0 : starnn_half_to_float((uint16_t)(hb + 1));
		uint32_t mid = starnn_f32_bits((float)((lo + hi) / 2)); /* exact: 12 significant bits */
		for (int d = -2; d <= 2; d++)
			for (uint32_t s = 0; s <= 1; s++) {
				if (n == chunk) {
					bad += check_f32_block(u, n, &bad_bf), total += n;
					n = 0;
				}
				u[n++] = (s << 31) | (uint32_t)((int64_t)mid + d);
			}
	}
	bad += check_f32_block(u, n, &bad_bf), total += n;
	TEST_ASSERT(bad == 0, "fp32 -> fp16 on %zu patterns: %zu differ from starnn_float_to_half", total, bad);
	TEST_ASSERT(bad_bf == 0, "fp32 -> bf16 on %zu patterns: %zu differ from starnn_float_to_bf16", total, bad_bf);
	free(u);
	test_host_end();
}

static void known_values(void)
{
	struct {
		float f;
		uint16_t half, bf16;
	} k[] = {
		{1.0f, 0x3c00, 0x3f80},
		{-2.0f, 0xc000, 0xc000},
		{65504.0f, 0x7bff, 0x4780},                /* fp16 max; bf16: above the tie, up to 65536 */
		{65519.99609375f, 0x7bff, 0x4780},         /* just below the fp16 overflow tie */
		{65520.0f, 0x7c00, 0x4780},                /* the tie rounds to Inf (even) */
		{1e10f, 0x7c00, 0x5015},
		{5.9604644775390625e-8f, 0x0001, 0x3380},  /* 2^-24: smallest fp16 subnormal */
		{2.98023223876953125e-8f, 0x0000, 0x3300}, /* 2^-25: ties to even, 0 */
		{4.470348358154296875e-8f, 0x0001, 0x3340},/* 1.5 * 2^-25 rounds up */
		{6.103515625e-5f, 0x0400, 0x3880},         /* 2^-14: smallest fp16 normal */
		{1.00048828125f, 0x3c00, 0x3f80},          /* 1 + 2^-11: tie, down to even */
		{1.00146484375f, 0x3c02, 0x3f80},          /* 1 + 3 * 2^-11: tie, up to even */
		{1.00390625f, 0x3c04, 0x3f80},             /* 1 + 2^-8: bf16 tie, down to even */
		{1.01171875f, 0x3c0c, 0x3f82},             /* 1 + 3 * 2^-8: bf16 tie, up to even */
		{3.4028234663852886e38f, 0x7c00, 0x7f80},  /* FLT_MAX: bf16 rounds to Inf */
		{-0.0f, 0x8000, 0x8000},
		{INFINITY, 0x7c00, 0x7f80},
		{-INFINITY, 0xfc00, 0xff80},
	};
	size_t n = sizeof k / sizeof *k;
	float f[32];
	uint16_t h[32], b[32];
	for (size_t i = 0; i < n; i++)
		f[i] = k[i].f;
	starnn_convert_fp32_to_fp16_cpu(1, n, f, n, h, n);
	starnn_convert_fp32_to_bf16_cpu(1, n, f, n, b, n);
	for (size_t i = 0; i < n; i++) {
		TEST_ASSERT(h[i] == k[i].half, "fp16 of %.9g: got 0x%04x, expected 0x%04x", k[i].f, h[i], k[i].half);
		TEST_ASSERT(b[i] == k[i].bf16, "bf16 of %.9g: got 0x%04x, expected 0x%04x", k[i].f, b[i], k[i].bf16);
	}
	float nan2[2] = {NAN, -NAN};
	starnn_convert_fp32_to_fp16_cpu(1, 2, nan2, 2, h, 2);
	starnn_convert_fp32_to_bf16_cpu(1, 2, nan2, 2, b, 2);
	TEST_ASSERT(f16_is_nan(h[0]) && f16_is_nan(h[1]) && !(h[0] & 0x8000u) && (h[1] & 0x8000u),
	            "fp16 of +-NaN: got 0x%04x 0x%04x", h[0], h[1]);
	TEST_ASSERT(bf16_is_nan(b[0]) && bf16_is_nan(b[1]) && !(b[0] & 0x8000u) && (b[1] & 0x8000u),
	            "bf16 of +-NaN: got 0x%04x 0x%04x", b[0], b[1]);

	uint16_t hk[3] = {0x0001, 0x7bff, 0x3555};
	float hf[3];
	starnn_convert_fp16_to_fp32_cpu(1, 3, hk, 3, hf, 3);
	TEST_ASSERT(hf[0] == 5.9604644775390625e-8f && hf[1] == 65504.0f && hf[2] == 0.333251953125f,
	            "fp16 0x0001 0x7bff 0x3555 -> %.9g %.9g %.9g", hf[0], hf[1], hf[2]);
}

/* Strided views: only rows x cols converted, padding untouched, per element
 * equal to the scalar reference (rows of 13 elements: one vector and a tail). */
static void strided(void)
{
	size_t rows = 6, cols = 13, ld = 17, n = rows * ld;
	float *f = test_random(n, -70000, 70000), *f2 = malloc(n * sizeof *f2);
	uint16_t h[6 * 17], href[6 * 17], b[6 * 17], bref[6 * 17], c[6 * 17], cref[6 * 17];
	for (size_t i = 0; i < n; i++) {
		f[i] *= i % 3 == 0 ? 1e-9f : 1.0f; /* some fp16 subnormals too */
		h[i] = href[i] = b[i] = bref[i] = c[i] = cref[i] = (uint16_t)(0x1234u + i);
		f2[i] = -1.0f;
	}
	float *f2ref = malloc(n * sizeof *f2ref);
	memcpy(f2ref, f2, n * sizeof *f2);
	starnn_convert_fp32_to_fp16_cpu(rows, cols, f, ld, h, ld);
	starnn_convert_fp32_to_bf16_cpu(rows, cols, f, ld, b, ld);
	starnn_convert_fp16_to_bf16_cpu(rows, cols, h, ld, c, ld);
	starnn_convert_fp16_to_fp32_cpu(rows, cols, h, ld, f2, ld);
	for (size_t r = 0; r < rows; r++)
		for (size_t k = 0; k < cols; k++) {
			size_t i = r * ld + k;
			href[i] = starnn_float_to_half(f[i]);
			bref[i] = starnn_float_to_bf16(f[i]);
			cref[i] = starnn_float_to_bf16(starnn_half_to_float(href[i]));
			f2ref[i] = starnn_half_to_float(href[i]);
		}
	TEST_ASSERT(memcmp(h, href, sizeof h) == 0, "fp32 -> fp16 strided differs (or touched the padding)");
	TEST_ASSERT(memcmp(b, bref, sizeof b) == 0, "fp32 -> bf16 strided differs (or touched the padding)");
	TEST_ASSERT(memcmp(c, cref, sizeof c) == 0, "fp16 -> bf16 strided differs (or touched the padding)");
	TEST_ASSERT(memcmp(f2, f2ref, n * sizeof *f2) == 0, "fp16 -> fp32 strided differs (or touched the padding)");
	free(f), free(f2), free(f2ref);
}

/* ------------------------------------------------------------ codelets */

static void *random_data(starnn_dtype dt, size_t n)
{
	size_t es = starnn_dtype_size(dt);
	unsigned char *p = malloc(n * es);
	for (size_t i = 0; i < n; i++) {
		if (dt == STARNN_FP32) {
			/* Mostly values in fp16's range and its subnormals, some beyond. */
			float v = test_uniform(-1, 1) * (i % 4 == 0 ? 1e-5f : i % 4 == 1 ? 70000.0f : 10.0f);
			memcpy(p + i * es, &v, es);
		} else {
			uint16_t h = (uint16_t)random_u32();
			if (TEST_ON_CUDA && (dt == STARNN_FP16 ? f16_is_nan(h) : bf16_is_nan(h)))
				h = 0x3c00; /* NaN payloads are the device's business */
			memcpy(p + i * es, &h, es);
		}
	}
	return p;
}

/* The source dtype of the elements compared (count_diff). */
static starnn_dtype cmp_src;

/* Bit-exact on CPU and OpenCL; on CUDA, any NaN is accepted for a NaN; a
 * fp16 NaN widened to fp32 (a = what the device gave, b = the CPU
 * kernel's) may be quiet on the device where the CPU kept it signalling. */
static int same_element(starnn_dtype dt, const unsigned char *a, const unsigned char *b)
{
	if (dt == STARNN_FP32) {
		uint32_t x, y;
		memcpy(&x, a, 4), memcpy(&y, b, 4);
		return x == y || (TEST_ON_CUDA && f32_is_nan(x) && f32_is_nan(y)) ||
		       (TEST_ON_OPENCL && cmp_src == STARNN_FP16 && f32_is_nan(y) && x == (y | 0x00400000u));
	}
	uint16_t x, y;
	memcpy(&x, a, 2), memcpy(&y, b, 2);
	int (*is_nan)(uint16_t) = dt == STARNN_FP16 ? f16_is_nan : bf16_is_nan;
	return x == y || (TEST_ON_CUDA && is_nan(x) && is_nan(y));
}

static size_t count_diff(starnn_dtype dt, const void *a, const void *b, size_t n)
{
	size_t es = starnn_dtype_size(dt), bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += !same_element(dt, (const unsigned char *)a + i * es, (const unsigned char *)b + i * es);
	return bad;
}

static void codelets(starnn_dtype src, starnn_dtype dst)
{
	char what[64];
	snprintf(what, sizeof what, "convert %s -> %s", starnn_dtype_name(src), starnn_dtype_name(dst));
	cmp_src = src;
	int64_t n = 3, c = 4, h = 9, w = 7;
	int64_t shape[4] = {n, c, h, w}, pshape[4] = {n, c - 1, h, w};
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * w);
	size_t pcols = cols - inner, des = starnn_dtype_size(dst);
	void *x = random_data(src, numel), *y0 = random_data(dst, numel);
	unsigned char *got = malloc(numel * des), *ref = malloc(numel * des);
	starnn_tensor *tx, *ty, *td;
	TEST_OK(starnn_tensor_create(&tx, "x", src, 4, shape));
	TEST_OK(starnn_tensor_create(&ty, "y", dst, 4, shape));
	TEST_OK(starnn_tensor_create(&td, "d", dst, 4, pshape));
	TEST_OK(starnn_tensor_write(tx, x));
	TEST_OK(starnn_tensor_write(ty, y0));

	TEST_OK(starnn_convert(tx, ty));
	TEST_OK(starnn_tensor_read(ty, got));
	TEST_OK(starnn_convert_cpu(src, dst, rows, cols, x, cols, ref, cols));
	size_t bad = count_diff(dst, got, ref, numel);
	TEST_ASSERT(bad == 0, "%s codelet: %zu of %zu elements differ from the CPU kernel", what, bad, numel);

	/* Channel views: x channels 1.. -> dense d; x channel 0 -> y channel 0. */
	TEST_OK(starnn_tensor_write(ty, y0));
	starnn_tensor **px, **py;
	int64_t sizes[2] = {1, c - 1};
	TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &px));
	TEST_OK(starnn_tensor_split(ty, 1, 2, sizes, &py));
	TEST_OK(starnn_convert(px[1], td));
	TEST_OK(starnn_convert(px[0], py[0]));
	unsigned char *dgot = malloc(rows * pcols * des), *dref = malloc(rows * pcols * des);
	TEST_OK(starnn_tensor_read(td, dgot));
	TEST_OK(starnn_convert_cpu(src, dst, rows, pcols, (const char *)x + inner * starnn_dtype_size(src), cols,
	                           dref, pcols));
	bad = count_diff(dst, dgot, dref, rows * pcols);
	TEST_ASSERT(bad == 0, "%s codelet, channel view -> dense: %zu elements differ", what, bad);
	TEST_OK(starnn_tensor_read(ty, got));
	memcpy(ref, y0, numel * des);
	TEST_OK(starnn_convert_cpu(src, dst, rows, inner, x, cols, ref, cols));
	bad = count_diff(dst, got, ref, numel);
	TEST_ASSERT(bad == 0, "%s codelet, channel view -> channel view: %zu elements differ", what, bad);

	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(td);
	free(x), free(y0), free(got), free(ref), free(dgot), free(dref);
}

/* Through the codelets (the _opencl build): all 65536 patterns of fp16 and
 * bf16 to the other two dtypes, and to fp16 and bf16 every fp16 rounding
 * boundary (each midpoint and 2 fp32 ulps either side, both signs) and
 * every 4099th fp32 pattern (all exponents, NaNs, Infs, subnormals):
 * against the CPU kernels (same_element). */
static void device_patterns(void)
{
	/* the 16-bit patterns */
	uint16_t *h = malloc(65536 * sizeof *h);
	for (size_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	const starnn_dtype halves[2] = {STARNN_FP16, STARNN_BF16};
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < STARNN_NDTYPES; b++) {
			starnn_dtype src = halves[a], dst = (starnn_dtype)b;
			if (dst == src)
				continue;
			size_t es = starnn_dtype_size(dst);
			unsigned char *got = malloc(65536 * es), *ref = malloc(65536 * es);
			starnn_tensor *tx, *ty;
			TEST_OK(starnn_tensor_new(&tx, "x", src, 2, 256, 256));
			TEST_OK(starnn_tensor_new(&ty, "y", dst, 2, 256, 256));
			TEST_OK(starnn_tensor_write(tx, h));
			TEST_OK(starnn_convert(tx, ty));
			TEST_OK(starnn_tensor_read(ty, got));
			TEST_OK(starnn_convert_cpu(src, dst, 256, 256, h, 256, ref, 256));
			cmp_src = src;
			size_t bad = count_diff(dst, got, ref, 65536);
			TEST_ASSERT(bad == 0, "convert %s -> %s codelet on all 65536 patterns: %zu differ from the CPU kernel",
			            starnn_dtype_name(src), starnn_dtype_name(dst), bad);
			starnn_tensor_destroy(tx), starnn_tensor_destroy(ty);
			free(got), free(ref);
		}
	free(h);

	/* fp32 patterns: the boundaries, then a sample of all */
	const size_t n = 1 << 20;
	uint32_t *u = malloc(n * sizeof *u);
	size_t k = 0;
	for (uint32_t hb = 0; hb < 0x7c00u; hb++) {
		double lo = starnn_half_to_float((uint16_t)hb);
		double hi = hb + 1 == 0x7c00u ? 65536.0 : starnn_half_to_float((uint16_t)(hb + 1));
		uint32_t mid = starnn_f32_bits((float)((lo + hi) / 2));
		for (int d = -2; d <= 2; d++)
			for (uint32_t sg = 0; sg <= 1; sg++)
				u[k++] = (sg << 31) | (uint32_t)((int64_t)mid + d);
	}
	for (uint64_t p = 0; k < n; p += 4099)
		u[k++] = (uint32_t)p;
	starnn_tensor *tx;
	TEST_OK(starnn_tensor_new(&tx, "x", STARNN_FP32, 2, 1024, 1024));
	TEST_OK(starnn_tensor_write(tx, u));
	uint16_t *got = malloc(n * sizeof *got), *ref = malloc(n * sizeof *ref);
	for (int a = 0; a < 2; a++) {
		starnn_tensor *ty;
		TEST_OK(starnn_tensor_new(&ty, "y", halves[a], 2, 1024, 1024));
		TEST_OK(starnn_convert(tx, ty));
		TEST_OK(starnn_tensor_read(ty, got));
		TEST_OK(starnn_convert_cpu(STARNN_FP32, halves[a], 1024, 1024, u, 1024, ref, 1024));
		char what[96];
		snprintf(what, sizeof what, "convert fp32 -> %s codelet on %zu patterns", starnn_dtype_name(halves[a]), n);
		test_same_bits(what, got, ref, n, 2);
		starnn_tensor_destroy(ty);
	}
	starnn_tensor_destroy(tx);
	free(u), free(got), free(ref);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP16, 2, 5, 4));
	TEST_ASSERT(starnn_convert(a, b) == STARNN_EINVAL, "convert 4x5 -> 5x4 must fail");
	TEST_ASSERT(starnn_convert(a, NULL) == STARNN_EINVAL, "convert to NULL must fail");
	b->dtype = (starnn_dtype)5;
	TEST_ASSERT(starnn_convert(a, b) == STARNN_EINVAL, "convert to dtype 5 must fail");
	b->dtype = STARNN_FP16;
	TEST_ASSERT(starnn_convert_cpu(STARNN_FP32, (starnn_dtype)5, 1, 1, NULL, 1, NULL, 1) == STARNN_EINVAL,
	            "convert_cpu to dtype 5 must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		/* every instruction-set level's kernels (codelets/cpu/simd.h) */
		SC_FOR_EACH_LEVEL(lv) {
			exhaustive_16();
			sampled_f32();
			known_values();
			strided();
		}
		sc_level_done();
	}
	for (int s = 0; s < STARNN_NDTYPES; s++)
		for (int d = 0; d < STARNN_NDTYPES; d++)
			codelets((starnn_dtype)s, (starnn_dtype)d);
	if (TEST_ON_OPENCL)
		device_patterns();
	bad_arguments();
	return test_finish();
}
