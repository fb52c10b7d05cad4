/* SEVIR data sources (see sevir.h): options, opening a source (synthetic,
 * or an HDF5 file whose kind is told by its datasets: raw.c, prepared.c),
 * and reading samples: the region of a sample (synth.c, raw.c,
 * prepared.c) brought to size (crop or block average) and normalised into
 * NCHW batches. */
#define _GNU_SOURCE
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "models/sevir/h5.h"
#include "models/sevir/internal.h"
#include "runtime/base/error.h"

void sevir_options_init(struct sevir_options *o)
{
	memset(o, 0, sizeof *o);
	o->path = "synthetic";
	o->split = SEVIR_TRAIN;
	o->resize = SEVIR_CROP;
	o->in_frames = SEVIR_IN_FRAMES;
	o->out_frames = SEVIR_OUT_FRAMES;
	o->synthetic_size = 128;
	o->seed = 1;
}

int sevir_count(const sevir_data *d)
{
	return d->count;
}
int sevir_size(const sevir_data *d)
{
	return d->size;
}
const char *sevir_describe(const sevir_data *d)
{
	return d->desc;
}

static void describe_resize(const sevir_data *d, char *buf, size_t n)
{
	if (d->size == d->native)
		snprintf(buf, n, "%dx%d", d->size, d->size);
	else
		snprintf(buf, n, "%dx%d -> %dx%d by %s", d->native, d->native, d->size, d->size,
		         d->resize == SEVIR_DOWNSAMPLE ? "downsampling"
		         : d->split == SEVIR_TEST   ? "centre crop"
		                                    : "random crop");
}

static void read_bufs_free(struct sevir_read_bufs *b)
{
	if (b) {
		free(b->region);
		free(b->scratch);
		free(b);
	}
}

void sevir_close(sevir_data *d)
{
	if (!d)
		return;
	read_bufs_free(d->bufs);
	free(d->mem_in);
	free(d->mem_out);
	SEVIR_H5_CLOSE(d->vil, d->in, d->out, d->file);
	if (d->ids)
		for (int64_t i = 0; i < d->nrows; i++)
			free(d->ids[i]);
	free(d->ids);
	free(d->rows);
	free(d->path);
	free(d->catalog);
	free(d);
}

/* A source of the options, before its data is looked at. */
static int data_new(sevir_data **out, const struct sevir_options *o)
{
	*out = NULL;
	if (o->in_frames < 1 || o->out_frames < 1 || o->in_frames + o->out_frames > SEVIR_FRAMES)
		return starnn_error(STARNN_EINVAL, "sevir: %d input + %d output frames: each >= 1, together <= %d",
		                    o->in_frames, o->out_frames, SEVIR_FRAMES);
	if (o->size < 0)
		return starnn_error(STARNN_EINVAL, "sevir: size %d must be >= 0", o->size);
	if (o->resize != SEVIR_CROP && o->resize != SEVIR_DOWNSAMPLE)
		return starnn_error(STARNN_EINVAL, "sevir: unknown resize mode %d", (int)o->resize);
	if (o->split != SEVIR_TRAIN && o->split != SEVIR_TEST)
		return starnn_error(STARNN_EINVAL, "sevir: unknown split %d", (int)o->split);
	sevir_data *d = calloc(1, sizeof *d);
	if (!d)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	d->file = d->vil = d->in = d->out = -1;
	d->split = o->split;
	d->resize = o->resize;
	d->in_frames = o->in_frames;
	d->out_frames = o->out_frames;
	d->frames = SEVIR_FRAMES;
	/* samples of an event: inputs start every out_frames frames, as in [0:13], [12:25], [24:37] */
	d->windows = (SEVIR_FRAMES - o->in_frames - o->out_frames) / o->out_frames + 1;
	*out = d;
	return 0;
}

