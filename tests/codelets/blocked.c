/* Blocked activation layouts (runtime/core/tensor.h: nChw8c / nChw16c, other
 * blocks of a multiple of 8 channels, NHWC as one block of all), the
 * operations that take them checked against the same operations on NCHW
 * data (themselves checked against naive loops, finite differences and
 * PyTorch by their own tests):
 *   - tensors: set_cblock keeps the values, read / write exchange NCHW,
 *     batch and channel parts inherit the layout, a channel split must cut
 *     at whole blocks, the layout shows in describe();
 *   - kernels at every instruction-set level, cb 8, 16 (the vector bodies),
 *     40, 64 and 1024 (the generic ones; NHWC when c = cb), rows strided
 *     (ld > cols), fp32 and bf16 / fp16: batch norm (element-wise results
 *     bitwise equal, sums to double rounding), max-pool (bitwise);
 *   - codelets: conv2d (forward, both backward passes, with accumulation,
 *     split into channel tasks; the bias gradient, which oneDNN computes
 *     in the weight pass), convt2d with its bias gradient (fp32, and bf16
 *     against fp32: its weight pass may run the fp32 kernel), the
 *     batch-norm layer and max-pool on blocked tensors against NCHW ones,
 *     mixed layouts (NCHW in, blocked out: a UNet's first and last
 *     layers), and the checks that refuse mismatched layouts; conv2d
 *     again with the fp32 weight gradient forced onto its gemm route, the
 *     bf16 one's gemm route against oneDNN's convolution;
 *     the batch-norm codelets' footprints differ between layouts;
 *   - the element-wise codelets (relu, mse, convert, axpy / add) on two
 *     tensors in one blocked layout give NCHW's values, and refuse two
 *     layouts (the same matrix view, elements in another order); the bias
 *     codelets, which index channels as NCHW, refuse a blocked tensor.
 * The conv2d / convt2d parts need oneDNN (the im2col kernels take NCHW
 * only); without it they are skipped with a note. */
#include <string.h>

#include "codelets/axpy.h"
#include "codelets/batchnorm.h"
#include "codelets/bias.h"
#include "codelets/conv2d.h"
#include "codelets/conv2d_routes.h"
#include "codelets/convert.h"
#include "codelets/convt2d.h"
#include "codelets/kernels/batchnorm.h"
#include "codelets/kernels/maxpool.h"
#include "codelets/maxpool.h"
#include "codelets/mse.h"
#include "codelets/relu.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

/* The layout name of blocks of cb among c channels (a static buffer per slot). */
static const char *lname(int slot, int cb, int64_t c)
{
	static char buf[2][24];
	return starnn_layout_name(cb, c, buf[slot], sizeof buf[slot]);
}

/* plain [n][c][inner] (rows ldp apart) <-> blocked (rows ldb apart), es bytes per element */
static void relayout(size_t n, size_t c, size_t inner, size_t cb, size_t es, const void *src, size_t lds, void *dst,
                     size_t ldd, int to_blocked)
{
	for (size_t r = 0; r < n; r++)
		for (size_t k = 0; k < c; k++)
			for (size_t p = 0; p < inner; p++) {
				size_t pi = r * (to_blocked ? lds : ldd) + k * inner + p;
				size_t bi = r * (to_blocked ? ldd : lds) + (k / cb) * inner * cb + p * cb + k % cb;
				if (to_blocked)
					memcpy((char *)dst + bi * es, (const char *)src + pi * es, es);
				else
					memcpy((char *)dst + pi * es, (const char *)src + bi * es, es);
			}
}

