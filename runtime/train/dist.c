/* Data-distributed training on StarPU-MPI: start-up, core binding,
 * broadcast and all-reduce inside the task graph (see dist.h). Without
 * StarPU-MPI (configure --disable-mpi, or a StarPU without it) the same
 * functions exist and behave as one rank. */
#include <config.h>

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>
#ifdef STARNN_USE_MPI
#include <mpi.h>
#include <starpu_mpi.h>
#endif

#include "codelets/axpy.h"
#include "codelets/batchnorm.h"
#include "codelets/copy.h"
#include "codelets/reduce.h"
#include "codelets/wire.h"
#include "runtime/train/dist.h"
#include "runtime/core/submit.h"

static int dist_rank, dist_size = 1, local_rank, local_size = 1, dist_on;
static char dist_line[256];

int starnn_dist_rank(void) { return dist_rank; }
int starnn_dist_size(void) { return dist_size; }
int starnn_dist_local_rank(void) { return local_rank; }
int starnn_dist_local_size(void) { return local_size; }
int starnn_dist_active(void) { return dist_on; }
const char *starnn_dist_summary(void) { return dist_line; }

void starnn_dist_share(int64_t n, int rank, int size, int64_t *begin, int64_t *count)
{
	int64_t q = n / size, r = n % size;
	*begin = rank * q + (rank < r ? rank : r);
	*count = q + (rank < r);
}

uint64_t starnn_dist_hash_args(int argc, char **argv)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 1; i < argc; i++) {
		for (const unsigned char *c = (const unsigned char *)argv[i]; *c; c++)
			h = (h ^ *c) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull; /* argument separator */
	}
	return h;
}

static size_t chunk_elems = 65536;
static int no_grad_exchange; /* STARNN_DIST_BENCH_NO_GRAD_EXCHANGE: tools/bench/dist only */
static int grad_wire = -1;    /* --wire-grads: a starnn_wire_format, -1 none */
static starnn_params *wps;    /* the set of the parameter-owner mode (see the weights section) */

int starnn_dist_set_wire_grads(int wire)
{
	if (wire >= STARNN_WIRE_NFORMATS)
		return starnn_error(STARNN_EINVAL, "dist: unknown wire format %d", wire);
	grad_wire = wire < 0 || wire == STARNN_WIRE_FP32 ? -1 : wire;
	return 0;
}

void starnn_dist_set_chunk(size_t elems)
{
	chunk_elems = elems ? elems : 65536;
}

#ifdef STARNN_USE_MPI

static int mpi_inited_here;

/* Launched by mpirun (Open MPI, MPICH/Hydra, PMIx launchers) with more
 * than one rank? */
static int launcher_size(void)
{
	const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

/* "0-3" or "0,2,5" of a CPU set, into buf. */
static void cpus_text(const int *cpus, int n, char *buf, size_t size)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && off < size; i++) {
		int j = i;
		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		int w = j > i ? snprintf(buf + off, size - off, "%s%d-%d", off ? "," : "", cpus[i], cpus[j])
		              : snprintf(buf + off, size - off, "%s%d", off ? "," : "", cpus[i]);
		if (w < 0)
			break;
		off += (size_t)w;
		i = j;
	}
}

/* Gives the ranks of this node disjoint cores through StarPU's variables,
 * unless the user or the launcher already decided; says what in where. */
static void bind_cores(char *where, size_t size)
{
	const char *user[] = {"STARPU_WORKERS_CPUID", "STARPU_WORKERS_COREID", "STARPU_WORKERS_NOBIND"};
	for (size_t i = 0; i < sizeof user / sizeof *user; i++)
		if (getenv(user[i])) {
			snprintf(where, size, "cores as %s=%s says", user[i], getenv(user[i]));
			return;
		}
	cpu_set_t set;
	int allowed[CPU_SETSIZE], nallowed = 0;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				allowed[nallowed++] = c;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	char text[128];
	if (nallowed > 0 && nallowed < online) {
		/* The launcher bound this process (e.g. mpirun --bind-to core):
		 * StarPU sees only these cores. */
		cpus_text(allowed, nallowed, text, sizeof text);
		snprintf(where, size, "cores %s (the launcher's binding)", text);
		return;
	}
	int n = online > 0 ? (int)online : 1, per = n / local_size, first;
	if (per >= 1) {
		first = local_rank * per;
	} else { /* more ranks than cores: they share, one core each */
		per = 1;
		first = local_rank % n;
	}
	char list[CPU_SETSIZE * 5];
	size_t off = 0;
	int ids[CPU_SETSIZE];
	for (int i = 0; i < per && off < sizeof list; i++) {
		ids[i] = first + i;
		off += (size_t)snprintf(list + off, sizeof list - off, "%s%d", i ? " " : "", first + i);
	}
	setenv("STARPU_WORKERS_CPUID", list, 1);
	char ncpu[16];
	snprintf(ncpu, sizeof ncpu, "%d", per);
	setenv("STARPU_NCPU", ncpu, 0); /* the user's STARPU_NCPU wins */
	cpus_text(ids, per, text, sizeof text);
	snprintf(where, size, "cores %s%s", text, per * local_size > n ? " (shared: more ranks than cores)" : "");
}

