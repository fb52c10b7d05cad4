/* copy: the kernel against naive loops (strided -> dense, dense -> strided,
 * 2- and 4-byte elements, padding untouched), the codelets (CPU, or CUDA /
 * OpenCL in the _cuda / _opencl builds) for fp32 / fp16 / bf16 on whole
 * tensors, between channel views and dense tensors and between two views
 * of one tensor, compared byte for byte with direct kernel calls, and bad
 * arguments -> STARNN_EINVAL (layouts that differ included).
 * Blocked weight copies (CPU build): starnn_blocked_put_cpu against
 * oneDNN's OIhw8i8o / OIhw8o8i / 16-block formulas written out here (1x1,
 * 2x2, 3x3, 4x4, 5x5 and 8 taps; whole blocks, on AVX2 and AVX-512 by
 * transposes, on AVX-512 by gathers beyond 16 taps with the input channel
 * fastest, and
 * partial ones), the padding and header untouched; and the optimizers' updates that keep such
 * copies current (adam, adam_amp, sgd, sgd_amp with 1 and 2 copies): w, the
 * state and the copies bit for bit those of the plain update followed by
 * the kernel, a skipped amp step writing nothing, a copy not read since
 * the last update left alone, a part of a tensor given no copies. */
#include "codelets/adam.h"
#include "codelets/amp.h"
#include "codelets/axpy.h"
#include "codelets/convert.h"
#include "codelets/copy.h"
#include "codelets/fill.h"
#include "codelets/kernels/copy.h"
#include "codelets/sgd.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

static uint64_t bits_state = 0x243f6a8885a308d3ull;
static void random_bytes(void *p, size_t n)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		bits_state ^= bits_state << 13, bits_state ^= bits_state >> 7, bits_state ^= bits_state << 17;
		b[i] = (unsigned char)(bits_state >> 32);
	}
}

static void kernel_vs_naive(size_t es)
{
	size_t rows = 5, cols = 7, ld = 11;
	unsigned char *s = malloc(rows * ld * es), *d = malloc(rows * cols * es), *s2 = malloc(rows * ld * es);
	unsigned char *ref = malloc(rows * ld * es);
	random_bytes(s, rows * ld * es);
	random_bytes(s2, rows * ld * es);
	memcpy(ref, s2, rows * ld * es);

	starnn_copy_cpu(rows, cols, es, s, ld, d, cols); /* strided -> dense */
	size_t bad = 0;
	for (size_t r = 0; r < rows; r++)
		for (size_t b = 0; b < cols * es; b++)
			bad += d[r * cols * es + b] != s[r * ld * es + b];
	TEST_ASSERT(bad == 0, "copy_cpu strided -> dense (%zu-byte elements): %zu bytes wrong", es, bad);

	starnn_copy_cpu(rows, cols, es, d, cols, s2, ld); /* dense -> strided */
	for (size_t r = 0; r < rows; r++)
		for (size_t b = 0; b < cols * es; b++)
			ref[r * ld * es + b] = d[r * cols * es + b];
	TEST_ASSERT(memcmp(s2, ref, rows * ld * es) == 0,
	            "copy_cpu dense -> strided (%zu-byte elements) differs (or touched the padding)", es);

	starnn_copy_cpu(rows, cols, es, s, ld, s2, ld); /* strided -> strided */
	for (size_t r = 0; r < rows; r++)
		memcpy(ref + r * ld * es, s + r * ld * es, cols * es);
	TEST_ASSERT(memcmp(s2, ref, rows * ld * es) == 0, "copy_cpu strided -> strided (%zu-byte elements)", es);
	free(s), free(d), free(s2), free(ref);
}

static void codelets(starnn_dtype dt)
{
	const char *dn = starnn_dtype_name(dt);
	int64_t n = 3, c = 4, h = 5, w = 6;
	int64_t shape[4] = {n, c, h, w}, pshape[4] = {n, c - 1, h, w};
	size_t es = starnn_dtype_size(dt), numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows;
	size_t inner = (size_t)(h * w), pcols = cols - inner, bytes = numel * es;
	unsigned char *x = malloc(bytes), *y0 = malloc(bytes), *got = malloc(bytes), *ref = malloc(bytes);
	random_bytes(x, bytes); /* any bit pattern, NaNs included: copy moves bytes */
	random_bytes(y0, bytes);
	starnn_tensor *tx, *ty, *td;
	TEST_OK(starnn_tensor_create(&tx, "x", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&ty, "y", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&td, "d", dt, 4, pshape));
	TEST_OK(starnn_tensor_write(tx, x));
	TEST_OK(starnn_tensor_write(ty, y0));

	TEST_OK(starnn_copy(tx, ty));
	TEST_OK(starnn_tensor_read(ty, got));
	starnn_copy_cpu(rows, cols, es, x, cols, ref, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s differs from the kernel", dn);
	TEST_OK(starnn_copy(ty, ty)); /* a no-op */

	/* x channels 1.. -> dense d -> y channels 1.., y channel 0 untouched. */
	TEST_OK(starnn_tensor_write(ty, y0));
	starnn_tensor **px, **py;
	int64_t sizes[2] = {1, c - 1};
	TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &px));
	TEST_OK(starnn_tensor_split(ty, 1, 2, sizes, &py));
	TEST_OK(starnn_copy(px[1], td));
	TEST_OK(starnn_copy(td, py[1]));
	unsigned char *dgot = malloc(rows * pcols * es), *dref = malloc(rows * pcols * es);
	TEST_OK(starnn_tensor_read(td, dgot));
	starnn_copy_cpu(rows, pcols, es, x + inner * es, cols, dref, pcols);
	TEST_ASSERT(memcmp(dgot, dref, rows * pcols * es) == 0, "copy codelet %s: channel view -> dense", dn);
	TEST_OK(starnn_tensor_read(ty, got));
	memcpy(ref, y0, bytes);
	starnn_copy_cpu(rows, pcols, es, dref, pcols, ref + inner * es, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s: dense -> channel view", dn);

	/* View to view of the same shape (channel 0 of x -> channel 0 of y, both strided). */
	TEST_OK(starnn_copy(px[0], py[0]));
	TEST_OK(starnn_tensor_read(ty, got));
	starnn_copy_cpu(rows, inner, es, x, cols, ref, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s: channel view -> channel view", dn);

	/* Between two views of one tensor (channels 0-1 -> 2-3: on a device,
	 * one buffer whose rows interleave the two views). */
	starnn_tensor *tq, **pq;
	int64_t halves[2] = {c / 2, c - c / 2};
	TEST_OK(starnn_tensor_create(&tq, "q", dt, 4, shape));
	TEST_OK(starnn_tensor_write(tq, x));
	TEST_OK(starnn_tensor_split(tq, 1, 2, halves, &pq));
	TEST_OK(starnn_copy(pq[0], pq[1]));
	TEST_OK(starnn_tensor_read(tq, got));
	memcpy(ref, x, bytes);
	starnn_copy_cpu(rows, (size_t)halves[0] * inner, es, x, cols, ref + (size_t)halves[0] * inner * es, cols);
	TEST_ASSERT(memcmp(got, ref, bytes) == 0, "copy codelet %s: between two views of one tensor", dn);
	starnn_tensor_destroy(tq);

	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(td);
	free(x), free(y0), free(got), free(ref), free(dgot), free(dref);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b, *hh;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 4, 6));
	TEST_OK(starnn_tensor_new(&hh, "h", STARNN_FP16, 2, 4, 5));
	TEST_ASSERT(starnn_copy(a, b) == STARNN_EINVAL, "copy 4x5 -> 4x6 must fail");
	TEST_ASSERT(starnn_copy(a, hh) == STARNN_EINVAL, "copy fp32 -> fp16 must fail (convert does that)");
	TEST_ASSERT(starnn_copy(NULL, a) == STARNN_EINVAL, "copy from NULL must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(hh);
	if (!TEST_ON_DEVICE) { /* blocked tensors (CPU builds): the bytes would not be the values */
		starnn_tensor *p, *q;
		TEST_OK(starnn_tensor_new(&p, "p", STARNN_FP32, 4, 2, 16, 4, 4));
		TEST_OK(starnn_tensor_new(&q, "q", STARNN_FP32, 4, 2, 16, 4, 4));
		TEST_OK(starnn_tensor_set_cblock(p, 16));
		TEST_ASSERT(starnn_copy(p, q) == STARNN_EINVAL, "copy from nChw16c to NCHW must fail");
		TEST_ASSERT(strstr(starnn_last_error(), "layouts differ") != NULL, "the message says why: %s",
		            starnn_last_error());
		TEST_OK(starnn_tensor_set_cblock(q, 16));
		TEST_OK(starnn_copy(p, q));
		starnn_tensor_destroy(p), starnn_tensor_destroy(q);
	}
}

