/* Forecast outputs (models/sevir/output.c): the HDF5 `OUT` file read back
 * with the HDF5 API (shape N x H x W x lead, fp32, one chunk per sample,
 * raw values = denormalised NCHW input, to 1e-6 relative); abort, missing
 * samples, too many samples, NaN and a missing directory leave no file and
 * an existing file untouched; the VIL colour map at and just below every
 * boundary; PNG files (valid, read back with libpng; panels of the right
 * size holding the right colours, integer boundary values included; NaN
 * black), a nested directory created, no temporary file left.
 * STARNN_TEST_KEEP=1 (or =<size>) keeps the directory, with a demo picture. */
#include <config.h>

#include <dirent.h>
#include <hdf5.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/sevir/output.h"
#include "models/sevir/sevir.h"
#include "tests/testlib.h"

static char dir[] = "/tmp/starnn-output-XXXXXX";

static char *path_in(const char *name)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ % 4];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

static int entries(const char *d)
{
	DIR *dd = opendir(d);
	int n = 0;
	struct dirent *e;
	while (dd && (e = readdir(dd)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (dd)
		closedir(dd);
	return n;
}

static void expect_error(int rc, int code, const char *what, const char *word)
{
	TEST_ASSERT(rc == code, "%s: returned %d, expected %d", what, rc, code);
	TEST_ASSERT(!word || strstr(starnn_last_error(), word), "%s: message lacks '%s': %s", what, word,
	            starnn_last_error());
	printf("  %s -> %s\n", what, starnn_last_error());
}

/* ------------------------------------------------------------ HDF5 */

static void test_forecast_file(void)
{
	enum { N = 3, L = 4, H = 5, W = 7 };
	const size_t per = (size_t)L * H * W;
	float *pred = test_random(N * per, -0.7f, 4.6f);
	const char *file = path_in("forecast.h5");
	forecast_file *f;
	TEST_OK(forecast_create(&f, file, N, L, H, W));
	TEST_ASSERT(access(file, F_OK) != 0, "not visible before commit");
	TEST_OK(forecast_append(f, pred, 2));
	TEST_OK(forecast_append(f, pred + 2 * per, 1));
	TEST_OK(forecast_commit(f));
	TEST_ASSERT(entries(dir) == 1, "only the forecast file (%d entries)", entries(dir));

	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
	TEST_ASSERT(fid >= 0, "H5Fopen");
	hid_t ds = H5Dopen2(fid, "OUT", H5P_DEFAULT);
	TEST_ASSERT(ds >= 0, "OUT dataset");
	hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds), pl = H5Dget_create_plist(ds);
	hsize_t dims[4] = {0}, chunk[4] = {0};
	TEST_ASSERT(H5Sget_simple_extent_ndims(sp) == 4, "rank 4");
	H5Sget_simple_extent_dims(sp, dims, NULL);
	TEST_ASSERT(dims[0] == N && dims[1] == H && dims[2] == W && dims[3] == L, "N x H x W x lead");
	TEST_ASSERT(H5Tequal(ty, H5T_IEEE_F32LE) > 0, "float32");
	TEST_ASSERT(H5Pget_layout(pl) == H5D_CHUNKED && H5Pget_chunk(pl, 4, chunk) == 4 && chunk[0] == 1 &&
	                    chunk[1] == H && chunk[2] == W && chunk[3] == L,
	            "one chunk per sample");
	float *got = malloc(N * per * sizeof *got), *want = malloc(N * per * sizeof *want);
	TEST_ASSERT(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0, "H5Dread");
	for (int n = 0; n < N; n++)
		for (int t = 0; t < L; t++)
			for (int i = 0; i < H; i++)
				for (int j = 0; j < W; j++)
					want[(((size_t)n * H + i) * W + j) * L + t] =
						(float)((double)pred[(((size_t)n * L + t) * H + i) * W + j] * 47.54 + 33.44);
	test_close("OUT = raw NHWC forecasts", got, want, N * per, 1e-6f, 1e-4f);
	H5Pclose(pl), H5Tclose(ty), H5Sclose(sp), H5Dclose(ds), H5Fclose(fid);
	free(got), free(want);

	/* Failures leave the committed file as it is and nothing beside it. */
	struct stat before, after;
	stat(file, &before);
	TEST_OK(forecast_create(&f, file, N, L, H, W));
	TEST_OK(forecast_append(f, pred, 1));
	TEST_ASSERT(entries(dir) == 2, "temporary file while writing");
	forecast_abort(f);
	TEST_ASSERT(entries(dir) == 1, "abort removes the temporary file");

	TEST_OK(forecast_create(&f, file, N, L, H, W));
	TEST_OK(forecast_append(f, pred, 2));
	expect_error(forecast_commit(f), STARNN_EINVAL, "commit with a sample missing", "2 of 3");

	TEST_OK(forecast_create(&f, file, N, L, H, W));
	TEST_OK(forecast_append(f, pred, 2));
	expect_error(forecast_append(f, pred, 2), STARNN_EINVAL, "too many samples", "exceed");
	expect_error(forecast_commit(f), STARNN_EINVAL, "commit after a failed append", "append failed");

	TEST_OK(forecast_create(&f, file, N, L, H, W));
	pred[per + 5] = NAN;
	expect_error(forecast_append(f, pred, 2), STARNN_ENUM, "NaN forecast", "sample 1");
	forecast_abort(f);
	stat(file, &after);
	TEST_ASSERT(entries(dir) == 1 && before.st_ino == after.st_ino && before.st_mtime == after.st_mtime &&
	                    before.st_size == after.st_size,
	            "the committed file untouched by the failed ones");

	expect_error(forecast_create(&f, path_in("nope/forecast.h5"), N, L, H, W), STARNN_EIO, "missing directory",
	             "No such file");
	TEST_ASSERT(f == NULL, "no handle on failure");
	expect_error(forecast_create(&f, path_in("x.h5"), 0, L, H, W), STARNN_EINVAL, "no samples", "bad size");
	expect_error(forecast_create(&f, path_in("x.h5"), N, L, -1, W), STARNN_EINVAL, "negative height",
	             "bad size");
	forecast_abort(NULL);
	TEST_ASSERT(entries(dir) == 1, "no file from the failed creations");
	unlink(file);
	free(pred);
}

/* ------------------------------------------------------------ colours */

/* SEVIR's VIL colour map (public display code), 0..255 components. */
static const unsigned char grey[3] = {77, 77, 77}, magenta[3] = {231, 0, 255}, black[3] = {0, 0, 0};
static const float bounds[10] = {16, 31, 59, 74, 100, 133, 160, 181, 219, 255};
static const unsigned char classes[11][3] = {
	{77, 77, 77},  {40, 190, 40}, {25, 150, 25}, {10, 105, 10}, {10, 75, 10},  {245, 245, 0},
	{237, 172, 0}, {240, 110, 0}, {160, 0, 0},   {231, 0, 255}, {231, 0, 255},
};

static int same(const unsigned char *a, const unsigned char *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

/* Expected colour of an integer raw value (or NaN). */
static const unsigned char *expected(float raw)
{
	if (isnan(raw))
		return black;
	int c = 0;
	while (c < 10 && raw >= bounds[c])
		c++;
	return classes[c];
}

static void test_colours(void)
{
	unsigned char rgb[3];
	for (int k = 0; k < 10; k++) {
		forecast_vil_rgb(bounds[k], rgb);
		TEST_ASSERT(same(rgb, classes[k + 1]), "colour at %g: %d %d %d", bounds[k], rgb[0], rgb[1], rgb[2]);
		forecast_vil_rgb(nextafterf(bounds[k], -INFINITY), rgb);
		TEST_ASSERT(same(rgb, classes[k]), "colour just below %g: %d %d %d", bounds[k], rgb[0], rgb[1], rgb[2]);
	}
	forecast_vil_rgb(0, rgb);
	TEST_ASSERT(same(rgb, grey), "0 is grey");
	forecast_vil_rgb(-3, rgb);
	TEST_ASSERT(same(rgb, grey), "below 0 is grey");
	forecast_vil_rgb(400, rgb);
	TEST_ASSERT(same(rgb, magenta), "above 255 is magenta");
	forecast_vil_rgb(NAN, rgb);
	TEST_ASSERT(same(rgb, black), "NaN is black");
}

/* ------------------------------------------------------------ PNG */

static unsigned char *read_png(const char *file, int *w, int *h)
{
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&img, file)) {
		TEST_ASSERT(0, "%s: not a readable PNG: %s", file, img.message);
		return NULL;
	}
	img.format = PNG_FORMAT_RGB;
	unsigned char *p = malloc(PNG_IMAGE_SIZE(img));
	if (!png_image_finish_read(&img, NULL, p, 0, NULL)) {
		TEST_ASSERT(0, "%s: PNG decoding failed: %s", file, img.message);
		free(p);
		return NULL;
	}
	*w = (int)img.width;
	*h = (int)img.height;
	return p;
}

