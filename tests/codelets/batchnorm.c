/* batchnorm: the CPU kernels against a double-precision reference of
 * torch.nn.BatchNorm2d (training forward with running statistics, backward,
 * evaluation, fused ReLU, strided views), PyTorch itself on one small fixed
 * input, central finite differences; the codelets (CPU, or CUDA in the
 * _cuda build) through starnn_batchnorm_fwd / _bwd on whole batches and on
 * batches split into 2 and 3 micro-batches; the 16-bit layer; bn_slot_add;
 * the 16-bit kernels at every instruction-set level; bad shapes ->
 * STARNN_EINVAL. The _opencl build also compares the layer on OpenCL with
 * the CPU kernels bit for bit (opencl_bits), and the launchers on strided
 * views at offsets (opencl_offsets). Data in [-2, 3) plus a per-channel offset, gamma in [0.5,
 * 1.5) with random signs.
 *
 * Tolerances: every result is checked against the double reference of its
 * definition within a bound derived from the computation (ref_forward,
 * ref_backward, ref_eval, y_bound: the derivations are there), for each
 * element from the magnitudes of its own terms: the double sums' rounding
 * bound (lambda sqrt(M) 2^-53 sum|terms|, tests/testlib.h), the errors of
 * the float mean and invstd carried through the formulas that use them,
 * and one 2^-24 for each fp32 rounding of what it rounds. The kernels' and
 * the codelets' arithmetic (CPU or CUDA, any split into slots, micro-batches
 * or channel blocks) only reorders the double sums, and an FMA only drops a
 * rounding: one bound serves all. Results that are one rounding of a double
 * value (mean, dbeta) may come to ~1 of their bound; the others sit lower.
 * PyTorch's committed fp32 outputs are checked against the same reference
 * within fp32 bounds of any summation order (kernels_vs_torch), and the
 * kernels against them within the sum of both bounds. The finite
 * differences: the rounding of the float objective over the step, the
 * truncation (Richardson, from the double reference) and the analytic
 * value's bound (fd_check). Exact results stay exact: padding, the running
 * statistics in evaluation, bn_slot_add (one double addition), the 16-bit
 * kernels against the fp32 kernels on the same values (the same sums in
 * the same order, and 16-bit outputs rounded once). STARNN_TEST_VERBOSE=1
 * prints how far into its bound each check lands. *
 * Length (about 1,550 lines): one test program per operation
 * (codelets/ops.list); batch norm's forward, backward, evaluation and
 * fused-ReLU passes in three dtypes, blocked layouts and micro-batches,
 * each against its derived bound, and on OpenCL the layer against the CPU
 * kernels bit for bit.
 */
#include "codelets/batchnorm.h"
#include "codelets/kernels/batchnorm.h"
#include "runtime/core/codelet.h"
#include "tests/testlib.h"
#include "tests/codelets/halfcheck.h"
#include "tests/codelets/simdcheck.h"

#define MOM 0.1
#define EPS 1e-5

struct dims {
	int64_t n, c, h, w; /* h = w = 0: a 2-D [N, C] tensor */
};

static size_t inner_of(struct dims d)
{
	return d.h ? (size_t)(d.h * d.w) : 1;
}

/* ------------------------------------------------------------ reference */

/* The arithmetic a bound is derived for: u, the unit roundoff of the
 * elementwise steps and of the stored results (fp32); ua, that of the
 * sums; det: the deterministic n ua of a sum of n terms (any order, no
 * assumption) instead of the probabilistic lambda sqrt(n) ua
 * (tests/testlib.h). */
struct prec {
	double u, ua;
	int det;
};
/* starnn's kernels, CPU and CUDA: fp32 elementwise, sums in double. */
static const struct prec KERNELS = {TEST_U32, TEST_U64, 0};
/* Any fp32 implementation (PyTorch's): fp32 everywhere, sums in any order. */
static const struct prec FP32_ANY = {TEST_U32, TEST_U32, 1};

static double sum_err(const struct prec *p, double nterms, double mag)
{
	return (p->det ? nterms : TEST_SUM_LAMBDA * sqrt(nterms)) * p->ua * mag;
}

struct ref {
	double *y, *mean, *var, *invstd, *rm, *rv; /* forward */
	double *dx, *dgamma, *dbeta;               /* backward */
	/* bounds of |got - exact| of each (see the derivations below) */
	double *by, *bmean, *binvstd, *brm, *brv, *bdx, *bdgamma, *bdbeta;
};

/* The bound of y = fl(fl(fl(x - mf) s) + b), s = fl(gamma isf), mf and isf
 * the float mean and invstd with errors em, eis; xm = x - mean, ylin =
 * gamma xm is + beta (exact). First order, each rounding u of what it
 * rounds:
 *   |s| |fl(x - mf) - xm|   <= A (em + u |xm|),       A = |gamma| is
 *   |xm| |s - gamma is|     <= |xm| (|gamma| eis + u A)
 *   the product's rounding  <= u A |xm|,  the sum's <= u |ylin|;
 * (1 + 8u) covers the second-order terms (and the reference's own double
 * roundings, 2^-29 of these). An FMA (CUDA, or a compiler contracting on
 * another processor) only drops a rounding. The ReLU is 1-Lipschitz: the
 * same bound. */
static double y_bound(double gamma, double is, double xm, double ylin, double em, double eis, double u)
{
	double a = fabs(gamma) * is;
	return (1 + 8 * u) * (a * em + 3 * u * a * fabs(xm) + fabs(gamma) * fabs(xm) * eis + u * fabs(ylin));
}

/* BatchNorm2d training forward in double from the definition, rm0 / rv0 the
 * initial running stats, with the bounds of the float results computed by
 * p's arithmetic with these mom and eps. Per channel, M = n inner:
 *   s1 = sum x, s2 = sum x^2: errors E1 = e(M, sum|x|), E2 = e(M, s2);
 *   mean = s1 / M: Em = E1 / M + ua |mean|;
 *   var = s2 / M - mean^2 (the kernels' formula, the worst of the usual
 *     ones): Ev = E2 / M + 2 |mean| Em + 3 ua (s2 / M + mean^2);
 *   float mean: em = u |mean| + Em; float invstd = 1 / sqrt(var + eps):
 *     eis = u is + is^3 Ev / 2 + 3 ua is;
 *   running_mean = (1 - mom) rm0 + mom mean, running_var = (1 - mom) rv0 +
 *     mom var M / (M - 1): u of the result, mom times the error of the
 *     statistic, a few ua of the terms;
 *   y: y_bound. */
static void ref_forward(size_t n, size_t c, size_t inner, const float *x, const float *gamma, const float *beta,
                        int relu, const float *rm0, const float *rv0, double mom, double eps, const struct prec *p,
                        struct ref *r)
{
	test_host_begin();
	double m = (double)(n * inner), u = p->u, ua = p->ua;
	for (size_t k = 0; k < c; k++) {
		double s = 0, sabs = 0, s2 = 0, v = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < inner; j++) {
				double xv = x[(i * c + k) * inner + j];
				s += xv, sabs += fabs(xv), s2 += xv * xv;
			}
		double mean = s / m;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < inner; j++) {
				double e = x[(i * c + k) * inner + j] - mean;
				v += e * e;
			}
		v /= m;
		double e_mean = sum_err(p, m, sabs) / m + ua * fabs(mean);
		double e_var = sum_err(p, m, s2) / m + 2 * fabs(mean) * e_mean + 3 * ua * (s2 / m + mean * mean);
		double is = 1 / sqrt(v + eps), unb = v * m / (m - 1);
		r->mean[k] = mean;
		r->var[k] = v;
		r->invstd[k] = is;
		r->rm[k] = (1 - mom) * rm0[k] + mom * mean;
		r->rv[k] = (1 - mom) * rv0[k] + mom * unb;
		r->bmean[k] = u * fabs(mean) + (1 + u) * e_mean;
		r->binvstd[k] = u * is + (1 + u) * (0.5 * is * is * is * e_var + 3 * ua * is);
		r->brm[k] = u * fabs(r->rm[k]) +
		            (1 + u) * (mom * e_mean + 4 * ua * (fabs((1 - mom) * rm0[k]) + fabs(mom * mean)));
		r->brv[k] = u * fabs(r->rv[k]) + (1 + u) * (mom * (e_var * m / (m - 1) + 2 * ua * unb) +
		                                            4 * ua * (fabs((1 - mom) * rv0[k]) + fabs(mom * unb)));
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < inner; j++) {
				size_t e = (i * c + k) * inner + j;
				double xm = x[e] - mean, yv = gamma[k] * xm * is + beta[k];
				r->y[e] = relu && yv < 0 ? 0 : yv;
				r->by[e] = y_bound(gamma[k], is, xm, yv, r->bmean[k], r->binvstd[k], u);
			}
	}
	test_host_end();
}

/* Evaluation: y = gamma (x - rm) / sqrt(rv + eps) + beta with the given
 * running stats (exact values rm, rv; the float ones the kernel uses off
 * by at most erm, erv: 0 when they are the inputs themselves). The kernels
 * take 1 / sqrt(rv + eps) in double (3 ua) and s = fl(gamma istd): y_bound
 * with em = erm, eis = is^3 erv / 2 + 3 ua is. */
static void ref_eval(size_t n, size_t c, size_t inner, const float *x, const float *gamma, const float *beta, int relu,
                     const double *rm, const double *rv, const double *erm, const double *erv, double eps,
                     const struct prec *p, double *y, double *by)
{
	test_host_begin();
	for (size_t k = 0; k < c; k++) {
		double is = 1 / sqrt(rv[k] + eps), em = erm ? erm[k] : 0;
		double eis = (erv ? 0.5 * is * is * is * erv[k] : 0) + 3 * p->ua * is;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < inner; j++) {
				size_t e = (i * c + k) * inner + j;
				double xm = x[e] - rm[k], v = gamma[k] * xm * is + beta[k];
				y[e] = relu && v < 0 ? 0 : v;
				by[e] = y_bound(gamma[k], is, xm, v, em, eis, p->u);
			}
	}
	test_host_end();
}

/* Backward in double; mask: the forward output when the ReLU is fused (its
 * own float y, so that elements at the kink agree), else NULL. Bounds, per
 * channel, g = dy (masked), A = gamma is, em / eis those of the forward:
 *   sg = sum g: Eg = e(M, sum|g|); dbeta = sg: u |dbeta| + Eg;
 *   S2 = sum g xm; the kernels sum g (x - mf): off by es2 = em sum|g| +
 *     e(M, sum|g xm| + em sum|g|);
 *   dgamma = is S2 = fl(isf S2'): u |dgamma| + eis |S2| + (is + eis) es2;
 *   dx = a g + kk - d (x - mf), a = fl(gamma isf), kk = fl(-a sg / M),
 *     d = fl(a isf^2 S2' / M) (the kernels' constants, in double):
 *     ea = |gamma| eis + u A; ek = u |K| + (|gamma| eis |sg| + A Eg) / M;
 *     ed = u |D| + |gamma| (3 is^2 eis |S2| + is^3 es2) / M (K = -A sg / M,
 *     D = gamma is^3 S2 / M), then per element the errors of the
 *     coefficients times their factors and one u for each of the four
 *     roundings (a g, + kk, x - mf and d (x - mf), the difference):
 *     |g| ea + 2u A |g| + ek + u |K| + ed |xm| + |D| (em + u |xm|) + u |D xm|
 *     + u |dx|. */
static void ref_backward(size_t n, size_t c, size_t inner, const float *x, const float *dy, const float *mask,
                         const float *gamma, const struct prec *p, struct ref *r)
{
	test_host_begin();
	double m = (double)(n * inner), u = p->u, ua = p->ua;
	for (size_t k = 0; k < c; k++) {
		double sg = 0, sgabs = 0, s2 = 0, s2abs = 0, mean = r->mean[k], is = r->invstd[k];
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < inner; j++) {
				size_t e = (i * c + k) * inner + j;
				double g = !mask || mask[e] > 0 ? dy[e] : 0;
				sg += g, sgabs += fabs(g);
				s2 += g * (x[e] - mean), s2abs += fabs(g * (x[e] - mean));
			}
		double em = r->bmean[k], eis = r->binvstd[k], ag = fabs(gamma[k]);
		double e_g = sum_err(p, m, sgabs), es2 = em * sgabs + sum_err(p, m, s2abs + em * sgabs);
		r->dbeta[k] = sg;
		r->dgamma[k] = is * s2;
		r->bdbeta[k] = u * fabs(sg) + (1 + u) * e_g;
		r->bdgamma[k] = u * fabs(r->dgamma[k]) + (1 + 2 * u) * (eis * fabs(s2) + (is + eis) * es2) +
		                2 * ua * fabs(r->dgamma[k]);
		double a = gamma[k] * is, kc = -a * sg / m, dc = gamma[k] * is * is * is * s2 / m;
		double ea = ag * eis + u * (fabs(a) + ag * eis);
		double ek = (1 + 2 * u) * (u * fabs(kc) + (ag * eis * fabs(sg) + fabs(a) * e_g) / m + 3 * ua * fabs(kc));
		double ed = (1 + 4 * u) * (u * fabs(dc) + ag * (3 * is * is * eis * fabs(s2) + is * is * is * es2) / m +
		                           5 * ua * fabs(dc));
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < inner; j++) {
				size_t e = (i * c + k) * inner + j;
				double g = !mask || mask[e] > 0 ? dy[e] : 0, xm = x[e] - mean;
				r->dx[e] = a * g + kc - dc * xm;
				r->bdx[e] = (1 + 8 * u) * (fabs(g) * ea + 2 * u * fabs(a * g) + ek + u * fabs(kc) +
				                           ed * fabs(xm) + fabs(dc) * (em + u * fabs(xm)) +
				                           u * fabs(dc * xm) + u * fabs(r->dx[e]));
			}
	}
	test_host_end();
}

