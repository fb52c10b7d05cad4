/* bench-onednn: single-thread times of oneDNN's convolution primitives at
 * the UNet's 128x128 shapes (depth 4, f = 16, a batch part of 2 samples),
 * for comparing oneDNN builds: the same source builds against oneDNN 2.x
 * (Debian's 2.6: `make` builds it as tools/bench/onednn) and 3.x (Intel's
 * wheels on PyPI: tools/bench/onednn-pypi builds it against them and runs
 * both, alternated).
 *
 * For fp32 (activations in the layout the primitive picks, as starnn's
 * blocked layouts give it), bf16 and fp16 (NHWC activations, what starnn
 * hands AMX), every pass (forward with bias, backward data, backward
 * weights with the bias gradient), weights in the primitive's own format:
 * the primitive's execution only, no reorders, best of 10 runs after 2,
 * on one thread (OpenMP team of 1, as in starnn's tasks). A pass the
 * library cannot create prints "unimplemented"; one that only oneDNN's
 * reference code runs (ref:any, 100-3000x slower) is timed once and marked.
 *
 * Output: a line per dtype, pass and shape (ms, GFLOP/s, the
 * implementation's name), then per dtype "total: fwd F bwd_data D
 * bwd_weights W ms".
 *
 * Usage: tools/bench/onednn [--dtypes fp32,bf16,fp16] */
#if defined(HAVE_CONFIG_H)
#include <config.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(STARNN_HAVE_DNNL) || defined(BENCH_ONEDNN_STANDALONE)
#include <dnnl.h>

extern void omp_set_num_threads(int n);

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Memory descriptors: a struct in 2.x, a handle in 3.x. */
#if DNNL_VERSION_MAJOR >= 3
typedef dnnl_memory_desc_t md_t;
#define MD(m) (m)
static dnnl_status_t md_tag(md_t *m, int nd, const dnnl_dims_t d, dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
	return dnnl_memory_desc_create_with_tag(m, nd, d, dt, tag);
}
static void md_free(md_t m) { dnnl_memory_desc_destroy(m); }
typedef const_dnnl_memory_desc_t cmd_t;
#else
typedef dnnl_memory_desc_t md_t;
#define MD(m) (&(m))
static dnnl_status_t md_tag(md_t *m, int nd, const dnnl_dims_t d, dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
	return dnnl_memory_desc_init_by_tag(m, nd, d, dt, tag);
}
static void md_free(md_t m) { (void)m; }
typedef const dnnl_memory_desc_t *cmd_t;
#endif

enum { FWD, BWD_DATA, BWD_WEIGHTS, NPASSES };
static const char *pass_name[NPASSES] = {"fwd", "bwd_data", "bwd_weights"};

/* A memory object for query q of pd (NULL: pd has none), filled with a
 * finite pattern. */
static dnnl_memory_t mem_for(const_dnnl_primitive_desc_t pd, dnnl_query_t q, int idx)
{
	cmd_t md = dnnl_primitive_desc_query_md(pd, q, idx);
	size_t n = md ? dnnl_memory_desc_get_size(md) : 0;
	dnnl_memory_t m = NULL;
	if (!n || dnnl_memory_create(&m, md, engine, DNNL_MEMORY_ALLOCATE) != dnnl_success)
		return NULL;
	void *p = NULL;
	dnnl_memory_get_data_handle(m, &p);
	memset(p, 0x3c, n); /* 0x3c3c: about 1.1 in bf16, 1.06 in fp16; fp32 0.0115 */
	return m;
}

/* The best time of pass on [n, c, h, h] -> [n, o, h, h], 3x3, in seconds
 * (< 0: unimplemented); impl gets the implementation's name. */
