/* CPU kernels of wire (formats: codelets/wire.h). Every loop is plain C on
 * integer bit patterns (and, for the block formats, one fp32 division and
 * one multiplication per value), written branch-free so that gcc
 * vectorises it, and compiled per instruction-set level by
 * STARNN_SIMD_CLONES (codelets/cpu/simd.h): the same results at every
 * level. fp16 goes through the convert kernels (F16C when present).
 *
 * Rounding to an integer uses the 1.5 * 2^23 trick, (t + M) - M: for
 * |t| <= 2^22 it is round-half-even in the default rounding mode, exactly
 * rintf, and it vectorises on SSE2 (the generic level has no roundps).
 *
 * Views: the values are taken in row-major order. Per-value formats run
 * row by row; the block formats take each block of 256 values straight from
 * the row when it lies in one row, else through a buffer on the stack. */
#include <string.h>

#include "codelets/cpu/simd.h"
#include "codelets/kernels/convert.h"
#include "codelets/kernels/wire.h"
#include "runtime/base/error.h"
#include "runtime/base/half.h"

/* ------------------------------------------------ top bytes (trunc / rne) */

/* The top 32 - drop bits of u: truncated or rounded to nearest even (the
 * carry may reach the exponent, up to Inf); a NaN gets its quiet bit, so
 * that it stays a NaN whatever its payload. The NaN test is a signed
 * compare of non-negative values (SSE2 has it). */
STARNN_SIMD_INLINE uint32_t top_bits(uint32_t u, int drop, int rne)
{
	uint32_t kept = rne ? (u + ((1u << (drop - 1)) - 1) + ((u >> drop) & 1u)) >> drop : u >> drop;
	uint32_t quiet = (u >> drop) | (0x00400000u >> drop);
	return (int32_t)(u & 0x7fffffffu) > 0x7f800000 ? quiet : kept;
}

STARNN_SIMD_INLINE void enc16(size_t n, const float *restrict x, uint8_t *restrict w, int rne)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, x + i, 4);
		uint16_t h = (uint16_t)top_bits(u, 16, rne);
		memcpy(w + 2 * i, &h, 2);
	}
}
STARNN_SIMD_INLINE void enc16_trunc(size_t n, const float *restrict x, uint8_t *restrict w) { enc16(n, x, w, 0); }
STARNN_SIMD_INLINE void enc16_rne(size_t n, const float *restrict x, uint8_t *restrict w) { enc16(n, x, w, 1); }
STARNN_SIMD_CLONES(enc16_trunc, (size_t n, const float *restrict x, uint8_t *restrict w), (n, x, w))
STARNN_SIMD_CLONES(enc16_rne, (size_t n, const float *restrict x, uint8_t *restrict w), (n, x, w))

STARNN_SIMD_INLINE void dec16(size_t n, const uint8_t *restrict w, float *restrict y)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, w + 2 * i, 2);
		uint32_t u = (uint32_t)h << 16;
		memcpy(y + i, &u, 4);
	}
}
STARNN_SIMD_CLONES(dec16, (size_t n, const uint8_t *restrict w, float *restrict y), (n, w, y))

/* 24 bits: 3-byte groups. At the AVX2 and AVX-512 levels 4 values at a
 * time: round in 32-bit lanes, then one byte shuffle (pshufb) keeps bytes
 * 1..3 of each lane (x86 is little-endian: those are bits 8..31) and a
 * 16-byte store writes the 12 bytes and 4 bytes of the next group, which
 * the next step rewrites (hence the bound i + 6 <= n: the store stays
 * inside the n values' 3n bytes). About twice the plain loop's speed
 * there; SSE2 has no pshufb, so the generic level keeps the plain loop. */
typedef uint32_t wire_v4u __attribute__((vector_size(16)));
typedef int32_t wire_v4i __attribute__((vector_size(16)));
typedef uint8_t wire_v16b __attribute__((vector_size(16)));
/* Bytes of (a, b) by index (b's from 16): __builtin_shufflevector (clang,
 * GCC >= 12), else GCC's __builtin_shuffle. */
#if defined(__clang__) || __GNUC__ >= 12
#define WIRE_SHUFFLE(a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#else
#define WIRE_SHUFFLE(a, b, ...) __builtin_shuffle((a), (b), (wire_v16b){__VA_ARGS__})
#endif

