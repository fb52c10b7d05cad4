/* tools/sevir-synth: writes synthetic SEVIR data in the real layouts, so
 * that the readers of models/unet can be used and tested without the real
 * files:
 *   sevir-synth raw FILE.h5 [--catalog CATALOG.csv] [--events N] [--size S] [--seed N]
 *       an event file (`id`, `vil` N x S x S x 49 uint8) and its CATALOG.csv
 *       (whose directory is the data home: file_name relative to it)
 *   sevir-synth prepared FILE.h5 [--samples N] [--size S] [--seed N] [--dtype T] [--storage S]
 *   sevir-synth prepared FILE.h5 --from RAW.h5 [--catalog CATALOG.csv] [--split train|test] [--dtype T] [--storage S]
 *       a nowcast file (`IN` N x S x S x 13, `OUT` N x S x S x 12, raw VIL
 *       values), synthetic or the samples of a raw file's split
 * Exit status: 0 written, 1 failed (nothing left behind), 2 bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/sevir/sevir.h"
#include "runtime/base/error.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: sevir-synth raw FILE.h5 [--catalog CATALOG.csv] [--events N] [--size S] [--seed N]\n"
	        "       sevir-synth prepared FILE.h5 [--samples N] [--size S] [--seed N] [--dtype T] [--storage S]\n"
	        "       sevir-synth prepared FILE.h5 --from RAW.h5 [--catalog CATALOG.csv] [--split train|test]\n"
	        "                                    [--dtype T] [--storage S]\n"
	        "\n"
	        "Writes synthetic SEVIR-like data (moving, growing and decaying storm cells)\n"
	        "in the layouts of the real data set:\n"
	        "  raw       an event file: `id` (N strings) and `vil` (N x S x S x 49 uint8,\n"
	        "            5-minute frames, 0..254, 255 = missing) and its CATALOG.csv (default:\n"
	        "            CATALOG.csv beside FILE.h5). The catalog's directory is the data home:\n"
	        "            each event's vil row names FILE.h5 by its path relative to it\n"
	        "            (FILE.h5 must lie there or below, e.g. DIR/vil/2018/NAME.h5 with\n"
	        "            --catalog DIR/CATALOG.csv), each event once. Events are dated over\n"
	        "            2018-2019 (about 70%% up to 2019-06-01 00:00:00, the training split; one\n"
	        "            event exactly on that boundary); the catalog also lists each event's\n"
	        "            other image types (ir069, ir107, lght, in their own files, not written)\n"
	        "            and events with missing data (pct_missing > 0), which the readers skip.\n"
	        "  prepared  a nowcast file: `IN` (N x S x S x 13) and `OUT` (N x S x S x 12),\n"
	        "            raw VIL values; sample i is window i %% 3 of event i / 3. With\n"
	        "            --from RAW.h5: the samples of that raw file's split (default train),\n"
	        "            in the order models/unet reads them, at the file's size.\n"
	        "Options:\n"
	        "  --events N    raw: number of events (default 16)\n"
	        "  --samples N   prepared: number of samples (default 64)\n"
	        "  --size S      image size in pixels, 8..4096 (default 128; the real data: 384)\n"
	        "  --seed N      content seed (default 1): the events of the embedded synthetic\n"
	        "                data of the same seed and size (its training stream)\n"
	        "  --catalog F   raw: where to write CATALOG.csv; --from: the raw file's catalog\n"
	        "  --dtype T     prepared: uint8 (as the SEVIR authors' make_nowcast_dataset.py\n"
	        "                writes), float32 (default) or float64\n"
	        "  --storage S   prepared: tiles (default: chunks of one sample's 64x64 tiles),\n"
	        "                official (as that script's h5py writes: chunks of h5py's choice,\n"
	        "                the first dimension unlimited) or contiguous\n"
	        "  --from RAW.h5, --split train|test   prepared: see above\n"
	        "  -h, --help    this help\n"
	        "The layout of the authors' prepared files: --dtype uint8 --storage official.\n"
	        "Files are written atomically (temporary file, fsync, rename).\n");
}

static int parse_int(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "sevir-synth: %s '%s': expected an integer %ld..%ld\n", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* The index of v among the n names (the enum value it names), or -1 with
 * a message naming them. */
static int parse_choice(const char *opt, const char *v, const char *const *names, int n, int *out)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	fprintf(stderr, "sevir-synth: %s '%s': one of", opt, v);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fprintf(stderr, "\n");
	return -1;
}

