/* SEVIR data: the synthetic generator (determinism, value range, motion),
 * the raw and prepared HDF5 readers against the generator through the
 * writers, CATALOG.csv filtering and the date split, crops and downsampling
 * against naive loops, the loader (plan, resume, stop while blocked, error
 * propagation) and the error cases (each must return an error whose
 * message names the problem). Files go to a mkdtemp directory, removed at
 * the end. Prints the persistence baseline of the synthetic data.
 *
 * Length (about 1,200 lines): one test program for the whole of
 * models/sevir/ (generator, readers, catalog, split, crops, loader), so
 * that the files it writes once serve every check; each section is
 * self-contained and could move to a file of its own. */
#define _GNU_SOURCE
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "models/sevir/sevir.h"
#include "tests/testlib.h"

static char dir[256];

static char *tpath(const char *name)
{
	static char buf[8][512];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

/* The call must fail and its message contain `what`. */
#define EXPECT_ERROR(expr, what)                                                                                \
	do {                                                                                                     \
		int rc_ = (expr);                                                                                \
		TEST_ASSERT(rc_ < 0, "%s succeeded, expected an error about '%s'", #expr, what);                \
		if (rc_ < 0)                                                                                     \
			TEST_ASSERT(strstr(starnn_last_error(), what), "%s: message '%s' does not mention '%s'", \
			            #expr, starnn_last_error(), what);                                            \
	} while (0)

static int open_file(sevir_data **d, const char *path, enum sevir_split split, int size)
{
	struct sevir_options o;
	sevir_options_init(&o);
	o.path = path;
	o.split = split;
	o.size = size;
	return sevir_open(d, &o);
}

/* ------------------------------------------------------------ generator */

static void test_generator(void)
{
	const int n = 64, nn = 64 * 64;
	uint8_t *a = xmalloc((size_t)SEVIR_FRAMES * nn), *b = xmalloc((size_t)SEVIR_FRAMES * nn);
	double t0 = now();
	sevir_synthetic_frames(3, 5, n, 0, SEVIR_FRAMES, a);
	sevir_synthetic_frames(3, 5, n, 0, SEVIR_FRAMES, b);
	TEST_ASSERT(!memcmp(a, b, (size_t)SEVIR_FRAMES * nn), "same (seed, event) gives different frames");
	sevir_synthetic_frames(3, 5, n, 17, 10, b); /* a sub-range renders the same frames */
	TEST_ASSERT(!memcmp(a + (size_t)17 * nn, b, (size_t)10 * nn), "frames 17..26 differ when rendered alone");
	sevir_synthetic_frames(3, 6, n, 0, SEVIR_FRAMES, b);
	TEST_ASSERT(memcmp(a, b, (size_t)SEVIR_FRAMES * nn), "events 5 and 6 are identical");
	sevir_synthetic_frames(4, 5, n, 0, SEVIR_FRAMES, b);
	TEST_ASSERT(memcmp(a, b, (size_t)SEVIR_FRAMES * nn), "seeds 3 and 4 give identical events");
	TEST_ASSERT(sevir_synthetic_stream(3, SEVIR_TRAIN) == 3 && sevir_synthetic_stream(3, SEVIR_TEST) != 3,
	            "the training stream of seed s is s, the test stream another");
	free(a);
	free(b);

	/* 128 x 128: speed, value range and distribution, thresholds exercised */
	const int N = 128, NN = 128 * 128, EV = 24;
	uint8_t *f = xmalloc((size_t)SEVIR_FRAMES * NN);
	int64_t hist[256] = {0};
	t0 = now();
	for (int e = 0; e < EV; e++) {
		sevir_synthetic_frames(11, e, N, 0, SEVIR_FRAMES, f);
		for (size_t p = 0; p < (size_t)SEVIR_FRAMES * NN; p++)
			hist[f[p]]++;
	}
	double ms = (now() - t0) * 1e3 / EV;
	printf("generator: %.2f ms per 128x128x49 event (reported, not asserted)\n", ms);
	TEST_ASSERT(hist[255] == 0, "value 255 (missing) generated %lld times", (long long)hist[255]);
	int64_t total = (int64_t)EV * SEVIR_FRAMES * NN, low = 0, zero = hist[0];
	for (int v = 0; v < 16; v++)
		low += hist[v];
	printf("generator: %.1f%% zero, %.1f%% below 16", 100.0 * zero / total, 100.0 * low / total);
	TEST_ASSERT(low > total / 2, "most pixels should be low: %.1f%% below 16", 100.0 * low / total);
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++) {
		int64_t above = 0;
		for (int v = (int)sevir_thresholds[k]; v < 255; v++)
			above += hist[v];
		printf(", %.3f%% >= %g", 100.0 * above / total, sevir_thresholds[k]);
		TEST_ASSERT(above > total / 100000, "threshold %g hardly exercised (%lld pixels)", sevir_thresholds[k],
		            (long long)above);
	}
	printf("\n");
	TEST_ASSERT(sevir_thresholds[0] == 16 && sevir_thresholds[5] == 219, "thresholds");
	free(f);
}

/* Persistence vs. shifted persistence (the true flow), on 64 test samples at
 * 128 x 128: motion is the main signal; prints the baseline scores. */
static void test_motion(void)
{
	sevir_data *d;
	struct sevir_options o;
	sevir_options_init(&o);
	o.split = SEVIR_TEST;
	o.seed = 1;
	TEST_OK(sevir_open(&d, &o));
	TEST_ASSERT(sevir_count(d) == 64 && sevir_size(d) == 128, "synthetic test default: %d samples of %d",
	            sevir_count(d), sevir_size(d));
	const int n = 64, S = 128;
	const size_t ss = (size_t)S * S;
	float *x = xmalloc((size_t)n * 13 * ss * sizeof *x), *y = xmalloc((size_t)n * 12 * ss * sizeof *y);
	int idx[64];
	for (int i = 0; i < n; i++)
		idx[i] = i;
	double t0 = now();
	TEST_OK(sevir_read(d, idx, 4, 0, x, y));
	double ms = (now() - t0) * 1e3;
	printf("sevir_read: %.1f ms for a batch of 4 synthetic 128x128 samples\n", ms);
	TEST_OK(sevir_read(d, idx, n, 0, x, y));
	double sse_p[12] = {0}, sse_s[12] = {0}, sae_p = 0;
	int64_t h[6] = {0}, m[6] = {0}, fa[6] = {0}, cnt = 0;
	for (int i = 0; i < n; i++) {
		int64_t ev;
		int ft;
		TEST_OK(sevir_sample_source(d, i, &ev, &ft));
		const float *last = x + ((size_t)i * 13 + 12) * ss;
		for (int l = 0; l < 12; l++) {
			float dx, dy;
			sevir_synthetic_displacement(sevir_synthetic_stream(1, SEVIR_TEST), ev, S, ft + 12, ft + 13 + l, &dx,
			                             &dy);
			int sx = (int)lrintf(dx), sy = (int)lrintf(dy);
			const float *truth = y + ((size_t)i * 12 + l) * ss;
			for (int yy = 0; yy < S; yy++)
				for (int xx = 0; xx < S; xx++) {
					float t = sevir_denormalise(truth[yy * S + xx]), p = sevir_denormalise(last[yy * S + xx]);
					int qy = yy - sy, qx = xx - sx;
					float s = qy >= 0 && qy < S && qx >= 0 && qx < S ? sevir_denormalise(last[qy * S + qx]) : p;
					sse_p[l] += (double)(t - p) * (t - p);
					sse_s[l] += (double)(t - s) * (t - s);
					sae_p += fabs(t - p);
					for (int k = 0; k < 6; k++) {
						int ot = t >= sevir_thresholds[k], op = p >= sevir_thresholds[k];
						h[k] += ot && op;
						m[k] += ot && !op;
						fa[k] += !ot && op;
					}
				}
			cnt += (int64_t)ss;
		}
	}
	double mse_p = 0, mse_s = 0;
	for (int l = 0; l < 12; l++) {
		mse_p += sse_p[l];
		mse_s += sse_s[l];
	}
	mse_p /= (double)cnt;
	mse_s /= (double)cnt;
	double csi_mean = 0;
	printf("persistence on 64 synthetic test samples (128x128): MSE %.1f, MAE %.2f, CSI", mse_p, sae_p / (double)cnt);
	for (int k = 0; k < 6; k++) {
		double csi = h[k] + m[k] + fa[k] ? (double)h[k] / (double)(h[k] + m[k] + fa[k]) : 0;
		csi_mean += csi / 6;
		printf(" %.3f", csi);
	}
	printf(" (mean %.3f); MSE at lead 1/6/12: %.1f %.1f %.1f; shifted by the true flow: %.1f (%.1f at lead 12)\n",
	       csi_mean, sse_p[0] / (double)(n * ss), sse_p[5] / (double)(n * ss), sse_p[11] / (double)(n * ss), mse_s,
	       sse_s[11] / (double)(n * ss));
	TEST_ASSERT(mse_p > 20, "persistence MSE %.2f: too little change", mse_p);
	TEST_ASSERT(mse_s < 0.8 * mse_p, "advecting the last frame (MSE %.1f) should beat persistence (%.1f)", mse_s,
	            mse_p);
	TEST_ASSERT(sse_p[11] > 2 * sse_p[0], "persistence should degrade with lead time: %.1f -> %.1f", sse_p[0],
	            sse_p[11]);
	TEST_ASSERT(csi_mean > 0.1 && csi_mean < 0.8, "persistence mean CSI %.3f out of a plausible range", csi_mean);
	free(x);
	free(y);
	sevir_close(d);
}

/* ------------------------------------------------------------ synthetic source, crops, downsampling */

static void expect_frames(const char *what, const float *got, const uint8_t *frames, int native, int oy, int ox,
                          int size, int f)
{
	/* naive: crop at (oy, ox) of size*f, block-average f x f, normalise */
	size_t bad = 0;
	for (int yy = 0; yy < size; yy++)
		for (int xx = 0; xx < size; xx++) {
			float s = 0;
			for (int a = 0; a < f; a++)
				for (int b = 0; b < f; b++)
					s += frames[(size_t)(oy + yy * f + a) * native + ox + xx * f + b];
			float ref = sevir_normalise(s / (float)(f * f));
			if (fabsf(got[yy * size + xx] - ref) > (f == 1 ? 0 : 1e-5f))
				bad++;
		}
	TEST_ASSERT(bad == 0, "%s: %zu pixels differ from the naive reference", what, bad);
}

/* Finds the crop offset by search: where all `nt` frames of got (size x
 * size each, x frames then y frames) match the frames (native x native). */
static int find_offset(const float *gx, const float *gy, int nin, int nt, const uint8_t *frames, int native, int size,
                       int *oy, int *ox)
{
	int found = 0;
	const size_t ss = (size_t)size * size, nn = (size_t)native * native;
	for (int a = 0; a <= native - size; a++)
		for (int b = 0; b <= native - size; b++) {
			int ok = 1;
			for (int t = 0; t < nt && ok; t++) {
				const float *got = t < nin ? gx + t * ss : gy + (t - nin) * ss;
				for (int yy = 0; yy < size && ok; yy++)
					for (int xx = 0; xx < size && ok; xx++)
						ok = got[yy * size + xx] ==
						     sevir_normalise(frames[t * nn + (size_t)(a + yy) * native + b + xx]);
			}
			if (ok) {
				*oy = a;
				*ox = b;
				found++;
			}
		}
	return found;
}

static void test_synthetic_source(void)
{
	const int N = 96, T = 25;
	struct sevir_options o;
	sevir_options_init(&o);
	o.seed = 9;
	o.synthetic_size = N;
	o.synthetic_samples = 12;
	sevir_data *d;
	TEST_OK(sevir_open(&d, &o));
	TEST_ASSERT(sevir_count(d) == 12 && sevir_size(d) == N, "count %d size %d", sevir_count(d), sevir_size(d));
	TEST_ASSERT(strstr(sevir_describe(d), "synthetic"), "describe: %s", sevir_describe(d));
	uint8_t *frames = xmalloc((size_t)T * N * N);
	float *x = xmalloc((size_t)2 * 13 * N * N * sizeof *x), *y = xmalloc((size_t)2 * 12 * N * N * sizeof *y);
	int idx[2] = {7, 2};
	TEST_OK(sevir_read(d, idx, 2, 0, x, y));
	for (int j = 0; j < 2; j++) {
		int64_t ev;
		int ft;
		TEST_OK(sevir_sample_source(d, idx[j], &ev, &ft));
		TEST_ASSERT(ev == idx[j] / 3 && ft == (idx[j] % 3) * 12, "sample %d -> event %lld frame %d", idx[j],
		            (long long)ev, ft);
		sevir_synthetic_frames(9, ev, N, ft, T, frames);
		for (int t = 0; t < T; t++) {
			const float *got = t < 13 ? x + ((size_t)j * 13 + t) * N * N : y + ((size_t)j * 12 + t - 13) * N * N;
			expect_frames("synthetic native", got, frames + (size_t)t * N * N, N, 0, 0, N, 1);
		}
	}
	sevir_close(d);

	/* the test split is another stream */
	o.split = SEVIR_TEST;
	TEST_OK(sevir_open(&d, &o));
	float *x2 = xmalloc((size_t)13 * N * N * sizeof *x2), *y2 = xmalloc((size_t)12 * N * N * sizeof *y2);
	TEST_OK(sevir_read(d, idx, 1, 0, x2, y2));
	TEST_ASSERT(memcmp(x, x2, (size_t)13 * N * N * sizeof *x), "train and test streams give the same sample");
	sevir_close(d);

	/* downsampling 96 -> 32 (f = 3) and 96 -> 48 (f = 2) */
	int sizes[2] = {32, 48};
	for (int k = 0; k < 2; k++) {
		int S = sizes[k];
		o.split = SEVIR_TRAIN;
		o.size = S;
		o.resize = SEVIR_DOWNSAMPLE;
		TEST_OK(sevir_open(&d, &o));
		TEST_OK(sevir_read(d, idx, 1, 123, x, y));
		sevir_synthetic_frames(9, idx[0] / 3, N, (idx[0] % 3) * 12, T, frames);
		for (int t = 0; t < T; t++) {
			const float *got = t < 13 ? x + (size_t)t * S * S : y + (size_t)(t - 13) * S * S;
			expect_frames("downsampled", got, frames + (size_t)t * N * N, N, 0, 0, S, N / S);
		}
		sevir_close(d);
	}
	o.size = 40;
	EXPECT_ERROR(sevir_open(&d, &o), "divide");
	o.size = 200;
	o.resize = SEVIR_CROP;
	EXPECT_ERROR(sevir_open(&d, &o), "larger");

	/* random crops (train): each sample one offset for all its frames, x and y; seeds move them */
	const int S = 32;
	o.size = S;
	o.resize = SEVIR_CROP;
	TEST_OK(sevir_open(&d, &o));
	int offsets_seen = 0, prev_oy = -1, prev_ox = -1;
	for (uint64_t cs = 0; cs < 4; cs++) {
		TEST_OK(sevir_read(d, idx, 2, cs, x, y));
		for (int j = 0; j < 2; j++) {
			sevir_synthetic_frames(9, idx[j] / 3, N, (idx[j] % 3) * 12, T, frames);
			int oy = -1, ox = -1;
			int found = find_offset(x + (size_t)j * 13 * S * S, y + (size_t)j * 12 * S * S, 13, T, frames, N, S, &oy,
			                        &ox);
			TEST_ASSERT(found >= 1, "crop seed %llu sample %d: the crop is no window of the frame",
			            (unsigned long long)cs, j);
			if (found < 1)
				continue;
			for (int t = 0; t < T; t++) {
				const float *got = t < 13 ? x + ((size_t)j * 13 + t) * S * S : y + ((size_t)j * 12 + t - 13) * S * S;
				expect_frames("random crop", got, frames + (size_t)t * N * N, N, oy, ox, S, 1);
			}
			if (oy != prev_oy || ox != prev_ox)
				offsets_seen++;
			prev_oy = oy;
			prev_ox = ox;
		}
	}
	TEST_ASSERT(offsets_seen >= 4, "random crops hardly move: %d distinct offsets in 8 reads", offsets_seen);
	/* same crop seed, same crops */
	TEST_OK(sevir_read(d, idx, 2, 77, x, y));
	TEST_OK(sevir_read(d, idx, 1, 77, x2, y2));
	TEST_ASSERT(!memcmp(x, x2, (size_t)13 * S * S * sizeof *x), "the same crop seed gives another crop");
	/* a part of a batch (a rank's share): the crops of those positions */
	TEST_OK(sevir_read_slots(d, idx + 1, 1, 1, 77, x2, y2));
	TEST_ASSERT(!memcmp(x + (size_t)13 * S * S, x2, (size_t)13 * S * S * sizeof *x) &&
	                !memcmp(y + (size_t)12 * S * S, y2, (size_t)12 * S * S * sizeof *y),
	            "sevir_read_slots of position 1 differs from position 1 of the whole batch");
	sevir_close(d);
	/* centre crops (test) */
	o.split = SEVIR_TEST;
	TEST_OK(sevir_open(&d, &o));
	TEST_OK(sevir_read(d, idx, 1, 5, x, y));
	sevir_synthetic_frames(sevir_synthetic_stream(9, SEVIR_TEST), idx[0] / 3, N, (idx[0] % 3) * 12, T, frames);
	for (int t = 0; t < T; t++) {
		const float *got = t < 13 ? x + (size_t)t * S * S : y + (size_t)(t - 13) * S * S;
		expect_frames("centre crop", got, frames + (size_t)t * N * N, N, (N - S) / 2, (N - S) / 2, S, 1);
	}
	sevir_close(d);
	/* other frame counts: 6 in + 6 out -> windows start every 6 frames, 7 per event */
	sevir_options_init(&o);
	o.in_frames = 6;
	o.out_frames = 6;
	o.synthetic_size = 32;
	o.synthetic_samples = 14;
	TEST_OK(sevir_open(&d, &o));
	int64_t ev;
	int ft;
	TEST_OK(sevir_sample_source(d, 13, &ev, &ft));
	TEST_ASSERT(ev == 1 && ft == 36, "6+6 frames: sample 13 -> event %lld frame %d, expected 1, 36", (long long)ev, ft);
	sevir_close(d);
	o.in_frames = 30;
	o.out_frames = 20;
	EXPECT_ERROR(sevir_open(&d, &o), "49");
	free(frames);
	free(x);
	free(y);
	free(x2);
	free(y2);
}

/* ------------------------------------------------------------ raw files and CATALOG.csv */

/* Splits a catalog line in place on the commas outside quotes (quotes kept,
 * the newline removed); the number of fields. */
static int csv_fields(char *line, char **fld, int max)
{
	int nf = 0, q = 0;
	line[strcspn(line, "\r\n")] = 0;
	fld[nf++] = line;
	for (char *p = line; *p; p++) {
		if (*p == '"')
			q = !q;
		else if (*p == ',' && !q && nf < max) {
			*p = 0;
			fld[nf++] = p + 1;
		}
	}
	return nf;
}

/* An independent reading of the writer's catalog: expected rows of `base` per
 * split (training up to 2019-06-01 00:00:00 inclusive, test after). */
static int expected_rows(const char *catalog, const char *base, int split, int64_t *rows)
{
	FILE *f = fopen(catalog, "r");
	if (!f)
		return -1;
	char line[4096];
	int n = 0;
	if (!fgets(line, sizeof line, f)) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		char *fld[32];
		if (csv_fields(line, fld, 32) < 21)
			continue;
		const char *fname = strrchr(fld[1], '/') ? strrchr(fld[1], '/') + 1 : fld[1];
		int train = strcmp(fld[4], "2019-06-01 00:00:00") <= 0;
		if (!strcmp(fld[3], "vil") && !strcmp(fname, base) && atof(fld[20]) == 0 && train == (split == SEVIR_TRAIN))
			rows[n++] = atoll(fld[2]);
	}
	fclose(f);
	return n;
}

static void test_raw(void)
{
	const int NE = 12, N = 48, T = 25;
	char *h5 = tpath("SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5");
	double t0 = now();
	TEST_OK(sevir_write_raw(h5, NULL, NE, N, 21));
	printf("sevir_write_raw: %d events of %dx%d in %.0f ms\n", NE, N, N, (now() - t0) * 1e3);
	char *cat = tpath("CATALOG.csv");
	TEST_ASSERT(access(cat, R_OK) == 0, "CATALOG.csv not written beside the file");
	{ /* the catalog exercises the filters */
		FILE *f = fopen(cat, "r");
		char line[4096];
		int ir = 0, missing = 0, other = 0, quoted = 0, boundary = 0;
		while (f && fgets(line, sizeof line, f)) {
			ir += strstr(line, ",ir069,") != NULL;
			missing += strstr(line, ",vil,") && !strstr(line, ",0.000000\n") && strstr(line, "STORMEVENTS");
			other += strstr(line, ",vil,") && !strstr(line, "SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5");
			quoted += strchr(line, '"') != NULL;
			boundary += strstr(line, ",vil,2019-06-01 00:00:00,") != NULL;
		}
		if (f)
			fclose(f);
		/* vil rows of other files would name files that do not exist (test_catalog_home) */
		TEST_ASSERT(ir == NE && missing >= 1 && other == 0 && quoted >= 1 && boundary == 1,
		            "catalog rows: %d ir069, %d vil with missing data, %d vil of other files, %d quoted, %d vil "
		            "at 2019-06-01 00:00:00",
		            ir, missing, other, quoted, boundary);
	}
	uint8_t *frames = xmalloc((size_t)T * N * N);
	float *x = xmalloc((size_t)13 * N * N * sizeof *x), *y = xmalloc((size_t)12 * N * N * sizeof *y);
	int total = 0;
	for (int split = 0; split < 2; split++) {
		int64_t rows[64];
		int ne = expected_rows(cat, "SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5", split, rows);
		sevir_data *d;
		TEST_OK(open_file(&d, h5, (enum sevir_split)split, 0));
		TEST_ASSERT(ne >= 1 && sevir_count(d) == 3 * ne, "split %d: %d samples, the catalog has %d events", split,
		            sevir_count(d), ne);
		TEST_ASSERT(strstr(sevir_describe(d), "raw"), "describe: %s", sevir_describe(d));
		total += ne;
		for (int i = 0; i < sevir_count(d); i++) {
			int64_t ev;
			int ft;
			TEST_OK(sevir_sample_source(d, i, &ev, &ft));
			TEST_ASSERT(ev == rows[i / 3] && ft == 12 * (i % 3), "split %d sample %d: row %lld frame %d, expected %lld %d",
			            split, i, (long long)ev, ft, (long long)rows[i / 3], 12 * (i % 3));
			TEST_OK(sevir_read(d, &i, 1, 0, x, y));
			sevir_synthetic_frames(21, ev, N, ft, T, frames);
			for (int t = 0; t < T; t++) {
				const float *got = t < 13 ? x + (size_t)t * N * N : y + (size_t)(t - 13) * N * N;
				expect_frames("raw file vs generator", got, frames + (size_t)t * N * N, N, 0, 0, N, 1);
			}
		}
		/* downsampled and cropped reads of the same file */
		sevir_close(d);
		struct sevir_options o;
		sevir_options_init(&o);
		o.path = h5;
		o.split = (enum sevir_split)split;
		o.size = 16;
		o.resize = SEVIR_DOWNSAMPLE;
		TEST_OK(sevir_open(&d, &o));
		int i = 1;
		int64_t ev;
		int ft;
		TEST_OK(sevir_sample_source(d, i, &ev, &ft));
		TEST_OK(sevir_read(d, &i, 1, 0, x, y));
		sevir_synthetic_frames(21, ev, N, ft, T, frames);
		expect_frames("raw downsampled", y + (size_t)11 * 16 * 16, frames + (size_t)24 * N * N, N, 0, 0, 16, 3);
		sevir_close(d);
		o.resize = SEVIR_CROP;
		TEST_OK(sevir_open(&d, &o));
		TEST_OK(sevir_read(d, &i, 1, 99, x, y));
		int oy = -1, ox = -1;
		TEST_ASSERT(find_offset(x, y, 13, T, frames, N, 16, &oy, &ox) >= 1, "raw crop is no window of the frames");
		if (split == SEVIR_TEST)
			TEST_ASSERT(oy == 16 && ox == 16, "raw test split: centre crop at %d,%d", oy, ox);
		sevir_close(d);
	}
	TEST_ASSERT(total < NE, "events with missing data were not filtered (%d of %d)", total, NE);

	/* a hand-written catalog: other column order, extra columns, quotes, CRLF, a blank line,
	 * duplicates, another file's events, other types, missing data */
	char *cat2 = tpath("cat2.csv");
	FILE *f = fopen(cat2, "w");
	fprintf(f, "\xef\xbb\xbf"
	           "extra,pct_missing,\"time_utc\",img_type,file_index,notes,file_name,id\r\n"
	           "a,0,2018-03-01 10:00:00,vil,2,\"x, \"\"y\"\"\",vil/2018/SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800002\r\n"
	           "a,0.0,2019-05-31 23:59:59,vil,0,,SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800000\r\n"
	           "\r\n"
	           "a,0,2019-06-01 00:00:00,vil,5,,SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800005\r\n"
	           "a,0,2019-06-01 00:00:00.250,vil,7,,SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800007\r\n"
	           "a,0,2019-07-01 00:00:00,vil,6,\"multi\nline\",vil/SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800006\r\n"
	           "a,0.5,2018-03-01 10:00:00,vil,4,,SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800004\r\n"
	           "a,0,2018-03-01 10:00:00,ir069,7,,SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800007\r\n"
	           "a,0,2018-03-01 10:00:00,vil,8,,SEVIR_VIL_OTHER.h5,S800008\r\n"
	           "a,0,2018-03-01 10:00:00,vil,2,,SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5,S800002\r\n");
	fclose(f);
	/* 2019-06-01 00:00:00 itself is a training event (the reference code's
	 * end_date <= 2019-06-01), 2019-05-31 23:59:59 too, and the test split
	 * starts after it: 2019-06-01 00:00:00.250 is a test event */
	int64_t want[2][3] = {{0, 2, 5}, {6, 7}};
	int nwant[2] = {3, 2};
	for (int split = 0; split < 2; split++) {
		struct sevir_options o;
		sevir_options_init(&o);
		o.path = h5;
		o.catalog = cat2;
		o.split = (enum sevir_split)split;
		sevir_data *d;
		TEST_OK(sevir_open(&d, &o));
		TEST_ASSERT(sevir_count(d) == 3 * nwant[split], "hand-written catalog, split %d: %d samples, expected %d",
		            split, sevir_count(d), 3 * nwant[split]);
		for (int k = 0; k < nwant[split] && sevir_count(d) == 3 * nwant[split]; k++) {
			int64_t ev;
			int ft;
			TEST_OK(sevir_sample_source(d, 3 * k, &ev, &ft));
			TEST_ASSERT(ev == want[split][k], "hand-written catalog, split %d event %d: row %lld, expected %lld",
			            split, k, (long long)ev, (long long)want[split][k]);
		}
		sevir_close(d);
	}
	free(frames);
	free(x);
	free(y);
}

/* ------------------------------------------------------------ prepared files */

static void test_prepared(void)
{
	const int NS = 9, N = 32;
	char *h5 = tpath("prepared.h5");
	TEST_OK(sevir_write_prepared(h5, NS, N, 5));
	sevir_data *p, *s;
	TEST_OK(open_file(&p, h5, SEVIR_TRAIN, 0));
	struct sevir_options o;
	sevir_options_init(&o);
	o.seed = 5;
	o.synthetic_size = N;
	o.synthetic_samples = NS;
	TEST_OK(sevir_open(&s, &o));
	TEST_ASSERT(sevir_count(p) == NS && sevir_size(p) == N, "prepared: %d samples of %d", sevir_count(p),
	            sevir_size(p));
	TEST_ASSERT(strstr(sevir_describe(p), "prepared"), "describe: %s", sevir_describe(p));
	size_t nx = (size_t)NS * 13 * N * N, ny = (size_t)NS * 12 * N * N;
	float *x1 = xmalloc(nx * 4), *y1 = xmalloc(ny * 4), *x2 = xmalloc(nx * 4), *y2 = xmalloc(ny * 4);
	int idx[9] = {8, 0, 4, 1, 7, 2, 3, 6, 5};
	TEST_OK(sevir_read(p, idx, NS, 0, x1, y1));
	TEST_OK(sevir_read(s, idx, NS, 0, x2, y2));
	TEST_ASSERT(!memcmp(x1, x2, nx * 4) && !memcmp(y1, y2, ny * 4),
	            "prepared file != the synthetic source of the same seed");
	sevir_close(p);
	sevir_close(s);
	/* kept in memory (the default for a file this small) or read batch by
	 * batch (STARNN_DATA_MEMORY_MB=0): the same batches, whole images and
	 * crops (random for training, centred for the test split) */
	static const int sizes[2] = {32, 24};
	for (int k = 0; k < 2; k++)
		for (int split = 0; split < 2; split++) {
			sevir_data *m, *f;
			enum sevir_split sp = split ? SEVIR_TEST : SEVIR_TRAIN;
			TEST_OK(open_file(&m, h5, sp, sizes[k]));
			setenv("STARNN_DATA_MEMORY_MB", "0", 1);
			TEST_OK(open_file(&f, h5, sp, sizes[k]));
			unsetenv("STARNN_DATA_MEMORY_MB");
			TEST_ASSERT(strstr(sevir_describe(m), "(in memory)") && !strstr(sevir_describe(f), "(in memory)"),
			            "in memory: '%s', from the file: '%s'", sevir_describe(m), sevir_describe(f));
			size_t mx = (size_t)NS * 13 * sizes[k] * sizes[k], my = (size_t)NS * 12 * sizes[k] * sizes[k];
			TEST_OK(sevir_read(m, idx, NS, 77, x1, y1));
			TEST_OK(sevir_read(f, idx, NS, 77, x2, y2));
			TEST_ASSERT(!memcmp(x1, x2, mx * 4) && !memcmp(y1, y2, my * 4),
			            "size %d, split %d: batches from memory != batches from the file", sizes[k], split);
			sevir_close(m);
			sevir_close(f);
		}
	setenv("STARNN_DATA_MEMORY_MB", "lots", 1);
	EXPECT_ERROR(open_file(&p, h5, SEVIR_TRAIN, 0), "STARNN_DATA_MEMORY_MB");
	unsetenv("STARNN_DATA_MEMORY_MB");
	free(x1);
	free(y1);
	free(x2);
	free(y2);
	/* no temporary files left behind */
	DIR *dd = opendir(dir);
	struct dirent *de;
	int tmp = 0;
	while (dd && (de = readdir(dd)))
		tmp += strstr(de->d_name, ".tmp.") != NULL;
	if (dd)
		closedir(dd);
	TEST_ASSERT(tmp == 0, "%d temporary files left", tmp);
	/* a failing write leaves nothing */
	EXPECT_ERROR(sevir_write_prepared(tpath("no/such/dir/p.h5"), 2, 16, 1), "temporary");
	EXPECT_ERROR(sevir_write_prepared(tpath("p.h5"), 0, 16, 1), "samples");
}

/* ------------------------------------------------------------ the catalog's data home */

/* A raw file written where SEVIR's tree puts it (HOME/vil/2018/NAME.h5,
 * HOME/CATALOG.csv): every vil row's file opens as data_home + '/' +
 * file_name (what the SEVIR authors' loaders do) and holds that row's id at
 * file_index, each event is listed once as vil, the other rows are of
 * other image types in their own folders; models/unet's reader takes the
 * catalog and picks the rows an independent reading of it picks, the
 * boundary event (exactly 2019-06-01 00:00:00) in training. */
static void test_catalog_home(void)
{
	const int NE = 15, N = 16;
	char home[512], sub[600], h5[700], cat[600];
	snprintf(home, sizeof home, "%s", tpath("home"));
	snprintf(sub, sizeof sub, "%s/vil", home);
	TEST_ASSERT(mkdir(home, 0777) == 0 && mkdir(sub, 0777) == 0, "mkdir %s", sub);
	snprintf(sub, sizeof sub, "%s/vil/2018", home);
	TEST_ASSERT(mkdir(sub, 0777) == 0, "mkdir %s", sub);
	snprintf(h5, sizeof h5, "%s/SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5", sub);
	snprintf(cat, sizeof cat, "%s/CATALOG.csv", home);
	TEST_OK(sevir_write_raw(h5, cat, NE, N, 9));
	FILE *f = fopen(cat, "r");
	TEST_ASSERT(f != NULL, "no catalog %s", cat);
	char line[4096];
	int rows = 0, vil = 0, opened = 0, other = 0, listed[64] = {0};
	while (f && fgets(line, sizeof line, f)) {
		char *fld[32];
		if (rows++ == 0 || csv_fields(line, fld, 32) < 21)
			continue;
		const char *type = fld[3];
		if (strcmp(type, "vil")) { /* another image type, in its own folder */
			char prefix[16];
			snprintf(prefix, sizeof prefix, "%s/", type);
			other += strncmp(fld[1], prefix, strlen(prefix)) == 0 &&
			         (!strcmp(type, "ir069") || !strcmp(type, "ir107") || !strcmp(type, "lght"));
			continue;
		}
		vil++;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", home, fld[1]);
		hid_t fid;
		H5E_BEGIN_TRY
		{
			fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
		}
		H5E_END_TRY;
		TEST_ASSERT(fid >= 0, "row %d: %s does not open", rows, path);
		if (fid < 0)
			continue;
		/* the row's id at file_index of `id` */
		hid_t ds = H5Dopen2(fid, "id", H5P_DEFAULT), ft = H5Dget_type(ds), mt = H5Tcopy(H5T_C_S1);
		size_t w = H5Tget_size(ft);
		H5Tset_size(mt, w + 1);
		hsize_t n[1];
		hid_t sp = H5Dget_space(ds);
		H5Sget_simple_extent_dims(sp, n, NULL);
		char *ids = calloc((size_t)n[0], w + 1);
		H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids);
		long idx = atol(fld[2]);
		TEST_ASSERT(idx >= 0 && idx < (long)n[0] && !strcmp(ids + (size_t)idx * (w + 1), fld[0]),
		            "row %d: id %s, file_index %ld of %s", rows, fld[0], idx, path);
		opened++;
		if (idx >= 0 && idx < 64)
			listed[idx]++;
		free(ids);
		H5Sclose(sp);
		H5Tclose(mt);
		H5Tclose(ft);
		H5Dclose(ds);
		H5Fclose(fid);
	}
	if (f)
		fclose(f);
	int once = 1;
	for (int e = 0; e < NE; e++)
		once &= listed[e] == 1;
	TEST_ASSERT(vil == NE && opened == NE && once, "%d vil rows for %d events, %d opened, each once: %d", vil, NE,
	            opened, once);
	TEST_ASSERT(other == rows - 1 - vil, "%d of the %d other rows name their own image type's folder", other,
	            rows - 1 - vil);
	int boundary_row = -1;
	for (int split = 0; split < 2; split++) {
		int64_t want[64];
		int ne = expected_rows(cat, "SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5", split, want);
		struct sevir_options o;
		sevir_options_init(&o);
		o.path = h5;
		o.catalog = cat;
		o.split = (enum sevir_split)split;
		sevir_data *d;
		TEST_OK(sevir_open(&d, &o));
		TEST_ASSERT(sevir_count(d) == 3 * ne, "data home, split %d: %d samples, the catalog has %d events", split,
		            sevir_count(d), ne);
		for (int i = 0; i < sevir_count(d) && sevir_count(d) == 3 * ne; i += 3) {
			int64_t ev;
			int ft;
			TEST_OK(sevir_sample_source(d, i, &ev, &ft));
			TEST_ASSERT(ev == want[i / 3], "data home, split %d event %d: row %lld, expected %lld", split, i / 3,
			            (long long)ev, (long long)want[i / 3]);
		}
		sevir_close(d);
	}
	/* the boundary event is among the training rows */
	f = fopen(cat, "r");
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, ",vil,2019-06-01 00:00:00,"))
			boundary_row = atoi(strchr(line, ',') + 1 + strcspn(strchr(line, ',') + 1, ",") + 1);
	if (f)
		fclose(f);
	int64_t train[64];
	int ntrain = expected_rows(cat, "SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5", SEVIR_TRAIN, train), in_train = 0;
	for (int k = 0; k < ntrain; k++)
		in_train |= train[k] == boundary_row;
	TEST_ASSERT(boundary_row >= 0 && in_train, "the event at 2019-06-01 00:00:00 (row %d) is not a training event",
	            boundary_row);
	/* a file outside the catalog's directory is refused before anything is written */
	char outside[600];
	snprintf(outside, sizeof outside, "%s/outside.h5", dir);
	snprintf(cat, sizeof cat, "%s/vil/CATALOG.csv", home);
	EXPECT_ERROR(sevir_write_raw(outside, cat, 2, 8, 1), "not in the directory");
	TEST_ASSERT(access(outside, F_OK) != 0 && access(cat, F_OK) != 0, "a refused raw write left files");
	unlink(h5);
	snprintf(cat, sizeof cat, "%s/CATALOG.csv", home);
	unlink(cat);
	rmdir(sub);
	snprintf(sub, sizeof sub, "%s/vil", home);
	rmdir(sub);
	rmdir(home);
}

