/* OpenCL kernels of fill (codelets/kernels/fill.h): every element of a
 * rows x cols view (from element yo, rows ldy apart) becomes a bit
 * pattern: fp32 as its 32 bits (a NaN's payload, -0 and subnormals stay
 * as they are), fp16 and bf16 as their 16 bits. */
#pragma OPENCL FP_CONTRACT OFF

kernel void fill_32(ulong cols, uint bits, global uint *y, ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		y[yo + r * ldy + c] = bits;
}

kernel void fill_16(ulong cols, ushort bits, global ushort *y, ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		y[yo + r * ldy + c] = bits;
}
