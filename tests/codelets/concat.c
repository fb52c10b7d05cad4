/* concat: the CPU kernels against naive loops on strided data; the copy
 * codelets (CPU, or CUDA in the _cuda build) against naive loops,
 * with every beta combination of the backward (beta 0 must not read the
 * NaN-filled output); the no-copy path (starnn_concat_views) against the
 * copy path: producers (convt2d, add) write into the views, tasks then read
 * the whole tensor, write into the views again, and the backward reads
 * dcat's views; the shape checks; the 16-bit variants.
 *
 * Tolerances: copies are exact everywhere. The backward's beta * d + s uses
 * betas 0, 1, 0.5 and 2: powers of two, so beta * d is exact and the result
 * is one rounding of the exact sum, whether or not a compiler fuses it into
 * an FMA (nvcc does): bit for bit the same on CPU and CUDA, compared
 * exactly. The same holds for the scale / add steps of views_vs_copy. The
 * one sum there, convt2d (c + 1 terms per output), may run in another
 * order into a view than into a tensor of its own (cuDNN picks its
 * algorithm per layout): both paths are checked against the convolution in
 * double within its rounding bound (tests/testlib.h, test_close_sum), the
 * skip half exactly. The 16-bit variants copy bit patterns or round one
 * exact fp32 addition once: exactly the fp32 result rounded to the type.
 *
 * Bits: the codelets' copies are the data's bits everywhere; except on CUDA,
 * the backward's results are also the CPU kernels' bit for bit
 * (test_same_bits, NaN and -0 included in the copied data). On OpenCL,
 * views_vs_copy does not run (convt2d has no OpenCL kernels yet). */
#include "codelets/axpy.h"
#include "codelets/concat.h"
#include "codelets/convt2d.h"
#include "codelets/kernels/concat.h"
#include "tests/testlib.h"
#include "tests/codelets/halfcheck.h"
#include "tests/codelets/simdcheck.h"

static void kernels_vs_naive(void)
{
	size_t rows = 3, ca = 10, cb = 7, lda = 13, ldb = 9, ldc = 20;
	float *a = test_random(rows * lda, -1, 1), *b = test_random(rows * ldb, -1, 1);
	float *cat = test_random(rows * ldc, -1, 1), *ref = malloc(rows * ldc * sizeof *ref);
	memcpy(ref, cat, rows * ldc * sizeof *ref);
	starnn_concat_fwd_cpu(rows, ca, a, lda, cb, b, ldb, cat, ldc);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < ca + cb; c++)
			ref[r * ldc + c] = c < ca ? a[r * lda + c] : b[r * ldb + c - ca];
	test_close("concat_fwd_cpu strided", cat, ref, rows * ldc, 0, 0);

	float betas[3][2] = {{0, 1}, {1, 0}, {0.5f, 2}};
	for (int k = 0; k < 3; k++) {
		float ba = betas[k][0], bb = betas[k][1];
		float *da = test_random(rows * lda, -1, 1), *db = test_random(rows * ldb, -1, 1);
		for (size_t r = 0; r < rows; r++) {
			for (size_t c = 0; ba == 0 && c < ca; c++)
				da[r * lda + c] = NAN;
			for (size_t c = 0; bb == 0 && c < cb; c++)
				db[r * ldb + c] = NAN;
		}
		float *ra = malloc(rows * lda * sizeof *ra), *rb = malloc(rows * ldb * sizeof *rb);
		memcpy(ra, da, rows * lda * sizeof *ra);
		memcpy(rb, db, rows * ldb * sizeof *rb);
		starnn_concat_bwd_cpu(rows, ca, cb, cat, ldc, ba, da, lda, bb, db, ldb);
		for (size_t r = 0; r < rows; r++) {
			for (size_t c = 0; c < ca; c++)
				ra[r * lda + c] = (ba == 0 ? 0 : ba * ra[r * lda + c]) + cat[r * ldc + c];
			for (size_t c = 0; c < cb; c++)
				rb[r * ldb + c] = (bb == 0 ? 0 : bb * rb[r * ldb + c]) + cat[r * ldc + ca + c];
		}
		char what[64];
		snprintf(what, sizeof what, "concat_bwd_cpu da beta %g", ba);
		test_close(what, da, ra, rows * lda, 0, 0);
		snprintf(what, sizeof what, "concat_bwd_cpu db beta %g", bb);
		test_close(what, db, rb, rows * ldb, 0, 0);
		free(da), free(db), free(ra), free(rb);
	}
	free(a), free(b), free(cat), free(ref);
}