static void *xmalloc(size_t bytes)
{
	void *p = calloc(1, bytes ? bytes : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

/* n random values of dt (16-bit as patterns) */
static void *rand_data(starnn_dtype dt, size_t n, float lo, float hi)
{
	float *f = test_random(n, lo, hi);
	if (dt == STARNN_FP32)
		return f;
	uint16_t *h = xmalloc(n * 2);
	for (size_t i = 0; i < n; i++)
		h[i] = dt == STARNN_BF16 ? starnn_float_to_bf16(f[i]) : starnn_float_to_half(f[i]);
	free(f);
	return h;
}

static int sums_close(const char *what, const double *a, const double *b, size_t n, const double *mag)
{
	for (size_t i = 0; i < n; i++)
		if (!(fabs(a[i] - b[i]) <= 1e-12 * (mag ? mag[i] : fabs(b[i])) + 1e-300)) {
			TEST_ASSERT(0, "%s: element %zu: %.17g, NCHW %.17g", what, i, a[i], b[i]);
			return 0;
		}
	test_checks++;
	return 1;
}

/* ------------------------------------------------------------ batch norm */

/* x, dx in blocks of cb; y, dy in blocks of cby (cb, or the output side
 * in blocks of a multiple of cb) */
static void bn_kernels(starnn_dtype dt, size_t cb, size_t cby, size_t n, size_t c, size_t inner, size_t pad,
                       float beta)
{
	const size_t es = dt == STARNN_FP32 ? 4 : 2, cols = c * inner, ld = cols + pad, tot = n * ld;
	void *x = rand_data(dt, tot, -2, 3), *dy = rand_data(dt, tot, -1, 1), *y0 = rand_data(dt, tot, -1, 1);
	void *xb = xmalloc(tot * es), *dyb = xmalloc(tot * es), *y0b = xmalloc(tot * es);
	relayout(n, c, inner, cb, es, x, ld, xb, ld, 1);
	relayout(n, c, inner, cby, es, dy, ld, dyb, ld, 1);
	relayout(n, c, inner, cby, es, y0, ld, y0b, ld, 1);
	double *s = xmalloc(2 * c * sizeof *s), *sb = xmalloc(2 * c * sizeof *sb), *mag = xmalloc(2 * c * sizeof *mag);
	char what[96];
	snprintf(what, sizeof what, "bn %s cb %zu (y %zu) n %zu c %zu inner %zu", starnn_dtype_name(dt), cb, cby, n, c,
	         inner);

	/* statistics: a bound of 1e-12 relative to the sum of |terms| (the
	 * plain sum of |x| is the sum itself for x^2, >= 0) */
	starnn_bn_stats_mp_cpu(dt, n, c, inner, x, ld, s, 0);
	starnn_bn_stats_blk_cpu(dt, cb, n, c, inner, xb, ld, sb, 0);
	int lv = starnn_simd_level();
	starnn_simd_set_level(STARNN_SIMD_GENERIC); /* every clone sums in the same order */
	starnn_bn_stats_blk_cpu(dt, cb, n, c, inner, xb, ld, mag, 0);
	starnn_simd_set_level(lv);
	sc_same(what, sb, mag, 2 * c, sizeof *sb);
	for (size_t k = 0; k < 2 * c; k++)
		mag[k] = fabs(s[k]) + (double)(n * inner) * 3;
	sums_close(what, sb, s, 2 * c, mag);
	starnn_bn_stats_blk_cpu(dt, cb, n, c, inner, xb, ld, sb, 1); /* accumulate: twice the sums */
	for (size_t k = 0; k < 2 * c; k++)
		s[k] *= 2, mag[k] *= 2;
	sums_close(what, sb, s, 2 * c, mag);

	float *mean = test_random(c, -1, 1), *istd = test_random(c, 0.5f, 2), *gamma = test_random(c, -2, 2);
	float *bias = test_random(c, -1, 1);
	void *y = xmalloc(tot * es), *yb = xmalloc(tot * es), *yr = xmalloc(tot * es);
	for (int relu = 0; relu < 2; relu++)
		for (int var = 0; var < 2; var++) {
			starnn_bn_apply_mp_cpu(dt, n, c, inner, x, ld, mean, istd, var, STARNN_BN_EPS, gamma, bias, relu, y, ld);
			starnn_bn_apply_blk_cpu(dt, cb, cby, n, c, inner, xb, ld, mean, istd, var, STARNN_BN_EPS, gamma, bias,
			                        relu, yb, ld);
			relayout(n, c, inner, cby, es, yb, ld, yr, ld, 0);
			int same = 1;
			for (size_t r = 0; r < n; r++)
				same &= !memcmp((char *)y + r * ld * es, (char *)yr + r * ld * es, cols * es);
			TEST_ASSERT(same, "%s: apply (relu %d, var %d) differs from NCHW", what, relu, var);
		}

	/* backward: the sums, then dx from the same slot */
	for (int relu = 0; relu < 2; relu++) {
		const void *ym = relu ? y0 : NULL, *ymb = relu ? y0b : NULL;
		starnn_bn_bwd_reduce_mp_cpu(dt, n, c, inner, x, ld, dy, ld, ym, ld, mean, s, 0);
		starnn_bn_bwd_reduce_blk_cpu(dt, cb, cby, n, c, inner, xb, ld, dyb, ld, ymb, ld, mean, sb, 0);
		for (size_t k = 0; k < 2 * c; k++)
			mag[k] = (double)(n * inner) * 4 + 1;
		sums_close(what, sb, s, 2 * c, mag);
		/* every clone sums in the same order: the generic clone's bits */
		starnn_simd_set_level(STARNN_SIMD_GENERIC);
		starnn_bn_bwd_reduce_blk_cpu(dt, cb, cby, n, c, inner, xb, ld, dyb, ld, ymb, ld, mean, mag, 0);
		starnn_simd_set_level(lv);
		sc_same(what, sb, mag, 2 * c, sizeof *sb);
		void *dx = rand_data(dt, tot, -1, 1), *dxb = xmalloc(tot * es), *dxr = xmalloc(tot * es);
		relayout(n, c, inner, cb, es, dx, ld, dxb, ld, 1);
		double count = (double)(n * inner);
		starnn_bn_bwd_apply_mp_cpu(dt, n, c, inner, x, ld, dy, ld, ym, ld, mean, istd, gamma, 1, s, 2 * c, count,
		                           beta, dx, ld);
		starnn_bn_bwd_apply_blk_cpu(dt, cb, cby, n, c, inner, xb, ld, dyb, ld, ymb, ld, mean, istd, gamma, 1, s,
		                            2 * c, count, beta, dxb, ld);
		relayout(n, c, inner, cb, es, dxb, ld, dxr, ld, 0);
		int same = 1;
		for (size_t r = 0; r < n; r++)
			same &= !memcmp((char *)dx + r * ld * es, (char *)dxr + r * ld * es, cols * es);
		TEST_ASSERT(same, "%s: bwd_apply (relu %d, beta %g) differs from NCHW", what, relu, (double)beta);
		free(dx), free(dxb), free(dxr);
	}
	free(x), free(dy), free(y0), free(xb), free(dyb), free(y0b), free(s), free(sb), free(mag);
	free(mean), free(istd), free(gamma), free(bias), free(y), free(yb), free(yr);
}

/* bf16 apply and bwd_apply on special values (NaN, Inf, overflow to Inf,
 * subnormal results, rounding ties) in blocks of 16 and 32 lanes (the
 * AVX-512 clone rounds those in registers): bitwise the NCHW kernels'. */
static void bn_specials(size_t cb)
{
	const size_t n = 2, c = cb, inner = 11, tot = n * c * inner;
	static const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-38f, -2e-39f, 0.0f, -0.0f,
	                                1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 255.5f, -7.0f};
	const size_t ns = sizeof special / sizeof *special;
	uint16_t *x = rand_data(STARNN_BF16, tot, -2, 3), *dy = rand_data(STARNN_BF16, tot, -1, 1);
	uint16_t *ym = rand_data(STARNN_BF16, tot, -1, 1);
	for (size_t i = 0; i < tot; i += 3) {
		x[i] = starnn_float_to_bf16(special[i % ns]);
		dy[(i + 1) % tot] = starnn_float_to_bf16(special[(i / 3) % ns]);
	}
	uint16_t *xb = xmalloc(tot * 2), *dyb = xmalloc(tot * 2), *ymb = xmalloc(tot * 2), *out = xmalloc(tot * 2),
	         *outb = xmalloc(tot * 2), *outr = xmalloc(tot * 2);
	relayout(n, c, inner, cb, 2, x, c * inner, xb, c * inner, 1);
	relayout(n, c, inner, cb, 2, dy, c * inner, dyb, c * inner, 1);
	relayout(n, c, inner, cb, 2, ym, c * inner, ymb, c * inner, 1);
	float *mean = test_random(c, -1, 1), *istd = test_random(c, 0.5f, 2), *gamma = test_random(c, -2, 2);
	float *bias = test_random(c, -1, 1);
	gamma[0] = 1e30f; /* overflow of finite values */
	istd[1] = 1e-30f; /* subnormal results */
	double *slots = xmalloc(2 * c * sizeof *slots);
	for (size_t k = 0; k < 2 * c; k++)
		slots[k] = (double)((int)(k % 7) - 3) * 10.0;
	for (int relu = 0; relu < 2; relu++) {
		starnn_bn_apply_mp_cpu(STARNN_BF16, n, c, inner, x, c * inner, mean, istd, 0, STARNN_BN_EPS, gamma, bias,
		                       relu, out, c * inner);
		starnn_bn_apply_blk_cpu(STARNN_BF16, cb, cb, n, c, inner, xb, c * inner, mean, istd, 0, STARNN_BN_EPS, gamma,
		                        bias, relu, outb, c * inner);
		relayout(n, c, inner, cb, 2, outb, c * inner, outr, c * inner, 0);
		TEST_ASSERT(!memcmp(out, outr, tot * 2), "bn bf16 cb %zu specials: apply (relu %d) differs from NCHW", cb,
		            relu);
		for (int beta = 0; beta < 2; beta++) {
			for (size_t i = 0; i < tot; i++)
				out[i] = starnn_float_to_bf16(special[i % ns] * 0.5f);
			relayout(n, c, inner, cb, 2, out, c * inner, outb, c * inner, 1);
			starnn_bn_bwd_apply_mp_cpu(STARNN_BF16, n, c, inner, x, c * inner, dy, c * inner, relu ? ym : NULL,
			                           c * inner, mean, istd, gamma, 1, slots, 2 * c, (double)(n * inner),
			                           (float)beta, out, c * inner);
			starnn_bn_bwd_apply_blk_cpu(STARNN_BF16, cb, cb, n, c, inner, xb, c * inner, dyb, c * inner,
			                            relu ? ymb : NULL, c * inner, mean, istd, gamma, 1, slots, 2 * c,
			                            (double)(n * inner), (float)beta, outb, c * inner);
			relayout(n, c, inner, cb, 2, outb, c * inner, outr, c * inner, 0);
			/* beta 1 adds a NaN to a NaN in a different order than the NCHW
			 * kernel (either NaN's sign and payload may come out) */
			size_t bad = 0;
			for (size_t i = 0; i < tot; i++) {
				int nan = (out[i] & 0x7fff) > 0x7f80 && (outr[i] & 0x7fff) > 0x7f80;
				bad += out[i] != outr[i] && !(beta && nan);
			}
			TEST_ASSERT(bad == 0, "bn bf16 cb %zu specials: bwd_apply (relu %d, beta %d): %zu of %zu differ from NCHW",
			            cb, relu, beta, bad, tot);
		}
	}
	free(x), free(dy), free(ym), free(xb), free(dyb), free(ymb), free(out), free(outb), free(outr);
	free(mean), free(istd), free(gamma), free(bias), free(slots);
}

/* -------------------------------------------------------------- max-pool */

static void maxpool_kernels(starnn_dtype dt, size_t cb, size_t n, size_t c, size_t h, size_t w, size_t pad, float beta)
{
	const size_t es = dt == STARNN_FP32 ? 4 : 2, ho = h / 2, wo = w / 2;
	const size_t ldx = c * h * w + pad, ldy = c * ho * wo + pad;
	/* few distinct values: ties, where the rule's order matters */
	float *xf = xmalloc(n * ldx * sizeof *xf);
	for (size_t i = 0; i < n * ldx; i++)
		xf[i] = (float)((i * 7919u) % 5) - 2.0f;
	xf[3] = NAN;
	void *x = xf;
	if (dt != STARNN_FP32) {
		uint16_t *hx = xmalloc(n * ldx * 2);
		for (size_t i = 0; i < n * ldx; i++)
			hx[i] = dt == STARNN_BF16 ? starnn_float_to_bf16(xf[i]) : starnn_float_to_half(xf[i]);
		free(xf);
		x = hx;
	}
	void *dy = rand_data(dt, n * ldy, -1, 1), *dx = rand_data(dt, n * ldx, -1, 1);
	void *xb = xmalloc(n * ldx * es), *dyb = xmalloc(n * ldy * es), *dxb = xmalloc(n * ldx * es);
	void *y = xmalloc(n * ldy * es), *yb = xmalloc(n * ldy * es), *r = xmalloc(n * ldx * es);
	relayout(n, c, h * w, cb, es, x, ldx, xb, ldx, 1);
	relayout(n, c, ho * wo, cb, es, dy, ldy, dyb, ldy, 1);
	relayout(n, c, h * w, cb, es, dx, ldx, dxb, ldx, 1);
	starnn_maxpool_fwd_mp_cpu(dt, n, c, h, w, x, ldx, y, ldy);
	starnn_maxpool_fwd_blk_cpu(dt, cb, n, c, h, w, xb, ldx, yb, ldy);
	relayout(n, c, ho * wo, cb, es, yb, ldy, r, ldy, 0);
	int same = 1;
	for (size_t s = 0; s < n; s++)
		same &= !memcmp((char *)y + s * ldy * es, (char *)r + s * ldy * es, c * ho * wo * es);
	TEST_ASSERT(same, "maxpool fwd %s cb %zu %zux%zu: differs from NCHW", starnn_dtype_name(dt), cb, h, w);
	starnn_maxpool_bwd_mp_cpu(dt, n, c, h, w, x, ldx, dy, ldy, beta, dx, ldx);
	starnn_maxpool_bwd_blk_cpu(dt, cb, n, c, h, w, xb, ldx, dyb, ldy, beta, dxb, ldx);
	relayout(n, c, h * w, cb, es, dxb, ldx, r, ldx, 0);
	same = 1;
	for (size_t s = 0; s < n; s++)
		same &= !memcmp((char *)dx + s * ldx * es, (char *)r + s * ldx * es, c * h * w * es);
	TEST_ASSERT(same, "maxpool bwd %s cb %zu %zux%zu beta %g: differs from NCHW", starnn_dtype_name(dt), cb, h, w,
	            (double)beta);
	free(x), free(dy), free(dx), free(xb), free(dyb), free(dxb), free(y), free(yb), free(r);
}

/* --------------------------------------------------------------- tensors */

static starnn_tensor *tensor4(const char *name, int64_t n, int64_t c, int64_t h, int64_t w, int cb, const float *v)
{
	int64_t shape[4] = {n, c, h, w};
	starnn_tensor *t = test_tensor(name, 4, shape, v);
	if (cb > 1)
		TEST_OK(starnn_tensor_set_cblock(t, cb));
	return t;
}

static void tensors(void)
{
	const int64_t n = 3, c = 16, h = 5, w = 7;
	size_t numel = (size_t)(n * c * h * w);
	float *v = test_random(numel, -1, 1);
	starnn_tensor *t = tensor4("t", n, c, h, w, 1, v);
	TEST_OK(starnn_tensor_set_cblock(t, 8)); /* the values stay */
	float *r = test_read(t);
	TEST_ASSERT(!memcmp(r, v, numel * sizeof *v), "set_cblock changed the values");
	free(r);
	/* the storage is nChw8c: element (s, k, p) at (k / 8) * h * w * 8 + p * 8 + k % 8 */
	TEST_OK(starpu_data_acquire(t->handle, STARPU_R));
	const float *raw = (const float *)starpu_data_get_local_ptr(t->handle);
	TEST_ASSERT(raw[1 * c * h * w + (9 / 8) * h * w * 8 + 4 * 8 + 9 % 8] == v[(1 * c + 9) * h * w + 4],
	            "nChw8c storage order");
	starpu_data_release(t->handle);
	char d[128];
	TEST_ASSERT(strstr(starnn_tensor_describe(t, d, sizeof d), "nChw8c") != NULL, "describe: %s", d);
	starnn_tensor **parts;
	int64_t bad[2] = {4, 12}, good[2] = {8, 8};
	TEST_ASSERT(starnn_tensor_split(t, 1, 2, bad, &parts) == STARNN_EINVAL, "a split inside a channel block");
	TEST_OK(starnn_tensor_split(t, 1, 2, good, &parts));
	TEST_ASSERT(parts[0]->cblock == 8 && parts[1]->cblock == 8, "channel parts inherit the layout");
	r = xmalloc(numel / 2 * sizeof *r);
	TEST_OK(starnn_tensor_read(parts[1], r)); /* channels 8..15 as NCHW */
	int ok = 1;
	for (int64_t s = 0; s < n; s++)
		for (int64_t k = 0; k < 8; k++)
			ok &= !memcmp(r + (s * 8 + k) * h * w, v + (s * c + 8 + k) * h * w, (size_t)(h * w) * sizeof *r);
	TEST_ASSERT(ok, "a channel part reads as NCHW");
	free(r);
	TEST_ASSERT(starnn_tensor_set_cblock(t, 16) == STARNN_EINVAL, "the layout of a split tensor is fixed");
	starnn_tensor_destroy(t);
	t = tensor4("t12", 1, 12, 2, 2, 1, NULL);
	TEST_ASSERT(starnn_tensor_set_cblock(t, 8) == STARNN_EINVAL, "12 channels are not whole blocks of 8");
	TEST_ASSERT(starnn_tensor_set_cblock(t, 3) == STARNN_EINVAL, "a block of 3");
	TEST_ASSERT(starnn_tensor_set_cblock(t, 12) == STARNN_EINVAL, "a block of 12 (not a multiple of 8)");
	starnn_tensor_destroy(t);
	/* NHWC: one block of all 24 channels, element (s, k, p) at p * 24 + k */
	t = tensor4("t24", 2, 24, h, w, 1, v);
	TEST_OK(starnn_tensor_set_cblock(t, 24));
	r = test_read(t);
	TEST_ASSERT(!memcmp(r, v, (size_t)(2 * 24 * h * w) * sizeof *v), "NHWC: set_cblock changed the values");
	free(r);
	TEST_OK(starpu_data_acquire(t->handle, STARPU_R));
	raw = (const float *)starpu_data_get_local_ptr(t->handle);
	TEST_ASSERT(raw[1 * 24 * h * w + 6 * 24 + 17] == v[(1 * 24 + 17) * h * w + 6], "NHWC storage order");
	starpu_data_release(t->handle);
	TEST_ASSERT(strstr(starnn_tensor_describe(t, d, sizeof d), "NHWC") != NULL, "describe: %s", d);
	TEST_ASSERT(starnn_tensor_split(t, 1, 2, NULL, &parts) == STARNN_EINVAL, "an NHWC tensor splits by channels");
	starnn_tensor_destroy(t);
	t = tensor4("t2048", 1, 2048, 1, 1, 1, NULL);
	TEST_ASSERT(starnn_tensor_set_cblock(t, 2048) == STARNN_EINVAL, "a block beyond STARNN_CBLOCK_MAX");
	TEST_OK(starnn_tensor_set_cblock(t, 32));
	TEST_ASSERT(strstr(starnn_tensor_describe(t, d, sizeof d), "nChw32c") != NULL, "describe: %s", d);
	starnn_tensor_destroy(t);
	free(v);
}

/* ------------------------------------------------------------- codelets */

static float *read_all(starnn_tensor *t)
{
	return test_read(t);
}

/* Reads both and compares (identical kernels on identical data: tight). */
static void close_values(const char *what, starnn_tensor *a, starnn_tensor *ref, float rtol, float atol)
{
	float *x = read_all(a), *y = read_all(ref);
	test_close(what, x, y, starnn_tensor_numel(ref), rtol, atol);
	free(x), free(y);
}

static void same_values(const char *what, starnn_tensor *a, starnn_tensor *ref, float rtol)
{
	close_values(what, a, ref, rtol, 1e-6f);
}

/* A 4-D tensor of dtype dt from fp32 values (rounded), in layout cb. */
static starnn_tensor *tensor4_dt(const char *name, starnn_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w,
                                 int cb, const float *v)
{
	if (dt == STARNN_FP32)
		return tensor4(name, n, c, h, w, cb, v);
	int64_t shape[4] = {n, c, h, w};
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, dt, 4, shape));
	if (cb > 1)
		TEST_OK(starnn_tensor_set_cblock(t, cb));
	if (v)
		TEST_OK(starnn_tensor_write_f32(t, v));
	return t;
}

