/* OpenCL kernels of wire (formats: codelets/kernels/wire.h): the arithmetic
 * of codelets/cpu/wire.c on the same bit patterns, so that the wire bytes
 * and the decoded values are the CPU kernels' bit for bit (NaN payloads
 * included): integer operations, and for the block formats the CPU's fp32
 * divisions and multiplications in its order (correctly rounded with the
 * build options; subnormal scales need a device with CL_FP_DENORM).
 *
 * x (compress) and y (decompress) are rows x cols views from element xo /
 * yo, rows ldx / ldy apart; value i = r * cols + c of the view (row-major)
 * is at wire byte wo + bpv * i (per-value formats), or its code at wo + 4 nb
 * + i after the nb block scales (int8, fp8). The wire is bytes (uchar): its
 * offset need not be aligned, so multi-byte fields are read and written
 * byte by byte, little-endian.
 *
 * Per-value formats and the block formats' codes and values: one
 * work-item per value over the rows x cols grid. The block formats'
 * scales: wire_block_scales first, one work-item per block of 256 values
 * (the CPU's finite max |x| and Inf flag, integer reductions whose order
 * does not matter, and its scale); the in-order queue runs the codes
 * kernel after it, which reads each scale back from the wire. */
#pragma OPENCL FP_CONTRACT OFF

/* The formats (starnn_wire_format) */
#define W_FP32 0u
#define W_TRUNC24 1u
#define W_RNE24 2u
#define W_TRUNC16 3u
#define W_RNE16 4u
#define W_BF16 5u
#define W_FP16 6u

#define WIRE_BLOCK 256ul
#define ROUND_MAGIC 12582912.0f /* 1.5 * 2^23: (t + M) - M rounds |t| <= 2^22 to nearest even */
#define FP8_NAN 0x7f
#define FP8_TOP 0x7e
#define FP8_TOP_INF 0x7d
#define SIGN 0x80000000u

/* The top 32 - drop bits of u, truncated or rounded to nearest even; a NaN
 * gets its quiet bit (codelets/cpu/wire.c's top_bits). */
uint wire_top_bits(uint u, uint drop, int rne)
{
	const uint kept = rne ? (u + ((1u << (drop - 1u)) - 1u) + ((u >> drop) & 1u)) >> drop : u >> drop;
	const uint quiet = (u >> drop) | (0x00400000u >> drop);
	return (u & 0x7fffffffu) > 0x7f800000u ? quiet : kept;
}

uint wire_get_u32(global const uchar *w)
{
	return (uint)w[0] | (uint)w[1] << 8 | (uint)w[2] << 16 | (uint)w[3] << 24;
}

void wire_put_bytes(global uchar *w, uint v, uint nbytes)
{
	for (uint j = 0; j < nbytes; j++)
		w[j] = (uchar)(v >> (8u * j));
}

/* Per-value formats: fmt is a starnn_wire_format below int8. */
kernel void wire_compress_values(uint fmt, ulong cols, global const uint *x, ulong xo, ulong ldx,
                                 global uchar *w, ulong wo)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c >= cols)
		return;
	const uint u = x[xo + r * ldx + c];
	const ulong i = r * cols + c;
	switch (fmt) {
	case W_FP32: wire_put_bytes(w + wo + 4 * i, u, 4); break;
	case W_TRUNC24:
	case W_RNE24: wire_put_bytes(w + wo + 3 * i, wire_top_bits(u, 8, fmt == W_RNE24), 3); break;
	case W_FP16: wire_put_bytes(w + wo + 2 * i, starnn_f32_bits_to_half(u), 2); break;
	default: wire_put_bytes(w + wo + 2 * i, wire_top_bits(u, 16, fmt != W_TRUNC16), 2);
	}
}

kernel void wire_decompress_values(uint fmt, ulong cols, global const uchar *w, ulong wo, global uint *y,
                                   ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c >= cols)
		return;
	const ulong i = r * cols + c;
	global const uchar *p;
	uint u;
	switch (fmt) {
	case W_FP32: u = wire_get_u32(w + wo + 4 * i); break;
	case W_TRUNC24:
	case W_RNE24:
		p = w + wo + 3 * i;
		u = (uint)p[0] << 8 | (uint)p[1] << 16 | (uint)p[2] << 24;
		break;
	case W_FP16:
		p = w + wo + 2 * i;
		u = starnn_half_to_f32_bits((ushort)((uint)p[0] | (uint)p[1] << 8));
		break;
	default:
		p = w + wo + 2 * i;
		u = (uint)p[0] << 16 | (uint)p[1] << 24;
	}
	y[yo + r * ldy + c] = u;
}

/* ------------------------------------------------------- block formats */

/* One work-item per block b (dimension 0): the finite max |x| of its
 * values (as a bit pattern: non-negative floats order as integers) and
 * whether one is an Inf; the scale s = max / top, one ulp up where a
 * subnormal (or zero) s has max / s above top (block_scale); the scale's
 * bits, with the sign bit for a block that holds an Inf, at wire byte
 * wo + 4 b. */
