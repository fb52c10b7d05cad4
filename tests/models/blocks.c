/* blocks: one UNet encoder block and one decoder block, forward and backward
 * in training mode, built from starnn's operations as task graphs, against
 * PyTorch on the same weights and inputs (tests/data/blocks/{encoder,decoder}.bin, made by
 * tools/ref/blocks.py with torch 2.15; this test needs no torch), in the
 * reference's convention (the files' bn.eps and cat.skip_first; committed:
 * the UNet's default, the study's Keras model's: eps 1e-3, [skip, up]).
 *
 *   encoder: x [3,5,11,14] -> conv3x3(5->7) -> BN+ReLU -> conv3x3(7->7)
 *            -> BN+ReLU = skip -> maxpool 2x2 = pool [3,7,5,7]
 *            loss = sum(skip * g_skip) + sum(pool * g_pool)
 *   decoder: coarse [3,14,6,5] -> convt2d 2x2 s2 (14->7) into the up view
 *            of cat [3,14,12,10], skip [3,7,12,10] copied into the skip view
 *            (starnn_concat_views, no concat copy; [skip, up], or [up, skip]
 *            for a starnn-v1 reference) -> BN(14)+ReLU
 *            -> conv3x3(14->7) -> BN+ReLU -> conv3x3(7->7) -> BN+ReLU = out
 *            loss = sum(out * g_out)
 * Each block runs twice: on the whole batch, and split into 2 micro-batches
 * (2 + 1 samples: the convolutions, pooling and transposed convolution run
 * per part, weight gradients accumulate with beta = 1, the batch norms take
 * the parts and keep whole-batch statistics; the decoder's cat is split by
 * batch, then each part by channels).
 *
 * Compared: every forward activation the reference holds (the BN inputs,
 * skip / pool / cat / out), every input and parameter gradient, and the BN
 * running statistics after the step. Error per element:
 *   |got - ref| / max(1, |ref|)  <= TOL = 1e-4,
 * except for the conv / convt biases: each feeds a BN, which removes any
 * per-channel shift, so their exact gradient is 0 and both torch's and our
 * values are float32 rounding noise (|ref| <= 4e-5 here): they are checked
 * against TOL_ZERO = 5e-4 (absolute), which a gradient summed over a wrong
 * range or channel (O(1)) still fails. (The bias gradients themselves are
 * checked by finite differences in the codelet tests.)
 * Measured on this machine (OpenBLAS, 2 CPU workers, both variants):
 *   activations, input gradients:          <= 8.9e-7
 *   BN gamma / beta gradients:             <= 6.5e-6
 *   BN running statistics:                 <= 1.2e-7
 *   conv / convt weight gradients:         <= 2.1e-5
 *   biases (zero-gradient noise):          <= 3.2e-5
 * tools/ref/blocks.py --fp64 shows that this is float32 rounding shared by
 * both sides: against float64 results, starnn's weight gradients are off by
 * <= 1.7e-5 and torch's float32 ones by <= 1.8e-5. So TOL leaves a margin
 * of ~5x on the weight gradients and >= 15x elsewhere, while a formula or
 * indexing error fails: running statistics not updated gave 5e-2, a BN eps
 * of 1e-3 against a reference of 1e-5 gives up to 8.8 (checked with edited
 * copies of the reference files), and the other concatenation order fails
 * every decoder tensor after it.
 * The worst error of every tensor is printed.
 *
 * Usage: tests/models/blocks [DATADIR]   (default: the source tree's
 * tests/data/blocks). */
#include <errno.h>

#include "codelets/batchnorm.h"
#include "codelets/conv2d.h"
#include "codelets/concat.h"
#include "codelets/convt2d.h"
#include "codelets/copy.h"
#include "codelets/maxpool.h"
#include "tests/testlib.h"

#ifndef BLOCKS_DATADIR
#define BLOCKS_DATADIR "tests/data/blocks"
#endif

