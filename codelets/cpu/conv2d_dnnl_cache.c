/* The oneDNN kernels' primitive cache (codelets/cpu/conv2d_dnnl.h): the
 * CPU engine, each worker thread's state, and running a cached entry.
 *
 * Everything runs on the calling thread: oneDNN's OpenMP team is set to one
 * thread (starnn's parallelism comes from several tasks, one per core).
 * Scratchpads are user-managed, per thread: oneDNN's default one is global
 * (per library), and workers running primitives at once corrupted it.
 * Primitives are created once per key (shape, layouts, strides, beta ...)
 * and cached per thread (creation costs up to milliseconds: code
 * generation), CACHE_SLOTS of them replaced in turn; the cache is freed
 * when the thread exits. Reordered operands and scratchpads live in the
 * thread's scratch buffers (runtime/base/scratch.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cpu/conv2d_dnnl.h"
#include "runtime/base/scratch.h"

/* Debian's oneDNN runs on OpenMP (the setting is per calling thread). */
extern void omp_set_num_threads(int n);

dnnl_engine_t starnn_dnnl_engine;
static dnnl_status_t engine_status = dnnl_success;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int thread_key_ok;

void starnn_dnnl_conv_destroy(struct dnnl_conv *e)
{
	if (!e)
		return;
	dnnl_primitive_t p[] = {e->conv, e->re_a, e->re_b, e->re_out};
	for (size_t i = 0; i < sizeof p / sizeof *p; i++)
		if (p[i])
			dnnl_primitive_destroy(p[i]);
	dnnl_memory_t m[] = {e->ua,         e->ub,         e->uout,       e->ia,         e->ib,
	                     e->iout,       e->bias_mem,   e->scratch[0], e->scratch[1], e->scratch[2],
	                     e->scratch[3]};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (m[i])
			dnnl_memory_destroy(m[i]);
	free(e);
}

void starnn_dnnl_mm_destroy(struct dnnl_mm *e)
{
	if (!e)
		return;
	if (e->prim)
		dnnl_primitive_destroy(e->prim);
	dnnl_memory_t m[] = {e->a, e->b, e->c, e->scratch};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (m[i])
			dnnl_memory_destroy(m[i]);
	free(e);
}

static void thread_free(void *arg)
{
	struct dnnl_thread *t = arg;
	for (int i = 0; i < CACHE_SLOTS; i++)
		starnn_dnnl_conv_destroy(t->slot[i]);
	for (int i = 0; i < MM_SLOTS; i++)
		starnn_dnnl_mm_destroy(t->mm[i]);
	if (t->stream)
		dnnl_stream_destroy(t->stream);
	free(t);
}

static void engine_init(void)
{
	engine_status = dnnl_engine_create(&starnn_dnnl_engine, dnnl_cpu, 0);
	thread_key_ok = pthread_key_create(&thread_key, thread_free) == 0;
}

int starnn_dnnl_engine_ok(void)
{
	pthread_once(&engine_once, engine_init);
	return engine_status == dnnl_success;
}

struct dnnl_thread *starnn_dnnl_thread(void)
{
	pthread_once(&engine_once, engine_init);
	if (engine_status != dnnl_success) {
		starnn_error(STARNN_EINVAL, "conv2d (oneDNN): cannot create the CPU engine: %s",
		             dnnl_status2str(engine_status));
		return NULL;
	}
	if (!thread_key_ok) {
		starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot create the thread key");
		return NULL;
	}
	struct dnnl_thread *t = pthread_getspecific(thread_key);
	if (t)
		return t;
	t = calloc(1, sizeof *t);
	if (!t) {
		starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): out of memory");
		return NULL;
	}
	dnnl_status_t s = dnnl_stream_create(&t->stream, starnn_dnnl_engine, dnnl_stream_default_flags);
	if (s != dnnl_success || pthread_setspecific(thread_key, t) != 0) {
		if (t->stream)
			dnnl_stream_destroy(t->stream);
		free(t);
		starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot create a stream: %s", dnnl_status2str(s));
		return NULL;
	}
	omp_set_num_threads(1);
	return t;
}