/* ------------------------------------------------------------ prepared layouts */

/* Every sample of two sources, whole images: the same values, bit for bit. */
static void expect_same_samples(const char *what, sevir_data *a, sevir_data *b)
{
	int n = sevir_count(a), s = sevir_size(a);
	TEST_ASSERT(n == sevir_count(b) && s == sevir_size(b), "%s: %d samples of %d against %d of %d", what, n, s,
	            sevir_count(b), sevir_size(b));
	if (n != sevir_count(b) || s != sevir_size(b))
		return;
	size_t nx = (size_t)13 * s * s, ny = (size_t)12 * s * s;
	float *x1 = xmalloc(nx * 4), *y1 = xmalloc(ny * 4), *x2 = xmalloc(nx * 4), *y2 = xmalloc(ny * 4);
	int same = 1;
	for (int i = 0; i < n; i++) {
		TEST_OK(sevir_read(a, &i, 1, 5, x1, y1));
		TEST_OK(sevir_read(b, &i, 1, 5, x2, y2));
		same &= !memcmp(x1, x2, nx * 4) && !memcmp(y1, y2, ny * 4);
	}
	TEST_ASSERT(same, "%s: the samples differ", what);
	free(x1);
	free(y1);
	free(x2);
	free(y2);
}

/* The prepared layouts the SEVIR authors' script and others write: uint8
 * (their make_nowcast_dataset.py: chunks of h5py's choice, the first
 * dimension unlimited), float32 and float64, chunked or contiguous, read
 * as the float32 file of the same samples, bit for bit, from memory and
 * from the file; the memory limit counts uint8 files as bytes; a raw
 * file's split written as a prepared file reads as that split. */
