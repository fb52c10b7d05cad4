/* IEEE binary16 and bfloat16 <-> binary32 conversions, in plain C.
 *
 * float -> half types round to nearest, ties to even; Inf and NaN are kept
 * (a NaN stays a quiet NaN, sign kept); fp16 subnormals are produced and
 * read exactly; overflow gives Inf. bf16 keeps fp32's exponent range, so its
 * subnormals are fp32's. No StarPU here: kernels and tests use these. */
#ifndef STARNN_HALF_H
#define STARNN_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t starnn_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float starnn_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint16_t starnn_float_to_bf16(float f)
{
	uint32_t u = starnn_f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign, force quiet */
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even; overflows to Inf */
	return (uint16_t)(u >> 16);
}

static inline float starnn_bf16_to_float(uint16_t h)
{
	return starnn_bits_f32((uint32_t)h << 16);
}

static inline uint16_t starnn_float_to_half(float f)
{
	uint32_t u = starnn_f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u) /* NaN */
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u) /* >= 65520 rounds to Inf (and Inf itself) */
		return (uint16_t)(sign | 0x7c00u);
	if (a < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
		if (a < 0x33000000u) /* < 2^-25: rounds to zero (2^-25 itself ties to 0) */
			return sign;
		uint32_t mant = (a & 0x7fffffu) | 0x800000u;
		int shift = 126 - (int)(a >> 23); /* 14..24 */
		uint32_t q = mant >> shift;
		uint32_t rem = mant & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	/* normal: rebias exponent (127 -> 15), round mantissa 23 -> 10 bits */
	a -= 0x38000000u;
	a += 0xfffu + ((a >> 13) & 1u);
	return (uint16_t)(sign | (a >> 13));
}

static inline float starnn_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;
	if (exp == 0x1fu) /* Inf / NaN */
		return starnn_bits_f32(sign | 0x7f800000u | (mant << 13));
	if (exp == 0) {
		if (mant == 0)
			return starnn_bits_f32(sign);
		/* subnormal: value = mant * 2^-24, exact in fp32 */
		float v = (float)mant * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	return starnn_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

#endif