/* oneDNN's formulas for its blocked weight formats, spelt out: OIhw<b>i<b>o
 * (i_inner 0) and OIhw<b>o<b>i (i_inner 1), inputs padded to blocks. */
static size_t onednn_offset(size_t I, size_t T, size_t b, int i_inner, size_t o, size_t i, size_t t)
{
	size_t IB = (I + b - 1) / b, outer = (((o / b) * IB + i / b) * T + t) * b * b;
	return outer + (i_inner ? (o % b) * b + i % b : (i % b) * b + o % b);
}

#define SENTINEL 0xA5u

/* The data of a blocked copy, padding and header left as they were. */
static void put_rows_kernel(void)
{
	static const struct {
		uint32_t o, i, taps, b, i_inner;
	} cases[] = {{12, 13, 9, 8, 0}, {12, 13, 9, 8, 1}, {16, 8, 9, 8, 0}, {40, 24, 1, 8, 1}, {20, 35, 9, 16, 0},
	             {32, 16, 4, 16, 1}, {16, 24, 25, 8, 0}, {16, 24, 25, 8, 1}, {24, 16, 8, 8, 1},
	             {64, 72, 9, 8, 0}, {64, 72, 9, 8, 1}, {64, 48, 9, 16, 0}, {64, 48, 9, 16, 1},
	             {48, 32, 1, 16, 0}, {48, 32, 4, 16, 1}, {32, 32, 16, 16, 1}, {32, 32, 16, 16, 0},
	             {32, 16, 25, 16, 1}, {32, 16, 25, 16, 0}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const size_t O = cases[k].o, I = cases[k].i, T = cases[k].taps, b = cases[k].b;
		const size_t OB = (O + b - 1) / b, IB = (I + b - 1) / b, data = OB * IB * b * b * T;
		struct starnn_blocked_weights L = {(uint32_t)O, (uint32_t)I, (uint32_t)T, (uint32_t)b, (uint32_t)b,
		                                   cases[k].i_inner, 100, 64, 0, 0};
		const size_t ld = I * T + 3, bytes = 100 + 64 + data * sizeof(float) + 1;
		float *w = test_random(O * ld, -1, 1);
		unsigned char *buf = malloc(bytes);
		memset(buf, SENTINEL, bytes);
		float *d = starnn_blocked_weights_data(&L, buf + 1); /* an odd base */
		TEST_ASSERT((uintptr_t)d % 64 == 0 && (unsigned char *)d >= buf + 101 && (unsigned char *)d < buf + 165,
		            "blocked copy %zu: data at %td, expected the first 64-byte boundary after 100 bytes", k,
		            (unsigned char *)d - buf - 1);
		/* rows up to O / 3, then the rest in four tiles split at odd
		 * channels */
		starnn_blocked_put_rows_cpu(&L, 0, O / 3, w, ld, buf + 1);
		starnn_blocked_put_cpu(&L, O / 3, O / 2 + 1, 0, I / 2 + 1, w, ld, buf + 1);
		starnn_blocked_put_cpu(&L, O / 3, O / 2 + 1, I / 2 + 1, I, w, ld, buf + 1);
		starnn_blocked_put_cpu(&L, O / 2 + 1, O, 0, 3, w, ld, buf + 1);
		starnn_blocked_put_cpu(&L, O / 2 + 1, O, 3, I, w, ld, buf + 1);
		unsigned char *want = malloc(bytes);
		memset(want, SENTINEL, bytes);
		float *wd = (float *)(void *)(want + ((unsigned char *)d - buf));
		for (size_t o = 0; o < O; o++)
			for (size_t i = 0; i < I; i++)
				for (size_t t = 0; t < T; t++) {
					size_t at = onednn_offset(I, T, b, (int)cases[k].i_inner, o, i, t);
					TEST_ASSERT(at == starnn_blocked_weights_index(&L, o, i, t),
					            "blocked copy %zu: index (%zu, %zu, %zu) is %zu, oneDNN's %zu", k, o, i, t,
					            starnn_blocked_weights_index(&L, o, i, t), at);
					memcpy(wd + at, w + o * ld + i * T + t, sizeof(float));
				}
		TEST_ASSERT(memcmp(buf, want, bytes) == 0,
		            "blocked copy %zu (%zu x %zu x %zu, blocks of %zu, %s fastest): differs from oneDNN's layout, "
		            "or wrote into the header or padding", k, O, I, T, b, cases[k].i_inner ? "i" : "o");
		free(w), free(buf), free(want);
	}
}