static void test_prepared_layouts(void)
{
	const int NS = 9, N = 32;
	char *ref = tpath("ref.h5");
	TEST_OK(sevir_write_prepared(ref, NS, N, 5));
	const struct {
		struct sevir_prepared_layout l;
		hid_t type;
		const char *name;
	} layouts[] = {
		{{SEVIR_UINT8, SEVIR_STORAGE_OFFICIAL}, H5T_STD_U8LE, "uint8, official"},
		{{SEVIR_UINT8, SEVIR_STORAGE_CONTIGUOUS}, H5T_STD_U8LE, "uint8, contiguous"},
		{{SEVIR_UINT8, SEVIR_STORAGE_TILES}, H5T_STD_U8LE, "uint8, tiles"},
		{{SEVIR_FLOAT32, SEVIR_STORAGE_OFFICIAL}, H5T_IEEE_F32LE, "float32, official"},
		{{SEVIR_FLOAT64, SEVIR_STORAGE_CONTIGUOUS}, H5T_IEEE_F64LE, "float64, contiguous"},
	};
	for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++) {
		char *h5 = tpath("layout.h5");
		TEST_OK(sevir_write_prepared_as(h5, NS, N, 5, &layouts[k].l));
		/* the layout in the file */
		hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT), ds = H5Dopen2(f, "IN", H5P_DEFAULT);
		hid_t t = H5Dget_type(ds), sp = H5Dget_space(ds), dcpl = H5Dget_create_plist(ds);
		hsize_t dims[4], maxd[4], chunk[4] = {0};
		H5Sget_simple_extent_dims(sp, dims, maxd);
		H5D_layout_t lay = H5Pget_layout(dcpl);
		if (lay == H5D_CHUNKED)
			H5Pget_chunk(dcpl, 4, chunk);
		int official = layouts[k].l.storage == SEVIR_STORAGE_OFFICIAL;
		TEST_ASSERT(H5Tequal(t, layouts[k].type) > 0, "%s: `IN` has another type", layouts[k].name);
		TEST_ASSERT((lay == H5D_CONTIGUOUS) == (layouts[k].l.storage == SEVIR_STORAGE_CONTIGUOUS) &&
		                (maxd[0] == H5S_UNLIMITED) == official && dims[0] == (hsize_t)NS,
		            "%s: layout %d, %llu samples, max %llu", layouts[k].name, (int)lay, (unsigned long long)dims[0],
		            (unsigned long long)maxd[0]);
		if (official) /* h5py's chunks for 9 x 32 x 32 x 13 (h5py 3.16: 5x16x16x7 uint8, 3x8x16x7 float32) */
			TEST_ASSERT(chunk[0] == (layouts[k].l.type == SEVIR_UINT8 ? 5 : 3) &&
			                chunk[1] == (layouts[k].l.type == SEVIR_UINT8 ? 16 : 8) && chunk[2] == 16 && chunk[3] == 7,
			            "%s: chunks %llux%llux%llux%llu", layouts[k].name, (unsigned long long)chunk[0],
			            (unsigned long long)chunk[1], (unsigned long long)chunk[2], (unsigned long long)chunk[3]);
		H5Pclose(dcpl);
		H5Sclose(sp);
		H5Tclose(t);
		H5Dclose(ds);
		H5Fclose(f);
		for (int mem = 0; mem < 2; mem++) {
			if (!mem)
				setenv("STARNN_DATA_MEMORY_MB", "0", 1);
			for (int split = 0; split < 2; split++) {
				sevir_data *a, *b;
				TEST_OK(open_file(&a, h5, (enum sevir_split)split, split ? 24 : 0));
				TEST_OK(open_file(&b, ref, (enum sevir_split)split, split ? 24 : 0));
				TEST_ASSERT(!strstr(sevir_describe(a), "(in memory)") == !mem, "%s: %s", layouts[k].name,
				            sevir_describe(a));
				char what[96];
				snprintf(what, sizeof what, "%s, %s, %s", layouts[k].name, mem ? "in memory" : "from the file",
				         split ? "centre crops" : "whole");
				expect_same_samples(what, a, b);
				sevir_close(a);
				sevir_close(b);
			}
			unsetenv("STARNN_DATA_MEMORY_MB");
		}
	}
	/* the memory limit counts a uint8 file's bytes: 9 x 32 x 32 x 25 is
	 * 225 KiB as uint8, 900 KiB as float32; a limit of 0.5 MiB keeps the
	 * uint8 file in memory, not the float32 one */
	{
		char *h5 = tpath("u8.h5");
		const struct sevir_prepared_layout u8 = {SEVIR_UINT8, SEVIR_STORAGE_OFFICIAL};
		TEST_OK(sevir_write_prepared_as(h5, NS, N, 5, &u8));
		setenv("STARNN_DATA_MEMORY_MB", "0.5", 1);
		sevir_data *a, *b;
		TEST_OK(open_file(&a, h5, SEVIR_TRAIN, 0));
		TEST_OK(open_file(&b, ref, SEVIR_TRAIN, 0));
		unsetenv("STARNN_DATA_MEMORY_MB");
		TEST_ASSERT(strstr(sevir_describe(a), "(in memory)") && !strstr(sevir_describe(b), "(in memory)"),
		            "limit 0.5 MiB: uint8 '%s', float32 '%s'", sevir_describe(a), sevir_describe(b));
		expect_same_samples("uint8 in memory against float32 from the file", a, b);
		sevir_close(a);
		sevir_close(b);
		unlink(h5);
	}
	/* a raw file's split as a prepared file: the split's samples, in order */
	{
		char *raw = tpath("SEVIR_VIL_RANDOMEVENTS_2019_0501_0831.h5"), *prep = tpath("from.h5");
		TEST_OK(sevir_write_raw(raw, NULL, 10, 24, 3));
		for (int split = 0; split < 2; split++) {
			const struct sevir_prepared_layout u8 = {SEVIR_UINT8, SEVIR_STORAGE_OFFICIAL};
			TEST_OK(sevir_write_prepared_from(prep, raw, NULL, (enum sevir_split)split, &u8));
			sevir_data *a, *b;
			TEST_OK(open_file(&a, raw, (enum sevir_split)split, 0));
			TEST_OK(open_file(&b, prep, SEVIR_TEST, 0));
			expect_same_samples(split ? "raw test split as a prepared file" : "raw training split as a prepared file",
			                    a, b);
			sevir_close(a);
			sevir_close(b);
		}
		EXPECT_ERROR(sevir_write_prepared_from(prep, ref, NULL, SEVIR_TEST, &layouts[0].l), "not a raw");
		unlink(raw);
		unlink(prep);
		unlink(tpath("CATALOG.csv"));
	}
	unlink(ref);
	unlink(tpath("layout.h5"));
}

