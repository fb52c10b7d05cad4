/* wire: compress / decompress (formats: codelets/wire.h).
 * Kernels (CPU build, at every instruction-set level): against references
 * written here on bit patterns with naive loops (the fp8 one by nearest
 * search over the E4M3 values), wire bytes and decoded values bit for bit,
 * for every format and n = 0, 1, 255, 256, 257, 1000, 65537, with special
 * values (+-0, subnormals, FLT_MAX, round-ups across the exponent, +-Inf,
 * quiet and signalling NaN, NaN with zero upper mantissa bits) in the
 * middle of blocks; non-finite values survive as what they are; values
 * exactly representable in a format round-trip exactly; the round-trip
 * error is within each format's unit roundoff (int8: half a scale) on
 * finite data; strided views.
 * Codelets: compress / decompress tasks (CPU; CUDA in the _cuda build, and
 * in this build too when a CUDA worker exists) equal to the CPU kernels bit
 * for bit, on whole tensors and channel views; bad arguments ->
 * STARNN_EINVAL. The _opencl build also runs the kernel checks' data
 * (65537 values with specials, rows across blocks, the rounding ties, Inf /
 * NaN / subnormal blocks) through the OpenCL tasks, and the launchers on
 * views at offsets (a wire at an odd byte), bit for bit against the CPU
 * kernels. */
#include <float.h>

#include "codelets/wire.h"
#include "runtime/base/half.h"
#include "runtime/core/codelet.h"
#include "tests/codelets/simdcheck.h"
#include "tests/testlib.h"

static const starnn_wire_format all_formats[] = {
	STARNN_WIRE_FP32, STARNN_WIRE_TRUNC24, STARNN_WIRE_RNE24, STARNN_WIRE_TRUNC16, STARNN_WIRE_RNE16,
	STARNN_WIRE_BF16, STARNN_WIRE_FP16,    STARNN_WIRE_INT8,  STARNN_WIRE_FP8,
};
#define NF (sizeof all_formats / sizeof *all_formats)
static const size_t sizes[] = {1, 255, 256, 257, 1000, 65537};
#define NS (sizeof sizes / sizeof *sizes)