/* starnn_blocked_get_cpu, the optimizers' read of a gradient in a blocked
 * layout: the rows put into the layout (oneDNN's formulas: put_rows_kernel)
 * come back, whole and in tiles split at odd channels and rows, into rows
 * further apart than their length, nothing written beyond each tile. */
static void get_rows_kernel(void)
{
	static const struct {
		uint32_t o, i, taps, b, i_inner, ib; /* ib 0: b */
	} cases[] = {{16, 8, 9, 8, 0, 0},    {16, 8, 9, 8, 1, 0},     {24, 16, 1, 8, 0, 0},   {24, 16, 25, 8, 1, 0},
	             {64, 48, 9, 16, 0, 0},  {64, 48, 9, 16, 1, 0},   {32, 32, 1, 16, 0, 0},  {32, 32, 1, 16, 1, 0},
	             {48, 32, 16, 16, 1, 0}, {48, 32, 25, 16, 0, 0}, {32, 16, 25, 16, 1, 0}, {12, 13, 9, 8, 1, 0},
	             {20, 35, 9, 16, 0, 0},  {32, 13, 9, 16, 0, 13} /* Acdb16a: one block of the 13 inputs */};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const size_t O = cases[k].o, I = cases[k].i, T = cases[k].taps, b = cases[k].b,
		             ib = cases[k].ib ? cases[k].ib : b;
		const struct starnn_blocked_weights L = {(uint32_t)O, (uint32_t)I, (uint32_t)T, (uint32_t)b, (uint32_t)ib,
		                                         cases[k].i_inner, 0, 0, 0, 0};
		if (ib != b) /* Acdb16a: [O / 16][taps][I][16] */
			for (size_t o = 0; o < O; o += 5)
				for (size_t t = 0; t < T; t++)
					TEST_ASSERT(starnn_blocked_weights_index(&L, o, 7, t) == ((o / 16 * T + t) * I + 7) * 16 + o % 16,
					            "Acdb16a: index (%zu, 7, %zu) is %zu", o, t, starnn_blocked_weights_index(&L, o, 7, t));
		const size_t ld = I * T + 5;
		float *w = test_random(O * ld, -1, 1);
		float *d = calloc(starnn_blocked_weights_floats(&L), sizeof *d);
		starnn_blocked_put_rows_cpu(&L, 0, O, w, ld, d);
		/* whole, then four tiles split at odd rows and channels */
		const size_t cuts[][4] = {{0, O, 0, I},         {0, O / 2 + 1, 0, I / 2 + 1}, {0, O / 2 + 1, I / 2 + 1, I},
		                          {O / 2 + 1, O, 0, 3}, {O / 2 + 1, O, 3, I}};
		for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
			const size_t o0 = cuts[c][0], o1 = cuts[c][1], i0 = cuts[c][2], i1 = cuts[c][3];
			const size_t ldt = (i1 - i0) * T + 7, n = (o1 - o0) * ldt;
			float *t = malloc(n * sizeof *t);
			for (size_t e = 0; e < n; e++)
				t[e] = -1234.5f;
			starnn_blocked_get_cpu(&L, o0, o1, i0, i1, d, t, ldt);
			size_t bad = 0;
			for (size_t o = o0; o < o1; o++)
				for (size_t c2 = 0; c2 < ldt; c2++) {
					const float want = c2 < (i1 - i0) * T ? w[o * ld + i0 * T + c2] : -1234.5f;
					bad += memcmp(&t[(o - o0) * ldt + c2], &want, sizeof want) != 0;
				}
			TEST_ASSERT(bad == 0,
			            "blocked get %zu (%zu x %zu x %zu, blocks of %zu, %s fastest), tile %zu: %zu elements not "
			            "the rows put, or written beyond the tile",
			            k, O, I, T, b, cases[k].i_inner ? "i" : "o", c, bad);
			free(t);
		}
		free(w), free(d);
	}
}

/* rc is STARNN_EINVAL and the message holds needle. */
static void expect_einval(int rc, const char *what, const char *needle)
{
	TEST_ASSERT(rc == STARNN_EINVAL && strstr(starnn_last_error(), needle) != NULL,
	            "%s: expected STARNN_EINVAL saying '%s', got %d: %s", what, needle, rc, starnn_last_error());
}

/* Layouts of the transpose (runtime/core/tensor.h trans: a transposed
 * convolution's forward weights [4o, c] kept from PyTorch's [c, o, 2, 2]):
 * element (q, c) of the layout is row c, column q of the tensor, rows put
 * whole and in parts split at odd rows and columns, fp32 and bf16 pairs,
 * whole and partial blocks, the padding left alone. */
static void put_trans_kernel(void)
{
	static const struct {
		uint32_t q, c, b, i_inner, pair;
	} cases[] = {{64, 48, 16, 0, 0}, {64, 48, 16, 0, 2}, {40, 24, 16, 0, 0}, {40, 24, 16, 0, 2},
	             {48, 16, 8, 1, 0},  {32, 32, 16, 1, 0}, {24, 20, 8, 0, 0}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const size_t Q = cases[k].q, C = cases[k].c, ld = Q + 3;
		const struct starnn_blocked_weights L = {(uint32_t)Q, (uint32_t)C, 1, cases[k].b, cases[k].b,
		                                         cases[k].i_inner, 0, 0, cases[k].pair, 1};
		const size_t n = starnn_blocked_weights_floats(&L), es = starnn_blocked_weights_es(&L);
		float *w = test_random(C * ld, -1, 1);
		unsigned char *whole = malloc(n * es), *split = malloc(n * es), *want = malloc(n * es);
		memset(whole, SENTINEL, n * es), memset(split, SENTINEL, n * es), memset(want, SENTINEL, n * es);
		starnn_blocked_put_rows_cpu(&L, 0, C, w, ld, whole);
		starnn_blocked_put_rows_cpu(&L, 0, C / 3, w, ld, split); /* rows of the tensor: the layout's i */
		starnn_blocked_put_cpu(&L, 0, Q / 2 + 1, C / 3, C, w, ld, split);
		starnn_blocked_put_cpu(&L, Q / 2 + 1, Q, C / 3, C, w, ld, split);
		for (size_t q = 0; q < Q; q++)
			for (size_t c = 0; c < C; c++) {
				const size_t at = starnn_blocked_weights_index(&L, q, c, 0);
				if (L.pair) {
					const uint16_t h = starnn_float_to_bf16(w[c * ld + q]);
					memcpy(want + at * 2, &h, 2);
				} else
					memcpy(want + at * 4, &w[c * ld + q], 4);
			}
		TEST_ASSERT(memcmp(whole, want, n * es) == 0 && memcmp(split, want, n * es) == 0,
		            "transposed copy %zu (%zu x %zu, blocks of %u, i_inner %u, pair %u): %s differs from the "
		            "transpose's layout, or wrote into the padding",
		            k, Q, C, cases[k].b, cases[k].i_inner, cases[k].pair,
		            memcmp(whole, want, n * es) ? "the whole put" : "the put in parts");
		free(w), free(whole), free(split), free(want);
	}
}

