/* The trainer (see trainer.h): the program around a model, and the
 * pipelined training loop. The run's checkpoints are trainer_state.c's. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codelets/amp.h"
#include "runtime/core/init.h"
#include "runtime/core/launch.h"
#include "runtime/core/submit.h"
#include "runtime/train/dist.h"
#include "runtime/train/energy.h"
#include "runtime/train/trainer_internal.h"

const char *starnn_trainer_prog = "starnn";

double starnn_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define now starnn_now

/* ------------------------------------------------------------ signals */

/* The first SIGINT or SIGTERM (its number is kept here) asks for a stop at
 * the next step boundary: training finishes the steps in flight and saves
 * --checkpoint, other loops (a program's evaluation) stop without a
 * result. A second one leaves at once, as a user pressing Ctrl-C twice or a
 * supervisor insisting means it, without saving: a checkpoint write then
 * under way leaves its temporary file, which the next write of that
 * checkpoint removes. */
static volatile sig_atomic_t interrupted;
static char second_msg[128];
static size_t second_len;

static void on_signal(int sig)
{
	if (interrupted) {
		ssize_t k = write(STDERR_FILENO, second_msg, second_len);
		(void)k; /* nothing to do about a failed message here */
		_exit(128 + sig);
	}
	interrupted = sig;
}

int starnn_interrupted(void)
{
	return interrupted;
}

const char *starnn_signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

/* ------------------------------------------------------------ the program */

int starnn_program_start(const struct starnn_program *p, int argc, char **argv)
{
	starnn_trainer_prog = p->name;
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = p->quiet;
	cfg.config_hash = starnn_launch_hash_args(argc, argv);
	int rc = starnn_init(&cfg);
	if (rc < 0) {
		starnn_fail(p->name, "%s", starnn_error_message());
		return rc;
	}
	if (starnn_launch_size() > 1) {
		/* Rank 0 alone prints, logs and checkpoints; errors come from any rank. */
		if (p->announce)
			fprintf(stderr, "%s: %s\n", p->name, starnn_launch_summary());
		if (starnn_launch_rank() > 0 && !freopen("/dev/null", "w", stdout))
			starnn_fail(p->name, "rank %d: cannot silence stdout", starnn_launch_rank());
	}
	snprintf(second_msg, sizeof second_msg, "%s: second signal: exiting at once, without saving\n", p->name);
	second_len = strlen(second_msg);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	/* SA_RESTART: the other threads' system calls (HDF5 reads of a data
	 * loader, writes of a checkpoint) go on rather than fail with EINTR */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A file over the size limit (ulimit -f) then fails its write with
	 * EFBIG, reported like a full disk, instead of killing the run with a
	 * core dump and a temporary left behind. */
	signal(SIGXFSZ, SIG_IGN);
	return 0;
}

int starnn_program_end(const struct starnn_program *p, int rc)
{
	if (rc < 0 && rc != STARNN_TRAIN_USAGE && rc != STARNN_TRAIN_INTERRUPTED)
		starnn_fail(p->name, "%s", starnn_error_message());
	if (rc < 0 && rc != STARNN_TRAIN_INTERRUPTED)
		starnn_launch_abort(rc == STARNN_TRAIN_USAGE ? 2 : 1); /* under mpirun: the other ranks too */
	int rc2 = starnn_shutdown();
	if (rc == 0 && rc2 < 0) {
		starnn_fail(p->name, "%s", starnn_error_message());
		rc = rc2;
	}
	if (rc == STARNN_TRAIN_INTERRUPTED) {
		starnn_fail(p->name, "stopped by %s: exit status %d", starnn_signal_name(interrupted), 128 + interrupted);
		return 128 + interrupted;
	}
	return rc == STARNN_TRAIN_USAGE ? 2 : rc < 0 ? 1 : 0;
}

int starnn_default_micro(int batch)
{
	int workers = starnn_ncpu_workers() + starnn_ndevice_workers(); /* CPU, CUDA and OpenCL */
	int m = workers < 1 ? 1 : workers > 8 ? 8 : workers;
	return m > batch ? batch : m;
}

/* ------------------------------------------------------------ accessors */

const struct starnn_train_info *starnn_trainer_info(const starnn_trainer *tr)
{
	return &tr->info;
}

FILE *starnn_trainer_log(starnn_trainer *tr)
{
	return tr->log;
}

void starnn_trainer_end_line(starnn_trainer *tr)
{
	if (tr->tty && tr->bar) {
		printf("\n");
		tr->bar = 0;
	}
}

double starnn_trainer_elapsed(const starnn_trainer *tr)
{
	return now() - tr->t_start;
}

static const char *wire_weights_name(int wire)
{
	return wire == STARNN_WIRE_ADAPTIVE ? "awp" : wire < 0 ? "none" : starnn_wire_name((starnn_wire_format)wire);
}

