/* Raw SEVIR event files: `vil` (N x H x W x 49 uint8, 0..254, 255 =
 * missing) and `id` (N strings, fixed-length or variable), the rows used
 * chosen by CATALOG.csv (catalog.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "models/sevir/h5.h"
#include "models/sevir/internal.h"
#include "runtime/base/error.h"

static int read_ids(sevir_data *d)
{
	hid_t ds;
	STARNN_CHECK(sevir_h5_open_dataset(d->file, d->path, "id", &ds));
	int rc = 0;
	hsize_t dims[1];
	hid_t type = -1, mem = -1;
	char *fixed = NULL, **var = NULL;
	rc = sevir_h5_dataset_shape(ds, d->path, "id", 1, dims);
	if (rc)
		goto out;
	if ((int64_t)dims[0] != d->nrows) {
		rc = starnn_error(STARNN_EINVAL, "%s: `id` has %llu entries but `vil` has %lld events", d->path,
		                  (unsigned long long)dims[0], (long long)d->nrows);
		goto out;
	}
	type = H5Dget_type(ds);
	if (H5Tget_class(type) != H5T_STRING) {
		rc = starnn_error(STARNN_EINVAL, "%s: `id` is not a string dataset", d->path);
		goto out;
	}
	/* the width of fixed-length ids is the file's: bounded before it sizes the buffer */
	size_t w = H5Tis_variable_str(type) > 0 ? 0 : H5Tget_size(type);
	if (w > SEVIR_MAX_ID_BYTES) {
		rc = starnn_error(STARNN_EINVAL, "%s: `id` holds strings of %zu bytes, at most %d expected", d->path, w,
		                  SEVIR_MAX_ID_BYTES);
		goto out;
	}
	d->ids = calloc((size_t)d->nrows + 1, sizeof *d->ids);
	if (!d->ids) {
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
		goto out;
	}
	mem = H5Tcopy(H5T_C_S1);
	if (H5Tis_variable_str(type) > 0) {
		H5Tset_size(mem, H5T_VARIABLE);
		var = calloc((size_t)d->nrows + 1, sizeof *var);
		if (!var)
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
		else if (H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, var) < 0)
			rc = starnn_error(STARNN_EIO, "%s: cannot read `id`", d->path);
		for (int64_t i = 0; rc == 0 && i < d->nrows; i++) {
			if (var[i] && strlen(var[i]) > SEVIR_MAX_ID_BYTES)
				rc = starnn_error(STARNN_EINVAL, "%s: `id` of row %lld has %zu bytes, at most %d expected", d->path,
				                  (long long)i, strlen(var[i]), SEVIR_MAX_ID_BYTES);
			else
				d->ids[i] = strdup(var[i] ? var[i] : "");
		}
		/* also after a failed read: the strings converted before the failure
		 * are HDF5's allocations, ours to free (the rest are NULL) */
		if (var) {
			hid_t sp = H5Dget_space(ds);
			H5Dvlen_reclaim(mem, sp, H5P_DEFAULT, var);
			H5Sclose(sp);
		}
		if (rc)
			goto out;
	} else {
		H5Tset_size(mem, w + 1);
		H5Tset_strpad(mem, H5T_STR_NULLTERM);
		fixed = calloc((size_t)d->nrows + 1, w + 1);
		if (!fixed || H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, fixed) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot read `id`", d->path);
			goto out;
		}
		for (int64_t i = 0; i < d->nrows; i++)
			d->ids[i] = strdup(fixed + (size_t)i * (w + 1));
	}
	for (int64_t i = 0; i < d->nrows; i++)
		if (!d->ids[i]) {
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
			goto out;
		}
out:
	free(fixed);
	free(var);
	SEVIR_H5_CLOSE(mem, type, ds);
	return rc;
}