/* ------------------------------------------------------------ loader */

static void test_loader(void)
{
	struct sevir_options o;
	sevir_options_init(&o);
	o.seed = 4;
	o.synthetic_size = 48;
	o.size = 32;
	o.synthetic_samples = 22; /* 5 batches of 4 per epoch, 2 samples dropped */
	sevir_data *d;
	TEST_OK(sevir_open(&d, &o));
	const int B = 4, S = 32;
	const size_t bx = (size_t)B * 13 * S * S, by = (size_t)B * 12 * S * S;
	const int G = 13; /* batches checked: into the third epoch */
	float *ref_x = xmalloc(G * bx * 4), *ref_y = xmalloc(G * by * 4);
	sevir_loader *l;
	TEST_OK(sevir_loader_start(&l, d, B, 1, 77, 3, 0));
	TEST_ASSERT(sevir_batches_per_epoch(l) == 5, "batches per epoch %d, expected 5", sevir_batches_per_epoch(l));
	int idx[4], seen[2][22] = {{0}};
	uint64_t cs;
	double t_load = 0;
	for (int g = 0; g < G; g++) {
		const float *x, *y;
		int64_t e, i;
		double t0 = now();
		TEST_OK(sevir_loader_next(l, &x, &y, &e, &i));
		t_load += now() - t0;
		TEST_ASSERT(e == g / 5 && i == g % 5, "batch %d: epoch %lld index %lld", g, (long long)e, (long long)i);
		memcpy(ref_x + g * bx, x, bx * 4);
		memcpy(ref_y + g * by, y, by * 4);
		TEST_OK(sevir_batch_plan(22, B, 1, 77, g, idx, &cs));
		for (int k = 0; k < B && g < 10; k++)
			seen[g / 5][idx[k]]++;
		float *px = xmalloc(bx * 4), *py = xmalloc(by * 4);
		TEST_OK(sevir_read(d, idx, B, cs, px, py));
		TEST_ASSERT(!memcmp(px, x, bx * 4) && !memcmp(py, y, by * 4), "loader batch %d != sevir_read of its plan", g);
		free(px);
		free(py);
	}
	sevir_loader_stop(l);
	int dup = 0, same_order = 1;
	for (int k = 0; k < 22; k++)
		dup += seen[0][k] > 1 || seen[1][k] > 1;
	int p0[4], p1[4];
	TEST_OK(sevir_batch_plan(22, B, 1, 77, 0, p0, NULL));
	TEST_OK(sevir_batch_plan(22, B, 1, 77, 5, p1, NULL));
	same_order = !memcmp(p0, p1, sizeof p0);
	TEST_ASSERT(dup == 0, "a sample repeats within an epoch");
	TEST_ASSERT(!same_order, "epochs 0 and 1 start with the same batch");
	TEST_OK(sevir_batch_plan(22, B, 0, 77, 6, p0, NULL));
	TEST_ASSERT(p0[0] == 4 && p0[3] == 7, "shuffle off: batch 6 = samples %d..%d, expected 4..7", p0[0], p0[3]);

	/* resume from batch k: the same batches as the uninterrupted run */
	const int K = 7;
	TEST_OK(sevir_loader_start(&l, d, B, 1, 77, 2, K));
	for (int g = K; g < G; g++) {
		const float *x, *y;
		int64_t e, i;
		TEST_OK(sevir_loader_next(l, &x, &y, &e, &i));
		TEST_ASSERT(e == g / 5 && i == g % 5, "resumed batch %d: epoch %lld index %lld", g, (long long)e, (long long)i);
		TEST_ASSERT(!memcmp(ref_x + g * bx, x, bx * 4) && !memcmp(ref_y + g * by, y, by * 4),
		            "resumed at %d: batch %d differs from the uninterrupted run", K, g);
	}
	sevir_loader_stop(l);

	/* stop while the thread is blocked on a full ring, and right after start */
	TEST_OK(sevir_loader_start(&l, d, B, 1, 77, 2, 0));
	const float *x, *y;
	TEST_OK(sevir_loader_next(l, &x, &y, NULL, NULL));
	usleep(100000);
	double t0 = now();
	sevir_loader_stop(l);
	double stop_ms = (now() - t0) * 1e3;
	TEST_ASSERT(stop_ms < 200, "stopping a blocked loader took %.0f ms", stop_ms);
	TEST_OK(sevir_loader_start(&l, d, B, 0, 1, 4, 0));
	sevir_loader_stop(l);
	EXPECT_ERROR(sevir_loader_start(&l, d, 23, 1, 1, 2, 0), "larger");
	EXPECT_ERROR(sevir_loader_start(&l, d, 4, 1, 1, 0, 0), "depth");
	printf("loader: %.2f ms waiting per batch of 4 (32x32 crops)\n", t_load * 1e3 / G);
	sevir_close(d);
	free(ref_x);
	free(ref_y);
}

