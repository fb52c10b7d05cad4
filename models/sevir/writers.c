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
#include <sys/stat.h>
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
	/* mkstemp makes it 0600: the file gets the mode a plain create would
	 * (0666 less the umask) */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
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

/* A 4-D N x size x size x frames dataset in one of the storages of
 * sevir.h: SEVIR_STORAGE_TILES chunks of 1 x c x c x frames, c = min(size,
 * 64) (not compressed: gzip makes the files 3-7x smaller but reading 3-5x
 * slower, zlib dominating a batch read, and the loader shares the cores with
 * training); SEVIR_STORAGE_OFFICIAL the layout h5py gives the datasets of
 * the SEVIR authors' make_nowcast_dataset.py (created from an array with
 * maxshape (None, H, W, F): first dimension unlimited, chunks of h5py's
 * guess, official_chunks); SEVIR_STORAGE_CONTIGUOUS no chunks. */
static void official_chunks(const hsize_t *dims, size_t typesize, hsize_t *chunk)
{
	/* h5py's guess_chunk: a target chunk size of 16 KiB x 2^log10(dataset
	 * MiB), within [8 KiB, 1 MiB]; dimensions halved in turn (rounded up)
	 * until the chunk is under the target or within 50% of it, and under
	 * 1 MiB */
	double c[4], bytes = (double)typesize;
	for (int k = 0; k < 4; k++)
		bytes *= (double)(c[k] = (double)dims[k]);
	double target = 16.0 * 1024 * pow(2.0, log10(bytes / (1024.0 * 1024)));
	target = target > 1024.0 * 1024 ? 1024.0 * 1024 : target < 8.0 * 1024 ? 8.0 * 1024 : target;
	for (int idx = 0;; idx++) {
		double cb = c[0] * c[1] * c[2] * c[3] * (double)typesize;
		if ((cb < target || fabs(cb - target) / target < 0.5) && cb < 1024.0 * 1024)
			break;
		if (c[0] * c[1] * c[2] * c[3] == 1)
			break;
		c[idx % 4] = ceil(c[idx % 4] / 2.0);
	}
	for (int k = 0; k < 4; k++)
		chunk[k] = (hsize_t)c[k];
}