/* A tensor in a blocked weight layout: read and write exchange OIHW, its
 * storage holds the layout, element-wise operations refuse to mix it with
 * OIHW, and bad layouts are refused with a message. */
static void blocked_grads(void)
{
	const int64_t O = 32, I = 16;
	const size_t n = (size_t)(O * I * 9);
	const struct starnn_blocked_weights L = {32, 16, 9, 16, 16, 0, 0, 0, 0, 0};
	float *v = test_random(n, -1, 1);
	starnn_tensor *plain = test_tensor("plain", 4, (int64_t[]){O, I, 3, 3}, v);
	starnn_tensor *g = test_tensor("gb", 4, (int64_t[]){O, I, 3, 3}, v);
	TEST_OK(starnn_tensor_set_wlayout(g, &L)); /* values kept */
	float *back = test_read(g);
	TEST_ASSERT(memcmp(back, v, n * sizeof *v) == 0, "a blocked tensor's read is not the values it held");
	TEST_ASSERT(g->wl_fixed && g->wl.ob == 16, "set_wlayout: layout not recorded");
	TEST_ASSERT(starpu_data_acquire(g->handle, STARPU_R) == 0, "acquire");
	const float *raw = starpu_data_get_local_ptr(g->handle);
	size_t bad = 0;
	for (size_t o = 0; o < (size_t)O; o++)
		for (size_t i = 0; i < (size_t)I; i++)
			for (size_t t = 0; t < 9; t++)
				bad += memcmp(&raw[onednn_offset((size_t)I, 9, 16, 0, o, i, t)], &v[(o * (size_t)I + i) * 9 + t],
				              sizeof(float)) != 0;
	starpu_data_release(g->handle);
	TEST_ASSERT(bad == 0, "a tensor in OIhw16i16o: %zu elements not at oneDNN's offsets", bad);
	char d[128];
	TEST_ASSERT(strstr(starnn_tensor_describe(g, d, sizeof d), "OIhw16i16o") != NULL, "describe: %s", d);
	starnn_tensor **parts;
	expect_einval(starnn_axpy(1.0f, plain, g), "axpy OIHW + OIhw16i16o", "layouts differ");
	expect_einval(starnn_copy(g, plain), "copy OIhw16i16o -> OIHW", "layouts differ");
	expect_einval(starnn_tensor_split(g, 0, 2, NULL, &parts), "split of OIhw16i16o", "is not split");
	const struct starnn_blocked_weights odd = {32, 16, 9, 16, 16, 0, 0, 0, 0, 0};
	starnn_tensor *small = test_tensor("small", 4, (int64_t[]){O, 12, 3, 3}, NULL);
	expect_einval(starnn_tensor_set_wlayout(small, &odd), "32 x 16 layout of 32 x 12", "not a layout of its rows");
	const struct starnn_blocked_weights twelve = {32, 12, 9, 16, 16, 0, 0, 0, 0, 0};
	expect_einval(starnn_tensor_set_wlayout(small, &twelve), "12 channels in blocks of 16", "whole fp32 blocks");
	starnn_tensor *h;
	TEST_OK(starnn_tensor_create(&h, "h", STARNN_BF16, 4, (int64_t[]){O, I, 3, 3}));
	expect_einval(starnn_tensor_set_wlayout(h, &L), "a bf16 tensor", "dense fp32");
	/* back to OIHW, values kept */
	TEST_OK(starnn_tensor_set_wlayout(g, NULL));
	float *again = test_read(g);
	TEST_ASSERT(g->wl.ob == 0 && memcmp(again, v, n * sizeof *v) == 0, "set_wlayout(NULL): not OIHW as it was");
	starnn_tensor_destroy(plain), starnn_tensor_destroy(g), starnn_tensor_destroy(small), starnn_tensor_destroy(h);
	free(v), free(back), free(again);
}

/* oneDNN's bf16 formats in pairs, spelt out: ABcd8b16a2b (i_inner 0:
 * [i / 2][o][i % 2] in a 16 x 16 block) and ABcd8a16b2a (i_inner 1: [o /
 * 2][i][o % 2]), inputs padded to blocks of 16. */
static size_t onednn_pair_offset(size_t I, size_t T, int i_inner, size_t o, size_t i, size_t t)
{
	size_t IB = (I + 15) / 16, outer = (((o / 16) * IB + i / 16) * T + t) * 256, bo = o % 16, bi = i % 16;
	return outer + (i_inner ? (bo / 2) * 32 + bi * 2 + bo % 2 : (bi / 2) * 32 + bo * 2 + bi % 2);
}

/* Values whose rounding to bf16 a careless kernel gets wrong: ties (to
 * even, both ways), the largest finite value (rounds to Inf), a signalling
 * NaN of either sign (quieted, sign kept), Inf, -0. */
static const uint32_t tricky_bits[] = {0x3F808000u, 0x3F818000u, 0xBF808000u, 0x7F7FFFFFu, 0x7F800001u,
                                       0xFF800001u, 0x7F800000u, 0x80000000u, 0x3F80FFFFu, 0x00008000u};

static void put_tricky(float *w, size_t n, size_t stride)
{
	for (size_t k = 0; k < sizeof tricky_bits / sizeof *tricky_bits && k * stride < n; k++)
		memcpy(w + k * stride, &tricky_bits[k], sizeof(float));
}

/* The bf16 pair layouts: the data of a copy by oneDNN's formulas, each
 * value rounded as starnn_float_to_bf16, header and padding left alone;
 * whole blocks (the AVX-512 kernel where there is one, up to 25 taps) and
 * tiles split at odd channels (the scalar loop) alike. */
