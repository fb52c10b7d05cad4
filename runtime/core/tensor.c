#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/half.h"
#include "runtime/core/tensor.h"
#include "runtime/core/submit.h"

int starnn_dtype_parse(const char *name, starnn_dtype *dtype)
{
	/* compute dtypes only: u8 (STARNN_NDTYPES) is not offered */
	for (int i = 0; i < STARNN_NDTYPES; i++)
		if (strcmp(name, starnn_dtype_name((starnn_dtype)i)) == 0) {
			*dtype = (starnn_dtype)i;
			return 0;
		}
	return starnn_error(STARNN_EINVAL, "unknown dtype '%s' (expected fp32, fp16 or bf16)", name);
}

/* --------------------------------------------------------- memory accounting */

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t mem_bytes, mem_peak;
#define MEM_MAX_NODES 64
static starpu_ssize_t starpu_peak[MEM_MAX_NODES];

static void mem_add(size_t bytes, int sign)
{
	pthread_mutex_lock(&mem_lock);
	if (sign > 0) {
		mem_bytes += bytes;
		if (mem_bytes > mem_peak)
			mem_peak = mem_bytes;
	} else {
		mem_bytes -= bytes;
	}
	pthread_mutex_unlock(&mem_lock);
}

size_t starnn_tensor_bytes(size_t *peak)
{
	pthread_mutex_lock(&mem_lock);
	size_t now = mem_bytes;
	if (peak)
		*peak = mem_peak;
	pthread_mutex_unlock(&mem_lock);
	return now;
}

void starnn_memory_sample(void)
{
	if (!starpu_is_initialized())
		return;
	unsigned n = starpu_memory_nodes_get_count();
	pthread_mutex_lock(&mem_lock);
	for (unsigned i = 0; i < n && i < MEM_MAX_NODES; i++) {
		/* StarPU 1.3 knows a node's total only when it manages a limit
		 * (GPUs: their memory; main memory: STARPU_LIMIT_CPU_MEM). */
		starpu_ssize_t total = starpu_memory_get_total(i);
		starpu_ssize_t used = total > 0 ? total - starpu_memory_get_available(i) : 0;
		if (used > starpu_peak[i])
			starpu_peak[i] = used;
	}
	pthread_mutex_unlock(&mem_lock);
}

void starnn_memory_report(FILE *f)
{
	size_t peak;
	starnn_memory_sample();
	starnn_tensor_bytes(&peak);
	unsigned n = starpu_is_initialized() ? starpu_memory_nodes_get_count() : 1;
	pthread_mutex_lock(&mem_lock);
	fprintf(f, "peak memory node 0: %.2f MiB (tensor storage allocated by starnn in main memory", peak / 1048576.0);
	if (starpu_peak[0] > 0)
		fprintf(f, "; plus StarPU's own allocations there, sampled peak %.2f MiB", starpu_peak[0] / 1048576.0);
	fprintf(f, ")\n");
	for (unsigned i = 1; i < n && i < MEM_MAX_NODES; i++)
		fprintf(f, "peak memory node %u: %.2f MiB (StarPU's allocations on the node, sampled after each step)\n", i,
		        starpu_peak[i] / 1048576.0);
	pthread_mutex_unlock(&mem_lock);
}

size_t starnn_tensor_numel(const starnn_tensor *t)
{
	return t->rows * t->cols;
}

size_t starnn_tensor_inner(const starnn_tensor *t)
{
	size_t n = 1;
	for (int i = 2; i < t->ndim; i++)
		n *= (size_t)t->shape[i];
	return n;
}

int starnn_tensor_same_shape(const starnn_tensor *a, const starnn_tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return 0;
	return 1;
}

const char *starnn_tensor_describe(const starnn_tensor *t, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "%s[", t->name);
	for (int i = 0; i < t->ndim && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)t->shape[i]);
	if (n < size)
		n += (size_t)snprintf(buf + n, size - n, "] %s", starnn_dtype_name(t->dtype));
	char l[24];
	if (t->cblock > 1 && n < size)
		n += (size_t)snprintf(buf + n, size - n, " %s", starnn_layout_name(t->cblock, t->shape[1], l, sizeof l));
	if (t->wl.ob && n < size)
		snprintf(buf + n, size - n, " %s", starnn_wlayout_name(&t->wl, l, sizeof l));
	return buf;
}