/* conv2d in layouts xb / yb against NCHW, fp32 or bf16 (oneDNN's native
 * bf16: AMX where present): the same primitive on the same values. */
/* k x k kernels (k = 3 but for the 1x1 checks below). */
static int64_t conv_k = 3;

static void conv_codelets_dt(starnn_dtype dt, int64_t n, int64_t c, int64_t o, int64_t s, int xb, int yb)
{
	const int64_t k = conv_k;
	char what[112];
	snprintf(what, sizeof what, "conv2d %s %lldx%lld n %lld c %lld o %lld %lldx%lld, x %s, y %s", starnn_dtype_name(dt),
	         (long long)k, (long long)k, (long long)n, (long long)c, (long long)o, (long long)s, (long long)s, lname(0, xb, c), lname(1, yb, o));
	size_t nx = (size_t)(n * c * s * s), ny = (size_t)(n * o * s * s), nw = (size_t)(o * c * k * k);
	float *xv = test_random(nx, -1, 1), *dyv = test_random(ny, -1, 1), *wv = test_random(nw, -0.3f, 0.3f);
	float *bv = test_random((size_t)o, -1, 1), *dxv = test_random(nx, -1, 1);
	int64_t ws[4] = {o, c, k, k}, bs[1] = {o};
	int mp = dt != STARNN_FP32;
	starnn_tensor *w = tensor4_dt("w", dt, o, c, k, k, 1, wv), *b = test_tensor("b", 1, bs, bv);
	starnn_tensor *x = tensor4_dt("x", dt, n, c, s, s, xb, xv), *x0 = tensor4_dt("x0", dt, n, c, s, s, 1, xv);
	starnn_tensor *y = tensor4_dt("y", dt, n, o, s, s, yb, NULL), *y0 = tensor4_dt("y0", dt, n, o, s, s, 1, NULL);
	starnn_tensor *dy = tensor4_dt("dy", dt, n, o, s, s, yb, dyv), *dy0 = tensor4_dt("dy0", dt, n, o, s, s, 1, dyv);
	starnn_tensor *dx = tensor4_dt("dx", dt, n, c, s, s, xb, dxv), *dx0 = tensor4_dt("dx0", dt, n, c, s, s, 1, dxv);
	starnn_tensor *dw = test_tensor("dw", 4, ws, NULL), *dw0 = test_tensor("dw0", 4, ws, NULL);
	starnn_tensor *db = test_tensor("db", 1, bs, NULL), *db0 = test_tensor("db0", 1, bs, NULL);
	int (*fwd)(starnn_tensor *, starnn_tensor *, starnn_tensor *, starnn_tensor *) =
		mp ? starnn_conv2d_fwd_mp : starnn_conv2d_fwd;
	int (*bwd_data)(starnn_tensor *, starnn_tensor *, float, starnn_tensor *) =
		mp ? starnn_conv2d_bwd_data_mp : starnn_conv2d_bwd_data;
	int (*bwd_weight)(starnn_tensor *, starnn_tensor *, float, starnn_tensor *, starnn_tensor *) =
		mp ? starnn_conv2d_bwd_weight_mp : starnn_conv2d_bwd_weight;
	TEST_OK(fwd(x, w, b, y));
	TEST_OK(fwd(x0, w, b, y0));
	same_values(what, y, y0, 1e-6f);
	TEST_OK(bwd_data(dy, w, 1.0f, dx)); /* dx += */
	TEST_OK(bwd_data(dy0, w, 1.0f, dx0));
	same_values(what, dx, dx0, 1e-6f);
	TEST_OK(bwd_weight(x, dy, 0.0f, dw, db));
	TEST_OK(bwd_weight(x0, dy0, 0.0f, dw0, db0));
	/* dw: sums of N = n * s * s products of |x|, |dy| <= 1, in another
	 * order where the route is not oneDNN's (the direct and gemm routes,
	 * the 1x1 sgemm kernels): an absolute bound of 1e-6 + 2 N u (u = 2^-24,
	 * fp32's unit roundoff; the rounding errors of two such sums grow
	 * about as u N / 3 here; seen: 4.3e-5 at 1 x 64 x 64, where the former
	 * bound of N * 1e-8 failed on other random values) */
	close_values(what, dw, dw0, 1e-6f, 1e-6f + (float)(n * s * s) * 2.0f * 0x1p-24f);
	/* sums of n * s * s values of |dy| <= 1 in another order (cancellation: an absolute bound) */
	close_values(what, db, db0, 1e-5f, 1e-4f);
	starnn_tensor *all[] = {w, b, x, x0, y, y0, dy, dy0, dx, dx0, dw, dw0, db, db0};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(xv), free(dyv), free(wv), free(bv), free(dxv);
}

