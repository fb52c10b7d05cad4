/* Fuzz harness: the prepared SEVIR reader (models/sevir/prepared.c) on an
 * HDF5 file image: sevir_open (shapes, types, the whole-file NaN / range
 * check) and sevir_read of the first and last samples. Seeds: tiny files of
 * tools/sevir-synth prepared (tests/fuzz/corpus/sevir_prepared): float32 in
 * tiles, uint8 in the SEVIR authors' layout (--dtype uint8 --storage
 * official: chunks across samples, an unlimited first dimension), float64
 * contiguous. */
#include "tests/fuzz/sevir_common.h"

int fuzz_sevir_prepared(const uint8_t *data, size_t size)
{
	struct sevir_options o;
	sevir_options_init(&o);
	o.path = "prepared.h5";
	o.split = SEVIR_TEST; /* centre crops: no crop seed needed */
	return fuzz_sevir_source(data, size, &o);
}

FUZZ_ENTRY(fuzz_sevir_prepared)
