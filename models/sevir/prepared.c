/* Prepared nowcast files: `IN` (N x H x W x 13) and `OUT` (N x H x W x 12),
 * raw VIL values 0..255 as uint8 (what the SEVIR authors'
 * make_nowcast_dataset.py writes: chunked, the first dimension unlimited),
 * float32 or float64, in any storage HDF5 reads (contiguous, chunked,
 * extendible). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <hdf5.h>

#include "models/sevir/h5.h"
#include "models/sevir/internal.h"
#include "runtime/base/error.h"

static int check_values(const sevir_data *d, const char *name, int64_t sample, const float *v, size_t n)
{
	/* a branch-free pass first (it vectorises: this runs on every value the
	 * loader reads), then the first bad value for the message */
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		bad |= !(v[i] >= 0.0f) | !(v[i] <= 255.0f);
	if (!bad)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(v[i] >= 0 && v[i] <= 255))
			return starnn_error(isnan(v[i]) ? STARNN_ENUM : STARNN_EINVAL,
			                    "%s: dataset `%s`, sample %lld: value %g%s (element %zu; raw VIL must be 0..255)",
			                    d->path, name, (long long)sample, v[i], isnan(v[i]) ? " (NaN)" : "", i);
	return 0;
}

/* The block of sample `row` of dataset `ds` (R x R x frames, HWC): as
 * float32 (float datasets, checked) or as bytes (uint8 datasets: every
 * value is a raw VIL value, nothing to check). */
static int read_prepared_block(const sevir_data *d, hid_t ds, const char *name, int u8, int64_t row, int oy, int ox,
                               int r, int frames, void *out)
{
	if (sevir_h5_read_block(ds, u8 ? H5T_NATIVE_UCHAR : H5T_NATIVE_FLOAT, row, oy, ox, r, frames, out) < 0)
		return starnn_error(STARNN_EIO, "%s: cannot read `%s` sample %lld", d->path, name, (long long)row);
	return u8 ? 0 : check_values(d, name, row, out, (size_t)r * r * frames);
}

/* Whether dataset `name` holds uint8 (*u8 = 1), float32 or float64 values
 * (*u8 = 0); any other type is refused, named. */
static int value_type(const sevir_data *d, hid_t ds, const char *name, int *u8)
{
	hid_t type = H5Dget_type(ds);
	if (type < 0)
		return starnn_error(STARNN_EIO, "%s: cannot read the type of `%s`", d->path, name);
	H5T_class_t cls = H5Tget_class(type);
	size_t size = H5Tget_size(type);
	H5T_sign_t sign = cls == H5T_INTEGER ? H5Tget_sign(type) : H5T_SGN_NONE;
	H5Tclose(type);
	*u8 = cls == H5T_INTEGER && size == 1 && sign == H5T_SGN_NONE;
	if (*u8 || (cls == H5T_FLOAT && (size == 4 || size == 8)))
		return 0;
	char what[32];
	if (cls == H5T_INTEGER)
		snprintf(what, sizeof what, "%sint%zu", sign == H5T_SGN_NONE ? "u" : "", size * 8);
	else if (cls == H5T_FLOAT)
		snprintf(what, sizeof what, "float%zu", size * 8);
	else
		snprintf(what, sizeof what, "%s", cls == H5T_STRING ? "string" : "non-numeric");
	return starnn_error(STARNN_EINVAL,
	                    "%s: `%s` holds %s values; a prepared file holds uint8 (as the SEVIR authors' "
	                    "make_nowcast_dataset.py writes it), float32 or float64",
	                    d->path, name, what);
}

double sevir_memory_max(void)
{
	const char *e = getenv("STARNN_DATA_MEMORY_MB");
	if (!e || !*e)
		return SEVIR_MEMORY_MAX;
	char *end;
	double mb = strtod(e, &end);
	return *end || !(mb >= 0 && mb <= 1e9) ? -1 : mb * 1024 * 1024;
}

