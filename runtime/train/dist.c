/* Data-distributed training on StarPU-MPI: broadcast and all-reduce
 * inside the task graph, their accounting and report, and the gradients'
 * exchange (see dist.h). The process's launch (MPI start, ranks, core
 * binding) is runtime/core/launch.c's; the parameter-owner mode is
 * shard.c's. Without StarPU-MPI (configure --disable-mpi, or a StarPU
 * without it) the same functions exist and behave as one rank. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#ifdef STARNN_USE_MPI
#include <mpi.h>
#include <starpu_mpi.h>
#endif

#include "codelets/axpy.h"
#include "codelets/batchnorm.h"
#include "codelets/copy.h"
#include "codelets/wire.h"
#include "runtime/core/launch.h"
#include "runtime/core/submit.h"
#include "runtime/train/dist.h"
#include "runtime/train/dist_internal.h"

#define dist_rank starnn_launch_rank()
#define dist_size starnn_launch_size()
#define dist_on starnn_launch_mpi()

static size_t chunk_elems = 65536;
static int grad_wire = -1; /* --wire-grads: a starnn_wire_format, -1 none */

int starnn_dist_set_wire_grads(int wire)
{
	if (wire >= STARNN_WIRE_NFORMATS)
		return starnn_error(STARNN_EINVAL, "dist: unknown wire format %d", wire);
	grad_wire = wire < 0 || wire == STARNN_WIRE_FP32 ? -1 : wire;
	return 0;
}

int starnn_dist_grad_wire(void)
{
	return grad_wire;
}

void starnn_dist_share(int64_t n, int rank, int size, int64_t *begin, int64_t *count)
{
	int64_t q = n / size, r = n % size;
	*begin = rank * q + (rank < r ? rank : r);
	*count = q + (rank < r);
}

void starnn_dist_set_chunk(size_t elems)
{
	chunk_elems = elems ? elems : 65536;
}

/* The bench and test hooks of the exchange, read once at the first
 * collective (builds with --enable-test-hooks only):
 * STARNN_DIST_CHUNK=N, the all-reduce's chunk size in elements (the tests
 * compare chunked and whole sums); STARNN_DIST_BENCH_NO_GRAD_EXCHANGE=1,
 * no gradient exchange at all (tools/bench/dist measures its cost). */
static int hooks_read, no_grad_exchange;

static int read_hooks(void)
{
	if (hooks_read)
		return 0;
	hooks_read = 1;
#ifdef STARNN_TEST_HOOKS
	const char *skip = getenv("STARNN_DIST_BENCH_NO_GRAD_EXCHANGE");
	no_grad_exchange = skip && *skip && strcmp(skip, "0") != 0;
	if (no_grad_exchange && dist_on && dist_rank == 0)
		fprintf(stderr, "starnn: STARNN_DIST_BENCH_NO_GRAD_EXCHANGE is set: the gradients are not all-reduced, "
		                "each rank trains its own replica (for measuring the exchange's cost only)\n");
	const char *chunk = getenv("STARNN_DIST_CHUNK");
	if (chunk && *chunk) {
		char *end;
		long v = strtol(chunk, &end, 10);
		if (*end || v < 1)
			return starnn_error(STARNN_EINVAL, "STARNN_DIST_CHUNK='%s': expected a positive element count", chunk);
		chunk_elems = (size_t)v;
	}
#endif
	return 0;
}

#ifdef STARNN_USE_MPI
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

/* The collectives' buffers, freed once every request has completed
 * (starnn_launch_stop calls this before StarPU-MPI stops). */
static void free_scratch(void)
{
	for (int i = 0; i < nscratch; i++)
		scratch_free_wire(&scratch[i]);
	for (int i = 0; i < nscratch; i++)
		for (int l = 0; l < 32; l++)
			starnn_tensor_destroy(scratch[i].tmp[l]);
	free(scratch);
	scratch = NULL, nscratch = 0;
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
	starnn_launch_set_stop_hook(free_scratch);
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
	STARNN_CHECK(read_hooks());
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
 * (fp32); src is the owner's exact master (x when there is none); norm
 * and step, when not NULL, are the owner's 1-element tensors of the
 * adaptive rule, sent the same way. */
int starnn_dist_weights_down(starnn_tensor *x, starnn_tensor *src, starnn_tensor *w, int f, starnn_tensor *norm,
                             starnn_tensor *step, int owner)
{
	STARNN_CHECK(coll_begin(STARNN_DIST_WEIGHTS));
	int rc = coll_ready(dist_rank == owner ? src : x);
	if (!rc)
		rc = tree_down(x, src, w, f, coll_seq++, 0, owner);
	if (!rc && norm)
		rc = tree_down(norm, norm, NULL, -1, coll_seq++, 0, owner);
	if (!rc && step)
		rc = tree_down(step, step, NULL, -1, coll_seq++, 0, owner);
	coll_end();
	return rc;
}

/* The gradient's sum over the ranks into the owner's t only. */
int starnn_dist_reduce_to(starnn_tensor *t, int wire, int owner)
{
	return allreduce(t, add_f32, wire, STARNN_DIST_GRADIENTS, owner, 0);
}

/* t of rank `from` into t of rank 0 (a checkpoint's gathering). Every
 * rank calls it (the message tags follow the collectives' count); t is
 * used on ranks 0 and from only. */
int starnn_dist_to_rank0(starnn_tensor *t, int from)
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

int starnn_dist_weights_down(starnn_tensor *x, starnn_tensor *src, starnn_tensor *w, int f, starnn_tensor *norm,
                             starnn_tensor *step, int owner)
{
	(void)x, (void)src, (void)w, (void)f, (void)norm, (void)step, (void)owner;
	return 0;
}

int starnn_dist_reduce_to(starnn_tensor *t, int wire, int owner)
{
	(void)t, (void)wire, (void)owner;
	return 0;
}

int starnn_dist_to_rank0(starnn_tensor *t, int from)
{
	(void)t, (void)from;
	return 0;
}

int starnn_dist_stats(struct starnn_dist_stats *out)
{
	memset(out, 0, sizeof *out);
	return 0;
}

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
		if (starnn_dist_sharded()) {
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

int starnn_dist_grad_hook(void *ctx, starnn_param *p)
{
	(void)ctx;
	if (p->flags & STARNN_PARAM_REPLICA_SUMMED)
		return 0;
	STARNN_CHECK(read_hooks());
	if (no_grad_exchange)
		return 0;
	int owner = starnn_dist_owner_of(p);
	if (owner >= 0)
		return starnn_dist_reduce_to(p->grad[0], grad_wire, owner);
	return starnn_dist_allreduce_wire(p->grad[0], grad_wire);
}

int starnn_dist_broadcast_params(starnn_params *ps)
{
	for (int i = 0; i < starnn_params_count(ps); i++)
		STARNN_CHECK(starnn_dist_broadcast(starnn_params_at(ps, i)->master));
	return 0;
}
