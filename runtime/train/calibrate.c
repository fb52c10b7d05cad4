/* Energy calibration of captured tasks (see runtime/train/calibrate.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "runtime/train/calibrate.h"
#include "runtime/base/error.h"
#include "runtime/base/half.h"

/* The most rounds of windows per task: the first, and three more while
 * StarPU's entry would still have too few samples (windows not recorded) */
#define CALIB_ROUNDS 4

void starnn_calib_opts_init(struct starnn_calib_opts *o)
{
	memset(o, 0, sizeof *o);
	o->seconds = 1.0;
	/* StarPU drops the first sample of a history entry and trusts an
	 * entry once it has STARPU_CALIBRATE_MINIMUM samples. */
	o->windows = starpu_get_env_number_default("STARPU_CALIBRATE_MINIMUM", 10) + 1;
	if (o->windows < 2)
		o->windows = 2;
	o->seed = 1;
}

static int is_cpu_domain(const char *name)
{
	return strncmp(name, "package-", 8) == 0 || strncmp(name, "dram-", 5) == 0;
}

int starnn_calib_worker_joules(const struct starnn_energy_reading *r, int worker, double *joules, char *why,
                               size_t why_size)
{
	*joules = 0;
	if (worker < 0 || worker >= (int)starpu_worker_get_count()) {
		snprintf(why, why_size, "no worker %d", worker);
		return STARNN_EINVAL;
	}
	enum starpu_worker_archtype type = starpu_worker_get_type(worker);
	char gpu[24];
	snprintf(gpu, sizeof gpu, "gpu-%d", starpu_worker_get_devid(worker));
	int found = 0;
	for (int i = 0; r->available && i < r->ndomains; i++) {
		const char *d = r->domain[i].name;
		if (type == STARPU_CPU_WORKER ? is_cpu_domain(d) : type == STARPU_CUDA_WORKER && strcmp(d, gpu) == 0) {
			*joules += r->domain[i].joules;
			found = 1;
		}
	}
	if (found)
		return 0;
	if (type == STARPU_CPU_WORKER)
		snprintf(why, why_size, "no CPU package meter (%s)", r->reason[0] ? r->reason : r->method);
	else if (type == STARPU_CUDA_WORKER)
		snprintf(why, why_size, "no meter of GPU %d (%s)", starpu_worker_get_devid(worker),
		         r->reason[0] ? r->reason : r->method);
	else
		snprintf(why, why_size, "worker %d is neither a CPU nor a CUDA worker", worker);
	return STARNN_ENODEV;
}

const char *starnn_captured_shape(const struct starnn_captured_task *t, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < t->nbuffers && n + 1 < size; i++) {
		const struct starnn_captured_buffer *b = &t->buf[i];
		enum starpu_data_access_mode m = b->mode & STARPU_RW;
		const char *mode = m == STARPU_RW ? "RW" : m == STARPU_W ? "W" : "R";
		int k;
		if (b->ld != b->cols)
			k = snprintf(buf + n, size - n, "%s%zux%zu/%zu %s", i ? ", " : "", b->rows, b->cols, b->ld, mode);
		else
			k = snprintf(buf + n, size - n, "%s%zux%zu %s", i ? ", " : "", b->rows, b->cols, mode);
		if (k < 0)
			break;
		n += (size_t)k < size - n ? (size_t)k : size - n - 1;
	}
	return buf;
}

/* ---------------------------------------------------------------- scratch */

struct scratch {
	int n;
	void *mem[STARNN_MAX_BUFFERS];
	starpu_data_handle_t h[STARNN_MAX_BUFFERS];
};

