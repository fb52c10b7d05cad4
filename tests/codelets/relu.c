/* relu_fwd / relu_bwd: kernels against naive loops (dense, strided, in
 * place, NaN), codelets (CPU, or CUDA in the _cuda build) against direct
 * kernel calls on whole tensors and on channel views, the in-place forms,
 * relu_bwd against finite differences of L = sum(w .* relu(x)), bad
 * arguments -> STARNN_EINVAL, and the codelets of every dtype against the
 * rule in double (tests/testlib.h: test_elementwise). ReLU is a select, so
 * every comparison is exact; on CPU and OpenCL workers the codelets of
 * every dtype also give the CPU kernels' bits on random bit patterns (NaN
 * payloads, -0, Inf, subnormals), whole and on channel views. */
#include "codelets/kernels/relu.h"
#include "codelets/relu.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"
#include "tests/codelets/simdcheck.h"

static float naive_relu(float v)
{
	return isnan(v) ? v : v > 0 ? v : 0.0f;
}

static void kernels_vs_naive(size_t cols)
{
	/* 5 rows of cols inside rows of cols + 4; values include exact zeros. */
	size_t rows = 5, ld = cols + 4, n = rows * ld;
	float *x = test_random(n, -1, 1), *dy = test_random(n, -1, 1), *y = test_random(n, -1, 1);
	for (size_t i = 0; i < n; i += 5)
		x[i] = 0.0f;
	float *yref = malloc(n * sizeof *yref), *dxref = malloc(n * sizeof *dxref), *dx = malloc(n * sizeof *dx);
	memcpy(yref, y, n * sizeof *y);
	memcpy(dx, y, n * sizeof *y);
	memcpy(dxref, y, n * sizeof *y);

	starnn_relu_fwd_cpu(rows, cols, x, ld, y, ld);
	starnn_relu_bwd_cpu(rows, cols, x, ld, dy, ld, dx, ld);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++) {
			size_t i = r * ld + c;
			yref[i] = naive_relu(x[i]);
			dxref[i] = x[i] > 0 ? dy[i] : 0.0f;
		}
	test_close("relu_fwd_cpu strided", y, yref, n, 0, 0); /* padding untouched too */
	test_close("relu_bwd_cpu strided", dx, dxref, n, 0, 0);

	/* Different leading dimensions for each operand: dense y from strided x. */
	float *yd = malloc(rows * cols * sizeof *yd), *ydref = malloc(rows * cols * sizeof *ydref);
	starnn_relu_fwd_cpu(rows, cols, x, ld, yd, cols);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			ydref[r * cols + c] = naive_relu(x[r * ld + c]);
	test_close("relu_fwd_cpu strided -> dense", yd, ydref, rows * cols, 0, 0);

	/* In place: dy's padding stays dy's. */
	for (size_t r = 0; r < rows; r++)
		for (size_t c = cols; c < ld; c++)
			dxref[r * ld + c] = dy[r * ld + c];
	starnn_relu_bwd_cpu(rows, cols, x, ld, dy, ld, dy, ld);
	test_close("relu_bwd_cpu in place", dy, dxref, n, 0, 0);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < cols; c++)
			yref[r * ld + c] = naive_relu(x[r * ld + c]);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = cols; c < ld; c++)
			yref[r * ld + c] = x[r * ld + c];
	starnn_relu_fwd_cpu(rows, cols, x, ld, x, ld);
	test_close("relu_fwd_cpu in place", x, yref, n, 0, 0);

	/* NaN propagates forward; -Inf / +Inf behave. */
	float s[4] = {NAN, -INFINITY, INFINITY, -0.0f}, t[4];
	starnn_relu_fwd_cpu(1, 4, s, 4, t, 4);
	TEST_ASSERT(isnan(t[0]) && t[1] == 0.0f && t[2] == INFINITY && t[3] == 0.0f,
	            "relu_fwd of NaN, -Inf, Inf, -0: got %g %g %g %g", t[0], t[1], t[2], t[3]);
	free(x), free(dy), free(y), free(yref), free(dxref), free(dx), free(yd), free(ydref);
}

