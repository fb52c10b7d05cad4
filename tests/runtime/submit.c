/* The submit layer's task names and flop counts, as StarPU receives them.
 *
 * Names: StarPU writes task names unquoted into paje.trace, whose fields are
 * separated by whitespace, so a name with a space breaks every line that
 * carries it (ViTE: "Unknown entity type", "extra token(s) ignored"). The
 * names a task really gets are read inside the task itself
 * (starpu_task_get_current()) by a probe codelet.
 *
 * Flops: each task's task->flops, read the same way, and summed by StarPU's
 * own per-worker profiling for real operations (conv2d and convt2d split
 * into parts, relu, mse, gemm, axpy, adam, copy), against the counts of
 * their shapes.
 *
 * Priorities: a task takes its descriptor's priority, else that of the
 * first tensor it writes (its root's, for a part); the parameters'
 * masters, gradients and optimizer state are STARNN_PRIO_PARAM; with
 * priorities off every task is 0.
 *
 * Capture (starnn_capture_begin / _end, what tools/energy-calibrate
 * replays): one record per (codelet, footprint) with its count, a copy of
 * the args, the buffers' views (a channel part: ld > cols), dtypes, modes
 * and tensors; the codelets' energy models (symbol of the time model +
 * "_energy", same footprint function); capture states refused; the
 * calibration's refusal of a worker no meter measures. */
#include <math.h>
#include <starpu_profiling.h>

#include "codelets/adam.h"
#include "codelets/axpy.h"
#include "codelets/conv2d.h"
#include "codelets/convt2d.h"
#include "codelets/copy.h"
#include "codelets/gemm.h"
#include "codelets/mse.h"
#include "codelets/relu.h"
#include "runtime/train/calibrate.h"
#include "runtime/core/codelet.h"
#include "tests/testlib.h"

/* ------------------------------------------------------------ the probe */

static char probe_name[256];
static double probe_flops = -1.0;
static int probe_priority = -100;

/* Records what StarPU holds for the running task. */
static void probe_cpu(void *buffers[], void *cl_arg)
{
	(void)buffers;
	(void)cl_arg;
	struct starpu_task *task = starpu_task_get_current();
	snprintf(probe_name, sizeof probe_name, "%s", task && task->name ? task->name : "(none)");
	probe_flops = task ? task->flops : -1.0;
	probe_priority = task ? task->priority : -100;
}

static struct starpu_codelet probe_cl = {
	.name = "probe",
	.cpu_funcs = {probe_cpu},
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
};

/* Submits the probe on (x, y) with the given name and flops, waits, and
 * leaves what the task saw in probe_name / probe_flops. */
static int run_probe_prio(starnn_tensor *x, starnn_tensor *y, const char *name, double flops, int prio);
static int run_probe(starnn_tensor *x, starnn_tensor *y, const char *name, double flops)
{
	return run_probe_prio(x, y, name, flops, 0);
}

/* The same with the descriptor's priority prio. */
static int run_probe_prio(starnn_tensor *x, starnn_tensor *y, const char *name, double flops, int prio)
{
	probe_name[0] = '\0';
	probe_flops = -1.0;
	probe_priority = -100;
	struct starnn_task_desc d = {.cl = &probe_cl, .name = name, .flops = flops, .tensors = {x, y}, .priority = prio};
	int rc = starnn_submit(&d);
	if (rc < 0)
		return rc;
	return starnn_wait();
}

/* A name ViTE reads as one field: no whitespace, quote, backslash or
 * non-ASCII byte, and not empty. */
static int trace_safe(const char *s)
{
	if (!*s)
		return 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c <= ' ' || *c >= 0x7f || *c == '"' || *c == '\'' || *c == '\\')
			return 0;
	return 1;
}

/* ------------------------------------------------------------ names */

