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

#include "models/sevir/checkpoint.h"
#include "models/sevir/output.h"
#include "models/sevir/sevir.h"
#include "runtime/error.h"

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
		/* NCHW normalised -> HWC raw */
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

int forecast_png(const char *dir, int sample, const float *x_last, const float *y, const float *pred,
                 int lead_times, int h, int w)
{
	if (!dir || !dir[0] || !x_last || !y || !pred || lead_times <= 0 || h <= 0 || w <= 0 || sample < 0)
		return starnn_error(STARNN_EINVAL, "forecast_png: bad arguments (dir %s, sample %d, %d lead times, %d x %d)",
		                    dir ? dir : "(null)", sample, lead_times, h, w);
	STARNN_CHECK(make_dirs(dir));

	/* Layout: margin, a title line, three panels a gap apart, the colour
	 * bar with its labels; everything scaled with the image. */
	const int s = w >= 256 ? 2 : 1;            /* font scale */
	const int m = 6 * s, gap = 8 * s;          /* margin, gap between panels */
	const int th = 7 * s;                      /* text height */
	const int py = m + th + 4 * s;             /* top of the panels */
	const int cbx = m + 3 * w + 2 * gap + 2 * gap, cbw = 10 * s;
	struct canvas c;
	c.width = cbx + cbw + 4 * s + 3 * 6 * s + m;
	c.height = py + h + m + (h < 4 * th ? 4 * th - h : 0);
	c.rgb = malloc((size_t)c.width * c.height * 3);
	if (!c.rgb)
		return starnn_error(STARNN_ENOMEM, "forecast_png: out of memory");
	static const unsigned char ink[3] = {30, 30, 30};
	float bounds_norm[VIL_NBOUNDS];
	for (int k = 0; k < VIL_NBOUNDS; k++)
		bounds_norm[k] = sevir_normalise(vil_bounds[k]);

	int rc = 0;
	size_t hw = (size_t)h * w;
	for (int t = 0; t < lead_times && rc == 0; t++) {
		memset(c.rgb, 255, (size_t)c.width * c.height * 3);
		const float *panels[3] = {x_last, y + t * hw, pred + t * hw};
		char title[3][40];
		snprintf(title[0], sizeof title[0], "LAST INPUT");
		snprintf(title[1], sizeof title[1], "TRUTH +%d MIN", 5 * (t + 1));
		snprintf(title[2], sizeof title[2], "FORECAST +%d MIN", 5 * (t + 1));
		for (int p = 0; p < 3; p++) {
			int x0 = m + p * (w + gap);
			text(&c, x0, m, s, title[p], ink);
			rect(&c, x0 - 1, py - 1, w + 2, h + 2, ink); /* frame */
			for (int i = 0; i < h; i++)
				for (int j = 0; j < w; j++)
					put(&c, x0 + j, py + i, vil_colour_norm(panels[p][(size_t)i * w + j], bounds_norm));
		}
		/* colour bar: the 10 classes from 0 up, equal heights, labelled at
		 * their boundaries */
		text(&c, cbx - s, m, s, "VIL", ink);
		rect(&c, cbx - 1, py - 1, cbw + 2, h + 2, ink);
		for (int k = 0; k <= VIL_NBOUNDS - 1; k++) {
			int y1 = py + h - (int)((long)k * h / VIL_NBOUNDS);
			int y0 = py + h - (int)((long)(k + 1) * h / VIL_NBOUNDS);
			rect(&c, cbx, y0, cbw, y1 - y0, vil_colours[k]);
		}
		for (int k = 0; k <= VIL_NBOUNDS; k++) {
			char lab[8];
			snprintf(lab, sizeof lab, "%d", k == 0 ? 0 : (int)vil_bounds[k - 1]);
			int yb = py + h - (int)((long)k * h / VIL_NBOUNDS) - th / 2;
			yb = yb < py - th / 2 ? py - th / 2 : yb;
			text(&c, cbx + cbw + 3 * s, yb, s, lab, ink);
		}
		char name[4096];
		if (snprintf(name, sizeof name, "%s/sample%d_lead%d.png", dir, sample, t + 1) >= (int)sizeof name) {
			rc = starnn_error(STARNN_EINVAL, "forecast_png: directory name too long: %s", dir);
			break;
		}
		rc = write_png(name, &c);
	}
	free(c.rgb);
	return rc;
}