/* The copy codelets vs naive loops on dense tensors. */
static void codelets_vs_kernels(int64_t n, int64_t c1, int64_t c2, int64_t h, int64_t w)
{
	int64_t as[4] = {n, c1, h, w}, bs[4] = {n, c2, h, w}, cs[4] = {n, c1 + c2, h, w};
	size_t hw = (size_t)(h * w), na = (size_t)(n * c1) * hw, nb = (size_t)(n * c2) * hw, nc = na + nb;
	size_t ca = (size_t)c1 * hw, cb = (size_t)c2 * hw, rows = (size_t)n;
	float *a = test_random(na, -1, 1), *b = test_random(nb, -1, 1), *dcat = test_random(nc, -1, 1);
	/* patterns a copy must keep: -0 and a NaN with a payload, in the first
	 * row when there are several (the value checks below then skip it, the
	 * bit checks cover it) */
	const uint32_t specials[2] = {0x80000000u, 0x7fc01234u};
	const size_t skip = rows >= 2;
	for (int k = 0; skip && k < 2; k++) {
		memcpy(&a[k * (ca - 1)], &specials[k], 4);
		memcpy(&b[k * (cb - 1)], &specials[1 - k], 4);
		memcpy(&dcat[k * (ca + cb - 1)], &specials[k], 4);
	}
	starnn_tensor *ta = test_tensor("a", 4, as, a), *tb = test_tensor("b", 4, bs, b);
	starnn_tensor *tc = test_tensor("cat", 4, cs, NULL), *tdc = test_tensor("dcat", 4, cs, dcat);
	float *ref = malloc(nc * sizeof *ref);
	for (size_t r = 0; r < rows; r++)
		for (size_t k = 0; k < ca + cb; k++)
			ref[r * (ca + cb) + k] = k < ca ? a[r * ca + k] : b[r * cb + k - ca];
	TEST_OK(starnn_concat_fwd(ta, tb, tc));
	float *got = test_read(tc);
	char what[96];
	snprintf(what, sizeof what, "concat_fwd codelet %lldx(%lld+%lld)x%lldx%lld", (long long)n, (long long)c1,
	         (long long)c2, (long long)h, (long long)w);
	test_close(what, got + skip * (ca + cb), ref + skip * (ca + cb), nc - skip * (ca + cb), 0, 0);
	test_same_bits(what, got, ref, nc, 4);
	free(got);

	/* powers-of-two betas: one rounding, exact on CPU and CUDA */
	/* ... and betas that round beta * d (the last pair): the CPU kernel's
	 * two roundings, checked against its bits only (not on CUDA) */
	float betas[5][2] = {{0, 0}, {0, 1}, {1, 0}, {0.5f, 2}, {-0.3f, 1.7f}};
	for (int k = 0; k < (TEST_ON_CUDA ? 4 : 5); k++) {
		const int exact = k < 4;
		float ba = betas[k][0], bb = betas[k][1];
		float *da = test_random(na, -1, 1), *db = test_random(nb, -1, 1);
		for (size_t i = 0; ba == 0 && i < na; i++)
			da[i] = NAN;
		for (size_t i = 0; bb == 0 && i < nb; i++)
			db[i] = NAN;
		starnn_tensor *tda = test_tensor("da", 4, as, da), *tdb = test_tensor("db", 4, bs, db);
		/* the CPU kernel on host copies */
		float *wa = malloc(na * sizeof *wa), *wb = malloc(nb * sizeof *wb);
		memcpy(wa, da, na * sizeof *wa), memcpy(wb, db, nb * sizeof *wb);
		starnn_concat_bwd_cpu(rows, ca, cb, dcat, ca + cb, ba, wa, ca, bb, wb, cb);
		/* beta d + s rounded once (the sum exact in double) */
		for (size_t r = 0; r < rows; r++) {
			for (size_t j = 0; j < ca; j++) {
				size_t i = r * ca + j;
				double sv = dcat[r * (ca + cb) + j];
				da[i] = (float)(ba == 0 ? sv : (double)ba * da[i] + sv);
			}
			for (size_t j = 0; j < cb; j++) {
				size_t i = r * cb + j;
				double sv = dcat[r * (ca + cb) + ca + j];
				db[i] = (float)(bb == 0 ? sv : (double)bb * db[i] + sv);
			}
		}
		TEST_OK(starnn_concat_bwd(tdc, ba, tda, bb, tdb));
		float *ga = test_read(tda), *gb = test_read(tdb);
		snprintf(what, sizeof what, "concat_bwd codelet da beta %g, c1 %lld", ba, (long long)c1);
		if (exact)
			test_close(what, ga + skip * ca, da + skip * ca, na - skip * ca, 0, 0);
		if (!TEST_ON_CUDA)
			test_same_bits(what, ga, wa, na, 4);
		snprintf(what, sizeof what, "concat_bwd codelet db beta %g, c2 %lld", bb, (long long)c2);
		if (exact)
			test_close(what, gb + skip * cb, db + skip * cb, nb - skip * cb, 0, 0);
		if (!TEST_ON_CUDA)
			test_same_bits(what, gb, wb, nb, 4);
		free(ga), free(gb), free(da), free(db), free(wa), free(wb);
		starnn_tensor_destroy(tda), starnn_tensor_destroy(tdb);
	}
	starnn_tensor_destroy(ta), starnn_tensor_destroy(tb), starnn_tensor_destroy(tc), starnn_tensor_destroy(tdc);
	free(a), free(b), free(dcat), free(ref);
}