static uint64_t bits_state = 0x2545f4914f6cdd1dull;
static uint32_t random_u32(void)
{
	bits_state ^= bits_state << 13, bits_state ^= bits_state >> 7, bits_state ^= bits_state << 17;
	return (uint32_t)(bits_state >> 32);
}

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}
static float flt(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static int is_nan(uint32_t u)
{
	return (u & 0x7fffffffu) > 0x7f800000u;
}
static int is_block(starnn_wire_format f)
{
	return f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8;
}

/* ------------------------------------------------------------ references */

/* The top 32 - drop bits of u, truncated or rounded to nearest even, spelt
 * out: look at the dropped bits. NaN: quiet bit set. */
static uint32_t ref_top(uint32_t u, int drop, int rne)
{
	uint32_t kept = u >> drop, low = u & ((1u << drop) - 1), half = 1u << (drop - 1);
	if (is_nan(u))
		return kept | (1u << (22 - drop));
	if (rne && (low > half || (low == half && (kept & 1u))))
		kept++;
	return kept;
}

/* The value of E4M3 code c (0..0x7e, no sign), in double. */
static double e4m3_value(unsigned c)
{
	unsigned e = c >> 3, m = c & 7u;
	return e ? ldexp(1.0 + m / 8.0, (int)e - 7) : ldexp(m / 8.0, -6);
}

/* Nearest code to v >= 0 among 0..topc, ties to the even code (mantissa
 * LSB 0), found by search. */
static unsigned ref_e4m3(double v, unsigned topc)
{
	unsigned best = 0;
	double bd = INFINITY;
	for (unsigned c = 0; c <= topc; c++) {
		double d = fabs(e4m3_value(c) - v);
		if (d < bd || (d == bd && !(c & 1u)))
			best = c, bd = d;
	}
	return best;
}

static void ref_block_compress(int fp8, size_t k, const float *x, float *scale_out, uint8_t *q)
{
	float max = 0;
	int inf = 0;
	for (size_t i = 0; i < k; i++) {
		if (isinf(x[i]))
			inf = 1;
		else if (!isnan(x[i]) && fabsf(x[i]) > max)
			max = fabsf(x[i]);
	}
	float top = fp8 ? (inf ? 416.0f : 448.0f) : (inf ? 126.0f : 127.0f);
	float s = max / top;
	if (s < FLT_MIN && max / s > top) /* a subnormal scale: one ulp up */
		s = nextafterf(s, INFINITY);
	float d = s > 0 ? s : 1.0f;
	for (size_t i = 0; i < k; i++) {
		uint32_t u = bits(x[i]);
		if (fp8) {
			unsigned sign = u >> 31 ? 0x80u : 0u;
			if (isnan(x[i]))
				q[i] = (uint8_t)(sign | 0x7fu);
			else if (isinf(x[i]))
				q[i] = (uint8_t)(sign | 0x7eu);
			else
				q[i] = (uint8_t)(sign | ref_e4m3(fabsf(x[i]) / d, inf ? 0x7du : 0x7eu));
		} else {
			int c;
			if (isnan(x[i]))
				c = -128;
			else if (isinf(x[i]))
				c = x[i] > 0 ? 127 : -127;
			else {
				float t = rintf(x[i] / d); /* default mode: ties to even */
				c = t > top ? (int)top : t < -top ? -(int)top : (int)t;
			}
			q[i] = (uint8_t)(int8_t)c;
		}
	}
	*scale_out = inf ? -s : s;
	if (inf && s == 0)
		*scale_out = -0.0f;
}

static void ref_compress(starnn_wire_format f, size_t n, const float *x, uint8_t *w)
{
	if (is_block(f)) {
		size_t nb = (n + 255) / 256;
		for (size_t b = 0; b < nb; b++) {
			size_t k = n - b * 256 < 256 ? n - b * 256 : 256;
			float s;
			ref_block_compress(f == STARNN_WIRE_FP8, k, x + b * 256, &s, w + 4 * nb + b * 256);
			memcpy(w + 4 * b, &s, 4);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t u = bits(x[i]);
		switch (f) {
		case STARNN_WIRE_FP32: memcpy(w + 4 * i, &u, 4); break;
		case STARNN_WIRE_TRUNC24:
		case STARNN_WIRE_RNE24: {
			uint32_t k = ref_top(u, 8, f == STARNN_WIRE_RNE24);
			for (int j = 0; j < 3; j++)
				w[3 * i + j] = (uint8_t)(k >> (8 * j));
			break;
		}
		case STARNN_WIRE_FP16: {
			uint16_t h = starnn_float_to_half(x[i]);
			memcpy(w + 2 * i, &h, 2);
			break;
		}
		default: {
			uint16_t h = (uint16_t)ref_top(u, 16, f != STARNN_WIRE_TRUNC16);
			memcpy(w + 2 * i, &h, 2);
		}
		}
	}
}

static void ref_decompress(starnn_wire_format f, size_t n, const uint8_t *w, float *y)
{
	size_t nb = (n + 255) / 256;
	for (size_t i = 0; i < n; i++) {
		uint32_t u = 0;
		if (is_block(f)) {
			uint32_t sb;
			memcpy(&sb, w + 4 * (i / 256), 4);
			int inf = sb >> 31;
			float s = flt(sb & 0x7fffffffu);
			uint8_t c = w[4 * nb + i];
			if (f == STARNN_WIRE_INT8) {
				int q = (int8_t)c;
				u = q == -128 ? 0x7fc00000u
				    : inf && (q == 127 || q == -127) ? bits(q > 0 ? INFINITY : -INFINITY)
				                                     : bits((float)q * s);
			} else {
				unsigned m = c & 0x7fu;
				float v = m == 0x7fu ? NAN : inf && m == 0x7eu ? INFINITY : (float)e4m3_value(m) * s;
				u = m == 0x7fu ? 0x7fc00000u : bits(v);
				u |= (uint32_t)(c & 0x80u) << 24;
			}
		} else {
			switch (f) {
			case STARNN_WIRE_FP32: memcpy(&u, w + 4 * i, 4); break;
			case STARNN_WIRE_TRUNC24:
			case STARNN_WIRE_RNE24:
				for (int j = 0; j < 3; j++)
					u |= (uint32_t)w[3 * i + j] << (8 * j + 8);
				break;
			case STARNN_WIRE_FP16: {
				uint16_t h;
				memcpy(&h, w + 2 * i, 2);
				u = bits(starnn_half_to_float(h));
				break;
			}
			default: {
				uint16_t h;
				memcpy(&h, w + 2 * i, 2);
				u = (uint32_t)h << 16;
			}
			}
		}
		memcpy(y + i, &u, 4);
	}
}

/* ---------------------------------------------------------------- data */

/* Specials, placed in the middle of blocks. */
static const uint32_t specials[] = {
	0x00000000u, 0x80000000u,              /* +-0 */
	0x00000001u, 0x807fffffu, 0x00400000u, /* subnormals */
	0x7f7fffffu, 0xff7fffffu,              /* +-FLT_MAX */
	0x3f7fff80u, 0x3f7fffc0u,              /* rne24: a tie and above it: up to 1.0 */
	0x3f7f8000u, 0xbf7fc000u,              /* rne16: the same at 16 bits */
	0x477ff000u,                           /* fp16: 65520, the tie that overflows */
	0x7f800000u, 0xff800000u,              /* +-Inf */
	0x7fc00000u, 0xffc00001u,              /* quiet NaNs */
	0x7f800001u, 0xff800100u,              /* signalling NaNs, upper mantissa bits zero */
	0x7fa00000u,                           /* signalling NaN with upper payload */
};
#define NSPECIAL (sizeof specials / sizeof *specials)

static float *make_data(size_t n, int with_specials)
{
	float *x = malloc((n ? n : 1) * sizeof *x);
	for (size_t i = 0; i < n; i++) {
		/* magnitudes over many binades, both signs */
		float m = ldexpf(1.0f + (float)(random_u32() >> 9) * 0x1p-23f, (int)(random_u32() % 40) - 20);
		x[i] = random_u32() & 1 ? -m : m;
		if (i % 97 == 5)
			x[i] = flt(random_u32()); /* any pattern */
	}
	if (with_specials)
		for (size_t j = 0; j < NSPECIAL && n > 0; j++)
			x[(j * 131 + 100) % n] = flt(specials[j]);
	return x;
}

/* Decoded values agree bit for bit. */
static size_t count_diff_f32(const float *a, const float *b, size_t n, size_t *first)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		if (bits(a[i]) != bits(b[i]) && !bad++)
			*first = i;
	return bad;
}

/* ------------------------------------------------------------ kernels */

static void kernels_vs_reference(starnn_wire_format f, size_t n, int with_specials)
{
	const char *fn = starnn_wire_name(f);
	size_t bytes = starnn_wire_bytes(f, n);
	float *x = make_data(n, with_specials), *y = malloc((n ? n : 1) * 4), *yref = malloc((n ? n : 1) * 4);
	uint8_t *w = malloc(bytes + 1), *wref = malloc(bytes + 1);
	memset(w, 0xa5, bytes + 1);
	ref_compress(f, n, x, wref);
	TEST_OK(starnn_compress_cpu(f, 1, n, x, n, w));
	char what[96];
	snprintf(what, sizeof what, "compress %s n %zu%s", fn, n, with_specials ? " with specials" : "");
	sc_same(what, w, wref, bytes, 1);
	TEST_ASSERT(w[bytes] == 0xa5, "%s wrote past its %zu bytes", what, bytes);
	ref_decompress(f, n, wref, yref);
	TEST_OK(starnn_decompress_cpu(f, 1, n, wref, y, n));
	snprintf(what, sizeof what, "decompress %s n %zu%s", fn, n, with_specials ? " with specials" : "");
	sc_same(what, y, yref, n, 4);

	/* non-finite values stay what they are */
	size_t bad_nan = 0, bad_inf = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t u = bits(x[i]), v = bits(y[i]);
		if (is_nan(u))
			bad_nan += !is_nan(v);
		else if ((u & 0x7fffffffu) == 0x7f800000u)
			bad_inf += v != u;
		else
			bad_nan += is_nan(v);
	}
	TEST_ASSERT(bad_nan == 0, "%s: %zu values change NaN-ness", what, bad_nan);
	TEST_ASSERT(bad_inf == 0, "%s: %zu infinities lost", what, bad_inf);
	free(x), free(y), free(yref), free(w), free(wref);
}

/* Round-trip error of finite data (no specials) against each format's
 * unit roundoff; int8 and fp8 against their block's scale. */
