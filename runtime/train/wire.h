/* Wire formats: what a tensor crossing a memory boundary is sent as
 * (their byte layouts, rounding and non-finite values: codelets/wire.h,
 * whose compress / decompress codelets produce and read them). Here the
 * descriptors every part of starnn shares: names, option parsing, sizes,
 * the adaptive ladder. */
#ifndef STARNN_RUNTIME_WIRE_H
#define STARNN_RUNTIME_WIRE_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif
#endif