/* Codelet results vs the CPU kernels called directly on the same data. */
static void codelets_vs_kernels(int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t shape[4] = {n, c, h, w};
	size_t numel = (size_t)(n * c * h * w), rows = (size_t)n, cols = numel / rows;
	float *x = test_random(numel, -1, 1), *dy = test_random(numel, -1, 1);
	starnn_tensor *tx = test_tensor("x", 4, shape, x), *tdy = test_tensor("dy", 4, shape, dy);
	starnn_tensor *ty = test_tensor("y", 4, shape, NULL), *tdx = test_tensor("dx", 4, shape, NULL);
	starnn_tensor *tz = test_tensor("z", 4, shape, x), *tg = test_tensor("g", 4, shape, dy);

	float *yref = malloc(numel * sizeof *yref), *dxref = malloc(numel * sizeof *dxref);
	starnn_relu_fwd_cpu(rows, cols, x, cols, yref, cols);
	starnn_relu_bwd_cpu(rows, cols, x, cols, dy, cols, dxref, cols);

	TEST_OK(starnn_relu_fwd(tx, ty));
	TEST_OK(starnn_relu_bwd(tx, tdy, tdx));
	TEST_OK(starnn_relu_fwd(tz, tz)); /* in place */
	TEST_OK(starnn_relu_bwd(tx, tg, tg));
	float *gy = test_read(ty), *gdx = test_read(tdx), *gz = test_read(tz), *gg = test_read(tg);
	test_close("relu_fwd codelet", gy, yref, numel, 0, 0);
	test_close("relu_bwd codelet", gdx, dxref, numel, 0, 0);
	test_close("relu_fwd codelet in place", gz, yref, numel, 0, 0);
	test_close("relu_bwd codelet in place", gg, dxref, numel, 0, 0);

	/* Channel views (ld > cols): channel 0 and channels 1.. of every tensor. */
	if (c >= 2) {
		int64_t sizes[2] = {1, c - 1};
		starnn_tensor **px, **py, **pdy, **pdx, **pz;
		TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &px));
		TEST_OK(starnn_tensor_split(ty, 1, 2, sizes, &py));
		TEST_OK(starnn_tensor_split(tdy, 1, 2, sizes, &pdy));
		TEST_OK(starnn_tensor_split(tdx, 1, 2, sizes, &pdx));
		TEST_OK(starnn_tensor_write(ty, dy)); /* y, dx := dy, so stale results cannot pass */
		TEST_OK(starnn_tensor_write(tdx, dy));
		for (int p = 0; p < 2; p++) {
			TEST_OK(starnn_relu_fwd(px[p], py[p]));
			TEST_OK(starnn_relu_bwd(px[p], pdy[p], pdx[p]));
		}
		free(gy), free(gdx);
		gy = test_read(ty), gdx = test_read(tdx);
		test_close("relu_fwd codelet on channel views", gy, yref, numel, 0, 0);
		test_close("relu_bwd codelet on channel views", gdx, dxref, numel, 0, 0);

		/* In place on one view only: channels 1.. of z := relu(x) there, channel 0 := x. */
		TEST_OK(starnn_tensor_write(tz, x));
		TEST_OK(starnn_tensor_split(tz, 1, 2, sizes, &pz));
		TEST_OK(starnn_relu_fwd(pz[1], pz[1]));
		float *zref = malloc(numel * sizeof *zref);
		size_t inner = (size_t)(h * w);
		for (size_t r = 0; r < rows; r++)
			for (size_t k = 0; k < cols; k++)
				zref[r * cols + k] = k < inner ? x[r * cols + k] : yref[r * cols + k];
		free(gz);
		gz = test_read(tz);
		test_close("relu_fwd in place on a channel view", gz, zref, numel, 0, 0);

		/* A strided view into a dense tensor of its own shape. */
		starnn_tensor *td;
		int64_t dshape[4] = {n, c - 1, h, w};
		TEST_OK(starnn_tensor_create(&td, "d", STARNN_FP32, 4, dshape));
		TEST_OK(starnn_relu_fwd(px[1], td));
		float *gd = test_read(td), *dref = malloc(rows * (cols - inner) * sizeof *dref);
		for (size_t r = 0; r < rows; r++)
			for (size_t k = inner; k < cols; k++)
				dref[r * (cols - inner) + k - inner] = yref[r * cols + k];
		test_close("relu_fwd channel view -> dense", gd, dref, rows * (cols - inner), 0, 0);
		starnn_tensor_destroy(td);
		free(zref), free(gd), free(dref);
	}
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tdy);
	starnn_tensor_destroy(tdx), starnn_tensor_destroy(tz), starnn_tensor_destroy(tg);
	free(x), free(dy), free(yref), free(dxref), free(gy), free(gdx), free(gz), free(gg);
}

