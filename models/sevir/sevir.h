/* SEVIR nowcasting data for models/unet: the embedded synthetic generator,
 * raw SEVIR event files and prepared nowcast files, as normalised NCHW
 * float batches, with a prefetching loader thread.
 *
 * Layouts (see ../../README.md, "File formats"):
 *   raw event file   HDF5: `id` (N strings), `vil` (N x H x W x 49 uint8,
 *                    0..254, 255 = missing); events chosen from CATALOG.csv
 *                    (img_type == vil, pct_missing == 0, file_name matching
 *                    the file's base name, file_index = row of `vil`).
 *                    Each event gives 3 samples: inputs frames [0:13],
 *                    [12:25], [24:37]; targets [13:25], [25:37], [37:49].
 *                    Split by time_utc: train <= 2019-06-01 00:00:00 < test
 *                    (the SEVIR authors' rule).
 *   prepared file    HDF5: `IN` (N x H x W x 13), `OUT` (N x H x W x 12),
 *                    raw VIL values 0..255 as uint8 (the authors' script),
 *                    float32 or float64; any storage.
 *   synthetic        generated on the fly, deterministic by (seed, index):
 *                    storm cells that move, grow and decay over a
 *                    background; uint8-like VIL values 0..254.
 * Batches are NCHW: x[b][t][h][w] with t = input frame, y likewise with
 * t = lead time; values normalised: (v - 33.44) / 47.54. */
#ifndef STARNN_SEVIR_SEVIR_H
#define STARNN_SEVIR_SEVIR_H

#include <stdint.h>

#define SEVIR_FRAMES 49
#define SEVIR_IN_FRAMES 13
#define SEVIR_OUT_FRAMES 12
#define SEVIR_FRAME_MINUTES 5 /* SEVIR's frames are 5 minutes apart (the synthetic ones alike) */
#define SEVIR_NATIVE_SIZE 384
#define SEVIR_NORM_MEAN 33.44f
#define SEVIR_NORM_SCALE 47.54f
/* VIL thresholds of the metrics, raw units */
#define SEVIR_NTHRESHOLDS 6
static const float sevir_thresholds[SEVIR_NTHRESHOLDS] = {16, 74, 133, 160, 181, 219};

enum sevir_split { SEVIR_TRAIN = 0, SEVIR_TEST = 1 };
enum sevir_resize { SEVIR_CROP = 0, SEVIR_DOWNSAMPLE = 1 };

struct sevir_options {
	const char *path;        /* "synthetic" (or NULL) or an HDF5 file (raw or prepared, detected) */
	const char *catalog;     /* raw files: CATALOG.csv (default: CATALOG.csv beside the file) */
	enum sevir_split split;  /* raw: date split; synthetic: a distinct stream per split */
	int size;                /* H = W of the batches; 0 = the data's own size */
	enum sevir_resize resize;/* how a larger image is brought to size: random crop
	                            (training) / centre crop (split TEST), or block-average downsampling */
	int in_frames, out_frames; /* 13 and 12 by default; raw files allow in + out <= 49 */
	int synthetic_samples;   /* synthetic: number of samples (default 256 train / 64 test) */
	int synthetic_size;      /* synthetic: native image size (default 128) */
	uint64_t seed;           /* synthetic content; crops */
};
void sevir_options_init(struct sevir_options *o);

typedef struct sevir_data sevir_data;

/* Opens a data source. Errors (missing file, wrong datasets or shapes,
 * values out of range, NaN): a starnn error code with a message naming the
 * file and the problem (starnn_last_error()). */
int sevir_open(sevir_data **out, const struct sevir_options *o);
void sevir_close(sevir_data *d);
int sevir_count(const sevir_data *d);          /* samples */
int sevir_size(const sevir_data *d);           /* H = W of the batches */
const char *sevir_describe(const sevir_data *d); /* one line: kind, file, samples, size */

/* Reads samples idx[0..n) into x (n x in_frames x H x W) and y
 * (n x out_frames x H x W), normalised. `crop_seed` picks the random crops
 * (ignored for centre crops / downsampling). Thread-safe for distinct
 * buffers. */
int sevir_read(sevir_data *d, const int *idx, int n, uint64_t crop_seed, float *x, float *y);
/* The same for the samples at positions first_slot .. first_slot + n of a
 * batch (idx: theirs): the crops those positions get in the whole batch,
 * so that a part of a batch reads what sevir_read of all gives there. */
int sevir_read_slots(sevir_data *d, const int *idx, int n, int first_slot, uint64_t crop_seed, float *x, float *y);

/* Prefetching loader: a thread that prepares the next `depth` batches of
 * an epoch while the caller trains on the current one. Epoch e's order is a
 * permutation seeded by (seed, e) when shuffle, else file order. The batch
 * counter starts at `first_batch` (resume: batches already done). The last
 * incomplete batch of an epoch is dropped. */
typedef struct sevir_loader sevir_loader;
int sevir_loader_start(sevir_loader **out, sevir_data *d, int batch, int shuffle, uint64_t seed,
                       int depth, int64_t first_batch);
/* Blocks until the next batch is ready; x and y stay valid until the next
 * call. *epoch (0-based) and *index_in_epoch tell where it comes from. */
