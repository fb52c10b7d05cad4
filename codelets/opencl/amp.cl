/* OpenCL kernels of amp (codelets/kernels/amp.h). nonfinite: one
 * work-item per element (dimension 0 the columns, dimension 1 the rows;
 * the grid's columns are rounded up to 64, so each kernel returns past
 * cols) testing the exponent bits of the pattern, as the CPU kernel does
 * (no floating-point compare); a work-item that finds Inf or NaN sets the
 * flag to 1.0f (atomically: several may), nobody writes 0, so the flag
 * ends as on the CPU. scale_update: one work-item, the CPU kernel's
 * operations in its order (codelets/cpu/amp.c). */
#pragma OPENCL FP_CONTRACT OFF

kernel void nonfinite_32(ulong cols, global const uint *x, ulong xo, ulong ld, global float *flag, ulong fo)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols && (x[xo + r * ld + c] & 0x7f800000u) == 0x7f800000u)
		atomic_xchg(flag + fo, 1.0f);
}

/* mask: the exponent bits of fp16 (0x7c00) or bf16 (0x7f80). */
kernel void nonfinite_16(ulong cols, ushort mask, global const ushort *x, ulong xo, ulong ld, global float *flag,
                         ulong fo)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols && (x[xo + r * ld + c] & mask) == mask)
		atomic_xchg(flag + fo, 1.0f);
}

/* state: scale, good steps, skipped steps, applied steps (from element so). */
kernel void scale_update(int dynamic, int growth_interval, float growth, float backoff, float min_scale,
                         float max_scale, global float *state, ulong so, global const float *flag, ulong fo)
{
	if (get_global_id(0) != 0 || get_global_id(1) != 0)
		return;
	global float *s = state + so;
	float scale = s[0], good = s[1];
	if (flag[fo] != 0.0f) {
		if (dynamic) {
			scale *= backoff;
			scale = scale < min_scale ? min_scale : scale;
		}
		good = 0.0f;
		s[2] += 1.0f;
	} else {
		s[3] += 1.0f;
		good += 1.0f;
		if (dynamic && good >= (float)growth_interval) {
			scale *= growth;
			scale = scale > max_scale ? max_scale : scale;
			good = 0.0f;
		}
	}
	s[0] = scale;
	s[1] = good;
}