static void error_bounds(starnn_wire_format f, size_t n)
{
	float *x = make_data(n, 0), *y = malloc(n * 4);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]))
			x[i] = 1.0f;
		if (f == STARNN_WIRE_FP16 && fabsf(x[i]) >= 65504.0f) /* fp16's range */
			x[i] = 1.5f;
	}
	uint8_t *w = malloc(starnn_wire_bytes(f, n));
	TEST_OK(starnn_compress_cpu(f, 1, n, x, n, w));
	TEST_OK(starnn_decompress_cpu(f, 1, n, w, y, n));
	double rel = 0, absb = 0;
	switch (f) {
	case STARNN_WIRE_FP32: rel = 0; break;
	/* relative for normal values; absolute: a kept ulp (half of it) of
	 * the subnormals */
	case STARNN_WIRE_TRUNC24: rel = 0x1p-15, absb = 0x1p-141; break;
	case STARNN_WIRE_RNE24: rel = 0x1p-16, absb = 0x1p-142; break;
	case STARNN_WIRE_TRUNC16: rel = 0x1p-7, absb = 0x1p-133; break;
	case STARNN_WIRE_RNE16:
	case STARNN_WIRE_BF16: rel = 0x1p-8, absb = 0x1p-134; break;
	case STARNN_WIRE_FP16: rel = 0x1p-11, absb = 0x1p-25; break; /* + half an fp16 subnormal step */
	default: break;
	}
	size_t nb = (n + 255) / 256, bad = 0, worst = 0;
	double worst_ratio = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)x[i] - (double)y[i]), lim;
		if (is_block(f)) {
			float s;
			memcpy(&s, w + 4 * (i / 256), 4);
			s = fabsf(s);
			lim = f == STARNN_WIRE_INT8 ? s * (0.5 + 0x1p-16)
			                            : (0x1p-4 + 0x1p-20) * fabs((double)x[i]) + 0x1p-10 * s * (1 + 0x1p-20);
			lim += 0x1p-149;
		} else {
			lim = rel * fabs((double)x[i]) + absb;
		}
		/* truncation: strictly below its roundoff and never away from 0 */
		int ok = f == STARNN_WIRE_TRUNC24 || f == STARNN_WIRE_TRUNC16
		             ? (x[i] == 0 || e < lim) && fabsf(y[i]) <= fabsf(x[i])
		             : e <= lim;
		bad += !ok;
		double ratio = lim > 0 ? e / lim : (e > 0 ? INFINITY : 0);
		if (ratio > worst_ratio)
			worst_ratio = ratio, worst = i;
	}
	TEST_ASSERT(bad == 0, "%s n %zu: %zu of %zu values outside the error bound; worst [%zu] %.9g -> %.9g (%.3g of it)",
	            starnn_wire_name(f), n, bad, n, worst, x[worst], y[worst], worst_ratio);
	if (getenv("STARNN_TEST_VERBOSE"))
		printf("     %s n %zu: worst error %.3g of the bound (%zu blocks)\n", starnn_wire_name(f), n, worst_ratio,
		       nb);
	free(x), free(y), free(w);
}

/* Values exactly representable in a format come back exactly. */
static void exact(starnn_wire_format f)
{
	size_t n = 1000;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	for (size_t i = 0; i < n; i++) {
		uint32_t r = random_u32();
		switch (f) {
		case STARNN_WIRE_FP32: x[i] = flt(r); break; /* any pattern, NaN payloads too */
		case STARNN_WIRE_TRUNC24:
		case STARNN_WIRE_RNE24: x[i] = flt(r & 0xffffff00u); break;
		case STARNN_WIRE_TRUNC16:
		case STARNN_WIRE_RNE16:
		case STARNN_WIRE_BF16: x[i] = flt(r & 0xffff0000u); break;
		case STARNN_WIRE_FP16: x[i] = starnn_half_to_float((uint16_t)(r % 0x7c00u | (r >> 16 & 0x8000u))); break;
		case STARNN_WIRE_INT8: {
			/* q * s, |q| <= 127, with 127 s in every block so that s is the scale */
			float s = ldexpf(3.0f, (int)(i / 256) * 7 - 20);
			int q = i % 256 == 17 ? (i & 512 ? -127 : 127) : (int)(r % 255) - 127;
			x[i] = (float)q * s;
			break;
		}
		default: {
			/* e4m3 value * s, 448 s in every block */
			float s = ldexpf(5.0f, (int)(i / 256) * 9 - 30);
			unsigned c = i % 256 == 33 ? 0x7eu : r % 0x7fu;
			x[i] = (float)e4m3_value(c) * s * (r & 0x80000000u ? -1.0f : 1.0f);
		}
		}
		if (f != STARNN_WIRE_FP32 && !isfinite(x[i]))
			x[i] = 0.5f;
	}
	uint8_t *w = malloc(starnn_wire_bytes(f, n));
	TEST_OK(starnn_compress_cpu(f, 1, n, x, n, w));
	TEST_OK(starnn_decompress_cpu(f, 1, n, w, y, n));
	size_t first = 0, bad = count_diff_f32(x, y, n, &first);
	TEST_ASSERT(bad == 0, "%s: %zu of %zu representable values do not round-trip exactly; first [%zu] %.9g -> %.9g",
	            starnn_wire_name(f), bad, n, first, x[first], y[first]);
	free(x), free(y), free(w);
}

