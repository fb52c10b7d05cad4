/* Forecast outputs (models/sevir/output.c): the HDF5 `OUT` file read back
 * with the HDF5 API (shape N x H x W x lead, fp32, one chunk per sample,
 * raw values = denormalised NCHW input clipped to [0, 254], to 1e-6
 * relative, the clipped ones exactly 0 or 254); abort, missing
 * samples, too many samples, NaN and a missing directory leave no file and
 * an existing file untouched; the VIL colour map at and just below every
 * boundary; the layout of the picture at many sizes (boxes inside it, no
 * text box over another box, frames in their rows and columns, zoomed to
 * 128 pixels a side, titled with their times); PNG files (valid, read back
 * with libpng; the layout's size; every frame pixel a zoom x zoom block of
 * the colour of the raw value put in, integer boundary values included,
 * NaN black; text drawn, nothing outside the boxes), a nested directory
 * created, no temporary file left.
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
	/* raw -23.6 .. 309: both ends beyond the valid range [0, 254] */
	float *pred = test_random(N * per, -1.2f, 5.8f);
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
	int below = 0, above = 0, clipped = 1;
	for (int n = 0; n < N; n++)
		for (int t = 0; t < L; t++)
			for (int i = 0; i < H; i++)
				for (int j = 0; j < W; j++) {
					size_t k = (((size_t)n * H + i) * W + j) * L + t;
					double v = (double)pred[(((size_t)n * L + t) * H + i) * W + j] * 47.54 + 33.44;
					below += v < 0, above += v > 254;
					want[k] = (float)(v < 0 ? 0 : v > 254 ? 254 : v);
					/* clipped values are exactly the bounds */
					if (v < -1e-3 || v > 254 + 1e-3)
						clipped &= got[k] == (v < 0 ? 0.0f : 254.0f);
				}
	TEST_ASSERT(below > 0 && above > 0 && clipped, "%d forecasts below 0 and %d above 254, each written as the bound: %d",
	            below, above, clipped);
	test_close("OUT = raw NHWC forecasts clipped to [0, 254]", got, want, N * per, 1e-6f, 1e-4f);
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

/* Two boxes, each grown by `grow` pixels on every side, intersect. */
static int meet(const struct forecast_box *a, const struct forecast_box *b, int grow)
{
	return a->x - grow < b->x + b->w + grow && b->x - grow < a->x + a->w + grow && a->y - grow < b->y + b->h + grow &&
	       b->y - grow < a->y + a->h + grow;
}

static const struct forecast_box *find_text(const struct forecast_layout *l, const char *str)
{
	for (int i = 0; i < l->nboxes; i++)
		if (l->boxes[i].kind == FORECAST_TEXT && !strcmp(l->boxes[i].text, str))
			return &l->boxes[i];
	return NULL;
}

/* The layout at many sizes: every box inside the picture, no text box
 * within 1 pixel of another box (frames and the bar have a 1-pixel border
 * outside their box), frames apart, text boxes as wide as their text, the
 * frames' zoom the least that makes them 128 pixels a side, the frames in
 * their rows and columns (the last inputs, oldest left; forecast under
 * truth), the titles the frames' times. */