/* L(x) = sum_i w_i relu(x_i), accumulated in double. */
static double loss(const float *x, void *ctx)
{
	const float *w = ((const float *const *)ctx)[0];
	size_t n = (size_t)(uintptr_t)((const float *const *)ctx)[1];
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)w[i] * (double)naive_relu(x[i]);
	return s;
}

static void backward_vs_fd(void)
{
	int64_t shape[2] = {6, 40};
	size_t n = 240;
	float *x = test_random(n, -1, 1), *w = test_random(n, -2, 2);
	for (size_t i = 0; i < n; i++) /* keep |x| >= 0.05: away from the kink */
		if (fabsf(x[i]) < 0.05f)
			x[i] = x[i] < 0 ? x[i] - 0.05f : x[i] + 0.05f;
	starnn_tensor *tx = test_tensor("x", 2, shape, x), *tw = test_tensor("w", 2, shape, w);
	starnn_tensor *tdx = test_tensor("dx", 2, shape, NULL);
	TEST_OK(starnn_relu_bwd(tx, tw, tdx)); /* dL/dx = relu_bwd(x, dL/dy = w) */
	float *dx = test_read(tdx), *fd = malloc(n * sizeof *fd);
	const void *ctx[2] = {w, (const void *)(uintptr_t)n};
	for (size_t i = 0; i < n; i++)
		fd[i] = (float)test_fd(loss, x, i, 1e-2, ctx);
	test_close("relu_bwd vs finite differences", dx, fd, n, 1e-4f, 1e-5f);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(tw), starnn_tensor_destroy(tdx);
	free(x), free(w), free(dx), free(fd);
}

static void bad_arguments(void)
{
	starnn_tensor *a, *b, *hh;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 5, 4));
	TEST_OK(starnn_tensor_new(&hh, "h", STARNN_FP16, 2, 4, 5));
	TEST_ASSERT(starnn_relu_fwd(a, b) == STARNN_EINVAL, "relu_fwd with shapes 4x5 -> 5x4 must fail");
	TEST_ASSERT(starnn_relu_fwd(a, hh) == STARNN_EINVAL, "relu_fwd fp32 -> fp16 must fail");
	TEST_ASSERT(starnn_relu_fwd(hh, hh) == STARNN_EINVAL, "relu_fwd on fp16 must fail");
	TEST_ASSERT(starnn_relu_fwd(a, NULL) == STARNN_EINVAL, "relu_fwd with NULL y must fail");
	TEST_ASSERT(starnn_relu_bwd(a, a, b) == STARNN_EINVAL, "relu_bwd with a 5x4 dx must fail");
	TEST_ASSERT(starnn_relu_bwd(a, b, a) == STARNN_EINVAL, "relu_bwd with a 5x4 dy must fail");
	TEST_ASSERT(starnn_relu_bwd(a, hh, a) == STARNN_EINVAL, "relu_bwd with an fp16 dy must fail");
	starnn_tensor *c;
	TEST_OK(starnn_tensor_new(&c, "c", STARNN_FP32, 2, 4, 5));
	TEST_ASSERT(starnn_relu_bwd(a, c, a) == STARNN_EINVAL, "relu_bwd with dx == x must fail");
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(hh), starnn_tensor_destroy(c);
}