static double time_pass(int pass, dnnl_data_type_t dt, int n, int c, int o, int h, char *impl, size_t isize)
{
	dnnl_dims_t xd = {n, c, h, h}, wd = {o, c, 3, 3}, yd = {n, o, h, h}, bd = {o};
	dnnl_dims_t strides = {1, 1}, dil = {0, 0}, pad = {1, 1};
	dnnl_format_tag_t act = dt == dnnl_f32 ? dnnl_format_tag_any : dnnl_nhwc;
	md_t x, w, y, b, dw;
	md_tag(&x, 4, xd, dt, act);
	md_tag(&w, 4, wd, dt, dnnl_format_tag_any);
	md_tag(&y, 4, yd, dt, act);
	md_tag(&b, 1, bd, dnnl_f32, dnnl_x);
	md_tag(&dw, 4, wd, dnnl_f32, dnnl_format_tag_any);
	dnnl_primitive_desc_t fpd = NULL, pd = NULL;
	dnnl_status_t s;
#if DNNL_VERSION_MAJOR >= 3
	s = dnnl_convolution_forward_primitive_desc_create(&fpd, engine, dnnl_forward_training, dnnl_convolution_direct,
	                                                   x, w, b, y, strides, dil, pad, pad, NULL);
	if (s == dnnl_success && pass == FWD)
		pd = fpd, fpd = NULL;
	else if (s == dnnl_success && pass == BWD_DATA)
		s = dnnl_convolution_backward_data_primitive_desc_create(&pd, engine, dnnl_convolution_direct, x, w, y,
		                                                         strides, dil, pad, pad, fpd, NULL);
	else if (s == dnnl_success)
		s = dnnl_convolution_backward_weights_primitive_desc_create(&pd, engine, dnnl_convolution_direct, x, dw, b, y,
		                                                            strides, dil, pad, pad, fpd, NULL);
#else
	dnnl_convolution_desc_t cd;
	s = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &x, &w, &b,
	                                               &y, strides, dil, pad, pad);
	if (s == dnnl_success)
		s = dnnl_primitive_desc_create(&fpd, &cd, NULL, engine, NULL);
	if (s == dnnl_success && pass == FWD)
		pd = fpd, fpd = NULL;
	else if (s == dnnl_success && pass == BWD_DATA) {
		s = dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &x, &w, &y, strides, dil,
		                                                     pad, pad);
		if (s == dnnl_success)
			s = dnnl_primitive_desc_create(&pd, &cd, NULL, engine, fpd);
	} else if (s == dnnl_success) {
		s = dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &x, &dw, &b, &y,
		                                                        strides, dil, pad, pad);
		if (s == dnnl_success)
			s = dnnl_primitive_desc_create(&pd, &cd, NULL, engine, fpd);
	}
