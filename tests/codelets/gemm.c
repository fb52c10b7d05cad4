/* gemm: the CPU kernel against a naive triple loop (all four transpose
 * combinations, odd sizes, several alpha / beta, strided operands, padding
 * left untouched, beta == 0 ignoring NaN in C); the codelet (CPU, or CUDA in
 * the _cuda build, OpenCL in the _opencl build: CLBlast) on dense tensors and on channel partitions of 4-D
 * tensors (ld > cols); the 16-bit variants; bad shapes -> EINVAL. Every
 * result is checked against the product in double, each element within the
 * rounding bound of its own sum (tests/testlib.h, test_close_sum). */
#include "codelets/gemm.h"
#include "codelets/kernels/gemm.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

#define PAD_VALUE 1.0e6f /* reading padding would show in the results */

/* C = alpha op(A) op(B) + beta C in double, with the magnitude of each
 * element's terms (tests/testlib.h, test_close_sum: k + 1 terms); beta == 0
 * does not read C; elements outside the m x n block (padding) keep C's
 * value with magnitude 0, so they must stay exactly as they were. */
static void naive_gemm(int ta, int tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                       const float *b, size_t ldb, float beta, const float *c, size_t ldc, struct test_sums *ref)
{
	for (size_t i = 0; i < m * ldc; i++)
		test_sums_copy(ref, i, c[i]);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			double s = 0, mag = 0;
			for (size_t p = 0; p < k; p++) {
				double x = ta ? a[p * lda + i] : a[i * lda + p];
				double y = tb ? b[j * ldb + p] : b[p * ldb + j];
				s += x * y, mag += fabs(x * y);
			}
			double old = beta == 0.0f ? 0.0 : (double)beta * c[i * ldc + j];
			ref->val[i * ldc + j] = alpha * s + old;
			ref->mag[i * ldc + j] = fabs((double)alpha) * mag + fabs(old);
		}
}

/* A rows x cols matrix inside rows of ld, padding set to PAD_VALUE. */
static float *padded(size_t rows, size_t cols, size_t ld)
{
	float *p = test_random(rows * ld, -1, 1);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = cols; c < ld; c++)
			p[r * ld + c] = PAD_VALUE;
	return p;
}

static void kernel_vs_naive(size_t m, size_t n, size_t k)
{
	static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, -1.5f}, {-2.0f, 1.0f}, {0.0f, 0.25f}};
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (size_t v = 0; v < sizeof ab / sizeof ab[0]; v++) {
				float alpha = ab[v][0], beta = ab[v][1];
				size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
				size_t lda = ac + 3, ldb = bc + 1, ldc = n + 2;
				float *a = padded(ar, ac, lda), *b = padded(br, bc, ldb), *c = padded(m, n, ldc);
				if (beta == 0.0f) /* C must not be read */
					for (size_t i = 0; i < m; i++)
						for (size_t j = 0; j < n; j++)
							c[i * ldc + j] = NAN;
				struct test_sums ref = test_sums_new(m * ldc);
				naive_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &ref);
				starnn_gemm_cpu(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
				char what[128];
				snprintf(what, sizeof what, "gemm_cpu %c%c m %zu n %zu k %zu alpha %g beta %g",
				         ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, beta);
				test_close_sum(what, c, ref.val, ref.mag, m * ldc, k + 1, TEST_U32);
				test_sums_free(&ref);
				free(a), free(b), free(c);
			}
}

/* A tensor whose matrix view is rows x cols with ld > cols: the first part
 * of a channel split of a 4-D parent [rows, cols/w + 1, 1, w]. *parent gets
 * the parent, filled with random values (the part region set to NaN if
 * nan_part). */
static starnn_tensor *strided(const char *name, size_t rows, size_t cols, starnn_tensor **parent, float **host,
                              int nan_part)
{
	int64_t w = cols % 3 == 0 ? 3 : 1, ch = (int64_t)cols / w;
	int64_t shape[4] = {(int64_t)rows, ch + 1, 1, w};
	size_t ld = (size_t)((ch + 1) * w);
	float *p = test_random(rows * ld, -1, 1);
	if (nan_part)
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				p[r * ld + c] = NAN;
	*parent = test_tensor(name, 4, shape, p);
	int64_t sizes[2] = {ch, 1};
	TEST_OK(starnn_tensor_split(*parent, 1, 2, sizes, NULL));
	*host = p;
	return (*parent)->parts[0];
}

/* The codelet against a direct call of the CPU kernel on the same data:
 * dense 2-D tensors, or channel parts (view != 0). */
