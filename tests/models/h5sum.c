/* Test helper for tests/models/unet_parity.sh: the count, sum and sum of
 * squares (float64, in storage order) of every float32 dataset of an HDF5
 * file, visited recursively, or of the named datasets only:
 *   h5sum FILE [DATASET...]    prints "<count> <sum> <sum of squares>" (%.17g)
 *   h5sum --range FILE [DATASET...]   prints "<min> <max>" (%.9g) instead
 *                              (tests/models/unet_sevir.sh: a forecast's range)
 * tools/ref/unet-train.py records the same figures for the files it was run
 * on, so that the test can tell generated inputs that changed (a new
 * generator or initialisation) from numerics that changed.
 * Exit status 0 on success, 1 otherwise (with a message). */
#include <config.h>

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct acc {
	long long n;
	double s, q;
	int rc;
	float min, max;
};

static int add_dataset(hid_t ds, const char *name, struct acc *a)
{
	hid_t type = H5Dget_type(ds);
	int is_f32 = type >= 0 && H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4;
	if (type >= 0)
		H5Tclose(type);
	if (!is_f32)
		return 0;
	hid_t space = H5Dget_space(ds);
	hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
	if (space >= 0)
		H5Sclose(space);
	if (n < 0) {
		fprintf(stderr, "h5sum: %s: cannot read its shape\n", name);
		return -1;
	}
	float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
	if (!v) {
		fprintf(stderr, "h5sum: %s: out of memory\n", name);
		return -1;
	}
	if (n && H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
		fprintf(stderr, "h5sum: %s: cannot read it\n", name);
		free(v);
		return -1;
	}
	for (hssize_t i = 0; i < n; i++) {
		a->s += v[i];
		a->q += (double)v[i] * v[i];
		if (a->n + i == 0 || v[i] < a->min)
			a->min = v[i];
		if (a->n + i == 0 || v[i] > a->max)
			a->max = v[i];
	}
	a->n += n;
	free(v);
	return 0;
}

static herr_t visit(hid_t obj, const char *name, const H5O_info_t *info, void *data)
{
	struct acc *a = data;
	if (info->type != H5O_TYPE_DATASET)
		return 0;
	hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT);
	if (ds < 0 || add_dataset(ds, name, a) < 0) {
		a->rc = 1;
		if (ds >= 0)
			H5Dclose(ds);
		return -1;
	}
	H5Dclose(ds);
	return 0;
}

int main(int argc, char **argv)
{
	int range = argc > 1 && strcmp(argv[1], "--range") == 0;
	argc -= range, argv += range;
	if (argc < 2) {
		fprintf(stderr, "usage: h5sum [--range] FILE [DATASET...]\n");
		return 1;
	}
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0) {
		fprintf(stderr, "h5sum: cannot open %s as HDF5\n", argv[1]);
		return 1;
	}
	struct acc a = {0, 0, 0, 0, 0, 0};
	if (argc == 2) {
		if (H5Ovisit(f, H5_INDEX_NAME, H5_ITER_INC, visit, &a) < 0)
			a.rc = 1;
	}
	for (int i = 2; i < argc && !a.rc; i++) {
		hid_t ds = H5Dopen2(f, argv[i], H5P_DEFAULT);
		if (ds < 0) {
			fprintf(stderr, "h5sum: %s has no dataset %s\n", argv[1], argv[i]);
			a.rc = 1;
		} else {
			if (add_dataset(ds, argv[i], &a) < 0)
				a.rc = 1;
			H5Dclose(ds);
		}
	}
	H5Fclose(f);
	if (a.rc)
		return 1;
	if (range)
		printf("%.9g %.9g\n", (double)a.min, (double)a.max);
	else
		printf("%lld %.17g %.17g\n", a.n, a.s, a.q);
	return 0;
}
