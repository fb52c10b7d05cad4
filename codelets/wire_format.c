/* Wire format descriptors (declared in codelets/kernels/wire.h): plain C,
 * no StarPU, so that option parsers and their fuzz harness can use them. */

#include <string.h>

#include "runtime/base/error.h"
#include "codelets/kernels/wire.h"

static const char *const wire_names[STARNN_WIRE_NFORMATS] = {
	[STARNN_WIRE_FP32] = "fp32",   [STARNN_WIRE_TRUNC24] = "trunc24", [STARNN_WIRE_RNE24] = "rne24",
	[STARNN_WIRE_TRUNC16] = "trunc16", [STARNN_WIRE_RNE16] = "rne16", [STARNN_WIRE_BF16] = "bf16",
	[STARNN_WIRE_FP16] = "fp16",   [STARNN_WIRE_INT8] = "int8",       [STARNN_WIRE_FP8] = "fp8",
};

static const int wire_bits[STARNN_WIRE_NFORMATS] = {
	[STARNN_WIRE_FP32] = 32, [STARNN_WIRE_TRUNC24] = 24, [STARNN_WIRE_RNE24] = 24,
	[STARNN_WIRE_TRUNC16] = 16, [STARNN_WIRE_RNE16] = 16, [STARNN_WIRE_BF16] = 16,
	[STARNN_WIRE_FP16] = 16, [STARNN_WIRE_INT8] = 8, [STARNN_WIRE_FP8] = 8,
};

const char *starnn_wire_name(starnn_wire_format f)
{
	return (unsigned)f < STARNN_WIRE_NFORMATS ? wire_names[f] : "?";
}

int starnn_wire_parse(const char *name, starnn_wire_format *f)
{
	for (int i = 0; name && i < STARNN_WIRE_NFORMATS; i++)
		if (strcmp(name, wire_names[i]) == 0) {
			*f = (starnn_wire_format)i;
			return 0;
		}
	return starnn_error(STARNN_EINVAL,
	                    "unknown wire format '%s' (expected fp32, trunc24, rne24, trunc16, rne16, bf16, fp16, "
	                    "int8 or fp8)",
	                    name ? name : "(null)");
}

int starnn_wire_option(const char *option, const char *arg, int *wire)
{
	starnn_wire_format f = STARNN_WIRE_FP32; /* (set by the parse; GCC -O3 cannot tell) */
	if (arg && strcmp(arg, "none") == 0) {
		*wire = -1;
		return 0;
	}
	if (!arg || starnn_wire_parse(arg, &f) != 0)
		return starnn_error(STARNN_EINVAL,
		                    "%s is none, bf16, fp16, trunc16, rne16, trunc24, rne24, int8 or fp8, not '%s'", option,
		                    arg ? arg : "(null)");
	*wire = f == STARNN_WIRE_FP32 ? -1 : (int)f;
	return 0;
}

int starnn_wire_bits(starnn_wire_format f)
{
	return (unsigned)f < STARNN_WIRE_NFORMATS ? wire_bits[f] : 0;
}

size_t starnn_wire_bytes(starnn_wire_format f, size_t n)
{
	if (f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8)
		return n + 4 * ((n + STARNN_WIRE_BLOCK - 1) / STARNN_WIRE_BLOCK);
	return (size_t)starnn_wire_bits(f) / 8 * n;
}

int starnn_wire_ladder(starnn_wire_family family, int bits, starnn_wire_format *f)
{
	int rne = family == STARNN_WIRE_LADDER_RNE;
	if (family != STARNN_WIRE_LADDER_TRUNC && !rne)
		return starnn_error(STARNN_EINVAL, "wire ladder: unknown family %d", (int)family);
	switch (bits) {
	case 8: *f = STARNN_WIRE_INT8; return 0;
	case 16: *f = rne ? STARNN_WIRE_RNE16 : STARNN_WIRE_TRUNC16; return 0;
	case 24: *f = rne ? STARNN_WIRE_RNE24 : STARNN_WIRE_TRUNC24; return 0;
	case 32: *f = STARNN_WIRE_FP32; return 0;
	default: return starnn_error(STARNN_EINVAL, "wire ladder: no format of %d bits (8, 16, 24 or 32)", bits);
	}
}