static void check_layout(int sample, int in, int lead, int h, int w)
{
	struct forecast_layout l;
	char what[96];
	snprintf(what, sizeof what, "layout of %d inputs, %d lead times, %d x %d", in, lead, h, w);
	int rc = forecast_layout_make(&l, sample, in, lead, h, w);
	TEST_ASSERT(rc == 0, "%s: %s", what, starnn_last_error());
	if (rc < 0)
		return;
	int small = h < w ? h : w, nin = in < lead ? in : lead, bad = 0;
	TEST_ASSERT(l.zoom * small >= 128 && (l.zoom == 1 || (l.zoom - 1) * small < 128), "%s: zoom %d", what, l.zoom);
	int frames[3] = {0};
	const struct forecast_box *row1[64] = {0};
	for (int i = 0; i < l.nboxes && !bad; i++) {
		const struct forecast_box *a = &l.boxes[i];
		int border = a->kind != FORECAST_TEXT;
		if (a->x - border < 0 || a->y - border < 0 || a->x + a->w + border > l.width ||
		    a->y + a->h + border > l.height || a->w <= 0 || a->h <= 0) {
			TEST_ASSERT(0, "%s: box %d (%d,%d %dx%d) outside the %dx%d picture", what, i, a->x, a->y, a->w, a->h,
			            l.width, l.height);
			bad = 1;
		}
		if (a->kind == FORECAST_TEXT) {
			int n = (int)strlen(a->text);
			TEST_ASSERT(n > 0 && a->w == (6 * n - 1) * a->scale && a->h == 7 * a->scale, "%s: text '%s' box %dx%d",
			            what, a->text, a->w, a->h);
		}
		if (a->kind == FORECAST_FRAME) {
			TEST_ASSERT(a->w == w * l.zoom && a->h == h * l.zoom, "%s: frame %dx%d", what, a->w, a->h);
			TEST_ASSERT(a->row >= 0 && a->row < 3, "%s: frame row %d", what, a->row);
			if (a->row < 0 || a->row > 2)
				continue;
			int c = frames[a->row]++;
			int want = a->row == 0 ? in - nin + c : c;
			TEST_ASSERT(a->frame == want, "%s: row %d column %d shows frame %d, expected %d", what, a->row, c,
			            a->frame, want);
			if (a->row == 1 && c < 64)
				row1[c] = a;
			if (a->row == 2 && c < 64 && row1[c])
				TEST_ASSERT(a->x == row1[c]->x && a->y > row1[c]->y + row1[c]->h, "%s: forecast %d not under truth %d",
				            what, c, c);
		}
		for (int j = i + 1; j < l.nboxes && !bad; j++) {
			const struct forecast_box *b = &l.boxes[j];
			if (meet(a, b, 1)) {
				TEST_ASSERT(0, "%s: box %d (%s %d,%d %dx%d) overlaps box %d (%s %d,%d %dx%d)", what, i,
				            a->kind == FORECAST_TEXT ? a->text : a->kind == FORECAST_FRAME ? "frame" : "bar", a->x, a->y,
				            a->w, a->h, j, b->kind == FORECAST_TEXT ? b->text : b->kind == FORECAST_FRAME ? "frame" : "bar",
				            b->x, b->y, b->w, b->h);
				bad = 1;
			}
		}
	}
	TEST_ASSERT(bad || (frames[0] == nin && frames[1] == lead && frames[2] == lead), "%s: %d, %d, %d frames per row", what,
	            frames[0], frames[1], frames[2]);
	char t[32];
	static const char *fixed[] = {"INPUT", "TRUTH", "FORECAST", "VIL", "0", "16", "219", "255"};
	for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++)
		TEST_ASSERT(find_text(&l, fixed[k]), "%s: no text '%s'", what, fixed[k]);
	snprintf(t, sizeof t, "SAMPLE %d", sample);
	TEST_ASSERT(find_text(&l, t), "%s: no title '%s'", what, t);
	snprintf(t, sizeof t, "+%d MIN", 5 * lead);
	TEST_ASSERT(find_text(&l, t) && find_text(&l, "+5 MIN"), "%s: no lead-time titles up to '%s'", what, t);
	snprintf(t, sizeof t, "%d MIN", -5 * (nin - 1));
	TEST_ASSERT(find_text(&l, t) && find_text(&l, "0 MIN"), "%s: no input titles from '%s' to '0 MIN'", what, t);
	forecast_layout_free(&l);
}

static void test_layout(void)
{
	static const int sizes[][2] = {{1, 1}, {5, 7}, {16, 16}, {30, 48}, {64, 64}, {100, 37}, {127, 129},
	                               {128, 128}, {255, 256}, {384, 384}, {600, 600}};
	static const int frames[][2] = {{13, 12}, {1, 1}, {3, 4}, {13, 1}, {2, 20}, {13, 3}};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		for (size_t k = 0; k < sizeof frames / sizeof *frames; k++)
			check_layout(i == 3 ? 123456789 : (int)i, frames[k][0], frames[k][1], sizes[i][0], sizes[i][1]);
	check_layout(2000000000, 13, 1, 1, 1); /* a title wider than one column */
	struct forecast_layout l;
	expect_error(forecast_layout_make(&l, 0, 13, 12, 4096, 4096), STARNN_EINVAL, "4096 x 4096 frames", "too large");
	TEST_ASSERT(l.boxes == NULL, "no boxes after a failure");
	expect_error(forecast_layout_make(&l, 0, 0, 12, 64, 64), STARNN_EINVAL, "no input frame", "bad sizes");
	expect_error(forecast_layout_make(&l, -1, 13, 12, 64, 64), STARNN_EINVAL, "negative sample", "bad sizes");
	forecast_layout_free(&l);
	forecast_layout_free(NULL);
}

/* A picture's pixels against its layout: each frame's data pixel (i, j) is
 * a zoom x zoom block of forecast_vil_rgb(the raw value put in), its border
 * ink; every text box holds ink; outside the boxes, their borders and the
 * bar's ticks, the picture is white. */
