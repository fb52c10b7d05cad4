/* The HDF5 helpers of the SEVIR data code: opening a file and its datasets,
 * checking a dataset's rank, and reading or writing the block of one row of
 * a 4-D N x H x W x F dataset (what every SEVIR layout holds: `vil`, `IN`,
 * `OUT`). The bottom of models/sevir/: the readers (raw.c, prepared.c),
 * the writers (writers.c) and data.c use it; it knows no sevir_data, so it
 * calls none of them. Messages name the file (`path`) and the dataset. */
#ifndef STARNN_SEVIR_H5_H
#define STARNN_SEVIR_H5_H

#include <stdint.h>

#include <hdf5.h>

/* Opens the regular HDF5 file `path` read-only into *out (errors: not a
 * regular file, not HDF5, cannot open; HDF5's own messages silenced). */
int sevir_h5_open_file(const char *path, hid_t *out);

/* Whether `name` is a dataset of `file` (0 on any HDF5 error, silently). */
int sevir_h5_has_dataset(hid_t file, const char *name);

/* Opens dataset `name` of `file` (of file `path`) into *out. */
int sevir_h5_open_dataset(hid_t file, const char *path, const char *name, hid_t *out);

/* The dims of dataset `ds` (`name` of file `path`), which must have rank
 * want_rank. */
int sevir_h5_dataset_shape(hid_t ds, const char *path, const char *name, int want_rank, hsize_t *dims);

/* The block of row `row` of the 4-D dataset `ds`: r x r pixels at (oy, ox)
 * and the first `frames` values of the last dimension, read into or
 * written from `buf` (R x R x frames values of mem_type, HWC). HDF5's
 * status: < 0 on failure (the caller words the message). */
herr_t sevir_h5_read_block(hid_t ds, hid_t mem_type, int64_t row, int oy, int ox, int r, int frames, void *buf);
herr_t sevir_h5_write_block(hid_t ds, hid_t mem_type, int64_t row, int oy, int ox, int r, int frames,
                            const void *buf);

/* Closes each of the n handles that is open (a file, dataset, dataspace or
 * datatype; < 0: none), HDF5's messages silenced: the cleanup after an
 * error as after success. SEVIR_H5_CLOSE(a, b, ...) closes a, b, ... in
 * that order. */
void sevir_h5_close(int n, const hid_t *ids);
#define SEVIR_H5_CLOSE(...) \
	sevir_h5_close((int)(sizeof((hid_t[]){__VA_ARGS__}) / sizeof(hid_t)), (hid_t[]){__VA_ARGS__})

#endif