static void codelet_vs_kernel(int ta, int tb, size_t m, size_t n, size_t k, float alpha, float beta, int view)
{
	size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
	starnn_tensor *A, *B, *C, *pa = NULL, *pb = NULL, *pc = NULL;
	float *ha, *hb, *hc;
	size_t lda = ac, ldb = bc, ldc = n;
	if (view) {
		A = strided("A", ar, ac, &pa, &ha, 0);
		B = strided("B", br, bc, &pb, &hb, 0);
		C = strided("C", m, n, &pc, &hc, beta == 0.0f);
		lda = pa->cols, ldb = pb->cols, ldc = pc->cols;
	} else {
		int64_t sa[2] = {(int64_t)ar, (int64_t)ac}, sb[2] = {(int64_t)br, (int64_t)bc}, sc[2] = {(int64_t)m, (int64_t)n};
		ha = test_random(ar * ac, -1, 1), hb = test_random(br * bc, -1, 1), hc = test_random(m * n, -1, 1);
		if (beta == 0.0f)
			for (size_t i = 0; i < m * n; i++)
				hc[i] = NAN;
		A = test_tensor("A", 2, sa, ha), B = test_tensor("B", 2, sb, hb), C = test_tensor("C", 2, sc, hc);
	}
	TEST_ASSERT(C->ld == ldc && (!view || ldc > n), "C view: ld %zu, cols %zu", C->ld, C->cols);

	size_t nc = m * ldc;
	struct test_sums ref = test_sums_new(nc);
	naive_gemm(ta, tb, m, n, k, alpha, ha, lda, hb, ldb, beta, hc, ldc, &ref);

	TEST_OK(starnn_gemm(ta, tb, alpha, A, B, beta, C));
	float *got = test_read(view ? pc : C); /* whole parent: padding must be intact */
	char what[160];
	snprintf(what, sizeof what, "gemm codelet %c%c m %zu n %zu k %zu alpha %g beta %g%s", ta ? 'T' : 'N',
	         tb ? 'T' : 'N', m, n, k, alpha, beta, view ? " on channel parts" : "");
	/* OpenBLAS (CPU), cuBLAS (CUDA, fp32 FMA math) or CLBlast (OpenCL),
	 * each in its own order: within the rounding bound of each sum */
	test_close_sum(what, got, ref.val, ref.mag, nc, k + 1, TEST_U32);
	test_sums_free(&ref);

	if (view) {
		starnn_tensor_destroy(pa), starnn_tensor_destroy(pb), starnn_tensor_destroy(pc);
	} else {
		starnn_tensor_destroy(A), starnn_tensor_destroy(B), starnn_tensor_destroy(C);
	}
	free(ha), free(hb), free(hc), free(got);
}

static void bad_shapes(void)
{
	starnn_tensor *a, *b, *c, *c2, *h, *x4;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, 4, 3));    /* M 4, K 3 */
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, 3, 5));    /* K 3, N 5 */
	TEST_OK(starnn_tensor_new(&c, "c", STARNN_FP32, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&c2, "c2", STARNN_FP32, 2, 5, 4));
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&x4, "x4", STARNN_FP32, 4, 4, 1, 1, 3)); /* 4 x 3 as a matrix */
	int rc;
	TEST_ASSERT((rc = starnn_gemm(0, 0, 1, a, b, 0, c)) == 0, "valid gemm refused (%d): %s", rc, starnn_last_error());
	TEST_ASSERT((rc = starnn_gemm(0, 0, 1, x4, b, 1, c)) == 0, "4-D A as 4 x 3 refused (%d): %s", rc,
	            starnn_last_error());
	TEST_ASSERT(starnn_gemm(1, 0, 1, a, b, 0, c) == STARNN_EINVAL, "A^T (3 x 4) times B (3 x 5) must fail");
	TEST_ASSERT(strstr(starnn_last_error(), "a[4,3]") && strstr(starnn_last_error(), "b[3,5]") &&
	                strstr(starnn_last_error(), "c[4,5]"),
	            "message should name all three shapes: %s", starnn_last_error());
	TEST_ASSERT(starnn_gemm(0, 1, 1, a, b, 0, c) == STARNN_EINVAL, "A (4 x 3) times B^T (5 x 3) must fail");
	TEST_ASSERT(starnn_gemm(0, 0, 1, a, b, 0, c2) == STARNN_EINVAL, "C 5 x 4 for a 4 x 5 product must fail");
	TEST_ASSERT(starnn_gemm(0, 0, 1, a, a, 0, c) == STARNN_EINVAL, "A (4 x 3) times A (4 x 3) must fail");
	TEST_ASSERT(starnn_gemm(2, 0, 1, a, b, 0, c) == STARNN_EINVAL, "transA = 2 must fail");
	TEST_ASSERT(starnn_gemm(0, -1, 1, a, b, 0, c) == STARNN_EINVAL, "transB = -1 must fail");
	TEST_ASSERT(starnn_gemm(0, 0, 1, a, b, 0, h) == STARNN_EINVAL, "fp16 C must fail");
	starnn_tensor *s, *s2; /* square: only the aliasing is wrong */
	TEST_OK(starnn_tensor_new(&s, "s", STARNN_FP32, 2, 4, 4));
	TEST_OK(starnn_tensor_new(&s2, "s2", STARNN_FP32, 2, 4, 4));
	TEST_ASSERT(starnn_gemm(0, 0, 1, s, s2, 0, s) == STARNN_EINVAL, "C aliasing A must fail");
	TEST_ASSERT(starnn_gemm(0, 0, 1, s2, s, 1, s) == STARNN_EINVAL, "C aliasing B must fail");
	starnn_tensor_destroy(s), starnn_tensor_destroy(s2);
	TEST_ASSERT(starnn_gemm(0, 0, 1, a, b, 0, NULL) == STARNN_EINVAL, "NULL C must fail");
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(c);
	starnn_tensor_destroy(c2), starnn_tensor_destroy(h), starnn_tensor_destroy(x4);
}