static struct ref ref_alloc(size_t numel, size_t c)
{
	struct ref r;
	double **pe[] = {&r.y, &r.dx, &r.by, &r.bdx}, **pc[] = {&r.mean, &r.var, &r.invstd, &r.rm, &r.rv, &r.dgamma,
	                                                      &r.dbeta, &r.bmean, &r.binvstd, &r.brm, &r.brv,
	                                                      &r.bdgamma, &r.bdbeta};
	for (size_t i = 0; i < sizeof pe / sizeof *pe; i++)
		*pe[i] = calloc(numel ? numel : 1, sizeof(double));
	for (size_t i = 0; i < sizeof pc / sizeof *pc; i++)
		*pc[i] = calloc(c ? c : 1, sizeof(double));
	return r;
}

static void ref_free(struct ref *r)
{
	free(r->y), free(r->dx), free(r->mean), free(r->var), free(r->invstd), free(r->rm), free(r->rv);
	free(r->dgamma), free(r->dbeta);
	free(r->by), free(r->bdx), free(r->bmean), free(r->binvstd), free(r->brm), free(r->brv);
	free(r->bdgamma), free(r->bdbeta);
}

/* An accumulated result fl(new + beta old): exact + beta old (old the
 * stored float), the new part's bound plus the roundings of beta old and
 * of the sum. */
static void accumulated(size_t n, double beta, const float *old, double *exact, double *bound, double u)
{
	for (size_t i = 0; i < n; i++) {
		double bo = beta * old[i];
		exact[i] += bo;
		bound[i] = (1 + 2 * u) * (bound[i] + u * fabs(bo) + u * fabs(exact[i]));
	}
}

/* Dense <-> strided copies (rows of cols, ld apart). */
static float *strided(const float *dense, size_t rows, size_t cols, size_t ld, float pad)
{
	float *s = malloc(rows * ld * sizeof *s);
	for (size_t r = 0; r < rows; r++)
		for (size_t k = 0; k < ld; k++)
			s[r * ld + k] = k < cols ? dense[r * cols + k] : pad;
	return s;
}

static float *dense_of(const float *s, size_t rows, size_t cols, size_t ld)
{
	float *d = calloc(rows * cols + 1, sizeof *d);
	for (size_t r = 0; r < rows; r++)
		memcpy(d + r * cols, s + r * ld, cols * sizeof *d);
	return d;
}

static int pads_untouched(const float *s, size_t rows, size_t cols, size_t ld, float pad)
{
	for (size_t r = 0; r < rows; r++)
		for (size_t k = cols; k < ld; k++)
			if (s[r * ld + k] != pad)
				return 0;
	return 1;
}

/* Test data of one case. */
struct data {
	struct dims d;
	size_t n, c, inner, cols, numel;
	float *x, *dy, *gamma, *beta, *rm0, *rv0;
};

static struct data data_make(struct dims d, uint64_t seed)
{
	struct data t = {.d = d};
	test_seed(seed);
	t.n = (size_t)d.n, t.c = (size_t)d.c, t.inner = inner_of(d);
	t.cols = t.c * t.inner, t.numel = t.n * t.cols;
	t.x = test_random(t.numel, -2, 3);
	for (size_t e = 0; e < t.numel; e++)
		t.x[e] += 0.75f * (float)((e / t.inner) % t.c); /* per-channel offsets */
	t.dy = test_random(t.numel, -1, 1);
	t.gamma = test_random(t.c, 0.5f, 1.5f);
	for (size_t k = 0; k < t.c; k += 2)
		t.gamma[k] = -t.gamma[k];
	t.beta = test_random(t.c, -0.5f, 0.5f);
	t.rm0 = test_random(t.c, -0.5f, 0.5f);
	t.rv0 = test_random(t.c, 0.5f, 2.0f);
	return t;
}

static void data_free(struct data *t)
{
	free(t->x), free(t->dy), free(t->gamma), free(t->beta), free(t->rm0), free(t->rv0);
}

static const char *dims_str(struct dims d, int relu)
{
	static char buf[96];
	if (d.h)
		snprintf(buf, sizeof buf, "[%lld,%lld,%lld,%lld]%s", (long long)d.n, (long long)d.c, (long long)d.h,
		         (long long)d.w, relu ? "+relu" : "");
	else
		snprintf(buf, sizeof buf, "[%lld,%lld]%s", (long long)d.n, (long long)d.c, relu ? "+relu" : "");
	return buf;
}


/* ------------------------------------------------ direct kernel pipeline */

struct out {
	float *y, *mean, *invstd, *rm, *rv, *dx, *dgamma, *dbeta;
};

static void out_free(struct out *o)
{
	free(o->y), free(o->mean), free(o->invstd), free(o->rm), free(o->rv), free(o->dx), free(o->dgamma);
	free(o->dbeta);
}

/* Training forward and backward by direct CPU kernel calls on dense data,
 * the batch cut into nslots slices of rows, one workspace slot each. */
static struct out kernels_run(const struct data *t, int relu, int nslots)
{
	size_t n = t->n, c = t->c, inner = t->inner, cols = t->cols, lds = 2 * c;
	double *slots = calloc((size_t)nslots * lds, sizeof *slots), count = (double)(n * inner);
	struct out o = {
		.y = calloc(t->numel, sizeof(float)), .dx = calloc(t->numel, sizeof(float)),
		.mean = calloc(c, sizeof(float)), .invstd = calloc(c, sizeof(float)),
		.rm = malloc(c * sizeof(float)), .rv = malloc(c * sizeof(float)),
		.dgamma = calloc(c, sizeof(float)), .dbeta = calloc(c, sizeof(float)),
	};
	memcpy(o.rm, t->rm0, c * sizeof(float));
	memcpy(o.rv, t->rv0, c * sizeof(float));
	for (int s = 0; s < nslots; s++) {
		size_t r0 = n * (size_t)s / (size_t)nslots, r1 = n * (size_t)(s + 1) / (size_t)nslots;
		starnn_bn_stats_cpu(r1 - r0, c, inner, t->x + r0 * cols, cols, slots + (size_t)s * lds, 0);
	}
	starnn_bn_finalize_cpu(c, (size_t)nslots, slots, lds, count, (float)EPS, (float)MOM, 1, o.mean, o.invstd, o.rm,
	                       o.rv);
	starnn_bn_apply_cpu(n, c, inner, t->x, cols, o.mean, o.invstd, 0, (float)EPS, t->gamma, t->beta, relu, o.y, cols);
	const float *ym = relu ? o.y : NULL;
	for (int s = 0; s < nslots; s++) {
		size_t r0 = n * (size_t)s / (size_t)nslots, r1 = n * (size_t)(s + 1) / (size_t)nslots;
		starnn_bn_bwd_reduce_cpu(r1 - r0, c, inner, t->x + r0 * cols, cols, t->dy + r0 * cols, cols,
		                         ym ? ym + r0 * cols : NULL, cols, o.mean, slots + (size_t)s * lds, 0);
	}
	starnn_bn_bwd_params_cpu(c, (size_t)nslots, slots, lds, o.invstd, 0, o.dgamma, o.dbeta);
	starnn_bn_bwd_apply_cpu(n, c, inner, t->x, cols, t->dy, cols, ym, cols, o.mean, o.invstd, t->gamma,
	                        (size_t)nslots, slots, lds, count, 0, o.dx, cols);
	free(slots);
	return o;
}


/* ------------------------------------------------ kernels vs the reference */

/* The parameters as the kernels get them (floats). */
#define MOMF ((double)(float)MOM)
#define EPSF ((double)(float)EPS)

static void check(const char *what, const char *ds, const float *got, const double *exact, const double *bound,
                  size_t n)
{
	char w[320];
	snprintf(w, sizeof w, "%s %s", what, ds);
	test_close_bound(w, got, exact, bound, n);
}

static double *to_double(const float *f, size_t n)
{
	double *d = calloc(n + 1, sizeof *d);
	for (size_t i = 0; i < n; i++)
		d[i] = f[i];
	return d;
}

static float *copy_of(const float *f, size_t n)
{
	float *d = malloc((n ? n : 1) * sizeof *d);
	memcpy(d, f, n * sizeof *d);
	return d;
}

static void kernels_vs_ref(struct dims dm, int relu)
{
	struct data t = data_make(dm, (uint64_t)(dm.n * 1000 + dm.c * 100 + dm.h * 10 + dm.w + relu));
	size_t n = t.n, c = t.c, inner = t.inner, cols = t.cols, numel = t.numel;
	size_t ldx = cols + 3, lddy = cols + 1, ldy = cols + 5, lddx = cols + 2, lds = 2 * c + 2;
	double count = (double)(n * inner);
	const float pad = 7.25f;
	const char *ds = dims_str(dm, relu);

	struct ref r = ref_alloc(numel, c);
	ref_forward(n, c, inner, t.x, t.gamma, t.beta, relu, t.rm0, t.rv0, MOMF, EPSF, &KERNELS, &r);

	float *x = strided(t.x, n, cols, ldx, pad), *dy = strided(t.dy, n, cols, lddy, pad);
	float *y = strided(t.dy, n, cols, ldy, pad), *dx = strided(t.dy, n, cols, lddx, pad);
	float *mean = calloc(c, sizeof *mean), *invstd = calloc(c, sizeof *invstd);
	float *rm = malloc(c * sizeof *rm), *rv = malloc(c * sizeof *rv);
	float *dgamma = calloc(c, sizeof *dgamma), *dbeta = calloc(c, sizeof *dbeta);
	memcpy(rm, t.rm0, c * sizeof *rm);
	memcpy(rv, t.rv0, c * sizeof *rv);
	double *slots = calloc(2 * lds, sizeof *slots);

	/* Two slots; the first filled by two accumulated calls when n >= 3. */
	size_t a = n / 3, b = n >= 2 ? n / 2 + (n >= 3) : n;
	starnn_bn_stats_cpu(a, c, inner, x, ldx, slots, 0);
	starnn_bn_stats_cpu(b - a, c, inner, x + a * ldx, ldx, slots, 1);
	starnn_bn_stats_cpu(n - b, c, inner, x + b * ldx, ldx, slots + lds, 0);
	starnn_bn_finalize_cpu(c, 2, slots, lds, count, (float)EPS, (float)MOM, 1, mean, invstd, rm, rv);
	starnn_bn_apply_cpu(n, c, inner, x, ldx, mean, invstd, 0, (float)EPS, t.gamma, t.beta, relu, y, ldy);

	check("mean", ds, mean, r.mean, r.bmean, c);
	check("invstd", ds, invstd, r.invstd, r.binvstd, c);
	check("running_mean", ds, rm, r.rm, r.brm, c);
	check("running_var", ds, rv, r.rv, r.brv, c);
	float *yd = dense_of(y, n, cols, ldy);
	check("y", ds, yd, r.y, r.by, numel);
	TEST_ASSERT(pads_untouched(y, n, cols, ldy, pad), "bn_apply wrote past cols (%s)", ds);

	/* Backward, same slots layout. */
	ref_backward(n, c, inner, t.x, t.dy, relu ? yd : NULL, t.gamma, &KERNELS, &r);
	const float *ym = relu ? y : NULL;
	starnn_bn_bwd_reduce_cpu(a, c, inner, x, ldx, dy, lddy, ym, ldy, mean, slots, 0);
	starnn_bn_bwd_reduce_cpu(b - a, c, inner, x + a * ldx, ldx, dy + a * lddy, lddy, ym ? ym + a * ldy : NULL, ldy,
	                         mean, slots, 1);
	starnn_bn_bwd_reduce_cpu(n - b, c, inner, x + b * ldx, ldx, dy + b * lddy, lddy, ym ? ym + b * ldy : NULL, ldy,
	                         mean, slots + lds, 0);
	starnn_bn_bwd_params_cpu(c, 2, slots, lds, invstd, 0, dgamma, dbeta);
	starnn_bn_bwd_apply_cpu(n, c, inner, x, ldx, dy, lddy, ym, ldy, mean, invstd, t.gamma, 2, slots, lds, count, 0,
	                        dx, lddx);
	float *dxd = dense_of(dx, n, cols, lddx);
	check("dx", ds, dxd, r.dx, r.bdx, numel);
	TEST_ASSERT(pads_untouched(dx, n, cols, lddx, pad), "bn_bwd_apply wrote past cols (%s)", ds);
	check("dgamma", ds, dgamma, r.dgamma, r.bdgamma, c);
	check("dbeta", ds, dbeta, r.dbeta, r.bdbeta, c);

	/* Accumulation: dgamma, dbeta += (beta 1); dx = new + 0.5 * old. */
	float *og = copy_of(dgamma, c), *ob = copy_of(dbeta, c);
	starnn_bn_bwd_params_cpu(c, 2, slots, lds, invstd, 1, dgamma, dbeta);
	starnn_bn_bwd_apply_cpu(n, c, inner, x, ldx, dy, lddy, ym, ldy, mean, invstd, t.gamma, 2, slots, lds, count,
	                        0.5f, dx, lddx);
	accumulated(c, 1.0, og, r.dgamma, r.bdgamma, TEST_U32);
	accumulated(c, 1.0, ob, r.dbeta, r.bdbeta, TEST_U32);
	accumulated(numel, 0.5, dxd, r.dx, r.bdx, TEST_U32);
	free(dxd);
	dxd = dense_of(dx, n, cols, lddx);
	check("dx accumulated", ds, dxd, r.dx, r.bdx, numel);
	check("dgamma accumulated", ds, dgamma, r.dgamma, r.bdgamma, c);
	check("dbeta accumulated", ds, dbeta, r.dbeta, r.bdbeta, c);

	/* Evaluation mode with the initial running statistics. */
	starnn_bn_apply_cpu(n, c, inner, x, ldx, t.rm0, t.rv0, 1, (float)EPS, t.gamma, t.beta, relu, y, ldy);
	double *rm0 = to_double(t.rm0, c), *rv0 = to_double(t.rv0, c);
	ref_eval(n, c, inner, t.x, t.gamma, t.beta, relu, rm0, rv0, NULL, NULL, EPSF, &KERNELS, r.y, r.by);
	free(yd);
	yd = dense_of(y, n, cols, ldy);
	check("eval y", ds, yd, r.y, r.by, numel);

	free(x), free(dy), free(y), free(dx), free(mean), free(invstd), free(rm), free(rv), free(dgamma), free(dbeta);
	free(slots), free(yd), free(dxd), free(og), free(ob), free(rm0), free(rv0);
	ref_free(&r);
	data_free(&t);
}

