/* OpenCL kernels of relu_fwd / relu_bwd (codelets/kernels/relu.h): one
 * work-item per element, dimension 0 the columns, dimension 1 the rows
 * (the grid's columns are rounded up to 64: each kernel returns past
 * cols). Each operand is rows x cols from element off of its buffer, rows
 * ld apart; y may be x and dx may be dy (the same buffer, offset and ld).
 * The CPU kernels' selects (codelets/cpu/relu.c), so the results are
 * theirs bit for bit: fp32 on the values (NaN propagates forward, -0
 * stays -0), the 16-bit kernels on the bit patterns, never through a
 * float. */
#pragma OPENCL FP_CONTRACT OFF

kernel void relu_fwd(ulong cols, global const float *x, ulong xo, ulong ldx, global float *y, ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols) {
		const float v = x[xo + r * ldx + c];
		y[yo + r * ldy + c] = v < 0.0f ? 0.0f : v;
	}
}

kernel void relu_bwd(ulong cols, global const float *x, ulong xo, ulong ldx, global const float *dy, ulong dyo,
                     ulong lddy, global float *dx, ulong dxo, ulong lddx)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols) {
		const float g = dy[dyo + r * lddy + c];
		dx[dxo + r * lddx + c] = x[xo + r * ldx + c] > 0.0f ? g : 0.0f;
	}
}

/* 16-bit patterns (inf: 0x7c00 for fp16, 0x7f80 for bf16): magnitude m =
 * bits & 0x7fff, Inf is m == inf, NaN m > inf. v < 0: sign set, 0 < m <=
 * inf; v > 0: sign clear, 0 < m <= inf. */
kernel void relu_fwd_16(ulong cols, ushort inf, global const ushort *x, ulong xo, ulong ldx, global ushort *y,
                        ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols) {
		const ushort v = x[xo + r * ldx + c], m = v & (ushort)0x7fffu;
		const int neg = (v & 0x8000u) && m != 0 && m <= inf;
		y[yo + r * ldy + c] = neg ? (ushort)0 : v;
	}
}

kernel void relu_bwd_16(ulong cols, ushort inf, global const ushort *x, ulong xo, ulong ldx, global const ushort *dy,
                        ulong dyo, ulong lddy, global ushort *dx, ulong dxo, ulong lddx)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols) {
		const ushort v = x[xo + r * ldx + c], m = v & (ushort)0x7fffu;
		const int pos = !(v & 0x8000u) && m != 0 && m <= inf;
		dx[dxo + r * lddx + c] = pos ? dy[dyo + r * lddy + c] : (ushort)0;
	}
}
