/* CUDA kernels of wire (formats: codelets/wire.h): the arithmetic of
 * codelets/cpu/wire.c on the same bit patterns, so the wire bytes and the
 * decoded values are those of the CPU kernels bit for bit (fp32 division
 * and multiplication are IEEE round-to-nearest here: no fast-math).
 *
 * Per-value formats: one thread per value over the rows x cols view.
 * Block formats: one thread block of 256 threads per block of 256 values
 * (grid-stride over the blocks); the finite max |x| (as a bit pattern) and
 * the Inf flag are reduced in shared memory, thread 0 computes the scale. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "codelets/cuda/common.cuh"
#include "codelets/kernels/wire.h"
#include "runtime/base/error.h"

#define SIGN 0x80000000u

__device__ static inline uint32_t f2u(float f) { return __float_as_uint(f); }
__device__ static inline float u2f(uint32_t u) { return __uint_as_float(u); }

/* Value i (row-major) of a rows x cols view with leading dimension ld. */
__device__ static inline size_t at(size_t i, size_t cols, size_t ld) { return (i / cols) * ld + i % cols; }

__device__ static inline uint32_t top_bits(uint32_t u, int drop, int rne)
{
	uint32_t kept = rne ? (u + ((1u << (drop - 1)) - 1) + ((u >> drop) & 1u)) >> drop : u >> drop;
	uint32_t quiet = (u >> drop) | (0x00400000u >> drop);
	return (u & 0x7fffffffu) > 0x7f800000u ? quiet : kept;
}

/* runtime/base/half.h's starnn_float_to_half / starnn_half_to_float (the F16C
 * results of the CPU kernels, NaN payloads included). */
__device__ static inline uint16_t to_half(uint32_t u)
{
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u)
		return (uint16_t)(sign | 0x7c00u);
	if (a < 0x38800000u) {
		if (a < 0x33000000u)
			return sign;
		uint32_t mant = (a & 0x7fffffu) | 0x800000u;
		int shift = 126 - (int)(a >> 23);
		uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	a -= 0x38000000u;
	a += 0xfffu + ((a >> 13) & 1u);
	return (uint16_t)(sign | (a >> 13));
}

__device__ static inline uint32_t from_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
	if (exp == 0x1fu)
		return sign | 0x7f800000u | (mant << 13);
	if (exp == 0) {
		if (mant == 0)
			return sign;
		return sign | f2u((float)mant * 5.9604644775390625e-8f);
	}
	return sign | ((exp + 112u) << 23) | (mant << 13);
}

__global__ static void compress_values(int f, size_t n, size_t cols, const float *x, size_t ldx, uint8_t *w)
{
	STARNN_GRID_1D(i, n) {
		uint32_t u = f2u(x[at(i, cols, ldx)]);
		switch (f) {
		case STARNN_WIRE_FP32: memcpy(w + 4 * i, &u, 4); break;
		case STARNN_WIRE_TRUNC24:
		case STARNN_WIRE_RNE24: {
			uint32_t k = top_bits(u, 8, f == STARNN_WIRE_RNE24);
			w[3 * i] = (uint8_t)k, w[3 * i + 1] = (uint8_t)(k >> 8), w[3 * i + 2] = (uint8_t)(k >> 16);
			break;
		}
		case STARNN_WIRE_FP16: ((uint16_t *)w)[i] = to_half(u); break;
		default: ((uint16_t *)w)[i] = (uint16_t)top_bits(u, 16, f != STARNN_WIRE_TRUNC16);
		}
	}
}

__global__ static void decompress_values(int f, size_t n, size_t cols, const uint8_t *w, float *y, size_t ldy)
{
	STARNN_GRID_1D(i, n) {
		uint32_t u;
		switch (f) {
		case STARNN_WIRE_FP32: memcpy(&u, w + 4 * i, 4); break;
		case STARNN_WIRE_TRUNC24:
		case STARNN_WIRE_RNE24:
			u = (uint32_t)w[3 * i] << 8 | (uint32_t)w[3 * i + 1] << 16 | (uint32_t)w[3 * i + 2] << 24;
			break;
		case STARNN_WIRE_FP16: u = from_half(((const uint16_t *)w)[i]); break;
		default: u = (uint32_t)((const uint16_t *)w)[i] << 16;
		}
		y[at(i, cols, ldy)] = u2f(u);
	}
}

/* ------------------------------------------------------- block formats */

#define BLOCK STARNN_WIRE_BLOCK
#define FP8_NAN 0x7fu
#define FP8_TOP 0x7eu
#define FP8_TOP_INF 0x7du

__device__ static inline uint32_t e4m3_code(float v, uint32_t topc)
{
	uint32_t a = f2u(v);
	uint32_t b = a - (120u << 23);
	b += 0x7ffffu + ((b >> 20) & 1u);
	uint32_t cn = b >> 20;
	uint32_t cs = (uint32_t)__float2int_rn(__fmul_rn(v, 512.0f));
	uint32_t c = a < 0x3c800000u ? cs : cn;
	return c > topc ? topc : c;
}