static void sanitising(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"copy y[0]", "copy_y[0]"},
		{"conv2d_fwd:enc0/conv1.y[n1]", "conv2d_fwd:enc0/conv1.y[n1]"}, /* already safe: unchanged */
		{"a\tb\nc\rd", "a_b_c_d"},
		{"say \"hi\" it's a\\b", "say_hi_its_ab"},
		{"caf\xc3\xa9", "caf__"},
		{"", "task"},
		{"\"\"", "task"},
	};
	char out[64];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		starnn_trace_name(cases[i].in, out, sizeof out);
		TEST_ASSERT(strcmp(out, cases[i].want) == 0, "trace name of '%s': '%s', expected '%s'", cases[i].in, out,
		            cases[i].want);
	}
	starnn_trace_name("abcdefgh", out, 4);
	TEST_ASSERT(strcmp(out, "abc") == 0, "truncated to size - 1: '%s'", out);

	const char *a = starnn_intern("copy y[0]"), *b = starnn_intern("copy\ty[0]");
	TEST_ASSERT(a && trace_safe(a), "interned name is trace-safe: '%s'", a ? a : "(null)");
	TEST_ASSERT(a && strcmp(a, "copy_y[0]") == 0, "interned 'copy y[0]': '%s'", a ? a : "(null)");
	TEST_ASSERT(a == b, "names equal once sanitised share one copy");
}

static void task_names(void)
{
	/* A tensor name with a space (models may name tensors freely). */
	starnn_tensor *x, *y;
	TEST_OK(starnn_tensor_new(&x, "input data", STARNN_FP32, 2, (int64_t)3, (int64_t)5));
	TEST_OK(starnn_tensor_new(&y, "my \"out\" [0]", STARNN_FP32, 2, (int64_t)3, (int64_t)5));

	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(strcmp(probe_name, "probe:my_out_[0]") == 0, "default name '<op>:<written>': '%s'", probe_name);
	TEST_ASSERT(trace_safe(probe_name), "default name is trace-safe: '%s'", probe_name);

	TEST_OK(run_probe(x, y, "step 3\t'fwd'", 0.0));
	TEST_ASSERT(strcmp(probe_name, "step_3_fwd") == 0, "given name sanitised: '%s'", probe_name);

	/* The names starnn's own operations build, on parts too. */
	starnn_tensor **xp, **yp;
	TEST_OK(starnn_tensor_split(x, 0, 3, NULL, &xp));
	TEST_OK(starnn_tensor_split(y, 0, 3, NULL, &yp));
	TEST_OK(run_probe(xp[1], yp[1], NULL, 0.0));
	TEST_ASSERT(strcmp(probe_name, "probe:my_out_[0][1]") == 0, "part's task name: '%s'", probe_name);
	TEST_ASSERT(trace_safe(probe_name), "part's task name is trace-safe: '%s'", probe_name);
	starnn_tensor_destroy(x);
	starnn_tensor_destroy(y);
}

/* ------------------------------------------------------------ flops */

static void probe_flop_counts(void)
{
	starnn_tensor *x, *y;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 2, (int64_t)4, (int64_t)6));
	TEST_OK(starnn_tensor_new(&y, "y", STARNN_FP32, 2, (int64_t)2, (int64_t)3));

	double before = starnn_submitted_flops();
	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(probe_flops == 24.0, "default flops: one per element of the largest buffer (24), got %g",
	            probe_flops);
	TEST_OK(run_probe(x, y, NULL, 1234.5));
	TEST_ASSERT(probe_flops == 1234.5, "given flops reach the task: %g", probe_flops);
	TEST_OK(run_probe(x, y, NULL, STARNN_NO_FLOPS));
	TEST_ASSERT(probe_flops == 0.0, "STARNN_NO_FLOPS: 0 in the task, got %g", probe_flops);
	double sum = starnn_submitted_flops() - before;
	TEST_ASSERT(sum == 24.0 + 1234.5, "starnn_submitted_flops counts what the tasks got: %g", sum);

	struct starnn_task_desc d = {.cl = &probe_cl, .flops = -2.0, .tensors = {x, y}};
	TEST_ASSERT(starnn_submit(&d) == STARNN_EINVAL, "negative flops refused");
	TEST_ASSERT(strstr(starnn_last_error(), "flops") != NULL, "message names flops: %s", starnn_last_error());
	d.flops = NAN;
	TEST_ASSERT(starnn_submit(&d) == STARNN_EINVAL, "NaN flops refused");
	TEST_OK(starnn_wait());
	starnn_tensor_destroy(x);
	starnn_tensor_destroy(y);
}

