/* HDF5 checkpoints (runtime/train/checkpoint.c): round trip of tensors of
 * several shapes (fp32 bit for bit; an fp16 tensor stored as fp32) and of
 * int64 / double / string attributes; the layout seen through the HDF5
 * API; clear errors (missing file, not HDF5, directory, missing dataset or
 * attribute, other attribute type, shape mismatch, NaN, string too long);
 * atomicity: a failing write leaves no file (missing directory, a file in
 * place of the directory, read-only directory when not root) and leaves
 * an existing checkpoint byte for byte as it was (duplicate path, a path
 * through a dataset, a tensor whose tasks failed); the mixed-precision
 * attributes (ckpt_amp_attrs / ckpt_get_amp): exact round trip of
 * precision, loss scaling, scale and counters, their HDF5 types, the fp32
 * defaults of a file without them, and clear errors for bad values and
 * malformed or incomplete sets; temporaries of writers that are gone (a
 * child killed in the middle of a write, an unlocked file of that name)
 * are removed by the next write with one line on stderr, while a live
 * writer's temporary, other names, a directory and a symbolic link are
 * left alone. */
#include <config.h>

#include <dirent.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/train/atomic.h"
#include "runtime/train/checkpoint.h"
#include "tests/testlib.h"

static char dir[] = "/tmp/starnn-ckpt-XXXXXX";

static char *path_in(const char *name)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ % 4];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