static void put_pairs_kernel(void)
{
	static const struct {
		uint32_t o, i, taps, i_inner;
	} cases[] = {{20, 13, 9, 0}, {20, 13, 9, 1}, {32, 32, 9, 0}, {32, 32, 9, 1}, {16, 48, 1, 0},
	             {48, 16, 4, 1}, {32, 16, 25, 0}, {32, 16, 25, 1}, {16, 16, 27, 0}, {16, 16, 27, 1},
	             {64, 48, 9, 0}, {64, 48, 9, 1}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const size_t O = cases[k].o, I = cases[k].i, T = cases[k].taps;
		const size_t data = (O + 15) / 16 * ((I + 15) / 16) * 256 * T;
		struct starnn_blocked_weights L = {(uint32_t)O, (uint32_t)I, (uint32_t)T, 16, 16, cases[k].i_inner, 100, 64, 2, 0};
		const size_t ld = I * T + 3, bytes = 100 + 64 + data * 2 + 1;
		TEST_ASSERT(starnn_blocked_weights_bytes(&L) == 100 + 64 + data * 2, "pair copy %zu: %zu bytes, expected %zu",
		            k, starnn_blocked_weights_bytes(&L), 100 + 64 + data * 2);
		float *w = test_random(O * ld, -1, 1);
		put_tricky(w, O * ld, 7);
		put_tricky(w + 16 * ld, (O - 16) * ld, 5); /* (the second block of rows) */
		/* (the same alignment: the data begin at the same offset in each) */
		const size_t abytes = (bytes + 63) / 64 * 64;
		unsigned char *whole = aligned_alloc(64, abytes), *split = aligned_alloc(64, abytes),
		              *want = aligned_alloc(64, abytes);
		memset(whole, SENTINEL, bytes), memset(split, SENTINEL, bytes), memset(want, SENTINEL, bytes);
		starnn_blocked_put_rows_cpu(&L, 0, O, w, ld, whole + 1);
		starnn_blocked_put_rows_cpu(&L, 0, O / 3, w, ld, split + 1);
		starnn_blocked_put_cpu(&L, O / 3, O / 2 + 1, 0, I / 2 + 1, w, ld, split + 1);
		starnn_blocked_put_cpu(&L, O / 3, O / 2 + 1, I / 2 + 1, I, w, ld, split + 1);
		starnn_blocked_put_cpu(&L, O / 2 + 1, O, 0, 3, w, ld, split + 1);
		starnn_blocked_put_cpu(&L, O / 2 + 1, O, 3, I, w, ld, split + 1);
		unsigned char *d = (unsigned char *)starnn_blocked_weights_data(&L, want + 1);
		for (size_t o = 0; o < O; o++)
			for (size_t i = 0; i < I; i++)
				for (size_t t = 0; t < T; t++) {
					size_t at = onednn_pair_offset(I, T, (int)cases[k].i_inner, o, i, t);
					TEST_ASSERT(at == starnn_blocked_weights_index(&L, o, i, t),
					            "pair copy %zu: index (%zu, %zu, %zu) is %zu, oneDNN's %zu", k, o, i, t,
					            starnn_blocked_weights_index(&L, o, i, t), at);
					uint16_t h = starnn_float_to_bf16(w[o * ld + i * T + t]);
					memcpy(d + at * 2, &h, sizeof h);
				}
		TEST_ASSERT(memcmp(whole, want, bytes) == 0 && memcmp(split, want, bytes) == 0,
		            "pair copy %zu (%zu x %zu x %zu, %s): %s differs from oneDNN's layout of the rounded values, or "
		            "wrote into the header or padding", k, O, I, T, cases[k].i_inner ? "ABcd8a16b2a" : "ABcd8b16a2b",
		            memcmp(whole, want, bytes) ? "the whole put" : "the put in tiles");
		free(w), free(whole), free(split), free(want);
	}
}

/* The optimizers keeping copies current. */
enum opt { OPT_ADAM, OPT_ADAM_AMP, OPT_SGD, OPT_SGD_AMP };
static const char *const opt_names[] = {"adam", "adam_amp", "sgd", "sgd_amp"};

struct upd {
	starnn_tensor *w, *g, *s1, *s2;
};

static void update(enum opt op, struct upd *u, starnn_tensor *state, starnn_tensor *flag, int64_t t)
{
	struct starnn_adam_params ap = {1e-2f, 0.9f, 0.999f, 1e-8f, 1e-3f, 0};
	struct starnn_sgd_params sp = {1e-2f, 0.9f, 0.0f, 1e-3f, 0};
	switch (op) {
	case OPT_ADAM:
		TEST_OK(starnn_adam(u->w, u->g, u->s1, u->s2, &ap, t, 0.5f));
		break;
	case OPT_ADAM_AMP:
		TEST_OK(starnn_adam_amp(u->w, u->g, u->s1, u->s2, &ap, state, flag));
		break;
	case OPT_SGD:
		TEST_OK(starnn_sgd(u->w, u->g, u->s1, &sp, t, 0.5f));
		break;
	case OPT_SGD_AMP:
		TEST_OK(starnn_sgd_amp(u->w, u->g, u->s1, &sp, state, flag));
		break;
	}
}

static struct upd upd_new(const char *tag, int64_t O, int64_t I, int64_t k, const float *w0, starnn_tensor *g)
{
	int64_t shape[4] = {O, I, k, k};
	char n[32];
	struct upd u = {NULL, g, NULL, NULL};
	snprintf(n, sizeof n, "w%s", tag);
	u.w = test_tensor(n, 4, shape, w0);
	snprintf(n, sizeof n, "m%s", tag);
	u.s1 = test_tensor(n, 4, shape, NULL);
	snprintf(n, sizeof n, "v%s", tag);
	u.s2 = test_tensor(n, 4, shape, NULL);
	return u;
}

/* w (O x I x T, dense) into the data of a copy in layout L at d, by
 * oneDNN's formulas. */
static void expected_copy(const struct starnn_blocked_weights *L, const float *w, float *d)
{
	for (size_t o = 0; o < L->o; o++)
		for (size_t i = 0; i < L->i; i++)
			for (size_t t = 0; t < L->taps; t++)
				d[onednn_offset(L->i, L->taps, L->ob, (int)L->i_inner, o, i, t)] = w[(o * L->i + i) * L->taps + t];
}

/* The bytes of a whole u8 tensor, and where its data begin in them. */
static unsigned char *copy_read(starnn_tensor *c, const struct starnn_blocked_weights *L, float **data)
{
	unsigned char *b = malloc(c->cols);
	TEST_OK(starnn_tensor_read(c, b));
	*data = (float *)(void *)(b + ((unsigned char *)starnn_blocked_weights_data(L, c->host) -
	                               (unsigned char *)c->host));
	return b;
}

