/* bench-ops: GFLOP/s of the CPU convolutions of the reference UNet.
 *
 * For every distinct convolution shape of the nowcasting UNet (depth 4,
 * input 13 channels, output 1x1 to 12; /work/shared/docs/brief.md) at
 *   --size 128: 128x128, f = 16, batch 4
 *   --size 384: 384x384, f = 32, batch 1
 * it times our forward, backward-data and backward-weight passes as StarPU
 * tasks on all CPU workers (wall clock around submit + wait, after a
 * warm-up run), and beside each the OpenBLAS sgemm of the GEMM the pass
 * lowers to, split over the same workers as one task per worker (the
 * ideal: no im2col, no halo, perfect balance). One line per pass and shape,
 * ending with ratio=<ours/sgemm>. Times are the best of --reps runs, or of
 * about 0.2 s worth of runs for short passes (the
 * machine may be shared: the minimum is the least disturbed), ours and
 * sgemm interleaved so that a noisy period hits both alike.
 *
 * OpenBLAS 0.3.21 does not know some recent Xeons and falls back to its
 * Prescott (SSE3) kernels, 3-4x slower; the header prints the core in use:
 * set OPENBLAS_CORETYPE=SkylakeX (or SapphireRapids) in that case.
 *
 *   bench-ops [--size 128|384] [--quick] [--reps N] [--cpu dnnl|im2col]
 *             [--algo auto|direct|winograd] [--wgrad auto|dnnl|gemm|direct]
 * --quick: three shapes at 128x128, one rep (a smoke test for CI).
 * --cpu, --algo, --wgrad: the CPU kernels, the algorithm of oneDNN's fp32
 * 3x3 passes and the weight gradient's route to time (codelets/conv2d_routes.h,
 * docs/convolutions.md; default: the settings in force, auto). */
#include <config.h>

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codelets/conv2d.h"
#include "codelets/conv2d_routes.h"
#include "runtime/core/codelet.h"
#include "runtime/starnn.h"

#define MAX_REPS 100

struct conv_shape {
	char name[32];
	size_t c, o, res, k;
};

/* The convolutions of the UNet, shapes listed once (an encoder level's
 * second conv has the shape of the decoder level's second conv). */
static int unet_shapes(size_t size, size_t f, struct conv_shape *out)
{
	int n = 0;
	size_t cin = 13;
#define ADD(nm, ci, co, r, kk)                                                        \
	do {                                                                            \
		struct conv_shape s_ = {"", (ci), (co), (r), (kk)};                     \
		snprintf(s_.name, sizeof s_.name, "%s", (nm));                          \
		int dup_ = 0;                                                           \
		for (int j_ = 0; j_ < n; j_++)                                          \
			if (out[j_].c == s_.c && out[j_].o == s_.o && out[j_].res == s_.res && out[j_].k == s_.k) { \
				size_t l_ = strlen(out[j_].name);                       \
				snprintf(out[j_].name + l_, sizeof out[j_].name - l_, "/%s", (nm)); \
				dup_ = 1;                                               \
			}                                                               \
		if (!dup_)                                                              \
			out[n++] = s_;                                                  \
	} while (0)
	char nm[32];
	for (int i = 0; i < 4; i++) {
		size_t co = f << i;
		snprintf(nm, sizeof nm, "enc%da", i);
		ADD(nm, cin, co, size >> i, 3);
		snprintf(nm, sizeof nm, "enc%db", i);
		ADD(nm, co, co, size >> i, 3);
		cin = co;
	}
	ADD("centre_a", cin, 32 * f, size >> 4, 3);
	ADD("centre_b", 32 * f, 32 * f, size >> 4, 3);
	for (int i = 3; i >= 0; i--) {
		size_t co = f << i;
		snprintf(nm, sizeof nm, "dec%da", i);
		ADD(nm, 2 * co, co, size >> i, 3);
		snprintf(nm, sizeof nm, "dec%db", i);
		ADD(nm, co, co, size >> i, 3);
	}
	ADD("out", f, 12, size, 1);
#undef ADD
	return n;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double best(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[0];
}

/* ----------------------------------------------------- sgemm baseline */

/* One task = one row-major sgemm C (m x n) = A (m x k) * B (k x n) on
 * buffers of its own (cl_arg), no StarPU data: the tasks run side by side. */
struct gemm_job {
	int m, n, k;
	float *a, *b, *c;
};

static void gemm_cpu(void *buffers[], void *cl_arg)
{
	(void)buffers;
	struct gemm_job *j = *(struct gemm_job **)cl_arg;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->m, j->n, j->k, 1.0f, j->a, j->k, j->b, j->n, 0.0f,
	            j->c, j->n);
}

static struct starpu_codelet gemm_cl = {
	.name = "bench_sgemm",
	.cpu_funcs = {gemm_cpu},
	.cpu_funcs_name = {"gemm_cpu"},
	.nbuffers = 0,
};