__global__ static void compress_blocks(int fp8, size_t n, size_t cols, const float *x, size_t ldx, uint8_t *w)
{
	__shared__ uint32_t smax[BLOCK], sinf[BLOCK];
	__shared__ float sscale;
	size_t nb = (n + BLOCK - 1) / BLOCK;
	uint8_t *codes = w + 4 * nb;
	unsigned t = threadIdx.x;
	for (size_t b = blockIdx.x; b < nb; b += gridDim.x) {
		size_t i = b * BLOCK + t;
		uint32_t u = i < n ? f2u(x[at(i, cols, ldx)]) : 0u, a = u & 0x7fffffffu;
		smax[t] = a < 0x7f800000u ? a : 0u;
		sinf[t] = a == 0x7f800000u;
		__syncthreads();
		for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
			if (t < s) {
				smax[t] = max(smax[t], smax[t + s]);
				sinf[t] |= sinf[t + s];
			}
			__syncthreads();
		}
		uint32_t inf = sinf[0];
		if (t == 0) {
			float top = fp8 ? (inf ? 416.0f : 448.0f) : (inf ? 126.0f : 127.0f);
			float mx = u2f(smax[0]);
			float s = __fdiv_rn(mx, top);
			if (s < 0x1p-126f && __fdiv_rn(mx, s) > top)
				s = u2f(f2u(s) + 1);
			sscale = s;
			uint32_t sb = f2u(s) | (inf ? SIGN : 0u);
			memcpy(w + 4 * b, &sb, 4);
		}
		__syncthreads();
		float s = sscale, d = s > 0.0f ? s : 1.0f;
		if (i < n) {
			uint8_t c;
			if (fp8) {
				float v = __fdiv_rn(u2f(a < 0x7f800000u ? a : 0u), d);
				uint32_t cc = e4m3_code(v, inf ? FP8_TOP_INF : FP8_TOP);
				cc = a == 0x7f800000u ? FP8_TOP : cc;
				cc = a > 0x7f800000u ? FP8_NAN : cc;
				c = (uint8_t)(cc | (u >> 24 & 0x80u));
			} else {
				float top = inf ? 126.0f : 127.0f;
				float q = __fdiv_rn(a < 0x7f800000u ? u2f(u) : 0.0f, d);
				q = fminf(fmaxf(q, -top), top);
				c = (uint8_t)(int8_t)__float2int_rn(q);
				uint8_t ci = inf ? 127u : 0u;
				ci = (u & SIGN) ? (uint8_t)-ci : ci;
				c = a == 0x7f800000u ? ci : c;
				c = a > 0x7f800000u ? (uint8_t)0x80u : c;
			}
			codes[i] = c;
		}
		__syncthreads(); /* smax / sscale are reused by the next block */
	}
}

__global__ static void decompress_blocks(int fp8, size_t n, size_t cols, const uint8_t *w, float *y, size_t ldy)
{
	size_t nb = (n + BLOCK - 1) / BLOCK;
	const uint8_t *codes = w + 4 * nb;
	for (size_t b = blockIdx.x; b < nb; b += gridDim.x) {
		size_t i = b * BLOCK + threadIdx.x;
		if (i >= n)
			continue;
		uint32_t sb;
		memcpy(&sb, w + 4 * b, 4);
		float s = u2f(sb & ~SIGN);
		uint32_t inf = sb >> 31, u;
		if (fp8) {
			uint32_t c = codes[i] & 0x7fu, sign = (uint32_t)(codes[i] & 0x80u) << 24;
			uint32_t e = c >> 3, m = c & 7u;
			float v = e ? u2f(((e + 120u) << 23) | (m << 20)) : __fmul_rn((float)(int)m, 0x1p-9f);
			u = f2u(__fmul_rn(v, s));
			u = inf && c == FP8_TOP ? 0x7f800000u : u;
			u = c == FP8_NAN ? 0x7fc00000u : u;
			u |= sign;
		} else {
			int c = (int8_t)codes[i];
			u = f2u(__fmul_rn((float)c, s));
			u = inf && (c == 127 || c == -127) ? ((c < 0 ? SIGN : 0u) | 0x7f800000u) : u;
			u = c == -128 ? 0x7fc00000u : u;
		}
		y[at(i, cols, ldy)] = u2f(u);
	}
}

/* ------------------------------------------------------------------ kernels */

static int is_block(starnn_wire_format f) { return f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8; }

static unsigned block_grid(size_t n)
{
	size_t nb = (n + BLOCK - 1) / BLOCK;
	return (unsigned)(nb < 65535 ? nb : 65535);
}

extern "C" int starnn_compress_cuda(starnn_wire_format f, size_t rows, size_t cols, const float *x, size_t ldx,
                                    uint8_t *wire, void *stream)
{
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return STARNN_EINVAL;
	size_t n = rows * cols;
	if (n == 0)
		return 0;
	if (is_block(f))
		compress_blocks<<<block_grid(n), BLOCK, 0, (cudaStream_t)stream>>>(f == STARNN_WIRE_FP8, n, cols, x, ldx,
		                                                                    wire);
	else
		starnn_launch_1d(n, stream, compress_values, (int)f, n, cols, x, ldx, wire);
	return 0;
}

extern "C" int starnn_decompress_cuda(starnn_wire_format f, size_t rows, size_t cols, const uint8_t *wire, float *y,
                                      size_t ldy, void *stream)
{
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return STARNN_EINVAL;
	size_t n = rows * cols;
	if (n == 0)
		return 0;
	if (is_block(f))
		decompress_blocks<<<block_grid(n), BLOCK, 0, (cudaStream_t)stream>>>(f == STARNN_WIRE_FP8, n, cols, wire, y,
		                                                                      ldy);
	else
		starnn_launch_1d(n, stream, decompress_values, (int)f, n, cols, wire, y, ldy);
	return 0;
}