const char *starnn_layout_name(int cblock, int64_t channels, char *buf, size_t size)
{
	if (cblock <= 1)
		snprintf(buf, size, "NCHW");
	else if (cblock == channels)
		snprintf(buf, size, "NHWC");
	else
		snprintf(buf, size, "nChw%dc", cblock);
	return buf;
}

static int relayout(starnn_tensor *t, void (*set)(starnn_tensor *, const void *), const void *arg);
static void set_cblock(starnn_tensor *t, const void *arg);

int starnn_tensor_set_cblock(starnn_tensor *t, int cblock)
{
	char d[128], l[24];
	if (!t)
		return starnn_error(STARNN_EINVAL, "tensor layout: the tensor is NULL");
	if (cblock != 1 && (cblock < 8 || cblock % 8 || cblock > STARNN_CBLOCK_MAX))
		return starnn_error(STARNN_EINVAL, "tensor '%s': channel block %d (1, or a multiple of 8 up to %d)", t->name,
		                    cblock, STARNN_CBLOCK_MAX);
	if (cblock == t->cblock)
		return 0;
	if (t->ndim != 4 || t->shape[1] % cblock)
		return starnn_error(STARNN_EINVAL, "tensor %s: a %s layout needs 4-D data with channels a multiple of %d",
		                    starnn_tensor_describe(t, d, sizeof d),
		                    starnn_layout_name(cblock, t->ndim == 4 ? t->shape[1] : 0, l, sizeof l), cblock);
	if (t->parent || t->nplans || (unsigned)t->dtype >= STARNN_NDTYPES)
		return starnn_error(STARNN_EINVAL, "tensor %s: the layout is set on a whole floating-point tensor before it is split",
		                    starnn_tensor_describe(t, d, sizeof d));
	return relayout(t, set_cblock, &cblock);
}

static void set_cblock(starnn_tensor *t, const void *arg)
{
	t->cblock = *(const int *)arg;
}

/* Changes t's layout (set(t, arg)) keeping its values: a tensor of zeros
 * (as created) is the same bytes in every layout; any other is read out in
 * the old layout and written back in the new one. */
static int relayout(starnn_tensor *t, void (*set)(starnn_tensor *, const void *), const void *arg)
{
	starnn_tensor_prepare(t, 0);
	if (starpu_data_acquire(t->handle, STARPU_R) != 0)
		return starnn_error(STARNN_ESTARPU, "tensor '%s': acquire failed", t->name);
	const unsigned char *raw = starpu_data_get_local_ptr(t->handle);
	size_t bytes = starnn_tensor_numel(t) * starnn_dtype_size(t->dtype), nz = 0;
	uint64_t word;
	for (; nz + sizeof word <= bytes; nz += sizeof word) {
		memcpy(&word, raw + nz, sizeof word);
		if (word)
			break;
	}
	while (nz < bytes && !raw[nz])
		nz++;
	starpu_data_release(t->handle);
	if (nz == bytes) {
		set(t, arg);
		return starnn_take_deferred_error();
	}
	void *tmp = malloc(bytes ? bytes : 1);
	if (!tmp)
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	int rc = starnn_tensor_read(t, tmp);
	if (rc == 0) {
		set(t, arg);
		rc = starnn_tensor_write(t, tmp);
	}
	free(tmp);
	return rc;
}

static int wlayouts_off;

void starnn_tensor_allow_wlayouts(int on)
{
	wlayouts_off = !on;
}

int starnn_tensor_wlayouts_allowed(void)
{
	return !wlayouts_off;
}

const char *starnn_wlayout_name(const struct starnn_blocked_weights *L, char *buf, size_t size)
{
	if (!L || !L->ob)
		snprintf(buf, size, "OIHW");
	else if (L->pair)
		snprintf(buf, size, L->i_inner ? "OIhw%uo%ui%uo" : "OIhw%ui%uo%ui", L->ob / L->pair, L->i_inner ? L->ib : L->ob,
		         L->pair);
	else
		snprintf(buf, size, L->i_inner ? "OIhw%uo%ui" : "OIhw%ui%uo", L->i_inner ? L->ob : L->ib,
		         L->i_inner ? L->ib : L->ob);
	return buf;
}

static void set_wl(starnn_tensor *t, const void *arg)
{
	const struct starnn_blocked_weights *L = arg;
	if (L && L->ob)
		t->wl = *L;
	else
		memset(&t->wl, 0, sizeof t->wl);
	t->wl_fixed = 1;
}