int sevir_open_prepared(sevir_data *d)
{
	STARNN_CHECK(sevir_h5_open_dataset(d->file, d->path, "IN", &d->in));
	STARNN_CHECK(sevir_h5_open_dataset(d->file, d->path, "OUT", &d->out));
	hsize_t di[4], dout[4];
	STARNN_CHECK(sevir_h5_dataset_shape(d->in, d->path, "IN", 4, di));
	STARNN_CHECK(sevir_h5_dataset_shape(d->out, d->path, "OUT", 4, dout));
	STARNN_CHECK(value_type(d, d->in, "IN", &d->in_u8));
	STARNN_CHECK(value_type(d, d->out, "OUT", &d->out_u8));
	if (di[1] != di[2] || di[1] < 1 || di[0] < 1)
		return starnn_error(STARNN_EINVAL, "%s: `IN` is %llux%llux%llux%llu, expected N x H x W x %d with H = W",
		                    d->path, (unsigned long long)di[0], (unsigned long long)di[1], (unsigned long long)di[2],
		                    (unsigned long long)di[3], d->in_frames);
	if (dout[0] != di[0] || dout[1] != di[1] || dout[2] != di[2])
		return starnn_error(STARNN_EINVAL, "%s: `OUT` is %llux%llux%llux%llu but `IN` is %llux%llux%llux%llu", d->path,
		                    (unsigned long long)dout[0], (unsigned long long)dout[1], (unsigned long long)dout[2],
		                    (unsigned long long)dout[3], (unsigned long long)di[0], (unsigned long long)di[1],
		                    (unsigned long long)di[2], (unsigned long long)di[3]);
	/* compared as hsize_t: a cast to int would take 2^32 + 13 frames for 13 */
	if (di[3] != (hsize_t)d->in_frames || dout[3] != (hsize_t)d->out_frames)
		return starnn_error(STARNN_EINVAL, "%s: `IN` has %llu frames and `OUT` %llu, expected %d and %d", d->path,
		                    (unsigned long long)di[3], (unsigned long long)dout[3], d->in_frames, d->out_frames);
	/* the file's image size sizes every read (a sample's region): bounded
	 * before it sizes an allocation */
	if (di[1] > SEVIR_MAX_FILE_SIZE)
		return starnn_error(STARNN_EINVAL, "%s: `IN` images are %llux%llu, at most %dx%d supported", d->path,
		                    (unsigned long long)di[1], (unsigned long long)di[2], SEVIR_MAX_FILE_SIZE,
		                    SEVIR_MAX_FILE_SIZE);
	if (di[0] > INT32_MAX)
		return starnn_error(STARNN_EINVAL, "%s: too many samples", d->path);
	d->nrows = (int64_t)di[0];
	d->native = (int)di[1];
	d->count = (int)d->nrows;
	d->windows = 1;
	/* Small files are checked whole now (NaN, range of float values), so
	 * that a bad file fails before training; every read checks what it
	 * reads anyway. Files of up to sevir_memory_max() bytes in memory
	 * (uint8 values as bytes, float values as float32) are kept in memory
	 * by this pass: the reads are then transposes out of memory (no HDF5
	 * read, no check). uint8 values need no check: only the files kept in
	 * memory are read now. */
	const size_t per = (size_t)d->native * d->native;
	const size_t nin = per * d->in_frames, nout = per * d->out_frames;
	const size_t ein = d->in_u8 ? 1 : sizeof(float), eout = d->out_u8 ? 1 : sizeof(float);
	double bytes = (double)d->nrows * ((double)nin * ein + (double)nout * eout), keep = sevir_memory_max();
	if (keep < 0)
		return starnn_error(STARNN_EINVAL, "STARNN_DATA_MEMORY_MB must be a number of MiB in [0, 1e9], got '%s'",
		                    getenv("STARNN_DATA_MEMORY_MB"));
	const int all_u8 = d->in_u8 && d->out_u8;
	const int check = !all_u8 && (double)d->nrows * (nin + nout) * 4 <= 1024.0 * 1024 * 1024;
	if (!check && bytes > keep)
		return 0;
	/* one pass: into memory (up to keep bytes, when the allocation works),
	 * else through one sample's buffer, checked either way */
	char *mi = NULL, *mo = NULL;
	float *buf = NULL;
	if (bytes <= keep) {
		mi = malloc((size_t)d->nrows * nin * ein);
		mo = malloc((size_t)d->nrows * nout * eout);
		if (!mi || !mo) {
			free(mi);
			free(mo);
			mi = mo = NULL;
		}
	}
	if (!mi && all_u8)
		return 0; /* no room, nothing to check: read from the file */
	if (!mi && !(buf = malloc((nin > nout ? nin : nout) * sizeof *buf)))
		return starnn_error(STARNN_ENOMEM, "out of memory");
	int rc = 0;
	for (int64_t i = 0; i < d->nrows && !rc; i++) {
		rc = read_prepared_block(d, d->in, "IN", d->in_u8, i, 0, 0, d->native, d->in_frames,
		                         mi ? mi + (size_t)i * nin * ein : (void *)buf);
		if (!rc)
			rc = read_prepared_block(d, d->out, "OUT", d->out_u8, i, 0, 0, d->native, d->out_frames,
			                         mo ? mo + (size_t)i * nout * eout : (void *)buf);
	}
	free(buf);
	if (rc) {
		free(mi);
		free(mo);
		return rc;
	}
	d->mem_in = mi, d->mem_out = mo;
	return 0;
}