void starnn_trainer_describe_shard(const starnn_trainer *tr, FILE *out)
{
	const struct starnn_train_opts *o = tr->o;
	if (!o->shard)
		return;
	char formats[160];
	starnn_dist_weights_summary(formats, sizeof formats);
	fprintf(out, "optimizer sharded over %d rank%s (each parameter updated by its owner), weights sent as %s%s%s%s\n",
	        tr->info.replicas, tr->info.replicas > 1 ? "s" : "", wire_weights_name(o->wire_weights),
	        *formats ? " (now: " : "", formats, *formats ? ")" : "");
}

/* ------------------------------------------------------------ progress */

static void format_time(double s, char *buf, size_t n)
{
	if (!(s >= 0) || s > 1e8)
		snprintf(buf, n, "?");
	else if (s < 60)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

static void progress_bar(const struct starnn_step_report *r, double sps)
{
	char e[32];
	format_time(r->eta, e, sizeof e);
	int width = 30, fill = r->total > 0 ? (int)((double)width * (double)r->step / (double)r->total) : width;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
	bar[width] = 0;
	printf("\r[%s] step %lld/%lld  epoch %lld  loss %.5f  %.1f samples/s  ETA %s   ", bar, (long long)r->step,
	       (long long)r->total, (long long)r->epoch, r->loss, sps, e);
	fflush(stdout);
}

static void step_line(const struct starnn_step_report *r)
{
	char e[32];
	format_time(r->eta, e, sizeof e);
	printf("step %lld/%lld  epoch %lld  loss %.6f  %.2f samples/s  elapsed %.1fs  ETA %s\n", (long long)r->step,
	       (long long)r->total, (long long)r->epoch, r->loss, r->window_sps, r->elapsed, e);
	fflush(stdout);
}

/* ------------------------------------------------- the inject test hook
 * (a model's STARNN_*_INJECT_INF_STEP): the parameters and the optimizer
 * state (not a model's running statistics: the skipped step's forward
 * still updates them, as in PyTorch) before the step, compared bit for bit
 * after it. */
struct snapshot {
	float *v;
	size_t n;
	float scale;
};

static int read_params(starnn_params *ps, float **out, size_t *n_out)
{
	size_t total = 0;
	for (int i = 0; i < starnn_params_count(ps); i++) {
		starnn_param *p = starnn_params_at(ps, i);
		starnn_tensor *t[3] = {p->master, p->state[0], p->state[1]};
		for (int k = 0; k < 3; k++)
			total += t[k] ? starnn_tensor_numel(t[k]) : 0;
	}
	float *v = malloc(sizeof *v * (total ? total : 1));
	if (!v)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	size_t off = 0;
	for (int i = 0; i < starnn_params_count(ps); i++) {
		starnn_param *p = starnn_params_at(ps, i);
		starnn_tensor *t[3] = {p->master, p->state[0], p->state[1]};
		for (int k = 0; k < 3; k++) {
			if (!t[k])
				continue;
			int rc = starnn_tensor_read_f32(t[k], v + off);
			if (rc < 0) {
				free(v);
				return rc;
			}
			off += starnn_tensor_numel(t[k]);
		}
	}
	*out = v;
	*n_out = total;
	return 0;
}

static int inject_snapshot(starnn_params *ps, struct snapshot *s)
{
	struct starnn_amp_state st;
	STARNN_CHECK(starnn_params_get_amp_state(ps, &st));
	s->scale = st.scale;
	return read_params(ps, &s->v, &s->n);
}

static int inject_check(starnn_params *ps, const struct snapshot *s, int64_t step)
{
	float *v;
	size_t n;
	struct starnn_amp_state st;
	STARNN_CHECK(starnn_params_get_amp_state(ps, &st));
	STARNN_CHECK(read_params(ps, &v, &n));
	int same = n == s->n && memcmp(v, s->v, n * sizeof *v) == 0;
	free(v);
	int dynamic = starnn_params_get_config(ps)->loss_scaling == STARNN_LOSS_SCALE_DYNAMIC;
	int halved = dynamic ? st.scale == fmaxf(s->scale * 0.5f, STARNN_AMP_MIN_SCALE) : st.scale == s->scale;
	printf("inject: Inf in a gradient at step %lld: weights and optimizer state %s, scale %g -> %g\n",
	       (long long)step, same ? "unchanged bit for bit" : "CHANGED", (double)s->scale, (double)st.scale);
	if (!same || !halved)
		return starnn_error(STARNN_ENUM, "the step with an Inf gradient was not skipped as it should (%s%s)",
		                    same ? "" : "weights changed", halved ? "" : " scale not halved");
	return 0;
}

static int inject_final(starnn_params *ps)
{
	float *v;
	size_t n, bad = 0;
	STARNN_CHECK(read_params(ps, &v, &n));
	for (size_t i = 0; i < n; i++)
		bad += !isfinite(v[i]);
	free(v);
	printf("inject: %zu of %zu final weights and optimizer values non-finite\n", bad, n);
	return bad ? starnn_error(STARNN_ENUM, "%zu non-finite weights after the skipped step", bad) : 0;
}

/* ------------------------------------------------------------ the run */

/* The model for the options: this replica's share of the batch, the
 * micro-batches, the exchange's settings; then its parameter set joins
 * the distribution, and a checkpoint's tensors come in (--resume, --init),
 * rank 0's on every replica. */
static int make_model(starnn_trainer *tr, ckpt_file *ck)
{
	struct starnn_train_opts *o = tr->o;
	const char *prog = o->prog;
	int replicas = starnn_launch_size();
	/* Under mpirun, --batch is the global batch; this replica trains on
	 * its share, samples [first, first + local) of every batch. */
	int64_t first = 0, local = o->batch;
	starnn_dist_share(o->batch, starnn_launch_rank(), replicas, &first, &local);
	/* Decided alike on every rank: from the smallest share. */
	int least = o->batch / replicas;
	if (least < 1) {
		starnn_fail(prog, "--batch %d is the global batch: it cannot be split over %d ranks (at least one sample per "
		                  "rank)",
		            o->batch, replicas);
		return STARNN_TRAIN_USAGE;
	}
	if (!o->micro)
		o->micro = starnn_default_micro(least);
	if (o->micro > least) {
		if (replicas > 1)
			starnn_fail(prog, "--micro-batches (%d) cannot exceed the smallest share of the batch (%d of %d)",
			            o->micro, least, o->batch);
		else
			starnn_fail(prog, "--micro-batches (%d) cannot exceed --batch (%d)", o->micro, o->batch);
		return STARNN_TRAIN_USAGE;
	}
	if (o->master_host && replicas > 1) {
		starnn_fail(prog, "--master host runs on one rank: the edge between ranks with the masters on each host is "
		                  "not built (docs/device-edge.md); %d ranks here",
		            replicas);
		return STARNN_TRAIN_USAGE;
	}
	tr->info.replicas = replicas, tr->info.batch = (int)local, tr->info.micro = o->micro;
	/* (with --master host, --wire-weights is the device edge's) */
	struct starnn_dist_weights w = {.shard = o->shard, .wire = o->master_host ? STARNN_DIST_WIRE_NONE : o->wire_weights,
	                                .awp = o->awp};
	STARNN_CHECK(starnn_dist_set_weights(&w));
	struct starnn_model_config c = {
		.batch = (int)local,
		.global_batch = o->batch,
		.first = (int)first,
		.micro = o->micro,
		.params = {.optim = {.kind = o->optimizer == STARNN_TOPT_SGD ? STARNN_OPTIM_SGD : STARNN_OPTIM_ADAM,
		                     .lr = o->lr,
		                     .warmup = o->warmup,
		                     .momentum = o->optimizer == STARNN_TOPT_SGD ? o->momentum : 0.0f,
		                     .beta1 = 0.9f,
		                     .beta2 = 0.999f,
		                     .eps = 1e-8f,
		                     .weight_decay = o->weight_decay},
		           .compute = (starnn_dtype)o->compute,
		           .loss_scaling = (enum starnn_loss_scaling)o->loss_scale,
		           .static_scale = o->static_scale,
		           .master_host = o->master_host,
		           .wire_weights = o->wire_weights,
		           .wire_grads = o->wire_grads,
		           .awp = o->awp},
		.seed = o->seed,
	};
	STARNN_CHECK(tr->ops->create(tr->self, &c, &tr->ps));
	starnn_params *ps = tr->ps;
	starnn_params_set_inject_inf_step(ps, o->inject_inf_step);
	/* Ranks: the gradients summed over them (or reduced to each
	 * parameter's owner: --shard-optimizer) */
	if (starnn_launch_mpi())
		starnn_params_set_grad_hook(ps, starnn_dist_grad_hook, NULL);
	STARNN_CHECK(starnn_dist_attach(ps));
	if (ck)
		STARNN_CHECK(starnn_trainer_load(tr, ck, o->resume != NULL));
	return starnn_trainer_broadcast(tr, ck && o->resume);
}

/* Whether the loop must finish step `step` before submitting the next one:
 * a checkpoint or an evaluation follows it, or the inject test hook checks
 * the state it leaves. */
static int barrier_after(const starnn_trainer *tr, int64_t step)
{
	const struct starnn_train_opts *o = tr->o;
	if (step >= tr->info.total)
		return 1;
	if (o->checkpoint && o->checkpoint_every && step % o->checkpoint_every == 0)
		return 1;
	if (tr->evaluating && o->eval_every > 0 && step % o->eval_every == 0)
		return 1;
	/* with devices: the first step alone, so that the bytes it moves
	 * (the weights' first upload) are counted apart */
	if (tr->devices && step == tr->info.first_step + 1)
		return 1;
	return o->inject_inf_step == step;
}

/* --master host: where the masters are and what crosses to the devices. */
static void describe_edge(const starnn_trainer *tr, FILE *out)
{
	const struct starnn_train_opts *o = tr->o;
	struct starnn_edge_stats st;
	starnn_params_edge_stats(tr->ps, &st);
	if (!o->master_host || st.ndevices == 0)
		return;
	fprintf(out, "master: host (fp32 masters, optimizer on CPU workers); each step the weights go as %s to",
	        wire_weights_name(o->wire_weights));
	for (int d = 0; d < st.ndevices; d++) {
		char name[32];
		starnn_memory_node_name(st.node[d], name, sizeof name);
		fprintf(out, "%s node %d (%s)", d ? "," : "", st.node[d], name);
	}
	fprintf(out, ", the gradients come back as %s; micro-batch p on device p mod %d%s\n",
	        o->wire_grads < 0 ? "fp32" : starnn_wire_name((starnn_wire_format)o->wire_grads), st.ndevices,
	        st.node[0] == STARPU_MAIN_RAM ? " (no device: main memory)" : "");
}

/* Prepares the run up to its first step: checkpoint, data, model, total
 * steps, evaluation data, log, the lines saying what runs. */
static int prepare(starnn_trainer *tr)
{
	struct starnn_train_opts *o = tr->o;
	const struct starnn_model_ops *ops = tr->ops;
	ckpt_file *ck = NULL;
	const char *ckfile = o->resume ? o->resume : o->init;
	int rc = 0;
	if (ckfile) {
		rc = ckpt_open(&ck, ckfile);
		if (rc == 0 && ops->read_checkpoint)
			rc = ops->read_checkpoint(tr->self, ck, ckfile, o->resume != NULL);
		if (rc == 0 && o->resume)
			rc = starnn_trainer_read_state(tr, ck, ckfile);
		if (rc == 0 && o->resume && starnn_train_opts_finish_loss_scale(o) < 0)
			rc = STARNN_TRAIN_USAGE;
	}
	int64_t samples = 0;
	const char *what = "";
	if (rc == 0)
		rc = ops->open_data(tr->self, &samples, &what);
	if (rc == 0)
		rc = make_model(tr, ck);
	if (rc == 0 && o->resume)
		rc = starnn_trainer_resume_precision(tr, o->resume);
	if (rc == 0 && o->awp_state) /* (--master host: the device edge's) */
		rc = o->master_host ? starnn_params_edge_set_awp_state(tr->ps, o->awp_state)
		                    : starnn_dist_weights_set_state(o->awp_state);
	if (rc == 0)
		rc = starnn_params_edge_begin(tr->ps);
	if (rc == 0) /* --shard-optimizer: the weights in their wire format */
		rc = starnn_dist_weights_begin(tr->ps, tr->info.step);
	if (ck)
		ckpt_close(ck);
	STARNN_CHECK(rc);
	if (samples < o->batch)
		return starnn_error(STARNN_EINVAL, "%s has %lld training samples, fewer than the batch (%d)", what,
		                    (long long)samples, o->batch);
	int64_t bpe = samples / o->batch;
	tr->info.steps_per_epoch = bpe;
	tr->info.total = o->steps >= 0 ? o->steps : (int64_t)o->epochs * bpe;
	if (o->resume && tr->info.step > tr->info.total)
		return starnn_error(STARNN_EINVAL, "%s is at step %lld, beyond the %lld steps asked (--steps / --epochs)",
		                    o->resume, (long long)tr->info.step, (long long)tr->info.total);
	/* Evaluation data, when there is training to evaluate. */
	if (ops->open_eval && o->eval_every != 0 && tr->info.step < tr->info.total) {
		rc = ops->open_eval(tr->self);
		STARNN_CHECK(rc);
		tr->evaluating = rc > 0;
	}
	if (o->log_json && starnn_launch_rank() == 0) {
		tr->log = fopen(o->log_json, o->resume ? "a" : "w");
		if (!tr->log)
			return starnn_error(STARNN_EIO, "cannot write the log %s: %s", o->log_json, strerror(errno));
	}
	if (tr->every_step) /* --wire-weights: the formats at the start */
		starnn_dist_weights_log(tr->log, tr->info.step);
	/* mpirun hands its ranks a pseudo-terminal: no bar unless asked. */
	tr->tty = o->progress >= 0 ? o->progress : isatty(STDOUT_FILENO) && tr->info.replicas == 1;
	if (o->quiet)
		tr->tty = 0;
	if (!o->quiet) {
		if (ops->describe)
			ops->describe(tr->self, tr, stdout);
		describe_edge(tr, stdout);
		struct starnn_amp_state s;
		if (o->resume && o->loss_scale && (rc = starnn_params_get_amp_state(tr->ps, &s)) == 0)
			printf("loss scale resumed: %g, %lld clean steps toward doubling, %lld skipped, %lld applied\n",
			       (double)s.scale, (long long)s.good_steps, (long long)s.skipped_steps,
			       (long long)s.applied_steps);
		fflush(stdout);
		STARNN_CHECK(rc);
	}
	if (tr->info.step < tr->info.total && ops->start)
		STARNN_CHECK(ops->start(tr->self, tr->info.step));
	return 0;
}

/* The lines and records of step s once its loss is known (or not: a model
 * that reads it only for its lines). */
struct window {
	double t_last, t_window, t_drawn;
	int64_t steps;
};

static void report(starnn_trainer *tr, int64_t s, int64_t epoch, int have_loss, struct window *w)
{
	const struct starnn_train_opts *o = tr->o;
	double t = now(), dt = t - w->t_last;
	w->t_last = t;
	w->steps++;
	if (tr->log && tr->every_step) {
		fprintf(tr->log,
		        "{\"step\":%lld,\"epoch\":%lld,\"loss\":%.9g,\"lr\":%.7g,\"samples_per_s\":%.4g,"
		        "\"elapsed\":%.3f}\n",
		        (long long)s, (long long)epoch + 1, tr->info.loss, (double)starnn_params_lr(tr->ps, s),
		        dt > 0 ? o->batch / dt : 0.0, t - tr->t_start);
		starnn_dist_weights_log(tr->log, s); /* --wire-weights awp: the formats that changed */
		fflush(tr->log);
	}
	double sps = (double)(s - tr->info.first_step) * o->batch / (t - tr->t_start);
	struct starnn_step_report r = {
		.step = s,
		.total = tr->info.total,
		.epoch = epoch + 1,
		.loss = tr->info.loss,
		.window_sps = w->steps * o->batch / (t - w->t_window),
		.elapsed = t - tr->t_start,
		.eta = sps > 0 ? (double)(tr->info.total - s) * o->batch / sps : NAN,
	};
	if (tr->tty && have_loss && (t - w->t_drawn >= 0.1 || s == tr->info.total)) { /* at most 10 redraws a second */
		progress_bar(&r, sps);
		tr->bar = 1;
		w->t_drawn = t;
	} else if (!o->quiet && have_loss && (s % o->log_every == 0 || s == tr->info.total)) {
		if (tr->ops->report_step)
			tr->ops->report_step(tr->self, &r);
		else
			step_line(&r);
		w->t_window = t;
		w->steps = 0;
	}
}

/* The pipelined loop: step k+1 is submitted (its batch staged, then its
 * graph) before step k's loss is read, so the host never drains the graph
 * between steps: step k+1's tasks are queued while step k runs, and each
 * starts as soon as its data is ready (its first operation after step k's
 * update of the first layer) instead of after the host has woken, copied
 * the batch and submitted. At most two steps are in flight. Checkpoints,
 * evaluations and the inject check need the model as step k left it: after
 * such a step nothing more is submitted until it is finished
 * (barrier_after). An interruption stops submitting; the steps in flight
 * are finished and logged. *saved_step: the step --checkpoint holds, once
 * written here. */
static int loop(starnn_trainer *tr, int64_t *last_epoch, int64_t *saved_step)
{
	const struct starnn_model_ops *ops = tr->ops;
	const struct starnn_train_opts *o = tr->o;
	struct window w = {tr->t_start, tr->t_start, 0, 0};
	struct {
		int64_t step, epoch;
	} q[2]; /* submitted, not finished: oldest first */
	int nq = 0, rc = 0;
	struct snapshot snap = {NULL, 0, 0};
	const int64_t total = tr->info.total;
	while (rc == 0) {
		int64_t next = tr->info.step + nq + 1;
		int submit = next <= total && !interrupted && nq < 2 && !(nq > 0 && barrier_after(tr, q[nq - 1].step));
		if (submit) {
			int64_t epoch = 0;
			rc = ops->stage(tr->self, next, &epoch);
			/* the state before the step: nothing after step next - 1 is
			 * submitted yet */
			if (rc == 0 && o->inject_inf_step == next)
				rc = inject_snapshot(tr->ps, &snap);
			if (rc == 0)
				rc = ops->submit(tr->self, next);
			if (rc < 0)
				break;
			q[nq].step = next, q[nq].epoch = epoch;
			nq++;
		}
		if (nq == 0)
			break;
		if (submit && nq < 2)
			continue; /* submit the next step before finishing this one */
		/* Finish the oldest step in flight. */
		int64_t s = q[0].step, epoch = q[0].epoch;
		if (--nq > 0)
			q[0] = q[1];
		int have_loss = tr->every_step || s % o->log_every == 0 || s == total;
		if (have_loss) {
			rc = ops->loss(tr->self, s, &tr->info.loss);
			if (rc == STARNN_ENUM) {
				starnn_error(STARNN_ENUM, "step %lld: the loss is %g (diverged: lower --lr or add --warmup)",
				             (long long)s, tr->info.loss);
				break;
			}
		}
		if (rc == 0 && o->inject_inf_step == s)
			rc = inject_check(tr->ps, &snap, s);
		if (rc < 0)
			break;
		tr->info.step = s;
		if (tr->devices && s == tr->info.first_step + 1 && s < total) {
			/* nothing of step s + 1 is submitted yet (barrier_after) */
			rc = starnn_wait();
			if (rc < 0)
				break;
			starnn_transfers_read(&tr->moved[1]);
			tr->moved_after = s;
			starnn_params_edge_stats(tr->ps, &tr->edge_at[1]);
		}
		tr->epoch = s / tr->info.steps_per_epoch; /* epochs completed */
		starnn_memory_sample();
		*last_epoch = epoch;
		report(tr, s, epoch, have_loss, &w);
		/* nq == 0 here whenever barrier_after(s) holds */
		if (o->checkpoint && o->checkpoint_every && s % o->checkpoint_every == 0 && s < total) {
			rc = starnn_trainer_write(tr, o->checkpoint);
			if (rc < 0)
				break;
			*saved_step = s;
		}
		if (tr->evaluating && o->eval_every > 0 && s % o->eval_every == 0 && s < total) {
			rc = ops->evaluate(tr->self, tr, s, epoch);
			if (rc < 0)
				break;
			w.t_last = now(); /* the evaluation is not a step's time */
		}
	}
	free(snap.v);
	return rc;
}

/* " 1.23 MiB", " 5.4 KiB", " 12 B" */
static void print_bytes(FILE *out, double b)
{
	if (b >= 1024.0 * 1024.0)
		fprintf(out, " %.2f MiB", b / (1024.0 * 1024.0));
	else if (b >= 1024.0)
		fprintf(out, " %.1f KiB", b / 1024.0);
	else
		fprintf(out, " %.0f B", b);
}

/* Runs with device workers: the bytes StarPU moved between each pair of
 * memory nodes per step, on stdout (out; NULL: none) and as a log record.
 * Steady state: the mean over the steps after the first, which moves the
 * weights to the devices for the first time; the first step apart. With
 * one step, that step. */
static void transfer_report(const starnn_trainer *tr, FILE *out, FILE *json)
{
	const int64_t steps = tr->info.step - tr->info.first_step;
	if (!tr->moved || steps < 1 || starnn_launch_rank() != 0)
		return;
	const struct starnn_transfers *t0 = &tr->moved[0], *t1 = &tr->moved[1], *tn = &tr->moved[2];
	const int split = tr->moved_after > 0; /* first step apart from the rest */
	const int64_t later = split ? steps - 1 : steps;
	const struct starnn_transfers *mid = split ? t1 : t0;
	const int nodes = tn->nodes;
	char names[STARNN_MAX_MEMORY_NODES][32];
	for (int n = 0; n < nodes; n++)
		starnn_memory_node_name(n, names[n], sizeof names[n]);
	if (out) {
		if (split && later == 1)
			fprintf(out, "transfers per step (step %lld):", (long long)tr->info.step);
		else if (split)
			fprintf(out, "transfers per step (mean of steps %lld-%lld):", (long long)tr->moved_after + 1,
			        (long long)tr->info.step);
		else
			fprintf(out, "transfers per step (mean of %lld step(s)):", (long long)steps);
		for (int pass = 0; pass < 1 + split; pass++) {
			const struct starnn_transfers *a = pass ? t0 : mid, *b = pass ? t1 : tn;
			const double div = pass ? 1.0 : (double)later;
			int named[STARNN_MAX_MEMORY_NODES] = {0}, any = 0;
			if (pass)
				fprintf(out, "; step %lld:", (long long)tr->moved_after);
			for (int s = 0; s < nodes; s++)
				for (int d = 0; d < nodes; d++) {
					if (tn->count[s][d] == t0->count[s][d]) /* nothing moved on this bus in the run */
						continue;
					fprintf(out, "%s node %d", any ? "," : "", s);
					if (!named[s]++)
						fprintf(out, " (%s)", names[s]);
					fprintf(out, " -> node %d", d);
					if (!named[d]++)
						fprintf(out, " (%s)", names[d]);
					print_bytes(out, (double)(b->bytes[s][d] - a->bytes[s][d]) / div);
					any = 1;
				}
			if (!any)
				fprintf(out, " none");
		}
		fprintf(out, "\n");
	}
	if (json) {
		fprintf(json, "{\"transfers\":{\"steps\":%lld,\"first_step_apart\":%s,\"mean_over_steps\":%lld,\"buses\":[",
		        (long long)steps, split ? "true" : "false", (long long)later);
		int any = 0;
		for (int s = 0; s < nodes; s++)
			for (int d = 0; d < nodes; d++) {
				if (tn->count[s][d] == t0->count[s][d])
					continue;
				long long all = tn->bytes[s][d] - t0->bytes[s][d], rest = tn->bytes[s][d] - mid->bytes[s][d];
				fprintf(json,
				        "%s{\"src\":%d,\"src_name\":\"%s\",\"dst\":%d,\"dst_name\":\"%s\",\"bytes\":%lld,"
				        "\"transfers\":%lld,\"first_step_bytes\":%lld,\"bytes_per_step\":%.1f,"
				        "\"since_start_bytes\":%lld,\"since_start_transfers\":%lld}",
				        any ? "," : "", s, names[s], d, names[d], all, tn->count[s][d] - t0->count[s][d],
				        split ? t1->bytes[s][d] - t0->bytes[s][d] : all, (double)rest / (double)later,
				        tn->bytes[s][d], tn->count[s][d]);
				any = 1;
			}
		fprintf(json, "]}}\n");
	}
}

/* --master host: the bytes that crossed the host <-> device edge per step
 * (the weights to each device, the gradient slices back), as sent and as
 * fp32, on stdout (out; NULL: none) and as a log record; the steady state
 * over the same steps as the transfers line (after the first step when it
 * was counted apart), the first step apart. */
static void edge_report(const starnn_trainer *tr, FILE *out, FILE *json)
{
	const struct starnn_edge_stats *e0 = &tr->edge_at[0], *e1 = &tr->edge_at[1], *en = &tr->edge_at[2];
	const int64_t steps = tr->info.step - tr->info.first_step;
	if (en->ndevices == 0 || steps < 1 || starnn_launch_rank() != 0)
		return;
	const int split = tr->moved_after > 0;
	const int64_t later = split ? steps - 1 : steps;
	const struct starnn_edge_stats *mid = split ? e1 : e0;
	const struct starnn_train_opts *o = tr->o;
	char formats[128], grads[32];
	starnn_params_edge_formats(tr->ps, formats, sizeof formats);
	snprintf(grads, sizeof grads, "%s",
	         o->wire_grads < 0 ? "fp32" : starnn_wire_name((starnn_wire_format)o->wire_grads));
	const double n = (double)later;
	if (out) {
		if (split)
			fprintf(out, "edge per step (mean of steps %lld-%lld), weights as %s, gradients as %s:",
			        (long long)tr->moved_after + 1, (long long)tr->info.step, formats, grads);
		else
			fprintf(out, "edge per step (mean of %lld step(s)), weights as %s, gradients as %s:", (long long)steps,
			        formats, grads);
		for (int d = 0; d < en->ndevices; d++) {
			char name[32];
			starnn_memory_node_name(en->node[d], name, sizeof name);
			fprintf(out, "%s host -> node %d (%s)", d ? ";" : "", en->node[d], name);
			print_bytes(out, (double)(en->down[d] - mid->down[d]) / n);
			fprintf(out, " (fp32");
			print_bytes(out, (double)(en->down_raw[d] - mid->down_raw[d]) / n);
			fprintf(out, "), back");
			print_bytes(out, (double)(en->up[d] - mid->up[d]) / n);
			fprintf(out, " (fp32");
			print_bytes(out, (double)(en->up_raw[d] - mid->up_raw[d]) / n);
			fprintf(out, ")");
		}
		if (en->ndevices == 1 && en->node[0] == STARPU_MAIN_RAM)
			fprintf(out, " (no device: the same tasks within main memory)");
		fprintf(out, "\n");
	}
	if (json) {
		fprintf(json,
		        "{\"edge\":{\"steps\":%lld,\"first_step_apart\":%s,\"mean_over_steps\":%lld,\"weights\":\"%s\","
		        "\"gradients\":\"%s\",\"devices\":[",
		        (long long)steps, split ? "true" : "false", (long long)later, formats, grads);
		for (int d = 0; d < en->ndevices; d++) {
			char name[32];
			starnn_memory_node_name(en->node[d], name, sizeof name);
			/* the first step: counted apart, or (not) the mean */
			unsigned long long first_down, first_up;
			if (split)
				first_down = e1->down[d] - e0->down[d], first_up = e1->up[d] - e0->up[d];
			else
				first_down = (en->down[d] - e0->down[d]) / (uint64_t)steps,
				first_up = (en->up[d] - e0->up[d]) / (uint64_t)steps;
			fprintf(json,
			        "%s{\"node\":%d,\"name\":\"%s\",\"down_bytes\":%llu,\"down_raw_bytes\":%llu,\"down_messages\":%llu,"
			        "\"up_bytes\":%llu,\"up_raw_bytes\":%llu,\"up_messages\":%llu,\"first_step_down_bytes\":%llu,"
			        "\"first_step_up_bytes\":%llu,\"down_bytes_per_step\":%.1f,\"down_raw_bytes_per_step\":%.1f,"
			        "\"up_bytes_per_step\":%.1f,\"up_raw_bytes_per_step\":%.1f}",
			        d ? "," : "", en->node[d], name, (unsigned long long)(en->down[d] - e0->down[d]),
			        (unsigned long long)(en->down_raw[d] - e0->down_raw[d]),
			        (unsigned long long)(en->down_messages[d] - e0->down_messages[d]),
			        (unsigned long long)(en->up[d] - e0->up[d]), (unsigned long long)(en->up_raw[d] - e0->up_raw[d]),
			        (unsigned long long)(en->up_messages[d] - e0->up_messages[d]), first_down, first_up,
			        (double)(en->down[d] - mid->down[d]) / n, (double)(en->down_raw[d] - mid->down_raw[d]) / n,
			        (double)(en->up[d] - mid->up[d]) / n, (double)(en->up_raw[d] - mid->up_raw[d]) / n);
		}
		fprintf(json, "]}}\n");
	}
}

/* After the loop: the interruption, the last checkpoint, the model's
 * lines, the memory, exchange and energy figures, the final evaluation,
 * the summary record. */
static int conclude(starnn_trainer *tr, starnn_energy_meter *meter, int64_t last_epoch, int64_t saved_step)
{
	const struct starnn_train_opts *o = tr->o;
	const char *prog = o->prog;
	const int64_t step = tr->info.step, first = tr->info.first_step;
	const int reports = step > first || (tr->ops->flags & STARNN_MODEL_REPORTS_WHEN_QUIET);
	const int loud = !o->quiet || (tr->ops->flags & STARNN_MODEL_REPORTS_WHEN_QUIET);
	int rc = 0;
	if (interrupted) {
		const char *what = !o->checkpoint ? "no --checkpoint to save"
		                   : saved_step == step ? "checkpoint already saved in"
		                                        : "saving the checkpoint";
		fprintf(stderr, "%s: interrupted at step %lld (%s): %s%s%s\n", prog, (long long)step,
		        starnn_signal_name(interrupted), what, o->checkpoint ? " " : "", o->checkpoint ? o->checkpoint : "");
	}
	/* (after a signal during the checkpoint of this very step, that one
	 * holds it already) */
	if (o->checkpoint && saved_step != step)
		STARNN_CHECK(starnn_trainer_write(tr, o->checkpoint));
	if (tr->ops->finish)
		STARNN_CHECK(tr->ops->finish(tr->self, tr));
	if (o->inject_inf_step && o->inject_inf_step <= step && o->inject_inf_step > first)
		STARNN_CHECK(inject_final(tr->ps));
	STARNN_CHECK(starnn_wait());
	if (reports)
		starnn_memory_report(stdout);
	if (reports)
		STARNN_CHECK(starnn_dist_report(loud ? stdout : NULL, tr->log, step - first));
	if (reports)
		transfer_report(tr, loud ? stdout : NULL, tr->log);
	if (reports)
		edge_report(tr, loud ? stdout : NULL, tr->log);
	double epochs_done = (double)(step - first) / (double)tr->info.steps_per_epoch;
	int64_t samples_done = (step - first) * o->batch;
	struct starnn_energy_reading energy;
	int have_energy = 0;
	if (reports) {
		STARNN_CHECK(starnn_energy_read_all(meter, &energy));
		have_energy = 1;
		if (loud)
			starnn_energy_print(stdout, &energy, epochs_done, (double)samples_done);
	}
	if (o->checkpoint && !o->quiet)
		printf("checkpoint: %s (step %lld)\n", o->checkpoint, (long long)step);
	if (tr->evaluating && !interrupted && o->eval_every != 0)
		STARNN_CHECK(tr->ops->evaluate(tr->self, tr, step, last_epoch));
	if (have_energy && tr->log) /* the last line of the log */
		rc = starnn_energy_summary_json(tr->log, step - first, epochs_done, samples_done, &energy);
	return rc;
}

int starnn_trainer_run(const struct starnn_model_ops *ops, void *self, struct starnn_train_opts *o)
{
	starnn_trainer tr = {.ops = ops, .self = self, .o = o};
	tr.info.opts = o;
	tr.info.loss = NAN;
	tr.info.replicas = 1;
	tr.every_step = !(ops->flags & STARNN_MODEL_LOSS_WHEN_LOGGED);
	starnn_energy_meter *meter = NULL;
	starnn_dist_set_wire_grads(o->wire_grads);
	int rc = prepare(&tr);
	/* Time and energy of the steps (every rank: the reading is collective). */
	if (rc == 0) {
		struct starnn_energy_opts eo;
		starnn_energy_opts_init(&eo);
		eo.cpu_watts = o->cpu_watts, eo.gpu_watts = o->gpu_watts, eo.idle_watts = o->idle_watts;
		rc = starnn_energy_start(&meter, &eo);
	}
	int64_t last_epoch = tr.epoch, saved_step = -1;
	/* Devices: what moves between memory nodes during the steps, from the
	 * state prepare left (its tasks finished). */
	struct starnn_transfers moved[3];
	if (rc == 0 && starnn_ndevice_workers() > 0) {
		tr.devices = 1;
		tr.moved = moved;
		rc = starnn_wait();
		starnn_transfers_read(&moved[0]);
	}
	if (rc == 0)
		starnn_params_edge_stats(tr.ps, &tr.edge_at[0]);
	tr.t_start = now();
	if (rc == 0)
		rc = loop(&tr, &last_epoch, &saved_step);
	if (tr.ps)
		starnn_params_edge_stats(tr.ps, &tr.edge_at[2]);
	if (tr.moved) { /* the steps' tasks finished (an error: counted all the same) */
		int rcw = starnn_wait();
		starnn_transfers_read(&moved[2]);
		if (rc == 0 && rcw < 0)
			rc = rcw;
	}
	if (tr.tty && tr.info.step > tr.info.first_step)
		printf("\n");
	tr.bar = 0;
	if (rc == 0)
		rc = conclude(&tr, meter, last_epoch, saved_step);
	starnn_energy_stop(meter);
	int rc2 = starnn_wait();
	if (tr.log && fclose(tr.log) != 0 && rc == 0)
		rc = starnn_error(STARNN_EIO, "cannot write the log %s: %s", o->log_json, strerror(errno));
	if (tr.ps)
		starnn_dist_detach(tr.ps);
	free(tr.awp_state);
	o->awp_state = NULL;
	if (rc == 0 && rc2 < 0)
		rc = rc2;
	if (rc == 0 && interrupted)
		return STARNN_TRAIN_INTERRUPTED;
	return rc;
}