static void conv_codelets(int64_t n, int64_t c, int64_t o, int64_t s, int xb, int yb)
{
	conv_codelets_dt(STARNN_FP32, n, c, o, s, xb, yb);
}

static void convt_codelets(int64_t n, int64_t c, int64_t o, int64_t s, int xb, int yb)
{
	char what[96];
	snprintf(what, sizeof what, "convt2d n %lld c %lld o %lld %lldx%lld, x %s, y %s", (long long)n, (long long)c,
	         (long long)o, (long long)s, (long long)s, lname(0, xb, c), lname(1, yb, o));
	size_t nx = (size_t)(n * c * s * s), ny = (size_t)(n * o * 4 * s * s), nw = (size_t)(c * o * 4);
	float *xv = test_random(nx, -1, 1), *dyv = test_random(ny, -1, 1), *wv = test_random(nw, -0.5f, 0.5f);
	float *bv = test_random((size_t)o, -1, 1);
	int64_t ws[4] = {c, o, 2, 2}, bs[1] = {o};
	starnn_tensor *w = test_tensor("w", 4, ws, wv), *b = test_tensor("b", 1, bs, bv);
	starnn_tensor *x = tensor4("x", n, c, s, s, xb, xv), *x0 = tensor4("x0", n, c, s, s, 1, xv);
	starnn_tensor *y = tensor4("y", n, o, 2 * s, 2 * s, yb, NULL), *y0 = tensor4("y0", n, o, 2 * s, 2 * s, 1, NULL);
	starnn_tensor *dy = tensor4("dy", n, o, 2 * s, 2 * s, yb, dyv), *dy0 = tensor4("dy0", n, o, 2 * s, 2 * s, 1, dyv);
	starnn_tensor *dx = tensor4("dx", n, c, s, s, xb, NULL), *dx0 = tensor4("dx0", n, c, s, s, 1, NULL);
	starnn_tensor *dw = test_tensor("dw", 4, ws, NULL), *dw0 = test_tensor("dw0", 4, ws, NULL);
	starnn_tensor *db = test_tensor("db", 1, bs, NULL), *db0 = test_tensor("db0", 1, bs, NULL);
	/* the direct kernels (STARNN_CONVT2D) sum in another order than
	 * oneDNN's NCHW passes: y sums c products of |x| <= 1 and |w| <= 0.5
	 * (an absolute bound of 1e-6 + c * 1e-7; seen: 1.4e-6 at c = 64), dx
	 * 4o products of |dy| <= 1 and |w| <= 0.5 (o/2 * 1e-6; seen: 1.5e-6 at
	 * o = 32) */
	TEST_OK(starnn_convt2d_fwd(x, w, b, y));
	TEST_OK(starnn_convt2d_fwd(x0, w, b, y0));
	close_values(what, y, y0, 1e-6f, 1e-6f + (float)c * 1e-7f);
	TEST_OK(starnn_convt2d_bwd_data(w, dy, 0.0f, dx));
	TEST_OK(starnn_convt2d_bwd_data(w, dy0, 0.0f, dx0));
	close_values(what, dx, dx0, 1e-6f, (float)o * 0.5e-6f);
	TEST_OK(starnn_convt2d_bwd_weight(x, dy, 0.0f, dw, db));
	TEST_OK(starnn_convt2d_bwd_weight(x0, dy0, 0.0f, dw0, db0));
	close_values(what, dw, dw0, 1e-6f, 1e-5f);
	close_values(what, db, db0, 1e-5f, 1e-4f);
	starnn_tensor *all[] = {w, b, x, x0, y, y0, dy, dy0, dx, dx0, dw, dw0, db, db0};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(xv), free(dyv), free(wv), free(bv);
}

/* convt2d on bf16 tensors in layouts xb / yb against the fp32 codelets on
 * NCHW tensors holding the same (bf16-exact) values. Where bf16 is native
 * the weight gradient runs as one bf16 GEMM on the gathered values
 * (convt_wgrad_gemm in codelets/cpu/conv2d_dnnl.c), and the forward, where
 * oneDNN picks a blocked layout for it (AVX512-BF16 without AMX), as a 1x1
 * convolution into fp32 z spread into y (conv_build_up; elsewhere oneDNN's
 * deconvolution): products exact and sums in fp32 either way, so dw and db
 * agree to the rounding of sums in another order; y and dx are rounded to
 * bf16 once (half an ulp of bf16: 2^-9 relative, plus the fp32 sums'
 * reordering). */
