/* OpenCL kernels of maxpool (2x2, stride 2; codelets/kernels/maxpool.h),
 * NCHW, fp32, fp16 and bf16 (16-bit data as ushort patterns). x, dx: n
 * rows of c * h * w elements; y, dy: n rows of c * (h/2) * (w/2); each from
 * element off of its buffer, rows ld apart.
 *
 * Each result is the CPU kernel's (codelets/cpu/maxpool.c) bit for bit:
 * the forward is one work-item per element of y, running pick()'s steps
 * (take: v > m or v is NaN) on the window's bit patterns, so the maximum
 * is the very input (16-bit data widened and rounded back as the CPU
 * kernel does: common.cl's conversions). The backward is one work-item
 * per element of dx: it recomputes its window's choice with the CPU
 * kernel's selects (route_row_blk) and takes its own element's gradient,
 * then beta * dx added in fp32 (beta 0: dx not read); elements of an odd
 * last row / column get beta * dx + 0 (0 when beta is 0), as scale_run. */
#pragma OPENCL FP_CONTRACT OFF

int maxpool_take(float v, float m)
{
	return (v > m) | (v != v);
}

/* Bits of fp32 data as they are, and the 16-bit formats' widening /
 * rounding (both exact on a maximum, but for a NaN's quieting, as on the CPU). */
#define MAXPOOL_BITS(u) (u)

#define MAXPOOL(sfx, T, WIDEN, NARROW)                                                                          \
	kernel void maxpool_fwd_##sfx(ulong c, ulong h, ulong w, global const T *x, ulong xo, ulong ldx,          \
	                              global T *y, ulong yo, ulong ldy)                                           \
	{                                                                                                         \
		const ulong ho = h / 2, wo = w / 2, e = get_global_id(0), r = get_global_id(1);                   \
		if (e >= c * ho * wo)                                                                             \
			return;                                                                                   \
		const ulong j = e % wo, t = e / wo, i = t % ho, ch = t / ho;                                      \
		global const T *x0 = x + xo + r * ldx + ch * h * w + 2 * i * w + 2 * j, *x1 = x0 + w;             \
		const uint a = WIDEN(x0[0]), b = WIDEN(x0[1]), cc = WIDEN(x1[0]), d = WIDEN(x1[1]);               \
		uint m = a;                                                                                       \
		m = maxpool_take(as_float(b), as_float(m)) ? b : m;                                               \
		m = maxpool_take(as_float(cc), as_float(m)) ? cc : m;                                             \
		m = maxpool_take(as_float(d), as_float(m)) ? d : m;                                               \
		y[yo + r * ldy + e] = NARROW(m);                                                                  \
	}                                                                                                         \
                                                                                                                  \
	kernel void maxpool_bwd_##sfx(ulong c, ulong h, ulong w, global const T *x, ulong xo, ulong ldx,          \
	                              global const T *dy, ulong dyo, ulong lddy, float beta, global T *dx,        \
	                              ulong dxo, ulong lddx)                                                      \
	{                                                                                                         \
		const ulong ho = h / 2, wo = w / 2, e = get_global_id(0), r = get_global_id(1);                   \
		if (e >= c * h * w)                                                                               \
			return;                                                                                   \
		const ulong q = e % w, t = e / w, p = t % h, ch = t / h;                                          \
		global T *dp = dx + dxo + r * lddx + e;                                                           \
		if (p >= 2 * ho || q >= 2 * wo) { /* an odd last row / column: scale_run */                       \
			*dp = NARROW(as_uint(beta == 0.0f ? 0.0f : beta * as_float(WIDEN(*dp)) + 0.0f));          \
			return;                                                                                   \
		}                                                                                                 \
		const ulong i = p / 2, j = q / 2;                                                                 \
		global const T *x0 = x + xo + r * ldx + ch * h * w + 2 * i * w + 2 * j, *x1 = x0 + w;             \
		const float a = as_float(WIDEN(x0[0])), b = as_float(WIDEN(x0[1])), cc = as_float(WIDEN(x1[0])),  \
		            d = as_float(WIDEN(x1[1]));                                                           \
		const float gj = as_float(WIDEN(dy[dyo + r * lddy + ch * ho * wo + i * wo + j]));                 \
		float m = a, g0 = gj, g1 = 0.0f, g2 = 0.0f, g3 = 0.0f;                                            \
		int tk = maxpool_take(b, m);                                                                      \
		m = tk ? b : m, g0 = tk ? 0.0f : g0, g1 = tk ? gj : 0.0f;                                         \
		tk = maxpool_take(cc, m);                                                                         \
		m = tk ? cc : m, g0 = tk ? 0.0f : g0, g1 = tk ? 0.0f : g1, g2 = tk ? gj : 0.0f;                   \
		tk = maxpool_take(d, m);                                                                          \
		g0 = tk ? 0.0f : g0, g1 = tk ? 0.0f : g1, g2 = tk ? 0.0f : g2, g3 = tk ? gj : 0.0f;               \
		const int k = (int)(p - 2 * i) * 2 + (int)(q - 2 * j);                                            \
		float g = k == 0 ? g0 : k == 1 ? g1 : k == 2 ? g2 : g3;                                           \
		if (beta != 0.0f)                                                                                 \
			g += beta * as_float(WIDEN(*dp));                                                         \
		*dp = NARROW(as_uint(g));                                                                         \
	}

MAXPOOL(fp32, uint, MAXPOOL_BITS, MAXPOOL_BITS)
MAXPOOL(fp16, ushort, starnn_half_to_f32_bits, starnn_f32_bits_to_half)
MAXPOOL(bf16, ushort, starnn_bf16_to_f32_bits, starnn_f32_bits_to_bf16)