STARNN_SIMD_INLINE void enc24(int level, size_t n, const float *restrict x, uint8_t *restrict w, int rne)
{
	size_t i = 0;
	if (level >= STARNN_SIMD_AVX2)
		for (; i + 6 <= n; i += 4) {
			wire_v4u u;
			memcpy(&u, x + i, 16);
			wire_v4u r = rne ? u + 0x7fu + ((u >> 8) & 1u) : u;
			wire_v4u m = (wire_v4u)((wire_v4i)(u & 0x7fffffffu) > 0x7f800000); /* NaN lanes */
			wire_v4u k = ((u | 0x00400000u) & m) | (r & ~m);
			wire_v16b o = WIRE_SHUFFLE((wire_v16b)k, (wire_v16b){0}, 1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 0,
			                           0, 0, 0);
			memcpy(w + 3 * i, &o, 16);
		}
	for (; i < n; i++) {
		uint32_t u;
		memcpy(&u, x + i, 4);
		uint32_t k = top_bits(u, 8, rne);
		w[3 * i] = (uint8_t)k;
		w[3 * i + 1] = (uint8_t)(k >> 8);
		w[3 * i + 2] = (uint8_t)(k >> 16);
	}
}
STARNN_SIMD_INLINE void enc24_trunc(int level, size_t n, const float *restrict x, uint8_t *restrict w)
{
	enc24(level, n, x, w, 0);
}
STARNN_SIMD_INLINE void enc24_rne(int level, size_t n, const float *restrict x, uint8_t *restrict w)
{
	enc24(level, n, x, w, 1);
}
STARNN_SIMD_CLONES_LEVEL(enc24_trunc, (size_t n, const float *restrict x, uint8_t *restrict w), n, x, w)
STARNN_SIMD_CLONES_LEVEL(enc24_rne, (size_t n, const float *restrict x, uint8_t *restrict w), n, x, w)

STARNN_SIMD_INLINE void dec24(int level, size_t n, const uint8_t *restrict w, float *restrict y)
{
	size_t i = 0;
	if (level >= STARNN_SIMD_AVX2)
		for (; i + 6 <= n; i += 4) {
			wire_v16b b;
			memcpy(&b, w + 3 * i, 16);
			wire_v16b o = WIRE_SHUFFLE(b, (wire_v16b){0}, 16, 0, 1, 2, 16, 3, 4, 5, 16, 6, 7, 8, 16, 9, 10, 11);
			memcpy(y + i, &o, 16);
		}
	for (; i < n; i++) {
		uint32_t u = (uint32_t)w[3 * i] << 8 | (uint32_t)w[3 * i + 1] << 16 | (uint32_t)w[3 * i + 2] << 24;
		memcpy(y + i, &u, 4);
	}
}
STARNN_SIMD_CLONES_LEVEL(dec24, (size_t n, const uint8_t *restrict w, float *restrict y), n, w, y)

/* ------------------------------------------------------- block formats */

#define ROUND_MAGIC 12582912.0f /* 1.5 * 2^23 */
#define INT8_NAN 0x80u
#define FP8_NAN 0x7f
#define FP8_TOP 0x7e     /* 448; +-Inf in a block with Inf */
#define FP8_TOP_INF 0x7d /* 416: the largest finite code of a block with Inf */
#define SIGN 0x80000000u

/* The finite max |x| of a block (as a bit pattern: non-negative floats
 * order as integers) and whether it holds an Inf; integer reductions, which
 * vectorise (in signed arithmetic: gcc 12 does not vectorise this unsigned
 * max). */
STARNN_SIMD_INLINE void block_stats(size_t k, const float *restrict x, uint32_t *maxbits, uint32_t *has_inf)
{
	int32_t m = 0, inf = 0;
	for (size_t i = 0; i < k; i++) {
		int32_t a;
		memcpy(&a, x + i, 4);
		a &= 0x7fffffff;
		int32_t fin = a < 0x7f800000 ? a : 0;
		m = fin > m ? fin : m;
		inf |= a == 0x7f800000;
	}
	*maxbits = (uint32_t)m, *has_inf = (uint32_t)inf;
}

/* The block's scale s = max / top. A subnormal (or zero) s has lost
 * relative precision: when max / s then exceeds top, s goes one ulp up, so
 * that every finite |x| / s <= top (for a normal s, max / s is within an
 * ulp of top and rounds to the top code anyway). 0 for a block without
 * finite non-zero values (0 / 0 compares false). */
static inline float block_scale(uint32_t maxbits, float top)
{
	float max = starnn_bits_f32(maxbits);
	float s = max / top;
	if (s < 0x1p-126f && max / s > top)
		s = starnn_bits_f32(starnn_f32_bits(s) + 1);
	return s;
}