/* Flops StarPU's profiling summed over every worker since the last call
 * (starpu_profiling_worker_get_info resets the counters it reports). */
static double profiled_flops(void)
{
	double sum = 0.0;
	unsigned n = starpu_worker_get_count();
	for (unsigned w = 0; w < n; w++) {
		struct starpu_profiling_worker_info info;
		if (starpu_profiling_worker_get_info((int)w, &info) == 0)
			sum += info.flops;
	}
	return sum;
}

static starnn_tensor *new4(const char *name, int64_t n, int64_t c, int64_t h, int64_t w)
{
	starnn_tensor *t = NULL;
	TEST_OK(starnn_tensor_new(&t, name, STARNN_FP32, 4, n, c, h, w));
	return t;
}

/* Submits what op does, waits, and checks both the submit layer's count
 * and StarPU's profiled count against want. */
#define CHECK_FLOPS(what, want, ...)                                                                   \
	do {                                                                                           \
		double b_ = starnn_submitted_flops();                                                  \
		profiled_flops();                                                                      \
		TEST_OK(__VA_ARGS__);                                                                  \
		TEST_OK(starnn_wait());                                                                \
		double got_ = starnn_submitted_flops() - b_, prof_ = profiled_flops();                 \
		TEST_ASSERT(got_ == (want), "%s: %.0f flops submitted, expected %.0f", what, got_,     \
		            (double)(want));                                                           \
		TEST_ASSERT(prof_ == (want), "%s: StarPU profiled %.0f flops, expected %.0f", what,    \
		            prof_, (double)(want));                                                    \
	} while (0)

static void operation_flop_counts(void)
{
	if (starpu_profiling_status_set(STARPU_PROFILING_ENABLE) < 0)
		TEST_ASSERT(0, "cannot enable StarPU profiling");

	/* conv2d 3x3 at a size cut into several tasks (2 N C O k^2 H W > the
	 * split threshold): the parts' counts must add up to the whole's. */
	const double n = 4, c = 16, o = 16, h = 64, w = 64, k = 3;
	starnn_tensor *x = new4("x", 4, 16, 64, 64), *y = new4("y", 4, 16, 64, 64);
	starnn_tensor *dx = new4("dx", 4, 16, 64, 64), *dy = new4("dy", 4, 16, 64, 64);
	starnn_tensor *wt = new4("w", 16, 16, 3, 3), *dw = new4("dw", 16, 16, 3, 3), *b, *db;
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 1, (int64_t)16));
	TEST_OK(starnn_tensor_new(&db, "db", STARNN_FP32, 1, (int64_t)16));
	const double gemm = 2 * n * c * o * k * k * h * w, bias = n * o * h * w;
	CHECK_FLOPS("conv2d_fwd", gemm + bias, starnn_conv2d_fwd(x, wt, b, y));
	TEST_ASSERT(gemm + bias > 0, "conv2d counts flops");
	CHECK_FLOPS("conv2d_bwd_data", gemm, starnn_conv2d_bwd_data(dy, wt, 0.0f, dx));
	CHECK_FLOPS("conv2d_bwd_weight + bias", gemm + bias, starnn_conv2d_bwd_weight(x, dy, 0.0f, dw, db));

	/* convt2d 2x2 stride 2, [4,32,32,32] -> [4,64,64,64]: 8 N C O H W for
	 * the product (big enough to be cut into parts), plus the bias on
	 * every output */
	starnn_tensor *xt = new4("xt", 4, 32, 32, 32), *wt2 = new4("wt2", 32, 64, 2, 2), *yt = new4("yt", 4, 64, 64, 64);
	starnn_tensor *bt;
	TEST_OK(starnn_tensor_new(&bt, "bt", STARNN_FP32, 1, (int64_t)64));
	CHECK_FLOPS("convt2d_fwd", 8.0 * 4 * 32 * 64 * 32 * 32 + 4.0 * 64 * 64 * 64, starnn_convt2d_fwd(xt, wt2, bt, yt));

	/* element-wise defaults and counts on y [4,16,64,64]: relu one per
	 * element (the default), mse forward 3 */
	starnn_tensor *loss;
	TEST_OK(starnn_tensor_new(&loss, "loss", STARNN_FP32, 1, (int64_t)1));
	CHECK_FLOPS("relu_fwd", n * o * h * w, starnn_relu_fwd(y, dy));
	CHECK_FLOPS("mse_fwd", 3.0 * n * o * h * w, starnn_mse_fwd(y, dy, loss, 1.0f, 0.0f));

	/* gemm [8 x 5] x [5 x 7] */
	starnn_tensor *A, *B, *C, *D;
	TEST_OK(starnn_tensor_new(&A, "A", STARNN_FP32, 2, (int64_t)8, (int64_t)5));
	TEST_OK(starnn_tensor_new(&B, "B", STARNN_FP32, 2, (int64_t)5, (int64_t)7));
	TEST_OK(starnn_tensor_new(&C, "C", STARNN_FP32, 2, (int64_t)8, (int64_t)7));
	TEST_OK(starnn_tensor_new(&D, "D", STARNN_FP32, 2, (int64_t)8, (int64_t)7));
	CHECK_FLOPS("gemm", 2.0 * 8 * 7 * 5, starnn_gemm(0, 0, 1.0f, A, B, 0.0f, C));

	/* element-wise: axpy 2 per element, adam 17, a copy none */
	struct starnn_adam_params ap = {0.001f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
	starnn_tensor *m, *v;
	TEST_OK(starnn_tensor_new(&m, "m", STARNN_FP32, 4, (int64_t)16, (int64_t)16, (int64_t)3, (int64_t)3));
	TEST_OK(starnn_tensor_new(&v, "v", STARNN_FP32, 4, (int64_t)16, (int64_t)16, (int64_t)3, (int64_t)3));
	CHECK_FLOPS("axpy", 2.0 * 56, starnn_axpy(0.5f, C, D));
	CHECK_FLOPS("adam", 17.0 * 2304, starnn_adam(wt, dw, m, v, &ap, 1, 1.0f));
	CHECK_FLOPS("copy", 0.0, starnn_copy(x, dx));

	starnn_tensor *all[] = {x, y, dx, dy, wt, dw, b, db, xt, wt2, yt, bt, loss, A, B, C, D, m, v};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		starnn_tensor_destroy(all[i]);
}