/* The kind of the open HDF5 file d->file, told by its datasets, and its checks. */
static int open_file_kind(sevir_data *d, const struct sevir_options *o)
{
	if (sevir_h5_has_dataset(d->file, "vil")) {
		d->kind = KIND_RAW;
		if (o->catalog) {
			d->catalog = strdup(o->catalog);
		} else { /* CATALOG.csv beside the file */
			char *dir = strdup(o->path);
			if (dir && asprintf(&d->catalog, "%s/CATALOG.csv", dirname(dir)) < 0)
				d->catalog = NULL;
			free(dir);
		}
		if (!d->catalog)
			return starnn_error(STARNN_ENOMEM, "out of memory");
		return sevir_open_raw(d);
	}
	if (sevir_h5_has_dataset(d->file, "IN") || sevir_h5_has_dataset(d->file, "OUT")) {
		d->kind = KIND_PREPARED;
		return sevir_open_prepared(d);
	}
	return starnn_error(STARNN_EINVAL,
	                    "%s: neither a raw SEVIR event file (dataset `vil`) nor a prepared nowcast file "
	                    "(datasets `IN` and `OUT`)",
	                    o->path);
}

/* The batches' size against the data's, and the description. */
static int data_finish(sevir_data *d, const struct sevir_options *o)
{
	char res[160];
	d->size = o->size ? o->size : d->native;
	if (d->size > d->native)
		return starnn_error(STARNN_EINVAL, "%s: size %d is larger than the data's %d", d->path, d->size, d->native);
	if (d->resize == SEVIR_DOWNSAMPLE && d->native % d->size)
		return starnn_error(STARNN_EINVAL, "%s: cannot downsample %d to %d: the size must divide %d", d->path,
		                    d->native, d->size, d->native);
	if (d->count < 1)
		return starnn_error(STARNN_EINVAL, "%s: no samples", d->path);
	describe_resize(d, res, sizeof res);
	switch (d->kind) {
	case KIND_SYNTHETIC:
		snprintf(d->desc, sizeof d->desc, "synthetic SEVIR (seed %llu, %s): %d samples, %s",
		         (unsigned long long)o->seed, sevir_split_name(d->split), d->count, res);
		break;
	case KIND_RAW:
		snprintf(d->desc, sizeof d->desc, "raw SEVIR events %s (%s, %s): %d events, %d samples, %s", d->path,
		         d->catalog, sevir_split_name(d->split), d->nevents, d->count, res);
		break;
	case KIND_PREPARED:
		snprintf(d->desc, sizeof d->desc, "prepared nowcast file %s: %d samples%s, %s", d->path, d->count,
		         d->mem_in ? " (in memory)" : "", res);
		break;
	}
	return 0;
}

int sevir_open(sevir_data **out, const struct sevir_options *o)
{
	*out = NULL;
	sevir_data *d;
	STARNN_CHECK(data_new(&d, o));
	int rc = 0;
	if (!o->path || !strcmp(o->path, "synthetic")) {
		d->kind = KIND_SYNTHETIC;
		if (o->synthetic_size < 8 || o->synthetic_size > 4096) {
			rc = starnn_error(STARNN_EINVAL, "sevir: synthetic size %d must be 8..4096", o->synthetic_size);
			goto fail;
		}
		if (o->synthetic_samples < 0) {
			rc = starnn_error(STARNN_EINVAL, "sevir: synthetic samples %d must be >= 0", o->synthetic_samples);
			goto fail;
		}
		d->native = o->synthetic_size;
		d->count = o->synthetic_samples ? o->synthetic_samples : o->split == SEVIR_TEST ? 64 : 256;
		d->stream = sevir_synthetic_stream(o->seed, o->split);
		d->path = strdup("synthetic");
	} else {
		d->path = strdup(o->path);
		if (!d->path) {
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
			goto fail;
		}
		rc = sevir_h5_open_file(o->path, &d->file);
		if (rc)
			goto fail;
		rc = open_file_kind(d, o);
		if (rc)
			goto fail;
	}
	rc = data_finish(d, o);
	if (rc)
		goto fail;
	*out = d;
	return 0;
fail:
	sevir_close(d);
	return rc;
}