/* The block loops below select with all-ones / all-zero int32 masks
 * (SEL) in signed arithmetic: gcc 12 if-converts and vectorises those at
 * every level, SSE2 included, where it gives up on ?: over unsigned values.
 * Magnitude patterns (u & 0x7fffffff) are non-negative, so signed
 * comparisons order them. */
#define MASK(cond) (-(int32_t)(cond))
#define SEL(m, a, b) (((a) & (m)) | ((b) & ~(m)))

STARNN_SIMD_INLINE void int8_codes(size_t k, const float *restrict x, uint8_t *restrict q, float s, uint32_t inf)
{
	float d = s > 0.0f ? s : 1.0f; /* s = 0: every finite value is +-0 */
	int32_t top = inf ? 126 : 127, inf_code = inf ? 127 : 0;
	for (size_t i = 0; i < k; i++) {
		int32_t u;
		memcpy(&u, x + i, 4);
		int32_t a = u & 0x7fffffff;
		int32_t fin = MASK(a < 0x7f800000), isinf = MASK(a == 0x7f800000), isnan = MASK(a > 0x7f800000);
		float v;
		int32_t uf = u & fin; /* non-finite values enter as 0: no NaN into the conversion */
		memcpy(&v, &uf, 4);
		float t = (v / d + ROUND_MAGIC) - ROUND_MAGIC; /* |t| <= top + 1 */
		int32_t c = (int32_t)t;
		c = c > top ? top : c;
		c = c < -top ? -top : c;
		int32_t neg = u >> 31; /* all ones for a negative x */
		c = SEL(isinf, SEL(neg, -inf_code, inf_code), c);
		c = SEL(isnan, -128, c);
		q[i] = (uint8_t)c;
	}
}

STARNN_SIMD_INLINE void int8_values(size_t k, const uint8_t *restrict q, float s, uint32_t inf, float *restrict y)
{
	int32_t infcode = inf ? 127 : 1000; /* no code is 1000 */
	for (size_t i = 0; i < k; i++) {
		int32_t c = (int8_t)q[i];
		float v = (float)c * s;
		int32_t u;
		memcpy(&u, &v, 4);
		int32_t ui = (c & (int32_t)SIGN) | 0x7f800000;
		u = SEL(MASK((c == infcode) | (c == -infcode)), ui, u);
		u = SEL(MASK(c == -128), 0x7fc00000, u);
		memcpy(y + i, &u, 4);
	}
}

/* E4M3 code of a finite v >= 0 (v <= top code's value, up to rounding),
 * nearest even, saturating at topc. Normal range (v >= 2^-6): rebias the
 * exponent (127 -> 7) and round 23 -> 3 mantissa bits; below: v * 2^9
 * rounded to an integer 0..8 (8 is the smallest normal's code). */
STARNN_SIMD_INLINE int32_t e4m3_code(float v, int32_t topc)
{
	int32_t a;
	memcpy(&a, &v, 4);
	int32_t b = a - (120 << 23); /* wraps below 2^-6: not selected then */
	b += 0x7ffff + ((b >> 20) & 1);
	int32_t cn = b >> 20;
	int32_t cs = (int32_t)((v * 512.0f + ROUND_MAGIC) - ROUND_MAGIC);
	int32_t c = SEL(MASK(a < 0x3c800000), cs, cn);
	return c > topc ? topc : c;
}

STARNN_SIMD_INLINE void fp8_codes(size_t k, const float *restrict x, uint8_t *restrict q, float s, uint32_t inf)
{
	float d = s > 0.0f ? s : 1.0f;
	int32_t topc = inf ? FP8_TOP_INF : FP8_TOP;
	for (size_t i = 0; i < k; i++) {
		int32_t u;
		memcpy(&u, x + i, 4);
		int32_t a = u & 0x7fffffff;
		/* the masks first: written after the conversion, gcc sinks the
		 * conversion under a branch and does not vectorise the loop */
		int32_t isinf = MASK(a == 0x7f800000), isnan = MASK(a > 0x7f800000);
		int32_t af = a & MASK(a < 0x7f800000);
		float v;
		memcpy(&v, &af, 4);
		int32_t c = e4m3_code(v / d, topc);
		c = SEL(isinf, FP8_TOP, c);
		c = SEL(isnan, FP8_NAN, c);
		q[i] = (uint8_t)(c | ((u >> 24) & 0x80));
	}
}