/* ------------------------------------------------------------ capture */

static void capture(void)
{
	starnn_tensor *a, *b, *c, *d, *x, *y;
	TEST_OK(starnn_tensor_new(&a, "a", STARNN_FP32, 2, (int64_t)8, (int64_t)16));
	TEST_OK(starnn_tensor_new(&b, "b", STARNN_FP32, 2, (int64_t)8, (int64_t)16));
	TEST_OK(starnn_tensor_new(&c, "c", STARNN_FP32, 2, (int64_t)4, (int64_t)16));
	TEST_OK(starnn_tensor_new(&d, "d", STARNN_FP32, 2, (int64_t)4, (int64_t)16));
	/* [2,4,2,2] cut into two channel halves: parts of 2 rows x 8 columns,
	 * rows 16 apart */
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 4, (int64_t)2, (int64_t)4, (int64_t)2, (int64_t)2));
	TEST_OK(starnn_tensor_new(&y, "y", STARNN_FP32, 4, (int64_t)2, (int64_t)4, (int64_t)2, (int64_t)2));
	starnn_tensor **xp, **yp;
	TEST_OK(starnn_tensor_split(x, 1, 2, NULL, &xp));
	TEST_OK(starnn_tensor_split(y, 1, 2, NULL, &yp));

	struct starnn_captured_task *t = NULL;
	int n = -1;
	TEST_ASSERT(starnn_capture_end(&t, &n) == STARNN_ESTATE && !t && n == 0, "capture_end without a capture");
	TEST_OK(starnn_capture_begin());
	TEST_ASSERT(starnn_capture_begin() == STARNN_ESTATE, "a second capture_begin is refused");
	for (int i = 0; i < 3; i++)
		TEST_OK(starnn_axpy(0.5f, a, b));
	TEST_OK(starnn_axpy(2.0f, c, d));
	TEST_OK(starnn_relu_fwd(xp[0], yp[0]));
	TEST_OK(starnn_relu_fwd(xp[1], yp[1])); /* same shapes: the same record */
	TEST_OK(starnn_wait());
	TEST_OK(starnn_capture_end(&t, &n));
	TEST_ASSERT(n == 3, "%d records, expected 3 (axpy [8,16], axpy [4,16], relu of a part)", n);
	if (n == 3) {
		TEST_ASSERT(strcmp(t[0].cl->name, "axpy") == 0 && t[0].count == 3 && t[1].count == 1 && t[2].count == 2,
		            "records %s x%lld, %s x%lld, %s x%lld", t[0].cl->name, (long long)t[0].count, t[1].cl->name,
		            (long long)t[1].count, t[2].cl->name, (long long)t[2].count);
		TEST_ASSERT(t[0].args_size == 2 * sizeof(float) && ((const float *)t[0].args)[0] == 0.5f &&
		            ((const float *)t[1].args)[0] == 2.0f, "axpy args copied (alpha 0.5, then 2)");
		TEST_ASSERT(t[0].nbuffers == 2 && t[0].buf[0].rows == 8 && t[0].buf[0].cols == 16 && t[0].buf[0].ld == 16 &&
		            t[0].buf[0].mode == STARPU_R && (t[0].buf[1].mode & STARPU_RW) == STARPU_RW &&
		            t[0].buf[0].tensor == a && t[0].buf[1].tensor == b && t[0].buf[0].dtype == STARNN_FP32,
		            "axpy buffers: 8x16/16 R a, RW b");
		TEST_ASSERT(t[0].footprint != t[1].footprint, "two shapes, two footprints");
		TEST_ASSERT(t[0].flops == 2.0 * 8 * 16 && t[1].flops == 2.0 * 4 * 16, "flops %g, %g", t[0].flops, t[1].flops);
		TEST_ASSERT(t[2].buf[0].rows == 2 && t[2].buf[0].cols == 8 && t[2].buf[0].ld == 16 &&
		            t[2].buf[0].tensor == xp[0], "relu of a channel half: 2x8/16 (ld %zu)", t[2].buf[0].ld);
		char shape[128];
		starnn_captured_shape(&t[2], shape, sizeof shape);
		TEST_ASSERT(strcmp(shape, "2x8/16 R, 2x8/16 W") == 0, "shape '%s'", shape);
		TEST_ASSERT(strncmp(t[0].name, "axpy:b", 6) == 0, "name '%s'", t[0].name);
		for (int i = 0; i < n; i++) {
			const struct starpu_perfmodel *tm = t[i].cl->model, *em = t[i].cl->energy_model;
			char want[160];
			snprintf(want, sizeof want, "%s_energy", tm ? tm->symbol : "?");
			TEST_ASSERT(tm && em && em != tm && em->type == STARPU_HISTORY_BASED && strcmp(em->symbol, want) == 0 &&
			            em->footprint == tm->footprint,
			            "%s: energy model '%s' beside '%s'", t[i].cl->name, em ? em->symbol : "(none)",
			            tm ? tm->symbol : "(none)");
		}
	}
	/* Not capturing any more: nothing is recorded. */
	TEST_OK(starnn_axpy(0.5f, a, b));
	TEST_OK(starnn_capture_begin());
	struct starnn_captured_task *t2 = NULL;
	int n2 = -1;
	TEST_OK(starnn_capture_end(&t2, &n2));
	TEST_ASSERT(n2 == 0, "an empty capture has %d records", n2);
	starnn_capture_free(t2, n2);

	/* A worker no meter measures is refused before anything runs. */
	setenv("STARNN_POWERCAP_ROOT", "/nonexistent/powercap", 1);
	setenv("STARNN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	starnn_energy_meter *m = NULL;
	struct starnn_energy_reading r;
	TEST_OK(starnn_energy_start(&m, NULL));
	TEST_OK(starnn_energy_read(m, &r));
	if (n >= 1 && !r.available) {
		struct starnn_calib_opts o;
		struct starnn_calib_result res;
		starnn_calib_opts_init(&o);
		TEST_ASSERT(o.windows >= 11 && o.seconds == 1.0, "defaults: %d windows, %g s", o.windows, o.seconds);
		int rc = starnn_calibrate_task(&t[0], 0, m, &o, &res);
		TEST_ASSERT(rc == STARNN_ENODEV && strstr(starnn_last_error(), "energy: not available for worker 0"),
		            "no meter: %d '%s'", rc, starnn_last_error());
		TEST_ASSERT(res.recorded == 0 && res.tasks == 0, "no meter: nothing run (%lld tasks)", (long long)res.tasks);
		o.windows = 0;
		TEST_ASSERT(starnn_calibrate_task(&t[0], 0, m, &o, &res) == STARNN_EINVAL, "0 windows refused");
	}
	starnn_energy_stop(m);
	unsetenv("STARNN_POWERCAP_ROOT");
	unsetenv("STARNN_NVML_LIBRARY");
	starnn_capture_free(t, n);

	starnn_tensor *all[] = {a, b, c, d, x, y};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		starnn_tensor_destroy(all[i]);
}