/* ------------------------------------------------------------ errors */

/* An HDF5 file with the given datasets (NULL name ends the list). */
struct dsdef {
	const char *name;
	hid_t type;
	int rank;
	hsize_t dims[4];
	const void *data;
};
static void make_h5(const char *path, const struct dsdef *defs)
{
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	for (; defs->name; defs++) {
		hid_t sp = H5Screate_simple(defs->rank, defs->dims, NULL);
		hid_t ds = H5Dcreate2(f, defs->name, defs->type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		if (defs->data)
			H5Dwrite(ds, defs->type, H5S_ALL, H5S_ALL, H5P_DEFAULT, defs->data);
		H5Dclose(ds);
		H5Sclose(sp);
	}
	H5Fclose(f);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void test_errors(void)
{
	sevir_data *d;
	EXPECT_ERROR(open_file(&d, tpath("missing.h5"), SEVIR_TRAIN, 0), "No such file");
	write_text(tpath("text.h5"), "not hdf5\n");
	EXPECT_ERROR(open_file(&d, tpath("text.h5"), SEVIR_TRAIN, 0), "not an HDF5 file");
	EXPECT_ERROR(open_file(&d, dir, SEVIR_TRAIN, 0), "not a regular file");

	const int N = 8;
	float *in = calloc((size_t)3 * N * N * 13, 4), *out = calloc((size_t)3 * N * N * 12, 4);
	struct dsdef only_x[] = {{"x", H5T_NATIVE_FLOAT, 1, {4}, NULL}, {0}};
	make_h5(tpath("e.h5"), only_x);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "neither");
	struct dsdef only_in[] = {{"IN", H5T_NATIVE_FLOAT, 4, {3, N, N, 13}, in}, {0}};
	make_h5(tpath("e.h5"), only_in);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "`OUT`");
	struct dsdef rank3[] = {{"IN", H5T_NATIVE_FLOAT, 3, {3, N, N}, NULL}, {"OUT", H5T_NATIVE_FLOAT, 4, {3, N, N, 12}, out}, {0}};
	make_h5(tpath("e.h5"), rank3);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "rank 3");
	struct dsdef nmis[] = {{"IN", H5T_NATIVE_FLOAT, 4, {3, N, N, 13}, in}, {"OUT", H5T_NATIVE_FLOAT, 4, {2, N, N, 12}, out}, {0}};
	make_h5(tpath("e.h5"), nmis);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "`OUT` is 2x8x8x12");
	struct dsdef frames[] = {{"IN", H5T_NATIVE_FLOAT, 4, {3, N, N, 10}, in}, {"OUT", H5T_NATIVE_FLOAT, 4, {3, N, N, 12}, out}, {0}};
	make_h5(tpath("e.h5"), frames);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "10 frames");
	struct dsdef ints[] = {{"IN", H5T_NATIVE_INT, 4, {3, N, N, 13}, NULL}, {"OUT", H5T_NATIVE_FLOAT, 4, {3, N, N, 12}, out}, {0}};
	make_h5(tpath("e.h5"), ints);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "float32 or float64");
	/* the message names the type found and the three accepted */
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "`IN` holds int32 values; a prepared file holds uint8");
	struct dsdef i8[] = {{"IN", H5T_NATIVE_FLOAT, 4, {3, N, N, 13}, in}, {"OUT", H5T_NATIVE_SCHAR, 4, {3, N, N, 12}, NULL}, {0}};
	make_h5(tpath("e.h5"), i8);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "`OUT` holds int8 values");
	struct dsdef u16[] = {{"IN", H5T_NATIVE_USHORT, 4, {3, N, N, 13}, NULL}, {"OUT", H5T_NATIVE_UCHAR, 4, {3, N, N, 12}, NULL}, {0}};
	make_h5(tpath("e.h5"), u16);
	EXPECT_ERROR(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0), "`IN` holds uint16 values");
	/* uint8 is accepted, whatever its values (0..255 are all raw VIL) */
	struct dsdef u8[] = {{"IN", H5T_NATIVE_UCHAR, 4, {3, N, N, 13}, NULL}, {"OUT", H5T_NATIVE_UCHAR, 4, {3, N, N, 12}, NULL}, {0}};
	make_h5(tpath("e.h5"), u8);
	TEST_OK(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0));
	sevir_close(d);
	/* float64 is accepted */
	double *in64 = calloc((size_t)3 * N * N * 13, 8);
	struct dsdef f64[] = {{"IN", H5T_NATIVE_DOUBLE, 4, {3, N, N, 13}, in64}, {"OUT", H5T_NATIVE_FLOAT, 4, {3, N, N, 12}, out}, {0}};
	make_h5(tpath("e.h5"), f64);
	TEST_OK(open_file(&d, tpath("e.h5"), SEVIR_TRAIN, 0));
	sevir_close(d);
	/* NaN and out-of-range values: file, dataset, sample */
	out[(size_t)2 * N * N * 12 + 5] = NAN;
	struct dsdef nan[] = {{"IN", H5T_NATIVE_FLOAT, 4, {3, N, N, 13}, in}, {"OUT", H5T_NATIVE_FLOAT, 4, {3, N, N, 12}, out}, {0}};
	make_h5(tpath("nan.h5"), nan);
	EXPECT_ERROR(open_file(&d, tpath("nan.h5"), SEVIR_TRAIN, 0), "nan.h5: dataset `OUT`, sample 2: value nan (NaN)");
	out[(size_t)2 * N * N * 12 + 5] = 0;
	in[(size_t)1 * N * N * 13 + 7] = 300;
	make_h5(tpath("big.h5"), nan);
	EXPECT_ERROR(open_file(&d, tpath("big.h5"), SEVIR_TRAIN, 0), "dataset `IN`, sample 1: value 300");
	in[(size_t)1 * N * N * 13 + 7] = 0;

	/* raw files */
	uint8_t *vil = calloc((size_t)4 * N * N * 49, 1);
	char ids[4][8] = {"S1", "S2", "S3", "S4"};
	hid_t st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, 8);
	struct dsdef raw_f[] = {{"vil", H5T_NATIVE_FLOAT, 4, {4, N, N, 49}, NULL}, {"id", st, 1, {4}, ids}, {0}};
	make_h5(tpath("r.h5"), raw_f);
	EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), "8-bit unsigned");
	struct dsdef raw_48[] = {{"vil", H5T_NATIVE_UCHAR, 4, {4, N, N, 48}, NULL}, {"id", st, 1, {4}, ids}, {0}};
	make_h5(tpath("r.h5"), raw_48);
	EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), "48 frames");
	struct dsdef raw_noid[] = {{"vil", H5T_NATIVE_UCHAR, 4, {4, N, N, 49}, vil}, {0}};
	make_h5(tpath("r.h5"), raw_noid);
	EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), "`id`");
	/* event row 2 has a missing pixel though the catalog says 0 missing */
	vil[(size_t)2 * N * N * 49 + (size_t)(3 * N + 4) * 49 + 20] = 255;
	struct dsdef raw_ok[] = {{"vil", H5T_NATIVE_UCHAR, 4, {4, N, N, 49}, vil}, {"id", st, 1, {4}, ids}, {0}};
	make_h5(tpath("r.h5"), raw_ok);
	EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), "CATALOG.csv");
	const char *hdr = "id,file_name,file_index,img_type,time_utc,pct_missing\n";
	char text[2048];
	snprintf(text, sizeof text,
	         "%sS1,r.h5,0,vil,2018-01-01 00:00:00,0\nS2,r.h5,1,vil,2018-01-02 00:00:00,0\n"
	         "S3,r.h5,2,vil,2018-01-03 00:00:00,0\nS4,r.h5,3,vil,2019-08-01 00:00:00,0\n",
	         hdr);
	write_text(tpath("CATALOG.csv"), text);
	TEST_OK(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0));
	TEST_ASSERT(sevir_count(d) == 9, "3 train events: %d samples", sevir_count(d));
	/* the missing pixel: sevir_read fails, and the loader passes the error on at that batch */
	int i = 3;
	float *x = malloc((size_t)13 * N * N * 4), *y = malloc((size_t)12 * N * N * 4);
	TEST_OK(sevir_read(d, &i, 1, 0, x, y));
	i = 6;
	EXPECT_ERROR(sevir_read(d, &i, 1, 0, x, y), "missing pixels (255) at frame 20");
	free(x);
	free(y);
	sevir_loader *l;
	TEST_OK(sevir_loader_start(&l, d, 2, 0, 1, 2, 0));
	const float *bx, *by;
	int64_t e, k;
	for (int b = 0; b < 3; b++) /* samples 0..5 */
		TEST_OK(sevir_loader_next(l, &bx, &by, &e, &k));
	EXPECT_ERROR(sevir_loader_next(l, &bx, &by, &e, &k), "missing pixels");
	EXPECT_ERROR(sevir_loader_next(l, &bx, &by, &e, &k), "(batch 3)");
	sevir_loader_stop(l);
	sevir_close(d);
	vil[(size_t)2 * N * N * 49 + (size_t)(3 * N + 4) * 49 + 20] = 0;
	make_h5(tpath("r.h5"), raw_ok);
	TEST_OK(open_file(&d, tpath("r.h5"), SEVIR_TEST, 0));
	TEST_ASSERT(sevir_count(d) == 3, "1 test event: %d samples", sevir_count(d));
	sevir_close(d);

	/* variable-length `id` strings (as h5py writes str) are read as well */
	{
		hid_t vs = H5Tcopy(H5T_C_S1);
		H5Tset_size(vs, H5T_VARIABLE);
		const char *vids[4] = {"S1", "S2", "S3", "S4"};
		struct dsdef raw_v[] = {{"vil", H5T_NATIVE_UCHAR, 4, {4, N, N, 49}, vil}, {"id", vs, 1, {4}, vids}, {0}};
		make_h5(tpath("r.h5"), raw_v);
		TEST_OK(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0));
		TEST_ASSERT(sevir_count(d) == 9, "vlen ids: %d samples", sevir_count(d));
		sevir_close(d);
		vids[1] = "X2"; /* the catalog says S2 for row 1 */
		make_h5(tpath("r.h5"), raw_v);
		EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), "row 1 of");
		H5Tclose(vs);
	}

	/* bad catalogs */
	struct {
		const char *text, *what;
	} cats[] = {
		{"id,file_name,file_index,img_type,time_utc\nS1,r.h5,0,vil,2018-01-01 00:00:00\n", "no column 'pct_missing'"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS1,r.h5,0,vil,yesterday,0\n", "time_utc 'yesterday'"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS1,r.h5,9,vil,2018-01-01 00:00:00,0\n", "file_index 9"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS1,r.h5,x,vil,2018-01-01 00:00:00,0\n", "file_index 'x'"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS1,r.h5,0,vil,2018-01-01 00:00:00,lots\n", "pct_missing 'lots'"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS1,r.h5,0,vil\n", "line 2 has 4 fields"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS9,r.h5,0,vil,2018-01-01 00:00:00,0\n", "holds id 'S1'"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\n\"S1,r.h5,0,vil,2018-01-01 00:00:00,0\n", "unclosed quote"},
		{"id,file_name,file_index,img_type,time_utc,pct_missing\nS1,r.h5,0,vil,2018-01-01 00:00:00,2.5\n"
		 "S2,other.h5,1,vil,2018-01-01 00:00:00,0\nS3,r.h5,2,ir069,2018-01-01 00:00:00,0\n",
		 "no usable events for train"},
	};
	for (size_t c = 0; c < sizeof cats / sizeof *cats; c++) {
		write_text(tpath("CATALOG.csv"), cats[c].text);
		EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), cats[c].what);
	}
	unlink(tpath("CATALOG.csv"));
	EXPECT_ERROR(open_file(&d, tpath("r.h5"), SEVIR_TRAIN, 0), "cannot open the catalog");
	H5Tclose(st);
	free(vil);
	free(in);
	free(in64);
	free(out);
}

static void remove_dir(const char *path)
{
	DIR *dd = opendir(path);
	struct dirent *de;
	while (dd && (de = readdir(dd))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", path, de->d_name);
		unlink(p);
	}
	if (dd)
		closedir(dd);
	rmdir(path);
}

int main(void)
{
	snprintf(dir, sizeof dir, "%s/starnn-sevir-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	double t0 = now();
	test_generator();
	test_motion();
	test_synthetic_source();
	test_raw();
	test_prepared();
	test_catalog_home();
	test_prepared_layouts();
	test_loader();
	test_errors();
	remove_dir(dir);
	printf("%s: %d checks, %d failed (%.1f s)\n", test_failures ? "FAIL" : "PASS", test_checks, test_failures,
	       now() - t0);
	return test_failures ? 1 : 0;
}