/* The decoder's pattern without a copy: convt2d writes the upsampled half
 * straight into cat's first view, the skip is written into the second, and
 * the whole cat is then read (by the host and by tasks). Compared with the
 * copy path built from separate tensors. */
static void views_vs_copy(int64_t n, int64_t c, int64_t up, int64_t skip, int64_t h, int64_t w)
{
	int64_t xs[4] = {n, c, h, w}, ws[4] = {c, up, 2, 2}, bs[1] = {up};
	int64_t us[4] = {n, up, 2 * h, 2 * w}, ss[4] = {n, skip, 2 * h, 2 * w}, cs[4] = {n, up + skip, 2 * h, 2 * w};
	size_t nx = (size_t)(n * c * h * w), ns = (size_t)(n * skip * 4 * h * w), nc = (size_t)(n * (up + skip) * 4 * h * w);
	float *x = test_random(nx, -1, 1), *wt = test_random((size_t)(c * up * 4), -1, 1);
	float *bias = test_random((size_t)up, -1, 1), *s = test_random(ns, -1, 1);
	starnn_tensor *tx = test_tensor("x", 4, xs, x), *tw = test_tensor("w", 4, ws, wt), *tb = test_tensor("b", 1, bs, bias);
	starnn_tensor *ts = test_tensor("skip", 4, ss, s);

	/* Copy path. */
	starnn_tensor *tu = test_tensor("up", 4, us, NULL), *tcopy = test_tensor("cat_copy", 4, cs, NULL);
	TEST_OK(starnn_convt2d_fwd(tx, tw, tb, tu));
	TEST_OK(starnn_concat_fwd(tu, ts, tcopy));
	float *want = test_read(tcopy);

	/* View path. */
	starnn_tensor *tcat = test_tensor("cat", 4, cs, NULL), *va, *vb, *va2, *vb2;
	TEST_OK(starnn_concat_views(tcat, up, &va, &vb));
	TEST_OK(starnn_concat_views(tcat, up, &va2, &vb2));
	TEST_ASSERT(va == va2 && vb == vb2, "concat_views: the same split must give the same views");
	TEST_ASSERT(va->shape[1] == up && vb->shape[1] == skip && va->shape[2] == 2 * h && vb->shape[3] == 2 * w,
	            "concat_views: view shapes");
	TEST_OK(starnn_convt2d_fwd(tx, tw, tb, va));
	TEST_OK(starnn_add(1.0f, ts, 0.0f, ts, vb)); /* the skip, copied by another op */
	float *got = test_read(tcat);
	/* the reference: the convolution in double (w: [c, up, 2, 2], stride
	 * 2: c + 1 terms per output), the skip exactly */
	size_t ld = nc / (size_t)n, ca = (size_t)(up * 4 * h * w), H = (size_t)(2 * h), W = (size_t)(2 * w);
	struct test_sums ref = test_sums_new(nc);
	for (size_t r = 0; r < (size_t)n; r++) {
		for (size_t o = 0; o < (size_t)up; o++)
			for (size_t p = 0; p < H; p++)
				for (size_t q = 0; q < W; q++) {
					double acc = bias[o], mag = fabs(acc);
					for (size_t k = 0; k < (size_t)c; k++) {
						double term = (double)x[((r * (size_t)c + k) * (size_t)h + p / 2) * (size_t)w + q / 2] *
						              wt[(k * (size_t)up + o) * 4 + (p % 2) * 2 + q % 2];
						acc += term, mag += fabs(term);
					}
					size_t i = r * ld + (o * H + p) * W + q;
					ref.val[i] = acc, ref.mag[i] = mag;
				}
		for (size_t k = 0; k < ld - ca; k++)
			test_sums_copy(&ref, r * ld + ca + k, s[r * (ld - ca) + k]);
	}
	char what[96];
	snprintf(what, sizeof what, "views n%lld up%lld skip%lld %lldx%lld", (long long)n, (long long)up,
	         (long long)skip, (long long)H, (long long)W);
	test_close_sum(what, got, ref.val, ref.mag, nc, (size_t)c + 1, TEST_U32);
	snprintf(what, sizeof what, "copy n%lld up%lld skip%lld %lldx%lld", (long long)n, (long long)up,
	         (long long)skip, (long long)H, (long long)W);
	test_close_sum(what, want, ref.val, ref.mag, nc, (size_t)c + 1, TEST_U32);
	test_sums_free(&ref);

	/* A task on the whole, then producers on the views again, then the
	 * whole: scalings by powers of two, exact. */
	TEST_OK(starnn_scale(2.0f, tcat));
	TEST_OK(starnn_scale(-1.0f, vb));
	for (size_t r = 0; r < (size_t)n; r++)
		for (size_t k = 0; k < ld; k++)
			want[r * ld + k] = got[r * ld + k] * (k < ca ? 2.0f : -2.0f);
	free(got);
	got = test_read(tcat);
	test_close("whole, then views, then whole", got, want, nc, 0, 0);
	free(got);

	/* Backward: dcat's views are the two gradients (no copy); the copy path
	 * with beta = 1 accumulates the skip gradient into an existing one. */
	starnn_tensor *tdc = test_tensor("dcat", 4, cs, want), *dva, *dvb;
	TEST_OK(starnn_concat_views(tdc, up, &dva, &dvb));
	starnn_tensor *tdu = test_tensor("dup", 4, us, NULL), *tds = test_tensor("dskip", 4, ss, s);
	TEST_OK(starnn_concat_bwd(tdc, 0.0f, tdu, 1.0f, tds));
	starnn_tensor *viewsum = test_tensor("viewsum", 4, ss, NULL);
	TEST_OK(starnn_add(1.0f, dvb, 1.0f, ts, viewsum)); /* skip + dcat[:, up:] read through the view */
	float *g1 = test_read(tds), *g2 = test_read(viewsum), *g3 = test_read(tdu), *g4 = test_read(dva);
	test_close("concat_bwd beta 1 vs the view's sum", g1, g2, ns, 0, 0); /* both fl(s + d) */
	test_close("concat_bwd beta 0 vs the view", g3, g4, nc - ns, 0, 0);
	free(g1), free(g2), free(g3), free(g4);

	starnn_tensor_destroy(tx), starnn_tensor_destroy(tw), starnn_tensor_destroy(tb), starnn_tensor_destroy(ts);
	starnn_tensor_destroy(tu), starnn_tensor_destroy(tcopy), starnn_tensor_destroy(tcat), starnn_tensor_destroy(tdc);
	starnn_tensor_destroy(tdu), starnn_tensor_destroy(tds), starnn_tensor_destroy(viewsum);
	free(x), free(wt), free(bias), free(s), free(want);
}

