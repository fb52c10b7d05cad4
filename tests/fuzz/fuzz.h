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

/* The input as a read-only HDF5 file image in memory (no temporary file),
 * or -1 when HDF5 refuses it. HDF5 copies the bytes (flags 0):
 * H5LT_FILE_IMAGE_DONT_COPY would read them in place, but HDF5 before 1.14.4
 * (Debian 12 has 1.10.8) leaks its 72-byte callback data on every such open
 * (HDFGroup/hdf5 issue #827, fixed by pull request #4021), a leak per input
 * that is not ours. */
static inline hid_t fuzz_h5_open(const uint8_t *data, size_t size)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* HDF5 would print its error stack on every bad input */
	if (size == 0)
		return -1;
	hid_t f;
	H5E_BEGIN_TRY
	{
		f = H5LTopen_file_image((void *)data, size, 0);
	}
	H5E_END_TRY;
	return f;
}

/* After an input: no HDF5 object (file, dataset, type, space, attribute)
 * may be left open; what HDF5 holds for an open identifier is still
 * reachable, so LeakSanitizer would not see it. */
static inline int fuzz_h5_all_closed(void)
{
	ssize_t n = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
	if (n == 0)
		return 0;
	return FUZZ_FAIL("%zd HDF5 objects left open after the input", n);
}
#endif

#endif
