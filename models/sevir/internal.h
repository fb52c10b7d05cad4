/* The internal interface of the SEVIR data code (not for users of sevir.h).
 * One file per job, so that each parser is a unit that a reader, a test or
 * a fuzz harness (tests/fuzz/) can take on its own; listed from the bottom
 * up (a file calls only the files above it in this list):
 *   h5.c        HDF5 helpers: open a file and its datasets, check a rank,
 *               read or write a row's block (h5.h; knows no sevir_data)
 *   synth.c     the synthetic generator
 *   catalog.c   CATALOG.csv: which rows of a raw file are events of the split
 *   raw.c       raw SEVIR event files (`vil` N x H x W x 49 uint8, `id`)
 *   prepared.c  prepared nowcast files (`IN`, `OUT` N x H x W x 13 / 12 floats)
 *   data.c      sevir_open / sevir_read: options, kind detection, crops,
 *               downsampling, normalisation
 *   loader.c    the prefetching loader thread and its plan
 *   writers.c   synthetic events written in the real layouts
 *
 * A sample is read as a "region" of R x R pixels (the crop, or the whole
 * image when downsampling) for its in + out frames, kept frame-major as raw
 * floats (T x R x R), then brought to size and normalised (data.c). */
#ifndef STARNN_SEVIR_INTERNAL_H
#define STARNN_SEVIR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "models/sevir/sevir.h"

/* Largest H = W of a file image the readers accept. The readers allocate
 * whole images (a region of T x H x W floats per sample), so a dimension
 * read from a file must be bounded before it sizes an allocation; SEVIR's
 * own images are 384 x 384, the synthetic generator stops at 4096 too. */
#define SEVIR_MAX_FILE_SIZE 4096
/* Largest number of rows (events) of a raw file, and longest event id: the
 * `id` of every row is read whole at open (SEVIR's files hold a few
 * thousand events, ids such as "S728503" or "R18032123577327"). */
#define SEVIR_MAX_FILE_ROWS (1 << 20)
#define SEVIR_MAX_ID_BYTES 256

/* ------------------------------------------------------------ random numbers */

static inline uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};
static inline uint64_t rng_next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	uint64_t z = r->s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static inline double rng_uniform(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * ((double)(rng_next(r) >> 11) * 0x1p-53);
}
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

/* ------------------------------------------------------------ data sources */

enum sevir_kind { KIND_SYNTHETIC, KIND_RAW, KIND_PREPARED };

/* sevir_read_slots' work buffers: region T x R x R floats; scratch the
 * synthetic frames, the raw block or the HDF5 block. */
struct sevir_read_bufs {
	float *region;
	void *scratch;
};

struct sevir_data {
	enum sevir_kind kind;
	char *path, *catalog;
	enum sevir_split split;
	enum sevir_resize resize;
	int native, size;        /* image sizes: the data's, the batches' */
	int in_frames, out_frames;
	int frames, windows;     /* frames per event (raw, synthetic), samples per event */
	int count;               /* samples */
	uint64_t stream;         /* synthetic */
	hid_t file, vil, in, out;
	int64_t nrows;           /* rows of vil / IN */
	int64_t *rows;           /* raw: the selected rows of vil, in file order */
	char **ids;              /* raw: the `id` of each row */
	int nevents;
	/* sevir_open_hdf5: the catalog given as text (borrowed during the open
	 * only) instead of read from `catalog` */
	const char *catalog_text;
	size_t catalog_len;
	char desc[768];
	struct sevir_read_bufs *bufs; /* kept by sevir_read_slots between calls (NULL: none, or in use) */
	/* prepared files: whether `IN` / `OUT` hold uint8 (else float32 or
	 * float64, read as float32); files up to sevir_memory_max() bytes: their
	 * values in memory, HWC, as uint8 (u8) or float32 */
	int in_u8, out_u8;
	void *mem_in, *mem_out;
};

static inline const char *sevir_split_name(enum sevir_split s)
{
	return s == SEVIR_TEST ? "test" : "train";
}

/* ---- catalog.c */

/* d->rows, d->nevents: the events of d->split in d->catalog (or
 * d->catalog_text) for the raw file d->path of d->nrows rows (d->ids, when
 * set, must agree with the catalog's ids). */
int sevir_select_events(sevir_data *d);
/* The same on the catalog's text, parsed in place: buf[len] must exist
 * (it is overwritten with a NUL). */
int sevir_catalog_parse(sevir_data *d, char *buf, size_t len);

/* ---- raw.c */

/* Checks `vil` and `id` of d->file and selects the events (catalog.c). */
int sevir_open_raw(sevir_data *d);
/* The region of event row `event` at (oy, ox), R x R, frames [t0, t0 + T):
 * buf holds the R x R x 49 bytes read, region gets T x R x R floats.
 * Missing pixels (255) are an error. */
int sevir_raw_read_region(const sevir_data *d, int64_t event, int oy, int ox, int r, int t0, int T, uint8_t *buf,
                          float *region);

/* ---- prepared.c */

/* Prepared files of at most this many bytes in memory (uint8 values as
 * bytes, float32 and float64 values as float32) are read into memory when
 * opened (the default; sevir_memory_max). */
#define SEVIR_MEMORY_MAX (256.0 * 1024 * 1024)
/* The limit in use: STARNN_DATA_MEMORY_MB MiB when set, else
 * SEVIR_MEMORY_MAX; -1 when the variable is not a number in [0, 1e9]. */
double sevir_memory_max(void);

/* Checks `IN` and `OUT` of d->file: uint8 (the SEVIR authors' layout),
 * float32 or float64 values, any storage (contiguous, chunked, extendible);
 * float values whole, NaN and range, when small; kept in memory up to
 * sevir_memory_max() bytes. */
int sevir_open_prepared(sevir_data *d);
/* The frames of sample row `row` in the region at (oy, ox), R x R: buf
 * holds R x R x max(in, out) floats (bytes of uint8 datasets); in gets the
 * in x R x R floats of `IN`, out the out x R x R of `OUT`, raw, or
 * normalised (sevir_normalise) when norm. */
int sevir_prepared_read_frames(const sevir_data *d, int64_t row, int oy, int ox, int r, float *buf, int norm,
                               float *in, float *out);

/* ---- data.c */

/* sevir_open on an HDF5 file already open (a file image in the fuzz
 * harnesses): takes `file` over (closed by sevir_close, or on failure);
 * o->path only names it in messages. A raw file's catalog is read from
 * catalog_text[0..catalog_len) when catalog_text is not NULL, else from the
 * file o->catalog (default: CATALOG.csv beside o->path). */
int sevir_open_hdf5(sevir_data **out, const struct sevir_options *o, hid_t file, const char *catalog_text,
                    size_t catalog_len);

#endif