/* ------------------------------------------------ mixed precision (fp16 / bf16) */

static uint16_t narrow(starnn_dtype dt, float v)
{
	return dt == STARNN_FP16 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
}

static float widen(starnn_dtype dt, uint16_t h)
{
	return dt == STARNN_FP16 ? starnn_half_to_float(h) : starnn_bf16_to_float(h);
}

/* relu on 16-bit tensors is a select: exactly the fp32 result on the
 * widened values, rounded back (no rounding happens), bit for bit; NaN
 * inputs give NaN. Kernels on special values (+-0, +-Inf, NaN, subnormals),
 * then codelets against the fp32 codelets, whole and on channel views. */
static int same16(starnn_dtype dt, uint16_t got, float ref)
{
	return isnan(ref) ? isnan(widen(dt, got)) : got == narrow(dt, ref);
}

static void half_variants_dt(starnn_dtype dt)
{
	const char *dn = starnn_dtype_name(dt);
	float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-7f, -1e-7f, 1e-40f, -1e-40f, 3.0f, -3.0f,
	                   65504.0f, -65504.0f};
	size_t ns = sizeof special / sizeof *special;
	uint16_t x[14], dy[14], y[14], dx[14];
	for (size_t i = 0; i < ns; i++)
		x[i] = narrow(dt, special[i]), dy[i] = narrow(dt, 0.25f + (float)i);
	starnn_relu_fwd_half_cpu(dt, 1, ns, x, ns, y, ns);
	starnn_relu_bwd_half_cpu(dt, 1, ns, x, ns, dy, ns, dx, ns);
	for (size_t i = 0; i < ns; i++) {
		float xv = widen(dt, x[i]), yr, dxr;
		starnn_relu_fwd_cpu(1, 1, &xv, 1, &yr, 1);
		float dyv = widen(dt, dy[i]);
		starnn_relu_bwd_cpu(1, 1, &xv, 1, &dyv, 1, &dxr, 1);
		TEST_ASSERT(same16(dt, y[i], yr), "relu_fwd_half_cpu %s of %g (bits %04x): got bits %04x, fp32 gives %g", dn,
		            (double)xv, x[i], y[i], (double)yr);
		TEST_ASSERT(same16(dt, dx[i], dxr), "relu_bwd_half_cpu %s at x = %g: got bits %04x, fp32 gives %g", dn,
		            (double)xv, dx[i], (double)dxr);
	}
	/* Codelets vs the fp32 codelets: [4, 3, 5, 7], whole and channel views. */
	int64_t shape[4] = {4, 3, 5, 7};
	size_t n = 420;
	float *xv = test_random(n, -2, 2), *dyv = test_random(n, -2, 2);
	for (size_t i = 0; i < n; i += 11)
		xv[i] = 0.0f;
	for (size_t i = 0; i < n; i++)
		xv[i] = widen(dt, narrow(dt, xv[i])), dyv[i] = widen(dt, narrow(dt, dyv[i]));
	starnn_tensor *xf = test_tensor("xf", 4, shape, xv), *dyf = test_tensor("dyf", 4, shape, dyv);
	starnn_tensor *yf = test_tensor("yf", 4, shape, NULL), *dxf = test_tensor("dxf", 4, shape, NULL);
	starnn_tensor *xh, *dyh, *yh, *dxh;
	TEST_OK(starnn_tensor_create(&xh, "xh", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&dyh, "dyh", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&yh, "yh", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&dxh, "dxh", dt, 4, shape));
	TEST_OK(starnn_tensor_write_f32(xh, xv));
	TEST_OK(starnn_tensor_write_f32(dyh, dyv));
	TEST_OK(starnn_relu_fwd(xf, yf));
	TEST_OK(starnn_relu_bwd(xf, dyf, dxf));
	for (int view = 0; view < 2; view++) {
		if (view) {
			int64_t sizes[2] = {1, 2};
			starnn_tensor **px, **pdy, **py, **pdx;
			TEST_OK(starnn_tensor_write_f32(yh, dyv)); /* stale values cannot pass */
			TEST_OK(starnn_tensor_write_f32(dxh, xv));
			TEST_OK(starnn_tensor_split(xh, 1, 2, sizes, &px));
			TEST_OK(starnn_tensor_split(dyh, 1, 2, sizes, &pdy));
			TEST_OK(starnn_tensor_split(yh, 1, 2, sizes, &py));
			TEST_OK(starnn_tensor_split(dxh, 1, 2, sizes, &pdx));
			for (int p = 0; p < 2; p++) {
				TEST_OK(starnn_relu_fwd_mp(px[p], py[p]));
				TEST_OK(starnn_relu_bwd_mp(px[p], pdy[p], pdx[p]));
			}
		} else {
			TEST_OK(starnn_relu_fwd_mp(xh, yh));
			TEST_OK(starnn_relu_bwd_mp(xh, dyh, dxh));
		}
		float *a = test_read(yh), *b = test_read(yf), *c = test_read(dxh), *d = test_read(dxf);
		char what[96];
		snprintf(what, sizeof what, "relu_fwd_mp %s codelet%s", dn, view ? " on channel views" : "");
		test_close(what, a, b, n, 0, 0);
		snprintf(what, sizeof what, "relu_bwd_mp %s codelet%s", dn, view ? " on channel views" : "");
		test_close(what, c, d, n, 0, 0);
		free(a), free(b), free(c), free(d);
	}
	TEST_ASSERT(starnn_relu_fwd_mp(xh, xh) == STARNN_EINVAL, "relu_fwd_mp in place on %s must fail", dn);
	TEST_ASSERT(starnn_relu_bwd_mp(xh, dyh, dyh) == STARNN_EINVAL, "relu_bwd_mp in place on %s must fail", dn);
	TEST_ASSERT(starnn_relu_fwd_mp(xh, yf) == STARNN_EINVAL, "relu_fwd_mp %s -> fp32 must fail", dn);
	starnn_tensor *all[] = {xf, dyf, yf, dxf, xh, dyh, yh, dxh};
	for (size_t i = 0; i < 8; i++)
		starnn_tensor_destroy(all[i]);
	free(xv), free(dyv);
}