static float *filled(size_t n)
{
	float *p = malloc((n ? n : 1) * sizeof *p);
	if (!p) {
		fprintf(stderr, "bench-ops: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
	return p;
}

struct gemm_set {
	int njobs;
	struct gemm_job *jobs;
};

/* The GEMM (m x n x k) cut along n into one job per worker. */
static struct gemm_set gemm_make(int workers, size_t m, size_t n, size_t k)
{
	struct gemm_set s = {workers, calloc((size_t)workers, sizeof(struct gemm_job))};
	for (int i = 0; i < workers; i++) {
		size_t ni = n / (size_t)workers + ((size_t)i < n % (size_t)workers);
		if (!ni)
			ni = 1;
		s.jobs[i] = (struct gemm_job){(int)m, (int)ni, (int)k, filled(m * k), filled(k * ni), filled(m * ni)};
	}
	return s;
}

static void gemm_free(struct gemm_set *s)
{
	for (int i = 0; i < s->njobs; i++)
		free(s->jobs[i].a), free(s->jobs[i].b), free(s->jobs[i].c);
	free(s->jobs);
}

static double gemm_run(struct gemm_set *s)
{
	double t0 = now();
	for (int i = 0; i < s->njobs; i++) {
		struct gemm_job *j = &s->jobs[i];
		struct starpu_task *task = starpu_task_create();
		task->cl = &gemm_cl;
		task->cl_arg = malloc(sizeof j);
		memcpy(task->cl_arg, &j, sizeof j);
		task->cl_arg_size = sizeof j;
		task->cl_arg_free = 1;
		if (starpu_task_submit(task) != 0) {
			fprintf(stderr, "bench-ops: starpu_task_submit failed\n");
			exit(1);
		}
	}
	starpu_task_wait_for_all();
	return now() - t0;
}

/* ----------------------------------------------------------- our passes */

struct conv_tensors {
	starnn_tensor *x, *w, *b, *y, *dy, *dx, *dw, *db;
};

static void check(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "bench-ops: %s: %s\n", what, starnn_last_error());
		exit(1);
	}
}

static starnn_tensor *make(const char *name, int ndim, int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t shape[4] = {a, b, c, d};
	starnn_tensor *t;
	check(starnn_tensor_create(&t, name, STARNN_FP32, ndim, shape), "tensor");
	float *data = filled(starnn_tensor_numel(t));
	check(starnn_tensor_write_f32(t, data), "tensor write");
	free(data);
	return t;
}

static double conv_run(struct conv_tensors *t, enum starnn_conv2d_pass pass)
{
	double t0 = now();
	if (pass == STARNN_CONV2D_FWD)
		check(starnn_conv2d_fwd(t->x, t->w, t->b, t->y), "conv2d_fwd");
	else if (pass == STARNN_CONV2D_BWD_DATA)
		check(starnn_conv2d_bwd_data(t->dy, t->w, 0.0f, t->dx), "conv2d_bwd_data");
	else
		check(starnn_conv2d_bwd_weight(t->x, t->dy, 0.0f, t->dw, t->db), "conv2d_bwd_weight");
	check(starnn_wait(), "wait");
	return now() - t0;
}

/* The index of word among names (n of them), or -1 with a message. */
static int option_word(const char *opt, const char *word, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(word, names[i]))
			return i;
	fprintf(stderr, "bench-ops: %s %s: expected", opt, word);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fprintf(stderr, "\n");
	return -1;
}

int main(int argc, char **argv)
{
	starnn_blas_autoselect(argv);
	size_t size = 128;
	int quick = 0, reps = 3, cpu = -1, algo = -1, wgrad = -1;
	static const char *const cpus[] = {"im2col", "dnnl"}, *const algos[] = {"auto", "direct", "winograd"},
	                         *const wgrads[] = {"auto", "dnnl", "gemm", "direct"};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = (size_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
			if ((cpu = option_word("--cpu", argv[++i], cpus, 2)) < 0)
				return 2;
		} else if (!strcmp(argv[i], "--algo") && i + 1 < argc) {
			if ((algo = option_word("--algo", argv[++i], algos, 3)) < 0)
				return 2;
		} else if (!strcmp(argv[i], "--wgrad") && i + 1 < argc) {
			if ((wgrad = option_word("--wgrad", argv[++i], wgrads, 4)) < 0)
				return 2;
		}
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr,
			        "usage: %s [--size 128|384] [--quick] [--reps N] [--cpu dnnl|im2col] "
			        "[--algo auto|direct|winograd] [--wgrad auto|dnnl|gemm|direct]\n",
			        argv[0]);
			return 2;
		}
	}
	if ((size != 128 && size != 384) || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "bench-ops: --size must be 128 or 384, --reps 1..%d\n", MAX_REPS);
		return 2;
	}
	if (quick)
		reps = 1, size = 128;
	size_t f = size == 128 ? 16 : 32, batch = size == 128 ? 4 : 1;

	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.ncuda = 0; /* a CPU benchmark */
	cfg.quiet = 1;
	check(starnn_init(&cfg), "starnn_init");
	starnn_set_where(STARPU_CPU);
	int workers = starnn_ncpu_workers();
	printf("# bench-ops: UNet convolutions at %zux%zu, f = %zu, batch %zu; %s\n", size, size, f, batch,
	       starnn_runtime_summary());
	check(starnn_conv2d_settings_check(), "the convolutions' settings");
	if (cpu >= 0)
		check(starnn_conv2d_cpu_backend_set((enum starnn_conv2d_backend)cpu), "--cpu");
	if (algo >= 0)
		check(starnn_conv2d_algo_set((enum starnn_conv2d_algo)algo), "--algo");
	if (wgrad >= 0)
		check(starnn_conv2d_wgrad_set((enum starnn_conv2d_wgrad)wgrad), "--wgrad");
	printf("# CPU convolution kernels: %s (--cpu dnnl|im2col chooses)\n",
	       starnn_conv2d_cpu_backend_name(starnn_conv2d_cpu_backend()));
	printf("# GFLOP/s = 2*N*O*C*k*k*H*W / best wall time of max(%d, 0.2 s worth) run(s); sgemm: the pass's GEMM"
	       " as %d task(s)\n", reps, workers);
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	{
		const char *core = openblas_get_corename();
		printf("# OpenBLAS core: %s%s\n", core, strcmp(core, "Prescott") ? "" :
		       " (generic SSE3 fallback: set OPENBLAS_CORETYPE=SkylakeX on AVX-512 machines)");
	}
