/* Writers of synthetic SEVIR data in the real layouts (see sevir.h): raw
 * event files with their CATALOG.csv, and prepared files, each written
 * atomically (temporary file, fsync, rename). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "models/sevir/h5.h"
#include "models/sevir/internal.h"
#include "runtime/base/error.h"

struct tmpfile {
	char *path, *tmp;
};

static int tmp_create(struct tmpfile *t, const char *path)
{
	t->path = NULL;
	t->tmp = NULL;
	if (asprintf(&t->tmp, "%s.tmp.XXXXXX", path) < 0) {
		t->tmp = NULL;
		return starnn_error(STARNN_ENOMEM, "out of memory");
	}
	int fd = mkstemp(t->tmp);
	if (fd < 0) {
		int e = errno;
		free(t->tmp);
		t->tmp = NULL;
		return starnn_error(STARNN_EIO, "cannot create a temporary file beside %s: %s", path, strerror(e));
	}
	close(fd);
	t->path = strdup(path);
	if (!t->path) {
		unlink(t->tmp);
		free(t->tmp);
		t->tmp = NULL;
		return starnn_error(STARNN_ENOMEM, "out of memory");
	}
	return 0;
}

/* fsync the temporary file, rename it over the target, fsync the directory. */
static int tmp_commit(struct tmpfile *t)
{
	int fd = open(t->tmp, O_RDONLY);
	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return starnn_error(STARNN_EIO, "%s: cannot sync: %s", t->tmp, strerror(e));
	}
	close(fd);
	if (rename(t->tmp, t->path) != 0)
		return starnn_error(STARNN_EIO, "cannot rename %s to %s: %s", t->tmp, t->path, strerror(errno));
	char *dir = strdup(t->path);
	if (dir) {
		int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		free(dir);
	}
	free(t->tmp);
	t->tmp = NULL;
	return 0;
}

static void tmp_discard(struct tmpfile *t)
{
	if (t->tmp) {
		unlink(t->tmp);
		free(t->tmp);
	}
	free(t->path);
	t->tmp = t->path = NULL;
}

/* A chunked (1 x c x c x frames) dataset. Not compressed: gzip makes the
 * files 3-7x smaller but reading 3-5x slower (zlib dominated a batch read),
 * and the loader shares the cores with training. */