static hid_t create_nhwc(hid_t file, const char *name, hid_t type, int n, int size, int frames,
                         enum sevir_storage storage)
{
	hsize_t dims[4] = {(hsize_t)n, (hsize_t)size, (hsize_t)size, (hsize_t)frames};
	hsize_t maxdims[4] = {storage == SEVIR_STORAGE_OFFICIAL ? H5S_UNLIMITED : dims[0], dims[1], dims[2], dims[3]};
	hsize_t c = size < 64 ? (hsize_t)size : 64;
	hsize_t chunk[4] = {1, c, c, (hsize_t)frames};
	if (storage == SEVIR_STORAGE_OFFICIAL)
		official_chunks(dims, H5Tget_size(type), chunk);
	hid_t ds;
	H5E_BEGIN_TRY
	{
		hid_t sp = H5Screate_simple(4, dims, maxdims);
		hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
		if (storage != SEVIR_STORAGE_CONTIGUOUS)
			H5Pset_chunk(dcpl, 4, chunk);
		/* room for the chunks a sample touches while the writer goes
		 * sample by sample (official chunks span several samples) */
		hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
		H5Pset_chunk_cache(dapl, 12421, 64u << 20, 1.0);
		ds = H5Dcreate2(file, name, type, sp, H5P_DEFAULT, dcpl, dapl);
		H5Pclose(dapl);
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

/* The training / test boundary of the nowcast split (catalog.c): an event
 * of exactly this time is a training event. */
#define SPLIT_TIME "2019-06-01 00:00:00"

static void event_time(int e, int nevents, uint64_t seed, char *buf, size_t n)
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
}

/* The event's time; the first complete event (pct_missing 0) dated at or
 * after the split is dated at the split itself (a training event on the
 * boundary, which a reader must put where the reference code does). */
static void event_times(int nevents, uint64_t seed, const double *missing, char (*when)[32])
{
	int boundary = 0;
	for (int e = 0; e < nevents; e++) {
		event_time(e, nevents, seed, when[e], sizeof when[e]);
		if (!boundary && missing[e] == 0 && strcmp(when[e], SPLIT_TIME) >= 0) {
			snprintf(when[e], sizeof when[e], "%s", SPLIT_TIME);
			boundary = 1;
		}
	}
}

/* The catalog's rows of the events: each event once as vil (file_name
 * `vil_name`, the event file's path relative to the catalog's directory,
 * file_index its row; pct_missing as written), and, as the real catalog
 * does, its rows of other image types (ir069, ir107, and lght for every
 * other event) in their own files, which this writer does not write: a
 * nowcast reader skips them by img_type. */
static int write_catalog(const char *catalog_path, const char *vil_name, int nevents, uint64_t seed,
                         const uint8_t *dmin, const uint8_t *dmax, const double *missing, int size)
{
	char(*when)[32] = malloc((size_t)nevents * sizeof *when);
	if (!when)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	event_times(nevents, seed, missing, when);
	struct tmpfile t;
	int rc = tmp_create(&t, catalog_path);
	if (rc) {
		free(when);
		return rc;
	}
	FILE *f = fopen(t.tmp, "w");
	if (!f) {
		int e = errno;
		tmp_discard(&t);
		free(when);
		return starnn_error(STARNN_EIO, "cannot write %s: %s", catalog_path, strerror(e));
	}
	char offsets[49 * 6];
	size_t o = 0;
	for (int k = 0; k < SEVIR_FRAMES; k++)
		o += (size_t)snprintf(offsets + o, sizeof offsets - o, "%s%d", k ? ":" : "", -120 + 5 * k);
	const char *proj = "+proj=laea +lat_0=38 +lon_0=-98 +units=m +a=6370997.0 +ellps=sphere ";
	fprintf(f, "id,file_name,file_index,img_type,time_utc,minute_offsets,episode_id,event_id,event_type,llcrnrlat,"
	           "llcrnrlon,urcrnrlat,urcrnrlon,proj,size_x,size_y,height_m,width_m,data_min,data_max,pct_missing\n");
	static const char *types[] = {"Hail", "Thunderstorm Wind", "\"Thunderstorm Wind, Hail\"", "Flash Flood",
	                              "Heavy Rain", "Tornado"};
	for (int e = 0; e < nevents; e++) {
		struct rng r = {mix64(seed ^ 0x636174616c6f67ull) ^ mix64((uint64_t)e)};
		const int year = atoi(when[e]);
		double lat = rng_uniform(&r, 28, 46), lon = rng_uniform(&r, -110, -75);
		double dlat = size * 1000 / 111000.0, dlon = dlat / cos(lat * M_PI / 180);
		long episode = 120000 + (long)rng_below(&r, 20000), event = 750000 + (long)rng_below(&r, 100000);
		const char *type = types[rng_below(&r, 6)];
		char geo[512];
		snprintf(geo, sizeof geo, "%ld.0,%ld.0,%s,%.6f,%.6f,%.6f,%.6f,%s,%d,%d,%d.0,%d.0", episode, event, type, lat,
		         lon, lat + dlat, lon + dlon, proj, size, size, size * 1000, size * 1000);
		/* the other image types of the event, in their own files: never selected */
		fprintf(f, "S%d,ir069/%d/SEVIR_IR069_STORMEVENTS_%d_0101_0630.h5,%d,ir069,%s,%s,%s,-7000,-1000,0.0\n",
		        800000 + e, year, year, e, when[e], offsets, geo);
		fprintf(f, "S%d,%s,%d,vil,%s,%s,%s,%d,%d,%.6f\n", 800000 + e, vil_name, e, when[e], offsets, geo, dmin[e],
		        dmax[e], missing[e]);
		fprintf(f, "S%d,ir107/%d/SEVIR_IR107_STORMEVENTS_%d_0101_0630.h5,%d,ir107,%s,%s,%s,-6500,-900,0.0\n",
		        800000 + e, year, year, e, when[e], offsets, geo);
		if (e % 2 == 0)
			fprintf(f, "S%d,lght/%d/SEVIR_LGHT_ALLEVENTS_%d_0101_0701.h5,%d,lght,%s,%s,%s,0,0,0.0\n", 800000 + e,
			        year, year, e, when[e], offsets, geo);
	}
	free(when);
	int bad = fflush(f) != 0 || ferror(f);
	bad |= fclose(f) != 0;
	if (bad) {
		tmp_discard(&t);
		return starnn_error(STARNN_EIO, "cannot write %s", catalog_path);
	}
	rc = tmp_commit(&t);
	tmp_discard(&t);
	return rc;
}

/* The path of file h5_path relative to the directory of catalog_path (the
 * data home: a loader opens data_home + '/' + file_name), into *out
 * (malloc'd). The file must lie in that directory or under it. */
static int relative_to_catalog(const char *h5_path, const char *catalog_path, char **out)
{
	*out = NULL;
	char *hcopy = strdup(h5_path), *ccopy = strdup(catalog_path);
	char *hdir = NULL, *cdir = NULL;
	int rc = 0;
	if (!hcopy || !ccopy) {
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
		goto out;
	}
	hdir = realpath(dirname(hcopy), NULL);
	cdir = realpath(dirname(ccopy), NULL);
	if (!hdir || !cdir) {
		rc = starnn_error(STARNN_EIO, "cannot resolve the directory of %s: %s", !hdir ? h5_path : catalog_path,
		                  strerror(errno));
		goto out;
	}
	size_t nc = strlen(cdir);
	const char *below = NULL;
	if (!strcmp(hdir, cdir))
		below = "";
	else if (!strncmp(hdir, cdir, nc) && (hdir[nc] == '/' || nc == 1))
		below = hdir + (nc == 1 ? 1 : nc + 1);
	if (!below) {
		rc = starnn_error(STARNN_EINVAL,
		                  "%s is not in the directory of %s nor under it: the catalog's file_name is relative "
		                  "to that directory (the data home)",
		                  h5_path, catalog_path);
		goto out;
	}
	free(hcopy);
	hcopy = strdup(h5_path);
	if (!hcopy || asprintf(out, "%s%s%s", below, *below ? "/" : "", basename(hcopy)) < 0) {
		*out = NULL;
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
	}
out:
	free(hcopy);
	free(ccopy);
	free(hdir);
	free(cdir);
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
	char *vil_name = NULL;
	int rc = 0;
	if (!frames || !hwc || !dmin || !dmax || !missing || !ids) {
		rc = starnn_error(STARNN_ENOMEM, "sevir_write_raw: out of memory");
		goto out;
	}
	/* before anything is written: the file must be under the catalog's directory */
	rc = relative_to_catalog(h5_path, catalog_path, &vil_name);
	if (rc)
		goto out;
	rc = h5_create(&t, h5_path, &file);
	if (rc)
		goto out;
	vil = create_nhwc(file, "vil", H5T_STD_U8LE, nevents, size, SEVIR_FRAMES, SEVIR_STORAGE_TILES);
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
	rc = write_catalog(catalog_path, vil_name, nevents, seed, dmin, dmax, missing, size);
out:
	SEVIR_H5_CLOSE(id, vil, sp, st, file);
	tmp_discard(&t);
	free(frames);
	free(hwc);
	free(dmin);
	free(dmax);
	free(missing);
	free(ids);
	free(vil_name);
	free(catalog_alloc);
	return rc;
}

/* The frames of prepared sample i (T x size x size raw values, frame-major):
 * from the synthetic generator, or from a raw file's split. */
struct prepared_source {
	int nsamples, size;
	uint64_t seed;      /* synthetic: sample i is window i % 3 of event i / 3 */
	sevir_data *raw;    /* else: sample i of this source (a raw file's split) */
	uint8_t *block;     /* raw: sevir_raw_read_region's buffer */
	float *region;      /* raw: its region */
};

static int source_frames(struct prepared_source *src, int i, uint8_t *frames)
{
	const int T = SEVIR_IN_FRAMES + SEVIR_OUT_FRAMES;
	const int windows = (SEVIR_FRAMES - T) / SEVIR_OUT_FRAMES + 1;
	if (!src->raw) {
		sevir_synthetic_frames(src->seed, i / windows, src->size, (i % windows) * SEVIR_OUT_FRAMES, T, frames);
		return 0;
	}
	int64_t event;
	int t0;
	STARNN_CHECK(sevir_sample_source(src->raw, i, &event, &t0));
	STARNN_CHECK(sevir_raw_read_region(src->raw, event, 0, 0, src->size, t0, T, src->block, src->region));
	for (size_t k = 0; k < (size_t)T * src->size * src->size; k++)
		frames[k] = (uint8_t)src->region[k]; /* 0..254: the reader refuses missing pixels */
	return 0;
}

/* HWC values of `nf` frames starting at frame f0 of frames (T x nn) in the
 * layout's type into buf. */
static void frames_to_hwc(const uint8_t *frames, size_t nn, int f0, int nf, enum sevir_value_type type, void *buf)
{
	for (size_t p = 0; p < nn; p++)
		for (int f = 0; f < nf; f++) {
			uint8_t v = frames[(size_t)(f0 + f) * nn + p];
			size_t k = p * (size_t)nf + (size_t)f;
			if (type == SEVIR_UINT8)
				((uint8_t *)buf)[k] = v;
			else if (type == SEVIR_FLOAT64)
				((double *)buf)[k] = v;
			else
				((float *)buf)[k] = v;
		}
}

static int write_prepared(const char *h5_path, struct prepared_source *src, const struct sevir_prepared_layout *l)
{
	const int nsamples = src->nsamples, size = src->size;
	if (l->type != SEVIR_FLOAT32 && l->type != SEVIR_UINT8 && l->type != SEVIR_FLOAT64)
		return starnn_error(STARNN_EINVAL, "sevir_write_prepared: unknown value type %d", (int)l->type);
	if (l->storage != SEVIR_STORAGE_TILES && l->storage != SEVIR_STORAGE_OFFICIAL &&
	    l->storage != SEVIR_STORAGE_CONTIGUOUS)
		return starnn_error(STARNN_EINVAL, "sevir_write_prepared: unknown storage %d", (int)l->storage);
	const hid_t ftype = l->type == SEVIR_UINT8 ? H5T_STD_U8LE : l->type == SEVIR_FLOAT64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE;
	const hid_t mtype = l->type == SEVIR_UINT8    ? H5T_NATIVE_UCHAR
	                    : l->type == SEVIR_FLOAT64 ? H5T_NATIVE_DOUBLE
	                                               : H5T_NATIVE_FLOAT;
	const size_t esize = l->type == SEVIR_UINT8 ? 1 : l->type == SEVIR_FLOAT64 ? 8 : 4;
	const size_t nn = (size_t)size * size;
	const int T = SEVIR_IN_FRAMES + SEVIR_OUT_FRAMES;
	uint8_t *frames = malloc(nn * T);
	void *in = malloc(nn * SEVIR_IN_FRAMES * esize), *out = malloc(nn * SEVIR_OUT_FRAMES * esize);
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
	dsi = create_nhwc(file, "IN", ftype, nsamples, size, SEVIR_IN_FRAMES, l->storage);
	dso = create_nhwc(file, "OUT", ftype, nsamples, size, SEVIR_OUT_FRAMES, l->storage);
	if (dsi < 0 || dso < 0) {
		rc = starnn_error(STARNN_EIO, "%s: cannot create the HDF5 file", h5_path);
		goto out;
	}
	for (int i = 0; i < nsamples; i++) {
		rc = source_frames(src, i, frames);
		if (rc)
			goto out;
		frames_to_hwc(frames, nn, 0, SEVIR_IN_FRAMES, l->type, in);
		frames_to_hwc(frames, nn, SEVIR_IN_FRAMES, SEVIR_OUT_FRAMES, l->type, out);
		if (sevir_h5_write_block(dsi, mtype, i, 0, 0, size, SEVIR_IN_FRAMES, in) < 0 ||
		    sevir_h5_write_block(dso, mtype, i, 0, 0, size, SEVIR_OUT_FRAMES, out) < 0) {
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

int sevir_write_prepared_as(const char *h5_path, int nsamples, int size, uint64_t seed,
                            const struct sevir_prepared_layout *l)
{
	if (nsamples < 1 || size < 8 || size > 4096)
		return starnn_error(STARNN_EINVAL,
		                    "sevir_write_prepared: %d samples of %dx%d: need >= 1 samples, size 8..4096", nsamples,
		                    size, size);
	struct prepared_source src = {.nsamples = nsamples, .size = size, .seed = seed};
	return write_prepared(h5_path, &src, l);
}

int sevir_write_prepared(const char *h5_path, int nsamples, int size, uint64_t seed)
{
	const struct sevir_prepared_layout l = {SEVIR_FLOAT32, SEVIR_STORAGE_TILES};
	return sevir_write_prepared_as(h5_path, nsamples, size, seed, &l);
}

int sevir_write_prepared_from(const char *h5_path, const char *raw_path, const char *catalog, enum sevir_split split,
                              const struct sevir_prepared_layout *l)
{
	struct sevir_options o;
	sevir_options_init(&o);
	o.path = raw_path;
	o.catalog = catalog;
	o.split = split;
	sevir_data *d;
	STARNN_CHECK(sevir_open(&d, &o));
	int rc = 0;
	if (d->kind != KIND_RAW) {
		rc = starnn_error(STARNN_EINVAL, "%s: not a raw SEVIR event file (no dataset `vil`)", raw_path);
		sevir_close(d);
		return rc;
	}
	const size_t nn = (size_t)d->native * d->native;
	struct prepared_source src = {.nsamples = d->count, .size = d->native, .raw = d,
	                              .block = malloc(nn * SEVIR_FRAMES),
	                              .region = malloc(nn * (SEVIR_IN_FRAMES + SEVIR_OUT_FRAMES) * sizeof(float))};
	if (!src.block || !src.region)
		rc = starnn_error(STARNN_ENOMEM, "sevir_write_prepared_from: out of memory");
	else
		rc = write_prepared(h5_path, &src, l);
	free(src.block);
	free(src.region);
	sevir_close(d);
	return rc;
}