int starnn_dist_setup(uint64_t config_hash, int *mpi)
{
	*mpi = 0;
	dist_rank = 0, dist_size = 1, local_rank = 0, local_size = 1, dist_on = 0;
	dist_line[0] = '\0';
	/* gradients in a kernel's blocked layout stay on one rank: they cross
	 * the wire as rows, which its formats compress (runtime/core/tensor.h) */
	starnn_tensor_allow_wlayouts(launcher_size() <= 1);
	if (launcher_size() <= 1)
		return 0;
	int inited = 0, provided = 0;
	MPI_Initialized(&inited);
	if (!inited) {
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
			return starnn_error(STARNN_ESTARPU, "dist: MPI_Init_thread failed");
		mpi_inited_here = 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &dist_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &dist_size);
	MPI_Comm node;
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, dist_rank, MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &local_rank);
	MPI_Comm_size(node, &local_size);
	MPI_Comm_free(&node);

	/* Same configuration on every rank: every rank sees every hash, so
	 * they all stop together with the same message. */
	uint64_t *hashes = malloc(sizeof *hashes * (size_t)dist_size);
	if (!hashes) {
		starnn_dist_finish();
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	}
	MPI_Allgather(&config_hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	int bad = -1;
	for (int r = 1; r < dist_size && bad < 0; r++)
		if (hashes[r] != hashes[0])
			bad = r;
	if (bad >= 0) {
		unsigned long long h0 = (unsigned long long)hashes[0], hb = (unsigned long long)hashes[bad];
		free(hashes);
		starnn_dist_finish();
		return starnn_error(STARNN_EINVAL,
		                    "rank %d was started with other options than rank 0 (configuration hash %016llx vs "
		                    "%016llx): every rank must get the same command line",
		                    bad, hb, h0);
	}
	free(hashes);

	const char *skip = getenv("STARNN_DIST_BENCH_NO_GRAD_EXCHANGE");
	no_grad_exchange = skip && *skip && strcmp(skip, "0") != 0;
	if (no_grad_exchange && dist_rank == 0)
		fprintf(stderr, "starnn: STARNN_DIST_BENCH_NO_GRAD_EXCHANGE is set: the gradients are not all-reduced, "
		                "each rank trains its own replica (for measuring the exchange's cost only)\n");
	const char *chunk = getenv("STARNN_DIST_CHUNK");
	if (chunk && *chunk) {
		char *end;
		long v = strtol(chunk, &end, 10);
		if (*end || v < 1) {
			starnn_dist_finish();
			return starnn_error(STARNN_EINVAL, "STARNN_DIST_CHUNK='%s': expected a positive element count", chunk);
		}
		chunk_elems = (size_t)v;
	}
	char where[200];
	bind_cores(where, sizeof where);
	/* The progression thread mostly waits: it shares the rank's cores
	 * rather than asking for a core of its own (StarPU-MPI would bind it
	 * onto a worker's core with a warning when none is left). */
	if (!getenv("STARPU_MPI_THREAD_CPUID") && !getenv("STARPU_MPI_THREAD_COREID"))
		setenv("STARPU_MPI_NOBIND", "1", 0);
	/* StarPU's CPU workers and its MPI progression thread both poll
	 * (Debian's StarPU has non-blocking drivers), so a rank with one
	 * worker keeps two threads busy on one core, and the exchange and the
	 * compute slow each other down (measured: 5x slower steps with 2 ranks
	 * x 1 worker on 2 cores). Unless the user chose otherwise, the
	 * progression thread drives the first CPU worker itself
	 * (STARPU_MPI_DRIVER_CALL_FREQUENCY): one polling thread per core,
	 * which runs a task, tests the requests, runs the next task. */
	const char *ncpu_env = getenv("STARPU_NCPU");
	if (!getenv("STARPU_MPI_DRIVER_CALL_FREQUENCY") && !(ncpu_env && atoi(ncpu_env) == 0)) {
		setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "1", 1);
		setenv("STARPU_MPI_DRIVER_TASK_FREQUENCY", "1", 0);
	}
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	snprintf(dist_line, sizeof dist_line, "rank %d/%d (local %d/%d on %s), %s", dist_rank, dist_size, local_rank,
	         local_size, host, where);
	*mpi = 1;
	return 0;
}

/* StarPU-MPI's progression thread sleeps when it has no receive pending
 * and nothing to send, and while it sleeps the worker it drives runs
 * nothing: each rank keeps one receive from itself posted for the whole
 * run (the sentinel), which its own send completes once all its tasks
 * have run (starnn_dist_stop). From itself, not from another rank: a
 * neighbour that finished first would stop this rank's worker. */
#define SENTINEL_TAG ((starpu_mpi_tag_t)1 << 51)
static starpu_data_handle_t sentinel_recv, sentinel_send;
static int sentinel_in, sentinel_out;

static int sentinel_post(void)
{
	starpu_variable_data_register(&sentinel_recv, STARPU_MAIN_RAM, (uintptr_t)&sentinel_in, sizeof sentinel_in);
	starpu_variable_data_register(&sentinel_send, STARPU_MAIN_RAM, (uintptr_t)&sentinel_out, sizeof sentinel_out);
	int rc = starpu_mpi_irecv_detached(sentinel_recv, dist_rank, SENTINEL_TAG, MPI_COMM_WORLD,
	                                   NULL, NULL);
	if (rc)
		return starnn_error(STARNN_ESTARPU, "dist: posting the progression sentinel failed (%d)", rc);
	return 0;
}

static void sentinel_release(void)
{
	if (!sentinel_recv)
		return;
	/* Every task has run: the driven worker is not needed any more. */
	starpu_mpi_isend_detached(sentinel_send, dist_rank, SENTINEL_TAG, MPI_COMM_WORLD,
	                          NULL, NULL);
	starpu_data_unregister(sentinel_recv);
	starpu_data_unregister(sentinel_send);
	sentinel_recv = sentinel_send = NULL;
}

int starnn_dist_start(struct starpu_conf *conf)
{
	/* StarPU-MPI reserves a core for its progression thread unless the
	 * worker count is given: with STARPU_NCPU set (by the user or by
	 * bind_cores), that many workers, the thread sharing their cores. */
	const char *ncpu = getenv("STARPU_NCPU");
	if (ncpu && *ncpu)
		conf->ncpus = atoi(ncpu);
	int rc = starpu_mpi_init_conf(NULL, NULL, 0, MPI_COMM_WORLD, conf);
	if (rc != 0)
		return rc;
	dist_on = 1;
	const char *freq = getenv("STARPU_MPI_DRIVER_CALL_FREQUENCY");
	if (freq && atoi(freq) > 0 && starpu_cpu_worker_get_count() > 0)
		return sentinel_post();
	return 0;
}

struct scratch {
	starnn_tensor *t;         /* the tensor reduced (identity only) */
	int64_t shape[STARNN_MAX_DIMS];
	int ndim;
	starnn_tensor *tmp[32];   /* one receive buffer per tree level */
	/* Compressed exchange (--wire-grads): per chunk, the wire copy this
	 * rank sends up and receives down, and one receive buffer per level. */
	int wfmt, nw;
	starnn_tensor **w, **wr[32];
};
static struct scratch *scratch;
static int nscratch;

static void scratch_free_wire(struct scratch *sc)
{
	for (int c = 0; c < sc->nw; c++) {
		starnn_tensor_destroy(sc->w[c]);
		for (int l = 0; l < 32; l++)
			if (sc->wr[l])
				starnn_tensor_destroy(sc->wr[l][c]);
	}
	free(sc->w);
	for (int l = 0; l < 32; l++)
		free(sc->wr[l]), sc->wr[l] = NULL;
	sc->w = NULL, sc->nw = 0;
}