int starnn_tensor_set_wlayout(starnn_tensor *t, const struct starnn_blocked_weights *L)
{
	char d[128], l[24];
	if (!t)
		return starnn_error(STARNN_EINVAL, "tensor layout: the tensor is NULL");
	const int blocked = L && L->ob;
	if (blocked && (!L->ib || L->pair || L->trans || L->header || L->align || L->o != t->rows || L->o % L->ob || L->i % L->ib ||
	                (size_t)L->i * L->taps != t->cols))
		return starnn_error(STARNN_EINVAL,
		                    "tensor %s: weight layout %s (%u x %u x %u in blocks of %u x %u) is not a layout of its "
		                    "rows and columns in whole fp32 blocks",
		                    starnn_tensor_describe(t, d, sizeof d), starnn_wlayout_name(L, l, sizeof l), L->o, L->i,
		                    L->taps, L->ob, L->ib);
	if (blocked && (t->dtype != STARNN_FP32 || t->parent || t->nplans || t->ld != t->cols || t->cblock > 1))
		return starnn_error(STARNN_EINVAL,
		                    "tensor %s: a weight layout is set on a whole, dense fp32 tensor before it is split",
		                    starnn_tensor_describe(t, d, sizeof d));
	if (blocked == (t->wl.ob != 0) && (!blocked || !memcmp(&t->wl, L, sizeof *L))) {
		t->wl_fixed = 1;
		return 0;
	}
	return relayout(t, set_wl, L);
}

static void set_geometry(starnn_tensor *t, int ndim, const int64_t *shape)
{
	t->ndim = ndim;
	for (int i = 0; i < STARNN_MAX_DIMS; i++)
		t->shape[i] = i < ndim ? shape[i] : 1;
	t->rows = ndim >= 2 ? (size_t)shape[0] : 1;
	t->cols = 1;
	for (int i = ndim >= 2 ? 1 : 0; i < ndim; i++)
		t->cols *= (size_t)shape[i];
	t->ld = t->cols;
}

/* home: register the storage in main memory (starnn_tensor_create), or
 * no storage and home node -1 (starnn_tensor_create_nohome). */
static int tensor_create(starnn_tensor **out, const char *name, starnn_dtype dtype, int ndim, const int64_t *shape,
                         int home)
{
	*out = NULL;
	if (ndim < 1 || ndim > STARNN_MAX_DIMS)
		return starnn_error(STARNN_EINVAL, "tensor '%s': %d dimensions (1 to %d allowed)", name, ndim, STARNN_MAX_DIMS);
	if ((unsigned)dtype >= STARNN_NDTYPES_ALL)
		return starnn_error(STARNN_EINVAL, "tensor '%s': unknown dtype %d", name, (int)dtype);
	size_t numel = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] <= 0)
			return starnn_error(STARNN_EINVAL, "tensor '%s': dimension %d is %lld (must be > 0)", name, i, (long long)shape[i]);
		numel *= (size_t)shape[i];
	}
	if (!starpu_is_initialized())
		return starnn_error(STARNN_ESTATE, "tensor '%s': starnn_init() has not been called", name);

	starnn_tensor *t = calloc(1, sizeof *t);
	if (!t)
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", name);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->dtype = dtype;
	t->node = -1;
	t->active_plan = -1;
	t->cblock = 1;
	set_geometry(t, ndim, shape);
	if (t->cols > UINT32_MAX || t->rows > UINT32_MAX) {
		int rc = starnn_error(STARNN_EINVAL, "tensor '%s': %zu x %zu is too large for a StarPU matrix", name, t->rows, t->cols);
		free(t);
		return rc;
	}
	if (!home) {
		/* StarPU allocates it where its first writer runs; nothing is
		 * ever copied to or from a home copy. */
		starpu_matrix_data_register(&t->handle, -1, 0, (uint32_t)t->cols, (uint32_t)t->cols, (uint32_t)t->rows,
		                            starnn_dtype_size(dtype));
		starpu_data_set_name(t->handle, t->name);
		*out = t;
		return 0;
	}
	size_t bytes = numel * starnn_dtype_size(dtype);
	/* starpu_malloc pins the memory when CUDA workers exist: faster and
	 * asynchronous host <-> GPU copies. */
	if (starpu_malloc(&t->host, bytes) != 0) {
		free(t);
		return starnn_error(STARNN_ENOMEM, "tensor '%s': cannot allocate %zu bytes", name, bytes);
	}
	memset(t->host, 0, bytes);
	mem_add(bytes, 1);
	starpu_matrix_data_register(&t->handle, STARPU_MAIN_RAM, (uintptr_t)t->host, (uint32_t)t->ld,
	                            (uint32_t)t->cols, (uint32_t)t->rows, starnn_dtype_size(dtype));
	starpu_data_set_name(t->handle, t->name);
	*out = t;
	return 0;
}

