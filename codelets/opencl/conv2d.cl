/* OpenCL kernels of conv2d (codelets/kernels/conv2d.h) for NCHW
 * activations (the layout the CUDA kernels take too; the blocked layouts
 * and packed weights stay on CPUs): direct loops, one work-item per output
 * element, every sum in fp32 in the loops' order, without contraction.
 * Stride 1, 'same' zero padding (pad = k / 2), odd square k.
 *
 * Operands: each a buffer, the offset of its view's first element and its
 * row stride (elements): x / dx [n, c, h, w] samples ldx apart, y / dy
 * [n, o, h, w] samples ldy apart, w / dw [o, c, k, k] output channels ldw
 * apart, b / db [o] contiguous. The grids: forward y (rows n*o, columns
 * h*w), backward data dx (rows n*c, columns h*w), weight gradient dw (rows
 * o, columns c*k*k), bias gradient db (one row of o).
 *
 * Dtypes: _fp32; _fp16 and _bf16 for 16-bit x, w, y, dy, dx (ushort), each
 * element widened exactly (common.cl), the sums in fp32 and a 16-bit
 * result rounded once, as the CPU's widening route; b, dw, db are fp32.
 * beta is 0 (the output overwritten, not read) or 1 (added to it, widened
 * first for 16-bit dx). The CPU sums in other orders (im2col + sgemm,
 * oneDNN): results agree within the rounding bound of each sum. */
#pragma OPENCL FP_CONTRACT OFF

#define CONV2D_LD_fp32(v) (v)
#define CONV2D_ST_fp32(f) (f)
#define CONV2D_LD_fp16(v) starnn_half_to_float(v)
#define CONV2D_ST_fp16(f) starnn_float_to_half(f)
#define CONV2D_LD_bf16(v) starnn_bf16_to_float(v)
#define CONV2D_ST_bf16(f) starnn_float_to_bf16(f)