STARNN_SIMD_INLINE void fp8_values(size_t k, const uint8_t *restrict q, float s, uint32_t inf, float *restrict y)
{
	int32_t infc = inf ? FP8_TOP : 0x100; /* no code is 0x100 */
	for (size_t i = 0; i < k; i++) {
		int32_t c = q[i] & 0x7f, sign = (int32_t)((uint32_t)(q[i] & 0x80) << 24);
		int32_t isinf = MASK(c == infc), isnan = MASK(c == FP8_NAN);
		int32_t e = c >> 3, m = c & 7, sub = MASK(e == 0);
		/* 2^(e-7) (1 + m/8); a subnormal m 2^-9 as 2^-6 (1 + m/8) - 2^-6,
		 * exact: no conditional floating-point operation, which gcc would
		 * not if-convert (it may trap) */
		int32_t nb = ((e + 120 + (sub & 1)) << 23) | (m << 20), off = sub & 0x3c800000;
		float vn, vo;
		memcpy(&vn, &nb, 4);
		memcpy(&vo, &off, 4);
		float v = (vn - vo) * s;
		int32_t u;
		memcpy(&u, &v, 4);
		u = SEL(isinf, 0x7f800000, u);
		u = SEL(isnan, 0x7fc00000, u);
		u |= sign;
		memcpy(y + i, &u, 4);
	}
}

STARNN_SIMD_CLONES(block_stats, (size_t k, const float *restrict x, uint32_t *maxbits, uint32_t *has_inf),
                   (k, x, maxbits, has_inf))
STARNN_SIMD_CLONES(int8_codes, (size_t k, const float *restrict x, uint8_t *restrict q, float s, uint32_t inf),
                   (k, x, q, s, inf))
STARNN_SIMD_CLONES(int8_values, (size_t k, const uint8_t *restrict q, float s, uint32_t inf, float *restrict y),
                   (k, q, s, inf, y))
STARNN_SIMD_CLONES(fp8_codes, (size_t k, const float *restrict x, uint8_t *restrict q, float s, uint32_t inf),
                   (k, x, q, s, inf))
STARNN_SIMD_CLONES(fp8_values, (size_t k, const uint8_t *restrict q, float s, uint32_t inf, float *restrict y),
                   (k, q, s, inf, y))

/* Values [start, start + k) of a rows x cols view in row-major order: a
 * pointer into the view when they lie in one row, else copied into buf. */
static const float *gather(size_t cols, const float *x, size_t ldx, size_t start, size_t k, float *buf)
{
	size_t r = start / cols, c = start % cols;
	if (c + k <= cols)
		return x + r * ldx + c;
	for (size_t i = 0; i < k;) {
		size_t len = cols - c < k - i ? cols - c : k - i;
		memcpy(buf + i, x + r * ldx + c, len * sizeof *buf);
		i += len, r++, c = 0;
	}
	return buf;
}

static void scatter(size_t cols, const float *buf, float *y, size_t ldy, size_t start, size_t k)
{
	size_t r = start / cols, c = start % cols;
	for (size_t i = 0; i < k;) {
		size_t len = cols - c < k - i ? cols - c : k - i;
		memcpy(y + r * ldy + c, buf + i, len * sizeof *buf);
		i += len, r++, c = 0;
	}
}

static void compress_blocks(int fp8, size_t rows, size_t cols, const float *x, size_t ldx, uint8_t *wire)
{
	size_t n = rows * cols, nb = (n + STARNN_WIRE_BLOCK - 1) / STARNN_WIRE_BLOCK;
	uint8_t *codes = wire + 4 * nb;
	float buf[STARNN_WIRE_BLOCK];
	for (size_t b = 0; b < nb; b++) {
		size_t start = b * STARNN_WIRE_BLOCK, k = n - start < STARNN_WIRE_BLOCK ? n - start : STARNN_WIRE_BLOCK;
		const float *xb = gather(cols, x, ldx, start, k, buf);
		uint32_t maxbits, inf;
		STARNN_SIMD_CALL(block_stats, (k, xb, &maxbits, &inf));
		float top = fp8 ? (inf ? 416.0f : 448.0f) : (inf ? 126.0f : 127.0f);
		float s = block_scale(maxbits, top);
		if (fp8)
			STARNN_SIMD_CALL(fp8_codes, (k, xb, codes + start, s, inf));
		else
			STARNN_SIMD_CALL(int8_codes, (k, xb, codes + start, s, inf));
		uint32_t sb = starnn_f32_bits(s) | (inf ? SIGN : 0u);
		memcpy(wire + 4 * b, &sb, 4);
	}
}

