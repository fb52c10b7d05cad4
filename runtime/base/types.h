/* The types that the runtime and the kernels share: element types,
 * activation and weight layouts. Plain C (no StarPU): the bottom layer
 * (runtime/base/), which kernels include too. */
#ifndef STARNN_TYPES_H
#define STARNN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum starnn_dtype {
	STARNN_FP32 = 0,
	STARNN_FP16 = 1,
	STARNN_BF16 = 2,
	STARNN_U8 = 3,   /* bytes: wire buffers only (codelets/wire.h), not a compute precision */
} starnn_dtype;

/* The floating-point (compute) dtypes are 0 .. STARNN_NDTYPES - 1: the
 * operations' tables are indexed by them and their checks reject anything
 * else, u8 included. STARNN_NDTYPES_ALL counts the storage dtypes (u8 too):
 * tensors can be created, read and written with any of them. */
#define STARNN_NDTYPES 3
#define STARNN_NDTYPES_ALL 4

/* 4, 2, 2, 1; 0 if unknown. */
static inline size_t starnn_dtype_size(starnn_dtype dtype)
{
	static const size_t sizes[STARNN_NDTYPES_ALL] = {4, 2, 2, 1};
	return (unsigned)dtype < STARNN_NDTYPES_ALL ? sizes[dtype] : 0;
}
/* "fp32", "fp16", "bf16", "u8"; "?" if unknown. */
static inline const char *starnn_dtype_name(starnn_dtype dtype)
{
	static const char *const names[STARNN_NDTYPES_ALL] = {"fp32", "fp16", "bf16", "u8"};
	return (unsigned)dtype < STARNN_NDTYPES_ALL ? names[dtype] : "?";
}

/* A layout of weights [o][i][taps] (OIHW, taps = kh * kw) in blocks of ob
 * output x ib input channels, as oneDNN's OIhw8i8o (i_inner 0: o varies
 * fastest within a block) and OIhw8o8i (i_inner 1): block (o / ob, i / ib)
 * starts at ((o / ob) * ceil(i / ib) + i / ib) * taps * ob * ib, then tap t
 * at t * ob * ib. pair 0: fp32 elements. pair 2: bf16 elements, the
 * channel that varies slower within a block taken in pairs, the two of a
 * pair side by side (oneDNN's VNNI layouts for bf16 kernels: i_inner 0 is
 * ABcd8b16a2b, [i / 2][o][i % 2]; i_inner 1 is ABcd8a16b2a, [o / 2][i][o %
 * 2]). Channels are padded to whole blocks (the padding holds zeros;
 * writers leave it). The data begin at the first `align`-byte boundary at
 * or after `header` bytes into the copy (a descriptor of the layout comes
 * first). ob = 0: not such a layout. trans 1: a layout of the transpose
 * of the tensor it is a copy of, whose rows are then the layout's i and
 * whose columns its o x taps (a transposed convolution's PyTorch [c, o,
 * 2, 2] seen as the 1x1 convolution [4o, c] of its forward); 0 otherwise. */
struct starnn_blocked_weights {
	uint32_t o, i, taps, ob, ib, i_inner, header, align, pair, trans;
};

/* Where element (o, i, t) lies in the data of L, in elements. */
static inline size_t starnn_blocked_weights_index(const struct starnn_blocked_weights *L, size_t o, size_t i, size_t t)
{
	const size_t ibs = (L->i + L->ib - 1) / L->ib, p = L->pair ? L->pair : 1;
	const size_t blk = ((o / L->ob) * ibs + i / L->ib) * L->taps + t;
	const size_t bo = o % L->ob, bi = i % L->ib;
	const size_t in = L->i_inner ? (bo / p * L->ib + bi) * p + bo % p : (bi / p * L->ob + bo) * p + bi % p;
	return blk * L->ob * L->ib + in;
}

/* Bytes per element of L's data (fp32 or bf16). */
static inline size_t starnn_blocked_weights_es(const struct starnn_blocked_weights *L)
{
	return L->pair ? 2 : 4;
}

/* The elements of L's data, padding included; the bytes a copy in L takes
 * at most (header, alignment, data). */
static inline size_t starnn_blocked_weights_floats(const struct starnn_blocked_weights *L)
{
	return (size_t)(L->o + L->ob - 1) / L->ob * ((L->i + L->ib - 1) / L->ib) * L->taps * L->ob * L->ib;
}
static inline size_t starnn_blocked_weights_bytes(const struct starnn_blocked_weights *L)
{
	return (size_t)L->header + L->align + starnn_blocked_weights_floats(L) * starnn_blocked_weights_es(L);
}

/* The data of a copy in layout L whose storage begins at base (fp32; a
 * bf16 layout's are uint16_t). */
static inline float *starnn_blocked_weights_data(const struct starnn_blocked_weights *L, void *base)
{
	uintptr_t p = (uintptr_t)base + L->header, a = L->align ? L->align : 1;
	return (float *)(void *)((p + a - 1) / a * a);
}

/* The largest channel block (an NHWC tensor's channels, the kernels'
 * stack buffers). */
#define STARNN_CBLOCK_MAX 1024
/* Where channel k of a sample starts in a layout of blocks of b channels
 * (b = 1: NCHW), hw pixels per channel; its pixels are b floats apart. */
static inline size_t starnn_chan_offset(size_t k, size_t hw, size_t b)
{
	return (k / b) * hw * b + k % b;
}

#ifdef __cplusplus
}
#endif
#endif