#endif
	md_free(x), md_free(w), md_free(y), md_free(b), md_free(dw);
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	if (s != dnnl_success) {
		snprintf(impl, isize, "unimplemented");
		return -1.0;
	}
	const char *name = "?";
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
	snprintf(impl, isize, "%s", name);
	/* the arguments of each pass: (argument, query) */
	static const struct {
		int arg;
		dnnl_query_t q;
	} args_of[NPASSES][5] = {
		{{DNNL_ARG_SRC, dnnl_query_src_md}, {DNNL_ARG_WEIGHTS, dnnl_query_weights_md},
		 {DNNL_ARG_BIAS, dnnl_query_weights_md}, {DNNL_ARG_DST, dnnl_query_dst_md},
		 {DNNL_ARG_SCRATCHPAD, dnnl_query_scratchpad_md}},
		{{DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md}, {DNNL_ARG_WEIGHTS, dnnl_query_weights_md},
		 {DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md}, {DNNL_ARG_SCRATCHPAD, dnnl_query_scratchpad_md}, {0, 0}},
		{{DNNL_ARG_SRC, dnnl_query_src_md}, {DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md},
		 {DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md}, {DNNL_ARG_DIFF_BIAS, dnnl_query_diff_weights_md},
		 {DNNL_ARG_SCRATCHPAD, dnnl_query_scratchpad_md}},
	};
	dnnl_exec_arg_t args[5];
	int nargs = 0;
	for (int i = 0; i < 5 && args_of[pass][i].arg; i++) {
		/* the bias is index 1 of the weights queries */
		int bias = args_of[pass][i].arg == DNNL_ARG_BIAS || args_of[pass][i].arg == DNNL_ARG_DIFF_BIAS;
		dnnl_memory_t m = mem_for(pd, args_of[pass][i].q, bias ? 1 : 0);
		if (m)
			args[nargs++] = (dnnl_exec_arg_t){args_of[pass][i].arg, m};
	}
	dnnl_primitive_t prim = NULL;
	double best = -1.0;
	if (dnnl_primitive_create(&prim, pd) == dnnl_success) {
		int slow = strstr(name, "ref") != NULL, runs = slow ? 1 : 12, skip = slow ? 0 : 2;
		for (int r = 0; r < runs; r++) {
			double t0 = now();
			if (dnnl_primitive_execute(prim, stream, nargs, args) != dnnl_success ||
			    dnnl_stream_wait(stream) != dnnl_success) {
				best = -1.0;
				break;
			}
			double t = now() - t0;
			if (r >= skip && (best < 0 || t < best))
				best = t;
		}
		dnnl_primitive_destroy(prim);
	}
	for (int i = 0; i < nargs; i++)
		dnnl_memory_destroy(args[i].memory);
	dnnl_primitive_desc_destroy(pd);
	return best;
}

int main(int argc, char **argv)
{
	const char *dtypes = "fp32,bf16,fp16";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dtypes") && i + 1 < argc)
			dtypes = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--dtypes fp32,bf16,fp16]\n", argv[0]);
			return 2;
		}
	}
	omp_set_num_threads(1);
	if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
	    dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
		fprintf(stderr, "bench-onednn: cannot create oneDNN's CPU engine\n");
		return 1;
	}
	const dnnl_version_t *v = dnnl_version();
	/* the UNet's levels at 128x128, f = 16: (C, O, H) */
	static const int shapes[][3] = {{13, 16, 128}, {16, 16, 128}, {32, 32, 64},
	                                {64, 64, 32},  {128, 128, 16}, {256, 256, 8}};
	static const struct {
		const char *name;
		dnnl_data_type_t dt;
	} dts[] = {{"fp32", dnnl_f32}, {"bf16", dnnl_bf16}, {"fp16", dnnl_f16}};
	printf("oneDNN %d.%d.%d, one thread\n", v->major, v->minor, v->patch);
	for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
		if (!strstr(dtypes, dts[d].name))
			continue;
		double total[NPASSES] = {0};
		int complete[NPASSES] = {1, 1, 1};
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
			for (int p = 0; p < NPASSES; p++) {
				char impl[96];
				int c = shapes[s][0], o = shapes[s][1], h = shapes[s][2];
				double t = time_pass(p, dts[d].dt, 2, c, o, h, impl, sizeof impl);
				double gflop = 2.0 * 2 * c * o * 9 * h * h / 1e9;
				if (t < 0) {
					printf("%s %s C%d O%d %dx%d: %s\n", dts[d].name, pass_name[p], c, o, h, h, impl);
					complete[p] = 0;
					continue;
				}
				printf("%s %s C%d O%d %dx%d: %.3f ms %.0f GFLOP/s [%s]\n", dts[d].name, pass_name[p], c, o, h, h,
				       t * 1e3, gflop / t, impl);
				total[p] += t;
			}
		printf("%s total:", dts[d].name);
		for (int p = 0; p < NPASSES; p++)
			printf(" %s %.3f%s", pass_name[p], total[p] * 1e3, complete[p] ? "" : " (incomplete)");
		printf(" ms\n");
	}
	dnnl_stream_destroy(stream);
	dnnl_engine_destroy(engine);
	return 0;
}
#else
int main(void)
{
	printf("bench-onednn: this starnn was built without oneDNN\n");
	return 77;
}
#endif