/* Entries of the test directory, "." and ".." excepted. */
static int dir_entries(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static char *slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	char *p = malloc(*len + 1);
	if (fread(p, 1, *len, f) != *len) {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

/* rc must be `code` and the message contain each of the NULL-terminated words. */
static void expect_error(int rc, int code, const char *what, ...)
{
	TEST_ASSERT(rc == code, "%s: returned %d (%s), expected %d (%s)", what, rc, starnn_strerror(rc), code,
	            starnn_strerror(code));
	va_list ap;
	va_start(ap, what);
	const char *w;
	while ((w = va_arg(ap, const char *)))
		TEST_ASSERT(strstr(starnn_last_error(), w) != NULL, "%s: message lacks '%s': %s", what, w,
		            starnn_last_error());
	va_end(ap);
	printf("  %s -> %s\n", what, starnn_last_error());
}

enum { NT = 5 };
static const char *paths[NT] = {"enc0/conv1/weight", "enc0/bn1/running_mean", "dec1/up/weight",
                                "optimizer/enc0/conv1/weight/exp_avg", "head/bias"};
static const int64_t shapes[NT][4] = {{16, 13, 3, 3}, {16}, {32, 16, 2, 2}, {16, 13, 3, 3}, {12}};
static const int ndims[NT] = {4, 1, 4, 4, 1};

static starnn_tensor *tensors[NT], *half;
static float *values[NT];

static void make_tensors(void)
{
	for (int i = 0; i < NT; i++) {
		size_t n = 1;
		for (int d = 0; d < ndims[i]; d++)
			n *= (size_t)shapes[i][d];
		values[i] = test_random(n, -2, 2);
		tensors[i] = test_tensor(paths[i], ndims[i], shapes[i], values[i]);
	}
	TEST_OK(starnn_tensor_new(&half, "half", STARNN_FP16, 3, (int64_t)2, (int64_t)3, (int64_t)4));
	float h[24];
	for (int i = 0; i < 24; i++)
		h[i] = 0.1f * (float)(i - 12);
	TEST_OK(starnn_tensor_write_f32(half, h));
}

static int write_good(const char *file, float scale_attr)
{
	struct ckpt_entry e[NT + 1];
	for (int i = 0; i < NT; i++)
		e[i] = (struct ckpt_entry){paths[i], tensors[i]};
	e[NT] = (struct ckpt_entry){"misc/half", half};
	struct ckpt_attr a[] = {
		{.name = "depth", .type = CKPT_INT, .i = 4},
		{.name = "big", .type = CKPT_INT, .i = ((int64_t)1 << 40) + 3},
		{.name = "negative", .type = CKPT_INT, .i = -7},
		{.name = "lr", .type = CKPT_DOUBLE, .d = 1e-3 * scale_attr},
		{.name = "optimizer", .type = CKPT_STRING, .s = "adam"},
		{.name = "empty", .type = CKPT_STRING, .s = ""},
		{.name = "utf8", .type = CKPT_STRING, .s = "r\xc3\xa9sum\xc3\xa9"},
	};
	return ckpt_write(file, e, NT + 1, a, (int)(sizeof a / sizeof *a));
}

static void test_round_trip(void)
{
	const char *file = path_in("model.h5");
	TEST_OK(write_good(file, 1));
	TEST_ASSERT(access(file, F_OK) == 0, "checkpoint written");
	TEST_ASSERT(dir_entries() == 1, "only the checkpoint in the directory (%d entries)", dir_entries());

	ckpt_file *f;
	TEST_OK(ckpt_open(&f, file));
	for (int i = 0; i < NT; i++) {
		TEST_ASSERT(ckpt_has(f, paths[i]) == 1, "has %s", paths[i]);
		starnn_tensor *t = test_tensor("back", ndims[i], shapes[i], NULL);
		TEST_OK(ckpt_read_tensor(f, paths[i], t));
		float *got = test_read(t);
		size_t n = starnn_tensor_numel(t);
		TEST_ASSERT(memcmp(got, values[i], n * sizeof *got) == 0, "%s read back bit for bit", paths[i]);
		free(got);
		starnn_tensor_destroy(t);
	}
	/* the fp16 tensor, stored as fp32, into an fp32 tensor and an fp16 one */
	starnn_tensor *t = test_tensor("back", 3, (int64_t[]){2, 3, 4}, NULL);
	TEST_OK(ckpt_read_tensor(f, "misc/half", t));
	float *got = test_read(t), *want = test_read(half);
	TEST_ASSERT(memcmp(got, want, 24 * sizeof *got) == 0, "fp16 tensor stored as its fp32 values");
	starnn_tensor_destroy(t);
	starnn_tensor *t16;
	TEST_OK(starnn_tensor_new(&t16, "back16", STARNN_FP16, 3, (int64_t)2, (int64_t)3, (int64_t)4));
	TEST_OK(ckpt_read_tensor(f, "misc/half", t16));
	free(got);
	got = test_read(t16);
	TEST_ASSERT(memcmp(got, want, 24 * sizeof *got) == 0, "into an fp16 tensor");
	free(got), free(want);
	starnn_tensor_destroy(t16);

	TEST_ASSERT(ckpt_has(f, "enc0") == 0, "a group is not a dataset");
	TEST_ASSERT(ckpt_has(f, "missing") == 0, "missing dataset");
	TEST_ASSERT(ckpt_has(f, "enc0/missing/weight") == 0, "missing intermediate group");
	TEST_ASSERT(ckpt_has(f, "") == 0, "empty path");

	int64_t iv;
	double dv;
	char sv[64];
	TEST_OK(ckpt_get_int(f, "depth", &iv));
	TEST_ASSERT(iv == 4, "depth %lld", (long long)iv);
	TEST_OK(ckpt_get_int(f, "big", &iv));
	TEST_ASSERT(iv == ((int64_t)1 << 40) + 3, "big %lld", (long long)iv);
	TEST_OK(ckpt_get_int(f, "negative", &iv));
	TEST_ASSERT(iv == -7, "negative %lld", (long long)iv);
	TEST_OK(ckpt_get_double(f, "lr", &dv));
	TEST_ASSERT(dv == 1e-3, "lr %.17g", dv);
	TEST_OK(ckpt_get_string(f, "optimizer", sv, sizeof sv));
	TEST_ASSERT(strcmp(sv, "adam") == 0, "optimizer '%s'", sv);
	TEST_OK(ckpt_get_string(f, "empty", sv, sizeof sv));
	TEST_ASSERT(strcmp(sv, "") == 0, "empty '%s'", sv);
	TEST_OK(ckpt_get_string(f, "utf8", sv, sizeof sv));
	TEST_ASSERT(strcmp(sv, "r\xc3\xa9sum\xc3\xa9") == 0, "utf8 '%s'", sv);

	/* errors of the lookups */
	expect_error(ckpt_get_int(f, "lr", &iv), STARNN_EINVAL, "int from a double", "'lr'", "floating", NULL);
	expect_error(ckpt_get_double(f, "depth", &dv), STARNN_EINVAL, "double from an int", "'depth'", "integer",
	             NULL);
	expect_error(ckpt_get_string(f, "depth", sv, sizeof sv), STARNN_EINVAL, "string from an int", "'depth'",
	             NULL);
	expect_error(ckpt_get_int(f, "optimizer", &iv), STARNN_EINVAL, "int from a string", "string", NULL);
	expect_error(ckpt_get_int(f, "width", &iv), STARNN_EINVAL, "missing attribute", "no attribute 'width'", NULL);
	expect_error(ckpt_get_string(f, "optimizer", sv, 4), STARNN_EINVAL, "string too long", "'optimizer'", NULL);
	starnn_tensor *w = test_tensor("enc0.conv1.weight", 4, (int64_t[]){16, 12, 3, 3}, NULL);
	expect_error(ckpt_read_tensor(f, "enc0/conv1/weight", w), STARNN_EINVAL, "shape mismatch",
	             "enc0/conv1/weight", "[16,13,3,3]", "[16,12,3,3]", NULL);
	starnn_tensor_destroy(w);
	w = test_tensor("flat", 2, (int64_t[]){16, 117}, NULL);
	expect_error(ckpt_read_tensor(f, "enc0/conv1/weight", w), STARNN_EINVAL, "rank mismatch", "[16,13,3,3]",
	             "[16,117]", NULL);
	expect_error(ckpt_read_tensor(f, "enc9/conv1/weight", w), STARNN_EINVAL, "missing dataset",
	             "no dataset 'enc9/conv1/weight'", file, NULL);
	expect_error(ckpt_read_tensor(f, "enc0", w), STARNN_EINVAL, "group read as a dataset", "'enc0'", NULL);
	starnn_tensor_destroy(w);
	ckpt_close(f);

	/* The layout through the HDF5 API: fp32 datasets with the tensor
	 * shapes in their groups, typed root attributes. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
	TEST_ASSERT(fid >= 0, "H5Fopen");
	hid_t g = H5Gopen2(fid, "optimizer/enc0/conv1/weight", H5P_DEFAULT);
	TEST_ASSERT(g >= 0, "optimizer state in nested groups");
	hid_t ds = H5Dopen2(g, "exp_avg", H5P_DEFAULT);
	hid_t ty = H5Dget_type(ds), sp = H5Dget_space(ds);
	hsize_t dims[4] = {0};
	TEST_ASSERT(H5Sget_simple_extent_ndims(sp) == 4, "rank 4");
	H5Sget_simple_extent_dims(sp, dims, NULL);
	TEST_ASSERT(dims[0] == 16 && dims[1] == 13 && dims[2] == 3 && dims[3] == 3, "dims %llu %llu %llu %llu",
	            (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2],
	            (unsigned long long)dims[3]);
	TEST_ASSERT(H5Tequal(ty, H5T_IEEE_F32LE) > 0, "fp32 little-endian");
	H5Tclose(ty), H5Sclose(sp), H5Dclose(ds), H5Gclose(g);
	hid_t at = H5Aopen(fid, "big", H5P_DEFAULT);
	ty = H5Aget_type(at);
	TEST_ASSERT(H5Tget_class(ty) == H5T_INTEGER && H5Tget_size(ty) == 8, "int64 attribute");
	H5Tclose(ty), H5Aclose(at);
	at = H5Aopen(fid, "lr", H5P_DEFAULT);
	ty = H5Aget_type(at);
	TEST_ASSERT(H5Tget_class(ty) == H5T_FLOAT && H5Tget_size(ty) == 8, "double attribute");
	H5Tclose(ty), H5Aclose(at);
	H5Fclose(fid);

	/* A fixed-length string attribute (as other writers make) reads too. */
	fid = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, 5);
	sp = H5Screate(H5S_SCALAR);
	at = H5Acreate2(fid, "fixed", st, sp, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(at, st, "fixed");
	H5Aclose(at), H5Sclose(sp), H5Tclose(st), H5Fclose(fid);
	TEST_OK(ckpt_open(&f, file));
	TEST_OK(ckpt_get_string(f, "fixed", sv, sizeof sv));
	TEST_ASSERT(strcmp(sv, "fixed") == 0, "fixed-length string '%s'", sv);
	ckpt_close(f);

	/* A second good write replaces the file. */
	TEST_OK(write_good(file, 2));
	TEST_OK(ckpt_open(&f, file));
	TEST_OK(ckpt_get_double(f, "lr", &dv));
	TEST_ASSERT(dv == 2e-3, "replaced: lr %.17g", dv);
	TEST_ASSERT(!ckpt_has(f, "missing"), "still no 'missing'");
	ckpt_close(f);
	TEST_ASSERT(dir_entries() == 1, "one file after the rewrite");
	unlink(file);
}

/* ckpt_amp round trips: written beside other attributes, read back equal. */
static void amp_write(const char *file, const struct ckpt_amp *amp, const struct ckpt_attr *extra, int nextra)
{
	struct ckpt_attr a[16] = {{.name = "depth", .type = CKPT_INT, .i = 2}};
	int n = 1, namp = -1;
	TEST_OK(ckpt_amp_attrs(amp, a + n, &namp));
	TEST_ASSERT(namp == (amp->loss_scaling ? 6 : 2), "%d attributes for loss scaling %d", namp, amp->loss_scaling);
	n += namp;
	for (int i = 0; i < nextra; i++)
		a[n++] = extra[i];
	struct ckpt_entry e = {paths[4], tensors[4]};
	TEST_OK(ckpt_write(file, &e, 1, a, n));
}

static void test_amp(void)
{
	const char *file = path_in("amp.h5");
	ckpt_file *f;
	struct ckpt_amp got;

	/* names */
	TEST_ASSERT(ckpt_precision_parse("fp32") == STARNN_FP32 && ckpt_precision_parse("amp-fp16") == STARNN_FP16 &&
	                ckpt_precision_parse("amp-bf16") == STARNN_BF16,
	            "precision names parse");
	TEST_ASSERT(ckpt_precision_parse("fp16") == -1 && ckpt_precision_parse(NULL) == -1, "unknown names refused");
	TEST_ASSERT(strcmp(ckpt_precision_name(STARNN_BF16), "amp-bf16") == 0 && !ckpt_precision_name((starnn_dtype)9),
	            "precision names");

	/* round trips, the scale exactly (fp32 values stored as doubles) */
	const struct ckpt_amp cases[] = {
		{.compute = STARNN_FP32, .loss_scaling = CKPT_SCALING_NONE},
		{.compute = STARNN_FP16, .loss_scaling = CKPT_SCALING_DYNAMIC, .scale = 32768, .good_steps = 1999,
		 .skipped_steps = 3, .applied_steps = 16777216},
		{.compute = STARNN_BF16, .loss_scaling = CKPT_SCALING_STATIC, .scale = 1024, .good_steps = 0,
		 .skipped_steps = 0, .applied_steps = 7},
		{.compute = STARNN_FP16, .loss_scaling = CKPT_SCALING_DYNAMIC, .scale = 0x1.8p-3, .good_steps = 5,
		 .skipped_steps = 60, .applied_steps = 0},
		{.compute = STARNN_FP32, .loss_scaling = CKPT_SCALING_DYNAMIC, .scale = 16777216, .good_steps = 1,
		 .skipped_steps = 2, .applied_steps = 3},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		amp_write(file, &cases[i], NULL, 0);
		memset(&got, 0x55, sizeof got);
		TEST_OK(ckpt_open(&f, file));
		TEST_OK(ckpt_get_amp(f, &got));
		const struct ckpt_amp *w = &cases[i];
		TEST_ASSERT(got.compute == w->compute && got.loss_scaling == w->loss_scaling, "case %zu: %d %d, want %d %d",
		            i, (int)got.compute, got.loss_scaling, (int)w->compute, w->loss_scaling);
		if (w->loss_scaling)
			TEST_ASSERT(got.scale == w->scale && got.good_steps == w->good_steps &&
			                got.skipped_steps == w->skipped_steps && got.applied_steps == w->applied_steps,
			            "case %zu: scale %.17g, %lld %lld %lld", i, got.scale, (long long)got.good_steps,
			            (long long)got.skipped_steps, (long long)got.applied_steps);
		else
			TEST_ASSERT(got.scale == 0 && got.good_steps == 0 && got.skipped_steps == 0 && got.applied_steps == 0,
			            "case %zu: no loss-scale state without scaling", i);
		/* the attributes as h5py sees them: strings, a double, int64s */
		char sv[32];
		int64_t iv;
		double dv;
		TEST_OK(ckpt_get_string(f, "precision", sv, sizeof sv));
		TEST_ASSERT(strcmp(sv, ckpt_precision_name(w->compute)) == 0, "precision '%s'", sv);
		TEST_OK(ckpt_get_string(f, "loss_scaling", sv, sizeof sv));
		TEST_ASSERT(strcmp(sv, w->loss_scaling == CKPT_SCALING_NONE      ? "none"
		                       : w->loss_scaling == CKPT_SCALING_DYNAMIC ? "dynamic"
		                                                                 : "static") == 0,
		            "loss_scaling '%s'", sv);
		if (w->loss_scaling) {
			TEST_OK(ckpt_get_double(f, "loss_scale", &dv));
			TEST_OK(ckpt_get_int(f, "loss_scale_good_steps", &iv));
			TEST_ASSERT(iv == w->good_steps, "good steps %lld", (long long)iv);
		} else {
			expect_error(ckpt_get_double(f, "loss_scale", &dv), STARNN_EINVAL, "no loss_scale without scaling",
			             "no attribute 'loss_scale'", NULL);
		}
		ckpt_close(f);
	}
	printf("  %zu mixed-precision states round trip\n", sizeof cases / sizeof *cases);

	/* a file without them (older format): fp32, no loss scaling */
	TEST_OK(write_good(file, 1));
	TEST_OK(ckpt_open(&f, file));
	memset(&got, 0x55, sizeof got);
	TEST_OK(ckpt_get_amp(f, &got));
	TEST_ASSERT(got.compute == STARNN_FP32 && got.loss_scaling == CKPT_SCALING_NONE, "older file: fp32, none");
	ckpt_close(f);

	/* values that cannot be written */
	struct ckpt_attr a[CKPT_AMP_MAX_ATTRS];
	int n;
	struct ckpt_amp bad = cases[1];
	bad.compute = (starnn_dtype)7;
	expect_error(ckpt_amp_attrs(&bad, a, &n), STARNN_EINVAL, "unknown precision", "precision", NULL);
	bad = cases[1], bad.loss_scaling = 3;
	expect_error(ckpt_amp_attrs(&bad, a, &n), STARNN_EINVAL, "unknown scaling", "loss scaling", NULL);
	const double bad_scales[] = {0, -2, NAN, INFINITY};
	for (size_t i = 0; i < sizeof bad_scales / sizeof *bad_scales; i++) {
		bad = cases[2], bad.scale = bad_scales[i];
		expect_error(ckpt_amp_attrs(&bad, a, &n), STARNN_EINVAL, "bad scale", "'loss_scale'", NULL);
	}
	bad = cases[1], bad.skipped_steps = -1;
	expect_error(ckpt_amp_attrs(&bad, a, &n), STARNN_EINVAL, "negative counter", "'loss_scale_skipped_steps'", NULL);
	TEST_ASSERT(n == 0, "no attributes on failure");
	bad = cases[0], bad.scale = NAN; /* ignored without scaling */
	TEST_OK(ckpt_amp_attrs(&bad, a, &n));

	/* malformed files: the message names the attribute */
	struct {
		const char *what, *word;
		struct ckpt_attr at[6];
		int n;
	} files[] = {
		{"unknown precision", "'precision'", {{.name = "precision", .type = CKPT_STRING, .s = "fp8"},
		                                      {.name = "loss_scaling", .type = CKPT_STRING, .s = "none"}}, 2},
		{"precision not a string", "'precision'", {{.name = "precision", .type = CKPT_INT, .i = 1},
		                                           {.name = "loss_scaling", .type = CKPT_STRING, .s = "none"}}, 2},
		{"no loss_scaling", "'loss_scaling'", {{.name = "precision", .type = CKPT_STRING, .s = "amp-fp16"}}, 1},
		{"unknown loss_scaling", "'loss_scaling'", {{.name = "precision", .type = CKPT_STRING, .s = "amp-fp16"},
		                                            {.name = "loss_scaling", .type = CKPT_STRING, .s = "auto"}}, 2},
		{"incomplete state", "'loss_scale_applied_steps'",
		 {{.name = "precision", .type = CKPT_STRING, .s = "amp-fp16"},
		  {.name = "loss_scaling", .type = CKPT_STRING, .s = "dynamic"},
		  {.name = "loss_scale", .type = CKPT_DOUBLE, .d = 65536},
		  {.name = "loss_scale_good_steps", .type = CKPT_INT, .i = 1},
		  {.name = "loss_scale_skipped_steps", .type = CKPT_INT, .i = 0}}, 5},
		{"scale not a number", "'loss_scale'",
		 {{.name = "precision", .type = CKPT_STRING, .s = "amp-bf16"},
		  {.name = "loss_scaling", .type = CKPT_STRING, .s = "static"},
		  {.name = "loss_scale", .type = CKPT_STRING, .s = "1024"},
		  {.name = "loss_scale_good_steps", .type = CKPT_INT, .i = 1},
		  {.name = "loss_scale_skipped_steps", .type = CKPT_INT, .i = 0},
		  {.name = "loss_scale_applied_steps", .type = CKPT_INT, .i = 0}}, 6},
		{"negative scale", "'loss_scale'",
		 {{.name = "precision", .type = CKPT_STRING, .s = "amp-fp16"},
		  {.name = "loss_scaling", .type = CKPT_STRING, .s = "dynamic"},
		  {.name = "loss_scale", .type = CKPT_DOUBLE, .d = -1},
		  {.name = "loss_scale_good_steps", .type = CKPT_INT, .i = 1},
		  {.name = "loss_scale_skipped_steps", .type = CKPT_INT, .i = 0},
		  {.name = "loss_scale_applied_steps", .type = CKPT_INT, .i = 0}}, 6},
		{"negative counter", "'loss_scale_good_steps'",
		 {{.name = "precision", .type = CKPT_STRING, .s = "amp-fp16"},
		  {.name = "loss_scaling", .type = CKPT_STRING, .s = "dynamic"},
		  {.name = "loss_scale", .type = CKPT_DOUBLE, .d = 2},
		  {.name = "loss_scale_good_steps", .type = CKPT_INT, .i = -4},
		  {.name = "loss_scale_skipped_steps", .type = CKPT_INT, .i = 0},
		  {.name = "loss_scale_applied_steps", .type = CKPT_INT, .i = 0}}, 6},
		{"state without precision", "'loss_scale'", {{.name = "loss_scale", .type = CKPT_DOUBLE, .d = 2}}, 1},
	};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		struct ckpt_entry e = {paths[4], tensors[4]};
		TEST_OK(ckpt_write(file, &e, 1, files[i].at, files[i].n));
		TEST_OK(ckpt_open(&f, file));
		expect_error(ckpt_get_amp(f, &got), STARNN_EINVAL, files[i].what, files[i].word, file, NULL);
		ckpt_close(f);
	}
	unlink(file);
}

static void test_open_errors(void)
{
	ckpt_file *f = (ckpt_file *)1;
	const char *missing = path_in("missing.h5");
	expect_error(ckpt_open(&f, missing), STARNN_EIO, "missing file", missing, "No such file", NULL);
	TEST_ASSERT(f == NULL, "no handle on failure");

	const char *text = path_in("notes.txt");
	FILE *t = fopen(text, "w");
	fputs("not an HDF5 file\n", t);
	fclose(t);
	expect_error(ckpt_open(&f, text), STARNN_EIO, "not HDF5", text, "not an HDF5 file", NULL);
	const char *empty = path_in("empty.h5");
	fclose(fopen(empty, "w"));
	expect_error(ckpt_open(&f, empty), STARNN_EIO, "empty file", "not an HDF5 file", NULL);
	expect_error(ckpt_open(&f, dir), STARNN_EIO, "directory", "directory", NULL);
	unlink(text);
	unlink(empty);
}

static void test_atomicity(void)
{
	struct ckpt_entry e[2] = {{paths[0], tensors[0]}, {paths[1], tensors[1]}};

	/* no such directory: nothing created */
	const char *nodir = path_in("nope/model.h5");
	expect_error(ckpt_write(nodir, e, 2, NULL, 0), STARNN_EIO, "missing directory", nodir, NULL);
	TEST_ASSERT(access(path_in("nope"), F_OK) != 0 && dir_entries() == 0, "nothing created");
	/* a file where the directory should be */
	const char *plain = path_in("plain");
	fclose(fopen(plain, "w"));
	expect_error(ckpt_write(path_in("plain/model.h5"), e, 2, NULL, 0), STARNN_EIO, "file as directory",
	             "Not a directory", NULL);
	unlink(plain);
	if (geteuid() != 0) {
		char ro[600];
		snprintf(ro, sizeof ro, "%s/ro", dir);
		mkdir(ro, 0555);
		char file[700];
		snprintf(file, sizeof file, "%s/model.h5", ro);
		expect_error(ckpt_write(file, e, 2, NULL, 0), STARNN_EIO, "read-only directory", "Permission denied",
		             NULL);
		chmod(ro, 0755);
		DIR *d = opendir(ro);
		int n = 0;
		struct dirent *de;
		while (d && (de = readdir(d)))
			n += de->d_name[0] != '.';
		closedir(d);
		TEST_ASSERT(n == 0, "nothing left in the read-only directory");
		rmdir(ro);
	} else {
		printf("  (root: the read-only directory case is not testable)\n");
	}
	TEST_ASSERT(dir_entries() == 0, "no file left by the failed writes");

	/* An existing checkpoint survives failing rewrites unchanged, with no
	 * temporary file left beside it. */
	const char *file = path_in("keep.h5");
	TEST_OK(write_good(file, 1));
	size_t len0, len1;
	char *before = slurp(file, &len0);

	struct ckpt_entry dup[3] = {{paths[0], tensors[0]}, {paths[1], tensors[1]}, {paths[0], tensors[3]}};
	expect_error(ckpt_write(file, dup, 3, NULL, 0), STARNN_EINVAL, "duplicate path", "given twice", paths[0],
	             NULL);
	struct ckpt_entry through[2] = {{"head/bias", tensors[4]}, {"head/bias/extra", tensors[1]}};
	int rc = ckpt_write(file, through, 2, NULL, 0);
	TEST_ASSERT(rc < 0, "a path through a dataset fails");
	printf("  path through a dataset -> %s\n", starnn_last_error());
	struct ckpt_attr twice[2] = {{.name = "x", .type = CKPT_INT, .i = 1}, {.name = "x", .type = CKPT_INT, .i = 2}};
	expect_error(ckpt_write(file, e, 2, twice, 2), STARNN_EINVAL, "duplicate attribute", "'x'", NULL);
	struct ckpt_entry bad[1] = {{"/abs/path", tensors[1]}};
	expect_error(ckpt_write(file, bad, 1, NULL, 0), STARNN_EINVAL, "absolute path", "/abs/path", NULL);
	/* a tensor whose producing tasks failed: the error surfaces at its read */
	starnn_defer_error(STARNN_ENUM, "simulated task failure");
	expect_error(ckpt_write(file, e, 2, NULL, 0), STARNN_ENUM, "tensor read error", "simulated task failure",
	             paths[0], NULL);

	char *after = slurp(file, &len1);
	TEST_ASSERT(before && after && len0 == len1 && memcmp(before, after, len0) == 0,
	            "the good checkpoint is byte for byte unchanged");
	TEST_ASSERT(dir_entries() == 1, "no temporary file left (%d entries)", dir_entries());
	free(before), free(after);
	unlink(file);
}

static int exists(const char *name)
{
	struct stat st;
	return lstat(path_in(name), &st) == 0;
}

static void touch(const char *name)
{
	FILE *f = fopen(path_in(name), "w");
	TEST_ASSERT(f != NULL, "create %s", name);
	if (f) {
		fputs("partial\n", f);
		fclose(f);
	}
}

/* Runs ckpt_write(file, ...) with stderr going to a file; returns what it
 * printed there (static). */
static const char *write_capturing_stderr(const char *file, const struct ckpt_entry *e, int n)
{
	static char text[2048];
	char cap[600];
	snprintf(cap, sizeof cap, "%s", path_in("stderr.txt"));
	fflush(stderr);
	int saved = dup(STDERR_FILENO), fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	TEST_ASSERT(saved >= 0 && fd >= 0, "redirect stderr");
	dup2(fd, STDERR_FILENO);
	close(fd);
	TEST_OK(ckpt_write(file, e, n, NULL, 0));
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	size_t len = 0;
	char *got = slurp(cap, &len);
	snprintf(text, sizeof text, "%.*s", got ? (int)len : 0, got ? got : "");
	free(got);
	unlink(cap);
	return text;
}

static void test_stale(void)
{
	char file[600]; /* not path_in's: its buffers are reused */
	snprintf(file, sizeof file, "%s", path_in("st.h5"));
	struct ckpt_entry e[2] = {{paths[0], tensors[0]}, {paths[1], tensors[1]}};

	/* A live writer (first: a writer's begin removes what is stale then). */
	struct ckpt_atomic live;
	TEST_OK(ckpt_atomic_begin(&live, file));
	/* A writer killed in the middle of its write. */
	pid_t pid = fork();
	if (pid == 0) {
		struct ckpt_atomic a;
		if (ckpt_atomic_begin(&a, file) == 0 && write(a.fd, "half", 4) == 4)
			raise(SIGKILL);
		_exit(1);
	}
	int ws = 0;
	TEST_ASSERT(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL,
	            "a child began a write and was killed");
	int killed_left = dir_entries();
	TEST_ASSERT(killed_left == 2, "the killed writer left its temporary (%d entries)", killed_left);
	/* An unlocked file of the pattern (a writer gone), and things that are
	 * not temporaries of st.h5. */
	touch("st.h5.tmp.Zz9abc");
	static const char *const others[] = {"st.h5.tmp.abc", "st.h5.tmp.abcdefg", "st.h5.tmp.ab-def", "other.h5.tmp.abcdef",
	                                     "st.h5.tmpXabcdef"};
	for (size_t i = 0; i < sizeof others / sizeof *others; i++)
		touch(others[i]);
	mkdir(path_in("st.h5.tmp.dirdir"), 0755);
	touch("target");
	TEST_ASSERT(symlink("target", path_in("st.h5.tmp.linkit")) == 0, "symlink");
	int before = dir_entries();

	const char *err = write_capturing_stderr(file, e, 2);
	int lines = 0;
	for (const char *c = err; *c; c++)
		lines += *c == '\n';
	TEST_ASSERT(lines == 1 && strstr(err, "removed 2 stale temporary files") && strstr(err, file),
	            "one line on stderr names the file and the 2 removed: '%s'", err);
	printf("  stale temporaries -> %s", err);
	TEST_ASSERT(!exists("st.h5.tmp.Zz9abc"), "the unlocked temporary is removed");
	TEST_ASSERT(exists(strrchr(live.tmp, '/') + 1), "the live writer's temporary is left alone");
	for (size_t i = 0; i < sizeof others / sizeof *others; i++)
		TEST_ASSERT(exists(others[i]), "%s is left alone", others[i]);
	TEST_ASSERT(exists("st.h5.tmp.dirdir") && exists("st.h5.tmp.linkit") && exists("target"),
	            "a directory and a symbolic link of the pattern are left alone");
	/* removed: the killed writer's and Zz9abc; added: st.h5 */
	TEST_ASSERT(dir_entries() == before - 2 + 1, "%d entries, expected %d", dir_entries(), before - 1);
	ckpt_file *f;
	TEST_OK(ckpt_open(&f, file));
	ckpt_close(f);

	/* Nothing stale: nothing said. The live writer then gives up. */
	err = write_capturing_stderr(file, e, 2);
	TEST_ASSERT(err[0] == '\0', "no line when nothing is stale: '%s'", err);
	ckpt_atomic_abort(&live);
	for (size_t i = 0; i < sizeof others / sizeof *others; i++)
		unlink(path_in(others[i]));
	rmdir(path_in("st.h5.tmp.dirdir"));
	unlink(path_in("st.h5.tmp.linkit"));
	unlink(path_in("target"));
	unlink(file);
	TEST_ASSERT(dir_entries() == 0, "nothing left (%d entries)", dir_entries());
}

static void test_nan(void)
{
	const char *file = path_in("nan.h5");
	float v[4] = {1, NAN, 3, 4};
	starnn_tensor *t = test_tensor("w", 1, (int64_t[]){4}, v);
	struct ckpt_entry e = {"w", t};
	TEST_OK(ckpt_write(file, &e, 1, NULL, 0));
	ckpt_file *f;
	TEST_OK(ckpt_open(&f, file));
	expect_error(ckpt_read_tensor(f, "w", t), STARNN_ENUM, "NaN in a dataset", "'w'", "nan", NULL);
	ckpt_close(f);
	starnn_tensor_destroy(t);
	/* zero entries and attributes: a valid empty checkpoint */
	TEST_OK(ckpt_write(file, NULL, 0, NULL, 0));
	TEST_OK(ckpt_open(&f, file));
	TEST_ASSERT(!ckpt_has(f, "w"), "rewritten empty");
	ckpt_close(f);
	unlink(file);
}

int main(void)
{
	test_init();
	test_seed(3);
	TEST_ASSERT(mkdtemp(dir) != NULL, "mkdtemp");
	make_tensors();
	test_round_trip();
	test_amp();
	test_open_errors();
	test_atomicity();
	test_stale();
	test_nan();
	for (int i = 0; i < NT; i++) {
		starnn_tensor_destroy(tensors[i]);
		free(values[i]);
	}
	starnn_tensor_destroy(half);
	TEST_ASSERT(dir_entries() == 0, "test directory empty at the end");
	rmdir(dir);
	return test_finish();
}