void *starnn_dnnl_buf(int i, size_t bytes)
{
	return starnn_scratch(STARNN_SCRATCH_DNNL + i, bytes);
}

/* (formatted when something fails, not at every call) */
const char *starnn_dnnl_describe(char *buf, size_t n, const struct dnnl_conv *k)
{
	snprintf(buf, n, "%s%s %s n %zu c %zu o %zu %zux%zu k %zu", k->kind ? "transposed " : "",
	         k->pass == STARNN_CONV2D_FWD        ? "forward"
	         : k->pass == STARNN_CONV2D_BWD_DATA ? "backward data"
	                                             : "backward weights",
	         k->dt == (int)dnnl_bf16 ? "bf16" : "fp32", k->n, k->c, k->o, k->h, k->w, k->k);
	return buf;
}

int starnn_dnnl_key_equal(const struct dnnl_conv *a, const struct dnnl_conv *b)
{
	return a->kind == b->kind && a->pass == b->pass && a->dt == b->dt && a->bias == b->bias && a->accumulate == b->accumulate && a->beta == b->beta &&
	       a->n == b->n && a->c == b->c && a->o == b->o && a->h == b->h && a->w == b->w && a->k == b->k &&
	       a->lda == b->lda && a->ldb == b->ldb && a->ldout == b->ldout && a->xb == b->xb && a->yb == b->yb &&
	       a->fh == b->fh && a->fw == b->fw && !memcmp(a->pad, b->pad, sizeof a->pad) && a->wino == b->wino &&
	       a->dwb == b->dwb && a->dwi == b->dwi && a->dwib == b->dwib;
}

struct dnnl_conv starnn_dnnl_key(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                                 const struct starnn_conv2d_routes *r, size_t lda, size_t ldb, int bias, float beta,
                                 size_t ldout)
{
	struct dnnl_conv key = {.kind = kind, .pass = pass, .dt = (int)dnnl_dt(sdt), .bias = bias,
	                        .accumulate = beta != 0.0f, .beta = beta, .n = g->n, .c = g->c, .o = g->o, .h = g->h,
	                        .w = g->w, .k = g->k, .lda = lda, .ldb = ldb, .ldout = ldout,
	                        .xb = g->xb > 1 ? g->xb : 1, .yb = g->yb > 1 ? g->yb : 1,
	                        .wino = !kind && starnn_conv2d_dnnl_winograd(g, (enum starnn_conv2d_pass)pass, sdt, r)};
	if (pass == STARNN_CONV2D_BWD_WEIGHT)
		key.dwb = g->dwb, key.dwi = g->dwi, key.dwib = g->dwib;
	return key;
}

int starnn_dnnl_entry(struct dnnl_thread *t, const struct dnnl_conv *key, struct dnnl_conv **out)
{
	*out = NULL;
	if (t->last && starnn_dnnl_key_equal(t->last, key)) {
		*out = t->last;
		return 0;
	}
	for (int i = 0; i < CACHE_SLOTS; i++)
		if (t->slot[i] && starnn_dnnl_key_equal(t->slot[i], key)) {
			*out = t->last = t->slot[i];
			return 0;
		}
	struct dnnl_conv *e = malloc(sizeof *e);
	if (!e)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): out of memory");
	*e = *key;
	int rc = starnn_dnnl_conv_create(e);
	if (rc < 0) {
		starnn_dnnl_conv_destroy(e);
		return rc;
	}
	starnn_dnnl_conv_destroy(t->slot[t->next]);
	t->slot[t->next] = e;
	t->next = (t->next + 1) % CACHE_SLOTS;
	*out = t->last = e;
	return 0;
}

