#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/choice.h"
#include "runtime/core/submit.h"

static _Thread_local int placement = STARNN_ANYWHERE;
static _Thread_local uint32_t where_mask;
static starnn_edge_fn edge_hook;
static void *edge_ctx;
/* Models submit from their main thread and loader threads alike (a
 * mutex: _Atomic double would need libatomic for its compound add). */
static double submitted_flops;
static pthread_mutex_t flops_lock = PTHREAD_MUTEX_INITIALIZER;

/* Capture (starnn_capture_begin): the records, under capture_lock;
 * capture_on is read at every submission, hence atomic. */
static atomic_int capture_on;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static struct starnn_captured_task *captured;
static int ncaptured, captured_cap, capture_failed;

/* ------------------------------------------------------------ interning */

char *starnn_trace_name(const char *name, char *out, size_t size)
{
	size_t n = 0;
	for (const unsigned char *c = (const unsigned char *)name; *c && n + 1 < size; c++) {
		/* Quotes would open a Paje string field; a backslash is an escape
		 * in some readers. Dropping them keeps the name one token. */
		if (*c == '"' || *c == '\'' || *c == '\\')
			continue;
		out[n++] = *c <= ' ' || *c >= 0x7f ? '_' : (char)*c;
	}
	out[n] = '\0';
	if (n == 0) /* an empty field would shift the others */
		snprintf(out, size, "task");
	return out;
}

/* A chained hash set: task names are looked up at every submission. */
#define INTERN_BUCKETS 1024
struct interned {
	struct interned *next;
	char s[];
};
static struct interned *interned[INTERN_BUCKETS];
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;

const char *starnn_intern(const char *name)
{
	/* Sanitised before hashing, so names that differ only in characters a
	 * trace cannot hold share one copy. */
	char s[STARNN_NAME_MAX + 64];
	starnn_trace_name(name, s, sizeof s);
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const char *c = s; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	struct interned **bucket = &interned[h % INTERN_BUCKETS];
	const char *found = NULL;
	pthread_mutex_lock(&intern_lock);
	for (struct interned *i = *bucket; i; i = i->next)
		if (strcmp(i->s, s) == 0) {
			found = i->s;
			break;
		}
	if (!found) {
		size_t n = strlen(s) + 1;
		struct interned *i = malloc(sizeof *i + n);
		if (i) {
			memcpy(i->s, s, n);
			i->next = *bucket;
			*bucket = i;
			found = i->s;
		}
	}
	pthread_mutex_unlock(&intern_lock);
	return found;
}

void starnn_submit_shutdown(void)
{
	pthread_mutex_lock(&intern_lock);
	for (int b = 0; b < INTERN_BUCKETS; b++)
		while (interned[b]) {
			struct interned *next = interned[b]->next;
			free(interned[b]);
			interned[b] = next;
		}
	pthread_mutex_unlock(&intern_lock);
	edge_hook = NULL;
	edge_ctx = NULL;
	pthread_mutex_lock(&capture_lock);
	atomic_store(&capture_on, 0);
	starnn_capture_free(captured, ncaptured);
	captured = NULL;
	ncaptured = captured_cap = capture_failed = 0;
	pthread_mutex_unlock(&capture_lock);
	pthread_mutex_lock(&flops_lock);
	submitted_flops = 0.0;
	pthread_mutex_unlock(&flops_lock);
}

double starnn_submitted_flops(void)
{
	pthread_mutex_lock(&flops_lock);
	double f = submitted_flops;
	pthread_mutex_unlock(&flops_lock);
	return f;
}

/* The default count of a task (see struct starnn_task_desc): one operation
 * per element of its largest buffer. The buffers' shapes are part of every
 * starnn footprint, so tasks of one footprint get one count. */
static double default_flops(starnn_tensor *const *tensors, int nbuffers)
{
	size_t most = 0;
	for (int i = 0; i < nbuffers; i++) {
		size_t n = tensors[i]->rows * tensors[i]->cols;
		if (n > most)
			most = n;
	}
	return (double)most;
}