/* The same loader reading only the samples [part_first, part_first +
 * part_count) of every batch (a rank's share under mpirun); x and y hold
 * part_count samples. */
int sevir_loader_start_part(sevir_loader **out, sevir_data *d, int batch, int part_first, int part_count,
                            int shuffle, uint64_t seed, int depth, int64_t first_batch);
int sevir_loader_next(sevir_loader *l, const float **x, const float **y, int64_t *epoch, int64_t *index_in_epoch);
int sevir_batches_per_epoch(const sevir_loader *l);
void sevir_loader_stop(sevir_loader *l);

/* Writers used by tools/sevir-synth and the tests: synthetic events in the
 * real layouts. Written atomically (temporary file, fsync, rename).
 * sevir_write_raw: the event file and its catalog (NULL: CATALOG.csv
 * beside the file), whose directory is the data home: every vil row's
 * file_name is the event file's path relative to it (the file must lie
 * there or below), each event listed once. sevir_write_prepared: float32
 * values, SEVIR_STORAGE_TILES. */
int sevir_write_raw(const char *h5_path, const char *catalog_path, int nevents, int size, uint64_t seed);
int sevir_write_prepared(const char *h5_path, int nsamples, int size, uint64_t seed);

/* The value type and storage of a prepared file's `IN` and `OUT`. */
enum sevir_value_type { SEVIR_FLOAT32 = 0, SEVIR_UINT8 = 1, SEVIR_FLOAT64 = 2 };
enum sevir_storage {
	SEVIR_STORAGE_TILES = 0,   /* chunks of one sample's 64 x 64 tiles (starnn's) */
	SEVIR_STORAGE_OFFICIAL = 1,/* as the SEVIR authors' make_nowcast_dataset.py (h5py) writes: first
	                            * dimension unlimited, the chunks h5py picks */
	SEVIR_STORAGE_CONTIGUOUS = 2,
};
struct sevir_prepared_layout {
	enum sevir_value_type type;
	enum sevir_storage storage;
};
/* sevir_write_prepared in the given layout (the official one: SEVIR_UINT8,
 * SEVIR_STORAGE_OFFICIAL). */
int sevir_write_prepared_as(const char *h5_path, int nsamples, int size, uint64_t seed,
                            const struct sevir_prepared_layout *l);
/* The samples of a raw file's split (catalog NULL: CATALOG.csv beside it)
 * as a prepared file at the file's size: its raw values, samples in the
 * reader's order (events in file order, 3 windows each). */
int sevir_write_prepared_from(const char *h5_path, const char *raw_path, const char *catalog, enum sevir_split split,
                              const struct sevir_prepared_layout *l);

/* ---- additions (additive to the contract above) ---- */

/* Where sample i comes from: the event (row of `vil` for raw files, event
 * number of the synthetic stream, sample row of a prepared file) and its
 * first input frame within the event (0 for prepared files). */
int sevir_sample_source(const sevir_data *d, int i, int64_t *event, int *first_frame);

/* The synthetic generator. A data source of seed s reads the events of
 * stream sevir_synthetic_stream(s, split) (TRAIN: s itself, so that files
 * written with seed s hold the training stream of seed s). Renders frames
 * [t0, t0 + nt) of an event as nt x size x size uint8 (frame-major),
 * values 0..254; deterministic by (stream, event, size). */
uint64_t sevir_synthetic_stream(uint64_t seed, enum sevir_split split);
void sevir_synthetic_frames(uint64_t stream, int64_t event, int size, int t0, int nt, uint8_t *out);
/* The displacement (px) of the event's flow from frame t0 to t1 (cells
 * also drift a little relative to it). */
void sevir_synthetic_displacement(uint64_t stream, int64_t event, int size, int t0, int t1, float *dx, float *dy);

/* The loader's plan, as a pure function: the sample indices (batch of them)
 * and the crop seed of global batch number g (epoch g / (count / batch)). */
int sevir_batch_plan(int count, int batch, int shuffle, uint64_t seed, int64_t g, int *idx, uint64_t *crop_seed);
uint64_t sevir_batch_crop_seed(uint64_t seed, int64_t g);

/* raw VIL value <-> normalised, physical kg/m^2 */
static inline float sevir_normalise(float raw) { return (raw - SEVIR_NORM_MEAN) / SEVIR_NORM_SCALE; }
static inline float sevir_denormalise(float v) { return v * SEVIR_NORM_SCALE + SEVIR_NORM_MEAN; }

/* The valid range of a written forecast, raw VIL: 0..254 (255 means a
 * missing pixel in SEVIR; a VIL below 0 does not exist). The model's output
 * is not bounded (a linear layer): forecasts written out (predict --output;
 * the PNGs' colours are the same either way) are clipped to the range; the
 * loss and the scores are of the model's output (README, "Forecasts"). */
#define SEVIR_FORECAST_MIN 0.0f
#define SEVIR_FORECAST_MAX 254.0f
static inline float sevir_forecast_clip(float raw)
{
	return raw < SEVIR_FORECAST_MIN ? SEVIR_FORECAST_MIN : raw > SEVIR_FORECAST_MAX ? SEVIR_FORECAST_MAX : raw;
}

#endif