int sevir_open_hdf5(sevir_data **out, const struct sevir_options *o, hid_t file, const char *catalog_text,
                    size_t catalog_len)
{
	*out = NULL;
	sevir_data *d;
	int rc = data_new(&d, o);
	if (rc) {
		SEVIR_H5_CLOSE(file);
		return rc;
	}
	d->file = file;
	d->catalog_text = catalog_text;
	d->catalog_len = catalog_len;
	d->path = strdup(o->path ? o->path : "(HDF5 image)");
	if (!d->path)
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
	if (!rc) {
		struct sevir_options named = *o;
		named.path = d->path;
		rc = open_file_kind(d, &named);
		if (!rc)
			rc = data_finish(d, &named);
	}
	d->catalog_text = NULL; /* borrowed for the open only */
	if (rc) {
		sevir_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

int sevir_sample_source(const sevir_data *d, int i, int64_t *event, int *first_frame)
{
	if (i < 0 || i >= d->count)
		return starnn_error(STARNN_EINVAL, "%s: sample %d out of 0..%d", d->path, i, d->count - 1);
	int w = i % d->windows;
	int64_t e = i / d->windows;
	*event = d->kind == KIND_RAW ? d->rows[e] : e;
	*first_frame = d->kind == KIND_PREPARED ? 0 : w * d->out_frames;
	return 0;
}

/* ------------------------------------------------------------ reading */

/* One frame of the region (R x R raw) to size x size normalised: copy or block average. */
static void emit_frame(const float *restrict region, int r, int size, float *restrict dst)
{
	if (r == size) {
		for (size_t p = 0; p < (size_t)size * size; p++)
			dst[p] = sevir_normalise(region[p]);
		return;
	}
	int f = r / size;
	float inv = 1.0f / ((float)f * f);
	for (int y = 0; y < size; y++) {
		float *drow = dst + (size_t)y * size;
		for (int x = 0; x < size; x++)
			drow[x] = 0;
		for (int dy = 0; dy < f; dy++) {
			const float *srow = region + (size_t)(y * f + dy) * r;
			for (int x = 0; x < size; x++) {
				float s = 0;
				for (int dx = 0; dx < f; dx++)
					s += srow[x * f + dx];
				drow[x] += s;
			}
		}
		for (int x = 0; x < size; x++)
			drow[x] = (drow[x] * inv - SEVIR_NORM_MEAN) / SEVIR_NORM_SCALE;
	}
}

/* The side of the region read for a sample: the output size for a crop,
 * else the native size (downsampled afterwards, or as it is). */
static int region_side(const sevir_data *d)
{
	return d->size < d->native && d->resize == SEVIR_CROP ? d->size : d->native;
}

static int read_one(sevir_data *d, int i, int slot, uint64_t crop_seed, float *x, float *y, float *region,
                    void *scratch)
{
	const int T = d->in_frames + d->out_frames;
	const int r = region_side(d);
	int oy = 0, ox = 0;
	if (r < d->native) {
		int room = d->native - d->size;
		if (d->split == SEVIR_TEST) {
			oy = ox = room / 2;
		} else {
			uint64_t h = mix64(crop_seed ^ mix64((uint64_t)slot + 0x63726f70ull));
			oy = (int)((h & 0xffffffffu) % (uint64_t)(room + 1));
			ox = (int)((h >> 32) % (uint64_t)(room + 1));
		}
	}
	const size_t rr = (size_t)r * r;
	int64_t event = 0;
	int t0 = 0;
	STARNN_CHECK(sevir_sample_source(d, i, &event, &t0));
	if (d->kind == KIND_SYNTHETIC) {
		uint8_t *frames = scratch;
		const int n = d->native;
		sevir_synthetic_frames(d->stream, event, n, t0, T, frames);
		for (int t = 0; t < T; t++)
			for (int yy = 0; yy < r; yy++) {
				const uint8_t *src = frames + (size_t)t * n * n + (size_t)(oy + yy) * n + ox;
				float *dst = region + (size_t)t * rr + (size_t)yy * r;
				for (int xx = 0; xx < r; xx++)
					dst[xx] = src[xx];
			}
	} else if (d->kind == KIND_RAW) {
		STARNN_CHECK(sevir_raw_read_region(d, event, oy, ox, r, t0, T, scratch, region));
	} else if (r == d->size) { /* straight into x and y, normalised on the way */
		return sevir_prepared_read_frames(d, event, oy, ox, r, scratch, 1, x, y);
	} else {
		STARNN_CHECK(sevir_prepared_read_frames(d, event, oy, ox, r, scratch, 0, region,
		                                        region + (size_t)d->in_frames * rr));
	}
	const size_t ss = (size_t)d->size * d->size;
	for (int t = 0; t < T; t++) {
		float *dst = t < d->in_frames ? x + (size_t)t * ss : y + (size_t)(t - d->in_frames) * ss;
		emit_frame(region + (size_t)t * rr, r, d->size, dst);
	}
	return 0;
}

int sevir_read(sevir_data *d, const int *idx, int n, uint64_t crop_seed, float *x, float *y)
{
	return sevir_read_slots(d, idx, n, 0, crop_seed, x, y);
}

int sevir_read_slots(sevir_data *d, const int *idx, int n, int first_slot, uint64_t crop_seed, float *x, float *y)
{
	if (n < 0)
		return starnn_error(STARNN_EINVAL, "sevir_read: %d samples", n);
	for (int j = 0; j < n; j++)
		if (idx[j] < 0 || idx[j] >= d->count)
			return starnn_error(STARNN_EINVAL, "sevir_read: %s: sample %d out of 0..%d", d->path, idx[j],
			                    d->count - 1);
	const int T = d->in_frames + d->out_frames;
	const size_t nn = (size_t)d->native * d->native;
	/* region: T x R x R floats, unless prepared frames go straight into x
	 * and y (read at the output size: native, or a crop); scratch: the
	 * synthetic frames (T x native^2 bytes), the raw block or the HDF5
	 * block, none for a prepared file in memory */
	const int r = region_side(d);
	const size_t region_bytes = d->kind == KIND_PREPARED && r == d->size ? 0 : nn * T * sizeof(float);
	const size_t scratch_bytes = d->kind == KIND_SYNTHETIC ? nn * T
	                             : d->kind == KIND_RAW     ? nn * d->frames
	                             : d->mem_in               ? 0
	                                                       : nn * T * sizeof(float);
	/* kept between calls (the loader reads a batch at a time: fresh pages
	 * every batch cost page faults); a second reader at the same time
	 * finds none kept and allocates its own */
	struct sevir_read_bufs *b = __atomic_exchange_n(&d->bufs, NULL, __ATOMIC_ACQ_REL);
	if (!b) {
		b = calloc(1, sizeof *b);
		if (b) {
			b->region = region_bytes ? malloc(region_bytes) : NULL;
			b->scratch = scratch_bytes ? malloc(scratch_bytes) : NULL;
		}
		if (!b || (region_bytes && !b->region) || (scratch_bytes && !b->scratch)) {
			read_bufs_free(b);
			return starnn_error(STARNN_ENOMEM, "sevir_read: out of memory");
		}
	}
	const size_t ss = (size_t)d->size * d->size;
	int rc = 0;
	for (int j = 0; j < n && !rc; j++)
		rc = read_one(d, idx[j], first_slot + j, crop_seed, x + (size_t)j * d->in_frames * ss, y + (size_t)j * d->out_frames * ss,
		              b->region, b->scratch);
	read_bufs_free(__atomic_exchange_n(&d->bufs, b, __ATOMIC_ACQ_REL));
	return rc;
}
