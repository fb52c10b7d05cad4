/* OpenCL kernels of mse_fwd / mse_bwd (codelets/kernels/mse.h). pred,
 * target, dpred are rows x cols from element off of their buffers, rows ld
 * apart; loss is one float at element lo. Each result is the CPU kernel's
 * bit for bit (codelets/cpu/mse.c):
 *
 * - the forward is ONE work-item doing the CPU kernel's loops in its
 *   order: rows one after the other, each in segments (the whole row in
 *   fp32, 512 elements for 16-bit pred, as the CPU widens them in chunks),
 *   each segment summed in double in 8 interleaved partial sums plus the
 *   tail, then its partials added in order. Slow on a real device; the
 *   order is what makes it the CPU's bits (docs/opencl.md). Needs double
 *   precision (cl_khr_fp64): without it the forward kernels are absent and
 *   their launch fails with CL_INVALID_KERNEL_NAME;
 * - the backward is one work-item per element (dimension 0 the columns,
 *   dimension 1 the rows; the grid's columns are rounded up to 64, so each
 *   kernel returns past cols): k (p - t), 16-bit pred widened and the
 *   result times the loss scale rounded once to pred's dtype (common.cl's
 *   conversions). */
#pragma OPENCL FP_CONTRACT OFF

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define MSE_LANES 8

/* sqdiff_row of codelets/cpu/mse.c on n elements from p[i], t[j]. */
#define MSE_SQDIFF(name, T, WIDEN)                                                                            \
	double name(global const T *p, global const float *t, ulong n)                                        \
	{                                                                                                     \
		double acc[MSE_LANES];                                                                        \
		for (int k = 0; k < MSE_LANES; k++)                                                           \
			acc[k] = 0.0;                                                                         \
		ulong c = 0;                                                                                  \
		for (; c + MSE_LANES <= n; c += MSE_LANES)                                                    \
			for (int k = 0; k < MSE_LANES; k++) {                                                 \
				const double d = (double)WIDEN(p[c + k]) - (double)t[c + k];                   \
				acc[k] += d * d;                                                              \
			}                                                                                     \
		double s = 0.0;                                                                               \
		for (; c < n; c++) {                                                                          \
			const double d = (double)WIDEN(p[c]) - (double)t[c];                                   \
			s += d * d;                                                                           \
		}                                                                                             \
		for (int k = 0; k < MSE_LANES; k++)                                                           \
			s += acc[k];                                                                          \
		return s;                                                                                     \
	}

/* loss = beta loss + scale sum (beta 0: the loss is not read). */
#define MSE_FWD(name, T, sqdiff, chunk)                                                                       \
	kernel void name(ulong rows, ulong cols, global const T *p, ulong po, ulong ldp, global const float *t,   \
	                 ulong to, ulong ldt, float scale, float beta, global float *loss, ulong lo)              \
	{                                                                                                     \
		if (get_global_id(0) != 0 || get_global_id(1) != 0)                                           \
			return;                                                                               \
		const ulong seg = (chunk) ? (chunk) : cols;                                                   \
		double s = 0.0;                                                                               \
		for (ulong r = 0; r < rows; r++) {                                                            \
			if (!(chunk))                                                                         \
				s += sqdiff(p + po + r * ldp, t + to + r * ldt, cols);                        \
			else                                                                                  \
				for (ulong c = 0; c < cols; c += seg)                                         \
					s += sqdiff(p + po + r * ldp + c, t + to + r * ldt + c,              \
					            cols - c < seg ? cols - c : seg);                        \
		}                                                                                             \
		s *= (double)scale;                                                                           \
		loss[lo] = (float)(beta != 0.0f ? (double)beta * (double)loss[lo] + s : s);                   \
	}

#define MSE_AS_IS(v) (v)
MSE_SQDIFF(mse_sqdiff_fp32, float, MSE_AS_IS)
MSE_SQDIFF(mse_sqdiff_fp16, ushort, starnn_half_to_float)
MSE_SQDIFF(mse_sqdiff_bf16, ushort, starnn_bf16_to_float)
MSE_FWD(mse_fwd_fp32, float, mse_sqdiff_fp32, 0)
MSE_FWD(mse_fwd_fp16, ushort, mse_sqdiff_fp16, 512)
MSE_FWD(mse_fwd_bf16, ushort, mse_sqdiff_bf16, 512)
#endif

/* dpred = k (pred - target), k = 2 scale (the fp32 mse_bwd). */
kernel void mse_bwd_fp32(ulong cols, float k, global const float *p, ulong po, ulong ldp, global const float *t,
                         ulong to, ulong ldt, global float *d, ulong dof, ulong ldd)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		d[dof + r * ldd + c] = k * (p[po + r * ldp + c] - t[to + r * ldt + c]);
}

/* dpred = (k (pred - target)) ls, ls = state[so] when has_state else 1,
 * rounded once to pred's dtype (mse_bwd_half). */
#define MSE_BWD_HALF(name, T, WIDEN, NARROW)                                                                  \
	kernel void name(ulong cols, float k, global const T *p, ulong po, ulong ldp, global const float *t,      \
	                 ulong to, ulong ldt, int has_state, global const float *state, ulong so, global T *d,     \
	                 ulong dof, ulong ldd)                                                                    \
	{                                                                                                     \
		const ulong c = get_global_id(0), r = get_global_id(1);                                       \
		if (c < cols) {                                                                               \
			const float ls = has_state ? state[so] : 1.0f;                                        \
			d[dof + r * ldd + c] = NARROW((k * (WIDEN(p[po + r * ldp + c]) - t[to + r * ldt + c])) * ls); \
		}                                                                                             \
	}

#define MSE_AS_IS_BWD(v) (v)
MSE_BWD_HALF(mse_bwd_half_fp32, float, MSE_AS_IS_BWD, MSE_AS_IS_BWD)
MSE_BWD_HALF(mse_bwd_half_fp16, ushort, starnn_half_to_float, starnn_float_to_half)
MSE_BWD_HALF(mse_bwd_half_bf16, ushort, starnn_bf16_to_float, starnn_float_to_bf16)