/* The copies' layouts of an O x I x 3 x 3 tensor: OIhw8i8o and OIhw8o8i
 * (a 24-byte header, 64-byte aligned data), and the bytes of each. */
struct test_copies {
	struct starnn_blocked_weights L[2];
	struct starnn_derived *e[2];
	size_t bytes;
	int n;
};

/* n copies of w (whose values are v), as a packing task would make them,
 * their padding and headers SENTINEL, added to w under keys key0, key0 + 1. */
static struct test_copies copies_new(starnn_tensor *w, const float *v, int64_t O, int64_t I, int n, uint64_t key0)
{
	struct test_copies tc = {{{(uint32_t)O, (uint32_t)I, 9, 8, 8, 0, 24, 64, 0, 0}, {(uint32_t)O, (uint32_t)I, 9, 8, 8, 1, 24, 64, 0, 0}},
	                         {NULL, NULL}, 24 + 64 + (size_t)((O + 7) / 8 * ((I + 7) / 8)) * 64 * 9 * sizeof(float), n};
	for (int c = 0; c < n; c++) {
		starnn_tensor *t;
		TEST_OK(starnn_tensor_create(&t, "w.packed", STARNN_U8, 1, (int64_t[]){(int64_t)tc.bytes}));
		unsigned char *b = malloc(tc.bytes);
		memset(b, SENTINEL, tc.bytes);
		expected_copy(&tc.L[c], v,
		              (float *)(void *)(b + ((unsigned char *)starnn_blocked_weights_data(&tc.L[c], t->host) -
		                                     (unsigned char *)t->host)));
		TEST_OK(starnn_tensor_write(t, b));
		free(b);
		tc.e[c] = starnn_tensor_add_derived(w, key0 + (uint64_t)c, t);
		TEST_ASSERT(tc.e[c] != NULL, "add_derived");
		tc.e[c]->layout = tc.L[c];
		tc.e[c]->version = w->version;
	}
	return tc;
}

/* The copies' bytes before a write (and where their data begin), each
 * marked as read by a pass unless unread. */
static void copies_before(const struct test_copies *tc, int unread, unsigned char *before[2], float *bd[2])
{
	for (int c = 0; c < tc->n; c++) {
		before[c] = copy_read(tc->e[c]->d, &tc->L[c], &bd[c]);
		if (!unread)
			starnn_tensor_use_derived(tc->e[c]);
	}
}

/* A gradient shaped [O, I, 3, 3] in layout G (runtime/core/tensor.h: wl, as
 * conv2d's weight-gradient tasks write it), or g itself where G is NULL. */
static starnn_tensor *grad_in(starnn_tensor *g, const struct starnn_blocked_weights *G)
{
	if (!G)
		return g;
	starnn_tensor *b = test_tensor("gb", 4, g->shape, NULL);
	TEST_OK(starnn_tensor_set_wlayout(b, G));
	return b;
}

/* The same gradient values into g and, where it is another tensor, gb. */
static void grad_write(starnn_tensor *g, starnn_tensor *gb, const float *v)
{
	TEST_OK(starnn_tensor_write(g, v));
	if (gb != g)
		TEST_OK(starnn_tensor_write(gb, v));
}

/* The updates keeping 0 to 2 copies current, against the plain update;
 * with G, the update under test reads its gradient in that layout
 * (starnn_copies_grad), the reference the same values in OIHW. */
static void updates_with_copies(enum opt op, int ncopies, int64_t O, int64_t I, const struct starnn_blocked_weights *G)
{
	const int64_t k = 3;
	const size_t n = (size_t)(O * I * k * k);
	const char *on = opt_names[op];
	int64_t four = 4, one = 1;
	float *w0 = test_random(n, -1, 1);
	starnn_tensor *g = test_tensor("g", 4, (int64_t[]){O, I, k, k}, NULL), *state, *flag, *gb = grad_in(g, G);
	char gl[24];
	starnn_wlayout_name(G, gl, sizeof gl);
	struct upd a = upd_new("a", O, I, k, w0, gb), r = upd_new("r", O, I, k, w0, g);
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	float st[4] = {2.0f, 3.0f, 7.0f, 0.0f};
	TEST_OK(starnn_tensor_write(state, st));

	/* the copies, made from w0 */
	struct test_copies tc = copies_new(a.w, w0, O, I, ncopies, 100);
	struct starnn_derived **e = tc.e;
	const struct starnn_blocked_weights *L = tc.L;
	const size_t bytes = tc.bytes;
	for (int step = 1; step <= 4; step++) {
		const int skipped = step == 2 && (op == OPT_ADAM_AMP || op == OPT_SGD_AMP);
		const int unread = step == 3; /* no pass read the copies since the last update */
		float *gv = test_random(n, -1, 1);
		grad_write(g, gb, gv);
		TEST_OK(starnn_fill(skipped ? 1.0f : 0.0f, flag));
		unsigned char *before[2];
		float *bd[2];
		copies_before(&tc, unread, before, bd);
		update(op, &a, state, flag, step);
		update(op, &r, state, flag, step);
		float *wa = test_read(a.w), *wr = test_read(r.w), *sa = test_read(a.s1), *sr = test_read(r.s1);
		TEST_ASSERT(memcmp(wa, wr, n * sizeof *wa) == 0 && memcmp(sa, sr, n * sizeof *sa) == 0,
		            "%s with %d copies, gradient %s, step %d: w or its state differ from the plain update", on,
		            ncopies, gl, step);
		for (int c = 0; c < ncopies; c++) {
			float *got;
			unsigned char *after = copy_read(e[c]->d, &L[c], &got);
			unsigned char *want = malloc(bytes);
			memcpy(want, before[c], bytes);
			if (!unread) /* the whole of w as updated (or as it was, skipped) */
				expected_copy(&L[c], wr, (float *)(void *)(want + ((unsigned char *)bd[c] - before[c])));
			TEST_ASSERT(memcmp(after, want, bytes) == 0,
			            "%s with %d copies of %lld x %lld, step %d, copy %d (%s): %s", on, ncopies, (long long)O,
			            (long long)I, step, c,
			            c ? "OIhw8o8i" : "OIhw8i8o",
			            unread ? "written though not read since the last update"
			                   : "not w as updated, or the padding / header touched");
			TEST_ASSERT(unread ? e[c]->version != a.w->version && !e[c]->used
			                   : e[c]->version == a.w->version && !e[c]->used,
			            "%s step %d copy %d: version %llu (w %llu), used %d", on, step, c,
			            (unsigned long long)e[c]->version, (unsigned long long)a.w->version, e[c]->used);
			free(after), free(want), free(before[c]);
			if (unread) /* made current again, as a packing task would */
				e[c]->version = a.w->version;
		}
		free(gv), free(wa), free(wr), free(sa), free(sr);
	}
	struct starnn_derived *none[2];
	starnn_tensor **parts;
	TEST_OK(starnn_tensor_split(a.w, 0, 2, NULL, &parts));
	TEST_ASSERT(starnn_tensor_copies(parts[0], none, 2) == 0, "a part of w must have no copies to write");
	starnn_tensor *all[] = {a.w, a.s1, a.s2, r.w, r.s1, r.s2, g, state, flag, gb != g ? gb : NULL};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(w0);
}

