/* tests/fuzz/h5shrink IN.h5 OUT.h5 [DATASET...]: copies the root attributes
 * and the datasets of IN (all, or those named) into OUT, in the newest HDF5
 * file format (compact object headers) and contiguous storage (no chunk
 * index), which makes small fuzz seeds of a few KB from the files of
 * tools/sevir-synth and models/unet (README, "Fuzzing"). Not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

static hid_t out_file, lcpl;

static int copy_dataset(hid_t in, const char *name)
{
	hid_t ds = H5Dopen2(in, name, H5P_DEFAULT);
	if (ds < 0)
		return -1;
	hid_t type = H5Dget_type(ds), space = H5Dget_space(ds);
	size_t n = H5Tget_size(type) * (size_t)H5Sget_simple_extent_npoints(space);
	void *buf = malloc(n ? n : 1);
	int rc = buf && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0 ? 0 : -1;
	hid_t out = rc ? -1 : H5Dcreate2(out_file, name, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	if (out < 0 || H5Dwrite(out, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
		rc = -1;
	if (rc == 0 && H5Tis_variable_str(type) > 0)
		H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
	if (out >= 0)
		H5Dclose(out);
	free(buf);
	H5Tclose(type);
	H5Sclose(space);
	H5Dclose(ds);
	return rc;
}

static herr_t visit(hid_t in, const char *name, const H5O_info_t *info, void *data)
{
	(void)data;
	return info->type == H5O_TYPE_DATASET && copy_dataset(in, name) < 0 ? -1 : 0;
}

static herr_t copy_attr(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
	(void)info;
	(void)data;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
	hid_t type = H5Aget_type(a), space = H5Aget_space(a);
	size_t n = H5Tget_size(type) * (size_t)H5Sget_simple_extent_npoints(space);
	void *buf = malloc(n ? n : 1);
	herr_t e = buf && H5Aread(a, type, buf) >= 0 ? 0 : -1;
	hid_t b = e < 0 ? -1 : H5Acreate2(out_file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
	if (b < 0 || H5Awrite(b, type, buf) < 0)
		e = -1;
	if (b >= 0)
		H5Aclose(b);
	if (e == 0 && H5Tis_variable_str(type) > 0)
		H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
	free(buf);
	H5Tclose(type);
	H5Sclose(space);
	H5Aclose(a);
	return e;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: h5shrink IN.h5 OUT.h5 [DATASET...]\n");
		return 2;
	}
	hid_t in = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	out_file = in < 0 ? -1 : H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	int ok = out_file >= 0 && H5Aiterate2(in, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_attr, NULL) >= 0;
	if (ok && argc == 3)
		ok = H5Ovisit(in, H5_INDEX_NAME, H5_ITER_INC, visit, NULL) >= 0;
	for (int i = 3; ok && i < argc; i++)
		ok = copy_dataset(in, argv[i]) == 0;
	H5Pclose(lcpl);
	if (out_file >= 0)
		H5Fclose(out_file);
	if (in >= 0)
		H5Fclose(in);
	if (!ok) {
		fprintf(stderr, "h5shrink: cannot copy %s to %s\n", argv[1], argv[2]);
		return 1;
	}
	return 0;
}
