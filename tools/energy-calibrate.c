/* tools/energy-calibrate: measured joules per task into StarPU's energy
 * models of the codelets of a UNet training step, for energy-aware
 * scheduling (STARPU_SCHED=dmda with STARPU_SCHED_GAMMA).
 *
 *   tools/energy-calibrate [OPTIONS] [-- MODELS/UNET TRAIN OPTIONS]
 *
 * StarPU 1.3.10 measures the energy of CUDA tasks only when it was built
 * against NVML, and never that of CPU tasks; this does what StarPU 1.4's
 * energy calibration does: every distinct (codelet, footprint) of one
 * training step (and of the evaluation forward that training ends with),
 * at the model options models/unet train would get, is run many times on
 * one worker between two meter readings (runtime/train/calibrate.h), and the
 * joules per task go into starnn_<op>_<dtype>_energy with
 * starpu_perfmodel_update_history. StarPU writes the models at shutdown
 * into its sampling directory, where models/unet train under dmda reads
 * them.
 *
 * Why a tool and not a models/unet subcommand: it chooses workers and
 * reads meters, which models must not know (models/ describe graphs, the
 * runtime places them); a tool may know both. It takes the model options
 * of models/unet train (the same parser) so that the step it measures has
 * the shapes the training will have: run it with the same STARPU_NCPU /
 * STARPU_NCUDA as the training, since the number of workers decides the
 * micro-batches and how operations are split.
 *
 * Nothing is invented: where no meter measures the workers (no RAPL, no
 * perf power PMU, no NVML), it prints "energy: not available (REASON)",
 * records nothing and exits 1. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "models/unet_model.h"
#include "models/unet_options.h"
#include "runtime/train/calibrate.h"
#include "runtime/train/options.h"
#include "runtime/train/random.h"
#include "runtime/starnn.h"

static const char *prog = "energy-calibrate";

/* "energy-calibrate: message" on stderr (runtime/train/options.h). */
#define fail(...) starnn_fail(prog, __VA_ARGS__)

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: tools/energy-calibrate [OPTIONS] [-- MODELS/UNET TRAIN OPTIONS]\n"
	        "Measures the joules per task of every distinct task (codelet and shapes) of one\n"
	        "UNet training step and records them in StarPU's energy models\n"
	        "(starnn_<op>_<dtype>_energy, in $STARPU_HOME/.starpu/sampling/codelets/45/),\n"
	        "which STARPU_SCHED=dmda / dmdas weigh with STARPU_SCHED_GAMMA. Each task runs on\n"
	        "one worker alone, on scratch buffers of its shapes, between two readings of the\n"
	        "machine's meters (RAPL or perf for CPU workers, NVML for GPUs). The model options\n"
	        "after -- are those of models/unet train (--size, --depth, --filters, --batch,\n"
	        "--micro-batches, --precision, --loss-scale, --optimizer, ...); run with the\n"
	        "STARPU_NCPU / STARPU_NCUDA of the training, which shape its tasks.\n"
	        "\n"
	        "  --workers cpu|cuda|all  which kinds of worker (default all: every kind present\n"
	        "                          that a meter measures; one worker per StarPU\n"
	        "                          architecture: one CPU core, each GPU)\n"
	        "  --seconds S             measured time per task and worker (default 1), split\n"
	        "                          into the windows, none shorter than 20 ms on a CPU\n"
	        "                          worker, 200 ms on a GPU (the meters' resolution)\n"
	        "  --repeat N              N tasks per window instead of a time\n"
	        "  --windows W             windows per round (default STARPU_CALIBRATE_MINIMUM\n"
	        "                          + 1 = 11: StarPU drops a new entry's first sample and\n"
	        "                          uses an entry from 10 on); up to 3 more rounds while\n"
	        "                          windows not recorded leave the entry short\n"
	        "  --idle-seconds S        measure the idle machine for S seconds first and subtract\n"
	        "                          that power from every window (default 2; 0: none, the\n"
	        "                          joules then include the idle power)\n"
	        "  --random-data           fill the scratch buffers with random values (magnitude\n"
	        "                          in [1/4, 1), random sign)\n"
	        "                          (default: the values the step left in its tensors, so\n"
	        "                          that data-dependent paths run as in training)\n"
	        "  -h, --help              this help\n"
	        "\n"
	        "Output: one line per (worker, codelet, footprint): tasks per step; tasks,\n"
	        "seconds and average watts of the windows recorded (not those over 3 times the\n"
	        "median length: interrupted; nor those whose joules per task are over 2 times\n"
	        "above or below the median: something else's power); joules per task (the mean\n"
	        "of StarPU's entry, after the idle subtraction) and its samples n; shapes. Then\n"
	        "the energy of one step per worker. Runs add to the models; STARPU_CALIBRATE=2\n"
	        "starts them afresh.\n"
	        "Exit: 0, 1 (no meter, or an error: nothing or only what was measured is\n"
	        "recorded), 2 (bad usage).\n");
}

