/* OpenCL kernels of concat (codelets/kernels/concat.h), fp32, fp16 and
 * bf16: one work-item per element; each operand rows x cols from element
 * off of its buffer, rows ld apart. Each result is the CPU kernel's
 * (codelets/cpu/concat.c) bit for bit: copies (the forward, a backward
 * with beta 0) move the bit patterns (uint, ushort); an accumulation is
 * d += s (beta 1) or d = beta d + s, in fp32, 16-bit data widened and the
 * result rounded once (common.cl's conversions). */
#pragma OPENCL FP_CONTRACT OFF

/* cat[r, :ca] = a[r], cat[r, ca:] = b[r]: a grid of rows x (ca + cb) */
#define CONCAT_FWD(name, T)                                                                                     \
	kernel void name(ulong ca, ulong cb, global const T *a, ulong ao, ulong lda, global const T *b, ulong bo, \
	                 ulong ldb, global T *cat, ulong co, ulong ldc)                                           \
	{                                                                                                         \
		const ulong k = get_global_id(0), r = get_global_id(1);                                           \
		if (k < ca)                                                                                       \
			cat[co + r * ldc + k] = a[ao + r * lda + k];                                              \
		else if (k < ca + cb)                                                                             \
			cat[co + r * ldc + k] = b[bo + r * ldb + k - ca];                                         \
	}

CONCAT_FWD(concat_fwd_32, uint)
CONCAT_FWD(concat_fwd_16, ushort)

/* One part of the backward, rows x cols: d = beta d + s (beta 0: a copy,
 * d not read); WIDEN / NARROW between T and float. */
#define CONCAT_BWD(name, T, WIDEN, NARROW)                                                                      \
	kernel void name(ulong cols, global const T *s, ulong so, ulong lds, float beta, global T *d, ulong dof,  \
	                 ulong ldd)                                                                               \
	{                                                                                                         \
		const ulong c = get_global_id(0), r = get_global_id(1);                                           \
		if (c >= cols)                                                                                    \
			return;                                                                                   \
		const T sv = s[so + r * lds + c];                                                                 \
		global T *dp = d + dof + r * ldd + c;                                                             \
		if (beta == 0.0f) {                                                                               \
			*dp = sv;                                                                                 \
			return;                                                                                   \
		}                                                                                                 \
		float dv = WIDEN(*dp);                                                                            \
		if (beta == 1.0f)                                                                                 \
			dv += WIDEN(sv);                                                                          \
		else                                                                                              \
			dv = beta * dv + WIDEN(sv);                                                               \
		*dp = NARROW(dv);                                                                                 \
	}

#define CONCAT_AS_FLOAT(u) as_float(u)
#define CONCAT_AS_UINT(f) as_uint(f)
CONCAT_BWD(concat_bwd_fp32, uint, CONCAT_AS_FLOAT, CONCAT_AS_UINT)
CONCAT_BWD(concat_bwd_fp16, ushort, starnn_half_to_float, starnn_float_to_half)
CONCAT_BWD(concat_bwd_bf16, ushort, starnn_bf16_to_float, starnn_float_to_bf16)