/* The 16-bit copy of master weights (fp32 -> fp16 / bf16 convert) keeping
 * fp32 copies of its values current (conv2d's packed weights where 16-bit
 * passes are widened): y bit for bit the plain convert's, each copy the
 * rounded values widened (runtime/base/half.h) in its layout, a copy not read
 * since the last write left alone. */
static void narrows_with_copies(starnn_dtype dt, int ncopies, int64_t O, int64_t I)
{
	const size_t n = (size_t)(O * I * 9);
	const char *dn = starnn_dtype_name(dt);
	int64_t shape[4] = {O, I, 3, 3};
	starnn_tensor *m = test_tensor("master", 4, shape, NULL), *y, *yr;
	TEST_OK(starnn_tensor_create(&y, "w16", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&yr, "w16r", dt, 4, shape));
	float *zero = calloc(n, sizeof *zero);
	struct test_copies tc = copies_new(y, zero, O, I, ncopies, 200); /* y is zero at first */
	struct starnn_derived **e = tc.e;
	const struct starnn_blocked_weights *L = tc.L;
	const size_t bytes = tc.bytes;
	uint16_t *yv = malloc(n * sizeof *yv), *rv = malloc(n * sizeof *rv);
	float *wide = malloc(n * sizeof *wide);
	for (int step = 1; step <= 3; step++) {
		const int unread = step == 2;
		float *mv = test_random(n, -3, 3);
		mv[0] = 1.0f + 0x1p-9f; /* ties and near-ties: rounded, not truncated */
		mv[n - 1] = -1.0f - 0x3p-10f;
		TEST_OK(starnn_tensor_write(m, mv));
		unsigned char *before[2];
		float *bd[2];
		copies_before(&tc, unread, before, bd);
		TEST_OK(starnn_convert(m, y));
		TEST_OK(starnn_convert(m, yr));
		TEST_OK(starnn_tensor_read(y, yv));
		TEST_OK(starnn_tensor_read(yr, rv));
		TEST_ASSERT(memcmp(yv, rv, n * sizeof *yv) == 0, "convert fp32 -> %s with %d copies, step %d: differs from "
		            "the plain convert", dn, ncopies, step);
		for (size_t i = 0; i < n; i++)
			wide[i] = dt == STARNN_BF16 ? starnn_bf16_to_float(rv[i]) : starnn_half_to_float(rv[i]);
		for (int c = 0; c < ncopies; c++) {
			float *got;
			unsigned char *after = copy_read(e[c]->d, &L[c], &got);
			unsigned char *want = malloc(bytes);
			memcpy(want, before[c], bytes);
			if (!unread)
				expected_copy(&L[c], wide, (float *)(void *)(want + ((unsigned char *)bd[c] - before[c])));
			TEST_ASSERT(memcmp(after, want, bytes) == 0,
			            "convert fp32 -> %s with %d copies of %lld x %lld, step %d, copy %d: %s", dn, ncopies,
			            (long long)O, (long long)I, step, c,
			            unread ? "written though not read since the last write"
			                   : "not the rounded values widened, or the padding / header touched");
			TEST_ASSERT(unread ? e[c]->version != y->version : e[c]->version == y->version && !e[c]->used,
			            "convert to %s, step %d, copy %d: version %llu (y %llu)", dn, step, c,
			            (unsigned long long)e[c]->version, (unsigned long long)y->version);
			free(after), free(want), free(before[c]);
			if (unread)
				e[c]->version = y->version;
		}
		free(mv);
	}
	free(yv), free(rv), free(wide), free(zero);
	starnn_tensor_destroy(m), starnn_tensor_destroy(y), starnn_tensor_destroy(yr);
}

/* adam_cast where h, the 16-bit compute copy it rounds w into, has copies
 * that their writer keeps current (conv2d's packed weights): w, m and h
 * bit for bit those of adam then convert, each copy h's values in its
 * layout: widened to fp32 (blocks of 8, as where the passes widen 16-bit
 * weights) or bf16 in pairs (blocks of 16: AVX512-BF16 kernels). */