/* Known results: rounding across the exponent, overflow, NaN quieting. */
static void known_values(void)
{
	struct {
		starnn_wire_format f;
		uint32_t in, out;
	} k[] = {
		{STARNN_WIRE_RNE24, 0x3f7fff80u, 0x3f800000u},   /* tie, odd kept byte: up across the exponent */
		{STARNN_WIRE_RNE24, 0x3f7ffe80u, 0x3f7ffe00u},   /* tie, even: down */
		{STARNN_WIRE_TRUNC24, 0x3f7fffffu, 0x3f7fff00u}, /* truncation: toward 0 */
		{STARNN_WIRE_RNE16, 0x3f7f8000u, 0x3f800000u},
		{STARNN_WIRE_BF16, 0x3f7f8000u, 0x3f800000u},
		{STARNN_WIRE_TRUNC16, 0xbf7fffffu, 0xbf7f0000u},
		{STARNN_WIRE_RNE16, 0x7f7fffffu, 0x7f800000u},   /* FLT_MAX: Inf, as bf16 */
		{STARNN_WIRE_RNE24, 0x7f7fffffu, 0x7f800000u},
		{STARNN_WIRE_RNE24, 0x7f7fff7fu, 0x7f7fff00u},   /* just below the overflow tie */
		{STARNN_WIRE_TRUNC16, 0x7f7fffffu, 0x7f7f0000u}, /* truncation never overflows */
		{STARNN_WIRE_TRUNC16, 0x7f800001u, 0x7fc00000u}, /* sNaN with zero upper bits: quiet NaN, not Inf */
		{STARNN_WIRE_TRUNC24, 0xff800001u, 0xffc00000u},
		{STARNN_WIRE_RNE16, 0x7f800001u, 0x7fc00000u},
		{STARNN_WIRE_RNE16, 0x7fffffffu, 0x7fff0000u},   /* a NaN does not round over into the sign */
		{STARNN_WIRE_FP16, 0x477ff000u, 0x7f800000u},    /* 65520: Inf */
		{STARNN_WIRE_FP16, 0x477fefffu, 0x477fe000u},    /* below it: 65504 */
		{STARNN_WIRE_FP16, 0x33800000u, 0x33800000u},    /* 2^-24, the smallest fp16 subnormal */
		{STARNN_WIRE_RNE24, 0x00000001u, 0x00000000u},   /* the smallest subnormal rounds to 0 */
		{STARNN_WIRE_RNE24, 0x80000080u, 0x80000000u},   /* tie to even zero, sign kept */
	};
	for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
		float x = flt(k[i].in), y;
		uint8_t w[8];
		TEST_OK(starnn_compress_cpu(k[i].f, 1, 1, &x, 1, w));
		TEST_OK(starnn_decompress_cpu(k[i].f, 1, 1, w, &y, 1));
		TEST_ASSERT(bits(y) == k[i].out, "%s of 0x%08x: got 0x%08x, expected 0x%08x", starnn_wire_name(k[i].f),
		            k[i].in, bits(y), k[i].out);
	}

	/* Block formats: a block with NaN, +-Inf, +-0 and a subnormal among
	 * finite values: the scale is that of the finite ones (126 / 416 for a
	 * block with Inf), the specials come back as they were. */
	float x[300], y[300];
	for (int i = 0; i < 300; i++)
		x[i] = (float)(i % 50) - 25.0f;
	x[10] = 63.0f, x[11] = NAN, x[12] = INFINITY, x[13] = -INFINITY, x[14] = -0.0f, x[15] = 1e-40f;
	x[270] = NAN; /* the second block: NaN only, no Inf */
	for (int fp8 = 0; fp8 <= 1; fp8++) {
		starnn_wire_format f = fp8 ? STARNN_WIRE_FP8 : STARNN_WIRE_INT8;
		const char *fn = starnn_wire_name(f);
		uint8_t w[300 + 8];
		TEST_OK(starnn_compress_cpu(f, 1, 300, x, 300, w));
		TEST_OK(starnn_decompress_cpu(f, 1, 300, w, y, 300));
		float s0, s1;
		memcpy(&s0, w, 4), memcpy(&s1, w + 4, 4);
		float want0 = 63.0f / (fp8 ? 416.0f : 126.0f), want1 = 24.0f / (fp8 ? 448.0f : 127.0f);
		TEST_ASSERT(bits(s0) == (bits(want0) | 0x80000000u), "%s block with Inf: scale %a, expected -%a", fn, s0,
		            want0);
		TEST_ASSERT(s1 == want1, "%s block without Inf: scale %a, expected %a", fn, s1, want1);
		TEST_ASSERT(isnan(y[11]) && isnan(y[270]), "%s: NaN -> %g, %g", fn, y[11], y[270]);
		TEST_ASSERT(y[12] == INFINITY && y[13] == -INFINITY, "%s: +-Inf -> %g %g", fn, y[12], y[13]);
		TEST_ASSERT(y[14] == 0.0f && (fp8 ? signbit(y[14]) != 0 : 1), "%s: -0 -> %g", fn, y[14]);
		TEST_ASSERT(y[15] == 0.0f, "%s: a subnormal among values of scale %g -> %g", fn, s0, y[15]);
		TEST_ASSERT(fabsf(y[10] - 63.0f) <= 63.0f * 0x1p-23f, "%s: the block's max -> %.9g", fn, y[10]);
		TEST_ASSERT(w[8 + 11] == (fp8 ? 0x7fu : 0x80u), "%s: NaN code 0x%02x", fn, w[8 + 11]);
	}
	/* A block of zeros has scale 0; a block of tiny subnormals keeps them. */
	float z[5] = {0.0f, -0.0f, 0.0f, 0.0f, 0.0f}, zy[5], t[3] = {0x1p-149f, -0x3p-149f, 0x1.8p-147f}, ty[3];
	uint8_t zw[16];
	for (int fp8 = 0; fp8 <= 1; fp8++) {
		starnn_wire_format f = fp8 ? STARNN_WIRE_FP8 : STARNN_WIRE_INT8;
		TEST_OK(starnn_compress_cpu(f, 1, 5, z, 5, zw));
		float s;
		memcpy(&s, zw, 4);
		TEST_ASSERT(bits(s) == 0, "%s: a block of zeros has scale 0, got %a", starnn_wire_name(f), s);
		TEST_OK(starnn_decompress_cpu(f, 1, 5, zw, zy, 5));
		TEST_ASSERT(zy[0] == 0 && zy[1] == 0 && zy[4] == 0, "%s: zeros come back as zeros", starnn_wire_name(f));
		TEST_OK(starnn_compress_cpu(f, 1, 3, t, 3, zw));
		TEST_OK(starnn_decompress_cpu(f, 1, 3, zw, ty, 3));
		TEST_ASSERT(ty[0] == t[0] && ty[1] == t[1] && ty[2] == t[2], "%s: subnormals %a %a %a -> %a %a %a",
		            starnn_wire_name(f), t[0], t[1], t[2], ty[0], ty[1], ty[2]);
	}
}

/* Rounding ties of the block formats: with the block's max at the top code
 * (448 / 127) the scale is 1, and every midpoint between two codes, and
 * the fp32 values either side of it, go through the kernel's rounding
 * (ties to even) against the reference's search. Each block starts with
 * the anchor (+-top), then 255 values of the list. */
static float *ties_data(int fp8, size_t *n_out, size_t *nl_out)
{
	float list[3 * 256];
	size_t nl = 0;
	if (fp8)
		for (unsigned c = 0; c < 0x7e; c++) {
			float m = (float)((e4m3_value(c) + e4m3_value(c + 1)) / 2); /* exact */
			list[nl++] = nextafterf(m, 0), list[nl++] = m, list[nl++] = nextafterf(m, INFINITY);
		}
	else
		for (int k = -127; k < 127; k++) {
			float m = (float)k + 0.5f;
			list[nl++] = nextafterf(m, -INFINITY), list[nl++] = m, list[nl++] = nextafterf(m, INFINITY);
		}
	size_t nb = (nl + 254) / 255, n = nb * 256;
	float *x = calloc(n, sizeof *x);
	for (size_t b = 0, j = 0; b < nb; b++) {
		float sign = b & 1 ? -1.0f : 1.0f;
		x[b * 256] = sign * (fp8 ? 448.0f : 127.0f);
		for (size_t i = 1; i < 256 && j < nl; i++)
			x[b * 256 + i] = sign * list[j++];
	}
	*n_out = n, *nl_out = nl;
	return x;
}