static void bad_shapes(void)
{
	starnn_tensor *a, *b, *cat, *bad, *bh, *cath, *va, *vb;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 4, 2, 3, 4, 5));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 4, 2, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&cat, "cat", STARNN_FP32, 4, 2, 5, 4, 5));
	TEST_OK(starnn_tensor_new(&bad, "bad", STARNN_FP32, 4, 2, 2, 5, 4));
	TEST_OK(starnn_tensor_new(&bh, "bh", STARNN_FP16, 4, 2, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&cath, "cath", STARNN_FP32, 4, 2, 6, 4, 5));
	TEST_ASSERT(starnn_concat_fwd(a, bad, cat) == STARNN_EINVAL, "concat_fwd: spatial mismatch accepted");
	TEST_ASSERT(starnn_concat_fwd(a, b, cath) == STARNN_EINVAL, "concat_fwd: channel sum mismatch accepted");
	TEST_ASSERT(starnn_concat_fwd(a, bh, cat) == STARNN_EINVAL, "concat_fwd: fp16 accepted");
	TEST_ASSERT(starnn_concat_bwd(cat, 0.0f, a, 0.0f, bad) == STARNN_EINVAL, "concat_bwd: mismatch accepted");
	TEST_ASSERT(starnn_concat_views(cat, 0, &va, &vb) == STARNN_EINVAL, "concat_views: c1 = 0 accepted");
	TEST_ASSERT(starnn_concat_views(cat, 5, &va, &vb) == STARNN_EINVAL, "concat_views: c1 = C accepted");
	TEST_OK(starnn_concat_fwd(a, b, cat));
	TEST_OK(starnn_concat_bwd(cat, 0.0f, a, 1.0f, b));
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(cat), starnn_tensor_destroy(bad);
	starnn_tensor_destroy(bh), starnn_tensor_destroy(cath);
}