void starnn_dist_stop(void)
{
	if (!dist_on)
		return;
	starpu_task_wait_for_all();
	sentinel_release();
	starpu_mpi_wait_for_all(MPI_COMM_WORLD);
	for (int i = 0; i < nscratch; i++)
		scratch_free_wire(&scratch[i]);
	for (int i = 0; i < nscratch; i++)
		for (int l = 0; l < 32; l++)
			starnn_tensor_destroy(scratch[i].tmp[l]);
	free(scratch);
	scratch = NULL, nscratch = 0;
	starpu_mpi_barrier(MPI_COMM_WORLD);
	starpu_mpi_shutdown();
	dist_on = 0;
}

void starnn_dist_abort(int status)
{
	if (!dist_on)
		return;
	fflush(stdout);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, status);
}

void starnn_dist_finish(void)
{
	if (mpi_inited_here) {
		MPI_Finalize();
		mpi_inited_here = 0;
	}
}

/* Message tags: identical on both sides because every rank submits the
 * same collectives in the same order. */
static uint64_t coll_seq;
static starpu_mpi_tag_t tag_of(uint64_t seq, int down, int chunk)
{
	return (starpu_mpi_tag_t)(((uint64_t)1 << 50) | ((seq & 0xffffffull) << 18) | ((uint64_t)down << 17) |
	                          (uint64_t)chunk);
}

/* Accounting (starnn_dist_stats): bytes and messages sent, and the time
 * during which at least one collective was in flight, from the moment its
 * data was ready on this rank (an acquire callback on each part) to the
 * completion of its last request (the requests' callbacks). A collective
 * is freed by its last event; callbacks run in StarPU's threads. */
struct coll {
	int pending; /* ready events to come + requests not completed */
	int started;
	int kind;
};
static starpu_pthread_mutex_t stats_mutex = STARPU_PTHREAD_MUTEX_INITIALIZER;
static struct starnn_dist_stats stats;
static int in_flight;
static double busy_since;
static struct coll *cur; /* the collective being submitted (main thread) */

static double now_s(void)
{
	return starpu_timing_now() * 1e-6;
}

static void coll_event(struct coll *c, int ready)
{
	STARPU_PTHREAD_MUTEX_LOCK(&stats_mutex);
	if (ready && !c->started) {
		c->started = 1;
		if (in_flight++ == 0)
			busy_since = now_s();
	}
	int last = --c->pending == 0;
	if (last && c->started && --in_flight == 0)
		stats.exchange_s += now_s() - busy_since;
	STARPU_PTHREAD_MUTEX_UNLOCK(&stats_mutex);
	if (last)
		free(c);
}

static void req_done(void *arg)
{
	coll_event(arg, 0);
}

struct ready_arg {
	struct coll *c;
	starpu_data_handle_t handle;
};

static void part_ready(void *arg)
{
	struct ready_arg *a = arg;
	starpu_data_release(a->handle);
	coll_event(a->c, 1);
	free(a);
}

/* Opens the accounting of a collective (cur); parts are added with
 * coll_ready, requests by post; coll_end lets it finish. */
static int coll_begin(int kind)
{
	cur = calloc(1, sizeof *cur);
	if (!cur)
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	cur->pending = 1; /* held until coll_end */
	cur->kind = kind;
	STARPU_PTHREAD_MUTEX_LOCK(&stats_mutex);
	stats.collectives[kind]++;
	STARPU_PTHREAD_MUTEX_UNLOCK(&stats_mutex);
	return 0;
}

static int coll_ready(starnn_tensor *t)
{
	struct ready_arg *a = malloc(sizeof *a);
	if (!a)
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	starnn_tensor_prepare(t, 0);
	a->c = cur;
	a->handle = t->handle;
	STARPU_PTHREAD_MUTEX_LOCK(&stats_mutex);
	cur->pending++;
	STARPU_PTHREAD_MUTEX_UNLOCK(&stats_mutex);
	int rc = starpu_data_acquire_cb(t->handle, STARPU_R, part_ready, a);
	if (rc) {
		free(a);
		return starnn_error(STARNN_ESTARPU, "dist: starpu_data_acquire_cb of %s failed (%d)", t->name, rc);
	}
	return 0;
}

static void coll_end(void)
{
	struct coll *c = cur;
	cur = NULL;
	coll_event(c, 0);
}

/* Sends (recv 0) or receives t; raw: the bytes of the fp32 data a wire
 * copy stands for (0: t itself). */
static int post_raw(starnn_tensor *t, int peer, starpu_mpi_tag_t tag, int recv, size_t raw)
{
	starnn_tensor_prepare(t, recv);
	STARPU_PTHREAD_MUTEX_LOCK(&stats_mutex);
	cur->pending++;
	if (!recv) {
		stats.raw_bytes[cur->kind] += raw ? raw : starnn_tensor_numel(t) * starnn_dtype_size(t->dtype);
		stats.bytes_sent[cur->kind] += (uint64_t)(starnn_tensor_numel(t) * starnn_dtype_size(t->dtype));
		stats.messages_sent[cur->kind]++;
	}
	STARPU_PTHREAD_MUTEX_UNLOCK(&stats_mutex);
	int rc = recv ? starpu_mpi_irecv_detached(t->handle, peer, tag, MPI_COMM_WORLD, req_done, cur)
	              : starpu_mpi_isend_detached(t->handle, peer, tag, MPI_COMM_WORLD, req_done, cur);
	if (rc)
		return starnn_error(STARNN_ESTARPU, "dist: starpu_mpi_%s_detached of %s %s rank %d failed (%d)",
		                    recv ? "irecv" : "isend", t->name, recv ? "from" : "to", peer, rc);
	return 0;
}

static int post(starnn_tensor *t, int peer, starpu_mpi_tag_t tag, int recv)
{
	return post_raw(t, peer, tag, recv, 0);
}

int starnn_dist_stats(struct starnn_dist_stats *out)
{
	STARPU_PTHREAD_MUTEX_LOCK(&stats_mutex);
	*out = stats;
	if (in_flight)
		out->exchange_s += now_s() - busy_since;
	STARPU_PTHREAD_MUTEX_UNLOCK(&stats_mutex);
	return 0;
}

/* Ranks relative to a tree's root: the binomial trees below are drawn
 * over v = (rank - root) mod size, so any rank can be the root. */
static int vrank(int root)
{
	return (dist_rank - root + dist_size) % dist_size;
}

static int rrank(int v, int root)
{
	return (v + root) % dist_size;
}

/* The root's x down the binomial tree (largest stride first). With a wire
 * copy w (format f, codelets/wire.h): the root compresses src (x, or the
 * exact master of a weight) once and keeps the decompressed copy in x,
 * every other rank decompresses what its parent sent and forwards the same
 * bytes, so that every rank ends with the same bits. Without (w NULL), x
 * itself travels (the root first copies src into it when they differ). */
