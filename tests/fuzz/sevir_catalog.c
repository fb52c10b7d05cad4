/* Fuzz harness: the CATALOG.csv parser (models/sevir/catalog.c) on the
 * input as the catalog's text, for a raw file vil/2018/SEVIR_VIL_FUZZ.h5 of
 * 8 rows: once for the training split with the file's ids known (they must
 * agree with the catalog's), once for the test split without. Checks what
 * it selects: rows in range, sorted, without repeats. Seeds: catalogs of
 * tools/sevir-synth raw, trimmed, and one of times on and around the
 * split's boundary (tests/fuzz/corpus/sevir_catalog). */
#include <string.h>

#include "models/sevir/internal.h"
#include "tests/fuzz/fuzz.h"

#define NROWS 8

int fuzz_sevir_catalog(const uint8_t *data, size_t size)
{
	static char *ids[NROWS + 1] = {"S800000", "S800001", "S800002", "S800003",
	                               "S800004", "S800005", "S800006", "S800007"};
	char *buf = malloc(size + 1); /* the parser writes into the text, and wants buf[size] */
	if (!buf)
		return 0;
	int rc = 0;
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		memcpy(buf, data, size);
		buf[size] = 0;
		sevir_data d;
		memset(&d, 0, sizeof d);
		d.kind = KIND_RAW;
		d.path = (char *)"vil/2018/SEVIR_VIL_FUZZ.h5";
		d.catalog = (char *)"CATALOG.csv";
		d.split = pass ? SEVIR_TEST : SEVIR_TRAIN;
		d.in_frames = SEVIR_IN_FRAMES;
		d.out_frames = SEVIR_OUT_FRAMES;
		d.frames = SEVIR_FRAMES;
		d.windows = 3;
		d.nrows = NROWS;
		d.ids = pass ? NULL : ids;
		if (sevir_catalog_parse(&d, buf, size) == 0) {
			if (d.nevents < 1 || d.nevents > NROWS)
				rc = FUZZ_FAIL("catalog: %d events of a file of %d rows", d.nevents, NROWS);
			for (int i = 0; rc == 0 && i < d.nevents; i++)
				if (d.rows[i] < 0 || d.rows[i] >= NROWS || (i && d.rows[i] <= d.rows[i - 1]))
					rc = FUZZ_FAIL("catalog: event %d is row %lld", i, (long long)d.rows[i]);
		}
		free(d.rows);
	}
	free(buf);
	return rc;
}

FUZZ_ENTRY(fuzz_sevir_catalog)