static uint64_t next_random(uint64_t *s)
{
	/* xorshift64*: enough for filler values */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void fill_random(void *mem, size_t count, starnn_dtype dt, uint64_t *s)
{
	for (size_t i = 0; i < count; i++) {
		/* magnitude uniform in [1/4, 1), random sign: finite, and never
		 * subnormal in any dtype (subnormals slow some kernels down) */
		uint64_t r = next_random(s);
		float v = (float)(0.25 + 0.75 * (double)(r >> 12) * 0x1p-52);
		v = r & 1 ? -v : v;
		switch (dt) {
		case STARNN_FP32: ((float *)mem)[i] = v; break;
		case STARNN_FP16: ((uint16_t *)mem)[i] = starnn_float_to_half(v); break;
		case STARNN_BF16: ((uint16_t *)mem)[i] = starnn_float_to_bf16(v); break;
		default: ((unsigned char *)mem)[i] = 0; break; /* wire bytes: zeros decode to zeros */
		}
	}
}

static void scratch_free(struct scratch *s)
{
	for (int i = 0; i < s->n; i++) {
		if (s->h[i])
			starpu_data_unregister(s->h[i]);
		free(s->mem[i]);
	}
	s->n = 0;
}

/* Buffers of t's shapes (rows x cols, rows ld elements apart), registered
 * in main memory, filled as o says. */
static int scratch_make(struct scratch *s, const struct starnn_captured_task *t, const struct starnn_calib_opts *o)
{
	memset(s, 0, sizeof *s);
	uint64_t seed = o->seed ? o->seed : 1;
	for (int i = 0; i < t->nbuffers; i++) {
		const struct starnn_captured_buffer *b = &t->buf[i];
		size_t es = starnn_dtype_size(b->dtype);
		if (!es || !b->rows || !b->cols || b->ld < b->cols)
			return starnn_error(STARNN_EINVAL, "calibrate %s: buffer %d is %zux%zu/%zu of dtype %d", t->name, i,
			                    b->rows, b->cols, b->ld, (int)b->dtype);
		/* the last row needs only its cols elements */
		size_t count = (b->rows - 1) * b->ld + b->cols;
		s->mem[i] = calloc(count, es);
		s->n = i + 1;
		if (!s->mem[i])
			return starnn_error(STARNN_ENOMEM, "calibrate %s: out of memory for buffer %d (%zu bytes)", t->name, i,
			                    count * es);
		if (o->from_tensors && b->tensor) {
			void *dense = malloc(b->rows * b->cols * es);
			if (!dense)
				return starnn_error(STARNN_ENOMEM, "calibrate %s: out of memory", t->name);
			int rc = starnn_tensor_read(b->tensor, dense);
			for (size_t r = 0; rc == 0 && r < b->rows; r++)
				memcpy((char *)s->mem[i] + r * b->ld * es, (char *)dense + r * b->cols * es, b->cols * es);
			free(dense);
			STARNN_CHECK(rc);
		} else {
			for (size_t r = 0; r < b->rows; r++)
				fill_random((char *)s->mem[i] + r * b->ld * es, b->cols, b->dtype, &seed);
		}
		/* StarPU's matrix: nx = cols (contiguous), ny = rows */
		starpu_matrix_data_register(&s->h[i], STARPU_MAIN_RAM, (uintptr_t)s->mem[i], (uint32_t)b->ld,
		                            (uint32_t)b->cols, (uint32_t)b->rows, es);
	}
	return 0;
}

/* ------------------------------------------------------------------ runs */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Tasks of t on the scratch buffers, all on worker w: `count` of them, or
 * (count 0) as many as are submitted before `seconds` have passed; then
 * waits for them all. *done: how many ran. The successive tasks depend on
 * each other through the buffers they write, as in a step; at most
 * `inflight` are submitted and not finished, so that millions of short
 * tasks do not hold millions of task structures, and a timed run ends
 * soon after its time. */
static int run_tasks(const struct starnn_captured_task *t, const struct scratch *s, int w, int64_t count,
                     double seconds, int inflight, int64_t *done)
{
	int rc = 0;
	int64_t k = 0;
	double t0 = now_s();
	while (rc == 0 && (count > 0 ? k < count : k == 0 || now_s() - t0 < seconds)) {
		struct starpu_task *task = starpu_task_create();
		task->cl = t->cl;
		for (int i = 0; i < t->nbuffers; i++)
			task->handles[i] = s->h[i];
		task->cl_arg = t->args;
		task->cl_arg_size = t->args_size;
		task->cl_arg_free = 0; /* shared by every run */
		task->flops = t->flops;
		task->name = t->name;
		task->execute_on_a_specific_worker = 1;
		task->workerid = (unsigned)w;
		int sr = starpu_task_submit(task);
		if (sr) {
			task->destroy = 0; /* never submitted */
			starpu_task_destroy(task);
			rc = starnn_error(sr == -ENODEV ? STARNN_ENODEV : STARNN_ESTARPU,
			                  "calibrate %s: starpu_task_submit on worker %d failed (%d)", t->name, w, sr);
			break;
		}
		k++;
		if (starpu_task_nsubmitted() >= inflight)
			starpu_task_wait_for_n_submitted((unsigned)(inflight / 2 > 0 ? inflight / 2 : 1));
	}
	if (starpu_task_wait_for_all() && rc == 0)
		rc = starnn_error(STARNN_ESTARPU, "calibrate %s: starpu_task_wait_for_all failed", t->name);
	*done = k;
	int deferred = starnn_take_deferred_error();
	return rc ? rc : deferred;
}

static int worker_can_run(const struct starpu_codelet *cl, int w)
{
	enum starpu_worker_archtype type = starpu_worker_get_type(w);
	if (type == STARPU_CPU_WORKER)
		return cl->cpu_funcs[0] != NULL && (cl->where == 0 || (cl->where & STARPU_CPU));
	if (type == STARPU_CUDA_WORKER)
		return cl->cuda_funcs[0] != NULL && (cl->where == 0 || (cl->where & STARPU_CUDA));
	return 0;
}

static int read_worker(starnn_energy_meter *m, int w, double *joules, double *elapsed)
{
	struct starnn_energy_reading r;
	char why[600];
	STARNN_CHECK(starnn_energy_read(m, &r));
	int rc = starnn_calib_worker_joules(&r, w, joules, why, sizeof why);
	if (rc < 0)
		return starnn_error(rc, "energy: not available for worker %d: %s", w, why);
	*elapsed = r.elapsed;
	return 0;
}

/* Whether joules per task j are more than `stray` times above or below
 * the median med (see starnn_calibrate_task) */
static int is_stray(double j, double med, double stray)
{
	return j > stray * med || j * stray < med;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* StarPU's history entry of footprint fp for arch (implementation 0), NULL
 * if none yet. per_arch->list is in StarPU's public header, though its
 * documentation calls it private; nothing updates the model meanwhile. */
static const struct starpu_perfmodel_history_entry *history_entry(struct starpu_perfmodel *model,
                                                                  struct starpu_perfmodel_arch *arch, uint32_t fp)
{
	struct starpu_perfmodel_per_arch *pa = starpu_perfmodel_get_model_per_arch(model, arch, 0);
	for (struct starpu_perfmodel_history_list *l = pa ? pa->list : NULL; l; l = l->next)
		if (l->entry && l->entry->footprint == fp)
			return l->entry;
	return NULL;
}

int starnn_calibrate_task(const struct starnn_captured_task *t, int w, starnn_energy_meter *m,
                          const struct starnn_calib_opts *o, struct starnn_calib_result *res)
{
	memset(res, 0, sizeof *res);
	res->joules_per_task = NAN;
	if (!t || !t->cl || !m || !o)
		return starnn_error(STARNN_EINVAL, "starnn_calibrate_task: NULL argument");
	struct starpu_codelet *cl = t->cl;
	if (!cl->energy_model)
		return starnn_error(STARNN_EINVAL, "calibrate %s: codelet %s has no energy model", t->name, cl->name);
	if (o->windows < 1 || !(o->repeat > 0 || (o->seconds > 0 && isfinite(o->seconds))) || !(o->min_window >= 0) ||
	    !(o->idle_watts >= 0 && isfinite(o->idle_watts)))
		return starnn_error(STARNN_EINVAL, "calibrate: windows %d, seconds %g, min window %g, repeat %lld, idle %g W",
		                    o->windows, o->seconds, o->min_window, (long long)o->repeat, o->idle_watts);
	if (w < 0 || w >= (int)starpu_worker_get_count() || !worker_can_run(cl, w))
		return starnn_error(STARNN_EINVAL, "calibrate %s: worker %d cannot run codelet %s", t->name, w, cl->name);
	double j0, e0;
	STARNN_CHECK(read_worker(m, w, &j0, &e0)); /* before anything runs: is it measured at all */

	struct scratch s;
	int rc = scratch_make(&s, t, o);
	/* The task StarPU's history is keyed with: never submitted, it gives
	 * starpu_perfmodel_update_history the codelet, the buffers (the
	 * footprint) and the flops. */
	struct starpu_task probe;
	starpu_task_init(&probe);
	probe.cl = cl;
	for (int i = 0; i < t->nbuffers; i++)
		probe.handles[i] = s.h[i];
	probe.cl_arg = t->args;
	probe.cl_arg_size = t->args_size;
	probe.flops = t->flops;
	int64_t done = 0;
	if (rc == 0)
		rc = run_tasks(t, &s, w, 1, 0, 1, &done); /* warm-up: data onto the worker's node, kernels' scratch */

	/* How many tasks may be in flight: about 5 ms of work (the best of
	 * doubling runs up to 5 ms: an interruption only stretches a run), at
	 * least 2 so that the worker never waits for the next submission, at
	 * most 512. */
	double task_s = INFINITY;
	for (int64_t k = 1; rc == 0; k *= 2) {
		double t0 = now_s();
		if ((rc = run_tasks(t, &s, w, k, 0, 512, &done)) < 0)
			break;
		double dt = now_s() - t0;
		task_s = dt / (double)k < task_s ? dt / (double)k : task_s;
		if (dt >= 0.005 || k >= ((int64_t)1 << 20))
			break;
	}
	double want = task_s > 0 && isfinite(task_s) ? 0.005 / task_s : 512;
	int inflight = want < 2 ? 2 : want > 512 ? 512 : (int)want;
	/* The same number of tasks in every window, as many as a run of one
	 * window's length completes: StarPU's figure is the mean of the
	 * windows', which is then the windows' joules over their tasks,
	 * however an interruption stretched one of them. */
	double floor_s = o->min_window > 0 ? o->min_window : starpu_worker_get_type(w) == STARPU_CUDA_WORKER ? 0.2 : 0.02;
	double window = o->seconds / o->windows;
	window = window < floor_s ? floor_s : window;
	int64_t n = o->repeat;
	if (rc == 0 && n <= 0) {
		rc = run_tasks(t, &s, w, 0, window, inflight, &done);
		n = done > 0 ? done : 1;
	}

	/* Rounds of o->windows windows, until StarPU's entry will have the
	 * samples it needs to use it (it drops a new entry's first sample), at
	 * most CALIB_ROUNDS. Windows are pooled over the rounds and recorded
	 * at the end, but for
	 * - those longer than 3 times their round's median: there the process
	 *   or the worker was interrupted and the meter counted what else ran;
	 * - those at or below the idle power, which measured nothing of the
	 *   task (StarPU takes no negative figure, and a zero would be made
	 *   up), or where the meter did not move;
	 * - strays: joules per task more than `stray` times above or below the
	 *   pool's median. The meter's domains counted a burst of something
	 *   else, or the meter lagged and then caught up (its energy lands in
	 *   one later window). StarPU counts a sample that far from its
	 *   entry's mean as an error, and once errors outnumber samples it
	 *   empties the entry; taken, a stray would also skew the mean. The
	 *   median is the pool's, not a round's: a round the meter lagged
	 *   through may hold nothing but the window of its catching up. */
	struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype(w, STARPU_NMAX_SCHED_CTXS);
	unsigned devid = (unsigned)starpu_worker_get_devid(w);
	unsigned need = (unsigned)starpu_get_env_number_default("STARPU_CALIBRATE_MINIMUM", 10);
	/* StarPU's bound on a sample's distance from the mean, capped at 2x */
	double stray = 1 + (double)starpu_get_env_number_default("STARPU_HISTORY_MAX_ERROR", 50) / 100;
	stray = stray > 2 || !(stray > 1) ? 2 : stray;
	uint32_t fp = starpu_task_footprint(cl->energy_model, &probe, arch, 0);
	const struct starpu_perfmodel_history_entry *prior = history_entry(cl->energy_model, arch, fp);
	unsigned had = prior ? prior->nsample : 0, dropped = prior ? 0 : 1; /* StarPU drops a new entry's first sample */
	size_t cap = (size_t)o->windows * CALIB_ROUNDS;
	double *jt = malloc((size_t)o->windows * sizeof *jt), *secs = malloc((size_t)o->windows * sizeof *secs);
	double *sorted = malloc(cap * sizeof *sorted), *pool_j = malloc(cap * sizeof *pool_j);
	double *pool_s = malloc(cap * sizeof *pool_s);
	int64_t *pool_n = malloc(cap * sizeof *pool_n);
	if (rc == 0 && (!jt || !secs || !sorted || !pool_j || !pool_s || !pool_n))
		rc = starnn_error(STARNN_ENOMEM, "calibrate %s: out of memory", t->name);
	size_t np = 0;   /* windows pooled */
	double jmed = 0; /* their median joules per task */
	for (int round = 0, retries = 0; rc == 0 && round < CALIB_ROUNDS; round++) {
		for (int win = 0; rc == 0 && win < o->windows; win++) {
			double j1 = 0, e1 = 0, j2 = 0, e2 = 0;
			if ((rc = read_worker(m, w, &j1, &e1)) < 0 || (rc = run_tasks(t, &s, w, n, 0, inflight, &done)) < 0 ||
			    (rc = read_worker(m, w, &j2, &e2)) < 0)
				break;
			double joules = j2 - j1, idle = o->idle_watts * (e2 - e1);
			secs[win] = e2 - e1;
			jt[win] = (joules - idle) / (double)done; /* joules per task */
			res->tasks += done;
			res->seconds += secs[win];
			res->joules += joules;
			res->idle_joules += idle;
		}
		if (rc < 0)
			break;
		memcpy(sorted, secs, (size_t)o->windows * sizeof *sorted);
		qsort(sorted, (size_t)o->windows, sizeof *sorted, by_value);
		double median = sorted[o->windows / 2];
		/* Windows much shorter than asked (the machine ran the tasks
		 * faster than when n was chosen): too short for the meter, so
		 * the round is measured again with more tasks, not recorded. */
		if (o->repeat <= 0 && median < window / 2 && retries < 4) {
			double more = ceil((double)n * window / (median > window / 100 ? median : window / 100));
			n = more > 1e9 ? (int64_t)1e9 : (int64_t)more;
			retries++;
			round--;
			continue;
		}
		for (int win = 0; win < o->windows; win++) {
			if (secs[win] > 3 * median) {
				res->stretched++;
			} else if (jt[win] > 0 && isfinite(jt[win])) {
				pool_j[np] = jt[win];
				pool_s[np] = secs[win];
				pool_n[np++] = n;
			}
		}
		memcpy(sorted, pool_j, np * sizeof *sorted);
		qsort(sorted, np, sizeof *sorted, by_value);
		jmed = np ? sorted[np / 2] : 0;
		unsigned good = 0;
		for (size_t i = 0; i < np; i++)
			good += !is_stray(pool_j[i], jmed, stray);
		if (had + good >= need + dropped)
			break;
	}
	double sum = 0;
	for (size_t i = 0; rc == 0 && i < np; i++) {
		if (is_stray(pool_j[i], jmed, stray)) {
			res->strays++;
			continue;
		}
		starpu_perfmodel_update_history(cl->energy_model, &probe, arch, devid, 0, pool_j[i]);
		sum += pool_j[i];
		res->recorded++;
		res->rec_tasks += pool_n[i];
		res->rec_seconds += pool_s[i];
		res->rec_joules += pool_j[i] * (double)pool_n[i] + o->idle_watts * pool_s[i];
		res->rec_idle_joules += o->idle_watts * pool_s[i];
	}
	free(pool_j), free(pool_s), free(pool_n);
	free(jt), free(secs), free(sorted);
	const struct starpu_perfmodel_history_entry *e = history_entry(cl->energy_model, arch, fp);
	res->samples = e ? e->nsample : 0;
	res->needed = need;
	if (e && e->nsample)
		res->joules_per_task = e->mean;
	else if (res->recorded)
		res->joules_per_task = sum / res->recorded;
	starpu_task_clean(&probe);
	scratch_free(&s);
	return rc;
}
