/* bench-peak: the processor's dense-GEMM peak, measured, for the
 * "share of peak" figures of tools/bench/unet.
 *
 *   bench-peak [--threads N] [--size N] [--seconds S]
 *
 * fp32: the faster of OpenBLAS's sgemm and oneDNN's (when built with it),
 * square N x N (default 2048), N threads (default: STARPU_NCPU, else every
 * core): the rate a training step's convolutions could reach at best on the
 * same cores. bf16: oneDNN's
 * dnnl_gemm_bf16bf16f32 (bf16 inputs, fp32 accumulation and output: the
 * AVX512-BF16 / AMX path of amp-bf16), measured only on processors whose
 * flags have avx512_bf16 or amx_bf16: elsewhere oneDNN emulates bf16 and
 * the figure would not be a peak. Each figure is the best of repeated runs
 * over about S seconds (default 1): the least disturbed run on a shared
 * machine.
 *
 * Output (one line each, for scripts):
 *   cpu: <model name> (<flags of interest>)
 *   peak fp32 GEMM: <GFLOP/s> GFLOP/s (<N> threads, n=<size>)
 *   peak bf16 GEMM: <GFLOP/s> GFLOP/s (...)  or  peak bf16 GEMM: n/a (<why>)
 * Exit status 0, 2 on bad usage, 1 when a GEMM fails. */
#include <config.h>

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef STARNN_HAVE_DNNL
#include <dnnl.h>
extern void omp_set_num_threads(int n);
/* oneDNN 2.6 exports this row-major GEMM without declaring it in dnnl.h
 * (codelets/cpu/gemm.c calls it too). */
extern dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha,
                                           const uint16_t *A, int64_t lda, const uint16_t *B, int64_t ldb,
                                           float beta, float *C, int64_t ldc);
#endif

void openblas_set_num_threads(int);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int count_arg(const char *opt, const char *s, long lo, long hi, long *v)
{
	char *end;
	long x = strtol(s, &end, 10);
	if (!*s || *end || x < lo || x > hi) {
		fprintf(stderr, "bench-peak: %s needs a whole number in %ld..%ld, got '%s'\n", opt, lo, hi, s);
		return -1;
	}
	*v = x;
	return 0;
}

/* The "model name" and "flags" lines of /proc/cpuinfo's first processor. */
static void cpu_info(char *model, size_t nm, char *flags, size_t nf)
{
	snprintf(model, nm, "unknown");
	flags[0] = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	int got = 0;
	while (got != 3 && getline(&line, &cap, f) > 0) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *v = colon + 1 + (colon[1] == ' ');
		v[strcspn(v, "\n")] = 0;
		if (!(got & 1) && !strncmp(line, "model name", 10))
			snprintf(model, nm, "%s", v), got |= 1;
		else if (!(got & 2) && !strncmp(line, "flags", 5))
			snprintf(flags, nf, " %s ", v), got |= 2;
	}
	free(line);
	fclose(f);
}

static int has_flag(const char *flags, const char *name)
{
	char pat[64];
	snprintf(pat, sizeof pat, " %s ", name);
	return strstr(flags, pat) != NULL;
}

/* Best GFLOP/s of fn over about `seconds`, after one untimed run. */
typedef int (*gemm_fn)(void *ctx);
static int best_rate(gemm_fn fn, void *ctx, double flops, double seconds, double *gflops)
{
	if (fn(ctx))
		return -1;
	double best = 0, t_end = now() + seconds;
	int runs = 0;
	do {
		double t0 = now();
		if (fn(ctx))
			return -1;
		double dt = now() - t0;
		if (dt > 0 && flops / dt > best)
			best = flops / dt;
		runs++;
	} while (runs < 3 || now() < t_end);
	*gflops = best * 1e-9;
	return 0;
}

struct sgemm_ctx {
	int n;
	float *a, *b, *c;
};

static int run_sgemm(void *p)
{
	struct sgemm_ctx *s = p;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b, s->n, 0.0f,
	            s->c, s->n);
	return 0;
}

#ifdef STARNN_HAVE_DNNL
/* oneDNN's own sgemm (its JIT kernels): 332 against OpenBLAS's 62.7
 * GFLOP/s on a 2-core Sapphire Rapids VM (2 Dec 2026), where Debian's
 * OpenBLAS 0.3.21 is far from the processor's peak */
static int run_dnnl_sgemm(void *p)
{
	struct sgemm_ctx *s = p;
	dnnl_status_t st = dnnl_sgemm('N', 'N', s->n, s->n, s->n, 1.0f, s->a, s->n, s->b, s->n, 0.0f, s->c, s->n);
	if (st != dnnl_success) {
		fprintf(stderr, "bench-peak: dnnl_sgemm failed (status %d)\n", (int)st);
		return -1;
	}
	return 0;
}

struct bgemm_ctx {
	int n;
	uint16_t *a, *b;
	float *c;
};

