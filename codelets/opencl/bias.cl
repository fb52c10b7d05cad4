/* OpenCL kernels of bias_add / bias_grad (codelets/kernels/bias.h), fp32
 * and 16-bit y / dy (fp16, bf16 as ushort patterns). y, dy: n rows of
 * channels * inner elements from element off of their buffer, rows ld
 * apart; b, db: channels fp32 values from their offset.
 *
 * Each result is the CPU kernel's (codelets/cpu/bias.c), bit for bit:
 * bias_add is one work-item per element, the fp32 add (then one rounding
 * for 16-bit data, common.cl's conversions); bias_grad is one work-item
 * per channel running the CPU kernel's loops in its order: per row, the
 * 8 float lanes of sum_f32 gathered in double (16-bit rows in the CPU's
 * chunks of 512 widened elements), the row sums added in double, beta
 * applied in double, one rounding to fp32. Double arithmetic needs
 * cl_khr_fp64 (POCL has it). */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* y[r, k] += b[k / inner] over n x cols (cols = channels * inner) */
kernel void bias_add(ulong cols, ulong inner, global const float *b, ulong bo, global float *y, ulong yo, ulong ldy)
{
	const ulong k = get_global_id(0), r = get_global_id(1);
	if (k < cols)
		y[yo + r * ldy + k] += b[bo + k / inner];
}

#define BIAS_ADD_HALF(name, widen, narrow)                                                                      \
	kernel void name(ulong cols, ulong inner, global const float *b, ulong bo, global ushort *y, ulong yo,    \
	                 ulong ldy)                                                                               \
	{                                                                                                         \
		const ulong k = get_global_id(0), r = get_global_id(1);                                           \
		if (k < cols) {                                                                                   \
			global ushort *p = y + yo + r * ldy + k;                                                  \
			*p = narrow(widen(*p) + b[bo + k / inner]);                                               \
		}                                                                                                 \
	}

BIAS_ADD_HALF(bias_add_fp16, starnn_half_to_float, starnn_float_to_half)
BIAS_ADD_HALF(bias_add_bf16, starnn_bf16_to_float, starnn_float_to_bf16)

/* The CPU kernel's sum_f32 of len values: 8 float partial sums over the
 * whole groups of 8, the tail summed in double, then the 8 lanes added to
 * it in order. WIDEN turns an element into a float. */
#define BIAS_SUM_F32(name, T, WIDEN)                                                                             \
	double name(global const T *p, ulong len)                                                                \
	{                                                                                                        \
		float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                         \
		ulong i = 0;                                                                                     \
		for (; i + 8 <= len; i += 8)                                                                     \
			for (int j = 0; j < 8; j++)                                                              \
				acc[j] += WIDEN(p[i + j]);                                                       \
		double s = 0;                                                                                    \
		for (; i < len; i++)                                                                             \
			s += WIDEN(p[i]);                                                                        \
		for (int j = 0; j < 8; j++)                                                                      \
			s += acc[j];                                                                             \
		return s;                                                                                        \
	}

#define BIAS_AS_FLOAT(v) (v)
BIAS_SUM_F32(bias_sum_f32, float, BIAS_AS_FLOAT)
BIAS_SUM_F32(bias_sum_fp16, ushort, starnn_half_to_float)
BIAS_SUM_F32(bias_sum_bf16, ushort, starnn_bf16_to_float)

/* db = beta db + acc in double (db not read when beta == 0), rounded once */
void bias_store(double acc, float beta, global float *db)
{
	*db = beta == 0.0f ? (float)acc : (float)((double)beta * *db + acc);
}

/* one work-item per channel c: the CPU kernel's acc[c] */
kernel void bias_grad(ulong channels, ulong n, ulong inner, global const float *dy, ulong dyo, ulong lddy, float beta,
                      global float *db, ulong dbo)
{
	const ulong c = get_global_id(0);
	if (c >= channels)
		return;
	double acc = 0;
	for (ulong r = 0; r < n; r++) {
		global const float *row = dy + dyo + r * lddy + c * inner;
		if (inner == 1)
			acc += row[0];
		else
			acc += bias_sum_f32(row, inner);
	}
	bias_store(acc, beta, db + dbo + c);
}

/* The CPU's 16-bit rows: inner == 1 widened values added in double; else
 * each chunk of up to 512 (codelets/cpu/bias.c's CHUNK) summed by sum_f32. */
#define BIAS_CHUNK 512
#define BIAS_GRAD_HALF(name, sum, widen)                                                                        \
	kernel void name(ulong channels, ulong n, ulong inner, global const ushort *dy, ulong dyo, ulong lddy,    \
	                 float beta, global float *db, ulong dbo)                                                 \
	{                                                                                                         \
		const ulong c = get_global_id(0);                                                                 \
		if (c >= channels)                                                                                \
			return;                                                                                   \
		double acc = 0;                                                                                   \
		for (ulong r = 0; r < n; r++) {                                                                   \
			global const ushort *row = dy + dyo + r * lddy + c * inner;                               \
			if (inner == 1) {                                                                         \
				acc += widen(row[0]);                                                             \
				continue;                                                                         \
			}                                                                                         \
			for (ulong i0 = 0; i0 < inner; i0 += BIAS_CHUNK) {                                        \
				const ulong len = inner - i0 < BIAS_CHUNK ? inner - i0 : BIAS_CHUNK;              \
				acc += sum(row + i0, len);                                                        \
			}                                                                                         \
		}                                                                                                 \
		bias_store(acc, beta, db + dbo + c);                                                              \
	}

BIAS_GRAD_HALF(bias_grad_fp16, bias_sum_fp16, starnn_half_to_float)
BIAS_GRAD_HALF(bias_grad_bf16, bias_sum_bf16, starnn_bf16_to_float)