int sevir_open_raw(sevir_data *d)
{
	STARNN_CHECK(sevir_h5_open_dataset(d->file, d->path, "vil", &d->vil));
	hsize_t dims[4];
	STARNN_CHECK(sevir_h5_dataset_shape(d->vil, d->path, "vil", 4, dims));
	hid_t type = H5Dget_type(d->vil);
	int ok = H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 1 && H5Tget_sign(type) == H5T_SGN_NONE;
	H5Tclose(type);
	if (!ok)
		return starnn_error(STARNN_EINVAL, "%s: `vil` must hold 8-bit unsigned integers", d->path);
	if (dims[0] < 1 || dims[1] != dims[2] || dims[1] < 1)
		return starnn_error(STARNN_EINVAL, "%s: `vil` is %llux%llux%llux%llu, expected N x H x W x %d with H = W",
		                    d->path, (unsigned long long)dims[0], (unsigned long long)dims[1],
		                    (unsigned long long)dims[2], (unsigned long long)dims[3], SEVIR_FRAMES);
	if (dims[3] != SEVIR_FRAMES)
		return starnn_error(STARNN_EINVAL, "%s: `vil` has %llu frames per event, expected %d", d->path,
		                    (unsigned long long)dims[3], SEVIR_FRAMES);
	/* the file's dimensions size the reads (a sample's region, all ids):
	 * bounded before they size an allocation */
	if (dims[1] > SEVIR_MAX_FILE_SIZE)
		return starnn_error(STARNN_EINVAL, "%s: `vil` images are %llux%llu, at most %dx%d supported", d->path,
		                    (unsigned long long)dims[1], (unsigned long long)dims[2], SEVIR_MAX_FILE_SIZE,
		                    SEVIR_MAX_FILE_SIZE);
	if (dims[0] > SEVIR_MAX_FILE_ROWS)
		return starnn_error(STARNN_EINVAL, "%s: `vil` has %llu events, at most %d supported", d->path,
		                    (unsigned long long)dims[0], SEVIR_MAX_FILE_ROWS);
	d->nrows = (int64_t)dims[0];
	d->native = (int)dims[1];
	d->frames = SEVIR_FRAMES;
	STARNN_CHECK(read_ids(d));
	STARNN_CHECK(sevir_select_events(d));
	d->count = d->nevents * d->windows;
	return 0;
}

/* Transposes a region read as R x R x T (HWC) into T x R x R floats, in
 * tiles of 64 pixels so that both sides stay in cache. */
#define TRANSPOSE_TILE 64
static void hwc_to_chw_u8(const uint8_t *restrict in, int rr, int stride, int frames, float *restrict out)
{
	for (int p0 = 0; p0 < rr; p0 += TRANSPOSE_TILE) {
		int p1 = p0 + TRANSPOSE_TILE < rr ? p0 + TRANSPOSE_TILE : rr;
		for (int t = 0; t < frames; t++)
			for (int p = p0; p < p1; p++)
				out[(size_t)t * rr + p] = in[(size_t)p * stride + t];
	}
}

int sevir_raw_read_region(const sevir_data *d, int64_t event, int oy, int ox, int r, int t0, int T, uint8_t *buf,
                          float *region)
{
	/* all frames of the pixels: long contiguous runs (a partial last dimension
	 * makes HDF5 copy runs of T bytes); the transpose picks [t0, t0 + T) */
	const size_t rr = (size_t)r * r;
	const int F = d->frames;
	if (sevir_h5_read_block(d->vil, H5T_NATIVE_UCHAR, event, oy, ox, r, F, buf) < 0)
		return starnn_error(STARNN_EIO, "%s: cannot read `vil` row %lld", d->path, (long long)event);
	for (size_t p = 0; p < rr; p++)
		for (int t = t0; t < t0 + T; t++)
			if (buf[p * F + t] == 255)
				return starnn_error(STARNN_EINVAL,
				                    "%s: `vil` row %lld (id %s) has missing pixels (255) at frame %d, "
				                    "though %s lists pct_missing 0",
				                    d->path, (long long)event, d->ids ? d->ids[event] : "?", t, d->catalog);
	hwc_to_chw_u8(buf + t0, (int)rr, F, T, region);
	return 0;
}