#endif

	struct conv_shape shapes[32];
	int nshapes = unet_shapes(size, f, shapes);
	const char *pass_names[3] = {"fwd", "bwd_data", "bwd_weight"};
	double *tours = malloc(MAX_REPS * sizeof *tours), *tgemm = malloc(MAX_REPS * sizeof *tgemm);
	double worst3 = 1e30;
	for (int si = 0; si < nshapes; si++) {
		struct conv_shape *s = &shapes[si];
		/* quick: the first layer, a middle one, the output 1x1 */
		if (quick && si != 0 && si != 3 && si != nshapes - 1)
			continue;
		struct conv_tensors t;
		int64_t N = (int64_t)batch, C = (int64_t)s->c, O = (int64_t)s->o, R = (int64_t)s->res, K = (int64_t)s->k;
		t.x = make("x", 4, N, C, R, R);
		t.dx = make("dx", 4, N, C, R, R);
		t.y = make("y", 4, N, O, R, R);
		t.dy = make("dy", 4, N, O, R, R);
		t.w = make("w", 4, O, C, K, K);
		t.dw = make("dw", 4, O, C, K, K);
		t.b = make("b", 1, O, 1, 1, 1);
		t.db = make("db", 1, O, 1, 1, 1);
		struct starnn_conv2d_geom g = {batch, s->c, s->o, s->res, s->res, s->k, 1, 1, 0, 0, 0};
		double flops = starnn_conv2d_flops(&g, STARNN_CONV2D_FWD);
		size_t pix = batch * s->res * s->res, kk = s->k * s->k;
		for (int p = 0; p < 3; p++) {
			/* the GEMM of the pass: m x n x k, cut along n */
			size_t m = p == 1 ? s->c : s->o, n = p == 2 ? s->c * kk : pix, k = p == 1 ? s->o * kk : p == 2 ? pix : s->c * kk;
			struct gemm_set gs = gemm_make(workers, m, n, k);
			conv_run(&t, (enum starnn_conv2d_pass)p); /* warm-up: workspaces, pages, plans */
			gemm_run(&gs);
			/* short passes get more runs (about 0.2 s of each), up to 100 */
			double t1 = conv_run(&t, (enum starnn_conv2d_pass)p);
			int nr = quick ? 1 : (int)(0.2 / t1);
			if (nr < reps)
				nr = reps;
			if (nr > MAX_REPS)
				nr = MAX_REPS;
			for (int r = 0; r < nr; r++) {
				tours[r] = conv_run(&t, (enum starnn_conv2d_pass)p);
				tgemm[r] = gemm_run(&gs);
			}
			double to = best(tours, nr), tg = best(tgemm, nr);
			double go = flops / to * 1e-9, gg = flops / tg * 1e-9, ratio = go / gg;
			if (s->k == 3 && ratio < worst3)
				worst3 = ratio;
			printf("%-10s %-18s N=%zu C=%-4zu O=%-4zu %3zux%-3zu k=%zu  %7.3f GFLOP  ours %6.1f GFLOP/s %8.2f ms"
			       "  sgemm[%zux%zux%zu/%d] %6.1f GFLOP/s  ratio=%.2f\n",
			       pass_names[p], s->name, batch, s->c, s->o, s->res, s->res, s->k, flops * 1e-9, go, to * 1e3, m,
			       n, k, workers, gg, ratio);
			fflush(stdout);
			gemm_free(&gs);
		}
		starnn_tensor *all[] = {t.x, t.dx, t.y, t.dy, t.w, t.dw, t.b, t.db};
		for (int i = 0; i < 8; i++)
			starnn_tensor_destroy(all[i]);
	}
	printf("# lowest ratio over the 3x3 passes: %.2f (target >= 0.70)\n", worst3);
	free(tours), free(tgemm);
	check(starnn_shutdown(), "starnn_shutdown");
	return 0;
}
