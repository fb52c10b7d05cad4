/* OpenCL kernels of axpy / scale / add (codelets/kernels/axpy.h): one
 * work-item per element, dimension 0 the columns, dimension 1 the rows
 * (codelets/opencl/common.h: the grid's columns are rounded up to 64, so
 * each kernel returns past cols). Each operand is rows x cols from element
 * off of its buffer, rows ld apart. Each result is the CPU kernel's, bit
 * for bit: the same operations in the same order, no contraction. */
#pragma OPENCL FP_CONTRACT OFF

/* y = alpha x + y: alpha x rounded, then the sum */
kernel void axpy(ulong cols, float alpha, global const float *x, ulong xo, ulong ldx, global float *y, ulong yo,
                 ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		y[yo + r * ldy + c] += alpha * x[xo + r * ldx + c];
}

/* y = alpha y */
kernel void scale(ulong cols, float alpha, global float *y, ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		y[yo + r * ldy + c] *= alpha;
}

/* z = alpha x + beta y: both products rounded, then the sum */
kernel void add(ulong cols, float alpha, global const float *x, ulong xo, ulong ldx, float beta,
                global const float *y, ulong yo, ulong ldy, global float *z, ulong zo, ulong ldz)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		z[zo + r * ldz + c] = alpha * x[xo + r * ldx + c] + beta * y[yo + r * ldy + c];
}