static void decompress_blocks(int fp8, size_t rows, size_t cols, const uint8_t *wire, float *y, size_t ldy)
{
	size_t n = rows * cols, nb = (n + STARNN_WIRE_BLOCK - 1) / STARNN_WIRE_BLOCK;
	const uint8_t *codes = wire + 4 * nb;
	float buf[STARNN_WIRE_BLOCK];
	for (size_t b = 0; b < nb; b++) {
		size_t start = b * STARNN_WIRE_BLOCK, k = n - start < STARNN_WIRE_BLOCK ? n - start : STARNN_WIRE_BLOCK;
		size_t r = start / cols, c = start % cols;
		int direct = c + k <= cols;
		float *yb = direct ? y + r * ldy + c : buf;
		uint32_t sb;
		memcpy(&sb, wire + 4 * b, 4);
		float s = starnn_bits_f32(sb & ~SIGN);
		uint32_t inf = sb >> 31;
		if (fp8)
			STARNN_SIMD_CALL(fp8_values, (k, codes + start, s, inf, yb));
		else
			STARNN_SIMD_CALL(int8_values, (k, codes + start, s, inf, yb));
		if (!direct)
			scatter(cols, buf, y, ldy, start, k);
	}
}

/* ------------------------------------------------------------------ kernels */

int starnn_compress_cpu(starnn_wire_format f, size_t rows, size_t cols, const float *x, size_t ldx, uint8_t *wire)
{
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return starnn_error(STARNN_EINVAL, "compress: unknown wire format %d", (int)f);
	if (rows == 0 || cols == 0)
		return 0;
	if (ldx == cols || rows == 1) /* one row of all the values */
		cols *= rows, rows = 1, ldx = cols;
	if (f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8) {
		compress_blocks(f == STARNN_WIRE_FP8, rows, cols, x, ldx, wire);
		return 0;
	}
	size_t bpv = starnn_wire_value_bytes(f);
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx;
		uint8_t *wr = wire + r * cols * bpv;
		switch (f) {
		case STARNN_WIRE_FP32: memcpy(wr, xr, cols * 4); break;
		case STARNN_WIRE_TRUNC24: STARNN_SIMD_CALL(enc24_trunc, (cols, xr, wr)); break;
		case STARNN_WIRE_RNE24: STARNN_SIMD_CALL(enc24_rne, (cols, xr, wr)); break;
		case STARNN_WIRE_TRUNC16: STARNN_SIMD_CALL(enc16_trunc, (cols, xr, wr)); break;
		case STARNN_WIRE_RNE16:
		case STARNN_WIRE_BF16: STARNN_SIMD_CALL(enc16_rne, (cols, xr, wr)); break;
		default: /* fp16; the wire is 2-byte aligned at every row */
			starnn_convert_fp32_to_fp16_cpu(1, cols, xr, cols, (uint16_t *)(void *)wr, cols);
		}
	}
	return 0;
}

int starnn_decompress_cpu(starnn_wire_format f, size_t rows, size_t cols, const uint8_t *wire, float *y, size_t ldy)
{
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return starnn_error(STARNN_EINVAL, "decompress: unknown wire format %d", (int)f);
	if (rows == 0 || cols == 0)
		return 0;
	if (ldy == cols || rows == 1)
		cols *= rows, rows = 1, ldy = cols;
	if (f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8) {
		decompress_blocks(f == STARNN_WIRE_FP8, rows, cols, wire, y, ldy);
		return 0;
	}
	size_t bpv = starnn_wire_value_bytes(f);
	for (size_t r = 0; r < rows; r++) {
		const uint8_t *wr = wire + r * cols * bpv;
		float *yr = y + r * ldy;
		switch (f) {
		case STARNN_WIRE_FP32: memcpy(yr, wr, cols * 4); break;
		case STARNN_WIRE_TRUNC24:
		case STARNN_WIRE_RNE24: STARNN_SIMD_CALL(dec24, (cols, wr, yr)); break;
		case STARNN_WIRE_TRUNC16:
		case STARNN_WIRE_RNE16:
		case STARNN_WIRE_BF16: STARNN_SIMD_CALL(dec16, (cols, wr, yr)); break;
		default:
			starnn_convert_fp16_to_fp32_cpu(1, cols, (const uint16_t *)(const void *)wr, cols, yr, cols);
		}
	}
	return 0;
}