#define TOL 1e-4
#define TOL_ZERO 5e-4 /* gradients that are exactly 0 (see above) */

/* ------------------------------------------------------ reference files */

struct ref_tensor {
	char name[64];
	int ndim;
	int64_t shape[STARNN_MAX_DIMS];
	size_t numel;
	float *data;
};

struct ref {
	char path[512];
	char comment[256];
	int n;
	struct ref_tensor t[64];
};

static void ref_fail(const struct ref *r, const char *what)
{
	fprintf(stderr, "FAIL %s: %s\n", r->path, what);
	exit(1);
}

/* The format of tools/ref/blocks.py: "starnn-ref 1", "# comment", one line
 * "name ndim d0 .. dk" per tensor, "end", then the float32 data (little-
 * endian, as this host: checked by the first magnitudes being sane). */
static void ref_load(struct ref *r, const char *dir, const char *file)
{
	memset(r, 0, sizeof *r);
	snprintf(r->path, sizeof r->path, "%s/%s", dir, file);
	FILE *f = fopen(r->path, "rb");
	if (!f) {
		fprintf(stderr, "FAIL %s: %s\n", r->path, strerror(errno));
		exit(1);
	}
	char line[256];
	if (!fgets(line, sizeof line, f) || strcmp(line, "starnn-ref 1\n") != 0)
		ref_fail(r, "not a starnn-ref 1 file");
	for (;;) {
		if (!fgets(line, sizeof line, f))
			ref_fail(r, "header ends without 'end'");
		if (strcmp(line, "end\n") == 0)
			break;
		if (line[0] == '#') {
			snprintf(r->comment, sizeof r->comment, "%s", line + 2);
			r->comment[strcspn(r->comment, "\n")] = 0;
			continue;
		}
		if (r->n == (int)(sizeof r->t / sizeof r->t[0]))
			ref_fail(r, "too many tensors");
		struct ref_tensor *t = &r->t[r->n++];
		long long d[STARNN_MAX_DIMS] = {0};
		int k = sscanf(line, "%63s %d %lld %lld %lld %lld", t->name, &t->ndim, &d[0], &d[1], &d[2], &d[3]);
		if (k < 3 || t->ndim < 1 || t->ndim > STARNN_MAX_DIMS || k != 2 + t->ndim)
			ref_fail(r, "bad tensor line");
		t->numel = 1;
		for (int i = 0; i < t->ndim; i++) {
			if (d[i] <= 0 || d[i] > 1 << 20)
				ref_fail(r, "bad dimension");
			t->shape[i] = d[i];
			t->numel *= (size_t)d[i];
		}
	}
	for (int i = 0; i < r->n; i++) {
		struct ref_tensor *t = &r->t[i];
		t->data = malloc(t->numel * sizeof *t->data);
		if (!t->data || fread(t->data, sizeof *t->data, t->numel, f) != t->numel)
			ref_fail(r, "data truncated");
	}
	if (fgetc(f) != EOF)
		ref_fail(r, "trailing data");
	fclose(f);
}

static void ref_free(struct ref *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->t[i].data);
}

static const struct ref_tensor *ref_get(const struct ref *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->t[i].name, name) == 0)
			return &r->t[i];
	fprintf(stderr, "FAIL %s: no tensor '%s'\n", r->path, name);
	exit(1);
}

/* ------------------------------------------------------------- helpers */

#define MAX_OWNED 64
static starnn_tensor *owned[MAX_OWNED];
static int nowned;

static starnn_tensor *keep(starnn_tensor *t)
{
	if (nowned == MAX_OWNED) {
		fprintf(stderr, "FAIL: too many tensors\n");
		exit(1);
	}
	return owned[nowned++] = t;
}

static void release_all(void)
{
	while (nowned > 0)
		starnn_tensor_destroy(owned[--nowned]);
}