static int run_bgemm(void *p)
{
	struct bgemm_ctx *s = p;
	dnnl_status_t st = dnnl_gemm_bf16bf16f32('N', 'N', s->n, s->n, s->n, 1.0f, s->a, s->n, s->b, s->n, 0.0f, s->c,
	                                         s->n);
	if (st != dnnl_success) {
		fprintf(stderr, "bench-peak: dnnl_gemm_bf16bf16f32 failed (status %d)\n", (int)st);
		return -1;
	}
	return 0;
}
#endif

int main(int argc, char **argv)
{
	long threads = 0, n = 2048, secs = 1;
	const char *e = getenv("STARPU_NCPU");
	if (e && *e && count_arg("STARPU_NCPU", e, 1, 4096, &threads))
		return 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("Usage: bench-peak [--threads N] [--size N] [--seconds S]\n"
			       "The measured fp32 (the faster of OpenBLAS's and oneDNN's sgemm) and bf16 (oneDNN, on\n"
			       "processors with native bf16)\n"
			       "dense-GEMM peaks of this processor on N threads (default: STARPU_NCPU, else every core).\n");
			return 0;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "bench-peak: unknown option or missing value: '%s' (see --help)\n", a);
			return 2;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "--threads")) {
			if (count_arg(a, v, 1, 4096, &threads))
				return 2;
		} else if (!strcmp(a, "--size")) {
			if (count_arg(a, v, 64, 16384, &n))
				return 2;
		} else if (!strcmp(a, "--seconds")) {
			if (count_arg(a, v, 0, 600, &secs))
				return 2;
		} else {
			fprintf(stderr, "bench-peak: unknown option '%s' (see --help)\n", a);
			return 2;
		}
	}
	if (!threads) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		threads = c > 0 ? c : 1;
	}
	char model[256], flags[8192];
	cpu_info(model, sizeof model, flags, sizeof flags);
	const char *interest[] = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"};
	char have[256] = "";
	for (size_t i = 0; i < sizeof interest / sizeof *interest; i++)
		if (has_flag(flags, interest[i]))
			snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", *have ? " " : "", interest[i]);
	printf("cpu: %s (%s)\n", model, *have ? have : "none of avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16");

	size_t nn = (size_t)n * (size_t)n;
	double flops = 2.0 * (double)n * (double)n * (double)n, g = 0;
	int status = 0;
	struct sgemm_ctx s = {(int)n, malloc(nn * sizeof(float)), malloc(nn * sizeof(float)), malloc(nn * sizeof(float))};
	if (!s.a || !s.b || !s.c) {
		fprintf(stderr, "bench-peak: out of memory for n=%ld\n", n);
		free(s.a), free(s.b), free(s.c);
		return 1;
	}
	for (size_t i = 0; i < nn; i++)
		s.a[i] = (float)(i % 7) * 0.125f, s.b[i] = (float)(i % 5) * 0.25f;
	openblas_set_num_threads((int)threads);
	double gd = 0;
	int ob = best_rate(run_sgemm, &s, flops, (double)secs, &g), od = -1;
#ifdef STARNN_HAVE_DNNL
	omp_set_num_threads((int)threads);
	od = best_rate(run_dnnl_sgemm, &s, flops, (double)secs, &gd);
#endif
	/* the faster of the two libraries is the peak */
	if (od == 0 && (ob != 0 || gd > g))
		printf("peak fp32 GEMM: %.1f GFLOP/s (oneDNN sgemm, %ld threads, n=%ld; OpenBLAS sgemm %.1f)\n", gd, threads,
		       n, ob == 0 ? g : 0.0);
	else if (ob == 0)
		printf("peak fp32 GEMM: %.1f GFLOP/s (OpenBLAS sgemm, %ld threads, n=%ld%s)\n", g, threads, n,
		       od == 0 ? "; oneDNN sgemm slower" : "");
	free(s.a), free(s.b), free(s.c);

	if (!has_flag(flags, "avx512_bf16") && !has_flag(flags, "amx_bf16")) {
		printf("peak bf16 GEMM: n/a (no avx512_bf16 or amx_bf16 in the processor's flags: bf16 is emulated "
		       "here, its rate is no peak)\n");
		return status;
	}
#ifdef STARNN_HAVE_DNNL
	struct bgemm_ctx b = {(int)n, malloc(nn * 2), malloc(nn * 2), malloc(nn * sizeof(float))};
	if (!b.a || !b.b || !b.c) {
		fprintf(stderr, "bench-peak: out of memory for n=%ld\n", n);
		status = 1;
	} else {
		for (size_t i = 0; i < nn; i++)
			b.a[i] = 0x3e00 + (uint16_t)(i % 7), b.b[i] = 0x3f00 + (uint16_t)(i % 5); /* about 0.125, 0.5 */
		omp_set_num_threads((int)threads);
		if (best_rate(run_bgemm, &b, flops, (double)secs, &g) == 0)
			printf("peak bf16 GEMM: %.1f GFLOP/s (oneDNN gemm_bf16bf16f32, %ld threads, n=%ld, %s)\n", g,
			       threads, n, has_flag(flags, "amx_bf16") ? "AMX" : "AVX512-BF16");
		else
			status = 1;
	}
	free(b.a), free(b.b), free(b.c);
#else
	printf("peak bf16 GEMM: n/a (this starnn was built without oneDNN)\n");
#endif
	return status;
}