int starnn_tensor_create(starnn_tensor **out, const char *name, starnn_dtype dtype, int ndim, const int64_t *shape)
{
	return tensor_create(out, name, dtype, ndim, shape, 1);
}

int starnn_tensor_create_nohome(starnn_tensor **out, const char *name, starnn_dtype dtype, int ndim,
                                const int64_t *shape)
{
	return tensor_create(out, name, dtype, ndim, shape, 0);
}

int starnn_tensor_new(starnn_tensor **out, const char *name, starnn_dtype dtype, int ndim, ...)
{
	int64_t shape[STARNN_MAX_DIMS] = {0};
	va_list ap;
	if (ndim < 1 || ndim > STARNN_MAX_DIMS) {
		*out = NULL;
		return starnn_error(STARNN_EINVAL, "tensor '%s': %d dimensions (1 to %d allowed)", name, ndim, STARNN_MAX_DIMS);
	}
	va_start(ap, ndim);
	for (int i = 0; i < ndim; i++)
		shape[i] = va_arg(ap, int64_t);
	va_end(ap);
	return starnn_tensor_create(out, name, dtype, ndim, shape);
}

static void collect(const struct starnn_plan *plan, starpu_data_handle_t *children)
{
	for (int i = 0; i < plan->nparts; i++)
		children[i] = plan->parts[i]->handle;
}

/* Parts' own plans go first (that may activate one of t's plans), then t
 * gathers its data and its plans are cleaned. */
static void free_plans(starnn_tensor *t)
{
	for (int p = 0; p < t->nplans; p++)
		for (int i = 0; i < t->plans[p]->nparts; i++)
			if (t->plans[p]->parts[i]->nplans)
				free_plans(t->plans[p]->parts[i]);
	starnn_tensor_make_whole(t);
	for (int p = 0; p < t->nplans; p++) {
		struct starnn_plan *plan = t->plans[p];
		starpu_data_handle_t children[plan->nparts];
		collect(plan, children);
		starpu_data_partition_clean(t->handle, (unsigned)plan->nparts, children);
		for (int i = 0; i < plan->nparts; i++)
			free(plan->parts[i]);
		free(plan->parts);
		free(plan->bounds);
		free(plan);
	}
	free(t->plans);
	t->plans = NULL;
	t->nplans = 0;
	t->parts = NULL;
	t->nparts = 0;
}

void starnn_tensor_destroy(starnn_tensor *t)
{
	if (!t)
		return;
	if (t->parent) /* parts belong to their parent */
		return;
	for (int i = 0; i < t->nderived; i++)
		starnn_tensor_destroy(t->derived[i].d);
	free(t->derived);
	free_plans(t);
	starpu_data_unregister(t->handle);
	if (t->host) { /* (a tensor without a home copy has none) */
		starpu_free(t->host);
		mem_add(starnn_tensor_numel(t) * starnn_dtype_size(t->dtype), -1);
	}
	free(t);
}

/* --------------------------------------------------------------- partitions */

/* filter_arg_ptr: the struct starnn_plan. Axis 0 takes rows, axis 1 takes
 * column ranges of every row; ld is kept, so parts are views, no copy. */
static void filter_func(void *father_interface, void *child_interface, struct starpu_data_filter *f,
                        unsigned id, unsigned nparts)
{
	struct starpu_matrix_interface *father = father_interface;
	struct starpu_matrix_interface *child = child_interface;
	const struct starnn_plan *plan = f->filter_arg_ptr;
	size_t elemsize = father->elemsize;
	size_t offset;
	(void)nparts;

	child->id = father->id;
	child->elemsize = elemsize;
	if (plan->axis == 0) {
		child->nx = father->nx;
		child->ny = plan->bounds[id + 1] - plan->bounds[id];
		offset = (size_t)plan->bounds[id] * father->ld * elemsize;
	} else {
		child->nx = (uint32_t)((plan->bounds[id + 1] - plan->bounds[id]) * plan->inner);
		child->ny = father->ny;
		offset = (size_t)plan->bounds[id] * plan->inner * elemsize;
	}
	child->allocsize = (size_t)child->nx * child->ny * elemsize;
	if (father->dev_handle) {
		if (father->ptr)
			child->ptr = father->ptr + offset;
		child->ld = father->ld;
		child->dev_handle = father->dev_handle;
		child->offset = father->offset + offset;
	}
}