/* ------------------------------------------------------ mixed precision
 * starnn_concat_*_mp on fp16 / bf16 tensors against the fp32 codelets on
 * the same values: forward, backward with (beta_a, beta_b) = (1, 0) and
 * (0, 1). Copies of 16-bit values and one exact fp32 addition rounded once:
 * exactly the fp32 result rounded to dt, on CPU and CUDA (half_exact). */
static void half_exact(const char *what, starnn_dtype dt, const float *got, const float *ref, size_t n)
{
	float *r = malloc((n + 1) * sizeof *r);
	for (size_t i = 0; i < n; i++)
		r[i] = hc_round1(dt, ref[i]);
	char label[160];
	snprintf(label, sizeof label, "%s (%s)", what, starnn_dtype_name(dt));
	test_close(label, got, r, n, 0, 0);
	if (!TEST_ON_CUDA) /* the _mp CPU kernels give these bits (mp_kernels) */
		test_same_bits(label, got, r, n, 4);
	free(r);
}

static void half_vs_fp32(int64_t n, int64_t c1, int64_t c2, int64_t h, int64_t w, starnn_dtype dt)
{
	int64_t as[4] = {n, c1, h, w}, bs[4] = {n, c2, h, w}, cs[4] = {n, c1 + c2, h, w};
	size_t na = (size_t)(n * c1 * h * w), nb = (size_t)(n * c2 * h * w), nc = na + nb;
	float *a = hc_random(dt, na, -1, 1), *b = hc_random(dt, nb, -1, 1), *dc = hc_random(dt, nc, -1, 1);
	float *da0 = hc_random(dt, na, -1, 1), *db0 = hc_random(dt, nb, -1, 1);
	starnn_tensor *t[2][6];
	for (int k = 0; k < 2; k++) {
		starnn_dtype d = k ? dt : STARNN_FP32;
		t[k][0] = hc_tensor("a", d, 4, as, a), t[k][1] = hc_tensor("b", d, 4, bs, b);
		t[k][2] = hc_tensor("cat", d, 4, cs, NULL), t[k][3] = hc_tensor("dcat", d, 4, cs, dc);
		t[k][4] = hc_tensor("da", d, 4, as, da0), t[k][5] = hc_tensor("db", d, 4, bs, db0);
		TEST_OK(starnn_concat_fwd_mp(t[k][0], t[k][1], t[k][2]));
		TEST_OK(starnn_concat_bwd_mp(t[k][3], 1.0f, t[k][4], 0.0f, t[k][5]));
	}
	size_t sizes[6] = {0, 0, nc, 0, na, nb};
	const char *names[6] = {"", "", "concat_fwd_mp", "", "concat_bwd_mp da (beta 1)", "concat_bwd_mp db (beta 0)"};
	for (int i = 2; i < 6; i++) {
		if (i == 3)
			continue;
		float *r = test_read(t[0][i]), *g = test_read(t[1][i]);
		half_exact(names[i], dt, g, r, sizes[i]);
		free(r), free(g);
	}
	for (int k = 0; k < 2; k++)
		TEST_OK(starnn_concat_bwd_mp(t[k][3], 0.0f, t[k][4], 1.0f, t[k][5]));
	for (int i = 4; i < 6; i++) {
		float *r = test_read(t[0][i]), *g = test_read(t[1][i]);
		half_exact(i == 4 ? "concat_bwd_mp da (beta 0)" : "concat_bwd_mp db (beta 1)", dt, g, r, sizes[i]);
		free(r), free(g);
	}
	TEST_ASSERT(starnn_concat_fwd_mp(t[1][0], t[0][1], t[1][2]) == STARNN_EINVAL, "concat_fwd_mp: mixed dtypes");
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 6; i++)
			starnn_tensor_destroy(t[k][i]);
	free(a), free(b), free(dc), free(da0), free(db0);
}