/* The 16-bit kernels on 3 strided rows of 1000 random patterns (all of
 * them: NaN, Inf, subnormals, +-0) against the fp32 kernels on the widened
 * values, at every instruction-set level: bit for bit (a select). */
static void half_levels(starnn_dtype dt)
{
	size_t rows = 3, cols = 1000, ld = 1005, n = rows * ld;
	uint16_t *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *y = malloc(n * sizeof *y);
	uint16_t *dx = malloc(n * sizeof *dx), *yref = malloc(n * sizeof *yref), *dxref = malloc(n * sizeof *dxref);
	for (size_t i = 0; i < n; i++)
		x[i] = (uint16_t)test_uniform(0, 65535), dy[i] = narrow(dt, test_uniform(-2, 2)), y[i] = dx[i] = 0x1234;
	SC_FOR_EACH_LEVEL(lv) {
		memcpy(yref, y, n * sizeof *y), memcpy(dxref, dx, n * sizeof *dx);
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++) {
				size_t i = r * ld + c;
				float xv = widen(dt, x[i]);
				/* NaN forward: the same pattern (a select keeps it) */
				yref[i] = isnan(xv) ? x[i] : narrow(dt, xv > 0 ? xv : xv < 0 ? 0.0f : xv);
				dxref[i] = xv > 0 ? dy[i] : 0;
			}
		uint16_t *yg = malloc(n * sizeof *yg), *dxg = malloc(n * sizeof *dxg);
		memcpy(yg, y, n * sizeof *y), memcpy(dxg, dx, n * sizeof *dx);
		starnn_relu_fwd_half_cpu(dt, rows, cols, x, ld, yg, ld);
		starnn_relu_bwd_half_cpu(dt, rows, cols, x, ld, dy, ld, dxg, ld);
		sc_same("relu_fwd_half_cpu vs the fp32 rule", yg, yref, n, 2);
		sc_same("relu_bwd_half_cpu vs the fp32 rule", dxg, dxref, n, 2);
		free(yg), free(dxg);
	}
	sc_level_done();
	free(x), free(dy), free(y), free(dx), free(yref), free(dxref);
}

