/* CPU kernels of copy: one memcpy when both sides are dense, else one per
 * row; and the rows of weights into a blocked layout (the optimizers' copies). */
#include <stdint.h>
#include <string.h>

#include "codelets/cpu/halfrow.h"
#include "codelets/cpu/simd.h"
#include "codelets/kernels/copy.h"
#include "runtime/base/half.h"

void starnn_copy_cpu(size_t rows, size_t cols, size_t elem_size, const void *x, size_t ldx, void *y, size_t ldy)
{
	const char *xs = x;
	char *yd = y;
	if ((ldx == cols && ldy == cols) || rows == 1) {
		memcpy(yd, xs, rows * cols * elem_size);
		return;
	}
	for (size_t r = 0; r < rows; r++)
		memcpy(yd + r * ldy * elem_size, xs + r * ldx * elem_size, cols * elem_size);
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define PUT_X86 1
#endif

#ifdef PUT_X86
/* r[k][l] <- r[l][k] */
__attribute__((target("avx2"))) static inline void transpose8(__m256 r[8])
{
	__m256 a0 = _mm256_unpacklo_ps(r[0], r[1]), a1 = _mm256_unpackhi_ps(r[0], r[1]);
	__m256 a2 = _mm256_unpacklo_ps(r[2], r[3]), a3 = _mm256_unpackhi_ps(r[2], r[3]);
	__m256 a4 = _mm256_unpacklo_ps(r[4], r[5]), a5 = _mm256_unpackhi_ps(r[4], r[5]);
	__m256 a6 = _mm256_unpacklo_ps(r[6], r[7]), a7 = _mm256_unpackhi_ps(r[6], r[7]);
	__m256 b0 = _mm256_shuffle_ps(a0, a2, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 b1 = _mm256_shuffle_ps(a0, a2, _MM_SHUFFLE(3, 2, 3, 2));
	__m256 b2 = _mm256_shuffle_ps(a1, a3, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 b3 = _mm256_shuffle_ps(a1, a3, _MM_SHUFFLE(3, 2, 3, 2));
	__m256 b4 = _mm256_shuffle_ps(a4, a6, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 b5 = _mm256_shuffle_ps(a4, a6, _MM_SHUFFLE(3, 2, 3, 2));
	__m256 b6 = _mm256_shuffle_ps(a5, a7, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 b7 = _mm256_shuffle_ps(a5, a7, _MM_SHUFFLE(3, 2, 3, 2));
	r[0] = _mm256_permute2f128_ps(b0, b4, 0x20), r[1] = _mm256_permute2f128_ps(b1, b5, 0x20);
	r[2] = _mm256_permute2f128_ps(b2, b6, 0x20), r[3] = _mm256_permute2f128_ps(b3, b7, 0x20);
	r[4] = _mm256_permute2f128_ps(b0, b4, 0x31), r[5] = _mm256_permute2f128_ps(b1, b5, 0x31);
	r[6] = _mm256_permute2f128_ps(b2, b6, 0x31), r[7] = _mm256_permute2f128_ps(b3, b7, 0x31);
}

/* One whole 8 x 8 block of every tap (T >= 8): w at its first output row
 * and input channel, rows ldw apart; 8 x 8 transposes of contiguous loads.
 * OIhw8i8o, blk[t][i][o] = w[o][i T + t]: the 8 rows' columns c = 8j ..
 * 8j + 7 transposed are (o = 0 .. 7) vectors of columns c = i T + t.
 * OIhw8o8i, blk[t][o][i]: per row o, the 8 x 8 matrices [i][t0 .. t0 + 7]
 * (rows T apart) transposed, t0 = 0, 8, ... and T - 8 last (overlapping). */
__attribute__((target("avx2"))) static void put8_avx2(const float *w, size_t ldw, size_t T, int i_inner, float *blk)
{
	__m256 r[8];
	if (!i_inner) {
		for (size_t j = 0; j < T; j++) {
			for (int o = 0; o < 8; o++)
				r[o] = _mm256_loadu_ps(w + o * ldw + 8 * j);
			transpose8(r);
			for (size_t k = 0; k < 8; k++) {
				const size_t c = 8 * j + k;
				_mm256_storeu_ps(blk + (c % T) * 64 + (c / T) * 8, r[k]);
			}
		}
		return;
	}
	for (size_t o = 0; o < 8; o++)
		for (size_t t0 = 0; t0 < T; t0 += 8) {
			const size_t t = t0 + 8 <= T ? t0 : T - 8;
			for (size_t i = 0; i < 8; i++)
				r[i] = _mm256_loadu_ps(w + o * ldw + i * T + t);
			transpose8(r);
			for (size_t k = 0; k < 8; k++)
				_mm256_storeu_ps(blk + (t + k) * 64 + o * 8, r[k]);
		}
}
#endif

#ifdef PUT_X86
/* r[k][l] <- r[l][k] for 16 x 16 floats: 4 x 4 transposes inside each
 * 128-bit lane (as transpose8), then the lanes exchanged. */
__attribute__((target("avx512f"))) static inline void transpose16(__m512 r[16])
{
	__m512 t[16];
	for (int k = 0; k < 16; k += 2) {
		t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
		t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
	}
	/* r[4a + b], lane L: column 4L + b of rows 4a .. 4a + 3 */
	for (int k = 0; k < 16; k += 4) {
		r[k] = _mm512_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
		r[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
		r[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
		r[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
	}
	/* column 4L + b: lane L of r[b], r[4 + b], r[8 + b], r[12 + b] */
	for (int b = 0; b < 4; b++) {
		__m512 u0 = _mm512_shuffle_f32x4(r[b], r[4 + b], 0x44), u1 = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0x44);
		__m512 v0 = _mm512_shuffle_f32x4(r[b], r[4 + b], 0xEE), v1 = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0xEE);
		t[b] = _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
		t[4 + b] = _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
		t[8 + b] = _mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
		t[12 + b] = _mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
	}
	for (int k = 0; k < 16; k++)
		r[k] = t[k];
}

/* One whole 16 x 16 block of every tap (oneDNN's AVX-512 layouts), w at
 * its first output row and input channel, rows ldw apart; 16 x 16
 * transposes as put8_avx2 does (gathers, which Zen 4 runs at about 5
 * cycles an element, where T > 16).
 * OIhw16i16o, blk[t][i][o] = w[o][i T + t]: the 16 rows' columns c = 16j ..
 * 16j + 15 transposed are (o = 0 .. 15) vectors of columns c = i T + t.
 * OIhw16o16i, blk[t][o][i]: per row o, the 16 x T matrix [i][t] (rows T
 * apart, loaded masked) transposed. */
__attribute__((target("avx512f"))) static void put16_avx512(const float *w, size_t ldw, size_t T, int i_inner,
                                                             float *blk)
{
	__m512 r[16];
	if (!i_inner) {
		for (size_t j = 0; j < T; j++) {
			for (int o = 0; o < 16; o++)
				r[o] = _mm512_loadu_ps(w + o * ldw + 16 * j);
			transpose16(r);
			for (size_t k = 0; k < 16; k++) {
				const size_t c = 16 * j + k;
				_mm512_storeu_ps(blk + (c % T) * 256 + (c / T) * 16, r[k]);
			}
		}
		return;
	}
	if (T <= 16) {
		const __mmask16 m = (__mmask16)((1u << T) - 1);
		for (size_t o = 0; o < 16; o++) {
			for (size_t i = 0; i < 16; i++)
				r[i] = _mm512_maskz_loadu_ps(m, w + o * ldw + i * T);
			transpose16(r);
			for (size_t t = 0; t < T; t++)
				_mm512_storeu_ps(blk + t * 256 + o * 16, r[t]);
		}
		return;
	}
	const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	const __m512i idx = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)T));
	for (size_t o = 0; o < 16; o++)
		for (size_t t = 0; t < T; t++)
			_mm512_storeu_ps(blk + t * 256 + o * 16, _mm512_i32gather_ps(idx, w + o * ldw + t, 4));
}
#endif

#ifdef PUT_X86
/* The bf16 pairs of 16 x 16 blocks: blk[t][r / 2][l][r % 2] =
 * bf16(f[t][r][l]) for T taps of fp32 blocks f (rows r, lanes l: what
 * put16_avx512 writes), rounded as starnn_float_to_bf16 (halfrow.h's
 * branch-free form: the same bits). */
__attribute__((target("avx512f"))) static void pairs16_avx512(const float *f, size_t T, uint16_t *blk)
{
	for (size_t t = 0; t < T; t++, f += 256, blk += 256)
		for (size_t r = 0; r < 16; r += 2) {
			starnn_vf16 lo, hi;
			memcpy(&lo, f + r * 16, sizeof lo);
			memcpy(&hi, f + (r + 1) * 16, sizeof hi);
			const starnn_vu16 both = STARNN_BF16X16_BITS(lo) | (STARNN_BF16X16_BITS(hi) << 16);
			memcpy(blk + r * 16, &both, sizeof both);
		}
}
/* Taps of the whole blocks pairs16_avx512 takes (its fp32 blocks are on
 * the stack). */
#define PAIRS_MAX_TAPS 25
#endif

/* put_from for a layout of the transpose (L->trans): element (o, i, t) of
 * the layout at w[(i - wi) * ldw + (o - wo) * T + t]. A whole 16 x 16
 * block of one tap whose inner index is o (i_inner 0: fp32 [i][o], bf16
 * pairs [i / 2][o][i % 2]) is 16 rows of w copied as they are (then
 * paired); the rest element by element. */
static void put_trans(const struct starnn_blocked_weights *L, size_t o0, size_t o1, size_t i0, size_t i1,
                      const float *w, size_t ldw, size_t wo, size_t wi, float *d)
{
	uint16_t *dh = (uint16_t *)(void *)d;
	const size_t T = L->taps, ob = L->ob, ib = L->ib;
#ifdef PUT_X86
	const int fast = T == 1 && ob == 16 && ib == 16 && !L->i_inner && starnn_simd_level() >= STARNN_SIMD_AVX512;
#endif
	for (size_t ob0 = o0 / ob * ob; ob0 < o1; ob0 += ob) {
		const size_t oa = ob0 > o0 ? ob0 : o0, oz = ob0 + ob < o1 ? ob0 + ob : o1;
		for (size_t ib0 = i0 / ib * ib; ib0 < i1; ib0 += ib) {
			const size_t ia = ib0 > i0 ? ib0 : i0, iz = ib0 + ib < i1 ? ib0 + ib : i1;
			const size_t at = starnn_blocked_weights_index(L, ob0, ib0, 0);
#ifdef PUT_X86
			if (fast && oz - oa == 16 && iz - ia == 16) {
				float f[256];
				for (size_t i = 0; i < 16; i++)
					memcpy(L->pair ? f + i * 16 : d + at + i * 16, w + (ib0 + i - wi) * ldw + (ob0 - wo),
					       16 * sizeof(float));
				if (L->pair)
					pairs16_avx512(f, 1, dh + at);
				continue;
			}
#endif
			for (size_t o = oa; o < oz; o++)
				for (size_t i = ia; i < iz; i++)
					for (size_t t = 0; t < T; t++) {
						const float v = w[(i - wi) * ldw + (o - wo) * T + t];
						const size_t k = starnn_blocked_weights_index(L, o, i, t);
						if (L->pair)
							dh[k] = starnn_float_to_bf16(v);
						else
							d[k] = v;
					}
		}
	}
}

/* Element (o, i, t) of the weights at w[(o - wo) * ldw + (i - wi) * T + t]:
 * the whole tensor (wo = wi = 0) or a tile of it starting at (wo, wi). An
 * fp32 layout takes the values as they are, a bf16 one (L->pair) rounds
 * them as starnn_float_to_bf16. */
static void put_from(const struct starnn_blocked_weights *L, size_t o0, size_t o1, size_t i0, size_t i1,
                     const float *w, size_t ldw, size_t wo, size_t wi, void *copy)
{
	float *d = starnn_blocked_weights_data(L, copy);
	uint16_t *dh = (uint16_t *)(void *)d;
	const size_t T = L->taps, ob = L->ob, ib = L->ib, bsz = ob * ib;
	if (L->trans) {
		put_trans(L, o0, o1, i0, i1, w, ldw, wo, wi, d);
		return;
	}
#ifdef PUT_X86
	const int level = starnn_simd_level();
	const int avx2 = !L->pair && ob == 8 && ib == 8 && T >= 8 && level >= STARNN_SIMD_AVX2;
	const int avx512 = ob == 16 && ib == 16 && level >= STARNN_SIMD_AVX512 && (!L->pair || T <= PAIRS_MAX_TAPS);
#endif
	/* one block at a time, written in its own order (the copy is written
	 * front to back; w, just updated, is read from cache) */
	for (size_t ob0 = o0 / ob * ob; ob0 < o1; ob0 += ob) {
		const size_t oa = ob0 > o0 ? ob0 : o0, oz = ob0 + ob < o1 ? ob0 + ob : o1;
		for (size_t ib0 = i0 / ib * ib; ib0 < i1; ib0 += ib) {
			const size_t ia = ib0 > i0 ? ib0 : i0, iz = ib0 + ib < i1 ? ib0 + ib : i1;
			const size_t at = starnn_blocked_weights_index(L, ob0, ib0, 0); /* the block's first element */
#ifdef PUT_X86
			/* (a whole block: ob0 >= wo, ib0 >= wi) */
			const float *src = w + (ob0 - wo) * ldw + (ib0 - wi) * T;
			if (avx2 && oz - oa == 8 && iz - ia == 8) {
				put8_avx2(src, ldw, T, (int)L->i_inner, d + at);
				continue;
			}
			if (avx512 && oz - oa == 16 && iz - ia == 16) {
				if (!L->pair) {
					put16_avx512(src, ldw, T, (int)L->i_inner, d + at);
				} else {
					float f[PAIRS_MAX_TAPS * 256];
					put16_avx512(src, ldw, T, (int)L->i_inner, f);
					pairs16_avx512(f, T, dh + at);
				}
				continue;
			}
#endif
			if (L->pair) {
				for (size_t o = oa; o < oz; o++)
					for (size_t i = ia; i < iz; i++)
						for (size_t t = 0; t < T; t++)
							dh[starnn_blocked_weights_index(L, o, i, t)] =
							    starnn_float_to_bf16(w[(o - wo) * ldw + (i - wi) * T + t]);
				continue;
			}
			float *blk = d + at;
			for (size_t t = 0; t < T; t++, blk += bsz) {
				if (L->i_inner) { /* OIhw8o8i: i fastest */
					for (size_t o = oa; o < oz; o++)
						for (size_t i = ia; i < iz; i++)
							blk[(o - ob0) * ib + (i - ib0)] = w[(o - wo) * ldw + (i - wi) * T + t];
				} else { /* OIhw8i8o: o fastest */
					for (size_t i = ia; i < iz; i++)
						for (size_t o = oa; o < oz; o++)
							blk[(i - ib0) * ob + (o - ob0)] = w[(o - wo) * ldw + (i - wi) * T + t];
				}
			}
		}
	}
}

#ifdef PUT_X86
/* The inverses of put8_avx2 and put16_avx512 (!i_inner): the block's
 * vectors of columns c = 8j .. 8j + 7 (16j ..) transposed into rows. */
__attribute__((target("avx2"))) static void get8_avx2(const float *blk, size_t T, float *w, size_t ldw)
{
	__m256 r[8];
	for (size_t j = 0; j < T; j++) {
		for (size_t k = 0; k < 8; k++) {
			const size_t c = 8 * j + k;
			r[k] = _mm256_loadu_ps(blk + (c % T) * 64 + (c / T) * 8);
		}
		transpose8(r);
		for (int o = 0; o < 8; o++)
			_mm256_storeu_ps(w + o * ldw + 8 * j, r[o]);
	}
}

/* i_inner 0 as get8_avx2; i_inner 1 (T <= 16): per row o, the T x 16
 * matrix [t][i] transposed into T taps of each input channel. */
__attribute__((target("avx512f"))) static void get16_avx512(const float *blk, size_t T, int i_inner, float *w,
                                                             size_t ldw)
{
	__m512 r[16];
	if (!i_inner) {
		for (size_t j = 0; j < T; j++) {
			for (size_t k = 0; k < 16; k++) {
				const size_t c = 16 * j + k;
				r[k] = _mm512_loadu_ps(blk + (c % T) * 256 + (c / T) * 16);
			}
			transpose16(r);
			for (int o = 0; o < 16; o++)
				_mm512_storeu_ps(w + o * ldw + 16 * j, r[o]);
		}
		return;
	}
	const __mmask16 m = (__mmask16)((1u << T) - 1);
	for (size_t o = 0; o < 16; o++) {
		for (size_t t = 0; t < 16; t++)
			r[t] = t < T ? _mm512_loadu_ps(blk + t * 256 + o * 16) : _mm512_setzero_ps();
		transpose16(r);
		for (size_t i = 0; i < 16; i++)
			_mm512_mask_storeu_ps(w + o * ldw + i * T, m, r[i]);
	}
}
#endif

void starnn_blocked_get_cpu(const struct starnn_blocked_weights *L, size_t o0, size_t o1, size_t i0, size_t i1,
                            const void *copy, float *w, size_t ldw)
{
	const float *d = starnn_blocked_weights_data(L, (void *)copy);
	const size_t T = L->taps, ob = L->ob, ib = L->ib;
#ifdef PUT_X86
	const int level = starnn_simd_level();
	const int avx2 = !L->pair && ob == 8 && ib == 8 && T >= 8 && !L->i_inner && level >= STARNN_SIMD_AVX2;
	const int avx512 = !L->pair && ob == 16 && ib == 16 && (!L->i_inner || T <= 16) && level >= STARNN_SIMD_AVX512;
#endif
	for (size_t ob0 = o0 / ob * ob; ob0 < o1; ob0 += ob) {
		const size_t oa = ob0 > o0 ? ob0 : o0, oz = ob0 + ob < o1 ? ob0 + ob : o1;
		for (size_t ib0 = i0 / ib * ib; ib0 < i1; ib0 += ib) {
			const size_t ia = ib0 > i0 ? ib0 : i0, iz = ib0 + ib < i1 ? ib0 + ib : i1;
#ifdef PUT_X86
			const float *blk = d + starnn_blocked_weights_index(L, ob0, ib0, 0);
			float *dst = w + (ob0 - o0) * ldw + (ib0 - i0) * T; /* (a whole block: ob0 >= o0, ib0 >= i0) */
			if (avx2 && oz - oa == 8 && iz - ia == 8) {
				get8_avx2(blk, T, dst, ldw);
				continue;
			}
			if (avx512 && oz - oa == 16 && iz - ia == 16) {
				get16_avx512(blk, T, (int)L->i_inner, dst, ldw);
				continue;
			}
#endif
			for (size_t o = oa; o < oz; o++)
				for (size_t i = ia; i < iz; i++)
					for (size_t t = 0; t < T; t++)
						w[(o - o0) * ldw + (i - i0) * T + t] = d[starnn_blocked_weights_index(L, o, i, t)];
		}
	}
}

void starnn_blocked_put_cpu(const struct starnn_blocked_weights *L, size_t o0, size_t o1, size_t i0, size_t i1,
                            const float *w, size_t ldw, void *copy)
{
	put_from(L, o0, o1, i0, i1, w, ldw, 0, 0, copy);
}

void starnn_blocked_put_rows_cpu(const struct starnn_blocked_weights *L, size_t r0, size_t r1, const float *w,
                                 size_t ldw, void *copy)
{
	if (L->trans) /* (the rows of the tensor are the layout's i) */
		starnn_blocked_put_cpu(L, 0, L->o, r0, r1, w, ldw, copy);
	else
		starnn_blocked_put_cpu(L, r0, r1, 0, L->i, w, ldw, copy);
}

void starnn_blocked_make_cpu(const struct starnn_blocked_weights *L, const float *w, size_t ldw, void *copy)
{
	memcpy(copy, L, sizeof *L);
	memset(starnn_blocked_weights_data(L, copy), 0, starnn_blocked_weights_floats(L) * starnn_blocked_weights_es(L));
	starnn_blocked_put_rows_cpu(L, 0, L->trans ? L->i : L->o, w, ldw, copy);
}

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;
		a = b, b = t;
	}
	return a;
}

static size_t lcm(size_t a, size_t b)
{
	return a / gcd(a, b) * b;
}

/* Writes the tile rows [r0, r1) x columns [c0, c1) of a tensor into its
 * copy in layout L: src holds the tile's element (r, c) at src[(r - sr) *
 * lds + c - sc] (the whole tensor: sr = sc = 0). */
static void put_tile(const struct starnn_blocked_weights *L, size_t r0, size_t r1, size_t c0, size_t c1,
                     const float *src, size_t lds, size_t sr, size_t sc, void *copy)
{
	const size_t T = L->taps;
	if (L->trans)
		put_from(L, c0 / T, c1 / T, r0, r1, src, lds, sc / T, sr, copy);
	else
		put_from(L, r0, r1, c0 / T, c1 / T, src, lds, sr, sc / T, copy);
}

/* The tiles of starnn_update_with_copies and starnn_tiles_with_copies:
 * update (w as updated) or tile (the tile's values) for each. */
static void tiles(size_t rows, size_t cols, void (*update)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1),
                  const float *(*tile)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1, size_t *ldt), void *ctx,
                  const float *w, size_t ldw, int n, const struct starnn_blocked_weights *L, void *const *copies,
                  const struct starnn_blocked_weights *G)
{
	/* tiles of whole blocks of every copy and of G: rows a multiple of
	 * their row blocks (ob; ib of a transposed copy), columns of their
	 * column blocks (ib x taps; ob x taps transposed), up to TILE floats
	 * of w (a band of whole rows where they fit): the update streams each
	 * row of w and its optimizer state, which come from memory, and the
	 * copies read the band back from cache. Tiles of 4096 floats (a few
	 * hundred bytes of each of 16 rows, 18 KB apart at 512 x 512 x 3 x 3)
	 * were latency bound: Adam and its two fp32 copies took 9.1 ms of a
	 * 128x128 fp32 step, 5.5 ms in bands (a Zen 4, the trace's second
	 * half; 31.7 -> 32.1 samples/s, 3 alternated pairs). */
	enum { TILE = 1 << 18 };
	size_t rb = 1, cb = 1, ldt;
	for (int c = 0; c < n; c++) {
		rb = lcm(rb, L[c].trans ? L[c].ib : L[c].ob);
		cb = lcm(cb, (size_t)(L[c].trans ? L[c].ob : L[c].ib) * L[c].taps);
	}
	const int blocked_g = G && G->ob;
	if (blocked_g) { /* and whole blocks of the gradient read */
		rb = lcm(rb, G->ob);
		cb = lcm(cb, (size_t)G->ib * G->taps);
	}
	if (n == 0 && !blocked_g) { /* (no copies nor blocked gradient: one tile) */
		if (update)
			update(ctx, 0, rows, 0, cols);
		else
			(void)tile(ctx, 0, rows, 0, cols, &ldt);
		return;
	}
	size_t cc = cb * (TILE / (rb * cb) ? TILE / (rb * cb) : 1); /* columns per tile */
	if (cc > cols)
		cc = cols;
	for (size_t r0 = 0; r0 < rows; r0 += rb) {
		const size_t r1 = r0 + rb < rows ? r0 + rb : rows;
		for (size_t c0 = 0; c0 < cols; c0 += cc) {
			const size_t c1 = c0 + cc < cols ? c0 + cc : cols;
			if (update) {
				update(ctx, r0, r1, c0, c1);
				for (int c = 0; c < n; c++)
					put_tile(&L[c], r0, r1, c0, c1, w, ldw, 0, 0, copies[c]);
				continue;
			}
			const float *t = tile(ctx, r0, r1, c0, c1, &ldt);
			if (!t)
				return;
			for (int c = 0; c < n; c++)
				put_tile(&L[c], r0, r1, c0, c1, t, ldt, r0, c0, copies[c]);
		}
	}
}

void starnn_update_with_copies(size_t rows, size_t cols, void (*update)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1),
                               void *ctx, const float *w, size_t ldw, int n, const struct starnn_blocked_weights *L,
                               void *const *copies, const struct starnn_blocked_weights *G)
{
	tiles(rows, cols, update, NULL, ctx, w, ldw, n, L, copies, G);
}

void starnn_tiles_with_copies(size_t rows, size_t cols,
                              const float *(*tile)(void *ctx, size_t r0, size_t r1, size_t c0, size_t c1, size_t *ldt),
                              void *ctx, int n, const struct starnn_blocked_weights *L, void *const *copies,
                              const struct starnn_blocked_weights *G)
{
	tiles(rows, cols, NULL, tile, ctx, NULL, 0, n, L, copies, G);
}
