/* Test helper for tests/models/unet.sh and unet_sevir.sh: overwrites one
 * element of a float dataset of an HDF5 file, or gives a dataset another
 * type, to make a malformed data file (e.g. a NaN in a prepared file's
 * `IN`, an `IN` of int16 values).
 *   unet_h5poke FILE DATASET INDEX VALUE    (INDEX: flat element index;
 *                                            VALUE: a number, nan or inf)
 *   unet_h5poke FILE DATASET int16          (the dataset rewritten as int16,
 *                                            its values converted)
 * Exit status 0 when written, 1 otherwise. */
#include <config.h>

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dataset `name` of file f rewritten as int16 (contiguous, same shape). */
static int retype_int16(hid_t f, const char *name)
{
	hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
	if (ds < 0)
		return 1;
	hid_t space = H5Dget_space(ds);
	hssize_t n = H5Sget_simple_extent_npoints(space);
	float *v = n > 0 ? malloc((size_t)n * sizeof *v) : NULL;
	int rc = !v || H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
	H5Dclose(ds);
	if (!rc)
		rc = H5Ldelete(f, name, H5P_DEFAULT) < 0;
	if (!rc) {
		int rank = H5Sget_simple_extent_ndims(space);
		hsize_t dims[8];
		H5Sget_simple_extent_dims(space, dims, NULL);
		hid_t sp = H5Screate_simple(rank, dims, NULL);
		ds = H5Dcreate2(f, name, H5T_STD_I16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		rc = ds < 0 || H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
		if (ds >= 0)
			H5Dclose(ds);
		H5Sclose(sp);
	}
	H5Sclose(space);
	free(v);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[3], "int16") == 0) {
		hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
		int rc = f < 0 || retype_int16(f, argv[2]);
		if (f >= 0 && H5Fclose(f) < 0)
			rc = 1;
		if (rc)
			fprintf(stderr, "unet_h5poke: cannot rewrite %s of %s as int16\n", argv[2], argv[1]);
		return rc;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: unet_h5poke FILE DATASET INDEX VALUE | unet_h5poke FILE DATASET int16\n");
		return 1;
	}
	long long index = atoll(argv[3]);
	float value = strtof(argv[4], NULL);
	hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
	if (f < 0)
		return 1;
	int rc = 1;
	hid_t ds = H5Dopen2(f, argv[2], H5P_DEFAULT);
	if (ds >= 0) {
		hid_t space = H5Dget_space(ds);
		int rank = H5Sget_simple_extent_ndims(space);
		hsize_t dims[8], coord[8];
		if (rank > 0 && rank <= 8 && H5Sget_simple_extent_dims(space, dims, NULL) == rank) {
			long long rest = index;
			for (int i = rank - 1; i >= 0; i--) {
				coord[i] = (hsize_t)(rest % (long long)dims[i]);
				rest /= (long long)dims[i];
			}
			hsize_t one = 1;
			hid_t mem = H5Screate_simple(1, &one, NULL);
			if (rest == 0 && H5Sselect_elements(space, H5S_SELECT_SET, 1, coord) >= 0 &&
			    H5Dwrite(ds, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, &value) >= 0)
				rc = 0;
			H5Sclose(mem);
		}
		H5Sclose(space);
		H5Dclose(ds);
	}
	if (H5Fclose(f) < 0)
		rc = 1;
	if (rc)
		fprintf(stderr, "unet_h5poke: cannot write %s[%s] of %s\n", argv[2], argv[3], argv[1]);
	return rc;
}