/* A random bit pattern of es bytes (4 or 2); specials every few elements. */
static uint32_t random_bits(size_t es, size_t i)
{
	static const uint32_t sp32[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u,
	                                0xffa00002u, 0x7f800001u, 0x00000001u, 0x80000001u, 0x3f800000u};
	static const uint32_t sp16[] = {0x0000u, 0x8000u, 0x7c00u, 0xfc00u, 0x7e01u, 0xfd02u,
	                                0x7f80u, 0xff80u, 0x7fc1u, 0x0001u, 0x8001u, 0x3c00u};
	if (i % 7 == 3)
		return es == 4 ? sp32[(i / 7) % 10] : sp16[(i / 7) % 12];
	uint32_t hi = (uint32_t)test_uniform(0, 65536), lo = (uint32_t)test_uniform(0, 65536);
	return es == 4 ? hi << 16 | lo : lo;
}

static void *random_patterns(size_t es, size_t n)
{
	char *p = malloc(n * es);
	for (size_t i = 0; i < n; i++) {
		uint32_t b = random_bits(es, i);
		uint16_t h = (uint16_t)b;
		memcpy(p + i * es, es == 4 ? (const void *)&b : (const void *)&h, es);
	}
	return p;
}

static starnn_tensor *bits_tensor(const char *name, starnn_dtype dt, const int64_t *shape, const void *data)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, dt, 4, shape));
	if (data)
		TEST_OK(starnn_tensor_write(t, data));
	return t;
}

static void *read_bits(starnn_tensor *t, size_t es)
{
	void *p = malloc(starnn_tensor_numel(t) * es);
	TEST_OK(starnn_tensor_read(t, p));
	return p;
}

/* The codelets of dtype dt on random bit patterns against the CPU kernels
 * on the same patterns, bit for bit: whole tensors (fp32: in place too),
 * then on channel views (ld > cols) into tensors holding stale values.
 * Not on CUDA (whose codelets are checked by value above). */
static void bits_vs_kernels(starnn_dtype dt)
{
	if (TEST_ON_CUDA)
		return;
	const char *dn = starnn_dtype_name(dt);
	const size_t es = dt == STARNN_FP32 ? 4 : 2, rows = 3, cols = 1000, n = rows * cols;
	const int64_t shape[4] = {3, 2, 10, 50};
	void *x = random_patterns(es, n), *dy = random_patterns(es, n), *stale = random_patterns(es, n);
	void *yref = malloc(n * es), *dxref = malloc(n * es);
	if (dt == STARNN_FP32) {
		starnn_relu_fwd_cpu(rows, cols, x, cols, yref, cols);
		starnn_relu_bwd_cpu(rows, cols, x, cols, dy, cols, dxref, cols);
	} else {
		starnn_relu_fwd_half_cpu(dt, rows, cols, x, cols, yref, cols);
		starnn_relu_bwd_half_cpu(dt, rows, cols, x, cols, dy, cols, dxref, cols);
	}
	starnn_tensor *tx = bits_tensor("x", dt, shape, x), *tdy = bits_tensor("dy", dt, shape, dy);
	starnn_tensor *ty = bits_tensor("y", dt, shape, stale), *tdx = bits_tensor("dx", dt, shape, stale);
	char what[96];
	for (int view = 0; view < 2; view++) {
		if (view) {
			int64_t sizes[2] = {1, 1};
			starnn_tensor **px, **py, **pdy, **pdx;
			TEST_OK(starnn_tensor_write(ty, stale));
			TEST_OK(starnn_tensor_write(tdx, stale));
			TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &px));
			TEST_OK(starnn_tensor_split(ty, 1, 2, sizes, &py));
			TEST_OK(starnn_tensor_split(tdy, 1, 2, sizes, &pdy));
			TEST_OK(starnn_tensor_split(tdx, 1, 2, sizes, &pdx));
			for (int p = 0; p < 2; p++) {
				TEST_OK(starnn_relu_fwd_mp(px[p], py[p]));
				TEST_OK(starnn_relu_bwd_mp(px[p], pdy[p], pdx[p]));
			}
		} else {
			TEST_OK(starnn_relu_fwd_mp(tx, ty));
			TEST_OK(starnn_relu_bwd_mp(tx, tdy, tdx));
		}
		void *gy = read_bits(ty, es), *gdx = read_bits(tdx, es);
		snprintf(what, sizeof what, "relu_fwd %s codelet%s, bits", dn, view ? " on channel views" : "");
		test_same_bits(what, gy, yref, n, es);
		snprintf(what, sizeof what, "relu_bwd %s codelet%s, bits", dn, view ? " on channel views" : "");
		test_same_bits(what, gdx, dxref, n, es);
		free(gy), free(gdx);
	}
	if (dt == STARNN_FP32) { /* the in-place codelets */
		starnn_tensor *tz = bits_tensor("z", dt, shape, x), *tg = bits_tensor("g", dt, shape, dy);
		TEST_OK(starnn_relu_fwd(tz, tz));
		TEST_OK(starnn_relu_bwd(tx, tg, tg));
		void *gz = read_bits(tz, es), *gg = read_bits(tg, es);
		test_same_bits("relu_fwd fp32 codelet in place, bits", gz, yref, n, es);
		test_same_bits("relu_bwd fp32 codelet in place, bits", gg, dxref, n, es);
		free(gz), free(gg);
		starnn_tensor_destroy(tz), starnn_tensor_destroy(tg);
	}
	starnn_tensor_destroy(tx), starnn_tensor_destroy(tdy), starnn_tensor_destroy(ty), starnn_tensor_destroy(tdx);
	free(x), free(dy), free(stale), free(yref), free(dxref);
}