/* ----------------------------------- instruction-set levels, 16-bit kernels
 * The _mp kernels on data of dt against the fp32 kernels on the same values
 * widened (forward and beta 0: the very bit patterns; beta != 0: bitwise
 * the fp32 result rounded once), at every instruction-set level, and every
 * level bitwise equal to the generic one. Strided rows (padding
 * untouched), rows longer than the kernels' chunk of 256. */
static void mp_kernels(starnn_dtype dt, size_t rows, size_t ca, size_t cb, float ba, float bb)
{
	const size_t lda = ca + 3, ldb = cb + 1, ldc = ca + cb + 5, es = sc_es(dt);
	char what[160];
	snprintf(what, sizeof what, "concat %s kernels %zu x (%zu + %zu) beta %g %g", starnn_dtype_name(dt), rows, ca, cb,
	         ba, bb);
	void *a = sc_random(dt, rows * lda, -1, 1), *b = sc_random(dt, rows * ldb, -1, 1);
	void *cat0 = sc_random(dt, rows * ldc, -1, 1), *dcat = sc_random(dt, rows * ldc, -1, 1);
	void *da0 = sc_random(dt, rows * lda, -1, 1), *db0 = sc_random(dt, rows * ldb, -1, 1);
	float *a32 = sc_widen(dt, a, rows * lda), *b32 = sc_widen(dt, b, rows * ldb), *dc32 = sc_widen(dt, dcat, rows * ldc);
	void *res[3][3] = {{0}};
	int nlev = 0;
	SC_FOR_EACH_LEVEL(lv) {
		float *cr = sc_widen(dt, cat0, rows * ldc), *dar = sc_widen(dt, da0, rows * lda);
		float *dbr = sc_widen(dt, db0, rows * ldb);
		starnn_concat_fwd_cpu(rows, ca, a32, lda, cb, b32, ldb, cr, ldc);
		starnn_concat_bwd_cpu(rows, ca, cb, dc32, ldc, ba, dar, lda, bb, dbr, ldb);
		void *cg = sc_dup(dt, cat0, rows * ldc), *dag = sc_dup(dt, da0, rows * lda), *dbg = sc_dup(dt, db0, rows * ldb);
		starnn_concat_fwd_mp_cpu(dt, rows, ca, a, lda, cb, b, ldb, cg, ldc);
		starnn_concat_bwd_mp_cpu(dt, rows, ca, cb, dcat, ldc, ba, dag, lda, bb, dbg, ldb);
		void *cw = sc_rounded(dt, cr, rows * ldc), *daw = sc_rounded(dt, dar, rows * lda);
		void *dbw = sc_rounded(dt, dbr, rows * ldb);
		char w2[200];
		snprintf(w2, sizeof w2, "%s: fwd vs fp32 kernel", what);
		sc_same(w2, cg, cw, rows * ldc, es);
		snprintf(w2, sizeof w2, "%s: bwd da vs fp32 kernel rounded", what);
		sc_same(w2, dag, daw, rows * lda, es);
		snprintf(w2, sizeof w2, "%s: bwd db vs fp32 kernel rounded", what);
		sc_same(w2, dbg, dbw, rows * ldb, es);
		res[nlev][0] = cg, res[nlev][1] = dag, res[nlev][2] = dbg;
		if (nlev > 0) {
			snprintf(w2, sizeof w2, "%s: vs generic level", what);
			sc_same(w2, res[nlev][0], res[0][0], rows * ldc, es);
			sc_same(w2, res[nlev][1], res[0][1], rows * lda, es);
			sc_same(w2, res[nlev][2], res[0][2], rows * ldb, es);
		}
		nlev++;
		free(cr), free(dar), free(dbr), free(cw), free(daw), free(dbw);
	}
	sc_level_done();
	for (int i = 0; i < nlev; i++)
		for (int j = 0; j < 3; j++)
			free(res[i][j]);
	free(a), free(b), free(cat0), free(dcat), free(da0), free(db0), free(a32), free(b32), free(dc32);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		SC_FOR_EACH_LEVEL(lv)
			kernels_vs_naive();
		sc_level_done();
		for (int t = 0; t < 3; t++) {
			starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_FP16 : STARNN_BF16;
			mp_kernels(dt, 3, 700, 37, 0.0f, 1.0f);
			mp_kernels(dt, 2, 5, 300, 0.5f, 0.0f);
			mp_kernels(dt, 1, 256, 1, 1.0f, 2.0f);
		}
	}
	codelets_vs_kernels(1, 1, 1, 1, 1);
	codelets_vs_kernels(2, 3, 5, 7, 4);
	codelets_vs_kernels(8, 16, 16, 32, 32);
	codelets_vs_kernels(3, 5, 3, 64, 48);
	if (!TEST_ON_OPENCL) { /* convt2d: no OpenCL kernels yet */
		views_vs_copy(1, 3, 2, 2, 1, 1);
		views_vs_copy(2, 5, 3, 4, 3, 7);
		views_vs_copy(4, 32, 16, 16, 16, 16);
		views_vs_copy(8, 8, 4, 5, 32, 32);
	}
	bad_shapes();
	for (int t = 0; t < 2; t++) {
		starnn_dtype dt = t ? STARNN_BF16 : STARNN_FP16;
		half_vs_fp32(2, 3, 5, 4, 6, dt);
		half_vs_fp32(4, 16, 16, 32, 32, dt);
	}
	return test_finish();
}
