/* Fuzz harness: the raw SEVIR reader (models/sevir/raw.c) on an HDF5 file
 * image: `vil` and `id` checks, the event selection by a fixed catalog
 * (rows 0 and 1, one per split), and sevir_read of the first and last
 * samples of each split. Seeds: tiny files of tools/sevir-synth raw
 * (tests/fuzz/corpus/sevir_raw). */
#include "tests/fuzz/sevir_common.h"

int fuzz_sevir_raw(const uint8_t *data, size_t size)
{
	struct sevir_options o;
	sevir_options_init(&o);
	o.path = FUZZ_RAW_NAME;
	o.catalog = "CATALOG.csv"; /* names the text in messages */
	for (int split = SEVIR_TRAIN; split <= SEVIR_TEST; split++) {
		o.split = (enum sevir_split)split;
		if (fuzz_sevir_source(data, size, &o) != 0)
			return -1;
	}
	return 0;
}

FUZZ_ENTRY(fuzz_sevir_raw)