/* --------------------------------------------------------- PyTorch itself
 * The committed outputs of PyTorch (an fp32 implementation) are checked
 * against the double reference of the same definition, and the kernels
 * against them. PyTorch's error: the bounds of ref_forward / ref_backward
 * for fp32 arithmetic throughout with deterministic sum bounds (FP32_ANY:
 * n u sum|terms|, any order or algorithm of the sums), doubled because its
 * evaluation order differs (e.g. dx = (g - mean g - xhat mean(g xhat))
 * invstd gamma: at most twice the roundings per term of the same
 * magnitudes), plus the difference of the references with torch's
 * parameters (momentum 0.1, eps 1e-5 in double) and the kernels' (the same
 * as floats). The kernels against torch: that plus the kernels' bound. */

/* Printed by tools/ref/batchnorm.py with Debian's python3-torch (torch 1.13.0a0). */

static const float torch_y[] = {-1.1967001, 0.833462656, 1.90880823, 1.5235846, -0.141031355, -2.30214477, 0.689136147, 0.762320459, 0.530520082, 0.102754466, -0.319791585, -0.538388073, 1.00260997, 0.389702588, -0.394975424, -0.982377768, -1.09623992, -0.683010697, -1.09074175, 0.913356364, 1.92506182, 1.46855378, -0.241464615, -2.40074515, 0.699691176, 0.757814527, 0.513072431, 0.0805709809, -0.336277664, -0.541423082, 0.982073009, 0.353024662, -0.430544108, -1.00010872, -1.08779395, -0.652360082};
static const float torch_dx[] = {0.55666697, 0.22516346, -0.117991924, -0.389449358, -0.583838105, -0.765367508, 0.0528732426, 0.161166251, 0.185133487, 0.142742291, 0.0748873651, 0.0242852066, 0.0362252593, 0.0286246277, 0.0286056101, 0.0875606835, 0.238694221, 0.475963086, -0.0325692743, 0.0248227417, 0.0923738182, 0.213627979, 0.355382949, 0.421177894, -0.22047703, -0.120869905, -0.0800042674, -0.080299519, -0.0842104405, -0.0552267581, 0.0244702734, -0.130073309, -0.260457098, -0.303716123, -0.218683898, -0.00721330522};
static const float torch_dgamma[] = {1.46935618, -4.13955879, -2.70345592};
static const float torch_dbeta[] = {9.03076935, -4.85352373, -6.82530785};
static const float torch_running_mean[] = {0.26229459, -0.0661033168, 0.0433002785};
static const float torch_running_var[] = {0.998862088, 0.70039916, 1.9873693};
static const float torch_eval_y[] = {-0.293663949, 1.64007986, 2.66435385, 2.29742575, 0.71186769, -1.34660757, 0.903215349, 1.03569984, 0.61607492, -0.158303186, -0.923232377, -1.31895447, 1.11828768, 0.548502982, -0.180967018, -0.727041185, -0.832892239, -0.448736817, -0.192737877, 1.71617913, 2.67983556, 2.24500847, 0.616204321, -1.44052505, 0.922322989, 1.02754283, 0.584489703, -0.198461637, -0.953076899, -1.3244487, 1.0991956, 0.514405608, -0.214033186, -0.743524551, -0.825040519, -0.420242727};
static const float torch_relu_y[] = {0, 0.833462656, 1.90880823, 1.5235846, 0, 0, 0.689136147, 0.762320459, 0.530520082, 0.102754466, 0, 0, 1.00260997, 0.389702588, 0, 0, 0, 0, 0, 0.913356364, 1.92506182, 1.46855378, 0, 0, 0.699691176, 0.757814527, 0.513072431, 0.0805709809, 0, 0, 0.982073009, 0.353024662, 0, 0, 0, 0};
static const float torch_relu_dx[] = {-0.161910892, 0.528490543, -0.107991323, -0.274369776, -0.585654557, 0.281812757, 0.0303522386, 0.121921331, 0.198859125, 0.254220128, -0.0437976718, -0.0436173081, 0.0398244858, -0.0435018986, 0.140094876, -0.0334554911, -0.0670965239, 0.054993704, -0.204442397, 0.306356847, 0.0979408175, 0.343718529, -0.545340836, 0.321390808, -0.24541001, -0.15908514, -0.0622915104, 0.0362476557, -0.0437840708, -0.0436148047, 0.0255321227, -0.206731468, 0.129585981, -0.0386941656, -0.0646011233, 0.0640495494};
static const float torch_relu_dgamma[] = {4.58542776, 0.0150007308, -4.64651632};
static const float torch_relu_dbeta[] = {5.19702339, -1.60811639, -3.52604628};
static const float torch_relu_running_mean[] = {0.26229459, -0.0661033168, 0.0433002785};
static const float torch_relu_running_var[] = {0.998862088, 0.70039916, 1.9873693};


/* got (the kernels) and tv (torch) against exact; bk: the kernels' bound;
 * bt: torch's distance to exact (see above). */
static void torch_check(const char *name, size_t n, const float *got, const float *tv, const double *exact,
                        const double *bk, const double *bt)
{
	double *bsum = malloc(n * sizeof *bsum);
	for (size_t i = 0; i < n; i++)
		bsum[i] = bk[i] + bt[i];
	char what[96];
	snprintf(what, sizeof what, "torch %s vs the double reference", name);
	test_close_bound(what, tv, exact, bt, n);
	snprintf(what, sizeof what, "kernels %s on torch's input", name);
	test_close_bound(what, got, exact, bk, n);
	double *tvd = to_double(tv, n);
	snprintf(what, sizeof what, "kernels %s vs torch", name);
	test_close_bound(what, got, tvd, bsum, n);
	free(bsum), free(tvd);
}

/* torch's distance to the kernels' exact values: 2 b (its fp32 bound) +
 * |e_kernels - e_torch| (the parameters), into b. */
static void torch_bound(size_t n, double *b, const double *ek, const double *et)
{
	for (size_t i = 0; i < n; i++)
		b[i] = 2 * b[i] + fabs(ek[i] - et[i]);
}

static void kernels_vs_torch(void)
{
	struct dims dm = {2, 3, 2, 3};
	struct data t = data_make(dm, 1);
	const float gamma[] = {1.5f, -0.5f, 0.75f}, beta[] = {0.1f, 0.2f, -0.3f};
	const float rm0[] = {0.2f, -0.1f, 0.0f}, rv0[] = {1.0f, 0.5f, 2.0f};
	for (size_t i = 0; i < t.numel; i++) {
		t.x[i] = (float)(2 * sin(0.7 * (double)i) + 0.5 * (double)((i / t.inner) % t.c));
		t.dy[i] = (float)cos(0.3 * (double)i);
	}
	memcpy(t.gamma, gamma, sizeof gamma), memcpy(t.beta, beta, sizeof beta);
	memcpy(t.rm0, rm0, sizeof rm0), memcpy(t.rv0, rv0, sizeof rv0);
	size_t n = t.n, c = t.c, inner = t.inner, numel = t.numel;

	for (int relu = 0; relu <= 1; relu++) {
		struct out o = kernels_run(&t, relu, 1);
		const float *ty = relu ? torch_relu_y : torch_y, *tdx = relu ? torch_relu_dx : torch_dx;
		const float *tdg = relu ? torch_relu_dgamma : torch_dgamma, *tdb = relu ? torch_relu_dbeta : torch_dbeta;
		const float *trm = relu ? torch_relu_running_mean : torch_running_mean;
		const float *trv = relu ? torch_relu_running_var : torch_running_var;
		struct ref rk = ref_alloc(numel, c), rt = ref_alloc(numel, c);
		ref_forward(n, c, inner, t.x, t.gamma, t.beta, relu, t.rm0, t.rv0, MOMF, EPSF, &KERNELS, &rk);
		ref_forward(n, c, inner, t.x, t.gamma, t.beta, relu, t.rm0, t.rv0, MOM, EPS, &FP32_ANY, &rt);
		/* each backward with its own forward's mask */
		ref_backward(n, c, inner, t.x, t.dy, relu ? o.y : NULL, t.gamma, &KERNELS, &rk);
		ref_backward(n, c, inner, t.x, t.dy, relu ? ty : NULL, t.gamma, &FP32_ANY, &rt);
		torch_bound(numel, rt.by, rk.y, rt.y);
		torch_bound(numel, rt.bdx, rk.dx, rt.dx);
		torch_bound(c, rt.bdgamma, rk.dgamma, rt.dgamma);
		torch_bound(c, rt.bdbeta, rk.dbeta, rt.dbeta);
		torch_bound(c, rt.brm, rk.rm, rt.rm);
		torch_bound(c, rt.brv, rk.rv, rt.rv);
		const char *p = relu ? "relu " : "";
		char name[48];
		snprintf(name, sizeof name, "%sy", p);
		torch_check(name, numel, o.y, ty, rk.y, rk.by, rt.by);
		snprintf(name, sizeof name, "%sdx", p);
		torch_check(name, numel, o.dx, tdx, rk.dx, rk.bdx, rt.bdx);
		snprintf(name, sizeof name, "%sdgamma", p);
		torch_check(name, c, o.dgamma, tdg, rk.dgamma, rk.bdgamma, rt.bdgamma);
		snprintf(name, sizeof name, "%sdbeta", p);
		torch_check(name, c, o.dbeta, tdb, rk.dbeta, rk.bdbeta, rt.bdbeta);
		snprintf(name, sizeof name, "%srunning_mean", p);
		torch_check(name, c, o.rm, trm, rk.rm, rk.brm, rt.brm);
		snprintf(name, sizeof name, "%srunning_var", p);
		torch_check(name, c, o.rv, trv, rk.rv, rk.brv, rt.brv);
		if (!relu) {
			/* Evaluation with the updated running stats (the kernels'
			 * o.rm / o.rv, torch's own): exact with the exact ones,
			 * their errors carried by ref_eval. */
			float *ye = malloc(numel * sizeof *ye);
			starnn_bn_apply_cpu(n, c, inner, t.x, t.cols, o.rm, o.rv, 1, (float)EPS, t.gamma, t.beta, 0, ye,
			                    t.cols);
			double *yk = malloc(numel * sizeof *yk), *bk = malloc(numel * sizeof *bk);
			double *yt = malloc(numel * sizeof *yt), *bt = malloc(numel * sizeof *bt);
			ref_eval(n, c, inner, t.x, t.gamma, t.beta, 0, rk.rm, rk.rv, rk.brm, rk.brv, EPSF, &KERNELS, yk, bk);
			/* rt.brm / rt.brv are torch's distances already (torch_bound) */
			ref_eval(n, c, inner, t.x, t.gamma, t.beta, 0, rt.rm, rt.rv, rt.brm, rt.brv, EPS, &FP32_ANY, yt, bt);
			torch_bound(numel, bt, yk, yt);
			torch_check("eval y", numel, ye, torch_eval_y, yk, bk, bt);
			free(ye), free(yk), free(bk), free(yt), free(bt);
		}
		ref_free(&rk), ref_free(&rt);
		out_free(&o);
	}
	data_free(&t);
}