static void test_png(void)
{
	/* Columns of the panels cycle through integer raw values at and around
	 * every boundary, rows alike (shifted): each pixel's colour is known. */
	static const float vals[] = {0,   15,  16,  30,  31,  58,  59,  73,  74,  99,  100, 132, 133,
	                             159, 160, 180, 181, 218, 219, 254, 255, -4,  300, NAN};
	enum { NV = sizeof vals / sizeof *vals, H = 30, W = 2 * NV, L = 2, SAMPLE = 3 };
	float *x = malloc(H * W * sizeof *x), *y = malloc(L * H * W * sizeof *y), *p = malloc(L * H * W * sizeof *p);
	for (int i = 0; i < H; i++)
		for (int j = 0; j < W; j++) {
			x[i * W + j] = sevir_normalise(vals[j % NV]);
			for (int t = 0; t < L; t++) {
				y[(t * H + i) * W + j] = sevir_normalise(vals[(j + 1 + t) % NV]);
				p[(t * H + i) * W + j] = sevir_normalise(vals[(j + 5 + i + t) % NV]);
			}
		}
	char pngdir[600];
	snprintf(pngdir, sizeof pngdir, "%s/pictures/a/b", dir);
	TEST_OK(forecast_png(pngdir, SAMPLE, x, y, p, L, H, W));
	TEST_ASSERT(entries(pngdir) == L, "%d pictures, no temporary file (%d entries)", L, entries(pngdir));
	for (int t = 0; t < L; t++) {
		char file[700];
		snprintf(file, sizeof file, "%s/sample%d_lead%d.png", pngdir, SAMPLE, t + 1);
		int pw = 0, ph = 0;
		unsigned char *img = read_png(file, &pw, &ph);
		if (!img)
			continue;
		TEST_ASSERT(pw > 3 * W && ph > H, "%s: %d x %d for 3 panels of %d x %d", file, pw, ph, W, H);
		/* The panels: in the middle row of the first panel rows, the runs
		 * of map colours (not white, not the ink of frames and text). */
		int found = 0, top = -1;
		for (int r = 0; r < ph && top < 0; r++) {
			const unsigned char *row = img + (size_t)r * pw * 3;
			for (int c = 0; c < pw; c++)
				if (same(row + 3 * c, expected(vals[0])) && c + 1 < pw &&
				    same(row + 3 * c + 3, expected(vals[1]))) {
					top = r; /* the first panel's first row starts 0, 15 */
					break;
				}
		}
		TEST_ASSERT(top >= 0, "%s: no panel found", file);
		for (int i = 0; top >= 0 && i < H; i++) {
			const unsigned char *row = img + (size_t)(top + i) * pw * 3;
			int c = 0, panel = 0;
			while (c < pw && panel < 3) {
				while (c < pw && (same(row + 3 * c, (unsigned char[]){255, 255, 255}) ||
				                  same(row + 3 * c, (unsigned char[]){30, 30, 30})))
					c++;
				int start = c;
				while (c < pw && !same(row + 3 * c, (unsigned char[]){255, 255, 255}) &&
				       !same(row + 3 * c, (unsigned char[]){30, 30, 30}))
					c++;
				if (c - start != W) {
					TEST_ASSERT(0, "%s row %d: run of %d pixels, expected a panel of %d", file, i, c - start,
					            W);
					break;
				}
				for (int j = 0; j < W; j++) {
					float v = panel == 0   ? vals[j % NV]
					          : panel == 1 ? vals[(j + 1 + t) % NV]
					                       : vals[(j + 5 + i + t) % NV];
					const unsigned char *px = row + 3 * (start + j);
					if (!same(px, expected(v))) {
						TEST_ASSERT(0, "%s panel %d (%d,%d): raw %g drawn %d %d %d", file, panel, i, j, v,
						            px[0], px[1], px[2]);
						break;
					}
				}
				panel++;
				found++;
			}
		}
		TEST_ASSERT(found == 3 * H, "%s: %d panel rows found, expected %d", file, found, 3 * H);
		/* the row above and below the panels is not part of them */
		if (top > 0) {
			const unsigned char *row = img + (size_t)(top - 1) * pw * 3;
			int colour = 0;
			for (int c = 0; c < 3 * W; c++)
				colour |= same(row + 3 * c, expected(vals[2]));
			TEST_ASSERT(!colour, "%s: panel taller than %d", file, H);
		}
		free(img);
	}

	/* Errors: a file where the directory should be, bad arguments. */
	char plain[700];
	snprintf(plain, sizeof plain, "%s/plain", dir);
	fclose(fopen(plain, "w"));
	char under[800];
	snprintf(under, sizeof under, "%s/sub", plain);
	expect_error(forecast_png(plain, 0, x, y, p, L, H, W), STARNN_EIO, "directory is a file", "plain");
	expect_error(forecast_png(under, 0, x, y, p, L, H, W), STARNN_EIO, "directory under a file", "plain");
	expect_error(forecast_png(pngdir, 0, x, y, p, 0, H, W), STARNN_EINVAL, "no lead time", "bad arguments");
	unlink(plain);
	free(x), free(y), free(p);
}