/* Indexed by enum sevir_value_type, enum sevir_storage, enum sevir_split. */
static const char *const types[] = {"float32", "uint8", "float64"};
static const char *const storages[] = {"tiles", "official", "contiguous"};
static const char *const splits[] = {"train", "test"};

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	const char *mode = argv[1], *path = argv[2], *catalog = NULL, *from = NULL;
	int raw = !strcmp(mode, "raw");
	if (!raw && strcmp(mode, "prepared")) {
		fprintf(stderr, "sevir-synth: unknown mode '%s' (raw or prepared)\n", mode);
		return 2;
	}
	long count = raw ? 16 : 64, size = 128, seed = 1;
	int given_synthetic = 0;
	struct sevir_prepared_layout layout = {SEVIR_FLOAT32, SEVIR_STORAGE_TILES};
	enum sevir_split split = SEVIR_TRAIN;
	for (int i = 3; i < argc; i++) {
		const char *o = argv[i];
		if (i + 1 >= argc) {
			fprintf(stderr, "sevir-synth: %s: missing value or unknown option (see --help)\n", o);
			return 2;
		}
		const char *v = argv[++i];
		int rc = 0, choice = 0;
		if (!strcmp(o, "--size"))
			rc = parse_int(o, v, 8, 4096, &size), given_synthetic = 1;
		else if (!strcmp(o, "--seed"))
			rc = parse_int(o, v, 0, LONG_MAX, &seed), given_synthetic = 1;
		else if (raw && !strcmp(o, "--events"))
			rc = parse_int(o, v, 1, 1000000, &count);
		else if (!raw && !strcmp(o, "--samples"))
			rc = parse_int(o, v, 1, 100000000, &count), given_synthetic = 1;
		else if (!strcmp(o, "--catalog"))
			catalog = v;
		else if (!raw && !strcmp(o, "--from"))
			from = v;
		else if (!raw && !strcmp(o, "--split"))
			rc = parse_choice(o, v, splits, 2, &choice), split = (enum sevir_split)choice;
		else if (!raw && !strcmp(o, "--dtype"))
			rc = parse_choice(o, v, types, 3, &choice), layout.type = (enum sevir_value_type)choice;
		else if (!raw && !strcmp(o, "--storage"))
			rc = parse_choice(o, v, storages, 3, &choice), layout.storage = (enum sevir_storage)choice;
		else {
			fprintf(stderr, "sevir-synth: unknown option '%s' for %s (see --help)\n", o, mode);
			return 2;
		}
		if (rc)
			return 2;
	}
	if (!raw && !from && catalog) {
		fprintf(stderr, "sevir-synth: prepared: --catalog goes with --from (see --help)\n");
		return 2;
	}
	if (from && given_synthetic) {
		fprintf(stderr, "sevir-synth: prepared --from: the samples and size are the raw file's (no --samples, "
		                "--size, --seed)\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = raw    ? sevir_write_raw(path, catalog, (int)count, (int)size, (uint64_t)seed)
	         : from ? sevir_write_prepared_from(path, from, catalog, split, &layout)
	                : sevir_write_prepared_as(path, (int)count, (int)size, (uint64_t)seed, &layout);
	if (rc < 0) {
		fprintf(stderr, "sevir-synth: %s\n", starnn_error_message());
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	if (raw)
		printf("wrote %s: %ld events of %ldx%ldx%d (seed %ld) and %s%s in %.2f s\n", path, count, size, size,
		       SEVIR_FRAMES, seed, catalog ? catalog : "CATALOG.csv", catalog ? "" : " beside it", s);
	else if (from)
		printf("wrote %s: the %s split of %s, %d input + %d output frames, %s values, %s storage, in %.2f s\n",
		       path, split == SEVIR_TEST ? "test" : "training", from, SEVIR_IN_FRAMES, SEVIR_OUT_FRAMES,
		       types[layout.type], storages[layout.storage], s);
	else
		printf("wrote %s: %ld samples of %ldx%ld, %d input + %d output frames (seed %ld), %s values, %s storage, "
		       "in %.2f s\n",
		       path, count, size, size, SEVIR_IN_FRAMES, SEVIR_OUT_FRAMES, seed, types[layout.type],
		       storages[layout.storage], s);
	return 0;
}