#define CONV2D_KERNELS(dt, T)                                                                                  \
	/* y[s, oc, py, px] = b[oc] + sum_{ci, i, j} w[oc, ci, i, j] x[s, ci, py + i - pad, px + j - pad] */ \
	kernel void conv2d_fwd_##dt(ulong c, ulong o, ulong h, ulong w, ulong k, global const T *x, ulong xo,   \
	                            ulong ldx, global const T *wt, ulong wo, ulong ldw, global const float *b,  \
	                            ulong bo, global T *y, ulong yo, ulong ldy)                                 \
	{                                                                                                      \
		const ulong p = get_global_id(0), r = get_global_id(1);                                        \
		if (p >= h * w)                                                                                \
			return;                                                                                \
		const ulong s = r / o, oc = r % o;                                                             \
		const long py = (long)(p / w), px = (long)(p % w), pad = (long)(k / 2);                        \
		float acc = b[bo + oc];                                                                        \
		for (ulong ci = 0; ci < c; ci++) {                                                             \
			global const T *xc = x + xo + s * ldx + ci * h * w;                                    \
			global const T *wc = wt + wo + oc * ldw + ci * k * k;                                  \
			for (long i = 0; i < (long)k; i++) {                                                   \
				const long sy = py + i - pad;                                                  \
				if (sy < 0 || sy >= (long)h)                                                   \
					continue;                                                              \
				for (long j = 0; j < (long)k; j++) {                                           \
					const long sx = px + j - pad;                                          \
					if (sx < 0 || sx >= (long)w)                                           \
						continue;                                                      \
					acc += CONV2D_LD_##dt(wc[i * (long)k + j]) *                           \
					       CONV2D_LD_##dt(xc[sy * (long)w + sx]);                          \
				}                                                                              \
			}                                                                                      \
		}                                                                                              \
		y[yo + s * ldy + oc * h * w + p] = CONV2D_ST_##dt(acc);                                        \
	}                                                                                                      \
                                                                                                               \
	/* dx[s, ci, py, px] = beta dx + sum_{oc, i, j} w[oc, ci, i, j] dy[s, oc, py - i + pad, px - j + pad] */ \
	kernel void conv2d_bwd_data_##dt(ulong c, ulong o, ulong h, ulong w, ulong k, global const T *dy,       \
	                                 ulong dyo, ulong ldy, global const T *wt, ulong wo, ulong ldw,        \
	                                 float beta, global T *dx, ulong dxo, ulong ldx)                       \
	{                                                                                                      \
		const ulong p = get_global_id(0), r = get_global_id(1);                                        \
		if (p >= h * w)                                                                                \
			return;                                                                                \
		const ulong s = r / c, ci = r % c;                                                             \
		const long py = (long)(p / w), px = (long)(p % w), pad = (long)(k / 2);                        \
		float acc = 0.0f;                                                                              \
		for (ulong oc = 0; oc < o; oc++) {                                                             \
			global const T *dyc = dy + dyo + s * ldy + oc * h * w;                                 \
			global const T *wc = wt + wo + oc * ldw + ci * k * k;                                  \
			for (long i = 0; i < (long)k; i++) {                                                   \
				const long sy = py - i + pad;                                                  \
				if (sy < 0 || sy >= (long)h)                                                   \
					continue;                                                              \
				for (long j = 0; j < (long)k; j++) {                                           \
					const long sx = px - j + pad;                                          \
					if (sx < 0 || sx >= (long)w)                                           \
						continue;                                                      \
					acc += CONV2D_LD_##dt(wc[i * (long)k + j]) *                           \
					       CONV2D_LD_##dt(dyc[sy * (long)w + sx]);                         \
				}                                                                              \
			}                                                                                      \
		}                                                                                              \
		global T *d = dx + dxo + s * ldx + ci * h * w + p;                                             \
		*d = CONV2D_ST_##dt(beta == 0.0f ? acc : beta * CONV2D_LD_##dt(*d) + acc);                     \
	}                                                                                                      \
                                                                                                               \
	/* dw[oc, ci, i, j] = beta dw + sum_{s, py, px} dy[s, oc, py, px] x[s, ci, py + i - pad, px + j - pad] */ \
	kernel void conv2d_bwd_weight_##dt(ulong n, ulong c, ulong h, ulong w, ulong k, global const T *x,      \
	                                   ulong xo, ulong ldx, global const T *dy, ulong dyo, ulong ldy,      \
	                                   float beta, global float *dw, ulong dwo, ulong ldw)                 \
	{                                                                                                      \
		const ulong q = get_global_id(0), oc = get_global_id(1);                                       \
		if (q >= c * k * k)                                                                            \
			return;                                                                                \
		const ulong ci = q / (k * k);                                                                  \
		const long i = (long)(q / k % k), j = (long)(q % k), pad = (long)(k / 2);                      \
		const long y0 = i - pad < 0 ? pad - i : 0, y1 = (long)h + (i - pad > 0 ? pad - i : 0);         \
		const long x0 = j - pad < 0 ? pad - j : 0, x1 = (long)w + (j - pad > 0 ? pad - j : 0);         \
		float acc = 0.0f;                                                                              \
		for (ulong s = 0; s < n; s++) {                                                                \
			global const T *dyc = dy + dyo + s * ldy + oc * h * w;                                 \
			global const T *xc = x + xo + s * ldx + ci * h * w;                                    \
			for (long py = y0; py < y1; py++)                                                      \
				for (long px = x0; px < x1; px++)                                              \
					acc += CONV2D_LD_##dt(dyc[py * (long)w + px]) *                        \
					       CONV2D_LD_##dt(xc[(py + i - pad) * (long)w + px + j - pad]);    \
		}                                                                                              \
		global float *d = dw + dwo + oc * ldw + q;                                                     \
		*d = beta == 0.0f ? acc : beta * *d + acc;                                                     \
	}                                                                                                      \
                                                                                                               \
	/* db[oc] = beta db + sum_{s, p} dy[s, oc, p] */          \
	STARNN_BIAS_GRAD_KERNEL(conv2d_bwd_bias_##dt, T, CONV2D_LD_##dt)

CONV2D_KERNELS(fp32, float)
CONV2D_KERNELS(fp16, ushort)
CONV2D_KERNELS(bf16, ushort)
