/* tools/sevir-synth: writes synthetic SEVIR data in the real layouts, so
 * that the readers of models/unet can be used and tested without the real
 * files:
 *   sevir-synth raw FILE.h5 [--catalog CATALOG.csv] [--events N] [--size S] [--seed N]
 *       an event file (`id`, `vil` N x S x S x 49 uint8) and its CATALOG.csv
 *   sevir-synth prepared FILE.h5 [--samples N] [--size S] [--seed N]
 *       a nowcast file (`IN` N x S x S x 13, `OUT` N x S x S x 12, float32 raw)
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
	        "       sevir-synth prepared FILE.h5 [--samples N] [--size S] [--seed N]\n"
	        "\n"
	        "Writes synthetic SEVIR-like data (moving, growing and decaying storm cells)\n"
	        "in the layouts of the real data set:\n"
	        "  raw       an event file: `id` (N strings) and `vil` (N x S x S x 49 uint8,\n"
	        "            5-minute frames, 0..254, 255 = missing) and its CATALOG.csv (default:\n"
	        "            CATALOG.csv beside FILE.h5). Events are dated over 2018-2019 (about\n"
	        "            70%% before 2019-06-01: the training split); the catalog also lists\n"
	        "            other image types, events of other files and events with missing data\n"
	        "            (pct_missing > 0), which the readers skip.\n"
	        "  prepared  a nowcast file: `IN` (N x S x S x 13) and `OUT` (N x S x S x 12),\n"
	        "            float32 raw VIL values; sample i is window i %% 3 of event i / 3.\n"
	        "Options:\n"
	        "  --events N    raw: number of events (default 16)\n"
	        "  --samples N   prepared: number of samples (default 64)\n"
	        "  --size S      image size in pixels, 8..4096 (default 128; the real data: 384)\n"
	        "  --seed N      content seed (default 1): the events of the embedded synthetic\n"
	        "                data of the same seed and size (its training stream)\n"
	        "  --catalog F   raw: where to write CATALOG.csv\n"
	        "  -h, --help    this help\n"
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
	const char *mode = argv[1], *path = argv[2], *catalog = NULL;
	int raw = !strcmp(mode, "raw");
	if (!raw && strcmp(mode, "prepared")) {
		fprintf(stderr, "sevir-synth: unknown mode '%s' (raw or prepared)\n", mode);
		return 2;
	}
	long count = raw ? 16 : 64, size = 128, seed = 1;
	for (int i = 3; i < argc; i++) {
		const char *o = argv[i];
		if (i + 1 >= argc) {
			fprintf(stderr, "sevir-synth: %s: missing value or unknown option (see --help)\n", o);
			return 2;
		}
		const char *v = argv[++i];
		int rc;
		if (!strcmp(o, "--size"))
			rc = parse_int(o, v, 8, 4096, &size);
		else if (!strcmp(o, "--seed"))
			rc = parse_int(o, v, 0, LONG_MAX, &seed);
		else if (raw && !strcmp(o, "--events"))
			rc = parse_int(o, v, 1, 1000000, &count);
		else if (!raw && !strcmp(o, "--samples"))
			rc = parse_int(o, v, 1, 100000000, &count);
		else if (raw && !strcmp(o, "--catalog"))
			catalog = v, rc = 0;
		else {
			fprintf(stderr, "sevir-synth: unknown option '%s' for %s (see --help)\n", o, mode);
			return 2;
		}
		if (rc)
			return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = raw ? sevir_write_raw(path, catalog, (int)count, (int)size, (uint64_t)seed)
	             : sevir_write_prepared(path, (int)count, (int)size, (uint64_t)seed);
	if (rc < 0) {
		fprintf(stderr, "sevir-synth: %s\n", starnn_error_message());
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	if (raw)
		printf("wrote %s: %ld events of %ldx%ldx%d (seed %ld) and %s%s in %.2f s\n", path, count, size, size,
		       SEVIR_FRAMES, seed, catalog ? catalog : "CATALOG.csv", catalog ? "" : " beside it", s);
	else
		printf("wrote %s: %ld samples of %ldx%ld, %d input + %d output frames (seed %ld) in %.2f s\n", path, count,
		       size, size, SEVIR_IN_FRAMES, SEVIR_OUT_FRAMES, seed, s);
	return 0;
}