static int plan_bounds(const starnn_tensor *t, int axis, int nparts, const int64_t *sizes, uint32_t *bounds)
{
	int64_t extent = t->shape[axis];
	char l[24];
	if (t->wl.ob)
		return starnn_error(STARNN_EINVAL, "tensor '%s': a tensor in weight layout %s is not split", t->name,
		                    starnn_wlayout_name(&t->wl, l, sizeof l));
	bounds[0] = 0;
	for (int i = 0; i < nparts; i++) {
		int64_t n = sizes ? sizes[i] : extent / nparts + (i < extent % nparts);
		if (n <= 0 || bounds[i] + n > extent)
			return starnn_error(STARNN_EINVAL, "tensor '%s': part sizes along axis %d do not add up to %lld",
			                    t->name, axis, (long long)extent);
		bounds[i + 1] = bounds[i] + (uint32_t)n;
		if (axis == 1 && t->cblock > 1 && n % t->cblock)
			return starnn_error(STARNN_EINVAL,
			                    "tensor '%s': a %s tensor splits along channels at multiples of %d (part %d has %lld)",
			                    t->name, starnn_layout_name(t->cblock, t->shape[1], l, sizeof l), t->cblock, i,
			                    (long long)n);
	}
	if (bounds[nparts] != extent)
		return starnn_error(STARNN_EINVAL, "tensor '%s': part sizes along axis %d add up to %u, not %lld",
		                    t->name, axis, bounds[nparts], (long long)extent);
	return 0;
}

int starnn_tensor_split(starnn_tensor *t, int axis, int nparts, const int64_t *sizes,
                        starnn_tensor ***parts_out)
{
	if (axis != 0 && axis != 1)
		return starnn_error(STARNN_EINVAL, "tensor '%s': split axis %d (0 = batch, 1 = channels)", t->name, axis);
	/* The direction in the matrix view: a 1-D tensor is one row, so its
	 * axis 0 is split like channels with one element each. */
	int maxis = axis;
	if (t->ndim == 1) {
		if (axis != 0)
			return starnn_error(STARNN_EINVAL, "tensor '%s': a 1-D tensor splits along axis 0 only", t->name);
		maxis = 1;
	}
	if (nparts < 1 || nparts > t->shape[axis])
		return starnn_error(STARNN_EINVAL, "tensor '%s': cannot split %lld along axis %d into %d parts",
		                    t->name, (long long)t->shape[axis], axis, nparts);
	uint32_t bounds[nparts + 1];
	STARNN_CHECK(plan_bounds(t, axis, nparts, sizes, bounds));

	/* Reuse an identical plan. */
	for (int p = 0; p < t->nplans; p++) {
		struct starnn_plan *plan = t->plans[p];
		if (plan->axis == maxis && plan->nparts == nparts &&
		    memcmp(plan->bounds, bounds, sizeof bounds) == 0) {
			if (parts_out)
				*parts_out = plan->parts;
			return 0;
		}
	}

	if (t->nplans >= 64)
		return starnn_error(STARNN_EINVAL, "tensor '%s': at most 64 partition plans", t->name);
	struct starnn_plan **plans = realloc(t->plans, sizeof *plans * (size_t)(t->nplans + 1));
	if (!plans)
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	t->plans = plans;
	struct starnn_plan *plan = calloc(1, sizeof *plan);
	if (!plan)
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	plan->axis = maxis;
	plan->nparts = nparts;
	plan->inner = starnn_tensor_inner(t);
	plan->bounds = malloc(sizeof bounds);
	plan->parts = calloc((size_t)nparts, sizeof *plan->parts);
	int ok = plan->bounds && plan->parts;
	for (int i = 0; ok && i < nparts; i++)
		ok = (plan->parts[i] = calloc(1, sizeof **plan->parts)) != NULL;
	if (!ok) {
		for (int i = 0; plan->parts && i < nparts; i++)
			free(plan->parts[i]);
		free(plan->parts);
		free(plan->bounds);
		free(plan);
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	}
	memcpy(plan->bounds, bounds, sizeof bounds);
	plans[t->nplans] = plan;

	starpu_data_handle_t children[nparts];
	struct starpu_data_filter f = {
		.filter_func = filter_func,
		.nchildren = (unsigned)nparts,
		.filter_arg_ptr = plan,
	};
	starpu_data_partition_plan(t->handle, &f, children);
	for (int i = 0; i < nparts; i++) {
		starnn_tensor *part = plan->parts[i];
		if (t->nplans == 0)
			snprintf(part->name, sizeof part->name, "%.*s[%d]", STARNN_NAME_MAX - 16, t->name, i);
		else
			snprintf(part->name, sizeof part->name, "%.*s[%s%d]", STARNN_NAME_MAX - 20, t->name,
			         axis ? "c" : "n", i);
		part->dtype = t->dtype;
		part->cblock = t->cblock;
		part->ndim = t->ndim;
		memcpy(part->shape, t->shape, sizeof part->shape);
		part->shape[axis] = bounds[i + 1] - bounds[i];
		part->rows = maxis == 0 ? bounds[i + 1] - bounds[i] : t->rows;
		part->cols = maxis == 0 ? t->cols : (bounds[i + 1] - bounds[i]) * plan->inner;
		part->ld = t->ld;
		part->handle = children[i];
		part->parent = t;
		part->parent_plan = t->nplans;
		part->active_plan = -1;
		part->node = -1;
		starpu_data_set_name(part->handle, part->name);
	}
	if (t->nplans == 0) {
		t->parts = plan->parts;
		t->nparts = nparts;
	}
	t->nplans++;
	if (parts_out)
		*parts_out = plan->parts;
	return 0;
}