static void convt_codelets_bf16(int64_t n, int64_t c, int64_t o, int64_t s, int xb, int yb)
{
	char what[112];
	snprintf(what, sizeof what, "convt2d bf16 n %lld c %lld o %lld %lldx%lld, x %s, y %s", (long long)n,
	         (long long)c, (long long)o, (long long)s, (long long)s, lname(0, xb, c), lname(1, yb, o));
	size_t nx = (size_t)(n * c * s * s), ny = (size_t)(n * o * 4 * s * s), nw = (size_t)(c * o * 4);
	float *xv = test_random(nx, -1, 1), *dyv = test_random(ny, -1, 1), *wv = test_random(nw, -0.5f, 0.5f);
	float *bv = test_random((size_t)o, -1, 1);
	float *vals[3] = {xv, dyv, wv};
	size_t counts[3] = {nx, ny, nw};
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < counts[k]; i++)
			vals[k][i] = starnn_bf16_to_float(starnn_float_to_bf16(vals[k][i]));
	int64_t ws[4] = {c, o, 2, 2}, bs[1] = {o};
	starnn_tensor *w = tensor4_dt("w", STARNN_BF16, c, o, 2, 2, 1, wv), *w0 = test_tensor("w0", 4, ws, wv);
	starnn_tensor *b = test_tensor("b", 1, bs, bv);
	starnn_tensor *x = tensor4_dt("x", STARNN_BF16, n, c, s, s, xb, xv), *x0 = tensor4("x0", n, c, s, s, 1, xv);
	starnn_tensor *y = tensor4_dt("y", STARNN_BF16, n, o, 2 * s, 2 * s, yb, NULL);
	starnn_tensor *y0 = tensor4("y0", n, o, 2 * s, 2 * s, 1, NULL);
	starnn_tensor *dy = tensor4_dt("dy", STARNN_BF16, n, o, 2 * s, 2 * s, yb, dyv);
	starnn_tensor *dy0 = tensor4("dy0", n, o, 2 * s, 2 * s, 1, dyv);
	starnn_tensor *dx = tensor4_dt("dx", STARNN_BF16, n, c, s, s, xb, NULL), *dx0 = tensor4("dx0", n, c, s, s, 1, NULL);
	starnn_tensor *dw = test_tensor("dw", 4, ws, NULL), *dw0 = test_tensor("dw0", 4, ws, NULL);
	starnn_tensor *db = test_tensor("db", 1, bs, NULL), *db0 = test_tensor("db0", 1, bs, NULL);
	TEST_OK(starnn_convt2d_fwd_mp(x, w, b, y));
	TEST_OK(starnn_convt2d_fwd(x0, w0, b, y0));
	close_values(what, y, y0, 1.0f / 256, 1e-5f);
	TEST_OK(starnn_convt2d_bwd_data_mp(w, dy, 0.0f, dx));
	TEST_OK(starnn_convt2d_bwd_data(w0, dy0, 0.0f, dx0));
	close_values(what, dx, dx0, 1.0f / 256, 1e-5f);
	/* twice: beta 0, then beta 1 (the second micro-batch's accumulation) */
	for (int k = 0; k < 2; k++) {
		TEST_OK(starnn_convt2d_bwd_weight_mp(x, dy, (float)k, dw, db));
		TEST_OK(starnn_convt2d_bwd_weight(x0, dy0, (float)k, dw0, db0));
		/* sums of n * s * s products (|x dy| <= 1) in another order */
		close_values(what, dw, dw0, 1e-5f, 1e-5f * (float)(n * s * s));
		close_values(what, db, db0, 1e-5f, 1e-5f * (float)(n * 4 * s * s));
	}
	starnn_tensor *all[] = {w, w0, b, x, x0, y, y0, dy, dy0, dx, dx0, dw, dw0, db, db0};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(xv), free(dyv), free(wv), free(bv);
}

/* The transposed forward's spread of z into y (conv_build_up's route) at
 * the AVX-512 level (up_spread16_avx512, where z and y are in blocks of 16)
 * against the generic one, bit for bit, in dt: small integers in x and w,
 * so that many sums are odd integers from 256 up (ties for bf16's
 * rounding to nearest even), and a NaN in x (its pixel's outputs NaN). */
static void convt_spread_levels(starnn_dtype dt, int64_t n, int64_t c, int64_t o, int64_t s)
{
	char what[112];
	snprintf(what, sizeof what, "convt2d %s spread n %lld c %lld o %lld %lldx%lld, AVX-512 against generic",
	         starnn_dtype_name(dt), (long long)n, (long long)c, (long long)o, (long long)s, (long long)s);
	/* (the AVX-512 spread runs where z is in blocks of 16: oneDNN's fp32
	 * pick on AVX-512, and bf16's where it is not NHWC) */
	if (starnn_simd_level() < STARNN_SIMD_AVX512 || starnn_conv2d_dnnl_block(dt) != 16) {
		printf("note: %s skipped: no AVX-512 spread here (SIMD level %s, oneDNN's %s block %d)\n", what,
		       starnn_simd_name(starnn_simd_level()), starnn_dtype_name(dt), starnn_conv2d_dnnl_block(dt));
		return;
	}
	size_t nx = (size_t)(n * c * s * s), ny = (size_t)(n * o * 4 * s * s), nw = (size_t)(c * o * 4);
	float *xv = test_random(nx, 0, 4.99f), *wv = test_random(nw, 0, 4.99f), *bv = test_random((size_t)o, -2, 2);
	for (size_t i = 0; i < nx; i++)
		xv[i] = floorf(xv[i]);
	for (size_t i = 0; i < nw; i++)
		wv[i] = floorf(wv[i]);
	for (size_t i = 0; i < (size_t)o; i++)
		bv[i] = (float)(i % 3); /* integers: the sums stay odd or even integers */
	xv[nx / 2] = NAN;
	int64_t bs[1] = {o};
	starnn_tensor *w = tensor4_dt("w", dt, c, o, 2, 2, 1, wv), *b = test_tensor("b", 1, bs, bv);
	starnn_tensor *x = tensor4_dt("x", dt, n, c, s, s, 16, xv);
	starnn_tensor *y[2];
	const int lv = starnn_simd_level();
	for (int k = 0; k < 2; k++) {
		y[k] = tensor4_dt(k ? "y_generic" : "y", dt, n, o, 2 * s, 2 * s, 16, NULL);
		starnn_simd_set_level(k ? STARNN_SIMD_GENERIC : lv);
		TEST_OK(dt == STARNN_FP32 ? starnn_convt2d_fwd(x, w, b, y[k]) : starnn_convt2d_fwd_mp(x, w, b, y[k]));
		TEST_OK(starnn_wait());
	}
	starnn_simd_set_level(lv);
	float *r0 = test_read(y[0]), *r1 = test_read(y[1]);
	size_t ties = 0, nans = 0; /* outputs where odd sums are ties (bf16's spacing 2) */
	for (size_t i = 0; i < ny; i++) {
		ties += dt == STARNN_BF16 && r1[i] >= 256 && r1[i] < 512;
		nans += isnan(r1[i]);
	}
	TEST_ASSERT(memcmp(r0, r1, ny * sizeof *r0) == 0, "%s: the outputs differ", what);
	TEST_ASSERT(nans >= (size_t)(4 * o) && (dt != STARNN_BF16 || ties > ny / 20),
	            "%s: the inputs do not reach what they test (%zu NaN, %zu outputs in [256, 512))", what, nans, ties);
	free(r0), free(r1);
	starnn_tensor *all[] = {w, b, x, y[0], y[1]};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(xv), free(wv), free(bv);
}

