/* OpenCL kernels of convert (codelets/kernels/convert.h): one per ordered
 * pair of fp32, fp16 and bf16, on bit patterns with the integer arithmetic
 * of runtime/base/half.h (codelets/opencl/common.cl), so that every result
 * is the CPU kernels' bit for bit: round to nearest even, Inf kept, NaN
 * quiet with its sign, fp16 subnormals exact, overflow to Inf; fp16 <->
 * bf16 through fp32 (exact), one rounding. Rows x cols views, each side
 * from its own offset with its own leading dimension (elements). */
#pragma OPENCL FP_CONTRACT OFF

#define STARNN_CONVERT(name, S, D, expr)                                                                      \
	kernel void name(ulong cols, global const S *x, ulong xo, ulong ldx, global D *y, ulong yo, ulong ldy) \
	{                                                                                                     \
		const ulong c = get_global_id(0), r = get_global_id(1);                                        \
		if (c < cols) {                                                                                \
			const S v = x[xo + r * ldx + c];                                                       \
			y[yo + r * ldy + c] = (expr);                                                          \
		}                                                                                              \
	}

STARNN_CONVERT(convert_fp32_to_fp16, uint, ushort, starnn_f32_bits_to_half(v))
STARNN_CONVERT(convert_fp32_to_bf16, uint, ushort, starnn_f32_bits_to_bf16(v))
STARNN_CONVERT(convert_fp16_to_fp32, ushort, uint, starnn_half_to_f32_bits(v))
STARNN_CONVERT(convert_bf16_to_fp32, ushort, uint, starnn_bf16_to_f32_bits(v))
STARNN_CONVERT(convert_fp16_to_bf16, ushort, ushort, starnn_f32_bits_to_bf16(starnn_half_to_f32_bits(v)))
STARNN_CONVERT(convert_bf16_to_fp16, ushort, ushort, starnn_f32_bits_to_half(starnn_bf16_to_f32_bits(v)))