/* The codelets of every dtype against the rule in double, through the
 * element-wise helper (tests/testlib.h): shapes, strided channel views,
 * fp32 / fp16 / bf16; a select, so exact. */
static int submit_fwd(starnn_tensor *const *in, starnn_tensor *out, void *ctx)
{
	return starnn_relu_fwd_mp(in[0], out);
}

static double ref_fwd(const double *in, void *ctx)
{
	return in[0] > 0 ? in[0] : 0.0;
}

static int submit_bwd(starnn_tensor *const *in, starnn_tensor *out, void *ctx)
{
	return starnn_relu_bwd_mp(in[0], in[1], out);
}

static double ref_bwd(const double *in, void *ctx)
{
	return in[0] > 0 ? in[1] : 0.0;
}

static void elementwise(void)
{
	const struct test_ew fwd = {.name = "relu_fwd", .nin = 1, .submit = submit_fwd, .ref = ref_fwd, .lo = -2, .hi = 2};
	const struct test_ew bwd = {.name = "relu_bwd", .nin = 2, .submit = submit_bwd, .ref = ref_bwd, .lo = -2, .hi = 2};
	for (int dt = STARNN_FP32; dt <= STARNN_BF16; dt++) {
		test_elementwise(&fwd, (starnn_dtype)dt);
		test_elementwise(&bwd, (starnn_dtype)dt);
	}
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		/* at every instruction-set level; exact, so the levels agree too */
		SC_FOR_EACH_LEVEL(lv) {
			kernels_vs_naive(7);
			kernels_vs_naive(1000);
		}
		sc_level_done();
		half_levels(STARNN_FP16);
		half_levels(STARNN_BF16);
	}
	codelets_vs_kernels(1, 1, 1, 1);
	codelets_vs_kernels(4, 3, 5, 7);
	codelets_vs_kernels(3, 16, 32, 32);
	backward_vs_fd();
	bad_arguments();
	half_variants_dt(STARNN_FP16);
	half_variants_dt(STARNN_BF16);
	elementwise();
	for (int dt = STARNN_FP32; dt <= STARNN_BF16; dt++)
		bits_vs_kernels((starnn_dtype)dt);
	return test_finish();
}