/* ---------------------------------------------------------------- capture */

int starnn_capture_begin(void)
{
	pthread_mutex_lock(&capture_lock);
	int was = atomic_exchange(&capture_on, 1);
	pthread_mutex_unlock(&capture_lock);
	if (was)
		return starnn_error(STARNN_ESTATE, "starnn_capture_begin: a capture is already on");
	return 0;
}

int starnn_capture_end(struct starnn_captured_task **tasks, int *n)
{
	*tasks = NULL;
	*n = 0;
	pthread_mutex_lock(&capture_lock);
	int was = atomic_exchange(&capture_on, 0);
	struct starnn_captured_task *t = captured;
	int count = ncaptured, failed = capture_failed;
	captured = NULL;
	ncaptured = captured_cap = capture_failed = 0;
	pthread_mutex_unlock(&capture_lock);
	if (!was)
		return starnn_error(STARNN_ESTATE, "starnn_capture_end: no capture is on");
	if (failed) {
		starnn_capture_free(t, count);
		return starnn_error(STARNN_ENOMEM, "starnn_capture_end: out of memory while recording the tasks");
	}
	*tasks = t;
	*n = count;
	return 0;
}

void starnn_capture_free(struct starnn_captured_task *tasks, int n)
{
	for (int i = 0; tasks && i < n; i++)
		free(tasks[i].args);
	free(tasks);
}

/* Records a task just submitted (footprint computed before submission:
 * the task may be gone now). A (codelet, footprint) seen before only
 * counts; a few hundred records per training step, so a linear search. */
static void capture_record(const struct starnn_task_desc *d, starnn_tensor *const *tensors, uint32_t footprint,
                           double flops, const char *name)
{
	const struct starpu_codelet *cl = d->cl;
	pthread_mutex_lock(&capture_lock);
	if (!atomic_load(&capture_on) || capture_failed)
		goto out;
	for (int i = 0; i < ncaptured; i++)
		if (captured[i].cl == cl && captured[i].footprint == footprint) {
			captured[i].count++;
			goto out;
		}
	if (ncaptured == captured_cap) {
		int cap = captured_cap ? 2 * captured_cap : 64;
		struct starnn_captured_task *t = realloc(captured, (size_t)cap * sizeof *t);
		if (!t) {
			capture_failed = 1;
			goto out;
		}
		captured = t;
		captured_cap = cap;
	}
	struct starnn_captured_task *r = &captured[ncaptured];
	memset(r, 0, sizeof *r);
	if (d->args_size) {
		r->args = malloc(d->args_size);
		if (!r->args) {
			capture_failed = 1;
			goto out;
		}
		memcpy(r->args, d->args, d->args_size);
	}
	r->cl = (struct starpu_codelet *)cl;
	r->args_size = d->args_size;
	r->nbuffers = cl->nbuffers;
	for (int i = 0; i < cl->nbuffers; i++) {
		struct starnn_captured_buffer *b = &r->buf[i];
		b->rows = tensors[i]->rows, b->cols = tensors[i]->cols, b->ld = tensors[i]->ld;
		b->dtype = tensors[i]->dtype;
		b->mode = cl->modes[i];
		b->tensor = tensors[i];
	}
	r->flops = flops;
	r->footprint = footprint;
	r->count = 1;
	snprintf(r->name, sizeof r->name, "%s", name ? name : cl->name);
	ncaptured++;
out:
	pthread_mutex_unlock(&capture_lock);
}

/* ------------------------------------------------------------ placement */

void starnn_set_placement(int memory_node)
{
	placement = memory_node;
}

int starnn_get_placement(void)
{
	return placement;
}

void starnn_tensor_pin(starnn_tensor *t, int node)
{
	t->pinned = node >= 0;
	t->pin_node = node >= 0 ? node : 0;
}