int starnn_dnnl_run_reorder(struct dnnl_thread *t, const struct dnnl_conv *e, dnnl_primitive_t re, dnnl_memory_t sm,
                            dnnl_memory_t fm, const void *from, dnnl_memory_t tm, void *to, const char *what)
{
	char shape[160];
	int rc = 0;
	void *bs = e->bytes_scratch ? starnn_dnnl_buf(3, e->bytes_scratch) : NULL;
	if (e->bytes_scratch && !bs)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate %zu bytes of scratchpad (%s)",
		                    e->bytes_scratch, starnn_dnnl_describe(shape, sizeof shape, e));
	if (sm)
		DNNL_TRY(dnnl_memory_set_data_handle(sm, bs), "set handle");
	DNNL_TRY(dnnl_memory_set_data_handle(fm, (void *)from), "set handle");
	DNNL_TRY(dnnl_memory_set_data_handle(tm, to), "set handle");
	dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, fm}, {DNNL_ARG_TO, tm}, {DNNL_ARG_SCRATCHPAD, sm}};
	DNNL_TRY(dnnl_primitive_execute(re, t->stream, sm ? 3 : 2, args), what);
	DNNL_TRY(dnnl_stream_wait(t->stream), "stream wait");
	return 0;
fail:
	return rc;
}

int starnn_dnnl_exec(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                     const float *bias, float beta, void *out)
{
	return starnn_dnnl_exec_acc(key, a, b, pk, bias, beta, out, NULL, 0, 1, 0, 0);
}

/* reps > 1: the samples of starnn_dnnl_run_packed (forward and
 * backward-data passes only, no bias gradient). acc: wgrad_tiled's sum
 * (the entry must have an internal output), reordered once afterwards by
 * conv_reorder_out. */