/* ------------------------------------------------- finite differences
 * L = sum(g .* bn(x)) computed with the float kernels (training mode),
 * accumulated in double, central differences with h = 1e-2 on the float
 * steps actually taken, against the kernels' dx, dgamma, dbeta. The bound:
 *   rounding: |L_float - L| <= sum |g| by + 2 M' 2^-53 sum |g y| at each of
 *     the two points (by: ref_forward's bound of each y there, computed),
 *     over the step;
 *   truncation: the h^2 term of the exact difference quotient, estimated by
 *     Richardson from the double reference (Lr, ref_forward) at h and h/2:
 *     (q(h) - q(h/2)) 4/3, doubled for the higher-order terms; 0 for gamma
 *     and beta (L is linear in them);
 *   the midpoint of the float steps is not x: |L''| |mid - x|, L'' the
 *     second difference of Lr;
 *   the analytic value's own bound (ref_backward). */

struct fd_ctx {
	struct data *t;
	const float *g; /* weights of the objective */
	int relu;
};

/* L with the float kernels, in double. */
static double fd_objective(const float *unused, void *p)
{
	const struct fd_ctx *f = p;
	const struct data *t = f->t;
	size_t c = t->c;
	double *sums = calloc(2 * c, sizeof *sums);
	float *mean = malloc(c * sizeof *mean), *invstd = malloc(c * sizeof *invstd);
	float *y = malloc(t->numel * sizeof *y);
	(void)unused;
	starnn_bn_stats_cpu(t->n, c, t->inner, t->x, t->cols, sums, 0);
	starnn_bn_finalize_cpu(c, 1, sums, 2 * c, (double)(t->n * t->inner), (float)EPS, (float)MOM, 0, mean, invstd,
	                       NULL, NULL);
	starnn_bn_apply_cpu(t->n, c, t->inner, t->x, t->cols, mean, invstd, 0, (float)EPS, t->gamma, t->beta, f->relu,
	                    y, t->cols);
	double l = 0;
	for (size_t e = 0; e < t->numel; e++)
		l += (double)f->g[e] * y[e];
	free(sums), free(mean), free(invstd), free(y);
	return l;
}

/* L from the double reference at the current data; *rb: the bound of the
 * float L there (see above). */
static double fd_exact(const struct fd_ctx *f, double *rb)
{
	const struct data *t = f->t;
	struct ref r = ref_alloc(t->numel, t->c);
	ref_forward(t->n, t->c, t->inner, t->x, t->gamma, t->beta, f->relu, t->rm0, t->rv0, MOMF, EPSF, &KERNELS, &r);
	double l = 0, b = 0, gy = 0;
	for (size_t e = 0; e < t->numel; e++) {
		l += (double)f->g[e] * r.y[e];
		b += fabs((double)f->g[e]) * r.by[e];
		gy += fabs((double)f->g[e] * r.y[e]);
	}
	if (rb)
		*rb = b + 2 * (double)t->numel * TEST_U64 * gy;
	ref_free(&r);
	return l;
}

/* The exact difference quotient over the float steps xi +- h. */
static double fd_quotient(const struct fd_ctx *f, float *v, size_t i, double h, double *rbp, double *rbm, double *dx)
{
	float xi = v[i], xp = (float)(xi + h), xm = (float)(xi - h);
	v[i] = xp;
	double lp = fd_exact(f, rbp);
	v[i] = xm;
	double lm = fd_exact(f, rbm);
	v[i] = xi;
	*dx = (double)xp - (double)xm;
	return (lp - lm) / *dx;
}

/* One coordinate v[i]: the float difference quotient against the analytic
 * an (bound ban); linear: L is linear in v (no truncation). */
static void fd_one(const char *what, struct fd_ctx *f, float *v, size_t i, double an, double ban, int linear,
                   double *worst)
{
	const double h = 1e-2;
	double fd = test_fd(fd_objective, v, i, h, f);
	double rbp, rbm, step, q2p, q2m, s2;
	double q1 = fd_quotient(f, v, i, h, &rbp, &rbm, &step);
	double trunc = 0;
	if (!linear) {
		double q2 = fd_quotient(f, v, i, h / 2, &q2p, &q2m, &s2);
		trunc = 2 * fabs(q1 - q2) * 4 / 3;
	}
	float xi = v[i], xp = (float)(xi + h), xm = (float)(xi - h);
	double l0 = fd_exact(f, NULL), lp, lm;
	v[i] = xp, lp = fd_exact(f, NULL);
	v[i] = xm, lm = fd_exact(f, NULL);
	v[i] = xi;
	double l2 = fabs(lp - 2 * l0 + lm) / (h * h), mid = 0.5 * ((double)xp + (double)xm);
	double bound = (rbp + rbm) / step + trunc + l2 * fabs(mid - (double)xi) + ban + 4 * TEST_U64 * fabs(fd);
	double d = fabs(fd - an);
	*worst = fmax(*worst, isnan(d) ? INFINITY : d / bound);
	TEST_ASSERT(d <= bound, "%s: fd %.9g, analytic %.9g, bound %.3g", what, fd, an, bound);
}

static void fd_check(struct dims dm)
{
	struct data t = data_make(dm, (uint64_t)(dm.n * 31 + dm.c * 7 + dm.h));
	struct fd_ctx f = {.t = &t, .g = t.dy, .relu = 0};
	struct out o = kernels_run(&t, 0, 1); /* dy = g: dx = dL/dx */
	struct ref r = ref_alloc(t.numel, t.c);
	ref_forward(t.n, t.c, t.inner, t.x, t.gamma, t.beta, 0, t.rm0, t.rv0, MOMF, EPSF, &KERNELS, &r);
	ref_backward(t.n, t.c, t.inner, t.x, t.dy, NULL, t.gamma, &KERNELS, &r);
	char what[160];
	double worst = 0;
	for (int q = 0; q < 6; q++) {
		size_t e = (size_t)q * (t.numel - 1) / 5;
		snprintf(what, sizeof what, "fd dx[%zu] %s", e, dims_str(dm, 0));
		fd_one(what, &f, t.x, e, o.dx[e], r.bdx[e], 0, &worst);
	}
	for (size_t k = 0; k < t.c; k++) {
		snprintf(what, sizeof what, "fd dgamma[%zu] %s", k, dims_str(dm, 0));
		fd_one(what, &f, t.gamma, k, o.dgamma[k], r.bdgamma[k], 1, &worst);
		snprintf(what, sizeof what, "fd dbeta[%zu] %s", k, dims_str(dm, 0));
		fd_one(what, &f, t.beta, k, o.dbeta[k], r.bdbeta[k], 1, &worst);
	}
	if (getenv("STARNN_TEST_VERBOSE"))
		printf("     fd %s: worst error %.3g of its bound\n", dims_str(dm, 0), worst);
	ref_free(&r);
	out_free(&o);
	data_free(&t);
}

/* ------------------------------------------------------------- codelets */


static starnn_tensor *data_tensor(const char *name, struct dims d, const float *v)
{
	int64_t shape[4] = {d.n, d.c, d.h, d.w};
	return test_tensor(name, d.h ? 4 : 2, shape, v);
}

static void reset_params(starnn_batchnorm *bn, const struct data *t)
{
	TEST_OK(starnn_tensor_write(bn->gamma, t->gamma));
	TEST_OK(starnn_tensor_write(bn->beta, t->beta));
	TEST_OK(starnn_tensor_write(bn->running_mean, t->rm0));
	TEST_OK(starnn_tensor_write(bn->running_var, t->rv0));
}



/* A layer run (codelets) against the double reference: training forward
 * with the layer's eps / momentum from the initial parameters, backward
 * with the ReLU mask of the layer's own y; every output within its bound
 * (the kernels' arithmetic: CPU or CUDA, any split into micro-batches or
 * channel blocks only changes the order of the double sums). */
static void compare_run(const char *how, const struct data *t, starnn_batchnorm *bn, starnn_tensor *ty,
                        starnn_tensor *tdx, starnn_tensor *tdg, starnn_tensor *tdb, int relu, const char *ds)
{
	char w[200];
	float *y = test_read(ty), *dx = test_read(tdx), *dg = test_read(tdg), *db = test_read(tdb);
	float *rm = test_read(bn->running_mean), *rv = test_read(bn->running_var);
	float *mean = test_read(bn->mean), *invstd = test_read(bn->invstd);
	struct ref r = ref_alloc(t->numel, t->c);
	ref_forward(t->n, t->c, t->inner, t->x, t->gamma, t->beta, relu, t->rm0, t->rv0, (double)bn->momentum,
	            (double)bn->eps, &KERNELS, &r);
	ref_backward(t->n, t->c, t->inner, t->x, t->dy, relu ? y : NULL, t->gamma, &KERNELS, &r);
	snprintf(w, sizeof w, "%s %s", how, ds);
	check("y", w, y, r.y, r.by, t->numel);
	check("mean", w, mean, r.mean, r.bmean, t->c);
	check("invstd", w, invstd, r.invstd, r.binvstd, t->c);
	check("running_mean", w, rm, r.rm, r.brm, t->c);
	check("running_var", w, rv, r.rv, r.brv, t->c);
	check("dx", w, dx, r.dx, r.bdx, t->numel);
	check("dgamma", w, dg, r.dgamma, r.bdgamma, t->c);
	check("dbeta", w, db, r.dbeta, r.bdbeta, t->c);
	ref_free(&r);
	free(y), free(dx), free(dg), free(db), free(rm), free(rv), free(mean), free(invstd);
}

/* starnn_batchnorm_fwd / _bwd against the double reference: whole batch,
 * then the batch split into 2 and 3 micro-batches, then evaluation. */
static void codelets_vs_ref(struct dims dm, int relu)
{
	struct data t = data_make(dm, (uint64_t)(dm.n * 7 + dm.c * 3 + dm.h * 11 + dm.w + relu));
	const char *ds0 = dims_str(dm, relu);
	char ds[96];
	snprintf(ds, sizeof ds, "%s", ds0);

	starnn_tensor *tx = data_tensor("x", dm, t.x), *tdy = data_tensor("dy", dm, t.dy);
	starnn_tensor *ty = data_tensor("y", dm, NULL), *tdx = data_tensor("dx", dm, NULL);
	starnn_tensor *tdg, *tdb;
	TEST_OK(starnn_tensor_new(&tdg, "dgamma", STARNN_FP32, 1, dm.c));
	TEST_OK(starnn_tensor_new(&tdb, "dbeta", STARNN_FP32, 1, dm.c));
	starnn_batchnorm bn;
	TEST_OK(starnn_batchnorm_init(&bn, "bn", dm.c, 3, relu));
	reset_params(&bn, &t);

	TEST_OK(starnn_batchnorm_fwd(&bn, 1, 1, &tx, &ty));
	TEST_OK(starnn_batchnorm_bwd(&bn, 1, &tx, &ty, &tdy, &tdx, 0, tdg, tdb, 0));
	compare_run("whole", &t, &bn, ty, tdx, tdg, tdb, relu, ds);

	for (int k = 2; k <= 3; k++) {
		if (t.n < (size_t)k)
			continue;
		starnn_tensor **px, **py, **pdy, **pdx;
		TEST_OK(starnn_tensor_split(tx, 0, k, NULL, &px));
		TEST_OK(starnn_tensor_split(ty, 0, k, NULL, &py));
		TEST_OK(starnn_tensor_split(tdy, 0, k, NULL, &pdy));
		TEST_OK(starnn_tensor_split(tdx, 0, k, NULL, &pdx));
		reset_params(&bn, &t);
		TEST_OK(starnn_batchnorm_fwd(&bn, 1, k, px, py));
		TEST_OK(starnn_batchnorm_bwd(&bn, k, px, py, pdy, pdx, 0, tdg, tdb, 0));
		char how[32];
		snprintf(how, sizeof how, "%d parts", k);
		compare_run(how, &t, &bn, ty, tdx, tdg, tdb, relu, ds);
	}

	/* Evaluation with the initial running statistics. */
	reset_params(&bn, &t);
	TEST_OK(starnn_batchnorm_fwd(&bn, 0, 1, &tx, &ty));
	float *y = test_read(ty);
	double *rm0 = to_double(t.rm0, t.c), *rv0 = to_double(t.rv0, t.c);
	double *ye = malloc(t.numel * sizeof *ye), *be = malloc(t.numel * sizeof *be);
	ref_eval(t.n, t.c, t.inner, t.x, t.gamma, t.beta, relu, rm0, rv0, NULL, NULL, (double)bn.eps, &KERNELS, ye, be);
	check("eval codelet", ds, y, ye, be, t.numel);
	char what[160];
	float *rm = test_read(bn.running_mean);
	snprintf(what, sizeof what, "eval leaves running_mean %s", ds);
	test_close(what, rm, t.rm0, t.c, 0, 0);

	free(ye), free(be), free(y), free(rm), free(rm0), free(rv0);
	starnn_batchnorm_destroy(&bn);
	starnn_tensor_destroy(tx), starnn_tensor_destroy(ty), starnn_tensor_destroy(tdy), starnn_tensor_destroy(tdx);
	starnn_tensor_destroy(tdg), starnn_tensor_destroy(tdb);
	data_free(&t);
}

