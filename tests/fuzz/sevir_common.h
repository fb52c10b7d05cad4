/* What the two SEVIR HDF5 harnesses share: open a source on the image, and
 * read its first and last samples like the loader does. */
#ifndef STARNN_TESTS_FUZZ_SEVIR_COMMON_H
#define STARNN_TESTS_FUZZ_SEVIR_COMMON_H

#include <string.h>

#define STARNN_FUZZ_HDF5
#include "models/sevir/h5.h"
#include "models/sevir/internal.h"
#include "tests/fuzz/fuzz.h"

/* Samples are read only up to this image size: sevir_read allocates
 * (13 + 12) x H x W floats and more, which the readers bound (H, W <=
 * SEVIR_MAX_FILE_SIZE) but which is too much to do for every input. */
#define FUZZ_SEVIR_MAX_READ 64

/* The raw harness' file name and catalog: rows 0 (training split) and 1
 * (test split) of a file named like the seeds'. */
#define FUZZ_RAW_NAME "vil/2018/SEVIR_VIL_FUZZ.h5"
static const char fuzz_raw_catalog[] =
	"id,file_name,file_index,img_type,time_utc,pct_missing\n"
	"S800000,vil/2018/SEVIR_VIL_FUZZ.h5,0,vil,2018-07-02 03:30:00,0.0\n"
	"S800001,vil/2019/SEVIR_VIL_FUZZ.h5,1,vil,2019-07-02 13:50:00,0.000000\n";

static inline int fuzz_sevir_source(const uint8_t *data, size_t size, const struct sevir_options *o)
{
	hid_t file = fuzz_h5_open(data, size);
	if (file < 0)
		return 0;
	sevir_data *d;
	if (sevir_open_hdf5(&d, o, file, fuzz_raw_catalog, sizeof fuzz_raw_catalog - 1) < 0)
		return fuzz_h5_all_closed(); /* refused with a message: fine, if nothing was left open */
	int rc = 0;
	int n = sevir_count(d), s = sevir_size(d);
	if (n < 1 || s < 1 || s > SEVIR_MAX_FILE_SIZE)
		rc = FUZZ_FAIL("sevir_open accepted %d samples of %dx%d", n, s, s);
	/* what was accepted is what the file holds: frames of IN / OUT or vil */
	hid_t ds[2] = {d->kind == KIND_RAW ? d->vil : d->in, d->kind == KIND_RAW ? -1 : d->out};
	hsize_t want[2] = {d->kind == KIND_RAW ? SEVIR_FRAMES : (hsize_t)d->in_frames, (hsize_t)d->out_frames};
	for (int k = 0; k < 2 && rc == 0; k++) {
		hsize_t dims[4];
		if (ds[k] >= 0 && sevir_h5_dataset_shape(ds[k], d->path, "dataset", 4, dims) == 0 &&
		    (dims[3] != want[k] || dims[1] != (hsize_t)d->native))
			rc = FUZZ_FAIL("sevir_open accepted a dataset of %llu frames of %llux%llu for %llu of %dx%d",
			               (unsigned long long)dims[3], (unsigned long long)dims[1], (unsigned long long)dims[2],
			               (unsigned long long)want[k], d->native, d->native);
	}
	if (rc == 0 && s <= FUZZ_SEVIR_MAX_READ) {
		size_t ss = (size_t)s * s;
		float *x = malloc(2 * ss * SEVIR_IN_FRAMES * sizeof *x), *y = malloc(2 * ss * SEVIR_OUT_FRAMES * sizeof *y);
		int idx[2] = {0, n - 1};
		if (x && y)
			(void)sevir_read(d, idx, 2, 1, x, y); /* an error value is fine */
		free(x);
		free(y);
	}
	sevir_close(d);
	return rc ? rc : fuzz_h5_all_closed();
}

#endif