/* A tensor with the shape (and, when load, the data) of the reference's. */
static starnn_tensor *from_ref(const struct ref *r, const char *name, int load)
{
	const struct ref_tensor *t = ref_get(r, name);
	return keep(test_tensor(name, t->ndim, t->shape, load ? t->data : NULL));
}

static starnn_tensor *zeros(const char *name, int ndim, const int64_t *shape)
{
	return keep(test_tensor(name, ndim, shape, NULL));
}

/* The nparts (1 or 2) batch parts of t: t itself, or 2 + 1 samples. */
static void batch_parts(starnn_tensor *t, int nparts, starnn_tensor **p)
{
	if (nparts == 1) {
		p[0] = t;
		return;
	}
	int64_t sizes[2] = {t->shape[0] - 1, 1};
	starnn_tensor **parts;
	TEST_OK(starnn_tensor_split(t, 0, 2, sizes, &parts));
	p[0] = parts[0];
	p[1] = parts[1];
}

/* A BN+ReLU layer with the reference's parameters and running statistics. */
static void bn_from_ref(starnn_batchnorm *bn, const struct ref *r, const char *name, int nparts)
{
	char key[64];
	snprintf(key, sizeof key, "%s.gamma", name);
	const struct ref_tensor *g = ref_get(r, key);
	TEST_OK(starnn_batchnorm_init(bn, name, g->shape[0], nparts, 1));
	bn->eps = ref_get(r, "bn.eps")->data[0]; /* the reference's convention */
	TEST_OK(starnn_tensor_write(bn->gamma, g->data));
	snprintf(key, sizeof key, "%s.beta", name);
	TEST_OK(starnn_tensor_write(bn->beta, ref_get(r, key)->data));
	snprintf(key, sizeof key, "%s.rm0", name);
	TEST_OK(starnn_tensor_write(bn->running_mean, ref_get(r, key)->data));
	snprintf(key, sizeof key, "%s.rv0", name);
	TEST_OK(starnn_tensor_write(bn->running_var, ref_get(r, key)->data));
}

static double worst_overall, worst_zero;

/* Compares t with the reference tensor name: max |got - ref| / max(1, |ref|)
 * against TOL, or TOL_ZERO for a bias gradient ("d*.b": exactly 0 here). */
static void check(const char *block, int nparts, const struct ref *r, const char *name, starnn_tensor *t)
{
	const struct ref_tensor *ref = ref_get(r, name);
	size_t len = strlen(name);
	int zero = name[0] == 'd' && len > 2 && strcmp(name + len - 2, ".b") == 0;
	double tol = zero ? TOL_ZERO : TOL;
	TEST_ASSERT(starnn_tensor_numel(t) == ref->numel, "%s %s: %zu elements, reference has %zu", block, name,
	            starnn_tensor_numel(t), ref->numel);
	if (starnn_tensor_numel(t) != ref->numel)
		return;
	float *got = test_read(t);
	double worst = 0, maxref = 0;
	size_t at = 0;
	for (size_t i = 0; i < ref->numel; i++) {
		double a = fabs((double)ref->data[i]);
		double e = fabs((double)got[i] - (double)ref->data[i]) / (a > 1 ? a : 1);
		if (isnan(e))
			e = INFINITY;
		if (e > worst || (i == 0 && e == worst)) {
			worst = e;
			at = i;
		}
		if (a > maxref)
			maxref = a;
	}
	printf("  %-8s %d part%s  %-12s worst err %.2e  (max |ref| %.3g)%s\n", block, nparts, nparts > 1 ? "s" : " ",
	       name, worst, maxref, zero ? "  exact gradient 0" : "");
	TEST_ASSERT(worst <= tol, "%s (%d parts) %s: worst error %.3g at [%zu]: got %.9g, expected %.9g (tolerance %g)",
	            block, nparts, name, worst, at, got[at], ref->data[at], tol);
	if (zero)
		TEST_ASSERT(maxref < 1e-3, "%s %s: the reference should be ~0 (a bias before a BN), max |ref| %g", block,
		            name, maxref);
	double *w = zero ? &worst_zero : &worst_overall;
	if (worst > *w)
		*w = worst;
	free(got);
}