static void casts_with_copies(starnn_dtype hdt, int pairs, int ncopies, int64_t O, int64_t I,
                              const struct starnn_blocked_weights *G)
{
	const size_t n = (size_t)(O * I * 9);
	int64_t shape[4] = {O, I, 3, 3};
	const char *dn = starnn_dtype_name(hdt);
	float *w0 = test_random(n, -1, 1);
	starnn_tensor *g = test_tensor("g", 4, shape, NULL), *ha, *hr, *gb = grad_in(g, G);
	char gl[24];
	starnn_wlayout_name(G, gl, sizeof gl);
	struct upd a = upd_new("a", O, I, 3, w0, gb), r = upd_new("r", O, I, 3, w0, g);
	TEST_OK(starnn_tensor_create(&ha, "ha", hdt, 4, shape));
	TEST_OK(starnn_tensor_create(&hr, "hr", hdt, 4, shape));
	struct starnn_blocked_weights L[2];
	struct starnn_derived *e[2];
	for (int c = 0; c < ncopies; c++) {
		L[c] = pairs ? (struct starnn_blocked_weights){(uint32_t)O, (uint32_t)I, 9, 16, 16, (uint32_t)c, 24, 64, 2, 0}
		             : (struct starnn_blocked_weights){(uint32_t)O, (uint32_t)I, 9, 8, 8, (uint32_t)c, 24, 64, 0, 0};
		const size_t bytes = starnn_blocked_weights_bytes(&L[c]);
		starnn_tensor *t;
		TEST_OK(starnn_tensor_create(&t, "h.packed", STARNN_U8, 1, (int64_t[]){(int64_t)bytes}));
		unsigned char *b = malloc(bytes); /* h is zero: so are the copies' data (all-zero bits) */
		memset(b, SENTINEL, bytes);
		unsigned char *d = (unsigned char *)starnn_blocked_weights_data(&L[c], t->host);
		memset(b + (d - (unsigned char *)t->host), 0,
		       starnn_blocked_weights_floats(&L[c]) * starnn_blocked_weights_es(&L[c]));
		TEST_OK(starnn_tensor_write(t, b));
		free(b);
		e[c] = starnn_tensor_add_derived(ha, 300 + (uint64_t)c, t);
		TEST_ASSERT(e[c] != NULL, "add_derived");
		e[c]->layout = L[c];
		e[c]->version = ha->version;
	}
	struct starnn_adam_params ap = {1e-2f, 0.9f, 0.999f, 1e-8f, 1e-3f, 0};
	uint16_t *hv = malloc(n * sizeof *hv), *rv = malloc(n * sizeof *rv);
	for (int step = 1; step <= 3; step++) {
		float *gv = test_random(n, -1, 1);
		grad_write(g, gb, gv);
		unsigned char *before[2];
		for (int c = 0; c < ncopies; c++) {
			before[c] = malloc(e[c]->d->cols);
			TEST_OK(starnn_tensor_read(e[c]->d, before[c]));
			starnn_tensor_use_derived(e[c]); /* a pass read them */
		}
		TEST_OK(starnn_adam_cast(a.w, gb, a.s1, a.s2, &ap, step, 0.5f, ha));
		TEST_OK(starnn_adam(r.w, g, r.s1, r.s2, &ap, step, 0.5f));
		TEST_OK(starnn_convert(r.w, hr));
		float *wa = test_read(a.w), *wr = test_read(r.w), *sa = test_read(a.s1), *sr = test_read(r.s1);
		TEST_OK(starnn_tensor_read(ha, hv));
		TEST_OK(starnn_tensor_read(hr, rv));
		TEST_ASSERT(memcmp(wa, wr, n * sizeof *wa) == 0 && memcmp(sa, sr, n * sizeof *sa) == 0 &&
		                memcmp(hv, rv, n * sizeof *hv) == 0,
		            "adam_cast to %s with %d copies, gradient %s, step %d: w, m or h differ from adam then convert",
		            dn, ncopies, gl, step);
		for (int c = 0; c < ncopies; c++) {
			const size_t bytes = e[c]->d->cols;
			unsigned char *after = malloc(bytes), *want = malloc(bytes);
			TEST_OK(starnn_tensor_read(e[c]->d, after));
			memcpy(want, before[c], bytes);
			unsigned char *d = want + ((unsigned char *)starnn_blocked_weights_data(&L[c], e[c]->d->host) -
			                           (unsigned char *)e[c]->d->host);
			for (size_t o = 0; o < (size_t)O; o++)
				for (size_t i = 0; i < (size_t)I; i++)
					for (size_t t = 0; t < 9; t++) {
						const uint16_t h = rv[(o * (size_t)I + i) * 9 + t];
						if (pairs) {
							memcpy(d + onednn_pair_offset((size_t)I, 9, c, o, i, t) * 2, &h, sizeof h);
						} else {
							float f = hdt == STARNN_BF16 ? starnn_bf16_to_float(h) : starnn_half_to_float(h);
							memcpy(d + onednn_offset((size_t)I, 9, 8, c, o, i, t) * 4, &f, sizeof f);
						}
					}
			TEST_ASSERT(memcmp(after, want, bytes) == 0,
			            "adam_cast to %s with %d copies of %lld x %lld, step %d, copy %d (%s): not h's values, or the "
			            "padding / header touched", dn, ncopies, (long long)O, (long long)I, step, c,
			            pairs ? (c ? "ABcd8a16b2a" : "ABcd8b16a2b") : (c ? "OIhw8o8i" : "OIhw8i8o"));
			TEST_ASSERT(e[c]->version == ha->version && !e[c]->used, "adam_cast step %d copy %d: version %llu (h %llu)",
			            step, c, (unsigned long long)e[c]->version, (unsigned long long)ha->version);
			free(after), free(want), free(before[c]);
		}
		free(gv), free(wa), free(wr), free(sa), free(sr);
	}
	free(hv), free(rv), free(w0);
	starnn_tensor *all[] = {a.w, a.s1, a.s2, r.w, r.s1, r.s2, g, ha, hr, gb != g ? gb : NULL};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		kernel_vs_naive(4);
		kernel_vs_naive(2);
	}
	if (!TEST_ON_DEVICE) {
		put_rows_kernel();
		put_pairs_kernel();
		get_rows_kernel();
		put_trans_kernel();
		for (int op = OPT_ADAM; op <= OPT_SGD_AMP; op++)
			for (int c = 1; c <= 2; c++) {
				updates_with_copies((enum opt)op, c, 12, 13, NULL); /* partial blocks */
				updates_with_copies((enum opt)op, c, 24, 83, NULL); /* tiles of 56 input channels, then 27 */
			}
		for (int c = 1; c <= 2; c++) {
			narrows_with_copies(STARNN_BF16, c, 12, 13);
			narrows_with_copies(STARNN_FP16, c, 24, 83);
			casts_with_copies(STARNN_BF16, 1, c, 20, 13, NULL); /* partial blocks of 16 */
			casts_with_copies(STARNN_BF16, 1, c, 48, 40, NULL);
			casts_with_copies(STARNN_FP16, 0, c, 12, 13, NULL);
			casts_with_copies(STARNN_BF16, 0, c, 24, 83, NULL);
		}
		/* gradients in the weight-gradient kernels' layouts (blocks of 8
		 * and 16, either channel fastest), with 0, 1 and 2 copies; 48 x
		 * 112 x 9: tiles of 48 input channels with 16-blocks, then 16 */
		for (uint32_t b = 8; b <= 24; b += 8)
			for (uint32_t ii = 0; ii <= (b < 24); ii++) {
				/* (b 24: Acdb16a, one block of all 112 input channels) */
				const struct starnn_blocked_weights G = {48, 112, 9, b < 24 ? b : 16, b < 24 ? b : 112, ii, 0, 0, 0, 0};
				for (int c = 0; c <= 2; c++) {
					for (int op = OPT_ADAM; op <= OPT_SGD_AMP; op++)
						updates_with_copies((enum opt)op, c, 48, 112, &G);
					casts_with_copies(STARNN_BF16, 1, c, 48, 112, &G);
					casts_with_copies(STARNN_FP16, 0, c, 48, 112, &G);
				}
			}
		blocked_grads();
	}
	codelets(STARNN_FP32);
	codelets(STARNN_FP16);
	codelets(STARNN_BF16);
	bad_arguments();
	return test_finish();
}