static int tree_down(starnn_tensor *x, starnn_tensor *src, starnn_tensor *w, int f, uint64_t seq, int chunk,
                     int root)
{
	starnn_wire_format wf = (starnn_wire_format)f;
	starnn_tensor *m = w ? w : x; /* what is sent */
	size_t raw = w ? starnn_tensor_numel(x) * sizeof(float) : 0;
	int v = vrank(root);
	if (v == 0 && w) {
		STARNN_CHECK(starnn_compress(src, wf, w));
		STARNN_CHECK(starnn_decompress(w, wf, x));
	} else if (v == 0 && src != x) {
		STARNN_CHECK(starnn_copy(src, x));
	}
	int top = 1;
	while (top * 2 < dist_size)
		top *= 2;
	starpu_mpi_tag_t tag = tag_of(seq, 1, chunk);
	for (int s = top; s >= 1; s /= 2) {
		if (v % (2 * s) == 0 && v + s < dist_size) {
			STARNN_CHECK(post_raw(m, rrank(v + s, root), tag, 0, raw));
		} else if (v % (2 * s) == s) {
			STARNN_CHECK(post_raw(m, rrank(v - s, root), tag, 1, raw));
			if (w)
				STARNN_CHECK(starnn_decompress(w, wf, x));
		}
	}
	return 0;
}

