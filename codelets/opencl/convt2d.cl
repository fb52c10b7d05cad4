/* OpenCL kernels of convt2d (codelets/kernels/convt2d.h), the 2x2
 * stride-2 transposed convolution with bias, for NCHW activations (the
 * layout the CUDA kernels take too; blocked layouts and weight copies stay
 * on CPUs): direct loops, one work-item per output element, every sum in
 * fp32 in the loops' order, without contraction.
 *
 * Operands: each a buffer, the offset of its view's first element and its
 * row stride (elements): x / dx [n, c, h, w] samples ldx apart, y / dy
 * [n, o, 2h, 2w] samples ldy apart, w / dw [c, o, 2, 2] input channels ldw
 * apart, b / db [o] contiguous.
 *   y[s, oc, 2i+a, 2j+e] = b[oc] + sum_ci x[s, ci, i, j] w[ci, oc, a, e]
 * The grids: forward y (rows n*o, columns 4hw), backward data dx (rows
 * n*c, columns hw), weight gradient dw (rows c, columns 4o), bias gradient
 * db (one row of o).
 *
 * Dtypes: _fp32; _fp16 and _bf16 for 16-bit x, w, y, dy, dx (ushort), each
 * element widened exactly (common.cl), the sums in fp32 and a 16-bit
 * result rounded once, as the CPU's widening route; b, dw, db fp32. beta
 * is 0 (the output overwritten, not read) or 1 (added to it). The CPU
 * sums in other orders (sgemm, oneDNN): results agree within the
 * rounding bound of each sum. */
#pragma OPENCL FP_CONTRACT OFF

#define CONVT2D_LD_fp32(v) (v)
#define CONVT2D_ST_fp32(f) (f)
#define CONVT2D_LD_fp16(v) starnn_half_to_float(v)
#define CONVT2D_ST_fp16(f) starnn_float_to_half(f)
#define CONVT2D_LD_bf16(v) starnn_bf16_to_float(v)
#define CONVT2D_ST_bf16(f) starnn_float_to_bf16(f)

#define CONVT2D_KERNELS(dt, T)                                                                                 \
	kernel void convt2d_fwd_##dt(ulong c, ulong o, ulong h, ulong w, global const T *x, ulong xo, ulong ldx, \
	                             global const T *wt, ulong wo, ulong ldw, global const float *b, ulong bo,  \
	                             global T *y, ulong yo, ulong ldy)                                          \
	{                                                                                                      \
		const ulong p = get_global_id(0), r = get_global_id(1);                                        \
		if (p >= 4 * h * w)                                                                            \
			return;                                                                                \
		const ulong s = r / o, oc = r % o, py = p / (2 * w), px = p % (2 * w);                         \
		const ulong q = (py / 2) * w + px / 2, tap = oc * 4 + (py % 2) * 2 + px % 2;                   \
		float acc = b[bo + oc];                                                                        \
		for (ulong ci = 0; ci < c; ci++)                                                               \
			acc += CONVT2D_LD_##dt(x[xo + s * ldx + ci * h * w + q]) *                             \
			       CONVT2D_LD_##dt(wt[wo + ci * ldw + tap]);                                       \
		y[yo + s * ldy + oc * 4 * h * w + p] = CONVT2D_ST_##dt(acc);                                   \
	}                                                                                                      \
                                                                                                               \
	/* dx[s, ci, i, j] = beta dx + sum_{oc, a, e} w[ci, oc, a, e] dy[s, oc, 2i+a, 2j+e] */               \
	kernel void convt2d_bwd_data_##dt(ulong c, ulong o, ulong h, ulong w, global const T *wt, ulong wo,     \
	                                  ulong ldw, global const T *dy, ulong dyo, ulong ldy, float beta,    \
	                                  global T *dx, ulong dxo, ulong ldx)                                  \
	{                                                                                                      \
		const ulong q = get_global_id(0), r = get_global_id(1);                                        \
		if (q >= h * w)                                                                                \
			return;                                                                                \
		const ulong s = r / c, ci = r % c, i = q / w, j = q % w;                                       \
		float acc = 0.0f;                                                                              \
		for (ulong oc = 0; oc < o; oc++) {                                                             \
			global const T *d = dy + dyo + s * ldy + oc * 4 * h * w + 2 * i * 2 * w + 2 * j;       \
			global const T *wc = wt + wo + ci * ldw + oc * 4;                                      \
			for (ulong a = 0; a < 2; a++)                                                          \
				for (ulong e = 0; e < 2; e++)                                                  \
					acc += CONVT2D_LD_##dt(wc[a * 2 + e]) *                                \
					       CONVT2D_LD_##dt(d[a * 2 * w + e]);                              \
		}                                                                                              \
		global T *out = dx + dxo + s * ldx + ci * h * w + q;                                           \
		*out = CONVT2D_ST_##dt(beta == 0.0f ? acc : beta * CONVT2D_LD_##dt(*out) + acc);               \
	}                                                                                                      \
                                                                                                               \
	/* dw[ci, oc, a, e] = beta dw + sum_{s, i, j} x[s, ci, i, j] dy[s, oc, 2i+a, 2j+e] */                \
	kernel void convt2d_bwd_weight_##dt(ulong n, ulong o, ulong h, ulong w, global const T *x, ulong xo,    \
	                                    ulong ldx, global const T *dy, ulong dyo, ulong ldy, float beta,  \
	                                    global float *dw, ulong dwo, ulong ldw)                            \
	{                                                                                                      \
		const ulong t = get_global_id(0), ci = get_global_id(1);                                       \
		if (t >= 4 * o)                                                                                \
			return;                                                                                \
		const ulong oc = t / 4, a = t / 2 % 2, e = t % 2;                                              \
		float acc = 0.0f;                                                                              \
		for (ulong s = 0; s < n; s++) {                                                                \
			global const T *xc = x + xo + s * ldx + ci * h * w;                                    \
			global const T *d = dy + dyo + s * ldy + oc * 4 * h * w + a * 2 * w + e;               \
			for (ulong i = 0; i < h; i++)                                                          \
				for (ulong j = 0; j < w; j++)                                                  \
					acc += CONVT2D_LD_##dt(xc[i * w + j]) *                                \
					       CONVT2D_LD_##dt(d[2 * i * 2 * w + 2 * j]);                      \
		}                                                                                              \
		global float *out = dw + dwo + ci * ldw + t;                                                   \
		*out = beta == 0.0f ? acc : beta * *out + acc;                                                 \
	}                                                                                                      \
                                                                                                               \
	/* db[oc] = beta db + sum_{s, p} dy[s, oc, p] */          \
	STARNN_BIAS_GRAD_KERNEL(convt2d_bwd_bias_##dt, T, CONVT2D_LD_##dt)

CONVT2D_KERNELS(fp32, float)
CONVT2D_KERNELS(fp16, ushort)
CONVT2D_KERNELS(bf16, ushort)