/* ------------------------------------------------------------ bn_slot_add
 * total += slot over 2C doubles: the kernel against a plain loop, the
 * codelet (CPU, or CUDA in the _cuda build) against the kernel, bitwise
 * (one double addition per element); bad arguments -> STARNN_EINVAL. */

static void slot_add_check(int64_t c)
{
	size_t n = 2 * (size_t)c; /* doubles per slot */
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *want = malloc(n * sizeof *want);
	double *got = malloc(n * sizeof *got);
	uint64_t st = 0x5107add + (uint64_t)c;
	for (size_t i = 0; i < n; i++) {
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		a[i] = (double)(int64_t)(st >> 11) * 0x1p-40; /* magnitudes up to 2^13, 40 fraction bits */
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (double)(int64_t)(st >> 11) * 0x1p-52;
		want[i] = a[i] + b[i];
	}
	if (!TEST_ON_DEVICE) {
		memcpy(got, a, n * sizeof *got);
		starnn_bn_slot_add_cpu(n, b, got);
		TEST_ASSERT(memcmp(got, want, n * sizeof *got) == 0, "bn_slot_add kernel (c %lld) differs from a + b",
		            (long long)c);
	}
	starnn_tensor *total, *slot;
	TEST_OK(starnn_batchnorm_work_create(&total, "total", c, 1));
	TEST_OK(starnn_batchnorm_work_create(&slot, "slot", c, 1));
	TEST_OK(starnn_tensor_write(total, a)); /* 4C floats = 2C doubles */
	TEST_OK(starnn_tensor_write(slot, b));
	TEST_OK(starnn_bn_slot_add(total, slot));
	TEST_OK(starnn_tensor_read(total, got));
	TEST_ASSERT(memcmp(got, want, n * sizeof *got) == 0, "bn_slot_add codelet (c %lld) differs from a + b",
	            (long long)c);
	TEST_OK(starnn_tensor_read(slot, got));
	TEST_ASSERT(memcmp(got, b, n * sizeof *got) == 0, "bn_slot_add changed its input slot (c %lld)", (long long)c);
	starnn_tensor_destroy(total);
	starnn_tensor_destroy(slot);
	free(a), free(b), free(want), free(got);
}

static void slot_add_errors(void)
{
	starnn_tensor *t3, *t5, *w2;
	TEST_OK(starnn_batchnorm_work_create(&t3, "t3", 3, 1));
	TEST_OK(starnn_batchnorm_work_create(&t5, "t5", 5, 1));
	TEST_OK(starnn_batchnorm_work_create(&w2, "w2", 3, 2));
	TEST_ASSERT(starnn_bn_slot_add(t3, t5) == STARNN_EINVAL, "bn_slot_add: other channel count accepted");
	TEST_ASSERT(starnn_bn_slot_add(t3, w2) == STARNN_EINVAL, "bn_slot_add: two-row slot accepted");
	TEST_ASSERT(starnn_bn_slot_add(t3, t3) == STARNN_EINVAL, "bn_slot_add: total as its own slot accepted");
	TEST_ASSERT(starnn_bn_slot_add(NULL, t3) == STARNN_EINVAL, "bn_slot_add: NULL total accepted");
	starnn_tensor_destroy(t3);
	starnn_tensor_destroy(t5);
	starnn_tensor_destroy(w2);
}

/* ------------------------------------------------------------ bad shapes */

#define EXPECT_EINVAL(expr) TEST_ASSERT((expr) == STARNN_EINVAL, "%s must give STARNN_EINVAL", #expr)

static void bad_shapes(void)
{
	struct dims d = {4, 3, 5, 6}, d1 = {1, 3, 1, 1};
	starnn_tensor *x = data_tensor("x", d, NULL), *y = data_tensor("y", d, NULL), *x1 = data_tensor("x1", d1, NULL);
	starnn_tensor *y1 = data_tensor("y1", d1, NULL), *ysmall = data_tensor("ys", (struct dims){4, 3, 5, 5}, NULL);
	starnn_tensor *y5 = data_tensor("y5", (struct dims){4, 5, 5, 6}, NULL), *v1d, *v4, *w;
	starnn_tensor *x5 = data_tensor("x5", (struct dims){4, 5, 5, 6}, NULL);
	TEST_OK(starnn_tensor_new(&v1d, "v", STARNN_FP32, 1, (int64_t)120));
	TEST_OK(starnn_tensor_new(&v4, "v4", STARNN_FP32, 1, (int64_t)4));
	TEST_OK(starnn_batchnorm_work_create(&w, "w", 3, 2));
	starnn_batchnorm bn;
	TEST_OK(starnn_batchnorm_init(&bn, "bn", 3, 2, 0));

	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 1, &v1d, &y));          /* 1-D x */
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 1, &x, &ysmall));       /* y shape */
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 1, &x5, &y5));          /* 5 channels, bn of 3 */
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 1, &x1, &y1));          /* 1 value per channel */
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 1, &x, &x));            /* y aliases x */
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 0, &x, &y));            /* no part */
	starnn_tensor *xs[3] = {x, x, x}, *ys[3] = {y, y, y};
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 3, xs, ys));            /* more parts than slots */
	TEST_OK(starnn_batchnorm_fwd(&bn, 0, 3, xs, ys));                  /* evaluation needs no slot */
	starnn_tensor *mixed[2] = {x, ysmall}, *ymixed[2] = {y, ysmall};
	EXPECT_EINVAL(starnn_batchnorm_fwd(&bn, 1, 2, mixed, ymixed));     /* parts of different images */
	EXPECT_EINVAL(starnn_batchnorm_bwd(&bn, 1, &x, &y, &y, &ysmall, 0, NULL, NULL, 0)); /* dx shape */
	EXPECT_EINVAL(starnn_batchnorm_bwd(&bn, 1, &x, &y, &y, &y, 0, bn.gamma, NULL, 0)); /* dgamma alone */
	EXPECT_EINVAL(starnn_bn_stats(x, w, 0));                           /* whole workspace, not a slot */
	EXPECT_EINVAL(starnn_bn_stats(x5, w, 0));                          /* workspace for 3 channels */
	EXPECT_EINVAL(starnn_bn_apply(x, bn.mean, bn.invstd, 0, 1e-5f, v4, bn.beta, 0, y)); /* gamma size */
	EXPECT_EINVAL(starnn_bn_finalize(w, 3, 100, 1e-5f, 0.1f, 1, bn.mean, bn.invstd, bn.running_mean,
	                                 bn.running_var));                  /* 3 slots of 2 */
	EXPECT_EINVAL(starnn_bn_finalize(w, 2, 1, 1e-5f, 0.1f, 1, bn.mean, bn.invstd, bn.running_mean,
	                                 bn.running_var));                  /* count 1 */
	EXPECT_EINVAL(starnn_bn_finalize(w, 2, 100, 0, 0.1f, 1, bn.mean, bn.invstd, bn.running_mean,
	                                 bn.running_var));                  /* eps 0 */
	EXPECT_EINVAL(starnn_bn_bwd_params(w, 2, bn.invstd, 0, v4, bn.beta)); /* dgamma size */
	EXPECT_EINVAL(starnn_bn_bwd_apply(x, y, NULL, bn.mean, bn.invstd, bn.gamma, w, 2, 120, 0, y)); /* dx = dy */
	EXPECT_EINVAL(starnn_batchnorm_init(&(starnn_batchnorm){0}, "b", 0, 1, 0));
	EXPECT_EINVAL(starnn_batchnorm_work_create(&(starnn_tensor *){NULL}, "w", 3, 0));

	starnn_batchnorm_destroy(&bn);
	starnn_tensor_destroy(x), starnn_tensor_destroy(y), starnn_tensor_destroy(x1), starnn_tensor_destroy(y1);
	starnn_tensor_destroy(ysmall), starnn_tensor_destroy(y5), starnn_tensor_destroy(x5);
	starnn_tensor_destroy(v1d), starnn_tensor_destroy(v4), starnn_tensor_destroy(w);
}

/* ------------------------------------------------------ mixed precision
 * starnn_batchnorm_*_mp on fp16 / bf16 data (nparts micro-batches, with and
 * without the fused ReLU) and the fp32 layer on the same values, both
 * against the double reference: training forward y, batch mean / invstd
 * and running statistics (fp32), backward dx with dx_beta 1, dgamma /
 * dbeta (fp32), then the evaluation forward with the updated running
 * statistics. The 16-bit layer widens its inputs exactly and runs the fp32
 * arithmetic, so its fp32 outputs have the fp32 layer's bounds and its
 * 16-bit outputs those plus one rounding to dt: b + u_dt (|exact| + b),
 * and 2^-25 absolute for fp16 (subnormals spaced 2^-24). On CPU the 16-bit
 * results are moreover bitwise the fp32 layer's rounded once (the same
 * kernels on the same values, hc_exact). */