/* The data of t lives in t's own handle (with any read-only plans active:
 * their parts may be read too), or in the parts of its one read-write
 * plan. These submit the switches, asynchronously, in submission order, so
 * tasks on parts and on the whole can be mixed freely (StarPU adds the
 * dependencies). */
static void need_plan(starnn_tensor *t, int p, int write);

static void drop_plans(starnn_tensor *t, int keep_ro);

static void unpartition(starnn_tensor *t, int p)
{
	struct starnn_plan *plan = t->plans[p];
	starpu_data_handle_t children[plan->nparts];
	for (int i = 0; i < plan->nparts; i++) /* the parts' own plans first */
		drop_plans(plan->parts[i], -1);
	collect(plan, children);
	starpu_data_unpartition_submit(t->handle, (unsigned)plan->nparts, children, -1);
}

/* Deactivates t's plans (the read-write one: gathered; read-only ones but
 * keep_ro, if it is one): t's handle holds the data. */
static void drop_plans(starnn_tensor *t, int keep_ro)
{
	if (t->active_plan >= 0) {
		unpartition(t, t->active_plan);
		t->active_plan = -1;
	}
	for (int p = 0; p < t->nplans; p++)
		if (((t->ro_plans >> p) & 1) && p != keep_ro) {
			unpartition(t, p);
			t->ro_plans &= ~((uint64_t)1 << p);
		}
}

void starnn_tensor_make_whole(starnn_tensor *t)
{
	if (t->parent)
		need_plan(t->parent, t->parent_plan, 1);
	drop_plans(t, -1);
}

struct starnn_derived *starnn_tensor_derived(starnn_tensor *t, uint64_t key)
{
	for (int i = 0; i < t->nderived; i++)
		if (t->derived[i].key == key)
			return &t->derived[i];
	return NULL;
}

struct starnn_derived *starnn_tensor_add_derived(starnn_tensor *t, uint64_t key, starnn_tensor *d)
{
	if (!t->derived) {
		t->derived = calloc(STARNN_DERIVED_MAX, sizeof *t->derived);
		if (!t->derived)
			return NULL;
	}
	if (t->nderived == STARNN_DERIVED_MAX)
		return NULL;
	struct starnn_derived *e = &t->derived[t->nderived++];
	*e = (struct starnn_derived){.key = key, .version = UINT64_MAX, .d = d};
	return e;
}

int starnn_tensor_row_part(starnn_tensor *t, starnn_tensor **root, size_t *row0)
{
	if (!t->parent) {
		*root = t, *row0 = 0;
		return 1;
	}
	starnn_tensor *p = t->parent;
	if (p->parent || t->parent_plan < 0 || t->parent_plan >= p->nplans)
		return 0;
	const struct starnn_plan *plan = p->plans[t->parent_plan];
	if (plan->axis != 0)
		return 0;
	for (int i = 0; i < plan->nparts; i++)
		if (plan->parts[i] == t) {
			*root = p, *row0 = plan->bounds[i];
			return 1;
		}
	return 0;
}