int starnn_dnnl_exec_acc(const struct dnnl_conv *key, const void *a, const void *b, const struct packed_ref *pk,
                         const float *bias, float beta, void *out, float *acc, int acc_first, size_t reps,
                         size_t astep, size_t ostep)
{
	char shape[160];
	const int pass = key->pass;
	struct dnnl_thread *t = starnn_dnnl_thread();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv *e;
	STARNN_CHECK(starnn_dnnl_entry(t, key, &e));
	int rc = 0;
	void *pw = !pk ? NULL : pk->sliced ? starnn_dnnl_sliced_weights(e, pk) : starnn_dnnl_packed_weights(e, pk->buf);
	void *ba = e->bytes_a ? starnn_dnnl_buf(0, e->bytes_a) : NULL,
	     *bb = pw ? pw : e->bytes_b ? starnn_dnnl_buf(1, e->bytes_b) : NULL,
	     *bo = e->bytes_out ? starnn_dnnl_buf(2, e->bytes_out) : NULL,
	     *bs = e->bytes_scratch ? starnn_dnnl_buf(3, e->bytes_scratch) : NULL;
	if ((e->bytes_a && !ba) || (e->bytes_b && !bb) || (e->bytes_out && !bo) || (e->bytes_scratch && !bs))
		return starnn_error(STARNN_ENOMEM,
		                    "conv2d (oneDNN): cannot allocate %zu + %zu + %zu + %zu bytes of buffers (%s)", e->bytes_a,
		                    e->bytes_b, e->bytes_out, e->bytes_scratch, starnn_dnnl_describe(shape, sizeof shape, e));
	for (int i = 0; i < 4; i++)
		if (e->scratch[i])
			DNNL_TRY(dnnl_memory_set_data_handle(e->scratch[i], bs), "set handle");
	DNNL_TRY(dnnl_memory_set_data_handle(e->ub, (void *)b), "set handle");
	if (e->ia)
		DNNL_TRY(dnnl_memory_set_data_handle(e->ia, ba), "set handle");
	if (e->ib)
		DNNL_TRY(dnnl_memory_set_data_handle(e->ib, bb), "set handle");
	if (e->iout)
		DNNL_TRY(dnnl_memory_set_data_handle(e->iout, bo), "set handle");
	/* the bias gradient of an accumulating pass goes to a temporary first
	 * (db = beta * db + new, added below) */
	float *dbias = NULL;
	if (e->bias_mem && pass == STARNN_CONV2D_BWD_WEIGHT && beta != 0.0f) {
		dbias = starnn_dnnl_buf(4, e->o * sizeof *dbias);
		if (!dbias)
			return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate the bias gradient (%s)",
			                    starnn_dnnl_describe(shape, sizeof shape, e));
	}
	if (e->bias_mem)
		DNNL_TRY(dnnl_memory_set_data_handle(e->bias_mem, dbias ? dbias : (void *)bias), "set handle");
	/* the primitives run one after the other on this thread (the CPU
	 * stream executes synchronously), so they share one scratchpad buffer */
	if (e->re_b && !pw) {
		dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->ub}, {DNNL_ARG_TO, e->ib}, {DNNL_ARG_SCRATCHPAD, e->scratch[2]}};
		DNNL_TRY(dnnl_primitive_execute(e->re_b, t->stream, e->scratch[2] ? 3 : 2, args), "input reorder");
	}
	for (size_t rep = 0; rep < reps; rep++) {
		DNNL_TRY(dnnl_memory_set_data_handle(e->ua, (void *)((const char *)a + rep * astep)), "set handle");
		if (e->uout)
			DNNL_TRY(dnnl_memory_set_data_handle(e->uout, (char *)out + rep * ostep), "set handle");
		if (e->re_a) {
			dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->ua}, {DNNL_ARG_TO, e->ia}, {DNNL_ARG_SCRATCHPAD, e->scratch[1]}};
			DNNL_TRY(dnnl_primitive_execute(e->re_a, t->stream, e->scratch[1] ? 3 : 2, args), "input reorder");
		}
		dnnl_exec_arg_t args[5];
		int nargs = 0;
		args[nargs++] = (dnnl_exec_arg_t){e->arg_a, e->ia ? e->ia : e->ua};
		args[nargs++] = (dnnl_exec_arg_t){e->arg_b, e->ib ? e->ib : e->ub};
		args[nargs++] = (dnnl_exec_arg_t){e->arg_out, e->iout ? e->iout : e->uout};
		if (e->bias_mem)
			args[nargs++] = (dnnl_exec_arg_t){pass == STARNN_CONV2D_BWD_WEIGHT ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS,
			                                  e->bias_mem};
		if (e->scratch[0])
			args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch[0]};
		DNNL_TRY(dnnl_primitive_execute(e->conv, t->stream, nargs, args), "convolution");
		if (acc) {
			DNNL_TRY(dnnl_stream_wait(t->stream), "stream wait");
			const float *r = bo;
			const size_t nf = e->bytes_out / sizeof *acc;
			if (acc_first && rep == 0)
				memcpy(acc, r, nf * sizeof *acc);
			else
				starnn_axpy_cpu(1, nf, 1.0f, r, nf, acc, nf);
		} else if (e->re_out) {
			dnnl_exec_arg_t ra[] = {{DNNL_ARG_FROM, e->iout}, {DNNL_ARG_TO, e->uout}, {DNNL_ARG_SCRATCHPAD, e->scratch[3]}};
			DNNL_TRY(dnnl_primitive_execute(e->re_out, t->stream, e->scratch[3] ? 3 : 2, ra), "output reorder");
		}
		DNNL_TRY(dnnl_stream_wait(t->stream), "stream wait");
		if (e->zb)
			starnn_dnnl_up_spread(e, bo, bias, (char *)out + rep * ostep, e->ldout);
	}
	if (dbias) {
		float *db = (float *)bias;
		for (size_t i = 0; i < e->o; i++)
			db[i] = beta * db[i] + dbias[i];
	}
	return 0;
fail:
	return rc;
}