/* ------------------------------------------------------------- encoder */

static void encoder(const struct ref *r, int P)
{
	const struct ref_tensor *rx = ref_get(r, "x"), *rw1 = ref_get(r, "conv1.w");
	int64_t n = rx->shape[0], h = rx->shape[2], w = rx->shape[3], f = rw1->shape[0];
	int64_t fs[4] = {n, f, h, w}, ps[4] = {n, f, h / 2, w / 2};

	starnn_tensor *x = from_ref(r, "x", 1), *w1 = from_ref(r, "conv1.w", 1), *b1 = from_ref(r, "conv1.b", 1);
	starnn_tensor *w2 = from_ref(r, "conv2.w", 1), *b2 = from_ref(r, "conv2.b", 1);
	starnn_tensor *h1 = zeros("h1", 4, fs), *a1 = zeros("a1", 4, fs), *h2 = zeros("h2", 4, fs);
	starnn_tensor *skip = zeros("skip", 4, fs), *pool = zeros("pool", 4, ps);
	starnn_batchnorm bn1, bn2;
	bn_from_ref(&bn1, r, "bn1", P);
	bn_from_ref(&bn2, r, "bn2", P);

	starnn_tensor *xp[2], *h1p[2], *a1p[2], *h2p[2], *skipp[2], *poolp[2];
	batch_parts(x, P, xp), batch_parts(h1, P, h1p), batch_parts(a1, P, a1p), batch_parts(h2, P, h2p);
	batch_parts(skip, P, skipp), batch_parts(pool, P, poolp);

	/* Forward. */
	for (int i = 0; i < P; i++)
		TEST_OK(starnn_conv2d_fwd(xp[i], w1, b1, h1p[i]));
	TEST_OK(starnn_batchnorm_fwd(&bn1, 1, P, h1p, a1p));
	for (int i = 0; i < P; i++)
		TEST_OK(starnn_conv2d_fwd(a1p[i], w2, b2, h2p[i]));
	TEST_OK(starnn_batchnorm_fwd(&bn2, 1, P, h2p, skipp));
	for (int i = 0; i < P; i++)
		TEST_OK(starnn_maxpool_fwd(skipp[i], poolp[i]));

	/* Backward: dskip = g_skip + maxpool_bwd(g_pool). */
	starnn_tensor *dskip = from_ref(r, "g_skip", 1), *gpool = from_ref(r, "g_pool", 1);
	starnn_tensor *dh2 = zeros("dh2", 4, fs), *da1 = zeros("da1", 4, fs), *dh1 = zeros("dh1", 4, fs);
	starnn_tensor *dx = from_ref(r, "dx", 0);
	starnn_tensor *dw1 = from_ref(r, "dconv1.w", 0), *db1 = from_ref(r, "dconv1.b", 0);
	starnn_tensor *dw2 = from_ref(r, "dconv2.w", 0), *db2 = from_ref(r, "dconv2.b", 0);
	starnn_tensor *dg1 = from_ref(r, "dbn1.gamma", 0), *dbt1 = from_ref(r, "dbn1.beta", 0);
	starnn_tensor *dg2 = from_ref(r, "dbn2.gamma", 0), *dbt2 = from_ref(r, "dbn2.beta", 0);
	starnn_tensor *dskipp[2], *gpoolp[2], *dh2p[2], *da1p[2], *dh1p[2], *dxp[2];
	batch_parts(dskip, P, dskipp), batch_parts(gpool, P, gpoolp), batch_parts(dh2, P, dh2p);
	batch_parts(da1, P, da1p), batch_parts(dh1, P, dh1p), batch_parts(dx, P, dxp);

	for (int i = 0; i < P; i++)
		TEST_OK(starnn_maxpool_bwd(skipp[i], gpoolp[i], 1.0f, dskipp[i]));
	TEST_OK(starnn_batchnorm_bwd(&bn2, P, h2p, skipp, dskipp, dh2p, 0.0f, dg2, dbt2, 0.0f));
	for (int i = 0; i < P; i++) {
		TEST_OK(starnn_conv2d_bwd_weight(a1p[i], dh2p[i], i ? 1.0f : 0.0f, dw2, db2));
		TEST_OK(starnn_conv2d_bwd_data(dh2p[i], w2, 0.0f, da1p[i]));
	}
	TEST_OK(starnn_batchnorm_bwd(&bn1, P, h1p, a1p, da1p, dh1p, 0.0f, dg1, dbt1, 0.0f));
	for (int i = 0; i < P; i++) {
		TEST_OK(starnn_conv2d_bwd_weight(xp[i], dh1p[i], i ? 1.0f : 0.0f, dw1, db1));
		TEST_OK(starnn_conv2d_bwd_data(dh1p[i], w1, 0.0f, dxp[i]));
	}
	TEST_OK(starnn_wait());

	const char *b = "encoder";
	check(b, P, r, "h1", h1), check(b, P, r, "h2", h2), check(b, P, r, "skip", skip), check(b, P, r, "pool", pool);
	check(b, P, r, "dx", dx);
	check(b, P, r, "dconv1.w", dw1), check(b, P, r, "dconv1.b", db1);
	check(b, P, r, "dconv2.w", dw2), check(b, P, r, "dconv2.b", db2);
	check(b, P, r, "dbn1.gamma", dg1), check(b, P, r, "dbn1.beta", dbt1);
	check(b, P, r, "dbn2.gamma", dg2), check(b, P, r, "dbn2.beta", dbt2);
	check(b, P, r, "bn1.rm1", bn1.running_mean), check(b, P, r, "bn1.rv1", bn1.running_var);
	check(b, P, r, "bn2.rm1", bn2.running_mean), check(b, P, r, "bn2.rv1", bn2.running_var);

	release_all();
	starnn_batchnorm_destroy(&bn1);
	starnn_batchnorm_destroy(&bn2);
}