static void ties(int fp8)
{
	starnn_wire_format f = fp8 ? STARNN_WIRE_FP8 : STARNN_WIRE_INT8;
	size_t n, nl;
	float *x = ties_data(fp8, &n, &nl), *y = malloc(n * sizeof *y), *yref = malloc(n * sizeof *yref);
	size_t nb = n / 256;
	size_t bytes = starnn_wire_bytes(f, n);
	uint8_t *w = malloc(bytes), *wref = malloc(bytes);
	ref_compress(f, n, x, wref);
	TEST_OK(starnn_compress_cpu(f, 1, n, x, n, w));
	char what[64];
	snprintf(what, sizeof what, "%s rounding ties (%zu values)", starnn_wire_name(f), nl);
	sc_same(what, w, wref, bytes, 1);
	float s;
	memcpy(&s, w, 4);
	TEST_ASSERT(s == 1.0f, "%s: the scale of a block whose max is the top code is 1, got %a", what, s);
	ref_decompress(f, n, wref, yref);
	TEST_OK(starnn_decompress_cpu(f, 1, n, wref, y, n));
	sc_same(what, y, yref, n, 4);
	/* the ties themselves went to the even neighbour */
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		float a = fabsf(x[i]), v = fabsf(y[i]);
		int tie = fp8 ? 0 : a - floorf(a) == 0.5f;
		if (fp8)
			for (unsigned c = 0; c < 0x7e; c++)
				tie |= a == (float)((e4m3_value(c) + e4m3_value(c + 1)) / 2);
		if (tie) {
			unsigned code = w[4 * nb + i] & 0x7fu;
			int even = fp8 ? !(code & 1u) : ((int)v % 2 == 0);
			bad += !even;
		}
	}
	TEST_ASSERT(bad == 0, "%s: %zu ties not to even", what, bad);
	free(x), free(y), free(yref), free(w), free(wref);
}

/* Rounding ties of the top-bytes formats: random patterns whose dropped
 * bits are exactly half an ulp of the kept ones, and one below / above,
 * against the reference (odd and even kept values alike). */
static float *ties_top_data(starnn_wire_format f, size_t n)
{
	int drop = starnn_wire_bits(f) == 24 ? 8 : 16;
	uint32_t half = 1u << (drop - 1), mask = (1u << drop) - 1;
	float *x = malloc(n * 4);
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (random_u32() & ~mask) | half;
		u += (uint32_t)(i % 3) - 1; /* half - 1, half, half + 1 */
		x[i] = flt(u);
	}
	return x;
}

static void ties_top(starnn_wire_format f)
{
	size_t n = 3000;
	float *x = ties_top_data(f, n), *y = malloc(n * 4), *yref = malloc(n * 4);
	size_t bytes = starnn_wire_bytes(f, n);
	uint8_t *w = malloc(bytes), *wref = malloc(bytes);
	ref_compress(f, n, x, wref);
	TEST_OK(starnn_compress_cpu(f, 1, n, x, n, w));
	char what[64];
	snprintf(what, sizeof what, "%s rounding ties", starnn_wire_name(f));
	sc_same(what, w, wref, bytes, 1);
	ref_decompress(f, n, wref, yref);
	TEST_OK(starnn_decompress_cpu(f, 1, n, wref, y, n));
	sc_same(what, y, yref, n, 4);
	free(x), free(y), free(yref), free(w), free(wref);
}

/* Strided views: blocks across rows, padding of y untouched, bit for bit
 * the dense result. */
static void strided(starnn_wire_format f)
{
	size_t rows = 7, cols = 100, ld = 113, n = rows * cols;
	float *xs = make_data(rows * ld, 1), *xd = malloc(n * 4), *ys = malloc(rows * ld * 4), *yd = malloc(n * 4);
	for (size_t r = 0; r < rows; r++)
		memcpy(xd + r * cols, xs + r * ld, cols * 4);
	for (size_t i = 0; i < rows * ld; i++)
		ys[i] = -7.0f;
	size_t bytes = starnn_wire_bytes(f, n);
	uint8_t *ws = malloc(bytes), *wd = malloc(bytes);
	TEST_OK(starnn_compress_cpu(f, rows, cols, xs, ld, ws));
	TEST_OK(starnn_compress_cpu(f, 1, n, xd, n, wd));
	char what[64];
	snprintf(what, sizeof what, "compress %s of a %zu x %zu view, ld %zu", starnn_wire_name(f), rows, cols, ld);
	sc_same(what, ws, wd, bytes, 1);
	TEST_OK(starnn_decompress_cpu(f, rows, cols, wd, ys, ld));
	TEST_OK(starnn_decompress_cpu(f, 1, n, wd, yd, n));
	size_t bad = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < ld; c++)
			bad += c < cols ? bits(ys[r * ld + c]) != bits(yd[r * cols + c]) : ys[r * ld + c] != -7.0f;
	TEST_ASSERT(bad == 0, "decompress %s into a view: %zu elements differ or padding touched", starnn_wire_name(f),
	            bad);
	free(xs), free(xd), free(ys), free(yd), free(ws), free(wd);
}