/* ------------------------------------------------ mixed precision (fp16 / bf16) */

/* Rounds x to dtype dt in place (so that fp32 and 16-bit tensors hold the
 * same values). */
static void round_to(starnn_dtype dt, float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = dt == STARNN_FP16 ? starnn_half_to_float(starnn_float_to_half(x[i]))
		       : dt == STARNN_BF16 ? starnn_bf16_to_float(starnn_float_to_bf16(x[i]))
		                           : x[i];
}

static starnn_tensor *tensor_dt(const char *name, starnn_dtype dt, int ndim, const int64_t *shape, const float *data)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, dt, ndim, shape));
	if (data)
		TEST_OK(starnn_tensor_write_f32(t, data));
	return t;
}

/* gemm_mp (A, B of dt; C fp32 or dt) and the fp32 gemm on the same
 * (rounded) values, against the product in double: fp32 accumulation on
 * every route (widened OpenBLAS, oneDNN bf16, cuBLAS compute 32F) within
 * the rounding bound of each sum, plus one rounding to dt for a 16-bit C
 * (tests/testlib.h, test_close_sum_out). With view, A is the first columns
 * of a wider tensor (ld > cols). */
static void half_vs_fp32(starnn_dtype dt, starnn_dtype cdt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                         float alpha, float beta, int view)
{
	int64_t ash[2] = {ta ? k : m, ta ? m : k}, bsh[2] = {tb ? n : k, tb ? k : n}, csh[2] = {m, n};
	int64_t wide[2] = {ash[0], ash[1] + 3};
	size_t na = (size_t)(ash[0] * ash[1]), nb = (size_t)(bsh[0] * bsh[1]), nc = (size_t)(m * n);
	float *a = test_random((size_t)(wide[0] * wide[1]), -1, 1), *b = test_random(nb, -1, 1), *c = test_random(nc, -1, 1);
	round_to(dt, a, (size_t)(wide[0] * wide[1]));
	round_to(dt, b, nb);
	round_to(cdt, c, nc);
	starnn_tensor *af, *ah, *awide = NULL;
	if (view) {
		int64_t sizes[2] = {ash[1], 3};
		starnn_tensor **parts;
		awide = tensor_dt("Aw", dt, 2, wide, a);
		TEST_OK(starnn_tensor_split(awide, 1, 2, sizes, &parts));
		ah = parts[0];
		float *dense = malloc(na * sizeof *dense);
		for (int64_t r = 0; r < ash[0]; r++)
			memcpy(dense + r * ash[1], a + r * wide[1], (size_t)ash[1] * sizeof *dense);
		af = tensor_dt("Af", STARNN_FP32, 2, ash, dense);
		free(dense);
	} else {
		af = tensor_dt("Af", STARNN_FP32, 2, ash, a);
		ah = tensor_dt("Ah", dt, 2, ash, a);
	}
	starnn_tensor *bf = tensor_dt("Bf", STARNN_FP32, 2, bsh, b), *bh = tensor_dt("Bh", dt, 2, bsh, b);
	starnn_tensor *cf = tensor_dt("Cf", STARNN_FP32, 2, csh, c), *ch = tensor_dt("Ch", cdt, 2, csh, c);
	TEST_OK(starnn_gemm(ta, tb, alpha, af, bf, beta, cf));
	TEST_OK(starnn_gemm_mp(ta, tb, alpha, ah, bh, beta, ch));
	float *ref32 = test_read(cf), *got = test_read(ch);
	struct test_sums ref = test_sums_new(nc);
	naive_gemm(ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha, a, (size_t)(view ? wide[1] : ash[1]), b,
	           (size_t)bsh[1], beta, c, (size_t)n, &ref);
	char what[160];
	snprintf(what, sizeof what, "gemm_mp %s x %s -> %s, %c%c, %lldx%lldx%lld, alpha %g beta %g%s",
	         starnn_dtype_name(dt), starnn_dtype_name(dt), starnn_dtype_name(cdt), ta ? 'T' : 'N', tb ? 'T' : 'N',
	         (long long)m, (long long)n, (long long)k, alpha, beta, view ? ", A a column view" : "");
	double uout = cdt == STARNN_FP16 ? TEST_U16 : cdt == STARNN_BF16 ? TEST_UBF16 : TEST_U32;
	test_close_sum_out(what, got, ref.val, ref.mag, nc, (size_t)k + 1, TEST_U32, uout);
	snprintf(what, sizeof what, "gemm fp32 on the same %s values, %c%c, %lldx%lldx%lld", starnn_dtype_name(dt),
	         ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k);
	test_close_sum(what, ref32, ref.val, ref.mag, nc, (size_t)k + 1, TEST_U32);
	test_sums_free(&ref);
	starnn_tensor_destroy(af), starnn_tensor_destroy(bf), starnn_tensor_destroy(cf);
	starnn_tensor_destroy(bh), starnn_tensor_destroy(ch);
	starnn_tensor_destroy(view ? awide : ah);
	free(a), free(b), free(c), free(ref32), free(got);
}