/* The priorities tasks run with. */
static void priorities(void)
{
	starnn_tensor *x = NULL, *y = NULL, **yp = NULL;
	TEST_OK(starnn_tensor_new(&x, "prio_x", STARNN_FP32, 2, (int64_t)4, (int64_t)8));
	TEST_OK(starnn_tensor_new(&y, "prio_y", STARNN_FP32, 2, (int64_t)4, (int64_t)8));
	TEST_ASSERT(starnn_priorities_on() == 1, "priorities are on by default");
	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(probe_priority == 0, "an activation's writer: priority 0, got %d", probe_priority);
	y->priority = STARNN_PRIO_PARAM;
	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(probe_priority == STARNN_PRIO_PARAM, "the writer of a parameter-side tensor: %d, got %d",
	            STARNN_PRIO_PARAM, probe_priority);
	TEST_OK(run_probe_prio(x, y, NULL, 0.0, 3));
	TEST_ASSERT(probe_priority == 3, "the descriptor's priority first: 3, got %d", probe_priority);
	/* a tensor read at a priority does not give it: only the written one */
	x->priority = 5;
	y->priority = 0;
	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(probe_priority == 0, "a read tensor's priority is not the task's: 0, got %d", probe_priority);
	/* a part's writer takes its root's priority, set before or after the
	 * parts were made, through nested plans too */
	starnn_tensor **yq = NULL;
	TEST_OK(starnn_tensor_split(y, 0, 2, NULL, &yp));
	TEST_OK(starnn_tensor_split(yp[1], 1, 2, NULL, &yq));
	y->priority = STARNN_PRIO_PARAM;
	TEST_OK(run_probe(x, yp[1], NULL, 0.0));
	TEST_ASSERT(probe_priority == STARNN_PRIO_PARAM, "the writer of a part: %d, got %d", STARNN_PRIO_PARAM,
	            probe_priority);
	TEST_OK(run_probe(x, yq[0], NULL, 0.0));
	TEST_ASSERT(probe_priority == STARNN_PRIO_PARAM, "the writer of a part of a part: %d, got %d",
	            STARNN_PRIO_PARAM, probe_priority);
	/* off: every task 0, the descriptor's priority too */
	TEST_OK(starnn_priorities_set(0));
	TEST_ASSERT(starnn_priorities_on() == 0, "priorities off");
	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(probe_priority == 0, "off: priority 0, got %d", probe_priority);
	TEST_OK(run_probe_prio(x, y, NULL, 0.0, 3));
	TEST_ASSERT(probe_priority == 0, "off: the descriptor's priority is dropped too, got %d", probe_priority);
	TEST_ASSERT(starnn_priorities_set(2) == STARNN_EINVAL, "priorities_set(2) refused");
	TEST_OK(starnn_priorities_set(1));
	TEST_OK(run_probe(x, y, NULL, 0.0));
	TEST_ASSERT(probe_priority == STARNN_PRIO_PARAM, "on again: %d, got %d", STARNN_PRIO_PARAM, probe_priority);
	starnn_tensor_destroy(x);
	starnn_tensor_destroy(y);
}

int main(void)
{
	test_init();
	sanitising();
	priorities();
	task_names();
	probe_flop_counts();
	operation_flop_counts();
	capture();
	return test_finish();
}
