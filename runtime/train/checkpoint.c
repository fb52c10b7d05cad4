/* HDF5 checkpoints of a training run (see checkpoint.h): the tensors of a
 * model and its optimizer state, and the run's attributes.
 *
 * Layout: one fp32 dataset per tensor at its '/'-separated path (groups
 * made along the way), the tensor's shape as the dataset's; root
 * attributes: int64, double, or variable-length UTF-8 strings (h5py reads
 * them as str). File problems are STARNN_EIO; contents that do not fit
 * (missing dataset or attribute, other shape or type, NaN) STARNN_EINVAL or
 * STARNN_ENUM, with the file and the dataset named. Files are written
 * atomically (atomic.h). */
#include <config.h>

#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/train/atomic.h"
#include "runtime/train/checkpoint.h"

#define REASON(buf) ckpt_hdf5_reason((buf), sizeof(buf))

/* ------------------------------------------------------ writing */

static int check_path(const char *file, const char *path)
{
	if (!path || !path[0])
		return starnn_error(STARNN_EINVAL, "checkpoint %s: empty dataset path", file);
	if (path[0] == '/' || path[strlen(path) - 1] == '/' || strstr(path, "//"))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: bad dataset path '%s' (relative, '/'-separated names)",
		                    file, path);
	return 0;
}

/* Whether every component of path exists (H5Lexists fails on a missing
 * intermediate group instead of saying no). */
static int link_exists(hid_t fid, const char *path)
{
	char *buf = strdup(path);
	if (!buf)
		return 0;
	int exists = 1;
	for (size_t i = 0, n = strlen(buf); exists && i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (H5Lexists(fid, buf, H5P_DEFAULT) <= 0) {
			H5Eclear2(H5E_DEFAULT);
			exists = 0;
		}
		buf[i] = c;
	}
	free(buf);
	return exists;
}