static hid_t create_nhwc(hid_t file, const char *name, hid_t type, int n, int size, int frames)
{
	hsize_t dims[4] = {(hsize_t)n, (hsize_t)size, (hsize_t)size, (hsize_t)frames};
	hsize_t c = size < 64 ? (hsize_t)size : 64;
	hsize_t chunk[4] = {1, c, c, (hsize_t)frames};
	hid_t ds;
	H5E_BEGIN_TRY
	{
		hid_t sp = H5Screate_simple(4, dims, NULL);
		hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
		H5Pset_chunk(dcpl, 4, chunk);
		ds = H5Dcreate2(file, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
		H5Pclose(dcpl);
		H5Sclose(sp);
	}
	H5E_END_TRY;
	return ds;
}

/* The HDF5 file of a writer: created at a temporary name beside h5_path
 * (t), renamed over h5_path once complete (h5_commit). */
static int h5_create(struct tmpfile *t, const char *h5_path, hid_t *file)
{
	STARNN_CHECK(tmp_create(t, h5_path));
	H5E_BEGIN_TRY
	{
		*file = H5Fcreate(t->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	}
	H5E_END_TRY;
	if (*file < 0)
		return starnn_error(STARNN_EIO, "%s: cannot create the HDF5 file", h5_path);
	return 0;
}

/* Flushes and closes *file (-1 after, whatever happens), then puts it in
 * place (tmp_commit). */
static int h5_commit(struct tmpfile *t, const char *h5_path, hid_t *file)
{
	int bad = H5Fflush(*file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(*file) < 0;
	*file = -1;
	if (bad)
		return starnn_error(STARNN_EIO, "%s: cannot close the HDF5 file", h5_path);
	return tmp_commit(t);
}

/* Events of the raw writer: which ones have missing data (listed with pct_missing > 0). */
static int event_has_missing(int e, int nevents)
{
	return nevents >= 4 && e % 5 == 3;
}

static void event_time(int e, int nevents, uint64_t seed, char *buf, size_t n, int *year)
{
	/* spread over 2018-01-01 .. 2019-12-31 in event order (2019-06-01 is 70% of the way) */
	struct tm base = {.tm_year = 118, .tm_mon = 0, .tm_mday = 1};
	time_t t0 = timegm(&base);
	struct rng r = {mix64(seed ^ 0x74696d65ull) ^ mix64((uint64_t)e)};
	int day = (int)((e + 0.5) / nevents * 730);
	int minute = (int)rng_below(&r, 24 * 12) * 5;
	time_t t = t0 + (time_t)day * 86400 + (time_t)minute * 60;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	*year = tm.tm_year + 1900;
}

static int write_catalog(const char *catalog_path, const char *h5_base, int nevents, uint64_t seed,
                         const uint8_t *dmin, const uint8_t *dmax, const double *missing, int size)
{
	struct tmpfile t;
	STARNN_CHECK(tmp_create(&t, catalog_path));
	FILE *f = fopen(t.tmp, "w");
	if (!f) {
		int e = errno;
		tmp_discard(&t);
		return starnn_error(STARNN_EIO, "cannot write %s: %s", catalog_path, strerror(e));
	}
	char offsets[49 * 6];
	size_t o = 0;
	for (int k = 0; k < SEVIR_FRAMES; k++)
		o += (size_t)snprintf(offsets + o, sizeof offsets - o, "%s%d", k ? ":" : "", -120 + 5 * k);
	const char *proj = "+proj=laea +lat_0=38 +lon_0=-98 +units=m +a=6370997.0 +ellps=sphere ";
	const char *decoy = strcmp(h5_base, "SEVIR_VIL_RANDOMEVENTS_2019_0501_0831.h5")
	                    ? "SEVIR_VIL_RANDOMEVENTS_2019_0501_0831.h5" : "SEVIR_VIL_RANDOMEVENTS_2018_0501_0831.h5";
	fprintf(f, "id,file_name,file_index,img_type,time_utc,minute_offsets,episode_id,event_id,event_type,llcrnrlat,"
	           "llcrnrlon,urcrnrlat,urcrnrlon,proj,size_x,size_y,height_m,width_m,data_min,data_max,pct_missing\n");
	static const char *types[] = {"Hail", "Thunderstorm Wind", "\"Thunderstorm Wind, Hail\"", "Flash Flood",
	                              "Heavy Rain", "Tornado"};
	for (int e = 0; e < nevents; e++) {
		struct rng r = {mix64(seed ^ 0x636174616c6f67ull) ^ mix64((uint64_t)e)};
		char when[32];
		int year;
		event_time(e, nevents, seed, when, sizeof when, &year);
		double lat = rng_uniform(&r, 28, 46), lon = rng_uniform(&r, -110, -75);
		double dlat = size * 1000 / 111000.0, dlon = dlat / cos(lat * M_PI / 180);
		long episode = 120000 + (long)rng_below(&r, 20000), event = 750000 + (long)rng_below(&r, 100000);
		const char *type = types[rng_below(&r, 6)];
		char geo[512];
		snprintf(geo, sizeof geo, "%ld.0,%ld.0,%s,%.6f,%.6f,%.6f,%.6f,%s,%d,%d,%d.0,%d.0", episode, event, type, lat,
		         lon, lat + dlat, lon + dlon, proj, size, size, size * 1000, size * 1000);
		/* the other image types of the event, in their own files: never selected */
		fprintf(f, "S%d,ir069/%d/SEVIR_IR069_STORMEVENTS_%d_0101_0630.h5,%d,ir069,%s,%s,%s,-7000,-1000,0.0\n",
		        800000 + e, year, year, e, when, offsets, geo);
		fprintf(f, "S%d,vil/%d/%s,%d,vil,%s,%s,%s,%d,%d,%.6f\n", 800000 + e, year, h5_base, e, when, offsets,
		        geo, dmin[e], dmax[e], missing[e]);
		fprintf(f, "S%d,ir107/%d/SEVIR_IR107_STORMEVENTS_%d_0101_0630.h5,%d,ir107,%s,%s,%s,-6500,-900,0.0\n",
		        800000 + e, year, year, e, when, offsets, geo);
		if (e % 2 == 0)
			fprintf(f, "S%d,lght/%d/SEVIR_LGHT_ALLEVENTS_%d_0101_0701.h5,%d,lght,%s,%s,%s,0,0,0.0\n", 800000 + e,
			        year, year, e, when, offsets, geo);
		if (e % 4 == 1) /* a VIL event of another file */
			fprintf(f, "R%06d,vil/2019/%s,%d,vil,%s,%s,%s,0,200,0.0\n", 900000 + e, decoy, e, when, offsets, geo);
	}
	int bad = fflush(f) != 0 || ferror(f);
	bad |= fclose(f) != 0;
	if (bad) {
		tmp_discard(&t);
		return starnn_error(STARNN_EIO, "cannot write %s", catalog_path);
	}
	int rc = tmp_commit(&t);
	tmp_discard(&t);
	return rc;
}

int sevir_write_raw(const char *h5_path, const char *catalog_path, int nevents, int size, uint64_t seed)
{
	if (nevents < 1 || size < 8 || size > 4096)
		return starnn_error(STARNN_EINVAL, "sevir_write_raw: %d events of %dx%d: need >= 1 events, size 8..4096",
		                    nevents, size, size);
	char *catalog_alloc = NULL;
	if (!catalog_path) {
		char *dir = strdup(h5_path);
		if (!dir || asprintf(&catalog_alloc, "%s/CATALOG.csv", dirname(dir)) < 0) {
			free(dir);
			return starnn_error(STARNN_ENOMEM, "out of memory");
		}
		free(dir);
		catalog_path = catalog_alloc;
	}
	const size_t nn = (size_t)size * size;
	uint8_t *frames = malloc(nn * SEVIR_FRAMES), *hwc = malloc(nn * SEVIR_FRAMES);
	uint8_t *dmin = malloc((size_t)nevents), *dmax = malloc((size_t)nevents);
	double *missing = malloc((size_t)nevents * sizeof *missing);
	char *ids = malloc((size_t)nevents * 16);
	struct tmpfile t = {0};
	hid_t file = -1, vil = -1, id = -1, st = -1, sp = -1;
	int rc = 0;
	if (!frames || !hwc || !dmin || !dmax || !missing || !ids) {
		rc = starnn_error(STARNN_ENOMEM, "sevir_write_raw: out of memory");
		goto out;
	}
	rc = h5_create(&t, h5_path, &file);
	if (rc)
		goto out;
	vil = create_nhwc(file, "vil", H5T_STD_U8LE, nevents, size, SEVIR_FRAMES);
	if (vil < 0) {
		rc = starnn_error(STARNN_EIO, "%s: cannot create the HDF5 file", h5_path);
		goto out;
	}
	for (int e = 0; e < nevents; e++) {
		sevir_synthetic_frames(seed, e, size, 0, SEVIR_FRAMES, frames);
		if (event_has_missing(e, nevents)) { /* a radar outage: a corner missing for the first hour */
			int h = size / 4;
			for (int f = 0; f < 12; f++)
				for (int yy = 0; yy < h; yy++)
					memset(frames + f * nn + (size_t)yy * size, 255, (size_t)h);
			missing[e] = 100.0 * 12 * h * h / ((double)nn * SEVIR_FRAMES);
		} else {
			missing[e] = 0;
		}
		uint8_t lo = 255, hi = 0;
		for (size_t p = 0; p < nn; p++)
			for (int f = 0; f < SEVIR_FRAMES; f++) {
				uint8_t v = frames[(size_t)f * nn + p];
				hwc[p * SEVIR_FRAMES + f] = v;
				if (v != 255) {
					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
				}
			}
		dmin[e] = lo;
		dmax[e] = hi;
		if (sevir_h5_write_block(vil, H5T_NATIVE_UCHAR, e, 0, 0, size, SEVIR_FRAMES, hwc) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot write `vil` event %d", h5_path, e);
			goto out;
		}
		snprintf(ids + (size_t)e * 16, 16, "S%d", 800000 + e);
	}
	hsize_t n = (hsize_t)nevents;
	st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, 8);
	H5Tset_strpad(st, H5T_STR_NULLPAD);
	sp = H5Screate_simple(1, &n, NULL);
	id = H5Dcreate2(file, "id", st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	{ /* the ids as 8 bytes each, NUL-padded */
		char *packed = calloc((size_t)nevents, 8);
		if (!packed) {
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
			goto out;
		}
		for (int e = 0; e < nevents; e++)
			memcpy(packed + (size_t)e * 8, ids + (size_t)e * 16, strnlen(ids + (size_t)e * 16, 8));
		herr_t w = id < 0 ? -1 : H5Dwrite(id, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed);
		free(packed);
		if (w < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot write `id`", h5_path);
			goto out;
		}
	}
	H5Dclose(id);
	id = -1;
	H5Dclose(vil);
	vil = -1;
	rc = h5_commit(&t, h5_path, &file);
	if (rc)
		goto out;
	char *base = strdup(h5_path);
	if (!base) {
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
		goto out;
	}
	rc = write_catalog(catalog_path, basename(base), nevents, seed, dmin, dmax, missing, size);
	free(base);
out:
	SEVIR_H5_CLOSE(id, vil, sp, st, file);
	tmp_discard(&t);
	free(frames);
	free(hwc);
	free(dmin);
	free(dmax);
	free(missing);
	free(ids);
	free(catalog_alloc);
	return rc;
}

int sevir_write_prepared(const char *h5_path, int nsamples, int size, uint64_t seed)
{
	if (nsamples < 1 || size < 8 || size > 4096)
		return starnn_error(STARNN_EINVAL,
		                    "sevir_write_prepared: %d samples of %dx%d: need >= 1 samples, size 8..4096", nsamples,
		                    size, size);
	const size_t nn = (size_t)size * size;
	const int T = SEVIR_IN_FRAMES + SEVIR_OUT_FRAMES;
	uint8_t *frames = malloc(nn * T);
	float *in = malloc(nn * SEVIR_IN_FRAMES * sizeof *in), *out = malloc(nn * SEVIR_OUT_FRAMES * sizeof *out);
	struct tmpfile t = {0};
	hid_t file = -1, dsi = -1, dso = -1;
	int rc = 0;
	if (!frames || !in || !out) {
		rc = starnn_error(STARNN_ENOMEM, "sevir_write_prepared: out of memory");
		goto out;
	}
	rc = h5_create(&t, h5_path, &file);
	if (rc)
		goto out;
	dsi = create_nhwc(file, "IN", H5T_IEEE_F32LE, nsamples, size, SEVIR_IN_FRAMES);
	dso = create_nhwc(file, "OUT", H5T_IEEE_F32LE, nsamples, size, SEVIR_OUT_FRAMES);
	if (dsi < 0 || dso < 0) {
		rc = starnn_error(STARNN_EIO, "%s: cannot create the HDF5 file", h5_path);
		goto out;
	}
	const int windows = (SEVIR_FRAMES - T) / SEVIR_OUT_FRAMES + 1;
	for (int i = 0; i < nsamples; i++) {
		sevir_synthetic_frames(seed, i / windows, size, (i % windows) * SEVIR_OUT_FRAMES, T, frames);
		for (size_t p = 0; p < nn; p++) {
			for (int f = 0; f < SEVIR_IN_FRAMES; f++)
				in[p * SEVIR_IN_FRAMES + f] = frames[(size_t)f * nn + p];
			for (int f = 0; f < SEVIR_OUT_FRAMES; f++)
				out[p * SEVIR_OUT_FRAMES + f] = frames[(size_t)(SEVIR_IN_FRAMES + f) * nn + p];
		}
		if (sevir_h5_write_block(dsi, H5T_NATIVE_FLOAT, i, 0, 0, size, SEVIR_IN_FRAMES, in) < 0 ||
		    sevir_h5_write_block(dso, H5T_NATIVE_FLOAT, i, 0, 0, size, SEVIR_OUT_FRAMES, out) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot write sample %d", h5_path, i);
			goto out;
		}
	}
	H5Dclose(dsi);
	H5Dclose(dso);
	dsi = dso = -1;
	rc = h5_commit(&t, h5_path, &file);
out:
	SEVIR_H5_CLOSE(dsi, dso, file);
	tmp_discard(&t);
	free(frames);
	free(in);
	free(out);
	return rc;
}

