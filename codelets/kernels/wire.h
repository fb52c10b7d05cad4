/* Kernels of wire: compress (fp32 -> wire bytes) and decompress (wire bytes
 * -> fp32) in one of the wire formats below. Shapes: x (compress) and y
 * (decompress) are rows x cols with their own leading dimension; their n =
 * rows * cols values are taken in row-major order, blocks of 256 running
 * across rows. The wire is a dense byte array. n = 0: the kernels do
 * nothing. The CUDA kernels are asynchronous on stream (a cudaStream_t),
 * the same results as the CPU ones bit for bit (NaN payloads included);
 * block formats run one thread block per block of 256 values, the max
 * found by a shared-memory reduction. The OpenCL kernels (enqueued on an
 * OpenCL queue) give the same bits too.
 *
 * Formats (n values; multi-byte fields little-endian, the host order of
 * every machine starnn runs on):
 *   fp32     4 bytes/value, a copy (the "32 bits" level of the ladder).
 *   trunc24  3 bytes/value: bits 8..31 of the fp32 pattern (sign, exponent,
 *            15 mantissa bits), byte 3i = bits 8..15, 3i+1 = bits 16..23,
 *            3i+2 = bits 24..31; decoded with the low byte zero.
 *            Truncation toward zero (the adaptive-weight-precision paper):
 *            relative error < 2^-15.
 *   rne24    the same bytes, rounded to nearest even: relative error
 *            <= 2^-16.
 *   trunc16  2 bytes/value: bits 16..31 (bf16 by truncation): < 2^-7.
 *   rne16    the same, rounded to nearest even: <= 2^-8.
 *   bf16     rne16 under its usual name: the same bytes, bit for bit those
 *            of starnn_float_to_bf16 (runtime/base/half.h).
 *   fp16     2 bytes/value, IEEE binary16 rounded to nearest even
 *            (starnn_float_to_half): subnormals kept, |x| >= 65520 -> Inf.
 *   int8     blocks of 256 values (the last one shorter), one fp32 scale
 *            per block: s = max|x| / 127 over the block's finite values,
 *            code q = round-half-even(x / s) clamped to [-127, 127], value
 *            q * s. A block of zeros has s = 0. -0 decodes as +0. Every
 *            operation is one IEEE fp32 operation, rounded to nearest (the
 *            quotient x / s too, before its rounding to an integer), so
 *            CPU and CUDA agree bit for bit.
 *   fp8      the same blocks; codes are OCP FP8 E4M3FN (bias 7, 3 mantissa
 *            bits, max 448, subnormals m * 2^-9, no Inf, S.1111.111 NaN):
 *            s = max|x| / 448, code = e4m3(x / s) rounded to nearest even
 *            (saturating at the largest code), value e4m3 * s.
 *   Byte layout of the block formats: the nb = ceil(n / 256) fp32 scales
 *   first (bytes 0 .. 4 nb - 1, scale b at 4 b), then the n codes in order
 *   (code i at 4 nb + i): 4 nb + n bytes, nothing else. A subnormal (or
 *   zero) s whose max / s exceeds the top code goes one ulp up (tiny blocks
 *   then stay exact instead of dividing by 0), so every finite value is
 *   within the codes' range: |x - x'| <= s (1/2 + 2^-16) for int8, and relative 2^-4
 *   plus 2^-10 s (E4M3 subnormals) for fp8.
 *
 * Non-finite values:
 *   - fp32: copied. trunc / rne / bf16: a NaN becomes a quiet NaN with its
 *     sign and top payload bits (the quiet bit is set, so a NaN whose kept
 *     bits would be zero stays a NaN), Inf stays Inf; rne, like bf16
 *     conversion, rounds the finite values from halfway between the
 *     largest kept value and 2^128 up (patterns >= 0x7f7fff80 for rne24,
 *     >= 0x7f7f8000 for rne16) to Inf; truncation never makes an Inf. fp16: NaN ->
 *     quiet NaN, overflow -> Inf.
 *   - int8 / fp8: exact, and without extra bytes. The scale is computed
 *     over the finite values. A NaN is the code int8 -128 (0x80) / fp8
 *     S.1111.111, which no finite value uses; it decodes as the quiet NaN
 *     0x7fc00000 (fp8 keeps the sign). A block that holds an Inf is marked
 *     by the sign bit of its scale (a scale is otherwise >= +0): in such a
 *     block the top codes mean +-Inf (int8 +-127, fp8 S.1111.110 = +-448)
 *     and finite values use the range below them (int8: s = max|x| / 126,
 *     codes [-126, 126]; fp8: s = max|x| / 416, codes up to S.1111.101).
 *     Blocks without Inf keep the whole range.
 *
 * The format codes, names, sizes and the adaptive ladder are declared
 * below too (codelets/wire_format.c): every part of starnn that names a
 * format (options, the training layer's edges, AWP) takes them from here. */
