/* Test helper for tests/models/unet_amp.sh: HDF5 checkpoints compared bit
 * for bit, and made old.
 *   ckpt_util cmp A B
 *       every dataset (visited recursively) and every root attribute of A
 *       is in B and the other way round, with the same type, shape and
 *       bytes (datasets are read in their native type and compared with
 *       memcmp; variable-length strings by their text). Prints each
 *       difference (at most 20) and a summary line.
 *   ckpt_util version FILE N
 *       sets the `format_version` attribute of FILE to N; N <= 2 also
 *       deletes the attributes version 2 did not have (`convention`,
 *       `concat`, `bn_eps`: the model must be a starnn-v1 one, what a
 *       version-2 file is), N = 1 those version 1 did not have either
 *       (`precision`, `loss_scaling`, `loss_scale*`): FILE becomes a
 *       checkpoint as written before them.
 *   ckpt_util int FILE NAME
 *       prints the integer root attribute NAME of FILE (e.g. `step`).
 *   ckpt_util attr FILE NAME
 *       prints the root attribute NAME of FILE: an integer, a double (%.17g)
 *       or a string (e.g. `convention`).
 * Exit status: 0 identical / done, 1 different, 2 on an error (message). */
#include <config.h>

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ndiff;

static void differ(const char *fmt, const char *name, const char *what)
{
	if (++ndiff <= 20) {
		printf(fmt, name, what);
		putchar('\n');
	}
}

/* Reads dataset or attribute `obj` (is_attr) of file type `ftype` and
 * space `space` into a fresh buffer, in the native type; *len bytes.
 * Variable-length strings become their concatenated text. */