int starnn_memory_nodes(int *nodes, int max)
{
	int n = 0;
	unsigned nworkers = starpu_worker_get_count();
	for (unsigned w = 0; w < nworkers; w++) {
		int node = (int)starpu_worker_get_memory_node(w);
		int seen = 0;
		for (int i = 0; i < n && i < max; i++)
			seen |= nodes[i] == node;
		if (!seen) {
			if (n < max)
				nodes[n] = node;
			n++;
		}
	}
	return n;
}

void starnn_set_where(uint32_t where)
{
	where_mask = where;
}

void starnn_set_edge_hook(starnn_edge_fn fn, void *ctx)
{
	edge_hook = fn;
	edge_ctx = ctx;
}

/* Whether cl has an implementation for workers of this type. */
static int has_impl(const struct starpu_codelet *cl, enum starpu_worker_archtype type)
{
	return (type == STARPU_CPU_WORKER && cl->cpu_funcs[0]) || (type == STARPU_CUDA_WORKER && cl->cuda_funcs[0]) ||
	       (type == STARPU_OPENCL_WORKER && cl->opencl_funcs[0]);
}

/* The task->where bit of workers of this type. */
static uint32_t where_of(enum starpu_worker_archtype type)
{
	switch (type) {
	case STARPU_CPU_WORKER: return STARPU_CPU;
	case STARPU_CUDA_WORKER: return STARPU_CUDA;
	case STARPU_OPENCL_WORKER: return STARPU_OPENCL;
	default: return 0;
	}
}

/* The memory of each device memory node (a CUDA or OpenCL device: its
 * size, or STARPU_LIMIT_CUDA_MEM / STARPU_LIMIT_OPENCL_MEM), and the
 * smallest: a task whose data exceed a device's memory would wait forever
 * on a worker of that device (StarPU 1.3 keeps trying to make room), so
 * such tasks go to the other workers (starnn_submit). Read at start-up;
 * SIZE_MAX where unknown and for the CPUs' memory. */
static size_t node_mem[STARPU_MAXNODES];
static size_t device_mem_min = SIZE_MAX;

void starnn_submit_start(void)
{
	device_mem_min = SIZE_MAX;
	unsigned nodes = starpu_memory_nodes_get_count();
	for (unsigned n = 0; n < STARPU_MAXNODES; n++) {
		node_mem[n] = SIZE_MAX;
		enum starpu_node_kind kind = n < nodes ? starpu_node_get_kind(n) : STARPU_UNUSED;
		if (kind != STARPU_CUDA_RAM && kind != STARPU_OPENCL_RAM)
			continue;
		starpu_ssize_t total = starpu_memory_get_total(n);
		if (total >= 0)
			node_mem[n] = (size_t)total;
		if (node_mem[n] < device_mem_min)
			device_mem_min = node_mem[n];
	}
}

/* Workers that can run an implementation of cl: of memory node `node`
 * (STARNN_ANYWHERE: any), of the kinds of where_mask (0: any), on a node
 * whose memory holds `bytes`, as a StarPU worker bitmap. Returns their
 * number; *nomem counts those left out for memory alone. */
static int worker_mask(const struct starpu_codelet *cl, int node, size_t bytes, uint32_t *mask, unsigned words,
                       int *nomem)
{
	int n = 0;
	unsigned nworkers = starpu_worker_get_count();
	memset(mask, 0, words * sizeof *mask);
	*nomem = 0;
	for (unsigned w = 0; w < nworkers && w / 32 < words; w++) {
		unsigned wnode = starpu_worker_get_memory_node(w);
		if (node != STARNN_ANYWHERE && (int)wnode != node)
			continue;
		enum starpu_worker_archtype type = starpu_worker_get_type((int)w);
		if (!has_impl(cl, type) || (where_mask && !(where_mask & where_of(type))))
			continue;
		if (wnode < STARPU_MAXNODES && node_mem[wnode] < bytes) {
			++*nomem;
			continue;
		}
		mask[w / 32] |= 1u << (w % 32);
		n++;
	}
	return n;
}

