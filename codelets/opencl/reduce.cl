/* OpenCL kernels of sum / sumsq (codelets/kernels/reduce.h): x is rows x
 * cols from element xo of its buffer, rows ldx apart; out one fp32 value
 * at element oo of its buffer. One work-item (launched over a 1 x 1 grid)
 * runs the CPU kernel's loops (codelets/cpu/reduce.c) in their order, so
 * the result is the CPU kernel's bit for bit: per row, 8 double lanes over
 * the whole groups of 8, the tail in double, the lanes added to it in
 * order; the row sums added in double; beta applied in double; one
 * rounding to fp32. A single work-item is slow on a large tensor, but the
 * order is the point (docs/opencl.md). Double arithmetic needs
 * cl_khr_fp64 (POCL has it). */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define REDUCE_LANES 8

/* the CPU kernel's sum_row (square 0) and sumsq_row (square 1) */
double reduce_row(global const float *x, ulong n, int square)
{
	double acc[REDUCE_LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
	ulong c = 0;
	for (; c + REDUCE_LANES <= n; c += REDUCE_LANES)
		for (int k = 0; k < REDUCE_LANES; k++) {
			const double v = (double)x[c + k];
			acc[k] += square ? v * v : v;
		}
	double s = 0;
	for (; c < n; c++) {
		const double v = (double)x[c];
		s += square ? v * v : v;
	}
	for (int k = 0; k < REDUCE_LANES; k++)
		s += acc[k];
	return s;
}

void reduce_all(ulong rows, ulong cols, global const float *x, ulong xo, ulong ldx, float beta, global float *out,
                int square)
{
	if (get_global_id(0) != 0 || get_global_id(1) != 0)
		return;
	double s = 0;
	for (ulong r = 0; r < rows; r++)
		s += reduce_row(x + xo + r * ldx, cols, square);
	/* out = beta * out + s, without reading out when beta == 0 */
	*out = (float)(beta != 0.0f ? (double)beta * (double)*out + s : s);
}

kernel void sum(ulong rows, ulong cols, global const float *x, ulong xo, ulong ldx, float beta, global float *out,
                ulong oo)
{
	reduce_all(rows, cols, x, xo, ldx, beta, out + oo, 0);
}

kernel void sumsq(ulong rows, ulong cols, global const float *x, ulong xo, ulong ldx, float beta, global float *out,
                  ulong oo)
{
	reduce_all(rows, cols, x, xo, ldx, beta, out + oo, 1);
}
