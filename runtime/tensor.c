#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/half.h"
#include "runtime/tensor.h"
#include "runtime/submit.h"

static const size_t dtype_sizes[STARNN_NDTYPES] = {4, 2, 2};
static const char *const dtype_names[STARNN_NDTYPES] = {"fp32", "fp16", "bf16"};

size_t starnn_dtype_size(starnn_dtype dtype)
{
	return (unsigned)dtype < STARNN_NDTYPES ? dtype_sizes[dtype] : 0;
}

const char *starnn_dtype_name(starnn_dtype dtype)
{
	return (unsigned)dtype < STARNN_NDTYPES ? dtype_names[dtype] : "?";
}

int starnn_dtype_parse(const char *name, starnn_dtype *dtype)
{
	for (int i = 0; i < STARNN_NDTYPES; i++)
		if (strcmp(name, dtype_names[i]) == 0) {
			*dtype = (starnn_dtype)i;
			return 0;
		}
	return starnn_error(STARNN_EINVAL, "unknown dtype '%s' (expected fp32, fp16 or bf16)", name);
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
		snprintf(buf + n, size - n, "] %s", starnn_dtype_name(t->dtype));
	return buf;
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

int starnn_tensor_create(starnn_tensor **out, const char *name, starnn_dtype dtype,
                         int ndim, const int64_t *shape)
{
	*out = NULL;
	if (ndim < 1 || ndim > STARNN_MAX_DIMS)
		return starnn_error(STARNN_EINVAL, "tensor '%s': %d dimensions (1 to %d allowed)", name, ndim, STARNN_MAX_DIMS);
	if ((unsigned)dtype >= STARNN_NDTYPES)
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
	set_geometry(t, ndim, shape);
	if (t->cols > UINT32_MAX || t->rows > UINT32_MAX) {
		int rc = starnn_error(STARNN_EINVAL, "tensor '%s': %zu x %zu is too large for a StarPU matrix", name, t->rows, t->cols);
		free(t);
		return rc;
	}
	size_t bytes = numel * starnn_dtype_size(dtype);
	/* starpu_malloc pins the memory when CUDA workers exist: faster and
	 * asynchronous host <-> GPU copies. */
	if (starpu_malloc(&t->host, bytes) != 0) {
		free(t);
		return starnn_error(STARNN_ENOMEM, "tensor '%s': cannot allocate %zu bytes", name, bytes);
	}
	memset(t->host, 0, bytes);
	starpu_matrix_data_register(&t->handle, STARPU_MAIN_RAM, (uintptr_t)t->host, (uint32_t)t->ld,
	                            (uint32_t)t->cols, (uint32_t)t->rows, starnn_dtype_size(dtype));
	starpu_data_set_name(t->handle, t->name);
	*out = t;
	return 0;
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

static void free_parts(starnn_tensor *t)
{
	if (!t->parts)
		return;
	for (int i = 0; i < t->nparts; i++)
		free_parts(t->parts[i]);
	if (t->partitioned) {
		starpu_data_handle_t children[t->nparts];
		for (int i = 0; i < t->nparts; i++)
			children[i] = t->parts[i]->handle;
		starpu_data_unpartition_submit(t->handle, (unsigned)t->nparts, children, STARPU_MAIN_RAM);
		t->partitioned = 0;
	}
	starpu_data_handle_t children[t->nparts];
	for (int i = 0; i < t->nparts; i++)
		children[i] = t->parts[i]->handle;
	starpu_data_partition_clean(t->handle, (unsigned)t->nparts, children);
	for (int i = 0; i < t->nparts; i++)
		free(t->parts[i]);
	free(t->parts);
	free(t->bounds);
	t->parts = NULL;
	t->bounds = NULL;
	t->nparts = 0;
}

void starnn_tensor_destroy(starnn_tensor *t)
{
	if (!t)
		return;
	if (t->parent) /* parts belong to their parent */
		return;
	free_parts(t);
	starpu_data_unregister(t->handle);
	starpu_free(t->host);
	free(t);
}

/* --------------------------------------------------------------- partitions */

/* filter_arg_ptr: the starnn_tensor being split (bounds, axis and inner
 * size are read from it). Axis 0 takes rows, axis 1 takes column ranges of
 * every row; ld is kept, so parts are views with no copy. */
static void filter_func(void *father_interface, void *child_interface, struct starpu_data_filter *f,
                        unsigned id, unsigned nparts)
{
	struct starpu_matrix_interface *father = father_interface;
	struct starpu_matrix_interface *child = child_interface;
	const starnn_tensor *t = f->filter_arg_ptr;
	size_t elemsize = father->elemsize;
	size_t offset;
	(void)nparts;

	child->id = father->id;
	child->elemsize = elemsize;
	if (t->split_axis == 0) {
		child->nx = father->nx;
		child->ny = t->bounds[id + 1] - t->bounds[id];
		offset = (size_t)t->bounds[id] * father->ld * elemsize;
	} else {
		size_t inner = starnn_tensor_inner(t);
		child->nx = (uint32_t)((t->bounds[id + 1] - t->bounds[id]) * inner);
		child->ny = father->ny;
		offset = (size_t)t->bounds[id] * inner * elemsize;
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

int starnn_tensor_split(starnn_tensor *t, int axis, int nparts, const int64_t *sizes)
{
	if (t->parts)
		return starnn_error(STARNN_EINVAL, "tensor '%s' is already split", t->name);
	if (axis != 0 && axis != 1)
		return starnn_error(STARNN_EINVAL, "tensor '%s': split axis %d (0 = batch, 1 = channels)", t->name, axis);
	if (axis == 1 && t->ndim < 2)
		return starnn_error(STARNN_EINVAL, "tensor '%s': a 1-D tensor has no channel axis", t->name);
	int64_t extent = t->shape[axis];
	if (t->ndim == 1)
		extent = 1;
	if (nparts < 1 || nparts > extent)
		return starnn_error(STARNN_EINVAL, "tensor '%s': cannot split %lld along axis %d into %d parts",
		                    t->name, (long long)extent, axis, nparts);

	uint32_t *bounds = malloc(sizeof *bounds * (size_t)(nparts + 1));
	starnn_tensor **parts = calloc((size_t)nparts, sizeof *parts);
	if (!bounds || !parts) {
		free(bounds);
		free(parts);
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	}
	bounds[0] = 0;
	for (int i = 0; i < nparts; i++) {
		int64_t n = sizes ? sizes[i] : extent / nparts + (i < extent % nparts);
		if (n <= 0 || bounds[i] + n > extent) {
			free(bounds);
			free(parts);
			return starnn_error(STARNN_EINVAL, "tensor '%s': part sizes along axis %d do not add up to %lld",
			                    t->name, axis, (long long)extent);
		}
		bounds[i + 1] = bounds[i] + (uint32_t)n;
	}
	if (bounds[nparts] != extent) {
		free(bounds);
		free(parts);
		return starnn_error(STARNN_EINVAL, "tensor '%s': part sizes along axis %d add up to %u, not %lld",
		                    t->name, axis, bounds[nparts], (long long)extent);
	}
	for (int i = 0; i < nparts; i++) {
		parts[i] = calloc(1, sizeof **parts);
		if (!parts[i]) {
			while (i--)
				free(parts[i]);
			free(parts);
			free(bounds);
			return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
		}
	}
	t->split_axis = axis;
	t->bounds = bounds;

	starpu_data_handle_t children[nparts];
	struct starpu_data_filter f = {
		.filter_func = filter_func,
		.nchildren = (unsigned)nparts,
		.filter_arg_ptr = t,
	};
	starpu_data_partition_plan(t->handle, &f, children);
	for (int i = 0; i < nparts; i++) {
		starnn_tensor *p = parts[i];
		snprintf(p->name, sizeof p->name, "%.*s[%d]", STARNN_NAME_MAX - 16, t->name, i);
		p->dtype = t->dtype;
		p->ndim = t->ndim;
		memcpy(p->shape, t->shape, sizeof p->shape);
		p->shape[t->ndim == 1 ? 0 : axis] = bounds[i + 1] - bounds[i];
		if (t->ndim == 1)
			p->shape[0] = t->shape[0];
		p->rows = axis == 0 ? bounds[i + 1] - bounds[i] : t->rows;
		p->cols = axis == 0 ? t->cols : (bounds[i + 1] - bounds[i]) * starnn_tensor_inner(t);
		p->ld = t->ld;
		p->handle = children[i];
		p->parent = t;
		p->node = -1;
		starpu_data_set_name(p->handle, p->name);
	}
	t->parts = parts;
	t->nparts = nparts;
	return 0;
}

/* The data of t lives either in t's own handle ("whole") or in its parts
 * ("split"). These submit the switches, asynchronously, in submission
 * order, so tasks on parts and on the whole can be mixed freely. */
static void collect(starnn_tensor *t, starpu_data_handle_t *children)
{
	for (int i = 0; i < t->nparts; i++)
		children[i] = t->parts[i]->handle;
}

static void ensure_split(starnn_tensor *t);

void starnn_tensor_make_whole(starnn_tensor *t)
{
	if (t->parent)
		ensure_split(t->parent);
	if (t->partitioned) {
		starpu_data_handle_t children[t->nparts];
		for (int i = 0; i < t->nparts; i++)
			if (t->parts[i]->partitioned)
				starnn_tensor_make_whole(t->parts[i]);
		collect(t, children);
		starpu_data_unpartition_submit(t->handle, (unsigned)t->nparts, children, -1);
		t->partitioned = 0;
	}
}

static void ensure_split(starnn_tensor *t)
{
	if (t->partitioned)
		return;
	starnn_tensor_make_whole(t);
	starpu_data_handle_t children[t->nparts];
	collect(t, children);
	starpu_data_partition_submit(t->handle, (unsigned)t->nparts, children);
	t->partitioned = 1;
}

int starnn_tensor_gather(starnn_tensor *t)
{
	starnn_tensor_make_whole(t);
	return 0;
}

/* --------------------------------------------------------------- host I/O */

static int copy_rows(starnn_tensor *t, void *dense, int to_tensor)
{
	starnn_tensor_make_whole(t);
	int rc = starpu_data_acquire(t->handle, to_tensor ? STARPU_W : STARPU_R);
	if (rc)
		return starnn_error(STARNN_ESTARPU, "tensor '%s': acquire failed (%d)", t->name, rc);
	size_t es = starnn_dtype_size(t->dtype);
	char *base = (char *)starpu_data_get_local_ptr(t->handle);
	size_t ld = starpu_matrix_get_local_ld(t->handle);
	for (size_t r = 0; r < t->rows; r++) {
		char *row = base + r * ld * es;
		char *d = (char *)dense + r * t->cols * es;
		if (to_tensor)
			memcpy(row, d, t->cols * es);
		else
			memcpy(d, row, t->cols * es);
	}
	starpu_data_release(t->handle);
	t->node = -1;
	return starnn_take_deferred_error();
}

int starnn_tensor_write(starnn_tensor *t, const void *src)
{
	return copy_rows(t, (void *)src, 1);
}

int starnn_tensor_read(starnn_tensor *t, void *dst)
{
	return copy_rows(t, dst, 0);
}

int starnn_tensor_read_f32(starnn_tensor *t, float *dst)
{
	if (t->dtype == STARNN_FP32)
		return starnn_tensor_read(t, dst);
	size_t n = starnn_tensor_numel(t);
	uint16_t *tmp = malloc(n * sizeof *tmp);
	if (!tmp)
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	int rc = starnn_tensor_read(t, tmp);
	for (size_t i = 0; rc == 0 && i < n; i++)
		dst[i] = t->dtype == STARNN_FP16 ? starnn_half_to_float(tmp[i]) : starnn_bf16_to_float(tmp[i]);
	free(tmp);
	return rc;
}

int starnn_tensor_write_f32(starnn_tensor *t, const float *src)
{
	if (t->dtype == STARNN_FP32)
		return starnn_tensor_write(t, src);
	size_t n = starnn_tensor_numel(t);
	uint16_t *tmp = malloc(n * sizeof *tmp);
	if (!tmp)
		return starnn_error(STARNN_ENOMEM, "tensor '%s': out of memory", t->name);
	for (size_t i = 0; i < n; i++)
		tmp[i] = t->dtype == STARNN_FP16 ? starnn_float_to_half(src[i]) : starnn_float_to_bf16(src[i]);
	int rc = starnn_tensor_write(t, tmp);
	free(tmp);
	return rc;
}