/* ------------------------------------------------------------- decoder */

static void decoder(const struct ref *r, int P)
{
	const struct ref_tensor *rs = ref_get(r, "skip"), *rc = ref_get(r, "coarse");
	int64_t n = rs->shape[0], f = rs->shape[1], h = rs->shape[2], w = rs->shape[3];
	int64_t fs[4] = {n, f, h, w}, cs[4] = {n, 2 * f, h, w};

	starnn_tensor *coarse = from_ref(r, "coarse", 1), *skip = from_ref(r, "skip", 1);
	starnn_tensor *wt = from_ref(r, "up.w", 1), *bt = from_ref(r, "up.b", 1);
	starnn_tensor *w1 = from_ref(r, "conv1.w", 1), *b1 = from_ref(r, "conv1.b", 1);
	starnn_tensor *w2 = from_ref(r, "conv2.w", 1), *b2 = from_ref(r, "conv2.b", 1);
	starnn_tensor *cat = zeros("cat", 4, cs), *a0 = zeros("a0", 4, cs);
	starnn_tensor *h1 = zeros("h1", 4, fs), *a1 = zeros("a1", 4, fs), *h2 = zeros("h2", 4, fs);
	starnn_tensor *out = zeros("out", 4, fs);
	starnn_batchnorm bn0, bn1, bn2;
	bn_from_ref(&bn0, r, "bn0", P);
	bn_from_ref(&bn1, r, "bn1", P);
	bn_from_ref(&bn2, r, "bn2", P);
	TEST_ASSERT(rc->shape[1] == 2 * f && rc->shape[2] * 2 == h && rc->shape[3] * 2 == w, "decoder: shapes");

	starnn_tensor *coarsep[2], *skipp[2], *catp[2], *a0p[2], *h1p[2], *a1p[2], *h2p[2], *outp[2];
	batch_parts(coarse, P, coarsep), batch_parts(skip, P, skipp), batch_parts(cat, P, catp);
	batch_parts(a0, P, a0p), batch_parts(h1, P, h1p), batch_parts(a1, P, a1p), batch_parts(h2, P, h2p);
	batch_parts(out, P, outp);

	/* Forward: the producers write into cat's channel views, [skip, up] or
	 * [up, skip] as the reference's convention has it. */
	const int skip_first = ref_get(r, "cat.skip_first")->data[0] != 0;
	for (int i = 0; i < P; i++) {
		starnn_tensor *up, *sk;
		TEST_OK(skip_first ? starnn_concat_views(catp[i], f, &sk, &up) : starnn_concat_views(catp[i], f, &up, &sk));
		TEST_OK(starnn_convt2d_fwd(coarsep[i], wt, bt, up));
		TEST_OK(starnn_copy(skipp[i], sk));
	}
	TEST_OK(starnn_batchnorm_fwd(&bn0, 1, P, catp, a0p));
	for (int i = 0; i < P; i++)
		TEST_OK(starnn_conv2d_fwd(a0p[i], w1, b1, h1p[i]));
	TEST_OK(starnn_batchnorm_fwd(&bn1, 1, P, h1p, a1p));
	for (int i = 0; i < P; i++)
		TEST_OK(starnn_conv2d_fwd(a1p[i], w2, b2, h2p[i]));
	TEST_OK(starnn_batchnorm_fwd(&bn2, 1, P, h2p, outp));

	/* Backward. */
	starnn_tensor *gout = from_ref(r, "g_out", 1);
	starnn_tensor *dh2 = zeros("dh2", 4, fs), *da1 = zeros("da1", 4, fs), *dh1 = zeros("dh1", 4, fs);
	starnn_tensor *da0 = zeros("da0", 4, cs), *dcat = zeros("dcat", 4, cs);
	starnn_tensor *dcoarse = from_ref(r, "dcoarse", 0), *dskip = from_ref(r, "dskip", 0);
	starnn_tensor *dwt = from_ref(r, "dup.w", 0), *dbt = from_ref(r, "dup.b", 0);
	starnn_tensor *dw1 = from_ref(r, "dconv1.w", 0), *db1 = from_ref(r, "dconv1.b", 0);
	starnn_tensor *dw2 = from_ref(r, "dconv2.w", 0), *db2 = from_ref(r, "dconv2.b", 0);
	starnn_tensor *dg0 = from_ref(r, "dbn0.gamma", 0), *dbt0 = from_ref(r, "dbn0.beta", 0);
	starnn_tensor *dg1 = from_ref(r, "dbn1.gamma", 0), *dbt1 = from_ref(r, "dbn1.beta", 0);
	starnn_tensor *dg2 = from_ref(r, "dbn2.gamma", 0), *dbt2 = from_ref(r, "dbn2.beta", 0);
	starnn_tensor *goutp[2], *dh2p[2], *da1p[2], *dh1p[2], *da0p[2], *dcatp[2], *dcoarsep[2], *dskipp[2];
	batch_parts(gout, P, goutp), batch_parts(dh2, P, dh2p), batch_parts(da1, P, da1p);
	batch_parts(dh1, P, dh1p), batch_parts(da0, P, da0p), batch_parts(dcat, P, dcatp);
	batch_parts(dcoarse, P, dcoarsep), batch_parts(dskip, P, dskipp);

	TEST_OK(starnn_batchnorm_bwd(&bn2, P, h2p, outp, goutp, dh2p, 0.0f, dg2, dbt2, 0.0f));
	for (int i = 0; i < P; i++) {
		TEST_OK(starnn_conv2d_bwd_weight(a1p[i], dh2p[i], i ? 1.0f : 0.0f, dw2, db2));
		TEST_OK(starnn_conv2d_bwd_data(dh2p[i], w2, 0.0f, da1p[i]));
	}
	TEST_OK(starnn_batchnorm_bwd(&bn1, P, h1p, a1p, da1p, dh1p, 0.0f, dg1, dbt1, 0.0f));
	for (int i = 0; i < P; i++) {
		TEST_OK(starnn_conv2d_bwd_weight(a0p[i], dh1p[i], i ? 1.0f : 0.0f, dw1, db1));
		TEST_OK(starnn_conv2d_bwd_data(dh1p[i], w1, 0.0f, da0p[i]));
	}
	TEST_OK(starnn_batchnorm_bwd(&bn0, P, catp, a0p, da0p, dcatp, 0.0f, dg0, dbt0, 0.0f));
	/* dcat's channel views are the gradients of up and of the skip. */
	for (int i = 0; i < P; i++) {
		starnn_tensor *dup, *dsk;
		TEST_OK(skip_first ? starnn_concat_views(dcatp[i], f, &dsk, &dup)
		                   : starnn_concat_views(dcatp[i], f, &dup, &dsk));
		TEST_OK(starnn_convt2d_bwd_weight(coarsep[i], dup, i ? 1.0f : 0.0f, dwt, dbt));
		TEST_OK(starnn_convt2d_bwd_data(wt, dup, 0.0f, dcoarsep[i]));
		TEST_OK(starnn_copy(dsk, dskipp[i]));
	}
	TEST_OK(starnn_wait());

	const char *b = "decoder";
	check(b, P, r, "cat", cat), check(b, P, r, "h1", h1), check(b, P, r, "h2", h2), check(b, P, r, "out", out);
	check(b, P, r, "dcoarse", dcoarse), check(b, P, r, "dskip", dskip);
	check(b, P, r, "dup.w", dwt), check(b, P, r, "dup.b", dbt);
	check(b, P, r, "dconv1.w", dw1), check(b, P, r, "dconv1.b", db1);
	check(b, P, r, "dconv2.w", dw2), check(b, P, r, "dconv2.b", db2);
	check(b, P, r, "dbn0.gamma", dg0), check(b, P, r, "dbn0.beta", dbt0);
	check(b, P, r, "dbn1.gamma", dg1), check(b, P, r, "dbn1.beta", dbt1);
	check(b, P, r, "dbn2.gamma", dg2), check(b, P, r, "dbn2.beta", dbt2);
	check(b, P, r, "bn0.rm1", bn0.running_mean), check(b, P, r, "bn0.rv1", bn0.running_var);
	check(b, P, r, "bn1.rm1", bn1.running_mean), check(b, P, r, "bn1.rv1", bn1.running_var);
	check(b, P, r, "bn2.rm1", bn2.running_mean), check(b, P, r, "bn2.rv1", bn2.running_var);

	release_all();
	starnn_batchnorm_destroy(&bn0);
	starnn_batchnorm_destroy(&bn1);
	starnn_batchnorm_destroy(&bn2);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : BLOCKS_DATADIR;
	static struct ref enc, dec;
	ref_load(&enc, dir, "encoder.bin");
	ref_load(&dec, dir, "decoder.bin");
	printf("reference: %s\n           %s\n", enc.comment, dec.comment);
	printf("error = max |got - ref| / max(1, |ref|), tolerance %g\n", TOL);

	test_init();
	for (int P = 1; P <= 2; P++) {
		encoder(&enc, P);
		decoder(&dec, P);
	}
	printf("worst error: %.2e (tolerance %g); bias gradients (exactly 0): %.2e (tolerance %g)\n", worst_overall, TOL,
	       worst_zero, TOL_ZERO);
	ref_free(&enc);
	ref_free(&dec);
	return test_finish();
}
