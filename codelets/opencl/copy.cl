/* OpenCL kernels of copy (codelets/kernels/copy.h): y = x as bits, rows x
 * cols elements of 4 or 2 bytes, each side from its own offset with its
 * own leading dimension (elements); x and y do not overlap. A kernel
 * rather than clEnqueueCopyBufferRect: views of one buffer (two channel
 * parts of a tensor) interleave their rows, which some implementations'
 * overlap check refuses. */
#pragma OPENCL FP_CONTRACT OFF

kernel void copy_32(ulong cols, global const uint *x, ulong xo, ulong ldx, global uint *y, ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		y[yo + r * ldy + c] = x[xo + r * ldx + c];
}

kernel void copy_16(ulong cols, global const ushort *x, ulong xo, ulong ldx, global ushort *y, ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		y[yo + r * ldy + c] = x[xo + r * ldx + c];
}