static struct scratch *scratch_for(starnn_tensor *t)
{
	for (int i = 0; i < nscratch; i++)
		if (scratch[i].t == t && scratch[i].ndim == t->ndim &&
		    memcmp(scratch[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) == 0)
			return &scratch[i];
	struct scratch *list = realloc(scratch, sizeof *list * (size_t)(nscratch + 1));
	if (!list)
		return NULL;
	scratch = list;
	struct scratch *s = &scratch[nscratch++];
	memset(s, 0, sizeof *s);
	s->t = t;
	s->ndim = t->ndim;
	memcpy(s->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
	return s;
}

int starnn_dist_broadcast(starnn_tensor *t)
{
	if (!dist_on)
		return 0;
	STARNN_CHECK(coll_begin(STARNN_DIST_BROADCAST));
	int rc = coll_ready(t);
	if (!rc)
		rc = tree_down(t, t, NULL, -1, coll_seq++, 0, 0);
	coll_end();
	return rc;
}

static int add_f32(starnn_tensor *acc, starnn_tensor *x)
{
	return starnn_axpy(1.0f, x, acc);
}

static int allreduce_parts(starnn_tensor *t, starnn_dist_add_fn add, int wfmt, int root, int down);

/* The sum over the ranks into t of the root (down 0: a reduction), or of
 * every rank (down 1: the root's sum sent back down the same tree). */
static int allreduce(starnn_tensor *t, starnn_dist_add_fn add, int wfmt, int kind, int root, int down)
{
	STARNN_CHECK(coll_begin(kind));
	int rc = allreduce_parts(t, add, wfmt, root, down);
	coll_end();
	return rc;
}

/* The wire buffers of sc for nchunks chunks of t in format f (made once;
 * remade when the format or the chunking changes). */
static int wire_buffers(struct scratch *sc, starnn_tensor *t, starnn_tensor **parts, int nchunks, int f, int v)
{
	if (sc->w && sc->nw == nchunks && sc->wfmt == f)
		return 0;
	scratch_free_wire(sc);
	sc->w = calloc((size_t)nchunks, sizeof *sc->w);
	if (!sc->w)
		return starnn_error(STARNN_ENOMEM, "dist_allreduce: out of memory");
	sc->nw = nchunks, sc->wfmt = f;
	for (int c = 0; c < nchunks; c++) {
		starnn_tensor *x = parts ? parts[c] : t;
		int64_t bytes = (int64_t)starnn_wire_bytes((starnn_wire_format)f, starnn_tensor_numel(x));
		char name[STARNN_NAME_MAX];
		snprintf(name, sizeof name, "%.32s.wire%d", t->name, c);
		STARNN_CHECK(starnn_tensor_create(&sc->w[c], name, STARNN_U8, 1, &bytes));
		for (int level = 0, s = 1; s < dist_size; s *= 2, level++) {
			if (!(v % (2 * s) == 0 && v + s < dist_size))
				continue;
			if (!sc->wr[level] && !(sc->wr[level] = calloc((size_t)nchunks, sizeof **sc->wr)))
				return starnn_error(STARNN_ENOMEM, "dist_allreduce: out of memory");
			snprintf(name, sizeof name, "%.32s.wire%d.recv%d", t->name, c, level);
			STARNN_CHECK(starnn_tensor_create(&sc->wr[level][c], name, STARNN_U8, 1, &bytes));
		}
	}
	return 0;
}

static int allreduce_parts(starnn_tensor *t, starnn_dist_add_fn add, int wfmt, int root, int down)
{
	uint64_t seq = coll_seq++;
	int v = vrank(root);
	struct scratch *sc = scratch_for(t);
	if (!sc)
		return starnn_error(STARNN_ENOMEM, "dist_allreduce: out of memory");
	/* Chunks along the first axis (the only one of a 1-D tensor). */
	int64_t extent = t->shape[0];
	size_t numel = starnn_tensor_numel(t);
	int64_t nchunks = (int64_t)((numel + chunk_elems - 1) / chunk_elems);
	if (nchunks > extent)
		nchunks = extent;
	if (nchunks > 65536)
		nchunks = 65536;
	if (nchunks < 1 || add != add_f32)
		nchunks = 1;
	starnn_tensor **parts = NULL;
	if (nchunks > 1)
		STARNN_CHECK(starnn_tensor_split(t, 0, (int)nchunks, NULL, &parts));
	if (wfmt >= 0)
		STARNN_CHECK(wire_buffers(sc, t, parts, (int)nchunks, wfmt, v));
	starnn_tensor **tparts[32] = {NULL}; /* the receive buffers' chunks, per level */
	for (int level = 0, s = 1; s < dist_size; s *= 2, level++) {
		if (!(v % (2 * s) == 0 && v + s < dist_size))
			continue;
		if (!sc->tmp[level]) {
			char name[STARNN_NAME_MAX];
			snprintf(name, sizeof name, "%.48s.recv%d", t->name, level);
			STARNN_CHECK(starnn_tensor_create(&sc->tmp[level], name, STARNN_FP32, t->ndim, t->shape));
		}
		if (nchunks > 1)
			STARNN_CHECK(starnn_tensor_split(sc->tmp[level], 0, (int)nchunks, NULL, &tparts[level]));
	}
	for (int c = 0; c < nchunks; c++) {
		starnn_tensor *x = nchunks > 1 ? parts[c] : t;
		STARNN_CHECK(coll_ready(x));
		starpu_mpi_tag_t up = tag_of(seq, 0, c);
		for (int level = 0, s = 1; s < dist_size; s *= 2, level++) {
			if (v % (2 * s) == 0) {
				if (v + s < dist_size) {
					int child = rrank(v + s, root);
					starnn_tensor *r = nchunks > 1 ? tparts[level][c] : sc->tmp[level];
					if (wfmt >= 0) {
						starnn_tensor *wr = sc->wr[level][c];
						STARNN_CHECK(post_raw(wr, child, up, 1, 0));
						STARNN_CHECK(starnn_decompress(wr, (starnn_wire_format)wfmt, r));
					} else {
						STARNN_CHECK(post(r, child, up, 1));
					}
					STARNN_CHECK(add(x, r));
				}
			} else {
				int parent = rrank(v - s, root);
				if (wfmt >= 0) {
					STARNN_CHECK(starnn_compress(x, (starnn_wire_format)wfmt, sc->w[c]));
					STARNN_CHECK(post_raw(sc->w[c], parent, up, 0, starnn_tensor_numel(x) * sizeof(float)));
				} else {
					STARNN_CHECK(post(x, parent, up, 0));
				}
				break;
			}
		}
		if (down)
			STARNN_CHECK(tree_down(x, x, wfmt >= 0 ? sc->w[c] : NULL, wfmt, seq, c, root));
	}
	return 0;
}

int starnn_dist_allreduce(starnn_tensor *t)
{
	if (!dist_on)
		return 0;
	if (t->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "dist_allreduce: %s: fp32 only", t->name);
	return allreduce(t, add_f32, -1, STARNN_DIST_OTHER, 0, 1);
}

int starnn_dist_allreduce_wire(starnn_tensor *t, int wire)
{
	if (!dist_on)
		return 0;
	if (t->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "dist_allreduce: %s: fp32 only", t->name);
	if (wire >= STARNN_WIRE_NFORMATS)
		return starnn_error(STARNN_EINVAL, "dist_allreduce: %s: unknown wire format %d", t->name, wire);
	return allreduce(t, add_f32, wire == STARNN_WIRE_FP32 ? -1 : wire, STARNN_DIST_GRADIENTS, 0, 1);
}

int starnn_dist_allreduce_with(starnn_tensor *t, starnn_dist_add_fn add)
{
	if (!dist_on)
		return 0;
	return allreduce(t, add, -1, STARNN_DIST_OTHER, 0, 1);
}


/* The parameter-owner mode's messages (see the weights section below). */

/* The owner's weights down its tree: w (format f) when compressed, else x
 * (fp32); src is the owner's exact master (x when there is none); norm,
 * when not NULL, is the owner's 1-element norm tensor, sent the same way. */
static int weights_down(starnn_tensor *x, starnn_tensor *src, starnn_tensor *w, int f, starnn_tensor *norm, int owner)
{
	STARNN_CHECK(coll_begin(STARNN_DIST_WEIGHTS));
	int rc = coll_ready(dist_rank == owner ? src : x);
	if (!rc)
		rc = tree_down(x, src, w, f, coll_seq++, 0, owner);
	if (!rc && norm)
		rc = tree_down(norm, norm, NULL, -1, coll_seq++, 0, owner);
	coll_end();
	return rc;
}

/* The gradient's sum over the ranks into the owner's t only. */
static int reduce_to(starnn_tensor *t, int wire, int owner)
{
	return allreduce(t, add_f32, wire, STARNN_DIST_GRADIENTS, owner, 0);
}

/* t of rank `from` into t of rank 0 (a checkpoint's gathering). Every
 * rank calls it (the message tags follow the collectives' count); t is
 * used on ranks 0 and from only. */
static int to_rank0(starnn_tensor *t, int from)
{
	uint64_t seq = coll_seq++;
	if (dist_rank != 0 && dist_rank != from)
		return 0;
	STARNN_CHECK(coll_begin(STARNN_DIST_OTHER));
	int rc = 0;
	if (dist_rank == from)
		rc = coll_ready(t);
	if (!rc)
		rc = post(t, dist_rank == 0 ? from : 0, tag_of(seq, 0, 0), dist_rank == 0);
	coll_end();
	return rc;
}

#else /* no StarPU-MPI: one rank */

static int weights_down(starnn_tensor *x, starnn_tensor *src, starnn_tensor *w, int f, starnn_tensor *norm, int owner)
{
	(void)x, (void)src, (void)w, (void)f, (void)norm, (void)owner;
	return 0;
}

static int reduce_to(starnn_tensor *t, int wire, int owner)
{
	(void)t, (void)wire, (void)owner;
	return 0;
}

static int to_rank0(starnn_tensor *t, int from)
{
	(void)t, (void)from;
	return 0;
}

int starnn_dist_setup(uint64_t config_hash, int *mpi)
{
	(void)config_hash;
	*mpi = 0;
	return 0;
}

int starnn_dist_start(struct starpu_conf *conf)
{
	(void)conf;
	return -ENODEV;
}

void starnn_dist_stop(void) {}

int starnn_dist_stats(struct starnn_dist_stats *out)
{
	memset(out, 0, sizeof *out);
	return 0;
}
void starnn_dist_finish(void) {}
void starnn_dist_abort(int status) { (void)status; }

int starnn_dist_broadcast(starnn_tensor *t)
{
	(void)t;
	return 0;
}

int starnn_dist_allreduce(starnn_tensor *t)
{
	(void)t;
	return 0;
}

int starnn_dist_allreduce_with(starnn_tensor *t, starnn_dist_add_fn add)
{
	(void)t, (void)add;
	return 0;
}

int starnn_dist_allreduce_wire(starnn_tensor *t, int wire)
{
	(void)t, (void)wire;
	return 0;
}

#endif

int starnn_dist_sum_doubles(double *v, int n)
{
	if (!dist_on || n <= 0)
		return 0;
	/* A batch-norm workspace row holds 2 c doubles; its add codelet sums
	 * them in double. */
	int64_t c = (n + 1) / 2;
	starnn_tensor *t = NULL;
	STARNN_CHECK(starnn_batchnorm_work_create(&t, "dist_sum", c, 1));
	double *buf = calloc((size_t)(2 * c), sizeof *buf);
	int rc = buf ? 0 : starnn_error(STARNN_ENOMEM, "dist_sum_doubles: out of memory");
	if (!rc) {
		memcpy(buf, v, sizeof *v * (size_t)n);
		rc = starnn_tensor_write(t, buf);
	}
	if (!rc)
		rc = starnn_dist_allreduce_with(t, starnn_bn_slot_add);
	if (!rc)
		rc = starnn_tensor_read(t, buf);
	if (!rc)
		memcpy(v, buf, sizeof *v * (size_t)n);
	free(buf);
	starnn_tensor_destroy(t);
	return rc;
}

int starnn_dist_report(FILE *out, FILE *json, int64_t steps)
{
	if (!dist_on || steps < 1)
		return 0;
	struct starnn_dist_stats st;
	STARNN_CHECK(starnn_dist_stats(&st));
	enum { B = 0, M = STARNN_DIST_KINDS, R = 2 * STARNN_DIST_KINDS, T = 3 * STARNN_DIST_KINDS, N };
	double v[N];
	for (int k = 0; k < STARNN_DIST_KINDS; k++) {
		v[B + k] = (double)st.bytes_sent[k];
		v[M + k] = (double)st.messages_sent[k];
		v[R + k] = (double)st.raw_bytes[k];
	}
	v[T] = st.exchange_s;
	STARNN_CHECK(starnn_dist_sum_doubles(v, N));
	if (dist_rank != 0)
		return 0;
	const int g = STARNN_DIST_GRADIENTS, o = STARNN_DIST_OTHER, wk = STARNN_DIST_WEIGHTS, b = STARNN_DIST_BROADCAST;
	double mib = 1.0 / (1024.0 * 1024.0 * (double)steps);
	if (out) {
		char wire[96] = "", weights[256] = "";
		if (grad_wire >= 0)
			snprintf(wire, sizeof wire, " as %s, %.2f MiB uncompressed", starnn_wire_name((starnn_wire_format)grad_wire),
			         v[R + g] * mib);
		if (wps) {
			char formats[128];
			starnn_dist_weights_summary(formats, sizeof formats);
			snprintf(weights, sizeof weights, ", weights %.2f MiB%s%s%s, %.2f MiB uncompressed, in %.0f messages",
			         v[B + wk] * mib, *formats ? " (now: " : "", formats, *formats ? ")" : "", v[R + wk] * mib,
			         v[M + wk] / (double)steps);
		}
		fprintf(out,
		        "exchange: %.2f MiB per step sent between ranks (gradients %.2f MiB%s in %.0f messages%s, batch-norm "
		        "statistics and other sums %.3f MiB in %.0f; broadcasts %.2f MiB in all), in flight %.1f ms per step "
		        "(mean over %d ranks)\n",
		        (v[B + g] + v[B + o] + v[B + wk]) * mib, v[B + g] * mib, wire, v[M + g] / (double)steps, weights,
		        v[B + o] * mib, v[M + o] / (double)steps, v[B + b] / (1024.0 * 1024.0),
		        1e3 * v[T] / dist_size / (double)steps, dist_size);
	}
	if (json) {
		static const char *names[STARNN_DIST_KINDS] = {"gradients", "broadcasts", "other", "weights"};
		fprintf(json, "{\"exchange\":{\"ranks\":%d,\"steps\":%lld,\"in_flight_s\":%.6g", dist_size, (long long)steps,
		        v[T] / dist_size);
		for (int k = 0; k < STARNN_DIST_KINDS; k++)
			fprintf(json, ",\"%s\":{\"bytes\":%.0f,\"raw_bytes\":%.0f,\"messages\":%.0f,\"bytes_per_step\":%.1f}",
			        names[k], v[B + k], v[R + k], v[M + k], v[B + k] / (double)steps);
		fprintf(json, "}}\n");
	}
	return 0;
}

/* ------------------------------------------------ weights (owner mode) */

struct wparam {
	int owner;
	int fmt;                  /* the weights' current wire format (STARNN_WIRE_FP32: sent as they are) */
	struct starnn_awp_layer awp;
	int norm_pending;         /* norm holds a value not observed yet */
	int changed;              /* format changed since the last starnn_dist_weights_log */
	int64_t changed_at;       /* at the update of this step */
	starnn_tensor *wire;      /* the compressed weights, sized for fmt */
	starnn_tensor *norm;      /* ||exact||^2 (1 element), adaptive mode only */
};
static struct starnn_dist_weights wcfg = {.shard = 0, .wire = STARNN_DIST_WIRE_NONE};
static struct wparam *wp;
static int nwp;
static char *wstate_text; /* starnn_dist_weights_set_state's, applied by weights_begin */
static int64_t wstep;     /* the step being updated (weights_updated) */

int starnn_dist_set_weights(const struct starnn_dist_weights *w)
{
	if (w->wire != STARNN_DIST_WIRE_NONE && w->wire != STARNN_DIST_WIRE_AWP &&
	    (w->wire < 0 || w->wire >= STARNN_WIRE_NFORMATS))
		return starnn_error(STARNN_EINVAL, "dist: unknown weights wire format %d", w->wire);
	if (w->wire != STARNN_DIST_WIRE_NONE && w->wire != STARNN_WIRE_FP32 && !w->shard)
		return starnn_error(STARNN_EINVAL,
		                    "--wire-weights needs --shard-optimizer: weights cross the rank edge only when each rank "
		                    "updates its own share of them (otherwise every rank has them already)");
	if (w->wire == STARNN_DIST_WIRE_AWP)
		STARNN_CHECK(starnn_awp_check(&w->awp));
	wcfg = *w;
	if (wcfg.wire == STARNN_WIRE_FP32)
		wcfg.wire = STARNN_DIST_WIRE_NONE;
	return 0;
}

const struct starnn_dist_weights *starnn_dist_get_weights(void)
{
	return &wcfg;
}

static void wparams_free(void)
{
	for (int i = 0; i < nwp; i++) {
		starnn_tensor_destroy(wp[i].wire);
		starnn_tensor_destroy(wp[i].norm);
	}
	free(wp);
	wp = NULL, nwp = 0, wps = NULL;
}

static struct wparam *wparam_of(starnn_params *ps, starnn_param *p, int *index)
{
	if (ps != wps)
		return NULL;
	for (int i = 0; i < nwp; i++)
		if (starnn_params_at(ps, i) == p) {
			if (index)
				*index = i;
			return &wp[i];
		}
	return NULL;
}

/* The wire buffer of w for its current format (remade when it changed). */
static int wire_buffer(starnn_param *p, struct wparam *w)
{
	if (w->fmt == STARNN_WIRE_FP32)
		return 0;
	int64_t bytes = (int64_t)starnn_wire_bytes((starnn_wire_format)w->fmt, starnn_tensor_numel(p->master));
	if (w->wire && w->wire->shape[0] == bytes)
		return 0;
	starnn_tensor_destroy(w->wire);
	w->wire = NULL;
	char name[STARNN_NAME_MAX];
	snprintf(name, sizeof name, "%.40s.wire", p->master->name);
	return starnn_tensor_create(&w->wire, name, STARNN_U8, 1, &bytes);
}

/* The weights of p from its owner to every rank in w's format (one rank:
 * through the format, without a message). */
static int publish(starnn_param *p, struct wparam *w)
{
	STARNN_CHECK(wire_buffer(p, w));
	int lossy = w->fmt != STARNN_WIRE_FP32;
	starnn_tensor *src = p->exact ? p->exact : p->master;
	if (dist_on)
		return weights_down(p->master, src, lossy ? w->wire : NULL, w->fmt, w->norm, w->owner);
	if (lossy) {
		STARNN_CHECK(starnn_compress(src, (starnn_wire_format)w->fmt, w->wire));
		return starnn_decompress(w->wire, (starnn_wire_format)w->fmt, p->master);
	}
	return src != p->master ? starnn_copy(src, p->master) : 0;
}

/* Adaptive mode: observes the norm of the previous step (waiting for it if
 * it is not here yet: it was sent one step ago), then submits this step's
 * norm on the owner. The format of the weights sent next follows. */
static int awp_step(starnn_param *p, struct wparam *w)
{
	if (wcfg.wire != STARNN_DIST_WIRE_AWP)
		return 0;
	if (w->norm_pending) {
		float sq = 0.0f;
		STARNN_CHECK(starnn_tensor_read(w->norm, &sq));
		if (starnn_awp_observe(&wcfg.awp, &w->awp, sqrt((double)sq))) {
			w->fmt = (int)starnn_awp_format(&wcfg.awp, &w->awp);
			w->changed = 1;
			w->changed_at = wstep;
		}
	}
	if (dist_rank == w->owner)
		STARNN_CHECK(starnn_sumsq(p->exact ? p->exact : p->master, w->norm, 0.0f));
	w->norm_pending = 1;
	return 0;
}

static int weights_updated(void *ctx, starnn_param *p)
{
	starnn_params *ps = ctx;
	int index = 0;
	struct wparam *w = wparam_of(ps, p, &index);
	if (!w)
		return starnn_error(STARNN_ESTATE, "dist: parameter %s is not in the attached set", p->name);
	if (index == 0)
		wstep++; /* the first parameter's update starts a step */
	STARNN_CHECK(awp_step(p, w));
	return publish(p, w);
}

static int flag_or(void *ctx, starnn_tensor *flag)
{
	(void)ctx;
	return starnn_dist_allreduce(flag); /* 0 = clean; a sum of flags > 0 = some rank overflowed */
}

int starnn_dist_attach(starnn_params *ps)
{
	wparams_free();
	if (!wcfg.shard)
		return 0;
	int n = starnn_params_count(ps);
	wp = calloc((size_t)(n > 0 ? n : 1), sizeof *wp);
	int64_t *load = calloc((size_t)dist_size, sizeof *load);
	int *order = calloc((size_t)(n > 0 ? n : 1), sizeof *order);
	if (!wp || !load || !order) {
		free(load), free(order);
		wparams_free();
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	}
	wps = ps, nwp = n;
	/* Owners: largest parameter first (ties: the earlier one), each to the
	 * rank holding the fewest values so far (ties: the lower rank). */
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) { /* insertion sort: stable, n is small */
		int k = order[i], j = i;
		size_t sk = starnn_tensor_numel(starnn_params_at(ps, k)->master);
		while (j > 0 && starnn_tensor_numel(starnn_params_at(ps, order[j - 1])->master) < sk) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = k;
	}
	for (int i = 0; i < n; i++) {
		int best = 0;
		for (int r = 1; r < dist_size; r++)
			if (load[r] < load[best])
				best = r;
		wp[order[i]].owner = best;
		load[best] += (int64_t)starnn_tensor_numel(starnn_params_at(ps, order[i])->master);
	}
	free(load), free(order);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		struct wparam *w = &wp[i];
		starnn_param *p = starnn_params_at(ps, i);
		w->fmt = STARNN_WIRE_FP32;
		if (wcfg.wire == STARNN_DIST_WIRE_AWP) {
			starnn_awp_layer_init(&wcfg.awp, &w->awp);
			w->fmt = (int)starnn_awp_format(&wcfg.awp, &w->awp);
			int64_t one = 1;
			char name[STARNN_NAME_MAX];
			snprintf(name, sizeof name, "%.40s.norm", p->master->name);
			rc = starnn_tensor_create(&w->norm, name, STARNN_FP32, 1, &one);
		} else if (wcfg.wire >= 0) {
			w->fmt = wcfg.wire;
		}
		w->changed = 1;
	}
	if (rc) {
		wparams_free();
		return rc;
	}
	struct starnn_params_hooks h = {.flag = dist_on ? flag_or : NULL, .updated = weights_updated};
	starnn_params_set_hooks(ps, &h, ps);
	return 0;
}