static void half_vs_fp32(int64_t n, int64_t c, int64_t h, int64_t w, int nparts, int relu, starnn_dtype dt)
{
	int64_t xs[4] = {n, c, h, w};
	size_t nx = (size_t)(n * c * h * w);
	float *x = hc_random(dt, nx, -2, 3), *dy = hc_random(dt, nx, -1, 1), *dx0 = hc_random(dt, nx, -1, 1);
	starnn_batchnorm bn[2];
	starnn_tensor *t[2][5], *dg[2], *db[2];
	float *res[2][10];
	for (int k = 0; k < 2; k++) {
		starnn_dtype d = k ? dt : STARNN_FP32;
		TEST_OK(starnn_batchnorm_init(&bn[k], k ? "bnh" : "bn32", c, nparts, relu));
		t[k][0] = hc_tensor("x", d, 4, xs, x), t[k][1] = hc_tensor("y", d, 4, xs, NULL);
		t[k][2] = hc_tensor("dy", d, 4, xs, dy), t[k][3] = hc_tensor("dx", d, 4, xs, dx0);
		t[k][4] = hc_tensor("ye", d, 4, xs, NULL);
		int64_t cs[1] = {c};
		dg[k] = hc_tensor("dgamma", STARNN_FP32, 1, cs, NULL), db[k] = hc_tensor("dbeta", STARNN_FP32, 1, cs, NULL);
		starnn_tensor **p[5];
		for (int i = 0; i < 5; i++)
			TEST_OK(starnn_tensor_split(t[k][i], 0, nparts, NULL, &p[i]));
		TEST_OK(starnn_batchnorm_fwd_mp(&bn[k], 1, nparts, p[0], p[1]));
		TEST_OK(starnn_batchnorm_bwd_mp(&bn[k], nparts, p[0], p[1], p[2], p[3], 1.0f, dg[k], db[k], 0.0f));
		TEST_OK(starnn_batchnorm_fwd_mp(&bn[k], 0, nparts, p[0], p[4]));
		starnn_tensor *out[8] = {t[k][1], t[k][3], t[k][4], bn[k].mean, bn[k].invstd, bn[k].running_mean,
		                         bn[k].running_var, dg[k]};
		for (int i = 0; i < 8; i++)
			res[k][i] = test_read(out[i]);
		res[k][8] = test_read(db[k]);
	}
	/* the layers' initial parameters (init: gamma 1, beta 0, running stats
	 * 0 and 1), the same in both */
	float *gamma = test_read(bn[0].gamma), *beta = test_read(bn[0].beta);
	float *rm0 = calloc((size_t)c, sizeof *rm0), *rv0 = malloc((size_t)c * sizeof *rv0);
	for (int64_t k = 0; k < c; k++)
		rv0[k] = 1.0f;
	size_t cc = (size_t)c, inner = (size_t)(h * w);
	double ud = dt == STARNN_FP16 ? TEST_U16 : TEST_UBF16, sub = dt == STARNN_FP16 ? 0x1p-25 : 0;
	double *ye = malloc(nx * sizeof *ye), *be = malloc(nx * sizeof *be);
	for (int k = 0; k < 2; k++) {
		const char *layer = k ? starnn_dtype_name(dt) : "fp32 layer on the same values";
		char ds[160];
		snprintf(ds, sizeof ds, "%lldx%lldx%lldx%lld parts %d relu %d (%s)", (long long)n, (long long)c,
		         (long long)h, (long long)w, nparts, relu, layer);
		struct ref r = ref_alloc(nx, cc);
		ref_forward((size_t)n, cc, inner, x, gamma, beta, relu, rm0, rv0, (double)bn[k].momentum,
		            (double)bn[k].eps, &KERNELS, &r);
		ref_backward((size_t)n, cc, inner, x, dy, relu ? res[k][0] : NULL, gamma, &KERNELS, &r);
		accumulated(nx, 1.0, dx0, r.dx, r.bdx, TEST_U32);
		ref_eval((size_t)n, cc, inner, x, gamma, beta, relu, r.rm, r.rv, r.brm, r.brv, (double)bn[k].eps, &KERNELS,
		         ye, be);
		double *b16[3] = {r.by, r.bdx, be};
		if (k)
			for (int i = 0; i < 3; i++)
				for (size_t e = 0; e < nx; e++) {
					const double *ex = i == 0 ? r.y : i == 1 ? r.dx : ye;
					b16[i][e] += ud * (fabs(ex[e]) + b16[i][e]) + sub;
				}
		check("batchnorm_fwd_mp y", ds, res[k][0], r.y, r.by, nx);
		check("batchnorm_bwd_mp dx", ds, res[k][1], r.dx, r.bdx, nx);
		check("batchnorm_fwd_mp eval y", ds, res[k][2], ye, be, nx);
		check("mean", ds, res[k][3], r.mean, r.bmean, cc);
		check("invstd", ds, res[k][4], r.invstd, r.binvstd, cc);
		check("running_mean", ds, res[k][5], r.rm, r.brm, cc);
		check("running_var", ds, res[k][6], r.rv, r.brv, cc);
		check("dgamma", ds, res[k][7], r.dgamma, r.bdgamma, cc);
		check("dbeta", ds, res[k][8], r.dbeta, r.bdbeta, cc);
		ref_free(&r);
	}
	if (hc_exact) {
		/* CPU: the same kernels on the same values: bitwise (16-bit
		 * outputs: the fp32 result rounded once) */
		for (int i = 0; i < 9; i++) {
			size_t len = i < 3 ? nx : cc, diff = 0;
			for (size_t e = 0; e < len; e++) {
				float want = i < 3 ? hc_round1(dt, res[0][i][e]) : res[0][i][e];
				diff += memcmp(&res[1][i][e], &want, sizeof want) != 0 && !(res[1][i][e] == 0 && want == 0);
			}
			TEST_ASSERT(diff == 0, "batchnorm %s output %d (%lldx%lldx%lldx%lld parts %d relu %d): %zu of %zu not "
			            "bitwise the fp32 layer's", starnn_dtype_name(dt), i, (long long)n, (long long)c,
			            (long long)h, (long long)w, nparts, relu, diff, len);
		}
	}
	free(gamma), free(beta), free(rm0), free(rv0), free(ye), free(be);
	starnn_tensor **p32, **p16;
	TEST_OK(starnn_tensor_split(t[0][1], 0, nparts, NULL, &p32));
	TEST_OK(starnn_tensor_split(t[1][0], 0, nparts, NULL, &p16));
	TEST_ASSERT(starnn_batchnorm_fwd_mp(&bn[1], 1, nparts, p16, p32) == STARNN_EINVAL,
	            "batchnorm_fwd_mp: 16-bit x with fp32 y");
	TEST_ASSERT(starnn_batchnorm_fwd(&bn[1], 1, nparts, p16, p16) == STARNN_EINVAL, "batchnorm_fwd: 16-bit");
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 5; i++)
			starnn_tensor_destroy(t[k][i]);
		starnn_tensor_destroy(dg[k]);
		starnn_tensor_destroy(db[k]);
		starnn_batchnorm_destroy(&bn[k]);
		for (int i = 0; i < 9; i++)
			free(res[k][i]);
	}
	free(x), free(dy), free(dx0);
}

/* ----------------------------------- instruction-set levels, 16-bit kernels
 * The _mp kernels on data of dt against the fp32 kernels on the same values
 * widened (their 16-bit outputs y, dx: bitwise the fp32 results rounded
 * once; the double sums: bitwise equal), at every instruction-set level,
 * and every level's results bitwise equal to the generic level's (fp32 and
 * 16-bit). Rows are ld = c*inner + pad apart; the padding must stay
 * untouched. Sizes cross the kernels' chunk (256) and lane (16) boundaries.
 * y (the ReLU mask) has negatives, zeros and -0. */
static void mp_kernels(starnn_dtype dt, size_t n, size_t c, size_t inner, size_t pad, int relu, float beta)
{
	const size_t ld = c * inner + pad, total = n * ld, es = sc_es(dt), nslots = 2, lds = 2 * c + 3;
	char what[160];
	snprintf(what, sizeof what, "bn %s kernels n %zu c %zu inner %zu pad %zu relu %d beta %g", starnn_dtype_name(dt),
	         n, c, inner, pad, relu, beta);
	void *x = sc_random(dt, total, -2, 3), *dy = sc_random(dt, total, -1, 1), *y = sc_random(dt, total, -1, 1);
	void *dx0 = sc_random(dt, total, -1, 1);
	for (size_t i = 0; i < total; i += 7)
		sc_put(dt, y, i, i % 2 ? 0.0f : -0.0f);
	float *x32 = sc_widen(dt, x, total), *dy32 = sc_widen(dt, dy, total), *y32 = sc_widen(dt, y, total);
	float *mean = test_random(c, -0.5f, 0.5f), *invstd = test_random(c, 0.5f, 2), *gamma = test_random(c, 0.5f, 1.5f);
	float *bt = test_random(c, -1, 1);
	double *slots = malloc(nslots * lds * sizeof *slots);
	for (size_t i = 0; i < nslots * lds; i++)
		slots[i] = test_uniform(-50, 50);
	double count = (double)(n * inner * 3);
	/* results per level: [0] generic */
	double *sums[3] = {0}, *rsums[3] = {0};
	void *ya[3] = {0}, *dxa[3] = {0};
	int nlev = 0;
	SC_FOR_EACH_LEVEL(lv) {
		/* fp32 references on the widened data */
		double s_ref[64], r_ref[64], s_got[64], r_got[64];
		starnn_bn_stats_cpu(n, c, inner, x32, ld, s_ref, 0);
		float *yr = malloc(total * sizeof *yr), *dxr = sc_widen(dt, dx0, total);
		memcpy(yr, x32, total * sizeof *yr); /* the padding: left as it is */
		starnn_bn_apply_cpu(n, c, inner, x32, ld, mean, invstd, 0, 1e-5f, gamma, bt, relu, yr, ld);
		starnn_bn_bwd_reduce_cpu(n, c, inner, x32, ld, dy32, ld, relu ? y32 : NULL, ld, mean, r_ref, 0);
		starnn_bn_bwd_apply_cpu(n, c, inner, x32, ld, dy32, ld, relu ? y32 : NULL, ld, mean, invstd, gamma, nslots,
		                        slots, lds, count, beta, dxr, ld);
		/* the 16-bit kernels */
		void *yg = sc_dup(dt, x, total), *dxg = sc_dup(dt, dx0, total);
		starnn_bn_stats_mp_cpu(dt, n, c, inner, x, ld, s_got, 0);
		starnn_bn_apply_mp_cpu(dt, n, c, inner, x, ld, mean, invstd, 0, 1e-5f, gamma, bt, relu, yg, ld);
		starnn_bn_bwd_reduce_mp_cpu(dt, n, c, inner, x, ld, dy, ld, relu ? y : NULL, ld, mean, r_got, 0);
		starnn_bn_bwd_apply_mp_cpu(dt, n, c, inner, x, ld, dy, ld, relu ? y : NULL, ld, mean, invstd, gamma, nslots,
		                           slots, lds, count, beta, dxg, ld);
		void *yw = sc_rounded(dt, yr, total), *dxw = sc_rounded(dt, dxr, total);
		char w2[200];
		snprintf(w2, sizeof w2, "%s: stats vs fp32 kernel", what);
		sc_same(w2, s_got, s_ref, 2 * c, sizeof(double));
		snprintf(w2, sizeof w2, "%s: apply vs fp32 kernel rounded", what);
		sc_same(w2, yg, yw, total, es);
		snprintf(w2, sizeof w2, "%s: bwd_reduce vs fp32 kernel", what);
		sc_same(w2, r_got, r_ref, 2 * c, sizeof(double));
		snprintf(w2, sizeof w2, "%s: bwd_apply vs fp32 kernel rounded", what);
		sc_same(w2, dxg, dxw, total, es);
		/* against the generic level */
		sums[nlev] = malloc(2 * c * sizeof(double)), rsums[nlev] = malloc(2 * c * sizeof(double));
		memcpy(sums[nlev], s_got, 2 * c * sizeof(double)), memcpy(rsums[nlev], r_got, 2 * c * sizeof(double));
		ya[nlev] = yg, dxa[nlev] = dxg;
		if (nlev > 0) {
			snprintf(w2, sizeof w2, "%s: stats vs generic level", what);
			sc_same(w2, sums[nlev], sums[0], 2 * c, sizeof(double));
			snprintf(w2, sizeof w2, "%s: bwd_reduce vs generic level", what);
			sc_same(w2, rsums[nlev], rsums[0], 2 * c, sizeof(double));
			snprintf(w2, sizeof w2, "%s: apply vs generic level", what);
			sc_same(w2, ya[nlev], ya[0], total, es);
			snprintf(w2, sizeof w2, "%s: bwd_apply vs generic level", what);
			sc_same(w2, dxa[nlev], dxa[0], total, es);
		}
		nlev++;
		free(yr), free(dxr), free(yw), free(dxw);
	}
	sc_level_done();
	for (int i = 0; i < nlev; i++)
		free(sums[i]), free(rsums[i]), free(ya[i]), free(dxa[i]);
	free(x), free(dy), free(y), free(dx0), free(x32), free(dy32), free(y32);
	free(mean), free(invstd), free(gamma), free(bt), free(slots);
}

/* ------------------------------------------------- the OpenCL kernels' bits
 * The _opencl build: the layer on OpenCL against the CPU kernels called
 * directly with the layer's decomposition (a slot per micro-batch, the
 * slots added in part order by bn_slot_add, finalize / bwd_params over the
 * total), bit for bit: the training forward (y, mean, invstd, running
 * statistics), the backward (dx blended with dx_beta 0.5 into an old dx,
 * dgamma / dbeta with param_beta 1 into old values), the evaluation
 * forward (invstd from the running variance), and, for fp32, the slots of
 * bn_stats and bn_bwd_reduce accumulating a second time; fp32, fp16 and
 * bf16 data, whole batches and micro-batches. The OpenCL kernels run the
 * CPU kernels' loops in their order (the sums in double, lane by lane), so
 * nothing may differ. (Direct calls rather than the layer on CPU workers:
 * tests/runtime/opencl.sh runs this test on two POCL devices, where no CPU
 * worker is left.) */
#define BIT_OUTS 11

struct bit_in {
	struct dims dm;
	int relu, nparts;
	starnn_dtype dt;
	const struct data *t;
	void *x, *dy, *dx0; /* of dt */
	const float *old;   /* old dgamma and dbeta */
};

struct bit_run {
	void *out[BIT_OUTS];
	size_t len[BIT_OUTS], es[BIT_OUTS];
};

static void bit_alloc(const struct bit_in *in, struct bit_run *o)
{
	for (int i = 0; i < BIT_OUTS; i++) {
		o->es[i] = i < 3 ? sc_es(in->dt) : i < 9 ? 4 : 8;
		o->len[i] = i < 3 ? in->t->numel : i < 9 ? in->t->c : in->dt == STARNN_FP32 ? 2 * in->t->c : 0;
		o->out[i] = calloc(o->len[i] ? o->len[i] : 1, o->es[i]);
	}
}

