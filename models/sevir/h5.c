/* The HDF5 helpers of the SEVIR data code (see h5.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <hdf5.h>

#include "models/sevir/h5.h"
#include "runtime/base/error.h"

int sevir_h5_open_file(const char *path, hid_t *out)
{
	*out = -1;
	struct stat st;
	if (stat(path, &st) != 0)
		return starnn_error(STARNN_EIO, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return starnn_error(STARNN_EIO, "%s: not a regular file", path);
	htri_t is;
	H5E_BEGIN_TRY
	{
		is = H5Fis_hdf5(path);
		*out = is > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
	}
	H5E_END_TRY;
	if (is <= 0)
		return starnn_error(STARNN_EIO, "%s: not an HDF5 file", path);
	if (*out < 0)
		return starnn_error(STARNN_EIO, "%s: cannot open the HDF5 file", path);
	return 0;
}

int sevir_h5_has_dataset(hid_t file, const char *name)
{
	htri_t r;
	H5E_BEGIN_TRY
	{
		r = H5Lexists(file, name, H5P_DEFAULT);
		if (r > 0) {
			H5O_info_t info;
			if (H5Oget_info_by_name(file, name, &info, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET)
				r = 0;
		}
	}
	H5E_END_TRY;
	return r > 0;
}

int sevir_h5_open_dataset(hid_t file, const char *path, const char *name, hid_t *out)
{
	H5E_BEGIN_TRY
	{
		*out = H5Dopen2(file, name, H5P_DEFAULT);
	}
	H5E_END_TRY;
	if (*out < 0)
		return starnn_error(STARNN_EIO, "%s: cannot open dataset `%s`", path, name);
	return 0;
}

int sevir_h5_dataset_shape(hid_t ds, const char *path, const char *name, int want_rank, hsize_t *dims)
{
	hid_t sp = H5Dget_space(ds);
	if (sp < 0)
		return starnn_error(STARNN_EIO, "%s: cannot read the dataspace of `%s`", path, name);
	int rank = H5Sget_simple_extent_ndims(sp);
	if (rank != want_rank) {
		H5Sclose(sp);
		return starnn_error(STARNN_EINVAL, "%s: dataset `%s` has rank %d, expected %d", path, name, rank,
		                    want_rank);
	}
	H5Sget_simple_extent_dims(sp, dims, NULL);
	H5Sclose(sp);
	return 0;
}

/* The hyperslab {row, oy, ox, 0} + {1, r, r, frames} of ds against a
 * memory space of the same shape, then the read or the write. */
static herr_t block_io(hid_t ds, hid_t mem_type, int64_t row, int oy, int ox, int r, int frames, void *rbuf,
                       const void *wbuf)
{
	hsize_t start[4] = {(hsize_t)row, (hsize_t)oy, (hsize_t)ox, 0};
	hsize_t count[4] = {1, (hsize_t)r, (hsize_t)r, (hsize_t)frames};
	hid_t fs = H5Dget_space(ds);
	hid_t ms = H5Screate_simple(4, count, NULL);
	herr_t e = fs < 0 || ms < 0 ? -1 : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
	if (e >= 0 && rbuf)
		e = H5Dread(ds, mem_type, ms, fs, H5P_DEFAULT, rbuf);
	else if (e >= 0)
		e = H5Dwrite(ds, mem_type, ms, fs, H5P_DEFAULT, wbuf);
	if (ms >= 0)
		H5Sclose(ms);
	if (fs >= 0)
		H5Sclose(fs);
	return e;
}

herr_t sevir_h5_read_block(hid_t ds, hid_t mem_type, int64_t row, int oy, int ox, int r, int frames, void *buf)
{
	return block_io(ds, mem_type, row, oy, ox, r, frames, buf, NULL);
}

herr_t sevir_h5_write_block(hid_t ds, hid_t mem_type, int64_t row, int oy, int ox, int r, int frames,
                            const void *buf)
{
	return block_io(ds, mem_type, row, oy, ox, r, frames, NULL, buf);
}

void sevir_h5_close(int n, const hid_t *ids)
{
	H5E_BEGIN_TRY
	{
		for (int i = 0; i < n; i++) {
			if (ids[i] < 0)
				continue;
			switch (H5Iget_type(ids[i])) {
			case H5I_FILE:
				H5Fclose(ids[i]);
				break;
			case H5I_DATASET:
				H5Dclose(ids[i]);
				break;
			case H5I_DATASPACE:
				H5Sclose(ids[i]);
				break;
			case H5I_DATATYPE:
				H5Tclose(ids[i]);
				break;
			default: /* not a handle of ours (or closed already) */
				break;
			}
		}
	}
	H5E_END_TRY;
}