/* A picture of moving blobs to look at: STARNN_TEST_KEEP=1 (128 x 128) or
 * STARNN_TEST_KEEP=<size>. */
static void demo_png(int S)
{
	enum { L = 2 };
	float *x = malloc(S * S * sizeof *x), *y = malloc(L * S * S * sizeof *y), *p = malloc(L * S * S * sizeof *p);
	for (int t = -1; t < L; t++)
		for (int i = 0; i < S; i++)
			for (int j = 0; j < S; j++) {
				float u = i * 128.f / S, v0 = j * 128.f / S;
				float d1 = hypotf(u - 50.f, v0 - (40.f + 8 * t)), d2 = hypotf(u - 90.f, v0 - (85.f + 5 * t));
				float v = 240 * expf(-d1 * d1 / 300) + 180 * expf(-d2 * d2 / 120) + 8;
				float blur = 230 * expf(-d1 * d1 / 420) + 150 * expf(-d2 * d2 / 180) + 8;
				if (t < 0)
					x[i * S + j] = sevir_normalise(v);
				else
					y[(t * S + i) * S + j] = sevir_normalise(v),
					p[(t * S + i) * S + j] = sevir_normalise(blur);
			}
	char d[600];
	snprintf(d, sizeof d, "%s/demo", dir);
	TEST_OK(forecast_png(d, 0, x, y, p, L, S, S));
	free(x), free(y), free(p);
}

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char sub[1024];
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		struct stat st;
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(sub);
		else
			unlink(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

int main(void)
{
	test_seed(11);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_forecast_file();
	test_colours();
	test_png();
	if (getenv("STARNN_TEST_KEEP")) {
		int size = atoi(getenv("STARNN_TEST_KEEP"));
		demo_png(size >= 16 ? size : 128);
		printf("kept %s\n", dir);
	} else {
		remove_tree(dir);
	}
	printf("%s: %d checks, %d failed\n", test_failures ? "FAIL" : "PASS", test_checks, test_failures);
	return test_failures ? 1 : 0;
}