static void layer_opencl(const struct bit_in *in, struct bit_run *o)
{
	const struct dims dm = in->dm;
	const starnn_dtype dt = in->dt;
	int64_t shape[4] = {dm.n, dm.c, dm.h, dm.w}, cs[1] = {dm.c};
	int nd = dm.h ? 4 : 2, nparts = in->nparts;
	starnn_tensor *tx = hc_tensor("x", dt, nd, shape, NULL), *ty = hc_tensor("y", dt, nd, shape, NULL);
	starnn_tensor *tdy = hc_tensor("dy", dt, nd, shape, NULL), *tdx = hc_tensor("dx", dt, nd, shape, NULL);
	starnn_tensor *tye = hc_tensor("ye", dt, nd, shape, NULL);
	starnn_tensor *tdg = hc_tensor("dgamma", STARNN_FP32, 1, cs, in->old);
	starnn_tensor *tdb = hc_tensor("dbeta", STARNN_FP32, 1, cs, in->old);
	TEST_OK(starnn_tensor_write(tx, in->x));
	TEST_OK(starnn_tensor_write(tdy, in->dy));
	TEST_OK(starnn_tensor_write(tdx, in->dx0));
	starnn_batchnorm bn;
	TEST_OK(starnn_batchnorm_init(&bn, "bn", dm.c, nparts, in->relu));
	TEST_ASSERT(bn.eps == STARNN_BN_EPS && bn.momentum == STARNN_BN_MOMENTUM, "the layer's eps and momentum");
	reset_params(&bn, in->t);
	starnn_tensor **px = &tx, **py = &ty, **pdy = &tdy, **pdx = &tdx, **pye = &tye;
	if (nparts > 1) {
		TEST_OK(starnn_tensor_split(tx, 0, nparts, NULL, &px));
		TEST_OK(starnn_tensor_split(ty, 0, nparts, NULL, &py));
		TEST_OK(starnn_tensor_split(tdy, 0, nparts, NULL, &pdy));
		TEST_OK(starnn_tensor_split(tdx, 0, nparts, NULL, &pdx));
		TEST_OK(starnn_tensor_split(tye, 0, nparts, NULL, &pye));
	}
	TEST_OK(starnn_batchnorm_fwd_mp(&bn, 1, nparts, px, py));
	TEST_OK(starnn_batchnorm_bwd_mp(&bn, nparts, px, py, pdy, pdx, 0.5f, tdg, tdb, 1.0f));
	TEST_OK(starnn_batchnorm_fwd_mp(&bn, 0, nparts, px, pye));
	starnn_tensor *s1, *s2;
	TEST_OK(starnn_batchnorm_work_create(&s1, "slot_stats", dm.c, 1));
	TEST_OK(starnn_batchnorm_work_create(&s2, "slot_bwd", dm.c, 1));
	if (dt == STARNN_FP32)
		for (int acc = 0; acc <= 1; acc++) {
			TEST_OK(starnn_bn_stats(tx, s1, acc));
			TEST_OK(starnn_bn_bwd_reduce(tx, tdy, in->relu ? ty : NULL, bn.mean, s2, acc));
		}
	starnn_tensor *outs[BIT_OUTS] = {ty, tdx, tye, bn.mean, bn.invstd, bn.running_mean, bn.running_var, tdg, tdb,
	                                 s1, s2};
	bit_alloc(in, o);
	for (int i = 0; i < BIT_OUTS; i++)
		if (o->len[i])
			TEST_OK(starnn_tensor_read(outs[i], o->out[i]));
	starnn_batchnorm_destroy(&bn);
	for (int i = 0; i < 3; i++)
		starnn_tensor_destroy(outs[i]);
	starnn_tensor_destroy(tdy), starnn_tensor_destroy(tdg), starnn_tensor_destroy(tdb);
	starnn_tensor_destroy(s1), starnn_tensor_destroy(s2);
	starnn_tensor_destroy(tx);
}

/* The same by the CPU kernels: part p holds rows [r0, r1) as
 * starnn_tensor_split makes them (n / P, the first n % P one more). */
static void layer_cpu(const struct bit_in *in, struct bit_run *o)
{
	const starnn_dtype dt = in->dt;
	const struct data *t = in->t;
	const size_t n = t->n, c = t->c, inner = t->inner, cols = t->cols, es = sc_es(dt), lds = 2 * c;
	const size_t P = (size_t)in->nparts;
	const double count = (double)(n * inner);
	const int relu = in->relu;
	bit_alloc(in, o);
	char *x = in->x, *dy = in->dy, *y = o->out[0], *dx = o->out[1], *ye = o->out[2];
	float *mean = o->out[3], *invstd = o->out[4], *rm = o->out[5], *rv = o->out[6], *dg = o->out[7], *db = o->out[8];
	memcpy(dx, in->dx0, t->numel * es);
	memcpy(rm, t->rm0, c * sizeof *rm), memcpy(rv, t->rv0, c * sizeof *rv);
	memcpy(dg, in->old, c * sizeof *dg), memcpy(db, in->old, c * sizeof *db);
	double *slots = calloc(P * lds, sizeof *slots);
	size_t r0[8], nr[8];
	for (size_t p = 0, r = 0; p < P; p++)
		r0[p] = r, nr[p] = n / P + (p < n % P), r += nr[p];
#define ROW(a, p) ((a) + r0[p] * cols * es)
	for (size_t p = 0; p < P; p++)
		starnn_bn_stats_mp_cpu(dt, nr[p], c, inner, ROW(x, p), cols, slots + p * lds, 0);
	for (size_t p = 1; p < P; p++)
		starnn_bn_slot_add_cpu(lds, slots + p * lds, slots);
	starnn_bn_finalize_cpu(c, 1, slots, lds, count, STARNN_BN_EPS, STARNN_BN_MOMENTUM, 1, mean, invstd, rm, rv);
	for (size_t p = 0; p < P; p++)
		starnn_bn_apply_mp_cpu(dt, nr[p], c, inner, ROW(x, p), cols, mean, invstd, 0, STARNN_BN_EPS, t->gamma,
		                       t->beta, relu, ROW(y, p), cols);
	for (size_t p = 0; p < P; p++)
		starnn_bn_bwd_reduce_mp_cpu(dt, nr[p], c, inner, ROW(x, p), cols, ROW(dy, p), cols,
		                            relu ? ROW(y, p) : NULL, cols, mean, slots + p * lds, 0);
	for (size_t p = 1; p < P; p++)
		starnn_bn_slot_add_cpu(lds, slots + p * lds, slots);
	starnn_bn_bwd_params_cpu(c, 1, slots, lds, invstd, 1.0f, dg, db);
	for (size_t p = 0; p < P; p++)
		starnn_bn_bwd_apply_mp_cpu(dt, nr[p], c, inner, ROW(x, p), cols, ROW(dy, p), cols, relu ? ROW(y, p) : NULL,
		                           cols, mean, invstd, t->gamma, 1, slots, lds, count, 0.5f, ROW(dx, p), cols);
	for (size_t p = 0; p < P; p++)
		starnn_bn_apply_mp_cpu(dt, nr[p], c, inner, ROW(x, p), cols, rm, rv, 1, STARNN_BN_EPS, t->gamma, t->beta,
		                       relu, ROW(ye, p), cols);
#undef ROW
	if (dt == STARNN_FP32)
		for (int acc = 0; acc <= 1; acc++) {
			starnn_bn_stats_cpu(n, c, inner, in->x, cols, o->out[9], acc);
			starnn_bn_bwd_reduce_cpu(n, c, inner, in->x, cols, in->dy, cols, relu ? o->out[0] : NULL, cols, mean,
			                         o->out[10], acc);
		}
	free(slots);
}

static void opencl_bits(struct dims dm, int relu, starnn_dtype dt, int nparts)
{
	static const char *const names[BIT_OUTS] = {"y", "dx", "eval y", "mean", "invstd", "running_mean",
	                                            "running_var", "dgamma", "dbeta", "bn_stats slot",
	                                            "bn_bwd_reduce slot"};
	struct data t = data_make(dm, (uint64_t)(dm.n * 31 + dm.c * 7 + dm.h * 5 + dm.w + relu + 100 * (int)dt));
	float *dx0 = test_random(t.numel, -1, 1), *old = test_random(t.c, -1, 1);
	struct bit_in in = {.dm = dm, .relu = relu, .nparts = nparts, .dt = dt, .t = &t, .old = old,
	                    .x = sc_rounded(dt, t.x, t.numel), .dy = sc_rounded(dt, t.dy, t.numel),
	                    .dx0 = sc_rounded(dt, dx0, t.numel)};
	struct bit_run cl, cpu;
	layer_opencl(&in, &cl);
	layer_cpu(&in, &cpu);
	for (int i = 0; i < BIT_OUTS; i++) {
		char what[200];
		snprintf(what, sizeof what, "%s of %s %s, %d part(s): OpenCL vs the CPU kernels", names[i],
		         dims_str(dm, relu), starnn_dtype_name(dt), nparts);
		if (cl.len[i])
			test_same_bits(what, cl.out[i], cpu.out[i], cl.len[i], cl.es[i]);
		free(cl.out[i]), free(cpu.out[i]);
	}
	free(dx0), free(old), free(in.x), free(in.dy), free(in.dx0);
	data_free(&t);
}

#ifdef STARNN_USE_OPENCL
/* The launchers on strided views at offsets: StarPU 1.3's asynchronous
 * partitioning gives each part its own buffer on an OpenCL node (offset 0,
 * packed), so a test codelet runs every launcher on whole buffers with the
 * offsets and leading dimensions such views would have: the data (x, dy,
 * y, dx, eval y) at odd offsets of one buffer, rows cols + 1 .. 5 apart;
 * the per-channel vectors at offsets of another; two slots of doubles lds
 * = 2c + 3 apart at an offset. The sequence: bn_stats of two row ranges
 * into the slots (the second accumulating a third range), bn_finalize over
 * both slots, bn_apply, bn_bwd_reduce twice (the second accumulating),
 * bn_bwd_params with beta 1, bn_bwd_apply with beta 0.5, bn_slot_add,
 * bn_apply in evaluation. The same calls of the CPU kernels on host copies
 * give the three buffers bit for bit, padding included. */
struct bn_at {
	starnn_dtype dt;
	size_t n, n1, c, inner, ld[5], off[5], voff[8], so, lds;
	int relu;
};
enum { AT_X, AT_DY, AT_Y, AT_DX, AT_YE };
enum { AT_MEAN, AT_INVSTD, AT_GAMMA, AT_BETA, AT_RM, AT_RV, AT_DG, AT_DB };
#define AT_COUNT(a) ((double)((a)->n * (a)->inner))

static void bn_at_opencl(void *buffers[], void *cl_arg)
{
	const struct bn_at *a = cl_arg;
	struct starnn_clmat d = starnn_cl_buffer(buffers, 0), v = starnn_cl_buffer(buffers, 1),
	                    sl = starnn_cl_buffer(buffers, 2);
	struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(batchnorm);
	if (!ctx)
		return;
	const size_t c = a->c, in = a->inner, *o = a->off, *ld = a->ld, *vo = a->voff;
	const size_t so = sl.off / 2 + a->so, s1 = so + a->lds;
	const cl_mem D = d.mem, V = v.mem, S = sl.mem;
#define DO(p) (d.off + o[p])
#define VO(p) (v.off + vo[p])
#define RUN(call) STARNN_OPENCL_LAUNCHED(ctx, "test_bn_at", call)
	RUN(starnn_bn_stats_opencl(ctx, a->dt, a->n1, c, in, D, DO(AT_X), ld[AT_X], S, so, 0));
	RUN(starnn_bn_stats_opencl(ctx, a->dt, a->n - a->n1, c, in, D, DO(AT_X) + a->n1 * ld[AT_X], ld[AT_X], S, s1, 0));
	RUN(starnn_bn_stats_opencl(ctx, a->dt, 1, c, in, D, DO(AT_X), ld[AT_X], S, s1, 1));
	RUN(starnn_bn_finalize_opencl(ctx, c, 2, S, so, a->lds, AT_COUNT(a), 1e-3f, 0.25f, 1, V, VO(AT_MEAN), V,
	                              VO(AT_INVSTD), V, VO(AT_RM), V, VO(AT_RV)));
	RUN(starnn_bn_apply_opencl(ctx, a->dt, a->n, c, in, D, DO(AT_X), ld[AT_X], V, VO(AT_MEAN), V, VO(AT_INVSTD), 0,
	                           1e-3f, V, VO(AT_GAMMA), V, VO(AT_BETA), a->relu, D, DO(AT_Y), ld[AT_Y]));
	for (int acc = 0; acc <= 1; acc++)
		RUN(starnn_bn_bwd_reduce_opencl(ctx, a->dt, a->n, c, in, D, DO(AT_X), ld[AT_X], D, DO(AT_DY), ld[AT_DY],
		                                a->relu ? D : NULL, DO(AT_Y), ld[AT_Y], V, VO(AT_MEAN), S, acc ? s1 : so,
		                                acc));
	RUN(starnn_bn_bwd_params_opencl(ctx, c, 2, S, so, a->lds, V, VO(AT_INVSTD), 1.0f, V, VO(AT_DG), V, VO(AT_DB)));
	RUN(starnn_bn_bwd_apply_opencl(ctx, a->dt, a->n, c, in, D, DO(AT_X), ld[AT_X], D, DO(AT_DY), ld[AT_DY],
	                               a->relu ? D : NULL, DO(AT_Y), ld[AT_Y], V, VO(AT_MEAN), V, VO(AT_INVSTD), V,
	                               VO(AT_GAMMA), 2, S, so, a->lds, AT_COUNT(a), 0.5f, D, DO(AT_DX), ld[AT_DX]));
	RUN(starnn_bn_slot_add_opencl(ctx, 2 * c, S, so, S, s1));
	RUN(starnn_bn_apply_opencl(ctx, a->dt, a->n, c, in, D, DO(AT_X), ld[AT_X], V, VO(AT_RM), V, VO(AT_RV), 1, 1e-3f,
	                           V, VO(AT_GAMMA), V, VO(AT_BETA), a->relu, D, DO(AT_YE), ld[AT_YE]));
#undef DO
#undef VO
#undef RUN
}