/* Transposes an R x R region of HWC pixels (frames values each, rows
 * `stride` values apart) into T x R x R floats, in tiles of at most 64
 * pixels of a row so that both sides stay in cache; normalised
 * (sevir_normalise) on the way when norm. A uint8 value v gives what the
 * float32 value v gives, bit for bit. */
#define TRANSPOSE_TILE 64
#define HWC_TO_CHW(NAME, TYPE)                                                                                 \
	static void NAME(const TYPE *restrict in, int r, size_t stride, int frames, int norm, float *restrict out) \
	{                                                                                                          \
		const size_t rr = (size_t)r * r;                                                                       \
		for (int y = 0; y < r; y++)                                                                            \
			for (int x0 = 0; x0 < r; x0 += TRANSPOSE_TILE) {                                                   \
				const int x1 = x0 + TRANSPOSE_TILE < r ? x0 + TRANSPOSE_TILE : r;                              \
				const TYPE *src = in + (size_t)y * stride;                                                     \
				for (int t = 0; t < frames; t++) {                                                             \
					float *dst = out + (size_t)t * rr + (size_t)y * r;                                         \
					if (norm)                                                                                  \
						for (int x = x0; x < x1; x++)                                                          \
							dst[x] = sevir_normalise((float)src[(size_t)x * frames + t]);                      \
					else                                                                                       \
						for (int x = x0; x < x1; x++)                                                          \
							dst[x] = (float)src[(size_t)x * frames + t];                                       \
				}                                                                                              \
			}                                                                                                  \
	}
HWC_TO_CHW(hwc_to_chw_f32, float)
HWC_TO_CHW(hwc_to_chw_u8, uint8_t)

/* One dataset's frames of a region: HWC values at `in` (uint8 or float32,
 * rows `stride` values apart) to T x R x R floats. */
static void to_chw(const void *in, int u8, int r, size_t stride, int frames, int norm, float *out)
{
	if (u8)
		hwc_to_chw_u8(in, r, stride, frames, norm, out);
	else
		hwc_to_chw_f32(in, r, stride, frames, norm, out);
}

int sevir_prepared_read_frames(const sevir_data *d, int64_t row, int oy, int ox, int r, float *buf, int norm,
                               float *in, float *out)
{
	if (row < 0 || row >= d->nrows || oy < 0 || ox < 0 || r < 1 || oy + r > d->native || ox + r > d->native)
		return starnn_error(STARNN_EINVAL, "%s: sample %lld, region %dx%d at (%d, %d) out of the %dx%d images",
		                    d->path, (long long)row, r, r, oy, ox, d->native, d->native);
	const size_t per = (size_t)d->native * d->native, at = (size_t)oy * d->native + (size_t)ox;
	if (d->mem_in) { /* the file in memory, checked */
		const size_t ein = d->in_u8 ? 1 : sizeof(float), eout = d->out_u8 ? 1 : sizeof(float);
		const char *mi = d->mem_in, *mo = d->mem_out;
		to_chw(mi + ((size_t)row * per + at) * d->in_frames * ein, d->in_u8, r, (size_t)d->native * d->in_frames,
		       d->in_frames, norm, in);
		to_chw(mo + ((size_t)row * per + at) * d->out_frames * eout, d->out_u8, r,
		       (size_t)d->native * d->out_frames, d->out_frames, norm, out);
		return 0;
	}
	STARNN_CHECK(read_prepared_block(d, d->in, "IN", d->in_u8, row, oy, ox, r, d->in_frames, buf));
	to_chw(buf, d->in_u8, r, (size_t)r * d->in_frames, d->in_frames, norm, in);
	STARNN_CHECK(read_prepared_block(d, d->out, "OUT", d->out_u8, row, oy, ox, r, d->out_frames, buf));
	to_chw(buf, d->out_u8, r, (size_t)r * d->out_frames, d->out_frames, norm, out);
	return 0;
}