static int write_attr(hid_t root, const char *file, const struct ckpt_attr *at)
{
	char why[256];
	if (!at->name || !at->name[0])
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute without a name", file);
	if (H5Aexists(root, at->name) > 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' given twice", file, at->name);
	hid_t type, mtype;
	const void *value;
	const char *s = at->s ? at->s : "";
	switch (at->type) {
	case CKPT_INT:
		type = H5Tcopy(H5T_STD_I64LE);
		mtype = H5Tcopy(H5T_NATIVE_INT64);
		value = &at->i;
		break;
	case CKPT_DOUBLE:
		type = H5Tcopy(H5T_IEEE_F64LE);
		mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
		value = &at->d;
		break;
	case CKPT_STRING:
		type = H5Tcopy(H5T_C_S1);
		H5Tset_size(type, H5T_VARIABLE);
		H5Tset_cset(type, H5T_CSET_UTF8);
		mtype = H5Tcopy(type);
		value = &s;
		break;
	default:
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' of unknown type %d", file, at->name,
		                    (int)at->type);
	}
	hid_t space = H5Screate(H5S_SCALAR);
	hid_t attr = H5Acreate2(root, at->name, type, space, H5P_DEFAULT, H5P_DEFAULT);
	herr_t st = attr < 0 ? -1 : H5Awrite(attr, mtype, value);
	if (st < 0)
		REASON(why); /* now: any later successful call clears the stack */
	if (attr >= 0 && H5Aclose(attr) < 0 && st >= 0) {
		st = -1;
		REASON(why);
	}
	H5Sclose(space);
	H5Tclose(type);
	H5Tclose(mtype);
	if (st < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot write attribute '%s': %s", file, at->name, why);
	return 0;
}

static int write_tensor(hid_t fid, hid_t lcpl, const char *file, const struct ckpt_entry *e, float *buf)
{
	char why[256], desc[128];
	starnn_tensor *t = e->tensor;
	if (link_exists(fid, e->path))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: dataset '%s' given twice", file, e->path);
	int rc = starnn_tensor_read_f32(t, buf);
	if (rc < 0) {
		char prev[512];
		snprintf(prev, sizeof prev, "%s", starnn_error_message());
		return starnn_error(rc, "checkpoint %s: cannot read tensor %s for '%s': %s", file,
		                    starnn_tensor_describe(t, desc, sizeof desc), e->path, prev);
	}
	hsize_t dims[STARNN_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++)
		dims[d] = (hsize_t)t->shape[d];
	hid_t space = H5Screate_simple(t->ndim, dims, NULL);
	hid_t dset = H5Dcreate2(fid, e->path, H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	herr_t st = dset < 0 ? -1 : H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	/* HDF5 may hold small data back (sieve buffer): the flush makes a full
	 * disk show now, while the dataset can still be closed (see
	 * ckpt_h5_discard) */
	if (st >= 0)
		st = H5Dflush(dset);
	if (st < 0) {
		REASON(why);
		ckpt_h5_discard(fid);
	}
	if (dset >= 0 && H5Dclose(dset) < 0 && st >= 0) {
		st = -1;
		REASON(why);
		ckpt_h5_discard(fid);
	}
	H5Sclose(space);
	if (st < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot write dataset '%s': %s", file, e->path, why);
	return 0;
}

int ckpt_write(const char *file, const struct ckpt_entry *entries, int nentries, const struct ckpt_attr *attrs,
               int nattrs)
{
	ckpt_hdf5_quiet();
	if (nentries < 0 || nattrs < 0 || (nentries && !entries) || (nattrs && !attrs))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: bad arguments", file ? file : "(null)");
	size_t maxn = 1;
	for (int i = 0; i < nentries; i++) {
		STARNN_CHECK(check_path(file ? file : "(null)", entries[i].path));
		if (!entries[i].tensor)
			return starnn_error(STARNN_EINVAL, "checkpoint %s: no tensor for '%s'", file, entries[i].path);
		size_t n = starnn_tensor_numel(entries[i].tensor);
		maxn = n > maxn ? n : maxn;
	}
	float *buf = malloc(maxn * sizeof *buf);
	if (!buf)
		return starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory (%zu elements)", file, maxn);

	struct ckpt_atomic a;
	int rc = ckpt_atomic_begin(&a, file);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	char why[256];
	hid_t lcpl = -1, root = -1;
	hid_t fid = ckpt_atomic_h5create(&a, why, sizeof why);
	if (fid < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot create HDF5 file %s: %s", file, a.tmp, why);
		goto fail;
	}
	lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	for (int i = 0; i < nentries && rc == 0; i++) {
		if (i == nentries / 2)
			ckpt_test_pause(); /* half written: where a kill test wants to strike */
		rc = write_tensor(fid, lcpl, file, &entries[i], buf);
	}
	if (rc < 0)
		goto fail;
	root = H5Gopen2(fid, "/", H5P_DEFAULT);
	if (root < 0)
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot open the root group: %s", file, REASON(why));
	for (int i = 0; i < nattrs && rc == 0; i++)
		rc = write_attr(root, file, &attrs[i]);
	if (rc < 0)
		goto fail;
	herr_t st = H5Gclose(root);
	root = -1;
	if (st < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot write the attributes: %s", file, REASON(why));
		goto fail;
	}
	H5Pclose(lcpl);
	lcpl = -1;
	/* The metadata reach the file only now: a full disk often shows here.
	 * The file is closed even after a failed flush (the descriptor must
	 * not outlive the temporary), the first reason kept. */
	st = H5Fflush(fid, H5F_SCOPE_GLOBAL);
	if (st < 0) {
		REASON(why);
		ckpt_h5_discard(fid);
	}
	if (H5Fclose(fid) < 0 && st >= 0) {
		st = -1;
		REASON(why);
	}
	fid = -1;
	if (st < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot finish the HDF5 file: %s", file, why);
		goto fail;
	}
	free(buf);
	return ckpt_atomic_commit(&a);

fail:
	if (fid >= 0)
		ckpt_h5_discard(fid);
	if (root >= 0)
		H5Gclose(root);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (fid >= 0)
		H5Fclose(fid);
	H5Eclear2(H5E_DEFAULT);
	ckpt_atomic_abort(&a);
	free(buf);
	return rc;
}

/* ------------------------------------------------------ reading */

struct ckpt_file {
	hid_t fid;
	char *name;
};

int ckpt_open(ckpt_file **out, const char *file)
{
	ckpt_hdf5_quiet();
	*out = NULL;
	char why[256];
	struct stat st;
	if (!file || !file[0])
		return starnn_error(STARNN_EINVAL, "no checkpoint file name");
	if (stat(file, &st) < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: %s", file, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return starnn_error(STARNN_EIO, "checkpoint %s: is a directory", file);
	if (access(file, R_OK) < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: %s", file, strerror(errno));
	htri_t is = H5Fis_hdf5(file);
	if (is <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return starnn_error(STARNN_EIO, "checkpoint %s: not an HDF5 file", file);
	}
	hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (fid < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot open: %s", file, REASON(why));
	return ckpt_open_hdf5(out, fid, file);
}

/* checkpoint.h takes the file as int64_t, so that it need not include hdf5.h */
_Static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is 64-bit since HDF5 1.10");

int ckpt_open_hdf5(ckpt_file **out, int64_t fid, const char *name)
{
	ckpt_hdf5_quiet();
	*out = NULL;
	ckpt_file *f = calloc(1, sizeof *f);
	if (!f || !(f->name = strdup(name))) {
		free(f);
		H5Fclose((hid_t)fid);
		return starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory", name);
	}
	f->fid = (hid_t)fid;
	*out = f;
	return 0;
}

void ckpt_close(ckpt_file *f)
{
	if (!f)
		return;
	ckpt_hdf5_quiet();
	H5Fclose(f->fid);
	free(f->name);
	free(f);
}

/* Opens root attribute `name` of type class `cls` holding one value. */
int ckpt_has_attr(ckpt_file *f, const char *name)
{
	ckpt_hdf5_quiet();
	int yes = name && H5Aexists(f->fid, name) > 0;
	H5Eclear2(H5E_DEFAULT);
	return yes;
}

static int open_attr(ckpt_file *f, const char *name, H5T_class_t cls, const char *what, hid_t *attr)
{
	ckpt_hdf5_quiet();
	if (!name || H5Aexists(f->fid, name) <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return starnn_error(STARNN_EINVAL, "checkpoint %s: no attribute '%s'", f->name, name ? name : "(null)");
	}
	hid_t a = H5Aopen(f->fid, name, H5P_DEFAULT);
	if (a < 0) {
		char why[256];
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot open attribute '%s': %s", f->name, name, REASON(why));
	}
	hid_t type = H5Aget_type(a), space = H5Aget_space(a);
	H5T_class_t c = H5Tget_class(type);
	hssize_t npoints = H5Sget_simple_extent_npoints(space);
	H5Tclose(type);
	H5Sclose(space);
	static const char *const names[] = {[H5T_INTEGER] = "an integer", [H5T_FLOAT] = "a floating-point number",
	                                    [H5T_STRING] = "a string"};
	const char *got = c >= 0 && c < (int)(sizeof names / sizeof *names) && names[c] ? names[c] : "another type";
	if (c != cls || npoints != 1) {
		H5Aclose(a);
		if (npoints != 1)
			return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' holds %lld values, expected one %s",
			                    f->name, name, (long long)npoints, what);
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' is %s, expected %s", f->name, name, got,
		                    what);
	}
	*attr = a;
	return 0;
}

/* Root attribute `name` (one value of class cls) read as mtype. */
static int get_scalar(ckpt_file *f, const char *name, H5T_class_t cls, const char *what, hid_t mtype, void *value)
{
	hid_t a;
	STARNN_CHECK(open_attr(f, name, cls, what, &a));
	char why[256];
	herr_t st = H5Aread(a, mtype, value);
	if (st < 0)
		REASON(why);
	H5Aclose(a);
	if (st < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, why);
	return 0;
}

int ckpt_get_int(ckpt_file *f, const char *name, int64_t *value)
{
	return get_scalar(f, name, H5T_INTEGER, "an integer", H5T_NATIVE_INT64, value);
}

int ckpt_get_double(ckpt_file *f, const char *name, double *value)
{
	return get_scalar(f, name, H5T_FLOAT, "a floating-point number", H5T_NATIVE_DOUBLE, value);
}

int ckpt_get_string(ckpt_file *f, const char *name, char *buf, size_t size)
{
	hid_t a;
	char why[256];
	STARNN_CHECK(open_attr(f, name, H5T_STRING, "a string", &a));
	hid_t type = H5Aget_type(a);
	hid_t mtype = H5Tcopy(type);
	char *s = NULL;
	int rc = 0;
	if (H5Tis_variable_str(type) > 0) {
		if (H5Aread(a, mtype, &s) < 0)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, REASON(why));
	} else {
		size_t n = H5Tget_size(type);
		/* the size is the file's: a damaged one must not size the allocation */
		if (n == 0 || n > CKPT_MAX_STRING)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' is a string of %zu bytes (at most %d)",
			                  f->name, name, n, CKPT_MAX_STRING);
		else if (!(s = malloc(n + 1)))
			rc = starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory", f->name);
		else if (H5Aread(a, mtype, s) < 0)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, REASON(why));
		else
			s[n] = '\0';
	}
	if (rc == 0) {
		/* a variable-length string may be stored as null (HDF5 then reads a
		 * NULL pointer): the empty string */
		const char *v = s ? s : "";
		size_t n = strlen(v);
		if (n >= size)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' (%zu characters) does not fit in %zu bytes",
			                  f->name, name, n, size);
		else
			memcpy(buf, v, n + 1);
	}
	if (H5Tis_variable_str(type) > 0) {
		if (s)
			H5free_memory(s);
	} else {
		free(s);
	}
	H5Tclose(mtype);
	H5Tclose(type);
	H5Aclose(a);
	return rc;
}

