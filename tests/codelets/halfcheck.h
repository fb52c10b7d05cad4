/* Helpers for the tests of the fp16 / bf16 variants of the layer ops
 * (conv2d, convt2d, batchnorm, maxpool, concat): each 16-bit codelet runs
 * on inputs that hold values of the 16-bit type, and its result is compared
 * with the fp32 operation run on the same values (exactly representable in
 * fp32), rounded to the 16-bit type.
 *
 * Tolerance of a 16-bit result: |got - round(ref)| <= eps * |round(ref)| +
 * 1e-5 * max|ref|, eps = 2^-10 (fp16) or 2^-7 (bf16): one unit in the last
 * place. The 16-bit codelets widen their inputs exactly and run the same
 * fp32 kernels, so on CPU the result is bit for bit round(ref): that is
 * checked too (hc_exact). On CUDA, cuDNN may pick another algorithm for
 * another call, so an fp32 difference of a few units can move one rounding
 * by one unit: the tolerance above. fp32 outputs of the 16-bit codelets
 * (weight gradients, statistics) are compared with test_close. */
#ifndef STARNN_TEST_HALFCHECK_H
#define STARNN_TEST_HALFCHECK_H

#include "codelets/convert.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

/* Whether the 16-bit codelets run the very kernels of the fp32 reference
 * (CPU widening): then results must be bitwise round(ref). Not on CUDA;
 * on the CPU, a test clears hc_exact_cpu when they do not (conv2d on
 * oneDNN, whose bf16 kernels compute natively and whose fp32 kernels sum
 * in another order than the widened fp16 route): the tolerance alone
 * applies. */
static int hc_exact_cpu = 1;
#define hc_exact (hc_exact_cpu && !TEST_ON_CUDA)

/* v rounded to a value of dt (tests/testlib.h). */
static inline float hc_round1(starnn_dtype dt, float v)
{
	return test_round_to(dt, v);
}

/* Rounds v[0..n) to values of dt, in place. */
static inline void hc_round(starnn_dtype dt, float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = hc_round1(dt, v[i]);
}

/* Random data of dt (uniform in [lo, hi), rounded: tests/testlib.h). */
static inline float *hc_random(starnn_dtype dt, size_t n, float lo, float hi)
{
	return test_random_dt(dt, n, lo, hi);
}

/* A tensor of dtype dt holding data (NULL: zeros). */
static inline starnn_tensor *hc_tensor(const char *name, starnn_dtype dt, int ndim, const int64_t *shape,
                                       const float *data)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, name, dt, ndim, shape));
	if (data)
		TEST_OK(starnn_tensor_write_f32(t, data));
	return t;
}

static inline float hc_eps(starnn_dtype dt)
{
	return dt == STARNN_FP16 ? 0x1p-10f : dt == STARNN_BF16 ? 0x1p-7f : 1e-6f;
}

/* got: a 16-bit result read as fp32; ref: the fp32 operation's result.
 * The tolerance above, and on CPU bitwise equality with round(ref). */
static inline int hc_close(const char *what, starnn_dtype dt, const float *got, const float *ref, size_t n)
{
	float *r = malloc((n ? n : 1) * sizeof *r);
	double amax = 0;
	for (size_t i = 0; i < n; i++) {
		r[i] = hc_round1(dt, ref[i]);
		if (fabs(ref[i]) > amax)
			amax = fabs(ref[i]);
	}
	char label[160];
	snprintf(label, sizeof label, "%s (%s)", what, starnn_dtype_name(dt));
	int ok = test_close(label, got, r, n, hc_eps(dt), (float)(1e-5 * amax));
	if (hc_exact) {
		size_t diff = 0, first = 0;
		for (size_t i = 0; i < n; i++)
			if (memcmp(&got[i], &r[i], sizeof(float)) != 0 && !(got[i] == 0 && r[i] == 0) && !diff++)
				first = i;
		TEST_ASSERT(diff == 0, "%s: %zu of %zu elements not bitwise round(fp32 result); first [%zu]: %.9g vs %.9g",
		            label, diff, n, first, n ? got[first] : 0.0, n ? r[first] : 0.0);
		ok = ok && diff == 0;
	}
	free(r);
	return ok;
}

/* fp32 outputs of 16-bit codelets: on CPU the same kernels on the same
 * values (bitwise, rtol 0 would pass; 1e-6 leaves room for nothing but
 * summation order), on CUDA another algorithm may sum in another order. */
static inline int hc_close32(const char *what, starnn_dtype dt, const float *got, const float *ref, size_t n)
{
	double amax = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(ref[i]) > amax)
			amax = fabs(ref[i]);
	char label[160];
	snprintf(label, sizeof label, "%s (%s codelet, fp32 output)", what, starnn_dtype_name(dt));
	return test_close(label, got, ref, n, hc_exact ? 1e-6f : 1e-4f, (float)((hc_exact ? 1e-7 : 1e-5) * amax));
}

/* ---- the 16-bit CUDA convolution modes (STARNN_CUDA_HALF_CONV) against
 * the CPU fp32 kernels: another algorithm sums in another order (tensor
 * cores), so 16-bit outputs pass within a fraction of the output's scale,
 * |got - ref| <= tol * max|ref|, tol 1e-2 for fp16 (some 20 units in the
 * last place of the largest element) or 4e-2 for bf16 (some 10 units), and
 * fp32 outputs (weight and bias gradients: exact products of 16-bit values,
 * fp32 sums) within 1e-4 relative + 1e-5 max. mode: the mode's name, for
 * the messages. */

static inline double hc_amax(const float *v, size_t n)
{
	double amax = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(v[i]) > amax)
			amax = fabs(v[i]);
	return amax;
}

/* A 16-bit tensor (or part) read as fp32, through an fp32 tensor: parts
 * have no host buffer of their own. */
static inline float *hc_read(starnn_tensor *h, int ndim, const int64_t *shape)
{
	starnn_tensor *t;
	TEST_OK(starnn_tensor_create(&t, "readback", STARNN_FP32, ndim, shape));
	TEST_OK(starnn_convert(h, t));
	float *v = test_read(t);
	starnn_tensor_destroy(t);
	return v;
}

/* The 16-bit tensor h (shape, n elements) against ref. */
static inline int hc_check_scaled(const char *what, starnn_dtype dt, const char *mode, starnn_tensor *h,
                                  const int64_t *shape, const float *ref, size_t n)
{
	float *got = hc_read(h, 4, shape);
	char label[256];
	snprintf(label, sizeof label, "%s (%s, %s)", what, starnn_dtype_name(dt), mode);
	int ok = test_close(label, got, ref, n, 0.0f, (float)((dt == STARNN_FP16 ? 1e-2 : 4e-2) * hc_amax(ref, n)));
	free(got);
	return ok;
}

/* The fp32 tensor t (n elements) against ref. */
static inline int hc_check_rel32(const char *what, starnn_dtype dt, const char *mode, starnn_tensor *t,
                                 const float *ref, size_t n)
{
	float *got = test_read(t);
	char label[256];
	snprintf(label, sizeof label, "%s (%s, %s)", what, starnn_dtype_name(dt), mode);
	int ok = test_close(label, got, ref, n, 1e-4f, (float)(1e-5 * hc_amax(ref, n)));
	free(got);
	return ok;
}

#endif
