/* Forecast outputs of models/unet predict (see output.h): the HDF5 `OUT`
 * file and the PNG pictures in SEVIR's VIL colour map.
 *
 * Both are written atomically through ckpt_atomic_* (checkpoint.h): a
 * temporary file beside the final one, renamed when complete. */
#include <config.h>

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/train/atomic.h"
#include "models/sevir/output.h"
#include "models/sevir/sevir.h"
#include "runtime/base/error.h"

/* ------------------------------------------------------ HDF5 forecasts */

struct forecast_file {
	struct ckpt_atomic a;
	hid_t fid, dset;
	int nsamples, lead, h, w;
	int count;   /* samples appended */
	int failed;  /* an append failed: commit refuses */
	float *buf;  /* one sample, H x W x lead */
};

static void forecast_free(forecast_file *f)
{
	ckpt_hdf5_quiet();
	if (f->dset >= 0)
		H5Dclose(f->dset);
	if (f->fid >= 0)
		H5Fclose(f->fid);
	H5Eclear2(H5E_DEFAULT);
	free(f->buf);
	free(f);
}

int forecast_create(forecast_file **out, const char *path, int nsamples, int lead_times, int h, int w)
{
	ckpt_hdf5_quiet();
	*out = NULL;
	if (nsamples <= 0 || lead_times <= 0 || h <= 0 || w <= 0)
		return starnn_error(STARNN_EINVAL, "forecast %s: bad size %d samples x %d x %d x %d lead times",
		                    path ? path : "(null)", nsamples, h, w, lead_times);
	forecast_file *f = calloc(1, sizeof *f);
	if (!f)
		return starnn_error(STARNN_ENOMEM, "forecast %s: out of memory", path);
	f->fid = f->dset = -1;
	f->nsamples = nsamples;
	f->lead = lead_times;
	f->h = h;
	f->w = w;
	f->buf = malloc((size_t)h * w * lead_times * sizeof *f->buf);
	if (!f->buf) {
		free(f);
		return starnn_error(STARNN_ENOMEM, "forecast %s: out of memory", path);
	}
	int rc = ckpt_atomic_begin(&f->a, path);
	if (rc < 0) {
		forecast_free(f);
		return rc;
	}
	char why[256];
	f->fid = ckpt_atomic_h5create(&f->a, why, sizeof why);
	if (f->fid < 0) {
		rc = starnn_error(STARNN_EIO, "forecast %s: cannot create HDF5 file %s: %s", path, f->a.tmp, why);
		forecast_abort(f);
		return rc;
	}
	/* N x H x W x lead, one chunk per sample (what a reader of one sample wants) */
	hsize_t dims[4] = {(hsize_t)nsamples, (hsize_t)h, (hsize_t)w, (hsize_t)lead_times};
	hsize_t chunk[4] = {1, (hsize_t)h, (hsize_t)w, (hsize_t)lead_times};
	hid_t space = H5Screate_simple(4, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(dcpl, 4, chunk);
	f->dset = H5Dcreate2(f->fid, "OUT", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (f->dset < 0)
		ckpt_hdf5_reason(why, sizeof why);
	H5Pclose(dcpl);
	H5Sclose(space);
	if (f->dset < 0) {
		rc = starnn_error(STARNN_EIO, "forecast %s: cannot create dataset OUT: %s", path, why);
		forecast_abort(f);
		return rc;
	}
	*out = f;
	return 0;
}

int forecast_append(forecast_file *f, const float *pred, int n)
{
	ckpt_hdf5_quiet();
	if (!f)
		return starnn_error(STARNN_EINVAL, "forecast_append: no file");
	if (n < 0 || f->count + n > f->nsamples) {
		f->failed = 1;
		return starnn_error(STARNN_EINVAL, "forecast %s: %d more samples after %d exceed the %d announced",
		                    f->a.file, n, f->count, f->nsamples);
	}
	size_t hw = (size_t)f->h * f->w, lead = (size_t)f->lead;
	hsize_t count[4] = {1, (hsize_t)f->h, (hsize_t)f->w, lead};
	hid_t mspace = H5Screate_simple(4, count, NULL);
	hid_t fspace = H5Dget_space(f->dset);
	int rc = 0;
	for (int b = 0; b < n && rc == 0; b++) {
		/* NCHW normalised -> HWC raw, checked finite, then clipped to
		 * the valid range (sevir_forecast_clip) */
		const float *p = pred + (size_t)b * lead * hw;
		for (size_t t = 0; t < lead; t++) {
			const float *pt = p + t * hw;
			for (size_t i = 0; i < hw; i++)
				f->buf[i * lead + t] = sevir_denormalise(pt[i]);
		}
		for (size_t i = 0; i < hw * lead; i++)
			if (!isfinite(f->buf[i])) {
				rc = starnn_error(STARNN_ENUM, "forecast %s: sample %d holds %g (lead time %zu, pixel %zu)",
				                  f->a.file, f->count, (double)f->buf[i], i % lead + 1, i / lead);
				break;
			}
		if (rc < 0)
			break;
		for (size_t i = 0; i < hw * lead; i++)
			f->buf[i] = sevir_forecast_clip(f->buf[i]);
		hsize_t start[4] = {(hsize_t)f->count, 0, 0, 0};
		char why[256];
		if (H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
		    H5Dwrite(f->dset, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, f->buf) < 0 ||
		    H5Dflush(f->dset) < 0) /* a full disk shows now, not in a close HDF5 cannot undo */
			rc = starnn_error(STARNN_EIO, "forecast %s: cannot write sample %d: %s", f->a.file, f->count,
			                  ckpt_hdf5_reason(why, sizeof why));
		else
			f->count++;
	}
	H5Sclose(fspace);
	H5Sclose(mspace);
	if (rc < 0)
		f->failed = 1;
	return rc;
}

int forecast_commit(forecast_file *f)
{
	ckpt_hdf5_quiet();
	if (!f)
		return starnn_error(STARNN_EINVAL, "forecast_commit: no file");
	int rc = 0;
	char why[256];
	if (f->failed)
		rc = starnn_error(STARNN_EINVAL, "forecast %s: not written, an append failed", f->a.file);
	else if (f->count != f->nsamples)
		rc = starnn_error(STARNN_EINVAL, "forecast %s: not written, %d of %d samples given", f->a.file, f->count,
		                  f->nsamples);
	if (rc < 0) {
		forecast_abort(f);
		return rc;
	}
	/* Flushed before the closes: a failure then leaves objects that
	 * forecast_abort can still close (see ckpt_h5_discard). */
	herr_t st = H5Fflush(f->fid, H5F_SCOPE_GLOBAL);
	if (st >= 0) {
		st = H5Dclose(f->dset);
		f->dset = -1;
	}
	if (st >= 0) {
		st = H5Fclose(f->fid);
		f->fid = -1;
	}
	if (st < 0) {
		rc = starnn_error(STARNN_EIO, "forecast %s: cannot finish the HDF5 file: %s", f->a.file,
		                  ckpt_hdf5_reason(why, sizeof why));
		forecast_abort(f);
		return rc;
	}
	rc = ckpt_atomic_commit(&f->a);
	forecast_free(f);
	return rc;
}

void forecast_abort(forecast_file *f)
{
	if (!f)
		return;
	ckpt_hdf5_quiet();
	if (f->fid >= 0)
		ckpt_h5_discard(f->fid); /* after a failed write the closes need it */
	if (f->dset >= 0)
		H5Dclose(f->dset);
	if (f->fid >= 0)
		H5Fclose(f->fid);
	f->dset = f->fid = -1;
	ckpt_atomic_abort(&f->a);
	forecast_free(f);
}

/* ------------------------------------------------------ VIL colour map */

/* SEVIR's VIL colour map (the public SEVIR display code's vil_cmap): class
 * boundaries in raw VIL units, one colour per interval; below 16 (and
 * below 0) the "under" grey, from 219 on (and above 255) magenta, NaN
 * black. */
#define VIL_NBOUNDS 10
static const float vil_bounds[VIL_NBOUNDS] = {16, 31, 59, 74, 100, 133, 160, 181, 219, 255};
static const unsigned char vil_colours[VIL_NBOUNDS + 1][3] = {
	{77, 77, 77},   /*   < 16 */
	{40, 190, 40},  /*  16 .. 31 */
	{25, 150, 25},  /*  31 .. 59 */
	{10, 105, 10},  /*  59 .. 74 */
	{10, 75, 10},   /*  74 .. 100 */
	{245, 245, 0},  /* 100 .. 133 */
	{237, 172, 0},  /* 133 .. 160 */
	{240, 110, 0},  /* 160 .. 181 */
	{160, 0, 0},    /* 181 .. 219 */
	{231, 0, 255},  /* 219 .. 255 */
	{231, 0, 255},  /* >= 255 */
};
static const unsigned char vil_nan[3] = {0, 0, 0};

void forecast_vil_rgb(float raw, unsigned char rgb[3])
{
	if (isnan(raw)) {
		memcpy(rgb, vil_nan, 3);
		return;
	}
	int c = 0;
	while (c < VIL_NBOUNDS && raw >= vil_bounds[c])
		c++;
	memcpy(rgb, vil_colours[c], 3);
}

/* Same on a normalised value, against normalised bounds: an integer raw
 * value normalised with sevir_normalise gets the class of the integer
 * (denormalising could turn 16 into 15.999998). */
static const unsigned char *vil_colour_norm(float v, const float *bounds_norm)
{
	if (isnan(v))
		return vil_nan;
	int c = 0;
	while (c < VIL_NBOUNDS && v >= bounds_norm[c])
		c++;
	return vil_colours[c];
}

/* ------------------------------------------------------ pictures */

/* A 5 x 7 font for the labels: rows top down, bit 4 = leftmost column. */
struct glyph {
	char c;
	unsigned char rows[7];
};
static const struct glyph font[] = {
	{'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
	{'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
	{'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
	{'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
	{'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
	{'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
	{'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
	{'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
	{'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}}, {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
	{'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}}, {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
	{'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}}, {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
	{'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}}, {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
	{'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
	{'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}}, {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
};

struct canvas {
	unsigned char *rgb;
	int width, height;
};

static void put(struct canvas *c, int x, int y, const unsigned char *col)
{
	if (x >= 0 && y >= 0 && x < c->width && y < c->height)
		memcpy(c->rgb + ((size_t)y * c->width + x) * 3, col, 3);
}

static void rect(struct canvas *c, int x0, int y0, int w, int h, const unsigned char *col)
{
	for (int y = y0; y < y0 + h; y++)
		for (int x = x0; x < x0 + w; x++)
			put(c, x, y, col);
}

/* Text at (x, y) = top left, glyphs scaled by s, 6 s apart. */
static void text(struct canvas *c, int x, int y, int s, const char *str, const unsigned char *col)
{
	for (; *str; str++, x += 6 * s) {
		const struct glyph *g = NULL;
		for (size_t i = 0; i < sizeof font / sizeof *font; i++)
			if (font[i].c == *str)
				g = &font[i];
		if (!g)
			continue; /* space */
		for (int r = 0; r < 7; r++)
			for (int b = 0; b < 5; b++)
				if (g->rows[r] & (0x10 >> b))
					rect(c, x + b * s, y + r * s, s, s, col);
	}
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
	size_t n = strlen(dir);
	char *p = malloc(n + 1);
	if (!p)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	memcpy(p, dir, n + 1);
	int rc = 0;
	for (size_t i = 1; i <= n && rc == 0; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		struct stat st;
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			rc = starnn_error(STARNN_EIO, "cannot create directory %s: %s", p, strerror(errno));
		else if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			rc = starnn_error(STARNN_EIO, "cannot create directory %s: %s", p,
			                  stat(p, &st) < 0 ? strerror(errno) : "a file of that name exists");
		p[i] = c;
	}
	free(p);
	return rc;
}

static int write_png(const char *file, const struct canvas *c)
{
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	img.width = (png_uint_32)c->width;
	img.height = (png_uint_32)c->height;
	img.format = PNG_FORMAT_RGB;
	png_alloc_size_t size = 0;
	if (!png_image_write_to_memory(&img, NULL, &size, 0, c->rgb, 0, NULL))
		return starnn_error(STARNN_EIO, "%s: PNG encoding failed: %s", file, img.message);
	void *mem = malloc(size);
	if (!mem)
		return starnn_error(STARNN_ENOMEM, "%s: out of memory", file);
	if (!png_image_write_to_memory(&img, mem, &size, 0, c->rgb, 0, NULL)) {
		free(mem);
		return starnn_error(STARNN_EIO, "%s: PNG encoding failed: %s", file, img.message);
	}
	struct ckpt_atomic a;
	/* no scan for stale temporaries per picture (see ckpt_atomic_begin_opt);
	 * a killed predict leaves at most one, which is small */
	int rc = ckpt_atomic_begin_opt(&a, file, 0);
	for (size_t done = 0; rc == 0 && done < size;) {
		ssize_t k = write(a.fd, (char *)mem + done, size - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = starnn_error(STARNN_EIO, "%s: write failed: %s", file, k < 0 ? strerror(errno) : "no progress");
			ckpt_atomic_abort(&a);
		} else {
			done += (size_t)k;
		}
	}
	free(mem);
	return rc < 0 ? rc : ckpt_atomic_commit(&a);
}

/* ------------------------------------------------------ the panel */

/* Width of a text in the 5 x 7 font at a scale (its height: 7 x scale). */
static int text_width(const char *str, int scale)
{
	int n = (int)strlen(str);
	return n ? (6 * n - 1) * scale : 0;
}

static int add_box(struct forecast_layout *l, int cap, struct forecast_box b)
{
	if (l->nboxes >= cap)
		return starnn_error(STARNN_EINVAL, "forecast_layout: more than %d boxes", cap);
	l->boxes[l->nboxes++] = b;
	return 0;
}

static int add_text(struct forecast_layout *l, int cap, int x, int y, int scale, const char *str)
{
	struct forecast_box b = {.kind = FORECAST_TEXT, .x = x, .y = y, .h = 7 * scale, .row = -1, .frame = -1,
	                         .scale = scale};
	snprintf(b.text, sizeof b.text, "%s", str);
	b.w = text_width(b.text, scale);
	return add_box(l, cap, b);
}

/* Minutes of an input column (0 = the last input) or of a lead time. */
static void minutes_label(char *buf, size_t n, int minutes)
{
	snprintf(buf, n, minutes > 0 ? "+%d MIN" : "%d MIN", minutes);
}

void forecast_layout_free(struct forecast_layout *l)
{
	if (!l)
		return;
	free(l->boxes);
	memset(l, 0, sizeof *l);
}

/* The grid: a column per lead time, each as wide as its frame or its
 * widest title; rows [column titles, inputs], [column titles, truth],
 * [forecast], the labels' column on their left, the colour bar on the
 * right spanning the three rows. Every gap is a multiple of the glyph
 * scale s, so text and frames stay apart at every size:
 *
 *   m  SAMPLE 3
 *      rg
 *              -55 MIN   -50 MIN ...   0 MIN          VIL
 *              pad
 *      INPUT  [frame]   [frame]  ... [frame]     [bar] 255
 *      rg                                        [bar] 219
 *              +5 MIN    +10 MIN ...  +60 MIN    [bar] ...
 *      TRUTH  [frame]   [frame]  ... [frame]     [bar]
 *      cg                                        [bar]
 *   FORECAST  [frame]   [frame]  ... [frame]     [bar] 0
 *   m
 */
int forecast_layout_make(struct forecast_layout *l, int sample, int in_frames, int lead_times, int h, int w)
{
	memset(l, 0, sizeof *l);
	if (in_frames <= 0 || lead_times <= 0 || h <= 0 || w <= 0 || sample < 0 || lead_times > 1000 ||
	    h > 65536 || w > 65536)
		return starnn_error(STARNN_EINVAL,
		                    "forecast_layout: bad sizes (sample %d, %d input frames, %d lead times, %d x %d)",
		                    sample, in_frames, lead_times, h, w);
	const int ncols = lead_times, nin = in_frames < ncols ? in_frames : ncols;
	const int small = h < w ? h : w;
	l->zoom = (128 + small - 1) / small; /* frames at least 128 pixels a side */
	const long fw = (long)w * l->zoom, fh = (long)h * l->zoom;
	/* 2^16 pixels a side is what common PNG readers take; 2^28 pixels
	 * (768 MiB of RGB) bounds the memory (real SEVIR frames, 384 x 384,
	 * make 4.8k x 1.3k) */
	if (fw * (ncols + 1) >= 1L << 16 || fh * 4 >= 1L << 16 || fw * (ncols + 1) * fh * 4 >= 1L << 28)
		return starnn_error(STARNN_EINVAL,
		                    "forecast_layout: %d columns of %ld x %ld-pixel frames make too large a picture", ncols,
		                    fh, fw);
	const int s = fw < 256 ? 2 : fw < 512 ? 3 : 4; /* glyph scale: readable at the frames' size */
	const int ts = s + 1;                          /* the title's */
	const int th = 7 * s;                          /* text height */
	const int m = 5 * s, pad = 2 * s, cg = 3 * s, rg = 5 * s;

	static const char *row_label[3] = {"INPUT", "TRUTH", "FORECAST"};
	int lw = 0;
	for (int r = 0; r < 3; r++)
		lw = text_width(row_label[r], s) > lw ? text_width(row_label[r], s) : lw;
	/* column width: the frame or its widest title */
	int cw = (int)fw;
	char lab[24];
	for (int c = 0; c < ncols; c++) {
		minutes_label(lab, sizeof lab, (c + 1) * SEVIR_FRAME_MINUTES);
		cw = text_width(lab, s) > cw ? text_width(lab, s) : cw;
		minutes_label(lab, sizeof lab, -(nin - 1 - c) * SEVIR_FRAME_MINUTES);
		cw = c < nin && text_width(lab, s) > cw ? text_width(lab, s) : cw;
	}

	/* 1 title + 3 row labels + 2 x ncols column titles + 2 x ncols + nin
	 * frames + bar + its title + VIL_NBOUNDS + 1 labels */
	const int cap = 1 + 3 + 2 * ncols + 2 * ncols + nin + 1 + 1 + VIL_NBOUNDS + 1;
	l->boxes = calloc((size_t)cap, sizeof *l->boxes);
	if (!l->boxes)
		return starnn_error(STARNN_ENOMEM, "forecast_layout: out of memory");
	int rc = 0;
	char title[24];
	snprintf(title, sizeof title, "SAMPLE %d", sample);
	rc = add_text(l, cap, m, m, ts, title);

	const int gx = m + lw + 2 * pad; /* the grid's left edge */
	int y = m + 7 * ts + rg;
	int bar_top = 0, grid_bottom = 0;
	for (int r = 0; r < 3 && rc == 0; r++) {
		int titled = r < 2; /* the forecast row has the truth's times */
		int fy = y + (titled ? th + pad : 0);
		int n = r == 0 ? nin : ncols;
		for (int c = 0; c < n && rc == 0; c++) {
			int cx = gx + c * (cw + cg);
			if (titled) {
				minutes_label(lab, sizeof lab,
				              r == 0 ? -(nin - 1 - c) * SEVIR_FRAME_MINUTES : (c + 1) * SEVIR_FRAME_MINUTES);
				rc = add_text(l, cap, cx + (cw - text_width(lab, s)) / 2, y, s, lab);
			}
			struct forecast_box f = {.kind = FORECAST_FRAME, .x = cx + (cw - (int)fw) / 2, .y = fy, .w = (int)fw,
			                         .h = (int)fh, .row = r, .frame = r == 0 ? in_frames - nin + c : c};
			if (rc == 0)
				rc = add_box(l, cap, f);
		}
		if (rc == 0)
			rc = add_text(l, cap, gx - 2 * pad - text_width(row_label[r], s), fy + ((int)fh - th) / 2, s,
			              row_label[r]);
		if (r == 0)
			bar_top = fy;
		y = fy + (int)fh + (r == 0 ? rg : r == 1 ? cg : 0);
		grid_bottom = fy + (int)fh;
	}

	/* The colour bar: VIL_NBOUNDS classes from 0 up, equal heights, each
	 * boundary labelled at its height (so the labels stick out half a text
	 * height above and below it: the bar is that much shorter than the
	 * rows, its title clear of the top label); at least a text height and
	 * a gap per class so that the labels never touch. */
	const int bx = gx + ncols * (cw + cg) - cg + 3 * pad, bw = 6 * s;
	const int frames_top = bar_top;
	bar_top += th / 2;
	int bh = grid_bottom - th / 2 - bar_top;
	if (bh < VIL_NBOUNDS * (th + 2 * s))
		bh = VIL_NBOUNDS * (th + 2 * s);
	struct forecast_box bar = {.kind = FORECAST_COLOUR_BAR, .x = bx, .y = bar_top, .w = bw, .h = bh, .row = -1,
	                           .frame = -1};
	if (rc == 0)
		rc = add_box(l, cap, bar);
	if (rc == 0)
		rc = add_text(l, cap, bx, frames_top - th - pad, s, "VIL"); /* beside the column titles */
	int right = bx + text_width("VIL", s);
	if (m + text_width(title, ts) > right) /* a long sample number over a narrow picture */
		right = m + text_width(title, ts);
	for (int k = 0; k <= VIL_NBOUNDS && rc == 0; k++) {
		snprintf(lab, sizeof lab, "%d", k == 0 ? 0 : (int)vil_bounds[k - 1]);
		int yb = bar_top + bh - (int)((long)k * bh / VIL_NBOUNDS);
		rc = add_text(l, cap, bx + bw + 2 * s, yb - th / 2, s, lab);
		int r2 = bx + bw + 2 * s + text_width(lab, s);
		right = r2 > right ? r2 : right;
	}
	int bottom = bar_top + bh + th / 2 > grid_bottom ? bar_top + bh + th / 2 : grid_bottom;
	l->width = right + m;
	l->height = bottom + m;
	if (rc < 0)
		forecast_layout_free(l);
	return rc;
}

int forecast_png(const char *dir, int sample, const float *x, int in_frames, const float *y, const float *pred,
                 int lead_times, int h, int w)
{
	if (!dir || !dir[0] || !x || !y || !pred || in_frames <= 0 || lead_times <= 0 || h <= 0 || w <= 0 || sample < 0)
		return starnn_error(STARNN_EINVAL,
		                    "forecast_png: bad arguments (dir %s, sample %d, %d input frames, %d lead times, %d x %d)",
		                    dir ? dir : "(null)", sample, in_frames, lead_times, h, w);
	char name[4096];
	if (snprintf(name, sizeof name, "%s/sample%d.png", dir, sample) >= (int)sizeof name)
		return starnn_error(STARNN_EINVAL, "forecast_png: directory name too long: %s", dir);
	struct forecast_layout l;
	STARNN_CHECK(forecast_layout_make(&l, sample, in_frames, lead_times, h, w));
	int rc = make_dirs(dir);
	struct canvas c = {.width = l.width, .height = l.height};
	c.rgb = rc == 0 ? malloc((size_t)c.width * c.height * 3) : NULL;
	if (rc == 0 && !c.rgb)
		rc = starnn_error(STARNN_ENOMEM, "forecast_png: out of memory for %d x %d pixels", c.width, c.height);
	if (rc < 0) {
		forecast_layout_free(&l);
		return rc;
	}
	memset(c.rgb, 255, (size_t)c.width * c.height * 3);
	static const unsigned char ink[3] = {30, 30, 30};
	float bounds_norm[VIL_NBOUNDS];
	for (int k = 0; k < VIL_NBOUNDS; k++)
		bounds_norm[k] = sevir_normalise(vil_bounds[k]);
	const size_t hw = (size_t)h * w;
	const int z = l.zoom;
	for (int i = 0; i < l.nboxes; i++) {
		const struct forecast_box *b = &l.boxes[i];
		if (b->kind == FORECAST_TEXT) {
			text(&c, b->x, b->y, b->scale, b->text, ink);
		} else if (b->kind == FORECAST_FRAME) {
			const float *f = (b->row == 0 ? x : b->row == 1 ? y : pred) + (size_t)b->frame * hw;
			rect(&c, b->x - 1, b->y - 1, b->w + 2, b->h + 2, ink); /* the border, then the frame over it */
			for (int r = 0; r < h; r++)
				for (int q = 0; q < w; q++)
					rect(&c, b->x + q * z, b->y + r * z, z, z, vil_colour_norm(f[(size_t)r * w + q], bounds_norm));
		} else { /* the colour bar, bottom up, with a tick at each boundary */
			rect(&c, b->x - 1, b->y - 1, b->w + 2, b->h + 2, ink);
			for (int k = 0; k < VIL_NBOUNDS; k++) {
				int y1 = b->y + b->h - (int)((long)k * b->h / VIL_NBOUNDS);
				int y0 = b->y + b->h - (int)((long)(k + 1) * b->h / VIL_NBOUNDS);
				rect(&c, b->x, y0, b->w, y1 - y0, vil_colours[k]);
			}
			/* ticks s long (the bar is 6 s wide), t thick, before the labels */
			int s = b->w / 6, t = s / 2 > 1 ? s / 2 : 1;
			for (int k = 0; k <= VIL_NBOUNDS; k++)
				rect(&c, b->x + b->w + 1, b->y + b->h - (int)((long)k * b->h / VIL_NBOUNDS) - t / 2, s, t, ink);
		}
	}
	rc = write_png(name, &c);
	free(c.rgb);
	forecast_layout_free(&l);
	return rc;
}