/* The batch-norm layer (+ReLU) over 2 micro-batch parts and max-pool. */
/* x, dx in blocks of cb, y, dy (and the max-pool after) in blocks of cby */
static void bn_pool_codelets(int64_t n, int64_t c, int64_t s, int cb, int cby)
{
	char what[128];
	snprintf(what, sizeof what, "batchnorm + maxpool n %lld c %lld %lldx%lld %s (y %s)", (long long)n, (long long)c,
	         (long long)s, (long long)s, lname(0, cb, c), lname(1, cby, c));
	size_t nx = (size_t)(n * c * s * s);
	float *xv = test_random(nx, -2, 3), *dyv = test_random(nx, -1, 1);
	starnn_tensor *t[2][4]; /* [layout][x, y, dy, dx] */
	starnn_batchnorm bn[2];
	for (int l = 0; l < 2; l++) {
		int b = l ? cb : 1;
		t[l][0] = tensor4("x", n, c, s, s, b, xv);
		t[l][1] = tensor4("y", n, c, s, s, l ? cby : 1, NULL);
		t[l][2] = tensor4("dy", n, c, s, s, l ? cby : 1, dyv);
		t[l][3] = tensor4("dx", n, c, s, s, b, NULL);
		TEST_OK(starnn_batchnorm_init(&bn[l], "bn", c, 2, 1));
		starnn_tensor **p[4];
		for (int i = 0; i < 4; i++)
			TEST_OK(starnn_tensor_split(t[l][i], 0, 2, NULL, &p[i]));
		TEST_OK(starnn_batchnorm_fwd(&bn[l], 1, 2, p[0], p[1]));
		TEST_OK(starnn_batchnorm_bwd(&bn[l], 2, p[0], p[1], p[2], p[3], 0.0f, bn[l].gamma, bn[l].beta, 0.0f));
	}
	same_values(what, t[1][1], t[0][1], 1e-6f);
	same_values(what, t[1][3], t[0][3], 1e-5f);
	same_values(what, bn[1].running_var, bn[0].running_var, 1e-6f);
	same_values(what, bn[1].gamma, bn[0].gamma, 1e-5f); /* dgamma, written over gamma */
	starnn_tensor *py[2], *pdx[2];
	for (int l = 0; l < 2; l++) {
		py[l] = tensor4("pool", n, c, s / 2, s / 2, l ? cby : 1, NULL);
		pdx[l] = tensor4("pdx", n, c, s, s, l ? cby : 1, dyv);
		TEST_OK(starnn_maxpool_fwd(t[l][1], py[l]));
		TEST_OK(starnn_maxpool_bwd(t[l][1], py[l], 1.0f, pdx[l]));
	}
	same_values(what, py[1], py[0], 0.0f);
	same_values(what, pdx[1], pdx[0], 0.0f);
	/* mismatched layouts are refused with a message */
	TEST_ASSERT(starnn_maxpool_fwd(t[1][1], py[0]) == STARNN_EINVAL, "maxpool: blocked x, NCHW y");
	TEST_ASSERT(strstr(starnn_last_error(), "layout") != NULL, "the message names the layout: %s",
	            starnn_last_error());
	/* so are a batch norm's x and y in layouts it does not pair: blocked x
	 * with NCHW y, or dy and y apart */
	starnn_tensor *xw[1] = {t[1][0]}, *yn[1] = {t[0][1]}, *yw[1] = {t[1][1]}, *dxw[1] = {t[1][3]};
	TEST_ASSERT(starnn_batchnorm_fwd(&bn[1], 1, 1, xw, yn) == STARNN_EINVAL, "batchnorm: blocked x, NCHW y");
	TEST_ASSERT(strstr(starnn_last_error(), "layout") != NULL, "the message names the layout: %s",
	            starnn_last_error());
	starnn_tensor *dyo[1] = {tensor4("dy_other", n, c, s, s, cby == cb ? 1 : cb, dyv)};
	TEST_ASSERT(starnn_batchnorm_bwd(&bn[1], 1, xw, yw, dyo, dxw, 0.0f, NULL, NULL, 0.0f) == STARNN_EINVAL,
	            "batchnorm: dy in another layout than y");
	TEST_ASSERT(strstr(starnn_last_error(), "layout") != NULL, "the message names the layout: %s",
	            starnn_last_error());
	starnn_tensor_destroy(dyo[0]);
	for (int l = 0; l < 2; l++) {
		for (int i = 0; i < 4; i++)
			starnn_tensor_destroy(t[l][i]);
		starnn_tensor_destroy(py[l]);
		starnn_tensor_destroy(pdx[l]);
		starnn_batchnorm_destroy(&bn[l]);
	}
	free(xv), free(dyv);
}

/* Element-wise codelets and layouts (fp32 and bf16 where the codelet takes
 * it): in one blocked layout they give the values of NCHW; two layouts of
 * one matrix view are refused, and so is a blocked tensor for the bias
 * codelets, each with a message naming the layouts. */
static void expect_layout_error(const char *what, int rc, const char *word)
{
	TEST_ASSERT(rc == STARNN_EINVAL, "%s: mismatched layouts accepted (%d)", what, rc);
	TEST_ASSERT(strstr(starnn_last_error(), word) != NULL, "%s: the message should name %s: %s", what, word,
	            starnn_last_error());
}

static void elementwise_layouts(void)
{
	const int64_t n = 2, c = 16, h = 3, w = 5;
	const size_t numel = (size_t)(n * c * h * w);
	float *v = test_random(numel, -1, 1), *u = test_random(numel, -1, 1);
	int64_t one[1] = {1}, cs[1] = {c};
	for (int t = 0; t < 2; t++) {
		const starnn_dtype dt = t ? STARNN_BF16 : STARNN_FP32;
		const char *name = t ? "bf16" : "fp32";
		char what[96];
		/* NCHW, nChw8c and NHWC (one block of 16) */
		starnn_tensor *x[3], *y[3], *dy[3], *dx[3], *tg[3], *dp[3], *loss[3];
		static const int cbs[3] = {1, 8, 16};
		for (int l = 0; l < 3; l++) {
			x[l] = tensor4_dt("x", dt, n, c, h, w, cbs[l], v);
			y[l] = tensor4_dt("y", dt, n, c, h, w, cbs[l], NULL);
			dy[l] = tensor4_dt("dy", dt, n, c, h, w, cbs[l], u);
			dx[l] = tensor4_dt("dx", dt, n, c, h, w, cbs[l], NULL);
			tg[l] = tensor4("target", n, c, h, w, cbs[l], u);
			dp[l] = tensor4_dt("dpred", dt, n, c, h, w, cbs[l], NULL);
			loss[l] = test_tensor("loss", 1, one, NULL);
			TEST_OK(starnn_relu_fwd_mp(x[l], y[l]));
			TEST_OK(starnn_relu_bwd_mp(x[l], dy[l], dx[l]));
			TEST_OK(starnn_mse_fwd_mp(x[l], tg[l], loss[l], 1.0f, 0.0f));
			TEST_OK(starnn_mse_bwd_mp(x[l], tg[l], dp[l], 1.0f, NULL));
		}
		for (int l = 1; l < 3; l++) {
			snprintf(what, sizeof what, "%s relu_fwd in %s", name, lname(0, cbs[l], c));
			same_values(what, y[l], y[0], 0.0f);
			snprintf(what, sizeof what, "%s relu_bwd in %s", name, lname(0, cbs[l], c));
			same_values(what, dx[l], dx[0], 0.0f);
			snprintf(what, sizeof what, "%s mse_bwd in %s", name, lname(0, cbs[l], c));
			same_values(what, dp[l], dp[0], 0.0f);
			/* the loss sums in another order */
			snprintf(what, sizeof what, "%s mse_fwd in %s", name, lname(0, cbs[l], c));
			close_values(what, loss[l], loss[0], 1e-5f, 0.0f);
		}
		/* NCHW against nChw8c, nChw8c against NHWC */
		for (int a = 0; a < 2; a++) {
			const int b = a + 1;
			snprintf(what, sizeof what, "%s relu_fwd %s -> %s", name, lname(0, cbs[a], c), lname(1, cbs[b], c));
			expect_layout_error(what, starnn_relu_fwd_mp(x[a], y[b]), "layout");
			snprintf(what, sizeof what, "%s relu_bwd, dy in another layout", name);
			expect_layout_error(what, starnn_relu_bwd_mp(x[a], dy[b], dx[a]), "layout");
			snprintf(what, sizeof what, "%s relu_bwd, dx in another layout", name);
			expect_layout_error(what, starnn_relu_bwd_mp(x[a], dy[a], dx[b]), "layout");
			snprintf(what, sizeof what, "%s mse_fwd, target in another layout", name);
			expect_layout_error(what, starnn_mse_fwd_mp(x[a], tg[b], loss[a], 1.0f, 0.0f), "layout");
			snprintf(what, sizeof what, "%s mse_bwd, target in another layout", name);
			expect_layout_error(what, starnn_mse_bwd_mp(x[a], tg[b], dp[a], 1.0f, NULL), "layout");
			snprintf(what, sizeof what, "%s mse_bwd, dpred in another layout", name);
			expect_layout_error(what, starnn_mse_bwd_mp(x[a], tg[a], dp[b], 1.0f, NULL), "layout");
			snprintf(what, sizeof what, "convert fp32 %s -> %s %s", lname(0, cbs[a], c), name, lname(1, cbs[b], c));
			expect_layout_error(what, starnn_convert(tg[a], x[b]), "layout");
			if (dt == STARNN_FP32) {
				expect_layout_error("axpy", starnn_axpy(1.0f, x[a], y[b]), "layout");
				expect_layout_error("add", starnn_add(1.0f, x[a], 1.0f, y[a], dx[b]), "layout");
			}
		}
		/* the message names both layouts */
		TEST_ASSERT(starnn_relu_fwd_mp(x[0], y[1]) == STARNN_EINVAL && strstr(starnn_last_error(), "NCHW") &&
		                strstr(starnn_last_error(), "nChw8c"),
		            "%s: the message should name NCHW and nChw8c: %s", name, starnn_last_error());
		/* the bias codelets index channels as NCHW */
		starnn_tensor *bias = test_tensor("b", 1, cs, v);
		for (int l = 1; l < 3; l++) {
			snprintf(what, sizeof what, "%s bias_add on %s", name, lname(0, cbs[l], c));
			expect_layout_error(what, starnn_bias_add_mp(bias, y[l]), "NCHW");
			snprintf(what, sizeof what, "%s bias_grad of %s", name, lname(0, cbs[l], c));
			expect_layout_error(what, starnn_bias_grad_mp(dy[l], 0.0f, bias), "NCHW");
		}
		TEST_OK(starnn_bias_add_mp(bias, y[0]));
		starnn_tensor_destroy(bias);
		for (int l = 0; l < 3; l++) {
			starnn_tensor_destroy(x[l]), starnn_tensor_destroy(y[l]), starnn_tensor_destroy(dy[l]);
			starnn_tensor_destroy(dx[l]), starnn_tensor_destroy(tg[l]), starnn_tensor_destroy(dp[l]);
			starnn_tensor_destroy(loss[l]);
		}
	}
	free(v), free(u);
}