void starnn_dist_detach(starnn_params *ps)
{
	if (ps && ps == wps) {
		starnn_params_set_hooks(ps, NULL, NULL);
		wparams_free();
	}
}

int starnn_dist_weights_begin(starnn_params *ps, int64_t step)
{
	if (ps != wps || !wps)
		return 0;
	wstep = step;
	for (int i = 0; i < nwp; i++)
		wp[i].changed = 1, wp[i].changed_at = step;
	if (wstate_text) {
		int rc = starnn_dist_weights_set_state(wstate_text);
		free(wstate_text);
		wstate_text = NULL;
		STARNN_CHECK(rc);
	}
	for (int i = 0; i < nwp; i++) {
		starnn_param *p = starnn_params_at(ps, i);
		struct wparam *w = &wp[i];
		p->remote = w->owner != dist_rank;
		if (p->remote) {
			starnn_params_drop_state(ps, p);
		} else if (wcfg.wire != STARNN_DIST_WIRE_NONE && !p->exact) {
			char name[STARNN_NAME_MAX];
			snprintf(name, sizeof name, "%.40s.exact", p->master->name);
			STARNN_CHECK(starnn_tensor_create(&p->exact, name, STARNN_FP32, p->master->ndim, p->master->shape));
			STARNN_CHECK(starnn_copy(p->master, p->exact));
		}
		if (wcfg.wire == STARNN_DIST_WIRE_AWP && dist_rank == w->owner)
			STARNN_CHECK(starnn_sumsq(p->exact ? p->exact : p->master, w->norm, 0.0f));
		w->norm_pending = wcfg.wire == STARNN_DIST_WIRE_AWP;
		STARNN_CHECK(publish(p, w));
	}
	return 0;
}