void starnn_tensor_use_derived(struct starnn_derived *e)
{
	e->used = 1;
}

int starnn_tensor_copies(starnn_tensor *t, struct starnn_derived **out, int max)
{
	int n = 0;
	if (t->parent || t->ndim < 2)
		return 0;
	for (int i = 0; i < t->nderived && n < max; i++) {
		struct starnn_derived *e = &t->derived[i];
		const struct starnn_blocked_weights *L = &e->layout;
		if (!e->d || !L->ob || !L->ib || !e->used || e->version == UINT64_MAX)
			continue;
		const int shaped = L->trans ? L->i == t->rows && (size_t)L->o * L->taps == t->cols
		                            : L->o == t->rows && (size_t)L->i * L->taps == t->cols && (int64_t)L->i == t->shape[1];
		if (!shaped || starnn_blocked_weights_bytes(L) > e->d->cols)
			continue;
		out[n++] = e;
	}
	return n;
}

void starnn_tensor_copies_written(starnn_tensor *t, struct starnn_derived **c, int n)
{
	for (int i = 0; i < n; i++) {
		c[i]->version = t->version;
		c[i]->used = 0;
	}
}

void starnn_tensor_prepare(starnn_tensor *t, int write)
{
	if (write)
		for (starnn_tensor *s = t; s; s = s->parent)
			s->version++;
	if (t->parent)
		need_plan(t->parent, t->parent_plan, write);
	if (t->active_plan >= 0 || (write && t->ro_plans))
		drop_plans(t, -1);
}

/* Makes plan p of t active: read-write, or at least read-only. */
static void need_plan(starnn_tensor *t, int p, int write)
{
	if (t->parent)
		need_plan(t->parent, t->parent_plan, write);
	uint64_t bit = (uint64_t)1 << p;
	if (t->active_plan == p || (!write && (t->ro_plans & bit)))
		return;
	struct starnn_plan *plan = t->plans[p];
	starpu_data_handle_t children[plan->nparts];
	collect(plan, children);
	if (t->active_plan >= 0)
		drop_plans(t, -1); /* gather the other read-write plan */
	if (!write) {
		starpu_data_partition_readonly_submit(t->handle, (unsigned)plan->nparts, children);
		t->ro_plans |= bit;
		return;
	}
	drop_plans(t, p); /* StarPU upgrades a read-only plan when it is the only one */
	if (t->ro_plans & bit) {
		starpu_data_partition_readwrite_upgrade_submit(t->handle, (unsigned)plan->nparts, children);
		t->ro_plans &= ~bit;
	} else
		starpu_data_partition_submit(t->handle, (unsigned)plan->nparts, children);
	t->active_plan = p;
}

int starnn_tensor_gather(starnn_tensor *t)
{
	starnn_tensor_make_whole(t);
	return 0;
}

/* --------------------------------------------------------------- host I/O */

/* n values of a 16-bit dtype to fp32 and back, with runtime/base/half.h:
 * the bits of the convert kernels (codelets/kernels/convert.h) for every
 * input, a convert task's rounding. Widening an fp16 signalling NaN sets
 * its quiet bit, as F16C's vcvtph2ps (which the CPU kernel uses where the
 * processor has it) and CUDA do; half.h keeps it signalling. */
static void widen_row(starnn_dtype dt, size_t n, const uint16_t *x, float *y)
{
	for (size_t i = 0; i < n; i++) {
		if (dt == STARNN_BF16) {
			y[i] = starnn_bf16_to_float(x[i]);
			continue;
		}
		uint32_t u = starnn_f32_bits(starnn_half_to_float(x[i]));
		if ((u & 0x7fffffffu) > 0x7f800000u)
			u |= 0x00400000u;
		y[i] = starnn_bits_f32(u);
	}
}

static void narrow_row(starnn_dtype dt, size_t n, const float *x, uint16_t *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = dt == STARNN_BF16 ? starnn_float_to_bf16(x[i]) : starnn_float_to_half(x[i]);
}

/* Copies between the tensor and dense host rows (NCHW order). With f32,
 * the host side is fp32 and a 16-bit tensor is widened or narrowed on the
 * way (widen_row, narrow_row), straight into or out of the tensor's storage
 * unless it is blocked. */