kernel void wire_block_scales(uint fp8, ulong nb, ulong n, ulong cols, global const uint *x, ulong xo, ulong ldx,
                              global uchar *w, ulong wo)
{
	const ulong b = get_global_id(0);
	if (b >= nb)
		return;
	const ulong start = b * WIRE_BLOCK, end = n - start < WIRE_BLOCK ? n : start + WIRE_BLOCK;
	uint m = 0, inf = 0;
	for (ulong i = start; i < end; i++) {
		const uint a = x[xo + (i / cols) * ldx + i % cols] & 0x7fffffffu;
		const uint fin = a < 0x7f800000u ? a : 0u;
		m = fin > m ? fin : m;
		inf |= a == 0x7f800000u;
	}
	const float top = fp8 ? (inf ? 416.0f : 448.0f) : (inf ? 126.0f : 127.0f);
	const float max = as_float(m);
	float s = max / top;
	if (s < 0x1p-126f && max / s > top)
		s = as_float(as_uint(s) + 1u);
	wire_put_bytes(w + wo + 4 * b, as_uint(s) | (inf ? SIGN : 0u), 4);
}

/* E4M3 code of a finite v >= 0, nearest even, saturating at topc
 * (codelets/cpu/wire.c's e4m3_code: the normal range by rebiasing the
 * exponent and rounding the mantissa, below 2^-6 v * 2^9 rounded). */
int wire_e4m3_code(float v, int topc)
{
	const int a = as_int(v);
	int b = a - (120 << 23);
	b += 0x7ffff + ((b >> 20) & 1);
	const int cn = b >> 20;
	const int cs = (int)((v * 512.0f + ROUND_MAGIC) - ROUND_MAGIC);
	const int c = a < 0x3c800000 ? cs : cn;
	return c > topc ? topc : c;
}

/* The codes, one work-item per value, each with its block's scale (read
 * back from the wire: wire_block_scales ran first). */
kernel void wire_block_codes(uint fp8, ulong nb, ulong cols, global const uint *x, ulong xo, ulong ldx,
                             global uchar *w, ulong wo)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c >= cols)
		return;
	const ulong i = r * cols + c;
	const uint sb = wire_get_u32(w + wo + 4 * (i / WIRE_BLOCK)), inf = sb >> 31;
	const float s = as_float(sb & ~SIGN), d = s > 0.0f ? s : 1.0f;
	const int u = (int)x[xo + r * ldx + c], a = u & 0x7fffffff;
	int code;
	if (fp8) {
		const int topc = inf ? FP8_TOP_INF : FP8_TOP;
		const float v = as_float(a < 0x7f800000 ? a : 0);
		code = wire_e4m3_code(v / d, topc);
		code = a == 0x7f800000 ? FP8_TOP : code;
		code = a > 0x7f800000 ? FP8_NAN : code;
		code |= (u >> 24) & 0x80;
	} else {
		const int top = inf ? 126 : 127, inf_code = inf ? 127 : 0;
		const float v = as_float(a < 0x7f800000 ? u : 0); /* non-finite values enter as 0 */
		const float t = (v / d + ROUND_MAGIC) - ROUND_MAGIC;
		code = (int)t;
		code = code > top ? top : code;
		code = code < -top ? -top : code;
		code = a == 0x7f800000 ? (u < 0 ? -inf_code : inf_code) : code;
		code = a > 0x7f800000 ? -128 : code;
	}
	w[wo + 4 * nb + i] = (uchar)code;
}

kernel void wire_block_values(uint fp8, ulong nb, ulong cols, global const uchar *w, ulong wo, global uint *y,
                              ulong yo, ulong ldy)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c >= cols)
		return;
	const ulong i = r * cols + c;
	const uint sb = wire_get_u32(w + wo + 4 * (i / WIRE_BLOCK)), inf = sb >> 31;
	const float s = as_float(sb & ~SIGN);
	const uint q = w[wo + 4 * nb + i];
	uint u;
	if (fp8) {
		const int code = (int)(q & 0x7fu), e = code >> 3, m = code & 7, sub = e == 0;
		/* 2^(e-7) (1 + m/8); a subnormal m 2^-9 as 2^-6 (1 + m/8) - 2^-6,
		 * exact (fp8_values) */
		const float vn = as_float(((e + 120 + sub) << 23) | (m << 20)), vo = as_float(sub ? 0x3c800000 : 0);
		u = as_uint((vn - vo) * s);
		u = inf && code == FP8_TOP ? 0x7f800000u : u;
		u = code == FP8_NAN ? 0x7fc00000u : u;
		u |= (q & 0x80u) << 24;
	} else {
		const int code = (int)(char)q;
		u = as_uint((float)code * s);
		u = inf && (code == 127 || code == -127) ? ((uint)code & SIGN) | 0x7f800000u : u;
		u = code == -128 ? 0x7fc00000u : u;
	}
	y[yo + r * ldy + c] = u;
}