/* The bytes of a task's distinct tensors (as StarPU allocates them on a
 * device: rows x cols, packed). */
static size_t task_bytes(starnn_tensor *const *tensors, int n)
{
	size_t bytes = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= tensors[j] == tensors[i];
		if (!seen)
			bytes += tensors[i]->rows * tensors[i]->cols * starnn_dtype_size(tensors[i]->dtype);
	}
	return bytes;
}

/* STARNN_ENODEV with a message when this thread's tasks are restricted to
 * worker kinds (starnn_set_where) for which cl has no implementation:
 * StarPU would only say -ENODEV. */
static int check_where(const struct starpu_codelet *cl)
{
	if (!where_mask)
		return 0;
	static const enum starpu_worker_archtype types[] = {STARPU_CPU_WORKER, STARPU_CUDA_WORKER, STARPU_OPENCL_WORKER};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if ((where_mask & where_of(types[i])) && has_impl(cl, types[i]))
			return 0;
	return starnn_error(STARNN_ENODEV, "%s: no %s%s%s implementation, and this thread's tasks are restricted to "
	                                   "those workers (starnn_set_where)",
	                    cl->name, where_mask & STARPU_CPU ? "CPU " : "", where_mask & STARPU_CUDA ? "CUDA " : "",
	                    where_mask & STARPU_OPENCL ? "OpenCL" : "");
}

/* STARNN_PRIORITIES=on|off is a test hook (tests/models/unet_sched.sh
 * checks that priorities change no result): read only in builds with
 * --enable-test-hooks. Elsewhere the choice starts as read, "on", and
 * only starnn_priorities_set changes it (benchmarks). */
#ifdef STARNN_TEST_HOOKS
#define PRIO_READ 0
#else
#define PRIO_READ 1
#endif
static const char *const prio_names[] = {"on", "off"};
static const int prio_values[] = {1, 0};
static struct starnn_choice prio_choice = {"STARNN_PRIORITIES", "on or off", prio_names, prio_values, 2, -1, 1,
                                           PRIO_READ, PTHREAD_MUTEX_INITIALIZER};

int starnn_priorities_check(void)
{
	return starnn_choice_check(&prio_choice);
}

/* The scheduling policy's range of priorities (starnn_init); lo == hi: it
 * has no order of priorities (eager, dmda; heteroprio reads a priority as
 * its bucket, 0 by default, and aborts on another). */
static int prio_lo, prio_hi;

void starnn_priorities_range(int lo, int hi)
{
	prio_lo = lo;
	prio_hi = hi;
}

int starnn_priorities_on(void)
{
	return prio_lo < prio_hi && starnn_choice_mode(&prio_choice);
}

int starnn_priorities_set(int on)
{
	return starnn_choice_set(&prio_choice, on, 1, "priorities: expected 1 (on) or 0 (off), got");
}

/* The priority of a task that writes t: its root's (runtime/core/tensor.h). */
static int written_priority(const starnn_tensor *t)
{
	while (t->parent)
		t = t->parent;
	return t->priority;
}

/* Where a task goes (see starnn_tensor_pin): this thread's placement;
 * else the one node its pinned tensors name; else the one node its near
 * inputs name; else anywhere. *followed: placed by a pin or near data (a
 * fallback is allowed then). */
static int pinned_place(const struct starnn_task_desc *d, int *place, int *followed)
{
	const struct starpu_codelet *cl = d->cl;
	*place = placement;
	*followed = 0;
	if (placement != STARNN_ANYWHERE)
		return 0;
	int pin = -1, near = -1, near_agree = 1;
	for (int i = 0; i < cl->nbuffers; i++) {
		const starnn_tensor *t = d->tensors[i], *root = t;
		if (!t)
			continue;
		while (root->parent)
			root = root->parent;
		const starnn_tensor *p = t->pinned ? t : root->pinned ? root : NULL;
		if (p && pin >= 0 && p->pin_node != pin)
			return starnn_error(STARNN_EINVAL,
			                    "%s: '%s' is pinned to memory node %d, another of its tensors to %d", cl->name,
			                    p->name, p->pin_node, pin);
		if (p)
			pin = p->pin_node;
		if ((cl->modes[i] & STARPU_R) && t->near) {
			if (near >= 0 && near != t->near - 1)
				near_agree = 0;
			near = t->near - 1;
		}
	}
	if (pin >= 0 || (near >= 0 && near_agree)) {
		*place = pin >= 0 ? pin : near;
		*followed = 1;
	}
	return 0;
}