int starnn_dist_checkpoint_begin(starnn_params *ps)
{
	if (ps != wps || !wps)
		return 0;
	int nslots = starnn_params_nslots(ps);
	for (int i = 0; i < nwp; i++) {
		starnn_param *p = starnn_params_at(ps, i);
		struct wparam *w = &wp[i];
		if (dist_rank == 0 && p->remote)
			STARNN_CHECK(starnn_params_make_state(ps, p));
		if (w->owner == 0) {
			if (dist_rank == 0 && p->exact)
				STARNN_CHECK(starnn_copy(p->exact, p->master));
			continue;
		}
		/* the owner's exact master into rank 0's master, its state into
		 * rank 0's temporary state */
		STARNN_CHECK(to_rank0(dist_rank == w->owner && p->exact ? p->exact : p->master, w->owner));
		for (int k = 0; k < nslots; k++)
			STARNN_CHECK(to_rank0(p->state[k], w->owner));
	}
	return 0;
}

int starnn_dist_checkpoint_end(starnn_params *ps)
{
	if (ps != wps || !wps || dist_rank != 0)
		return 0;
	for (int i = 0; i < nwp; i++) {
		starnn_param *p = starnn_params_at(ps, i);
		struct wparam *w = &wp[i];
		/* rank 0 computes with the weights as they came through their
		 * format: the wire buffer still holds them */
		if (w->fmt != STARNN_WIRE_FP32 && (w->owner != 0 || p->exact))
			STARNN_CHECK(starnn_decompress(w->wire, (starnn_wire_format)w->fmt, p->master));
		if (p->remote)
			starnn_params_drop_state(ps, p);
	}
	return 0;
}