struct calib_options {
	int cpu, cuda, explicit_kinds;
	double seconds, idle_seconds;
	int64_t repeat;
	int windows;
	int random_data;
};

static int parse_number(const char *opt, const char *arg, double lo, double hi, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(arg, &end);
	if (errno || end == arg || *end || !(x >= lo && x <= hi)) {
		fail("%s wants a number in [%g, %g], not '%s'", opt, lo, hi, arg);
		return -1;
	}
	*v = x;
	return 0;
}

/* Options up to "--" (or the end); *rest: the index of the first model
 * option. 0, 1 (--help) or -1. */
static int parse_calib(int argc, char **argv, struct calib_options *c, int *rest)
{
	enum { O_WORKERS = 256, O_SECONDS, O_REPEAT, O_WINDOWS, O_IDLE, O_RANDOM };
	static const struct option longopts[] = {
		{"workers", required_argument, 0, O_WORKERS}, {"seconds", required_argument, 0, O_SECONDS},
		{"repeat", required_argument, 0, O_REPEAT},   {"windows", required_argument, 0, O_WINDOWS},
		{"idle-seconds", required_argument, 0, O_IDLE}, {"random-data", no_argument, 0, O_RANDOM},
		{"help", no_argument, 0, 'h'},                {0, 0, 0, 0},
	};
	struct starnn_calib_opts d;
	starnn_calib_opts_init(&d);
	*c = (struct calib_options){.cpu = 1, .cuda = 1, .seconds = d.seconds, .idle_seconds = 2.0,
	                            .windows = d.windows};
	opterr = 0;
	optind = 1;
	int ch;
	double v;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case O_WORKERS:
			c->explicit_kinds = strcmp(optarg, "all") != 0;
			c->cpu = strcmp(optarg, "cpu") == 0 || strcmp(optarg, "all") == 0;
			c->cuda = strcmp(optarg, "cuda") == 0 || strcmp(optarg, "all") == 0;
			if (!c->cpu && !c->cuda) {
				fail("--workers is cpu, cuda or all, not '%s'", optarg);
				return -1;
			}
			break;
		case O_SECONDS:
			if (parse_number("--seconds", optarg, 1e-3, 1e5, &c->seconds) < 0)
				return -1;
			break;
		case O_REPEAT:
			if (parse_number("--repeat", optarg, 1, 1e9, &v) < 0)
				return -1;
			if (v != floor(v)) {
				fail("--repeat wants a whole number of tasks, not '%s'", optarg);
				return -1;
			}
			c->repeat = (int64_t)v;
			break;
		case O_WINDOWS:
			if (parse_number("--windows", optarg, 1, 10000, &v) < 0)
				return -1;
			if (v != floor(v)) {
				fail("--windows wants a whole number, not '%s'", optarg);
				return -1;
			}
			c->windows = (int)v;
			break;
		case O_IDLE:
			if (parse_number("--idle-seconds", optarg, 0, 3600, &c->idle_seconds) < 0)
				return -1;
			break;
		case O_RANDOM: c->random_data = 1; break;
		case 'h': usage(stdout); return 1;
		default:
			fail("unknown option '%s' (see --help; model options go after --)", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0) {
		fail("unexpected argument '%s' (model options go after --)", argv[optind]);
		return -1;
	}
	*rest = optind;
	return 0;
}

