/* What every OpenCL program of starnn starts with (build-aux/cl2c puts
 * this file before codelets/opencl/<op>.cl): the rounding rules and the
 * 16-bit formats' conversions. OpenCL C 1.2, built with the options of
 * runtime/base/opencl.h (docs/opencl.md).
 *
 * Numerics: each program computes what the CPU kernel computes, in its
 * order: FP_CONTRACT OFF (OpenCL C's default is ON) keeps a * b + c two
 * roundings, as the CPU kernels are compiled (-ffp-contract=off,
 * codelets/cpu/simd.h); +, -, * and (with the build option) / and sqrt
 * are correctly rounded in OpenCL; no native_, half_ or mad functions
 * (tools/dev/check-kernels refuses them). The 16-bit conversions are the
 * integer arithmetic of runtime/base/half.h on bit patterns, not the
 * device's conversions (vload_half, convert_*: their rounding and NaN
 * handling vary), and data move as bits (uint, ushort) where no
 * arithmetic is done, so that no device canonicalises a NaN or flushes a
 * subnormal on the way. */
#pragma OPENCL FP_CONTRACT OFF

/* fp32 (bits) -> fp16: round to nearest even; NaN stays NaN (quiet, sign
 * and top payload bits kept); >= 65520 -> Inf; fp16 subnormals produced
 * exactly (starnn_float_to_half). */
ushort starnn_f32_bits_to_half(uint u)
{
	const uint sign = (u >> 16) & 0x8000u;
	uint a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return (ushort)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u)
		return (ushort)(sign | 0x7c00u);
	if (a < 0x38800000u) {
		if (a < 0x33000000u)
			return (ushort)sign;
		const uint mant = (a & 0x7fffffu) | 0x800000u;
		const uint shift = 126u - (a >> 23); /* 14 .. 24 */
		uint q = mant >> shift;
		const uint rem = mant & ((1u << shift) - 1u), tie = 1u << (shift - 1u);
		if (rem > tie || (rem == tie && (q & 1u)))
			q++;
		return (ushort)(sign | q);
	}
	a -= 0x38000000u;
	a += 0xfffu + ((a >> 13) & 1u);
	return (ushort)(sign | (a >> 13));
}

/* fp16 -> fp32 (bits): exact; a NaN comes out quiet (the quiet bit set,
 * as the CPU kernels' F16C instructions do; runtime/base/half.h keeps a
 * signalling NaN signalling). */
uint starnn_half_to_f32_bits(ushort h)
{
	const uint sign = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
	if (e == 0x1fu)
		return sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);
	if (e == 0) {
		if (m == 0)
			return sign;
		const uint p = 31u - clz(m); /* the leading bit: m * 2^-24 = 2^(p - 24) * 1.f */
		return sign | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu);
	}
	return sign | ((e + 112u) << 23) | (m << 13);
}

/* fp32 (bits) -> bf16: round to nearest even, overflow to Inf; NaN stays
 * NaN, quiet, sign kept (starnn_float_to_bf16). */
ushort starnn_f32_bits_to_bf16(uint u)
{
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (ushort)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (ushort)(u >> 16);
}

/* bf16 -> fp32 (bits): exact. */
uint starnn_bf16_to_f32_bits(ushort h)
{
	return (uint)h << 16;
}

/* The same on values, for kernels that compute in fp32 on 16-bit data. */
float starnn_half_to_float(ushort h)
{
	return as_float(starnn_half_to_f32_bits(h));
}

ushort starnn_float_to_half(float f)
{
	return starnn_f32_bits_to_half(as_uint(f));
}

float starnn_bf16_to_float(ushort h)
{
	return as_float(starnn_bf16_to_f32_bits(h));
}

ushort starnn_float_to_bf16(float f)
{
	return starnn_f32_bits_to_bf16(as_uint(f));
}

/* The bias gradient of a convolution pass (conv2d, convt2d), one work-item
 * per channel: db[oc] = beta db[oc] + the sum, in float, over the n samples
 * (ldy apart) and then the len values of channel oc of dy, in that order;
 * LD widens an element of type T to float. */
#define STARNN_BIAS_GRAD_KERNEL(name, T, LD)                                                              \
	kernel void name(ulong n, ulong o, ulong len, global const T *dy, ulong dyo, ulong ldy, float beta,  \
	                 global float *db, ulong dbo)                                                         \
	{                                                                                                     \
		const ulong oc = get_global_id(0);                                                            \
		if (oc >= o)                                                                                  \
			return;                                                                               \
		float acc = 0.0f;                                                                             \
		for (ulong s = 0; s < n; s++) {                                                               \
			global const T *d = dy + dyo + s * ldy + oc * len;                                    \
			for (ulong p = 0; p < len; p++)                                                       \
				acc += LD(d[p]);                                                              \
		}                                                                                             \
		global float *out = db + dbo + oc;                                                            \
		*out = beta == 0.0f ? acc : beta * *out + acc;                                                \
	}