static void formats(void)
{
	for (size_t i = 0; i < NF; i++) {
		starnn_wire_format f;
		TEST_ASSERT(starnn_wire_parse(starnn_wire_name(all_formats[i]), &f) == 0 && f == all_formats[i],
		            "parse of the name of format %d", (int)all_formats[i]);
	}
	starnn_wire_format f;
	TEST_ASSERT(starnn_wire_parse("fp64", &f) == STARNN_EINVAL, "parse fp64 refused");
	TEST_ASSERT(starnn_wire_parse(NULL, &f) == STARNN_EINVAL, "parse NULL refused");
	TEST_ASSERT(strcmp(starnn_wire_name((starnn_wire_format)99), "?") == 0, "name of 99");
	size_t n = 1000;
	TEST_ASSERT(starnn_wire_bytes(STARNN_WIRE_FP32, n) == 4000 && starnn_wire_bytes(STARNN_WIRE_RNE24, n) == 3000 &&
	                starnn_wire_bytes(STARNN_WIRE_TRUNC16, n) == 2000 && starnn_wire_bytes(STARNN_WIRE_FP16, n) == 2000,
	            "bytes of the per-value formats");
	TEST_ASSERT(starnn_wire_bytes(STARNN_WIRE_INT8, 256) == 260 && starnn_wire_bytes(STARNN_WIRE_FP8, 257) == 265 &&
	                starnn_wire_bytes(STARNN_WIRE_INT8, 1) == 5 && starnn_wire_bytes(STARNN_WIRE_INT8, 0) == 0,
	            "bytes of the block formats");
	TEST_ASSERT(starnn_wire_bytes((starnn_wire_format)99, n) == 0 && starnn_wire_bits((starnn_wire_format)99) == 0,
	            "unknown format: 0 bytes, 0 bits");
	static const int want_bits[] = {32, 24, 24, 16, 16, 16, 16, 8, 8};
	for (size_t i = 0; i < NF; i++)
		TEST_ASSERT(starnn_wire_bits(all_formats[i]) == want_bits[i], "bits of %s", starnn_wire_name(all_formats[i]));
	static const starnn_wire_format trunc_ladder[] = {STARNN_WIRE_INT8, STARNN_WIRE_TRUNC16, STARNN_WIRE_TRUNC24,
	                                                  STARNN_WIRE_FP32};
	static const starnn_wire_format rne_ladder[] = {STARNN_WIRE_INT8, STARNN_WIRE_RNE16, STARNN_WIRE_RNE24,
	                                                STARNN_WIRE_FP32};
	for (int i = 0; i < 4; i++) {
		TEST_ASSERT(starnn_wire_ladder(STARNN_WIRE_LADDER_TRUNC, 8 * (i + 1), &f) == 0 && f == trunc_ladder[i],
		            "truncating ladder at %d bits", 8 * (i + 1));
		TEST_ASSERT(starnn_wire_ladder(STARNN_WIRE_LADDER_RNE, 8 * (i + 1), &f) == 0 && f == rne_ladder[i],
		            "rounding ladder at %d bits", 8 * (i + 1));
		TEST_ASSERT(starnn_wire_bits(trunc_ladder[i]) == 8 * (i + 1), "ladder widths");
	}
	TEST_ASSERT(starnn_wire_ladder(STARNN_WIRE_LADDER_RNE, 12, &f) == STARNN_EINVAL, "no 12-bit format");
	TEST_ASSERT(starnn_wire_ladder((starnn_wire_family)7, 16, &f) == STARNN_EINVAL, "no family 7");
	/* n = 0: nothing to do, nothing touched */
	for (size_t i = 0; i < NF; i++) {
		TEST_ASSERT(starnn_compress_cpu(all_formats[i], 0, 0, NULL, 0, NULL) == 0, "compress of 0 values");
		TEST_ASSERT(starnn_decompress_cpu(all_formats[i], 0, 0, NULL, NULL, 0) == 0, "decompress of 0 values");
	}
	TEST_ASSERT(starnn_compress_cpu((starnn_wire_format)99, 1, 1, NULL, 1, NULL) == STARNN_EINVAL,
	            "compress_cpu of format 99 fails");
}

/* ------------------------------------------------------------ codelets */

static void codelets(starnn_wire_format f, const char *where)
{
	char what[96];
	const char *fn = starnn_wire_name(f);
	int64_t n = 3, c = 4, h = 9, w = 7;
	int64_t shape[4] = {n, c, h, w};
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows, inner = (size_t)(h * w);
	float *x = make_data(numel, 1), *got = malloc(numel * 4), *ref = malloc(numel * 4);
	size_t bytes = starnn_wire_bytes(f, numel);
	uint8_t *wgot = malloc(bytes), *wref = malloc(bytes);
	starnn_tensor *tx, *ty, *tw;
	TEST_OK(starnn_tensor_create(&tx, "x", STARNN_FP32, 4, shape));
	TEST_OK(starnn_tensor_create(&ty, "y", STARNN_FP32, 4, shape));
	TEST_OK(starnn_tensor_new(&tw, "wire", STARNN_U8, 1, (int64_t)bytes));
	TEST_OK(starnn_tensor_write(tx, x));

	TEST_OK(starnn_compress(tx, f, tw));
	TEST_OK(starnn_decompress(tw, f, ty));
	TEST_OK(starnn_tensor_read(tw, wgot));
	TEST_OK(starnn_tensor_read(ty, got));
	TEST_OK(starnn_compress_cpu(f, 1, numel, x, numel, wref));
	TEST_OK(starnn_decompress_cpu(f, 1, numel, wref, ref, numel));
	snprintf(what, sizeof what, "compress_%s task (%s) vs the CPU kernel", fn, where);
	sc_same(what, wgot, wref, bytes, 1);
	snprintf(what, sizeof what, "decompress_%s task (%s) vs the CPU kernel", fn, where);
	sc_same(what, got, ref, numel, 4);

	/* Channel views: x channels 1.. -> wire -> y channels 1.. (y channel 0 untouched). */
	starnn_tensor **px, **py, *tv;
	int64_t split[2] = {1, c - 1};
	size_t pn = rows * (cols - inner), pbytes = starnn_wire_bytes(f, pn);
	TEST_OK(starnn_tensor_split(tx, 1, 2, split, &px));
	TEST_OK(starnn_tensor_split(ty, 1, 2, split, &py));
	TEST_OK(starnn_tensor_new(&tv, "wire_view", STARNN_U8, 1, (int64_t)pbytes));
	for (size_t i = 0; i < numel; i++)
		got[i] = -3.0f;
	TEST_OK(starnn_tensor_write(ty, got));
	TEST_OK(starnn_compress(px[1], f, tv));
	TEST_OK(starnn_decompress(tv, f, py[1]));
	uint8_t *vgot = malloc(pbytes), *vref = malloc(pbytes);
	TEST_OK(starnn_tensor_read(tv, vgot));
	TEST_OK(starnn_tensor_read(ty, got));
	TEST_OK(starnn_compress_cpu(f, rows, cols - inner, x + inner, cols, vref));
	for (size_t i = 0; i < numel; i++)
		ref[i] = -3.0f;
	TEST_OK(starnn_decompress_cpu(f, rows, cols - inner, vref, ref + inner, cols));
	snprintf(what, sizeof what, "compress_%s of a channel view (%s)", fn, where);
	sc_same(what, vgot, vref, pbytes, 1);
	snprintf(what, sizeof what, "decompress_%s into a channel view (%s)", fn, where);
	sc_same(what, got, ref, numel, 4);

	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tw), starnn_tensor_destroy(tv);
	free(x), free(got), free(ref), free(wgot), free(wref), free(vgot), free(vref);
}

/* ------------------------------------------------ the device's bits */