static struct starpu_codelet bn_at_cl = {.name = "test_bn_at", STARNN_OPENCL_FUNCS(bn_at_opencl) .nbuffers = 3,
                                         .modes = {STARPU_RW, STARPU_RW, STARPU_RW}};

static void bn_at_cpu(const struct bn_at *a, void *data, float *vec, double *slots)
{
	const starnn_dtype dt = a->dt;
	const size_t c = a->c, in = a->inner, es = sc_es(dt), *o = a->off, *ld = a->ld;
	char *d = data;
	double *s0 = slots + a->so, *s1 = s0 + a->lds;
	float *v[8];
	for (int i = 0; i < 8; i++)
		v[i] = vec + a->voff[i];
#define DP(p) (d + o[p] * es)
	starnn_bn_stats_mp_cpu(dt, a->n1, c, in, DP(AT_X), ld[AT_X], s0, 0);
	starnn_bn_stats_mp_cpu(dt, a->n - a->n1, c, in, DP(AT_X) + a->n1 * ld[AT_X] * es, ld[AT_X], s1, 0);
	starnn_bn_stats_mp_cpu(dt, 1, c, in, DP(AT_X), ld[AT_X], s1, 1);
	starnn_bn_finalize_cpu(c, 2, s0, a->lds, AT_COUNT(a), 1e-3f, 0.25f, 1, v[AT_MEAN], v[AT_INVSTD], v[AT_RM],
	                       v[AT_RV]);
	starnn_bn_apply_mp_cpu(dt, a->n, c, in, DP(AT_X), ld[AT_X], v[AT_MEAN], v[AT_INVSTD], 0, 1e-3f, v[AT_GAMMA],
	                       v[AT_BETA], a->relu, DP(AT_Y), ld[AT_Y]);
	for (int acc = 0; acc <= 1; acc++)
		starnn_bn_bwd_reduce_mp_cpu(dt, a->n, c, in, DP(AT_X), ld[AT_X], DP(AT_DY), ld[AT_DY],
		                            a->relu ? DP(AT_Y) : NULL, ld[AT_Y], v[AT_MEAN], acc ? s1 : s0, acc);
	starnn_bn_bwd_params_cpu(c, 2, s0, a->lds, v[AT_INVSTD], 1.0f, v[AT_DG], v[AT_DB]);
	starnn_bn_bwd_apply_mp_cpu(dt, a->n, c, in, DP(AT_X), ld[AT_X], DP(AT_DY), ld[AT_DY], a->relu ? DP(AT_Y) : NULL,
	                           ld[AT_Y], v[AT_MEAN], v[AT_INVSTD], v[AT_GAMMA], 2, s0, a->lds, AT_COUNT(a), 0.5f,
	                           DP(AT_DX), ld[AT_DX]);
	starnn_bn_slot_add_cpu(2 * c, s0, s1);
	starnn_bn_apply_mp_cpu(dt, a->n, c, in, DP(AT_X), ld[AT_X], v[AT_RM], v[AT_RV], 1, 1e-3f, v[AT_GAMMA], v[AT_BETA],
	                       a->relu, DP(AT_YE), ld[AT_YE]);
#undef DP
}

static void opencl_offsets(starnn_dtype dt, size_t n, size_t c, size_t inner, int relu)
{
	if (!TEST_ON_OPENCL)
		return;
	struct bn_at a = {.dt = dt, .n = n, .n1 = n / 2, .c = c, .inner = inner, .relu = relu, .so = 1,
	                  .lds = 2 * c + 3};
	const size_t cols = c * inner, es = sc_es(dt);
	size_t nd = 0, nv = 0;
	for (int p = 0; p < 5; p++)
		a.off[p] = nd + 2 * (size_t)p + 1, a.ld[p] = cols + 1 + (size_t)p, nd = a.off[p] + n * a.ld[p];
	for (int i = 0; i < 8; i++)
		a.voff[i] = nv + 1, nv = a.voff[i] + c;
	size_t ns = a.so + 2 * a.lds + 1;
	/* data: x in [-2, 3) plus a channel offset, the rest (old dx, padding)
	 * in [-1, 1); vectors in [0.5, 1.5) (invstd, running variance > 0),
	 * gamma with alternating signs; slots in [-50, 50) */
	float *df = test_random(nd, -1, 1), *vec = test_random(nv, 0.5f, 1.5f);
	for (size_t r = 0; r < n; r++)
		for (size_t j = 0; j < cols; j++)
			df[a.off[AT_X] + r * a.ld[AT_X] + j] = test_uniform(-2, 3) + 0.75f * (float)(j / inner);
	for (size_t k = 0; k < c; k += 2)
		vec[a.voff[AT_GAMMA] + k] = -vec[a.voff[AT_GAMMA] + k];
	double *slots = malloc(ns * sizeof *slots), *sgot = malloc(ns * sizeof *sgot);
	for (size_t i = 0; i < ns; i++)
		slots[i] = test_uniform(-50, 50);
	void *data = sc_rounded(dt, df, nd), *dgot = malloc(nd * es);
	float *vgot = malloc(nv * sizeof *vgot);
	starnn_tensor *td, *tv, *ts;
	TEST_OK(starnn_tensor_new(&td, "bn_at_data", dt, 1, (int64_t)nd));
	TEST_OK(starnn_tensor_new(&tv, "bn_at_vec", STARNN_FP32, 1, (int64_t)nv));
	TEST_OK(starnn_tensor_new(&ts, "bn_at_slots", STARNN_FP32, 1, (int64_t)(2 * ns)));
	TEST_OK(starnn_tensor_write(td, data));
	TEST_OK(starnn_tensor_write(tv, vec));
	TEST_OK(starnn_tensor_write(ts, slots));
	struct starnn_task_desc d = {.cl = &bn_at_cl, .args = &a, .args_size = sizeof a, .tensors = {td, tv, ts}};
	TEST_OK(starnn_submit(&d));
	TEST_OK(starnn_tensor_read(td, dgot));
	TEST_OK(starnn_tensor_read(tv, vgot));
	TEST_OK(starnn_tensor_read(ts, sgot));
	bn_at_cpu(&a, data, vec, slots);
	char what[200];
	const char *nm[3] = {"data (x, dy, y, dx, eval y)", "vectors", "slots"};
	for (int i = 0; i < 3; i++) {
		snprintf(what, sizeof what, "launchers at offsets, %s n %zu c %zu inner %zu relu %d: %s", starnn_dtype_name(dt),
		         n, c, inner, relu, nm[i]);
		test_same_bits(what, i == 0 ? dgot : i == 1 ? (void *)vgot : (void *)sgot,
		               i == 0 ? data : i == 1 ? (void *)vec : (void *)slots, i == 0 ? nd : i == 1 ? nv : ns,
		               i == 0 ? es : i == 1 ? 4 : 8);
	}
	starnn_tensor_destroy(td), starnn_tensor_destroy(tv), starnn_tensor_destroy(ts);
	free(df), free(vec), free(slots), free(sgot), free(data), free(dgot), free(vgot);
}
#else
static void opencl_offsets(starnn_dtype dt, size_t n, size_t c, size_t inner, int relu)
{
	(void)dt, (void)n, (void)c, (void)inner, (void)relu;
}
#endif

int main(void)
{
	/* N 1..16, odd C, images 1x1 .. 32x32, non-square, and 2-D [N, C]. */
	static const struct dims shapes[] = {
		{1, 3, 4, 5}, {2, 1, 1, 1}, {4, 5, 1, 1}, {3, 3, 7, 2}, {16, 5, 8, 6},
		{2, 3, 32, 32}, {5, 1, 32, 17}, {1, 5, 2, 2}, {8, 3, 0, 0}, {16, 5, 0, 0},
	};
	const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
	test_init();
	if (!TEST_ON_DEVICE) {
		/* the fp32 kernels' checks at every instruction-set level */
		SC_FOR_EACH_LEVEL(lv) {
			for (int s = 0; s < nshapes; s++)
				for (int relu = 0; relu <= 1; relu++)
					kernels_vs_ref(shapes[s], relu);
			kernels_vs_torch();
		}
		sc_level_done();
		fd_check((struct dims){2, 3, 3, 4});
		fd_check((struct dims){5, 1, 2, 3});
		fd_check((struct dims){3, 5, 0, 0});
		bad_shapes();
		for (int t = 0; t < 3; t++) {
			starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_FP16 : STARNN_BF16;
			mp_kernels(dt, 3, 2, 700, 5, 1, 0.0f);
			mp_kernels(dt, 3, 2, 700, 5, 0, 1.5f);
			mp_kernels(dt, 2, 3, 17, 3, 1, 1.0f);
			mp_kernels(dt, 1, 4, 256, 0, 0, 0.0f);
			mp_kernels(dt, 5, 1, 1, 2, 1, 0.5f);
			mp_kernels(dt, 2, 2, 15, 1, 0, 0.0f);
		}
	}
	slot_add_check(1);
	slot_add_check(7);
	slot_add_check(1000);
	slot_add_errors();
	for (int s = 0; s < nshapes; s++)
		codelets_vs_ref(shapes[s], s % 2);
	codelets_vs_ref((struct dims){6, 3, 9, 10}, 0);
	codelets_vs_ref((struct dims){6, 3, 9, 10}, 1);
	/* one part large enough to be cut into channel blocks (one per worker,
	 * odd channel counts: uneven blocks) */
	codelets_vs_ref((struct dims){1, 7, 256, 256}, 0);
	codelets_vs_ref((struct dims){2, 5, 256, 200}, 1);
	if (TEST_ON_OPENCL) {
		static const struct dims bit_shapes[] = {
			{1, 3, 4, 5}, {3, 3, 7, 2}, {16, 5, 8, 6}, {5, 1, 32, 17}, {8, 3, 0, 0}, {6, 3, 9, 10}, {2, 5, 256, 200},
		};
		for (size_t s = 0; s < sizeof bit_shapes / sizeof *bit_shapes; s++)
			for (int t = 0; t < 3; t++) {
				starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_FP16 : STARNN_BF16;
				int nparts = (int)(s % 3) + 1;
				opencl_bits(bit_shapes[s], (int)(s + (size_t)t) % 2, dt, bit_shapes[s].n >= nparts ? nparts : 1);
			}
		for (int t = 0; t < 3; t++) {
			starnn_dtype dt = t == 0 ? STARNN_FP32 : t == 1 ? STARNN_FP16 : STARNN_BF16;
			opencl_offsets(dt, 3, 3, 37, t % 2);
			opencl_offsets(dt, 4, 5, 1, 1 - t % 2);
		}
	}
	for (int t = 0; t < 2; t++) {
		starnn_dtype dt = t ? STARNN_BF16 : STARNN_FP16;
		half_vs_fp32(4, 5, 8, 6, 2, 1, dt);
		half_vs_fp32(3, 3, 7, 2, 1, 0, dt);
		half_vs_fp32(8, 16, 32, 32, 4, 1, dt);
		half_vs_fp32(1, 7, 256, 256, 1, 1, dt); /* channel blocks */
	}
	return test_finish();
}
