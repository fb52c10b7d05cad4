/* wire: compress / decompress of fp32 tensors that cross a memory boundary
 * (host <-> GPU, rank <-> rank). The sending side runs compress (fp32 ->
 * wire bytes), the receiving side decompress (wire bytes -> fp32); the wire
 * buffer is a 1-D u8 tensor of starnn_wire_bytes(f, n) bytes.
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
 * n = 0: starnn_wire_bytes is 0 and the kernels do nothing; tensors always
 * have n >= 1, so the submit functions never see it.
 *
 * The ladder of adaptive weight precision is 8 -> 16 -> 24 -> 32 bits:
 * starnn_wire_ladder gives the format of a width for the truncating family
 * (int8, trunc16, trunc24, fp32) or the rounding one (int8, rne16, rne24,
 * fp32).
 *
 * Shapes: x (compress) and y (decompress) are rows x cols with their own
 * leading dimension (views are fine, as for convert); their n = rows * cols
 * values are taken in row-major order, blocks of 256 running across rows.
 * The wire is a dense byte array.
 *
 * Naming: performance models starnn_compress_<format> and
 * starnn_decompress_<format>, codelets / task names compress_<format> and
 * decompress_<format>. */
#ifndef STARNN_WIRE_H
#define STARNN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/tensor.h"
#include "runtime/train/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The formats, their names, sizes and the ladder: runtime/train/wire.h. */

/* CPU kernels (codelets/cpu/wire.c): x rows x cols (leading dimension ldx)
 * -> wire of starnn_wire_bytes(f, rows * cols) bytes, and back into y.
 * Return 0, or STARNN_EINVAL for an unknown format. */
int starnn_compress_cpu(starnn_wire_format f, size_t rows, size_t cols, const float *x, size_t ldx, uint8_t *wire);
int starnn_decompress_cpu(starnn_wire_format f, size_t rows, size_t cols, const uint8_t *wire, float *y, size_t ldy);

/* CUDA kernels (codelets/cuda/wire.cu), asynchronous on stream, the same
 * results bit for bit (NaN payloads included). Block formats: one thread
 * block per block of 256 values, the max found by a shared-memory
 * reduction. */
int starnn_compress_cuda(starnn_wire_format f, size_t rows, size_t cols, const float *x, size_t ldx, uint8_t *wire,
                         void *stream);
int starnn_decompress_cuda(starnn_wire_format f, size_t rows, size_t cols, const uint8_t *wire, float *y, size_t ldy,
                           void *stream);

/* Task submission. x: fp32, any shape (a view is fine), n = numel(x);
 * wire: u8 with numel(wire) = starnn_wire_bytes(f, n), contiguous. Errors
 * (STARNN_EINVAL, with the tensors described): NULL, unknown format, wrong
 * dtype, wrong wire size, a strided wire. */
int starnn_compress(starnn_tensor *x, starnn_wire_format f, starnn_tensor *wire);
/* wire as above for n = numel(y); y: fp32, any shape (a view is fine). */
int starnn_decompress(starnn_tensor *wire, starnn_wire_format f, starnn_tensor *y);

#ifdef __cplusplus
}
#endif
#endif