static void check_picture(const char *file, const float *xr, int in, const float *yr, const float *pr, int lead,
                          int h, int w, int sample)
{
	static const unsigned char white[3] = {255, 255, 255}, ink[3] = {30, 30, 30};
	struct forecast_layout l;
	TEST_OK(forecast_layout_make(&l, sample, in, lead, h, w));
	int pw = 0, ph = 0;
	unsigned char *img = read_png(file, &pw, &ph);
	if (!img) {
		forecast_layout_free(&l);
		return;
	}
	TEST_ASSERT(pw == l.width && ph == l.height, "%s: %d x %d, the layout says %d x %d", file, pw, ph, l.width,
	            l.height);
	if (pw != l.width || ph != l.height) {
		free(img);
		forecast_layout_free(&l);
		return;
	}
	unsigned char *covered = calloc((size_t)pw * ph, 1);
	int z = l.zoom, nframes = 0;
	for (int b = 0; b < l.nboxes; b++) {
		const struct forecast_box *bx = &l.boxes[b];
		int grow = bx->kind == FORECAST_TEXT ? 0 : 1;
		/* the bar's ticks lie between it and its labels */
		int right = bx->kind == FORECAST_COLOUR_BAR ? bx->w / 6 + 1 : grow;
		for (int yy = bx->y - grow; yy < bx->y + bx->h + grow; yy++)
			for (int xx = bx->x - grow; xx < bx->x + bx->w + right; xx++)
				covered[(size_t)yy * pw + xx] = 1;
		if (bx->kind == FORECAST_TEXT) {
			int inked = 0;
			for (int yy = bx->y; yy < bx->y + bx->h; yy++)
				for (int xx = bx->x; xx < bx->x + bx->w; xx++)
					inked += same(img + ((size_t)yy * pw + xx) * 3, ink);
			TEST_ASSERT(inked > 0, "%s: text '%s' not drawn", file, bx->text);
			continue;
		}
		if (bx->kind != FORECAST_FRAME)
			continue;
		nframes++;
		const float *src = (bx->row == 0 ? xr : bx->row == 1 ? yr : pr) + (size_t)bx->frame * h * w;
		int wrong = 0;
		for (int i = 0; i < h && !wrong; i++)
			for (int j = 0; j < w && !wrong; j++) {
				unsigned char want[3];
				forecast_vil_rgb(src[(size_t)i * w + j], want);
				for (int dy = 0; dy < z && !wrong; dy++)
					for (int dx = 0; dx < z && !wrong; dx++) {
						const unsigned char *px = img + ((size_t)(bx->y + i * z + dy) * pw + bx->x + j * z + dx) * 3;
						if (!same(px, want)) {
							TEST_ASSERT(0, "%s: row %d frame %d pixel (%d,%d): raw %g drawn %d %d %d, expected %d %d %d",
							            file, bx->row, bx->frame, i, j, src[(size_t)i * w + j], px[0], px[1], px[2],
							            want[0], want[1], want[2]);
							wrong = 1;
						}
					}
			}
		for (int xx = bx->x - 1; xx <= bx->x + bx->w && !wrong; xx++)
			if (!same(img + ((size_t)(bx->y - 1) * pw + xx) * 3, ink) ||
			    !same(img + ((size_t)(bx->y + bx->h) * pw + xx) * 3, ink)) {
				TEST_ASSERT(0, "%s: row %d frame %d: no border at x %d", file, bx->row, bx->frame, xx);
				wrong = 1;
			}
	}
	TEST_ASSERT(nframes == (in < lead ? in : lead) + 2 * lead, "%s: %d frames", file, nframes);
	long stray = 0;
	for (size_t i = 0; i < (size_t)pw * ph; i++)
		stray += !covered[i] && !same(img + 3 * i, white);
	TEST_ASSERT(stray == 0, "%s: %ld pixels drawn outside every box", file, stray);
	free(covered);
	free(img);
	forecast_layout_free(&l);
}