/* The model options, as models/unet train parses them. */
static int parse_model(int argc, char **argv, int rest, struct options *o)
{
	int n = argc - rest + 2;
	char **av = calloc((size_t)n + 1, sizeof *av);
	if (!av) {
		fail("out of memory");
		return -1;
	}
	av[0] = argv[0];
	av[1] = "train";
	for (int i = rest; i < argc; i++)
		av[i - rest + 2] = argv[i];
	int rc = parse_options(n, av, o);
	free(av);
	if (rc == PARSE_HELP)
		return -1; /* models/unet's usage is printed; nothing to calibrate */
	if (rc < 0)
		return -1;
	if (o->train.resume) {
		fail("--resume takes the precision from a checkpoint: give --precision (and --loss-scale) instead");
		return -1;
	}
	return 0;
}

static void sleep_s(double s)
{
	struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* ----------------------------------------------------------------- step */

/* One step as models/unet train submits it (staging copies of a batch,
 * the training step, its loss), then the evaluation forward a training run
 * ends with, under capture. The batch: random values of the data's range
 * (normalised VIL in [0, 1)). */
static int capture_step(unet *m, struct starnn_captured_task **tasks, int *ntasks)
{
	const struct unet_config *c = unet_get_config(m);
	size_t hw = (size_t)c->size * (size_t)c->size;
	size_t nx = (size_t)c->batch * (size_t)c->in_frames * hw, ny = (size_t)c->batch * (size_t)c->out_frames * hw;
	float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
	if (!x || !y) {
		free(x), free(y);
		return starnn_error(STARNN_ENOMEM, "out of memory for a batch");
	}
	uint64_t s = 42;
	for (size_t i = 0; i < nx; i++)
		x[i] = starnn_rng_uniform(&s, 0.0f, 1.0f);
	for (size_t i = 0; i < ny; i++)
		y[i] = starnn_rng_uniform(&s, 0.0f, 1.0f);
	int rc = starnn_capture_begin();
	if (rc == 0) {
		double loss;
		if ((rc = unet_stage_batch(m, x, y)) == 0 && (rc = unet_train_step(m, 1)) == 0)
			rc = unet_read_step_loss(m, 1, &loss);
		if (rc == 0 && (rc = starnn_tensor_write_f32(unet_input(m), x)) == 0 &&
		    (rc = starnn_tensor_write_f32(unet_target(m), y)) == 0 && (rc = unet_eval_step(m)) == 0)
			rc = starnn_wait();
		int rc2 = starnn_capture_end(tasks, ntasks);
		rc = rc ? rc : rc2;
		if (rc < 0 && rc2 == 0) {
			starnn_capture_free(*tasks, *ntasks);
			*tasks = NULL;
			*ntasks = 0;
		}
	}
	free(x), free(y);
	return rc;
}

/* --------------------------------------------------------------- workers */

struct target {
	int worker;
	char label[32];   /* cpu, cuda0, ... */
	char arch[64];    /* StarPU's name of its architecture */
	double idle_w;
	double step_j;    /* sum of joules per task x tasks per step */
	int recorded;     /* entries recorded */
	int missing;      /* entries with no window above idle */
};

/* The first worker of each StarPU architecture of the kinds asked: the
 * history models are per architecture (all CPU cores are one, each GPU
 * one), so one worker of each measures for all. */
static int pick_workers(const struct calib_options *c, struct target *t, int max)
{
	int n = 0;
	unsigned nw = starpu_worker_get_count();
	for (unsigned w = 0; w < nw && n < max; w++) {
		enum starpu_worker_archtype type = starpu_worker_get_type((int)w);
		if (!((type == STARPU_CPU_WORKER && c->cpu) || (type == STARPU_CUDA_WORKER && c->cuda)))
			continue;
		char arch[64];
		starpu_perfmodel_get_arch_name(starpu_worker_get_perf_archtype((int)w, STARPU_NMAX_SCHED_CTXS), arch,
		                               sizeof arch, 0);
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen |= strcmp(t[i].arch, arch) == 0;
		if (seen)
			continue;
		memset(&t[n], 0, sizeof t[n]);
		t[n].worker = (int)w;
		snprintf(t[n].arch, sizeof t[n].arch, "%s", arch);
		if (type == STARPU_CPU_WORKER)
			snprintf(t[n].label, sizeof t[n].label, "cpu");
		else
			snprintf(t[n].label, sizeof t[n].label, "cuda%d", starpu_worker_get_devid((int)w));
		n++;
	}
	return n;
}

static int can_run(const struct starpu_codelet *cl, int w)
{
	return starpu_worker_get_type(w) == STARPU_CPU_WORKER ? cl->cpu_funcs[0] != NULL : cl->cuda_funcs[0] != NULL;
}

/* Idle power of each target's domains over `seconds` with StarPU up and
 * nothing submitted (idle workers poll for tasks: that is idle here). */
static int measure_idle(starnn_energy_meter *meter, struct target *t, int n, double seconds)
{
	struct starnn_energy_reading a, b;
	char why[600];
	STARNN_CHECK(starnn_energy_read(meter, &a));
	sleep_s(seconds);
	STARNN_CHECK(starnn_energy_read(meter, &b));
	double dt = b.elapsed - a.elapsed;
	for (int i = 0; i < n; i++) {
		double ja, jb;
		int rc = starnn_calib_worker_joules(&a, t[i].worker, &ja, why, sizeof why);
		if (rc == 0)
			rc = starnn_calib_worker_joules(&b, t[i].worker, &jb, why, sizeof why);
		if (rc < 0)
			return starnn_error(rc, "energy: not available for %s: %s", t[i].label, why);
		t[i].idle_w = dt > 0 ? (jb - ja) / dt : 0;
		printf("idle: %s %.2f W measured over %.2f s (%s), subtracted from every window\n", t[i].label,
		       t[i].idle_w, dt, b.method);
	}
	fflush(stdout);
	return 0;
}

static void print_header(void)
{
	printf("%-6s %-22s %-8s %8s %10s %8s %8s %11s %4s  %s\n", "worker", "codelet", "footpr.", "per step", "tasks",
	       "seconds", "W", "J/task", "n", "shapes");
}

static int calibrate_all(const struct calib_options *c, starnn_energy_meter *meter, struct target *t, int nt,
                         const struct starnn_captured_task *tasks, int ntasks)
{
	struct starnn_calib_opts o;
	starnn_calib_opts_init(&o);
	o.seconds = c->seconds;
	o.repeat = c->repeat;
	o.windows = c->windows;
	o.from_tensors = !c->random_data;
	print_header();
	for (int i = 0; i < nt; i++) {
		o.idle_watts = t[i].idle_w;
		for (int k = 0; k < ntasks; k++) {
			const struct starnn_captured_task *tk = &tasks[k];
			char shape[512];
			starnn_captured_shape(tk, shape, sizeof shape);
			char note[160] = "";
			if (!can_run(tk->cl, t[i].worker)) {
				printf("%-6s %-22s %08x %8lld %10s %8s %8s %11s %4s  %s\n", t[i].label, tk->cl->name, tk->footprint,
				       (long long)tk->count, "-", "-", "-", "no impl.", "-", shape);
				continue;
			}
			struct starnn_calib_result r;
			STARNN_CHECK(starnn_calibrate_task(tk, t[i].worker, meter, &o, &r));
			/* the windows recorded; all of them when none was */
			int64_t ran = r.recorded ? r.rec_tasks : r.tasks;
			double secs = r.recorded ? r.rec_seconds : r.seconds, joules = r.recorded ? r.rec_joules : r.joules;
			double watts = secs > 0 ? joules / secs : NAN;
			if (r.stretched || r.strays)
				snprintf(note, sizeof note, " [not recorded: %d interrupted, %d off the median power]",
				         r.stretched, r.strays);
			if (r.recorded && r.samples < r.needed)
				snprintf(note + strlen(note), sizeof note - strlen(note),
				         " [StarPU uses an entry from %u samples on: calibrate again]", r.needed);
			if (r.recorded) {
				printf("%-6s %-22s %08x %8lld %10lld %8.3f %8.2f %11.4e %4u  %s%s\n", t[i].label, tk->cl->name,
				       tk->footprint, (long long)tk->count, (long long)ran, secs, watts, r.joules_per_task,
				       r.samples, shape, note);
				t[i].step_j += r.joules_per_task * (double)tk->count;
				t[i].recorded++;
			} else {
				printf("%-6s %-22s %08x %8lld %10lld %8.3f %8.2f %11s %4u  %s%s\n", t[i].label, tk->cl->name,
				       tk->footprint, (long long)tk->count, (long long)ran, secs, watts, "<= idle", r.samples,
				       shape, note);
				t[i].missing++;
			}
			fflush(stdout);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	starnn_blas_autoselect(argv); /* the BLAS kernels models/unet would use */
	struct calib_options c;
	int rest;
	int prc = parse_calib(argc, argv, &c, &rest);
	if (prc)
		return prc > 0 ? 0 : 2;
	struct options *o = malloc(sizeof *o);
	if (!o) {
		fail("out of memory");
		return 1;
	}
	if (parse_model(argc, argv, rest, o) < 0) {
		free(o);
		return 2;
	}

	/* Is anything measured at all? Asked before StarPU starts, so that a
	 * machine without meters gets its answer with nothing run nor
	 * written. */
	starnn_energy_meter *meter = NULL;
	struct starnn_energy_reading r;
	if (starnn_energy_start(&meter, NULL) < 0 || starnn_energy_read(meter, &r) < 0) {
		fail("%s", starnn_error_message());
		starnn_energy_stop(meter);
		free(o);
		return 1;
	}
	if (!r.available) {
		printf("energy: not available (%s)\n", r.reason);
		fail("no meter on this machine: nothing calibrated, no energy model written");
		starnn_energy_stop(meter);
		free(o);
		return 1;
	}

	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = 1;
	if (starnn_init(&cfg) < 0) {
		fail("%s", starnn_error_message());
		starnn_energy_stop(meter);
		free(o);
		return 1;
	}
	int rc = 0;
	unet *m = NULL;
	struct starnn_captured_task *tasks = NULL;
	int ntasks = 0;
	struct target t[STARPU_NMAXWORKERS];
	int nt = pick_workers(&c, t, STARPU_NMAXWORKERS);
	/* Drop the kinds no meter measures (an error when asked by name). */
	int kept = 0;
	for (int i = 0; i < nt; i++) {
		double j;
		char why[600];
		if (starnn_calib_worker_joules(&r, t[i].worker, &j, why, sizeof why) == 0) {
			t[kept++] = t[i];
			continue;
		}
		printf("energy: not available for %s workers (%s)\n", t[i].label, why);
		if (c.explicit_kinds)
			rc = -1;
	}
	nt = kept;
	if (rc == 0 && nt == 0) {
		fail("no worker of the kinds asked is measured: nothing calibrated, no energy model written");
		rc = -1;
	} else if (rc < 0) {
		fail("the workers asked (--workers) are not all measured: nothing calibrated, no energy model written");
	}

	if (rc == 0) {
		int unit = 1 << o->depth;
		int size = o->size ? o->size : o->synthetic_size ? o->synthetic_size : 128;
		/* models/unet's default: one micro-batch per worker, at most 8 */
		const struct starnn_train_opts *to = &o->train;
		int micro = to->micro ? to->micro : starnn_default_micro(to->batch);
		micro = micro > to->batch ? to->batch : micro;
		struct unet_config uc = {o->depth, o->filters,  o->in_frames,   o->out_frames,    size,      to->batch,
		                         micro,    to->compute, to->loss_scale, to->static_scale, to->batch, o->bn_local,
		                         o->convention, NULL};
		struct unet_optim opt;
		unet_optim_defaults(&opt);
		opt.kind = to->optimizer == STARNN_TOPT_SGD ? UNET_SGD : UNET_ADAM;
		opt.lr = to->lr;
		opt.warmup = to->warmup;
		opt.momentum = to->optimizer == STARNN_TOPT_SGD ? to->momentum : 0.0f;
		opt.weight_decay = to->weight_decay;
		if (size % unit != 0) {
			fail("the image size %d is not a multiple of 2^depth = %d: choose --size", size, unit);
			rc = -1;
		} else if ((rc = unet_create(&m, &uc, &opt, to->seed)) < 0 || (rc = capture_step(m, &tasks, &ntasks)) < 0) {
			fail("%s", starnn_error_message());
		} else {
			printf("%s: UNet depth %d, %d filters, %dx%d, batch %d in %d micro-batches, %s%s; %s\n", prog,
			       o->depth, o->filters, size, size, to->batch, micro,
			       to->compute == STARNN_FP32 ? "fp32" : to->compute == STARNN_FP16 ? "amp-fp16" : "amp-bf16",
			       to->loss_scale ? " with loss scaling" : "", starnn_runtime_summary());
			int64_t total = 0;
			for (int k = 0; k < ntasks; k++)
				total += tasks[k].count;
			printf("step: %lld tasks (training step and evaluation forward), %d distinct (codelet, footprint)\n",
			       (long long)total, ntasks);
			if (c.idle_seconds > 0) {
				rc = measure_idle(meter, t, nt, c.idle_seconds);
			} else {
				printf("idle: not measured (--idle-seconds 0): the joules include the idle power\n");
				fflush(stdout);
			}
			if (rc == 0)
				rc = calibrate_all(&c, meter, t, nt, tasks, ntasks);
			if (rc < 0)
				fail("%s", starnn_error_message());
		}
	}
	int recorded = 0;
	for (int i = 0; i < nt; i++) {
		if (rc == 0)
			printf("energy per step on %s: %.4g J (joules per task x tasks per step, %d entries%s)\n", t[i].label,
			       t[i].step_j, t[i].recorded, t[i].missing ? ", without those at or below idle" : "");
		recorded += t[i].recorded;
	}
	if (recorded) { /* after an error too: what was measured is kept */
		/* StarPU's path of a model file, its directory shown without the
		 * doubled slashes StarPU puts in it */
		char path[1024], dir[1024];
		starpu_perfmodel_get_model_path("starnn_energy", path, sizeof path);
		size_t n = 0;
		for (const char *p = path; *p && n + 1 < sizeof dir; p++)
			if (!(*p == '/' && n > 0 && dir[n - 1] == '/'))
				dir[n++] = *p;
		dir[n] = '\0';
		char *slash = strrchr(dir, '/');
		const char *host = strrchr(path, '.');
		if (slash)
			*slash = '\0';
		printf("energy models: %d entries recorded into %s (starnn_<op>_<dtype>_energy%s, written when StarPU "
		       "shuts down; starpu_perfmodel_display -s starnn_<op>_<dtype>_energy shows one)\n",
		       recorded, dir, host ? host : "");
	} else if (rc == 0) {
		fail("no task used more than the idle power: nothing recorded (longer --seconds, or --idle-seconds 0)");
		rc = -1;
	}
	starnn_capture_free(tasks, ntasks);
	unet_destroy(m);
	starnn_energy_stop(meter);
	int rc2 = starnn_shutdown();
	if (rc == 0 && rc2 < 0) {
		fail("%s", starnn_error_message());
		rc = rc2;
	}
	free(o);
	return rc < 0 ? 1 : 0;
}