static void free_workerids(void *arg)
{
	free(arg);
}

int starnn_submit(const struct starnn_task_desc *d)
{
	const struct starpu_codelet *cl = d->cl;
	if (!cl || cl->nbuffers < 0 || cl->nbuffers > STARNN_MAX_BUFFERS)
		return starnn_error(STARNN_EINVAL, "starnn_submit: bad codelet");
	/* Checked before anything is submitted (the edge hook, partitions). */
	if (!(d->flops >= 0.0 || d->flops == STARNN_NO_FLOPS))
		return starnn_error(STARNN_EINVAL, "%s: flops must be >= 0 or STARNN_NO_FLOPS, got %g", cl->name, d->flops);
	int nbuffers = cl->nbuffers;
	starnn_tensor *tensors[STARNN_MAX_BUFFERS];
	const starnn_tensor *written = NULL;
	STARNN_CHECK(check_where(cl));
	int place, followed;
	STARNN_CHECK(pinned_place(d, &place, &followed));

	for (int i = 0; i < nbuffers; i++) {
		starnn_tensor *t = d->tensors[i];
		if (!t)
			return starnn_error(STARNN_EINVAL, "%s: buffer %d is NULL", cl->name, i);
		enum starpu_data_access_mode mode = cl->modes[i];
		/* A placed consumer of data produced on another node: the edge. */
		if (edge_hook && place != STARNN_ANYWHERE && (mode & STARPU_R) && t->node >= 0 && t->node != place) {
			starnn_tensor *repl = t;
			int rc = edge_hook(edge_ctx, t, t->node, place, &repl);
			if (rc < 0)
				return rc;
			if (!repl || !starnn_tensor_same_shape(repl, t) || repl->dtype != t->dtype)
				return starnn_error(STARNN_EINVAL, "%s: edge hook returned a tensor unlike '%s'", cl->name, t->name);
			t = repl;
		}
		starnn_tensor_prepare(t, (mode & STARPU_W) != 0);
		tensors[i] = t;
		if (!written && (mode & STARPU_W))
			written = t;
	}

	/* Placed tasks, and tasks whose data a device cannot hold (never where
	 * no device memory node exists), go to the workers allowed. */
	uint32_t *mask = NULL;
	unsigned words = 0;
	size_t bytes = device_mem_min == SIZE_MAX ? 0 : task_bytes(tensors, nbuffers);
	if (place != STARNN_ANYWHERE || bytes > device_mem_min) {
		words = (starpu_worker_get_count() + 31) / 32;
		mask = calloc(words ? words : 1, sizeof *mask);
		if (!mask)
			return starnn_error(STARNN_ENOMEM, "%s: out of memory", cl->name);
		int nomem;
		int n = worker_mask(cl, place, bytes, mask, words, &nomem);
		if (n == 0 && followed && !nomem) {
			/* no worker of the pinned node has an implementation: StarPU
			 * places it (the data move to it) */
			place = STARNN_ANYWHERE;
			followed = 0;
			n = worker_mask(cl, place, bytes, mask, words, &nomem);
			if (n > 0 && bytes <= device_mem_min) { /* no restriction left */
				free(mask);
				mask = NULL;
			}
		}
		if (n == 0) {
			free(mask);
			if (nomem)
				return starnn_error(STARNN_ENOMEM,
				                    "%s: its data take %.1f MiB, more than the memory of the device(s) whose workers "
				                    "may run it (the smallest: %.1f MiB; STARPU_LIMIT_OPENCL_MEM and "
				                    "STARPU_LIMIT_CUDA_MEM cap it): StarPU would wait for room forever",
				                    cl->name, (double)bytes / 1048576.0, (double)device_mem_min / 1048576.0);
			if (place != STARNN_ANYWHERE)
				return starnn_error(STARNN_ENODEV, "%s: no worker of memory node %d can run it", cl->name,
				                    place);
			return starnn_error(STARNN_ENODEV, "%s: no worker can run it", cl->name);
		}
	}
	void *args = NULL;
	if (d->args_size) {
		args = malloc(d->args_size);
		if (!args) {
			free(mask);
			return starnn_error(STARNN_ENOMEM, "%s: out of memory", cl->name);
		}
		memcpy(args, d->args, d->args_size);
	}
	/* "<op>:<tensor>" reads as one word in ViTE's legend and in
	 * paje.trace's whitespace-separated fields. */
	char buf[STARNN_NAME_MAX + 64];
	if (!d->name)
		snprintf(buf, sizeof buf, "%s%s%s", cl->name, written ? ":" : "", written ? written->name : "");
	const char *name = d->name ? d->name : buf;
	double flops = d->flops == STARNN_NO_FLOPS ? 0.0 : d->flops > 0.0 ? d->flops : default_flops(tensors, nbuffers);

	struct starpu_task *task = starpu_task_create();
	task->cl = (struct starpu_codelet *)cl;
	for (int i = 0; i < nbuffers; i++)
		task->handles[i] = tensors[i]->handle;
	task->cl_arg = args;
	task->cl_arg_size = d->args_size;
	task->cl_arg_free = 1;
	const char *task_name = starnn_intern(name);
	task->name = task_name;
	task->flops = flops;
	int prio = d->priority ? d->priority : written ? written_priority(written) : 0;
	if (prio) /* (most tasks have none: no setting to read) */
		prio = !starnn_priorities_on() ? 0 : prio < prio_lo ? prio_lo : prio > prio_hi ? prio_hi : prio;
	task->priority = prio;
	if (where_mask)
		task->where = (int32_t)where_mask;
	if (mask) {
		task->workerids = mask;
		task->workerids_len = words;
		/* StarPU does not own workerids: free it when the task is done. */
		task->callback_func = free_workerids;
		task->callback_arg = mask;
	}

	/* The footprint of the time model (the energy model shares its
	 * function): computed now, since the task may be gone once submitted. */
	int capturing = atomic_load(&capture_on);
	uint32_t footprint = 0;
	if (capturing)
		footprint = cl->model && cl->model->footprint ? cl->model->footprint(task) : starpu_task_data_footprint(task);

	int rc = starpu_task_submit(task);
	if (rc) {
		free(mask);
		task->callback_func = NULL;
		task->destroy = 0; /* never submitted: destroy it here (frees args) */
		starpu_task_destroy(task);
		if (rc == -ENODEV)
			return starnn_error(STARNN_ENODEV, "%s: no worker can run this task (check STARPU_NCPU / STARPU_NCUDA)", cl->name);
		return starnn_error(STARNN_ESTARPU, "%s: starpu_task_submit failed (%d)", cl->name, rc);
	}
	for (int i = 0; i < nbuffers; i++)
		if (cl->modes[i] & STARPU_W) {
			tensors[i]->node = place;
			tensors[i]->near = followed ? place + 1 : 0;
		}
	pthread_mutex_lock(&flops_lock);
	submitted_flops += flops;
	pthread_mutex_unlock(&flops_lock);
	if (capturing)
		capture_record(d, tensors, footprint, flops, task_name);
	return 0;
}

int starnn_wait(void)
{
	int rc = starpu_task_wait_for_all();
	if (rc)
		return starnn_error(STARNN_ESTARPU, "starpu_task_wait_for_all failed (%d)", rc);
	return starnn_take_deferred_error();
}