/* The bf16 weight gradient's gemm route (codelets/conv2d.h: im2col and one
 * bf16 matmul of oneDNN, AMX where present, into dw in OIHW), forced,
 * against oneDNN's convolution on the same bf16 values: NHWC (the UNet's
 * centre), blocked and NCHW x and dy, one and two samples, dw and db
 * overwritten (beta 0) and accumulated (beta 1, 0.5). Both sum exact
 * products (bf16 x bf16) in fp32 in another order: the bound of the fp32
 * routes. Under auto, the route is the gemm one for wide layers
 * at <= 8x8 pixels where oneDNN picks NHWC for bf16 (AMX), and oneDNN's
 * elsewhere. Without native bf16 kernels there is no route to compare:
 * only oneDNN's choice is checked, and a note says so. */
static void wgrad_bf16_case(int64_t n, int64_t c, int64_t o, int64_t s, int xb, int yb, float beta)
{
	char what[128];
	snprintf(what, sizeof what, "bf16 wgrad gemm route n %lld c %lld o %lld %lldx%lld, x %s, dy %s, beta %g",
	         (long long)n, (long long)c, (long long)o, (long long)s, (long long)s, lname(0, xb, c), lname(1, yb, o),
	         (double)beta);
	size_t nx = (size_t)(n * c * s * s), ny = (size_t)(n * o * s * s), nw = (size_t)(o * c * 9);
	float *xv = test_random(nx, -1, 1), *dyv = test_random(ny, -1, 1), *dw0v = test_random(nw, -1, 1),
	      *db0v = test_random((size_t)o, -1, 1);
	int64_t ws[4] = {o, c, 3, 3}, bs[1] = {o};
	starnn_tensor *x = tensor4_dt("x", STARNN_BF16, n, c, s, s, xb, xv), *dy = tensor4_dt("dy", STARNN_BF16, n, o, s, s, yb, dyv);
	starnn_tensor *dw[2], *db[2];
	const enum starnn_conv2d_wgrad routes[2] = {STARNN_CONV2D_WGRAD_DNNL, STARNN_CONV2D_WGRAD_GEMM};
	for (int r = 0; r < 2; r++) {
		dw[r] = test_tensor("dw", 4, ws, dw0v);
		db[r] = test_tensor("db", 1, bs, db0v);
		TEST_OK(starnn_conv2d_wgrad_set(routes[r]));
		TEST_OK(starnn_conv2d_bwd_weight_mp(x, dy, beta, dw[r], db[r]));
		TEST_ASSERT(starpu_task_wait_for_all() == 0, "wait");
	}
	TEST_OK(starnn_conv2d_wgrad_set(STARNN_CONV2D_WGRAD_AUTO));
	close_values(what, dw[1], dw[0], 1e-6f, 1e-6f + (float)(n * s * s) * 2.0f * 0x1p-24f + (beta != 0.0f ? 1e-6f : 0.0f));
	close_values(what, db[1], db[0], 1e-5f, 1e-4f);
	starnn_tensor *all[] = {x, dy, dw[0], dw[1], db[0], db[1]};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(xv), free(dyv), free(dw0v), free(db0v);
}

static void wgrad_bf16_gemm(void)
{
	const struct starnn_conv2d_geom wide = {2, 128, 128, 8, 8, 3, 128, 128, 0, 0, 0}, narrow = {2, 16, 16, 32, 32, 3, 16, 16, 0, 0, 0};
	TEST_OK(starnn_conv2d_wgrad_set(STARNN_CONV2D_WGRAD_GEMM));
	const int forced = starnn_conv2d_wgrad_route(&wide, STARNN_BF16) == STARNN_CONV2D_WGRAD_GEMM;
	TEST_OK(starnn_conv2d_wgrad_set(STARNN_CONV2D_WGRAD_AUTO));
	const int amx = starnn_conv2d_dnnl_block(STARNN_BF16) == STARNN_CONV2D_NHWC;
	TEST_ASSERT((starnn_conv2d_wgrad_route(&wide, STARNN_BF16) == STARNN_CONV2D_WGRAD_GEMM) == (forced && amx),
	            "auto: the gemm route for 128 -> 128 channels at 8x8 in bf16 where oneDNN picks NHWC for bf16");
	TEST_ASSERT(starnn_conv2d_wgrad_route(&narrow, STARNN_BF16) == STARNN_CONV2D_WGRAD_DNNL,
	            "auto: oneDNN's route for 16 -> 16 channels at 32x32 in bf16");
	if (!forced) {
		printf("note: no native bf16 convolutions here: the bf16 weight gradient has no gemm route to check\n");
		return;
	}
	wgrad_bf16_case(2, 128, 128, 8, 128, 128, 0.0f); /* NHWC: dy read in place */
	wgrad_bf16_case(1, 64, 128, 8, 64, 128, 1.0f);
	wgrad_bf16_case(2, 32, 48, 5, 16, 16, 0.0f); /* blocked: dy gathered */
	wgrad_bf16_case(2, 13, 16, 6, 1, 1, 0.5f);   /* NCHW, beta neither 0 nor 1 */
	wgrad_bf16_case(1, 24, 8, 7, 24, 8, 1.0f);
}

/* The batch-norm data codelets' footprints tell the layouts apart (the
 * same sizes in NCHW, nChw16c, NHWC, and blocks of half the channels in
 * with one NHWC tensor out), so that their performance models keep the
 * costs apart (the statistics, which read x alone, by x's layout). */
static void bn_footprints(void)
{
	const int64_t n = 2, c = 32, s = 8;
	const int lay[4][2] = {{1, 1}, {16, 16}, {32, 32}, {16, 32}};
	uint32_t fp[4][2] = {{0}}; /* [layout][bn_stats, bn_apply] */
	float *xv = test_random((size_t)(n * c * s * s), -1, 1);
	for (int l = 0; l < 4; l++) {
		starnn_tensor *x = tensor4("x", n, c, s, s, lay[l][0], xv), *y = tensor4("y", n, c, s, s, lay[l][1], NULL);
		starnn_batchnorm bn;
		TEST_OK(starnn_batchnorm_init(&bn, "bn", c, 1, 1));
		struct starnn_captured_task *t = NULL;
		int nt = 0, found = 0;
		TEST_OK(starnn_capture_begin());
		TEST_OK(starnn_batchnorm_fwd(&bn, 1, 1, &x, &y));
		TEST_OK(starnn_wait());
		TEST_OK(starnn_capture_end(&t, &nt));
		for (int i = 0; i < nt; i++)
			for (int k = 0; k < 2; k++)
				if (!strncmp(t[i].cl->name, k ? "bn_apply" : "bn_stats", 8) && !fp[l][k]) {
					fp[l][k] = t[i].footprint;
					found++;
				}
		TEST_ASSERT(found == 2, "layout %d: bn_stats and bn_apply captured (%d of 2)", l, found);
		starnn_capture_free(t, nt);
		starnn_batchnorm_destroy(&bn);
		starnn_tensor_destroy(x);
		starnn_tensor_destroy(y);
	}
	/* (the statistics read x alone: x's layout decides theirs) */
	for (int k = 0; k < 2; k++)
		for (int a = 0; a < 4; a++)
			for (int b = a + 1; b < 4; b++) {
				int same = !k && lay[a][0] == lay[b][0];
				TEST_ASSERT((fp[a][k] == fp[b][k]) == same, "%s: layouts x %d / y %d and x %d / y %d: footprints %08x %08x",
				            k ? "bn_apply" : "bn_stats", lay[a][0], lay[a][1], lay[b][0], lay[b][1], fp[a][k],
				            fp[b][k]);
			}
	free(xv);
}