/* x (rows x cols, dense) compressed by a task and the CPU kernel's wire of
 * it decompressed by a task, on the test's workers (OpenCL in the _opencl
 * build): the CPU kernels' bytes and values bit for bit. */
static void tasks_vs_cpu(starnn_wire_format f, const float *x, size_t rows, size_t cols, const char *data)
{
	size_t n = rows * cols, bytes = starnn_wire_bytes(f, n);
	float *y = malloc(n * 4), *yref = malloc(n * 4);
	uint8_t *w = malloc(bytes), *wref = malloc(bytes);
	starnn_tensor *tx, *ty, *tw, *tc;
	TEST_OK(starnn_tensor_new(&tx, "x", STARNN_FP32, 2, (int64_t)rows, (int64_t)cols));
	TEST_OK(starnn_tensor_new(&ty, "y", STARNN_FP32, 2, (int64_t)rows, (int64_t)cols));
	TEST_OK(starnn_tensor_new(&tw, "wire", STARNN_U8, 1, (int64_t)bytes));
	TEST_OK(starnn_tensor_new(&tc, "wire_cpu", STARNN_U8, 1, (int64_t)bytes));
	TEST_OK(starnn_compress_cpu(f, rows, cols, x, cols, wref));
	TEST_OK(starnn_decompress_cpu(f, rows, cols, wref, yref, cols));
	TEST_OK(starnn_tensor_write(tx, x));
	TEST_OK(starnn_tensor_write(tc, wref));
	TEST_OK(starnn_compress(tx, f, tw));
	TEST_OK(starnn_decompress(tc, f, ty));
	TEST_OK(starnn_tensor_read(tw, w));
	TEST_OK(starnn_tensor_read(ty, y));
	char what[160];
	snprintf(what, sizeof what, "compress_%s task (%s) of %s, %zu x %zu, vs the CPU kernel", starnn_wire_name(f),
	         TEST_WORKERS, data, rows, cols);
	test_same_bits(what, w, wref, bytes, 1);
	snprintf(what, sizeof what, "decompress_%s task (%s) of %s, %zu x %zu, vs the CPU kernel", starnn_wire_name(f),
	         TEST_WORKERS, data, rows, cols);
	test_same_bits(what, y, yref, n, 4);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tw), starnn_tensor_destroy(tc);
	free(y), free(yref), free(w), free(wref);
}

/* The data of the kernel checks above, through the tasks: many blocks
 * with specials (one row, and rows whose blocks run across them), random
 * finite data, the rounding ties, blocks with NaN / Inf / subnormals, a
 * block of tiny subnormals and one of zeros. */
static void tasks_data(starnn_wire_format f)
{
	float *x = make_data(65537, 1);
	tasks_vs_cpu(f, x, 1, 65537, "65537 values with specials");
	free(x);
	x = make_data(255 * 257, 1);
	tasks_vs_cpu(f, x, 255, 257, "values with specials");
	free(x);
	x = make_data(1000, 0);
	tasks_vs_cpu(f, x, 1, 1000, "random values");
	free(x);
	if (is_block(f)) {
		size_t n, nl;
		x = ties_data(f == STARNN_WIRE_FP8, &n, &nl);
		tasks_vs_cpu(f, x, 1, n, "rounding ties");
		free(x);
	} else if (starnn_wire_bits(f) != 32 && f != STARNN_WIRE_FP16) {
		x = ties_top_data(f, 3000);
		tasks_vs_cpu(f, x, 1, 3000, "rounding ties");
		free(x);
	}
	float b[300];
	for (int i = 0; i < 300; i++)
		b[i] = (float)(i % 50) - 25.0f;
	b[10] = 63.0f, b[11] = NAN, b[12] = INFINITY, b[13] = -INFINITY, b[14] = -0.0f, b[15] = 1e-40f, b[270] = NAN;
	tasks_vs_cpu(f, b, 1, 300, "a block with NaN, Inf, -0, a subnormal");
	float t[3] = {0x1p-149f, -0x3p-149f, 0x1.8p-147f}, z[5] = {0.0f, -0.0f, 0.0f, 0.0f, 0.0f};
	tasks_vs_cpu(f, t, 1, 3, "tiny subnormals");
	tasks_vs_cpu(f, z, 1, 5, "zeros");
}

#ifdef STARNN_USE_OPENCL
/* The launchers at offsets: StarPU 1.3's asynchronous partitioning gives
 * each part its own buffer on an OpenCL node (offset 0), so a test codelet
 * calls them on whole buffers with the offsets a view at an odd place would
 * have: x from element xoff with rows ldx apart, the wire from byte woff
 * (odd: no field aligned). */
struct wire_at {
	starnn_wire_format f;
	size_t rows, cols, xoff, ldx, woff;
	int decompress;
};

static void wire_at_opencl(void *buffers[], void *cl_arg)
{
	const struct wire_at *a = cl_arg;
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0), w = starnn_cl_buffer(buffers, 1);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(wire);
	if (!ctx)
		return;
	if (a->decompress)
		STARNN_OPENCL_LAUNCHED(ctx, "test_wire_at", starnn_decompress_opencl(ctx, a->f, a->rows, a->cols, w.mem,
		                                                                     w.off + a->woff, x.mem, x.off + a->xoff,
		                                                                     a->ldx));
	else
		STARNN_OPENCL_LAUNCHED(ctx, "test_wire_at", starnn_compress_opencl(ctx, a->f, a->rows, a->cols, x.mem,
		                                                                   x.off + a->xoff, a->ldx, w.mem,
		                                                                   w.off + a->woff));
}

static struct starpu_codelet wire_at_cl = {.name = "test_wire_at", STARNN_OPENCL_FUNCS(wire_at_opencl) .nbuffers = 2,
                                           .modes = {STARPU_RW, STARPU_RW}};

/* compress from and decompress into a 3 x 100 view (ld 113, from element
 * 5; blocks across rows), the wire from byte 3: the CPU kernels' bytes and
 * values, nothing outside them touched. */