int starnn_dist_weights_state(char **text)
{
	*text = NULL;
	size_t size = 1, off = 0;
	for (int i = 0; i < nwp; i++)
		size += strlen(starnn_params_at(wps, i)->name) + 64;
	char *buf = malloc(size);
	if (!buf)
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	buf[0] = '\0';
	for (int i = 0; i < nwp; i++) {
		char st[64];
		int rc = starnn_awp_layer_format(&wp[i].awp, st, sizeof st);
		if (rc < 0) {
			free(buf);
			return rc;
		}
		off += (size_t)snprintf(buf + off, size - off, "%s %s\n", starnn_params_at(wps, i)->name, st);
	}
	*text = buf;
	return 0;
}

int starnn_dist_weights_set_state(const char *text)
{
	if (!wps) {
		free(wstate_text);
		wstate_text = strdup(text);
		return wstate_text ? 0 : starnn_error(STARNN_ENOMEM, "dist: out of memory");
	}
	if (wcfg.wire != STARNN_DIST_WIRE_AWP)
		return 0;
	int *seen = calloc((size_t)(nwp > 0 ? nwp : 1), sizeof *seen);
	if (!seen)
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	int rc = 0;
	const char *line = text;
	while (*line && !rc) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[STARNN_PARAM_NAME_MAX + 96];
		if (len >= sizeof buf) {
			rc = starnn_error(STARNN_EINVAL, "adaptive wire state: line too long");
			break;
		}
		memcpy(buf, line, len);
		buf[len] = '\0';
		char *sp = strchr(buf, ' ');
		int idx = -1;
		if (sp) {
			*sp = '\0';
			for (int i = 0; i < nwp; i++)
				if (strcmp(starnn_params_at(wps, i)->name, buf) == 0)
					idx = i;
		}
		if (idx < 0)
			rc = starnn_error(STARNN_EINVAL, "adaptive wire state: '%s' is not a parameter of this model", buf);
		else if ((rc = starnn_awp_layer_parse(sp + 1, &wp[idx].awp)) == 0) {
			seen[idx] = 1;
			wp[idx].fmt = (int)starnn_awp_format(&wcfg.awp, &wp[idx].awp);
		}
		line = end ? end + 1 : line + len;
	}
	for (int i = 0; i < nwp && !rc; i++)
		if (!seen[i])
			rc = starnn_error(STARNN_EINVAL, "adaptive wire state: no state for parameter %s",
			                  starnn_params_at(wps, i)->name);
	free(seen);
	return rc;
}

static const char *wformat_name(int fmt)
{
	return fmt == STARNN_WIRE_FP32 ? "fp32" : starnn_wire_name((starnn_wire_format)fmt);
}

void starnn_dist_weights_log(FILE *f, int64_t step)
{
	int any = 0;
	for (int i = 0; i < nwp; i++) {
		if (!wp[i].changed || wp[i].changed_at > step)
			continue;
		wp[i].changed = 0;
		if (!f)
			continue;
		if (!any)
			fprintf(f, "{\"step\":%lld,\"wire_weights\":{", (long long)step);
		fprintf(f, "%s\"%s\":\"%s\"", any ? "," : "", starnn_params_at(wps, i)->name, wformat_name(wp[i].fmt));
		any = 1;
	}
	if (any)
		fprintf(f, "}}\n");
}

void starnn_dist_weights_summary(char *buf, size_t size)
{
	buf[0] = '\0';
	if (!nwp || wcfg.wire == STARNN_DIST_WIRE_NONE)
		return;
	size_t off = 0;
	for (int f = 0; f < STARNN_WIRE_NFORMATS; f++) {
		int n = 0;
		for (int i = 0; i < nwp; i++)
			n += wp[i].fmt == f;
		if (n && off < size)
			off += (size_t)snprintf(buf + off, size - off, "%s%s %d", off ? ", " : "", wformat_name(f), n);
	}
}

int starnn_dist_grad_hook(void *ctx, starnn_param *p)
{
	(void)ctx;
	if (no_grad_exchange)
		return 0;
	struct wparam *w = wps ? wparam_of(wps, p, NULL) : NULL;
	if (w)
		return reduce_to(p->grad[0], grad_wire, w->owner);
	return starnn_dist_allreduce_wire(p->grad[0], grad_wire);
}

int starnn_dist_broadcast_params(starnn_params *ps)
{
	for (int i = 0; i < starnn_params_count(ps); i++)
		STARNN_CHECK(starnn_dist_broadcast(starnn_params_at(ps, i)->master));
	return 0;
}