static void test_png(void)
{
	/* Columns of the frames cycle through integer raw values at and around
	 * every boundary, rows alike (shifted): each pixel's colour is known. */
	static const float vals[] = {0,   15,  16,  30,  31,  58,  59,  73,  74,  99,  100, 132, 133,
	                             159, 160, 180, 181, 218, 219, 254, 255, -4,  300, NAN};
	enum { NV = sizeof vals / sizeof *vals, H = 30, W = 2 * NV, SAMPLE = 3 };
	/* 3 inputs for 4 lead times (a short input row), 5 for 2 (the last 2) */
	static const int cases[][2] = {{3, 4}, {5, 2}};
	char pngdir[600];
	snprintf(pngdir, sizeof pngdir, "%s/pictures/a/b", dir);
	float *x = NULL, *y = NULL, *p = NULL;
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		int in = cases[k][0], lead = cases[k][1];
		float *xr = malloc((size_t)in * H * W * sizeof *xr), *yr = malloc((size_t)lead * H * W * sizeof *yr),
		      *pr = malloc((size_t)lead * H * W * sizeof *pr);
		free(x), free(y), free(p);
		x = malloc((size_t)in * H * W * sizeof *x), y = malloc((size_t)lead * H * W * sizeof *y),
		p = malloc((size_t)lead * H * W * sizeof *p);
		for (int i = 0; i < H; i++)
			for (int j = 0; j < W; j++) {
				for (int t = 0; t < in; t++)
					xr[(t * H + i) * W + j] = vals[(j + 3 * t + i / 7) % NV];
				for (int t = 0; t < lead; t++) {
					yr[(t * H + i) * W + j] = vals[(j + 1 + t) % NV];
					pr[(t * H + i) * W + j] = vals[(j + 5 + i + t) % NV];
				}
			}
		for (size_t i = 0; i < (size_t)in * H * W; i++)
			x[i] = sevir_normalise(xr[i]);
		for (size_t i = 0; i < (size_t)lead * H * W; i++)
			y[i] = sevir_normalise(yr[i]), p[i] = sevir_normalise(pr[i]);
		TEST_OK(forecast_png(pngdir, SAMPLE + (int)k, x, in, y, p, lead, H, W));
		char file[700];
		snprintf(file, sizeof file, "%s/sample%d.png", pngdir, SAMPLE + (int)k);
		check_picture(file, xr, in, yr, pr, lead, H, W, SAMPLE + (int)k);
		free(xr), free(yr), free(pr);
	}
	TEST_ASSERT(entries(pngdir) == 2, "a picture per sample, no temporary file (%d entries)", entries(pngdir));

	/* Errors: a file where the directory should be, bad arguments, a
	 * picture too large; none leaves a file. */
	int in = cases[1][0], lead = cases[1][1];
	char plain[700];
	snprintf(plain, sizeof plain, "%s/plain", dir);
	fclose(fopen(plain, "w"));
	char under[800];
	snprintf(under, sizeof under, "%s/sub", plain);
	expect_error(forecast_png(plain, 0, x, in, y, p, lead, H, W), STARNN_EIO, "directory is a file", "plain");
	expect_error(forecast_png(under, 0, x, in, y, p, lead, H, W), STARNN_EIO, "directory under a file", "plain");
	expect_error(forecast_png(pngdir, 0, x, in, y, p, 0, H, W), STARNN_EINVAL, "no lead time", "bad arguments");
	expect_error(forecast_png(pngdir, 0, x, 0, y, p, lead, H, W), STARNN_EINVAL, "no input frame", "bad arguments");
	expect_error(forecast_png(pngdir, 0, x, in, y, p, 200, 4096, 4096), STARNN_EINVAL, "too large a picture",
	             "too large");
	TEST_ASSERT(entries(pngdir) == 2, "no file from the failures (%d entries)", entries(pngdir));
	unlink(plain);
	free(x), free(y), free(p);
}

/* A picture of moving blobs to look at: STARNN_TEST_KEEP=1 (128 x 128) or
 * STARNN_TEST_KEEP=<size>. */
static void demo_png(int S)
{
	enum { IN = 13, L = 12 };
	float *x = malloc((size_t)IN * S * S * sizeof *x), *y = malloc((size_t)L * S * S * sizeof *y),
	      *p = malloc((size_t)L * S * S * sizeof *p);
	for (int t = -IN; t < L; t++)
		for (int i = 0; i < S; i++)
			for (int j = 0; j < S; j++) {
				float u = i * 128.f / S, v0 = j * 128.f / S;
				float d1 = hypotf(u - 50.f, v0 - (40.f + 2 * t)), d2 = hypotf(u - 90.f, v0 - (85.f + 1.5f * t));
				float v = 240 * expf(-d1 * d1 / 300) + 180 * expf(-d2 * d2 / 120) + 8;
				float blur = 230 * expf(-d1 * d1 / (420 + 20 * t)) + 150 * expf(-d2 * d2 / (180 + 10 * t)) + 8;
				if (t < 0)
					x[((t + IN) * S + i) * S + j] = sevir_normalise(v);
				else
					y[(t * S + i) * S + j] = sevir_normalise(v),
					p[(t * S + i) * S + j] = sevir_normalise(blur);
			}
	char d[600];
	snprintf(d, sizeof d, "%s/demo", dir);
	TEST_OK(forecast_png(d, 0, x, IN, y, p, L, S, S));
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
	test_layout();
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