static char *read_all(hid_t obj, int is_attr, hid_t ftype, hid_t space, size_t *len)
{
	hssize_t n = H5Sget_simple_extent_npoints(space);
	if (n < 0)
		return NULL;
	if (H5Tis_variable_str(ftype) > 0) {
		char **s = calloc((size_t)n ? (size_t)n : 1, sizeof *s);
		hid_t mt = H5Tcopy(ftype);
		herr_t st = is_attr ? H5Aread(obj, mt, s) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
		size_t total = 1;
		for (hssize_t i = 0; st >= 0 && i < n; i++)
			total += (s[i] ? strlen(s[i]) : 0) + 1;
		char *out = st >= 0 ? calloc(total, 1) : NULL;
		for (hssize_t i = 0; out && i < n; i++) {
			strcat(out, s[i] ? s[i] : "");
			strcat(out, "\x1f");
		}
		if (st >= 0)
			H5Dvlen_reclaim(mt, space, H5P_DEFAULT, s);
		H5Tclose(mt);
		free(s);
		*len = out ? strlen(out) : 0;
		return out;
	}
	hid_t mt = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
	size_t sz = H5Tget_size(mt);
	*len = sz * (size_t)n;
	char *buf = calloc(*len ? *len : 1, 1);
	herr_t st = !buf ? -1 : is_attr ? H5Aread(obj, mt, buf) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	H5Tclose(mt);
	if (st < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Compares two opened objects (datasets or attributes) named `name`. */
static int compare(hid_t a, hid_t b, int is_attr, const char *name)
{
	hid_t ta = is_attr ? H5Aget_type(a) : H5Dget_type(a), tb = is_attr ? H5Aget_type(b) : H5Dget_type(b);
	hid_t sa = is_attr ? H5Aget_space(a) : H5Dget_space(a), sb = is_attr ? H5Aget_space(b) : H5Dget_space(b);
	int rc = 0;
	hsize_t da[H5S_MAX_RANK], db[H5S_MAX_RANK];
	int ra = H5Sget_simple_extent_dims(sa, da, NULL), rb = H5Sget_simple_extent_dims(sb, db, NULL);
	if (ta < 0 || tb < 0 || sa < 0 || sb < 0 || ra < 0 || rb < 0) {
		fprintf(stderr, "ckpt_util: %s: cannot read its type or shape\n", name);
		rc = -1;
	} else if (H5Tget_class(ta) != H5Tget_class(tb) || H5Tget_size(ta) != H5Tget_size(tb) ||
	           H5Tis_variable_str(ta) != H5Tis_variable_str(tb)) {
		differ("%s: other %s", name, "type");
	} else if (ra != rb || memcmp(da, db, sizeof *da * (size_t)ra) != 0) {
		differ("%s: other %s", name, "shape");
	} else {
		size_t la, lb;
		char *va = read_all(a, is_attr, ta, sa, &la), *vb = read_all(b, is_attr, tb, sb, &lb);
		if (!va || !vb) {
			fprintf(stderr, "ckpt_util: %s: cannot read it\n", name);
			rc = -1;
		} else if (la != lb || memcmp(va, vb, la) != 0) {
			differ("%s: other %s", name, "values");
		}
		free(va), free(vb);
	}
	H5Tclose(ta), H5Tclose(tb), H5Sclose(sa), H5Sclose(sb);
	return rc;
}

struct walk {
	hid_t other;
	int compare; /* 1: compare with `other`; 0: only check presence */
	int rc, count;
};

static herr_t visit(hid_t root, const char *name, const H5O_info_t *info, void *data)
{
	struct walk *w = data;
	if (info->type != H5O_TYPE_DATASET)
		return 0;
	w->count++;
	if (H5Lexists(w->other, name, H5P_DEFAULT) <= 0 || H5Oexists_by_name(w->other, name, H5P_DEFAULT) <= 0) {
		H5Eclear2(H5E_DEFAULT);
		differ("dataset %s: in one file only%s", name, "");
		return 0;
	}
	if (!w->compare)
		return 0;
	hid_t a = H5Dopen2(root, name, H5P_DEFAULT), b = H5Dopen2(w->other, name, H5P_DEFAULT);
	if (a < 0 || b < 0) {
		fprintf(stderr, "ckpt_util: cannot open dataset %s\n", name);
		w->rc = -1;
	} else if (compare(a, b, 0, name) < 0) {
		w->rc = -1;
	}
	if (a >= 0)
		H5Dclose(a);
	if (b >= 0)
		H5Dclose(b);
	return 0;
}

static herr_t visit_attr(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
	(void)info;
	struct walk *w = data;
	w->count++;
	if (H5Aexists(w->other, name) <= 0) {
		differ("attribute %s: in one file only%s", name, "");
		return 0;
	}
	if (!w->compare)
		return 0;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT), b = H5Aopen(w->other, name, H5P_DEFAULT);
	if (a < 0 || b < 0 || compare(a, b, 1, name) < 0)
		w->rc = -1;
	if (a >= 0)
		H5Aclose(a);
	if (b >= 0)
		H5Aclose(b);
	return 0;
}

static int cmd_cmp(const char *fa, const char *fb)
{
	hid_t a = H5Fopen(fa, H5F_ACC_RDONLY, H5P_DEFAULT), b = H5Fopen(fb, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (a < 0 || b < 0) {
		fprintf(stderr, "ckpt_util: cannot open %s\n", a < 0 ? fa : fb);
		return 2;
	}
	struct walk ab = {b, 1, 0, 0}, ba = {a, 0, 0, 0};
	struct walk aab = {b, 1, 0, 0}, aba = {a, 0, 0, 0};
	if (H5Ovisit(a, H5_INDEX_NAME, H5_ITER_INC, visit, &ab) < 0 ||
	    H5Ovisit(b, H5_INDEX_NAME, H5_ITER_INC, visit, &ba) < 0 ||
	    H5Aiterate2(a, H5_INDEX_NAME, H5_ITER_INC, NULL, visit_attr, &aab) < 0 ||
	    H5Aiterate2(b, H5_INDEX_NAME, H5_ITER_INC, NULL, visit_attr, &aba) < 0 || ab.rc || aab.rc) {
		fprintf(stderr, "ckpt_util: cannot walk %s and %s\n", fa, fb);
		return 2;
	}
	H5Fclose(a), H5Fclose(b);
	printf("%d datasets, %d root attributes: %s (%d differences)\n", ab.count, aab.count,
	       ndiff ? "DIFFERENT" : "identical bit for bit", ndiff);
	return ndiff ? 1 : 0;
}

static int cmd_version(const char *file, int64_t version)
{
	static const char *const drop[] = {"precision", "loss_scaling", "loss_scale", "loss_scale_good_steps",
	                                   "loss_scale_skipped_steps", "loss_scale_applied_steps"};
	hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
	if (f < 0) {
		fprintf(stderr, "ckpt_util: cannot open %s\n", file);
		return 2;
	}
	static const char *const drop2[] = {"convention", "concat", "bn_eps"};
	int rc = 0;
	for (size_t i = 0; version == 1 && i < sizeof drop / sizeof *drop; i++)
		if (H5Aexists(f, drop[i]) > 0 && H5Adelete(f, drop[i]) < 0)
			rc = 2;
	for (size_t i = 0; version <= 2 && i < sizeof drop2 / sizeof *drop2; i++)
		if (H5Aexists(f, drop2[i]) > 0 && H5Adelete(f, drop2[i]) < 0)
			rc = 2;
	hid_t at = H5Aopen(f, "format_version", H5P_DEFAULT);
	if (at < 0 || H5Awrite(at, H5T_NATIVE_INT64, &version) < 0)
		rc = 2;
	if (at >= 0)
		H5Aclose(at);
	if (H5Fclose(f) < 0)
		rc = 2;
	if (rc)
		fprintf(stderr, "ckpt_util: cannot rewrite %s as version %lld\n", file, (long long)version);
	return rc;
}

static int cmd_int(const char *file, const char *name)
{
	hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0) {
		fprintf(stderr, "ckpt_util: cannot open %s\n", file);
		return 2;
	}
	long long v = 0;
	hid_t at = H5Aexists(f, name) > 0 ? H5Aopen(f, name, H5P_DEFAULT) : -1;
	int rc = at >= 0 && H5Aread(at, H5T_NATIVE_LLONG, &v) >= 0 ? 0 : 2;
	if (at >= 0)
		H5Aclose(at);
	H5Fclose(f);
	if (rc)
		fprintf(stderr, "ckpt_util: %s: no integer attribute '%s'\n", file, name);
	else
		printf("%lld\n", v);
	return rc;
}

static int cmd_attr(const char *file, const char *name)
{
	hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0) {
		fprintf(stderr, "ckpt_util: cannot open %s\n", file);
		return 2;
	}
	hid_t at = H5Aexists(f, name) > 0 ? H5Aopen(f, name, H5P_DEFAULT) : -1;
	hid_t t = at >= 0 ? H5Aget_type(at) : -1;
	int rc = 2;
	if (t >= 0 && H5Tget_class(t) == H5T_INTEGER) {
		long long v;
		if (H5Aread(at, H5T_NATIVE_LLONG, &v) >= 0)
			printf("%lld\n", v), rc = 0;
	} else if (t >= 0 && H5Tget_class(t) == H5T_FLOAT) {
		double v;
		if (H5Aread(at, H5T_NATIVE_DOUBLE, &v) >= 0)
			printf("%.17g\n", v), rc = 0;
	} else if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
		size_t len;
		hid_t sp = H5Aget_space(at);
		char *s = sp >= 0 ? read_all(at, 1, t, sp, &len) : NULL;
		size_t k = 0; /* the first string, without read_all's separator */
		while (s && k < len && s[k] && s[k] != '\x1f')
			k++;
		if (s)
			printf("%.*s\n", (int)k, s), rc = 0;
		if (sp >= 0)
			H5Sclose(sp);
		free(s);
	}
	if (t >= 0)
		H5Tclose(t);
	if (at >= 0)
		H5Aclose(at);
	H5Fclose(f);
	if (rc)
		fprintf(stderr, "ckpt_util: %s: no readable attribute '%s'\n", file, name);
	return rc;
}

int main(int argc, char **argv)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (argc == 4 && strcmp(argv[1], "cmp") == 0)
		return cmd_cmp(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "version") == 0)
		return cmd_version(argv[2], strtoll(argv[3], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "int") == 0)
		return cmd_int(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "attr") == 0)
		return cmd_attr(argv[2], argv[3]);
	fprintf(stderr, "usage: ckpt_util cmp A B | ckpt_util version FILE N | ckpt_util int FILE NAME | "
	                "ckpt_util attr FILE NAME\n");
	return 2;
}