static int copy_rows_as(starnn_tensor *t, void *dense, int to_tensor, int f32)
{
	const int convert = f32 && t->dtype != STARNN_FP32;
	const size_t b = t->cblock > 1 ? (size_t)t->cblock : 0, inner = starnn_tensor_inner(t);
	void *tmp = NULL;
	if (convert && b) { /* blocked 16-bit: converted whole, then scattered as it is */
		tmp = malloc(starnn_tensor_numel(t) * sizeof(uint16_t));
		if (!tmp)
			return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
		if (to_tensor)
			narrow_row(t->dtype, starnn_tensor_numel(t), dense, tmp);
	}
	starnn_tensor_prepare(t, to_tensor);
	int rc = starpu_data_acquire(t->handle, to_tensor ? STARPU_W : STARPU_R);
	if (rc) {
		free(tmp);
		return starnn_error(STARNN_ESTARPU, "tensor '%s': acquire failed (%d)", t->name, rc);
	}
	size_t es = starnn_dtype_size(t->dtype), hes = convert && !tmp ? sizeof(float) : es;
	char *base = (char *)starpu_data_get_local_ptr(t->handle), *host = tmp ? tmp : dense;
	size_t ld = starpu_matrix_get_local_ld(t->handle);
	if (t->wl.ob) { /* fp32 in a blocked weight layout: element (o, i, tap) at its index */
		const struct starnn_blocked_weights *L = &t->wl;
		float *v = (float *)(void *)base, *u = dense;
		for (size_t o = 0; o < L->o; o++)
			for (size_t i = 0; i < L->i; i++)
				for (size_t k = 0; k < L->taps; k++) {
					float *in = v + starnn_blocked_weights_index(L, o, i, k), *out = u + (o * L->i + i) * L->taps + k;
					to_tensor ? (*in = *out) : (*out = *in);
				}
	}
	for (size_t r = 0; r < t->rows && !t->wl.ob; r++) {
		char *row = base + r * ld * es;
		char *d = host + r * t->cols * hes;
		/* blocked: channel k, pixel p of a sample at (k / b) * inner * b + p * b + k % b */
		if (b) {
			for (size_t k = 0; k < t->cols / inner; k++) {
				size_t v0 = (k / b) * inner * b + k % b, u0 = k * inner;
				if (es == 4) {
					uint32_t *v = (uint32_t *)(void *)row + v0, *u = (uint32_t *)(void *)d + u0;
					for (size_t p = 0; p < inner; p++)
						to_tensor ? (v[p * b] = u[p]) : (u[p] = v[p * b]);
				} else {
					uint16_t *v = (uint16_t *)(void *)row + v0, *u = (uint16_t *)(void *)d + u0;
					for (size_t p = 0; p < inner; p++)
						to_tensor ? (v[p * b] = u[p]) : (u[p] = v[p * b]);
				}
			}
		} else if (convert)
			to_tensor ? narrow_row(t->dtype, t->cols, (const float *)(void *)d, (uint16_t *)(void *)row)
			          : widen_row(t->dtype, t->cols, (const uint16_t *)(void *)row, (float *)(void *)d);
		else if (to_tensor)
			memcpy(row, d, t->cols * es);
		else
			memcpy(d, row, t->cols * es);
	}
	starpu_data_release(t->handle);
	t->node = -1;
	if (tmp && !to_tensor)
		widen_row(t->dtype, starnn_tensor_numel(t), tmp, dense);
	free(tmp);
	return starnn_take_deferred_error();
}

int starnn_tensor_write(starnn_tensor *t, const void *src)
{
	return copy_rows_as(t, (void *)src, 1, 0);
}

int starnn_tensor_read(starnn_tensor *t, void *dst)
{
	return copy_rows_as(t, dst, 0, 0);
}

static int check_float(const starnn_tensor *t)
{
	if ((unsigned)t->dtype >= STARNN_NDTYPES)
		return starnn_error(STARNN_EINVAL, "tensor '%s': %s is not a floating-point dtype", t->name,
		                    starnn_dtype_name(t->dtype));
	return 0;
}

int starnn_tensor_read_f32(starnn_tensor *t, float *dst)
{
	STARNN_CHECK(check_float(t));
	return copy_rows_as(t, dst, 0, 1);
}

int starnn_tensor_write_f32(starnn_tensor *t, const float *src)
{
	STARNN_CHECK(check_float(t));
	return copy_rows_as(t, (void *)src, 1, 1);
}