int ckpt_has(ckpt_file *f, const char *path)
{
	ckpt_hdf5_quiet();
	if (!f || !path || !path[0] || !link_exists(f->fid, path))
		return 0;
	hid_t o = H5Oopen(f->fid, path, H5P_DEFAULT);
	if (o < 0) {
		H5Eclear2(H5E_DEFAULT);
		return 0;
	}
	int is_dataset = H5Iget_type(o) == H5I_DATASET;
	H5Oclose(o);
	return is_dataset;
}

static void shape_string(char *buf, size_t size, int ndim, const int64_t *dims)
{
	size_t o = 0;
	o += snprintf(buf + o, size - o, "[");
	for (int d = 0; d < ndim && o < size; d++)
		o += snprintf(buf + o, size - o, d ? ",%" PRId64 : "%" PRId64, dims[d]);
	if (o < size)
		snprintf(buf + o, size - o, "]");
}

int ckpt_read_f32(ckpt_file *f, const char *path, const char *tensor_name, int ndim, const int64_t *shape,
                  float *buf)
{
	ckpt_hdf5_quiet();
	char why[256];
	if (!ckpt_has(f, path))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: no dataset '%s'", f->name, path ? path : "(null)");
	hid_t dset = H5Dopen2(f->fid, path, H5P_DEFAULT);
	if (dset < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot open dataset '%s': %s", f->name, path, REASON(why));
	hid_t type = H5Dget_type(dset), space = H5Dget_space(dset);
	H5T_class_t cls = H5Tget_class(type);
	int fndim = H5Sget_simple_extent_ndims(space);
	hsize_t dims[H5S_MAX_RANK];
	int64_t fshape[H5S_MAX_RANK];
	if (fndim > 0)
		H5Sget_simple_extent_dims(space, dims, NULL);
	for (int d = 0; d < fndim; d++)
		fshape[d] = (int64_t)dims[d];
	H5Tclose(type);
	H5Sclose(space);
	int rc = 0;
	int same = fndim == ndim;
	size_t n = 1;
	for (int d = 0; same && d < ndim; d++) {
		same = fshape[d] == shape[d];
		n *= (size_t)shape[d];
	}
	if (cls != H5T_FLOAT) {
		rc = starnn_error(STARNN_EINVAL, "checkpoint %s: dataset '%s' is not floating-point", f->name, path);
	} else if (!same) {
		char a[128], b[128];
		shape_string(a, sizeof a, fndim < 0 ? 0 : fndim, fshape);
		shape_string(b, sizeof b, ndim, shape);
		rc = starnn_error(STARNN_EINVAL, "checkpoint %s: dataset '%s' has shape %s, the model's tensor '%s' has %s",
		                  f->name, path, a, tensor_name, b);
	} else if (H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot read dataset '%s': %s", f->name, path, REASON(why));
	}
	H5Dclose(dset);
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			if (!isfinite(buf[i]))
				return starnn_error(STARNN_ENUM, "checkpoint %s: dataset '%s' holds %g at element %zu", f->name,
				                    path, (double)buf[i], i);
	return rc;
}

int ckpt_read_tensor(ckpt_file *f, const char *path, starnn_tensor *t)
{
	float *buf = malloc((starnn_tensor_numel(t) ? starnn_tensor_numel(t) : 1) * sizeof *buf);
	if (!buf)
		return starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory", f->name);
	int rc = ckpt_read_f32(f, path, t->name, t->ndim, t->shape, buf);
	if (rc == 0)
		rc = starnn_tensor_write_f32(t, buf);
	free(buf);
	return rc;
}

/* ------------------------------------------------------ mixed precision */

static const char *const scaling_names[] = {[CKPT_SCALING_NONE] = "none", [CKPT_SCALING_DYNAMIC] = "dynamic",
                                            [CKPT_SCALING_STATIC] = "static"};

const char *ckpt_precision_name(starnn_dtype compute)
{
	switch (compute) {
	case STARNN_FP32: return "fp32";
	case STARNN_FP16: return "amp-fp16";
	case STARNN_BF16: return "amp-bf16";
	default: return NULL;
	}
}

int ckpt_precision_parse(const char *name)
{
	static const starnn_dtype all[] = {STARNN_FP32, STARNN_FP16, STARNN_BF16};
	for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
		if (strcmp(name, ckpt_precision_name(all[i])) == 0)
			return (int)all[i];
	return -1;
}

static int amp_check(const char *where, const struct ckpt_amp *a)
{
	if (!ckpt_precision_name(a->compute))
		return starnn_error(STARNN_EINVAL, "%s: unknown compute precision %d", where, (int)a->compute);
	if (a->loss_scaling < CKPT_SCALING_NONE || a->loss_scaling > CKPT_SCALING_STATIC)
		return starnn_error(STARNN_EINVAL, "%s: unknown loss scaling %d", where, a->loss_scaling);
	if (a->loss_scaling == CKPT_SCALING_NONE)
		return 0;
	if (!(a->scale > 0) || !isfinite(a->scale))
		return starnn_error(STARNN_EINVAL, "%s: 'loss_scale' is %g, not a positive finite number", where, a->scale);
	const struct {
		const char *name;
		int64_t v;
	} counters[] = {{"loss_scale_good_steps", a->good_steps},
	                {"loss_scale_skipped_steps", a->skipped_steps},
	                {"loss_scale_applied_steps", a->applied_steps}};
	for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
		if (counters[i].v < 0)
			return starnn_error(STARNN_EINVAL, "%s: '%s' is %lld, negative", where, counters[i].name,
			                    (long long)counters[i].v);
	return 0;
}

int ckpt_amp_attrs(const struct ckpt_amp *a, struct ckpt_attr *attrs, int *n)
{
	*n = 0;
	STARNN_CHECK(amp_check("checkpoint", a));
	int k = 0;
	attrs[k++] = (struct ckpt_attr){.name = "precision", .type = CKPT_STRING, .s = ckpt_precision_name(a->compute)};
	attrs[k++] = (struct ckpt_attr){.name = "loss_scaling", .type = CKPT_STRING, .s = scaling_names[a->loss_scaling]};
	if (a->loss_scaling != CKPT_SCALING_NONE) {
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale", .type = CKPT_DOUBLE, .d = a->scale};
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale_good_steps", .type = CKPT_INT, .i = a->good_steps};
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale_skipped_steps", .type = CKPT_INT, .i = a->skipped_steps};
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale_applied_steps", .type = CKPT_INT, .i = a->applied_steps};
	}
	*n = k;
	return 0;
}

static int has_attr(ckpt_file *f, const char *name)
{
	ckpt_hdf5_quiet();
	htri_t e = H5Aexists(f->fid, name);
	if (e < 0)
		H5Eclear2(H5E_DEFAULT);
	return e > 0;
}

int ckpt_get_amp(ckpt_file *f, struct ckpt_amp *a)
{
	static const char *const later[] = {"loss_scaling", "loss_scale", "loss_scale_good_steps",
	                                    "loss_scale_skipped_steps", "loss_scale_applied_steps"};
	*a = (struct ckpt_amp){.compute = STARNN_FP32, .loss_scaling = CKPT_SCALING_NONE};
	if (!has_attr(f, "precision")) {
		/* an older file: fp32 and no loss scaling, unless it is a
		 * damaged newer one */
		for (size_t i = 0; i < sizeof later / sizeof *later; i++)
			if (has_attr(f, later[i]))
				return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' without 'precision'", f->name,
				                    later[i]);
		return 0;
	}
	char s[32];
	STARNN_CHECK(ckpt_get_string(f, "precision", s, sizeof s));
	int c = ckpt_precision_parse(s);
	if (c < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute 'precision' is '%s', not fp32, amp-fp16 or amp-bf16",
		                    f->name, s);
	a->compute = (starnn_dtype)c;
	STARNN_CHECK(ckpt_get_string(f, "loss_scaling", s, sizeof s));
	a->loss_scaling = -1;
	for (int i = 0; i < (int)(sizeof scaling_names / sizeof *scaling_names); i++)
		if (strcmp(s, scaling_names[i]) == 0)
			a->loss_scaling = i;
	if (a->loss_scaling < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute 'loss_scaling' is '%s', not none, dynamic or static",
		                    f->name, s);
	if (a->loss_scaling == CKPT_SCALING_NONE)
		return 0;
	STARNN_CHECK(ckpt_get_double(f, "loss_scale", &a->scale));
	STARNN_CHECK(ckpt_get_int(f, "loss_scale_good_steps", &a->good_steps));
	STARNN_CHECK(ckpt_get_int(f, "loss_scale_skipped_steps", &a->skipped_steps));
	STARNN_CHECK(ckpt_get_int(f, "loss_scale_applied_steps", &a->applied_steps));
	char where[600];
	snprintf(where, sizeof where, "checkpoint %s", f->name);
	return amp_check(where, a);
}