int main(void)
{
	test_init();
	if (TEST_ON_CUDA) /* blocked data runs on CPU workers only */
		return test_finish();
	SC_FOR_EACH_LEVEL(lv) {
		for (int t = 0; t < 3; t++) {
			starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_BF16 : STARNN_FP16;
			/* 8, 16: the vector bodies; 40, 64, 1024: the generic ones
			 * (the second call of each: NHWC, one block of all channels;
			 * 1024 lanes: one pixel per 16-bit chunk, one window per row) */
			static const size_t cbs[] = {8, 16, 40, 64, 1024};
			for (size_t i = 0; i < sizeof cbs / sizeof *cbs; i++) {
				size_t cb = cbs[i], big = cb > 64;
				bn_kernels(dt, cb, cb, 3, 2 * cb, big ? 5 : 35, 0, 0.0f);
				bn_kernels(dt, cb, cb, 2, cb, big ? 9 : 129, 8 * cb, 1.0f); /* strided rows, 16-bit chunks across pixels */
				/* the output side in blocks of twice (a concatenation of
				 * two halves in, one NHWC tensor out) and four times cb */
				if (!big) {
					bn_kernels(dt, cb, 2 * cb, 2, 2 * cb, 35, 0, 0.0f);
					bn_kernels(dt, cb, 2 * cb, 3, 4 * cb, 129, 8 * cb, 1.0f);
					bn_kernels(dt, cb, 4 * cb, 2, 4 * cb, 9, 0, 1.0f);
				}
				maxpool_kernels(dt, cb, 2, 2 * cb, 6, 10, 0, 0.0f);
				maxpool_kernels(dt, cb, 1, cb, 5, big ? 7 : 37, 3 * cb, 1.0f); /* odd sizes, strided */
			}
			maxpool_kernels(dt, 1, 2, 3, 5, 37, 3, 1.0f); /* the one-lane case is the NCHW kernel */
		}
		bn_specials(16);
		bn_specials(32);
		bn_specials(48);
	}
	sc_level_done();
	tensors();
	bn_pool_codelets(4, 16, 12, 8, 8);
	bn_pool_codelets(2, 32, 9, 16, 16);
	bn_pool_codelets(2, 32, 8, 32, 32); /* NHWC */
	bn_pool_codelets(2, 48, 6, 24, 24); /* nChw24c: a concatenation of two NHWC halves */
	bn_pool_codelets(2, 48, 6, 24, 48); /* its halves in, one NHWC tensor out */
	bn_pool_codelets(2, 32, 10, 8, 16); /* nChw8c in, nChw16c out */
	bn_footprints();
	elementwise_layouts();
	if (starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL) {
		printf("note: the convolution checks need the oneDNN CPU backend (this build has im2col only)\n");
		return test_finish();
	}
	conv_codelets(2, 16, 16, 9, 8, 8);
	conv_codelets(1, 64, 64, 64, 8, 8); /* split into channel tasks */
	conv_codelets(1, 64, 32, 40, 16, 16);
	conv_codelets(2, 13, 16, 12, 1, 8); /* a UNet's first layer */
	conv_codelets(2, 16, 12, 12, 8, 1); /* and its last */
	convt_codelets(2, 32, 16, 8, 8, 8);
	convt_codelets(1, 64, 32, 32, 16, 8); /* split into channel tasks */
	convt_spread_levels(STARNN_FP32, 2, 32, 16, 8);
	/* NHWC (oneDNN's pick for bf16 on AMX), and a concatenation of two NHWC
	 * halves (blocks of half the channels) read by a convolution */
	conv_codelets(2, 32, 32, 9, 32, 32);
	conv_codelets(1, 64, 48, 20, 64, 48);
	conv_codelets(2, 64, 32, 8, 32, 32);
	conv_codelets(2, 13, 24, 12, 1, 24); /* NCHW in, NHWC out */
	conv_codelets(2, 24, 12, 12, 24, 1); /* and back */
	convt_codelets(2, 32, 16, 8, 32, 16);
	/* the fp32 weight gradient's gemm route and direct kernel (codelets/
	 * conv2d.h), each forced: blocked, NHWC, channel parts (strided rows)
	 * and NCHW x against NCHW; for the direct kernel also blocks of 48
	 * (NHWC, a pixel stride that is not a power of two) and NCHW dy */
	const enum starnn_conv2d_wgrad wroutes[] = {STARNN_CONV2D_WGRAD_GEMM, STARNN_CONV2D_WGRAD_DIRECT};
	for (int r = 0; r < 2; r++) {
		TEST_OK(starnn_conv2d_wgrad_set(wroutes[r]));
		conv_codelets(2, 16, 16, 9, 8, 8);
		conv_codelets(1, 64, 64, 64, 8, 8);
		conv_codelets(1, 64, 32, 40, 16, 16);
		conv_codelets(2, 32, 32, 9, 32, 32);
		conv_codelets(2, 13, 16, 12, 1, 8);
		conv_codelets(2, 13, 16, 12, 1, 16); /* AVX-512's first layer: direct under auto */
		conv_codelets(2, 128, 128, 8, 16, 16); /* and its bottom: gemm under auto */
	}
	conv_codelets(2, 16, 12, 12, 8, 1);
	conv_codelets(1, 64, 48, 20, 64, 48);
	conv_codelets(2, 24, 12, 12, 24, 1);
	TEST_OK(starnn_conv2d_wgrad_set(STARNN_CONV2D_WGRAD_AUTO));
	wgrad_bf16_gemm();
	/* convt2d's backward passes on oneDNN and on the direct kernels
	 * (codelets/convt2d.h), each forced, against NCHW (oneDNN): blocks of
	 * 8 and 16, NHWC (24 channels: 3 vectors a pixel), channel tasks, the
	 * UNet's widest up-convolution */
	const enum starnn_convt2d_route troutes[] = {STARNN_CONVT2D_DNNL, STARNN_CONVT2D_DIRECT};
	for (int r = 0; r < 2; r++) {
		TEST_OK(starnn_convt2d_route_set(troutes[r]));
		convt_codelets(2, 32, 16, 8, 8, 8);
		convt_codelets(1, 64, 32, 32, 16, 8);
		convt_codelets(2, 32, 16, 8, 32, 16);
		convt_codelets(2, 512, 128, 4, 8, 8);
		convt_codelets(2, 16, 24, 9, 16, 24);
	}
	TEST_OK(starnn_convt2d_route_set(STARNN_CONVT2D_AUTO));
	/* 1x1 convolutions from blocked x to NCHW y (a UNet's output layer) on
	 * oneDNN and on the sgemm kernels (codelets/conv2d.h: STARNN_CONV2D_1X1),
	 * each forced, against NCHW (oneDNN): nChw8c, nChw16c, NHWC, channel
	 * tasks */
	const enum starnn_conv2d_1x1 oroutes[] = {STARNN_CONV2D_1X1_DNNL, STARNN_CONV2D_1X1_GEMM};
	conv_k = 1;
	for (int r = 0; r < 2; r++) {
		TEST_OK(starnn_conv2d_1x1_set(oroutes[r]));
		conv_codelets(2, 16, 12, 12, 8, 1);
		conv_codelets(2, 32, 12, 9, 16, 1);
		conv_codelets(2, 24, 5, 7, 24, 1);
		conv_codelets(1, 64, 12, 64, 8, 1);
	}
	conv_k = 3;
	TEST_OK(starnn_conv2d_1x1_set(STARNN_CONV2D_1X1_AUTO));
	if (starnn_conv2d_dnnl_bf16()) {
		conv_codelets_dt(STARNN_BF16, 2, 32, 32, 9, 32, 32);
		conv_codelets_dt(STARNN_BF16, 2, 64, 32, 8, 32, 32);
		conv_codelets_dt(STARNN_BF16, 2, 16, 16, 9, 16, 16);
		conv_codelets_dt(STARNN_BF16, 2, 16, 16, 9, 8, 16);
		/* the UNet's up-convolutions at 128x128: NHWC in, a concatenation's
		 * NHWC half out (the last is the shape where oneDNN 2.6's AMX
		 * weight gradient was 3x slower than fp32) */
		convt_codelets_bf16(2, 64, 32, 16, 64, 32);
		convt_codelets_bf16(2, 512, 128, 4, 512, 128);
		convt_codelets_bf16(2, 32, 16, 64, 32, 16);
		convt_codelets_bf16(2, 32, 16, 8, 1, 1); /* NCHW */
		/* nChw16c, amp-bf16's layout at batch 1 (channel-split tasks),
		 * and mixed with NCHW / NHWC */
		convt_codelets_bf16(1, 64, 32, 24, 16, 16);
		convt_codelets_bf16(2, 128, 64, 6, 16, 16);
		convt_codelets_bf16(1, 32, 16, 12, 16, 1);
		convt_codelets_bf16(1, 32, 64, 10, 1, 16);
		convt_codelets_bf16(2, 32, 16, 10, 32, 16);
		convt_spread_levels(STARNN_BF16, 2, 64, 16, 8);
		convt_spread_levels(STARNN_BF16, 1, 64, 32, 5);
	} else {
		printf("note: no native bf16 convolutions here (oneDNN needs AVX-512): the bf16 layout checks are skipped\n");
	}
	return test_finish();
}