static void half_variants(void)
{
	static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {32, 64, 64}, {96, 80, 72}};
	starnn_dtype dts[2] = {STARNN_FP16, STARNN_BF16};
	for (int d = 0; d < 2; d++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++)
				for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
					const int64_t *sh = shapes[s];
					half_vs_fp32(dts[d], STARNN_FP32, ta, tb, sh[0], sh[1], sh[2], 1.0f, 0.0f, (int)(s & 1));
					half_vs_fp32(dts[d], dts[d], ta, tb, sh[0], sh[1], sh[2], 1.0f, 0.0f, 0);
					half_vs_fp32(dts[d], STARNN_FP32, ta, tb, sh[0], sh[1], sh[2], -0.5f, 0.75f, 0);
					half_vs_fp32(dts[d], dts[d], ta, tb, sh[0], sh[1], sh[2], -0.5f, 0.75f, (int)(s & 1));
				}
	/* Bad combinations. */
	starnn_tensor *h, *bh, *f, *c;
	TEST_OK(starnn_tensor_new(&h, "h", STARNN_FP16, 2, 4, 5));
	TEST_OK(starnn_tensor_new(&bh, "bh", STARNN_BF16, 2, 5, 4));
	TEST_OK(starnn_tensor_new(&f, "f", STARNN_FP32, 2, 5, 4));
	TEST_OK(starnn_tensor_new(&c, "c", STARNN_BF16, 2, 4, 4));
	TEST_ASSERT(starnn_gemm_mp(0, 0, 1, h, bh, 0, c) == STARNN_EINVAL, "gemm_mp fp16 x bf16 must fail");
	TEST_ASSERT(starnn_gemm_mp(0, 0, 1, h, f, 0, c) == STARNN_EINVAL, "gemm_mp fp16 x fp32 must fail");
	TEST_ASSERT(starnn_gemm_mp(0, 1, 1, bh, bh, 0, c) == STARNN_EINVAL, "gemm_mp bf16 with mismatched shapes must fail");
	TEST_ASSERT(starnn_gemm_mp(0, 0, 1, bh, c, 0, h) == STARNN_EINVAL, "gemm_mp bf16 -> fp16 C must fail");
	starnn_tensor_destroy(h), starnn_tensor_destroy(bh), starnn_tensor_destroy(f), starnn_tensor_destroy(c);
}

int main(void)
{
	static const size_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {3, 64, 48}, {96, 80, 72}};
	test_init();
	if (!TEST_ON_DEVICE)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			kernel_vs_naive(shapes[s][0], shapes[s][1], shapes[s][2]);
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
				for (int view = 0; view < 2; view++) {
					codelet_vs_kernel(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f, view);
					codelet_vs_kernel(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], -0.5f, 0.75f, view);
				}
	bad_shapes();
	half_variants();
	return test_finish();
}