#ifndef STARNN_KERNELS_WIRE_H
#define STARNN_KERNELS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/features.h"
#ifdef STARNN_USE_OPENCL
#include "runtime/base/opencl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum starnn_wire_format {
	STARNN_WIRE_FP32 = 0,
	STARNN_WIRE_TRUNC24 = 1,
	STARNN_WIRE_RNE24 = 2,
	STARNN_WIRE_TRUNC16 = 3,
	STARNN_WIRE_RNE16 = 4,
	STARNN_WIRE_BF16 = 5,  /* rne16's bytes under bf16's name */
	STARNN_WIRE_FP16 = 6,
	STARNN_WIRE_INT8 = 7,
	STARNN_WIRE_FP8 = 8,   /* E4M3FN */
} starnn_wire_format;

#define STARNN_WIRE_NFORMATS 9
#define STARNN_WIRE_BLOCK 256   /* values per scale of int8 and fp8 */

/* The formats' descriptors (codelets/wire_format.c; plain C, no StarPU):
 * names, option parsing, sizes, the adaptive ladder. */
/* "fp32", "trunc24", "rne24", "trunc16", "rne16", "bf16", "fp16", "int8",
 * "fp8"; "?" for an unknown value. */
const char *starnn_wire_name(starnn_wire_format f);
/* The inverse; STARNN_EINVAL (with the list of names) for anything else. */
int starnn_wire_parse(const char *name, starnn_wire_format *f);
/* A program option naming a wire format or "none": *wire = the format, or
 * -1 for none (fp32 counts as none: nothing to compress). STARNN_EINVAL
 * with a message naming the option and the choices otherwise. */
int starnn_wire_option(const char *option, const char *arg, int *wire);
/* Bytes of the wire of n values: 4n, 3n, 2n, or n + 4 ceil(n / 256) for the
 * block formats; 0 for an unknown format. */
size_t starnn_wire_bytes(starnn_wire_format f, size_t n);
/* Bits per value on the ladder: 32, 24, 16 or 8 (the block scales not
 * counted); 0 for an unknown format. */
int starnn_wire_bits(starnn_wire_format f);

typedef enum starnn_wire_family {
	STARNN_WIRE_LADDER_TRUNC = 0, /* int8 -> trunc16 -> trunc24 -> fp32 (the paper) */
	STARNN_WIRE_LADDER_RNE = 1,   /* int8 -> rne16 -> rne24 -> fp32 */
} starnn_wire_family;
/* The format of `bits` (8, 16, 24 or 32) in a family; STARNN_EINVAL for any
 * other width or family. */
int starnn_wire_ladder(starnn_wire_family family, int bits, starnn_wire_format *f);


/* Bytes per value of the formats without block scales: 4 (fp32), 3
 * (trunc24, rne24) or 2 (the 16-bit ones); 1 (a code) for int8 and fp8. */
static inline size_t starnn_wire_value_bytes(starnn_wire_format f)
{
	switch (f) {
	case STARNN_WIRE_FP32: return 4;
	case STARNN_WIRE_TRUNC24:
	case STARNN_WIRE_RNE24: return 3;
	case STARNN_WIRE_INT8:
	case STARNN_WIRE_FP8: return 1;
	default: return 2;
	}
}

/* codelets/cpu/wire.c: x rows x cols (leading dimension ldx) -> wire, and
 * back into y. Return 0, or STARNN_EINVAL (with the error recorded) for an
 * unknown format. */
int starnn_compress_cpu(starnn_wire_format f, size_t rows, size_t cols, const float *x, size_t ldx, uint8_t *wire);
int starnn_decompress_cpu(starnn_wire_format f, size_t rows, size_t cols, const uint8_t *wire, float *y, size_t ldy);

/* codelets/cuda/wire.cu: the same; STARNN_EINVAL (not recorded) for an
 * unknown format. */
int starnn_compress_cuda(starnn_wire_format f, size_t rows, size_t cols, const float *x, size_t ldx, uint8_t *wire,
                         void *stream);
int starnn_decompress_cuda(starnn_wire_format f, size_t rows, size_t cols, const uint8_t *wire, float *y, size_t ldy,
                           void *stream);

#ifdef STARNN_USE_OPENCL
/* codelets/opencl/wire.c, on ctx->queue (runtime/base/opencl.h): the
 * kernels of the program starnn_opencl_program_wire
 * (codelets/opencl/wire.cl), the CPU kernels' bytes and values bit for
 * bit. x / y: a cl_mem with the offset of the view's first element and its
 * leading dimension (elements); wire: a cl_mem and the byte offset of the
 * dense wire. The block formats enqueue two kernels (the scales, then the
 * codes). CL_SUCCESS, or the OpenCL error (ctx->failed_* say where;
 * CL_INVALID_VALUE for an unknown format). */
extern const struct starnn_opencl_program starnn_opencl_program_wire;
cl_int starnn_compress_opencl(struct starnn_opencl_ctx *ctx, starnn_wire_format f, size_t rows, size_t cols,
                              cl_mem x, size_t x_off, size_t ldx, cl_mem wire, size_t wire_off);
cl_int starnn_decompress_opencl(struct starnn_opencl_ctx *ctx, starnn_wire_format f, size_t rows, size_t cols,
                                cl_mem wire, size_t wire_off, cl_mem y, size_t y_off, size_t ldy);
#endif

#ifdef __cplusplus
}
#endif
#endif