static void wire_offsets(starnn_wire_format f)
{
	if (!TEST_ON_OPENCL)
		return;
	struct wire_at a = {.f = f, .rows = 3, .cols = 100, .xoff = 5, .ldx = 113, .woff = 3};
	size_t n = a.rows * a.cols, bytes = starnn_wire_bytes(f, n), nx = a.xoff + a.rows * a.ldx, nw = a.woff + bytes + 4;
	float *x = make_data(nx, 1), *y = malloc(nx * 4), *yref = malloc(nx * 4);
	uint8_t *w = malloc(nw), *wref = malloc(nw);
	memset(wref, 0xa5, nw);
	TEST_OK(starnn_compress_cpu(f, a.rows, a.cols, x + a.xoff, a.ldx, wref + a.woff));
	starnn_tensor *tx, *tw;
	TEST_OK(starnn_tensor_new(&tx, "x_at", STARNN_FP32, 1, (int64_t)nx));
	TEST_OK(starnn_tensor_new(&tw, "wire_at", STARNN_U8, 1, (int64_t)nw));
	memset(w, 0xa5, nw);
	TEST_OK(starnn_tensor_write(tx, x));
	TEST_OK(starnn_tensor_write(tw, w));
	struct starnn_task_desc d = {.cl = &wire_at_cl, .args = &a, .args_size = sizeof a, .tensors = {tx, tw}};
	TEST_OK(starnn_submit(&d));
	TEST_OK(starnn_tensor_read(tw, w));
	char what[128];
	snprintf(what, sizeof what, "compress_%s (OpenCL) from element %zu, ld %zu, into byte %zu", starnn_wire_name(f),
	         a.xoff, a.ldx, a.woff);
	test_same_bits(what, w, wref, nw, 1);

	for (size_t i = 0; i < nx; i++)
		y[i] = yref[i] = -7.0f;
	TEST_OK(starnn_decompress_cpu(f, a.rows, a.cols, wref + a.woff, yref + a.xoff, a.ldx));
	TEST_OK(starnn_tensor_write(tx, y));
	TEST_OK(starnn_tensor_write(tw, wref));
	a.decompress = 1;
	TEST_OK(starnn_submit(&d));
	TEST_OK(starnn_tensor_read(tx, y));
	snprintf(what, sizeof what, "decompress_%s (OpenCL) from byte %zu into element %zu, ld %zu", starnn_wire_name(f),
	         a.woff, a.xoff, a.ldx);
	test_same_bits(what, y, yref, nx, 4);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(tw);
	free(x), free(y), free(yref), free(w), free(wref);
}
#else
static void wire_offsets(starnn_wire_format f)
{
	(void)f;
}
#endif

static void bad_arguments(void)
{
	starnn_tensor *x, *h, *w, *wbad, *wf, *w2;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 2, (int64_t)4, (int64_t)100));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, (int64_t)4, (int64_t)100));
	TEST_OK(starnn_tensor_new(&w, "w", STARNN_U8, 1, (int64_t)starnn_wire_bytes(STARNN_WIRE_INT8, 400)));
	TEST_OK(starnn_tensor_new(&wbad, "wbad", STARNN_U8, 1, (int64_t)400));
	TEST_OK(starnn_tensor_new(&wf, "wf", STARNN_FP32, 1, (int64_t)408));
	TEST_OK(starnn_tensor_new(&w2, "w2", STARNN_U8, 2, (int64_t)2, (int64_t)408));
	TEST_ASSERT(starnn_compress(x, STARNN_WIRE_INT8, w) == 0, "compress int8 of 400 values into 408 bytes");
	TEST_ASSERT(starnn_compress(x, STARNN_WIRE_INT8, wbad) == STARNN_EINVAL, "wrong wire size refused");
	TEST_ASSERT(strstr(starnn_last_error(), "408 bytes") != NULL, "the message gives the size: %s",
	            starnn_last_error());
	TEST_ASSERT(starnn_decompress(wbad, STARNN_WIRE_INT8, x) == STARNN_EINVAL, "decompress: wrong wire size refused");
	TEST_ASSERT(starnn_compress(x, STARNN_WIRE_FP16, w) == STARNN_EINVAL, "fp16 of 400 values needs 800 bytes");
	TEST_ASSERT(starnn_compress(h, STARNN_WIRE_INT8, w) == STARNN_EINVAL, "fp16 x refused");
	TEST_ASSERT(starnn_decompress(w, STARNN_WIRE_INT8, h) == STARNN_EINVAL, "fp16 y refused");
	TEST_ASSERT(starnn_compress(x, STARNN_WIRE_INT8, wf) == STARNN_EINVAL, "fp32 wire refused");
	TEST_ASSERT(starnn_compress(x, STARNN_WIRE_INT8, NULL) == STARNN_EINVAL, "NULL wire refused");
	TEST_ASSERT(starnn_decompress(w, STARNN_WIRE_INT8, NULL) == STARNN_EINVAL, "NULL y refused");
	TEST_ASSERT(starnn_compress(x, (starnn_wire_format)99, w) == STARNN_EINVAL, "format 99 refused");
	/* a strided wire: one half of the columns of a 2 x 408 byte tensor */
	starnn_tensor **parts;
	int64_t half[2] = {204, 204};
	TEST_OK(starnn_tensor_split(w2, 1, 2, half, &parts));
	TEST_ASSERT(starnn_compress(x, STARNN_WIRE_INT8, parts[0]) == STARNN_EINVAL, "strided wire refused");
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(x), starnn_tensor_destroy(h), starnn_tensor_destroy(w);
	starnn_tensor_destroy(wbad), starnn_tensor_destroy(wf), starnn_tensor_destroy(w2);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		formats();
		SC_FOR_EACH_LEVEL(lv) {
			for (size_t i = 0; i < NF; i++) {
				kernels_vs_reference(all_formats[i], 0, 0);
				for (size_t s = 0; s < NS; s++) {
					kernels_vs_reference(all_formats[i], sizes[s], 0);
					kernels_vs_reference(all_formats[i], sizes[s], 1);
				}
				error_bounds(all_formats[i], 65537);
				exact(all_formats[i]);
				if (starnn_wire_bits(all_formats[i]) != 32 && all_formats[i] != STARNN_WIRE_FP16 &&
				    !is_block(all_formats[i]))
					ties_top(all_formats[i]);
				strided(all_formats[i]);
			}
			known_values();
			ties(0);
			ties(1);
		}
		sc_level_done();
	}
	for (size_t i = 0; i < NF; i++) {
		codelets(all_formats[i], TEST_WORKERS);
		if (TEST_ON_OPENCL) {
			tasks_data(all_formats[i]);
			wire_offsets(all_formats[i]);
		}
	}
	if (!TEST_ON_DEVICE) {
		/* The CUDA kernels against the CPU ones, when this build has a GPU
		 * worker (the _cuda build runs the same checks on CUDA only). */
		if (starnn_ncuda_workers() > 0) {
			starnn_set_where(STARPU_CUDA);
			for (size_t i = 0; i < NF; i++)
				codelets(all_formats[i], "CUDA");
			starnn_set_where(STARPU_CPU);
		} else {
			printf("CUDA: skipped (no CUDA worker)\n");
		}
	}
	bad_arguments();
	return test_finish();
}
