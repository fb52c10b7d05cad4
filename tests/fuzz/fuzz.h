/* Shared pieces of the fuzz harnesses (tests/fuzz/NAME.c).
 *
 * Each harness is a function `int fuzz_NAME(const uint8_t *data, size_t
 * size)` that feeds one input to a parser and returns 0 (the input was read
 * or refused with an error value: both are fine) or -1 (a property the
 * parser must keep was broken). tests/fuzz/run builds each one with
 * -DSTARNN_LIBFUZZER, which adds libFuzzer's entry point (a broken property
 * then aborts, i.e. a crash); tests/fuzz/regress links all of them into one
 * ordinary test that feeds the committed corpora and regression inputs.
 *
 * Rules of a harness: no exit(), nothing left allocated after an input,
 * and every size it allocates bounded whatever the input says. */
#ifndef STARNN_TESTS_FUZZ_H
#define STARNN_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef STARNN_LIBFUZZER
#define FUZZ_ENTRY(fn)                                                                                        \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                             \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                              \
	{                                                                                                         \
		if (fn(data, size) != 0)                                                                              \
			abort(); /* a broken property: libFuzzer keeps the input as a crash */                            \
		return 0;                                                                                             \
	}
#else
#define FUZZ_ENTRY(fn)
#endif

/* A broken property: says which, returns -1. */
#define FUZZ_FAIL(...) (fprintf(stderr, "fuzz: " __VA_ARGS__), fputc('\n', stderr), -1)

int fuzz_sevir_prepared(const uint8_t *data, size_t size);
int fuzz_sevir_raw(const uint8_t *data, size_t size);
int fuzz_sevir_catalog(const uint8_t *data, size_t size);
int fuzz_checkpoint(const uint8_t *data, size_t size);
int fuzz_unet_options(const uint8_t *data, size_t size);

#ifdef STARNN_FUZZ_HDF5
#include <hdf5.h>
#include <hdf5_hl.h>

/* The input as a read-only HDF5 file image (HDF5's core driver reads the
 * bytes in place: no temporary file), or -1 when HDF5 refuses it. */
static inline hid_t fuzz_h5_open(const uint8_t *data, size_t size)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* HDF5 would print its error stack on every bad input */
	if (size == 0)
		return -1;
	hid_t f;
	H5E_BEGIN_TRY
	{
		f = H5LTopen_file_image((void *)data, size, H5LT_FILE_IMAGE_DONT_COPY | H5LT_FILE_IMAGE_DONT_RELEASE);
	}
	H5E_END_TRY;
	return f;
}
#endif

#endif
