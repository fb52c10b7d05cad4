/* Atomic file writes, and HDF5's errors as messages: what every file
 * starnn writes goes through (checkpoints, runtime/train/checkpoint.h; the
 * programs' forecasts and pictures, models/sevir/output.c). Plain C and
 * HDF5: no StarPU. HDF5 file ids are int64_t here (hid_t is 64-bit since
 * HDF5 1.10), so that this header needs no hdf5.h. */
#ifndef STARNN_TRAIN_ATOMIC_H
#define STARNN_TRAIN_ATOMIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Atomic creation of a file: a temporary "<file>.tmp.XXXXXX" in the same
 * directory (mode 0666 less the umask), written by the caller (by its
 * name or its descriptor; HDF5 files with ckpt_atomic_h5create), then
 * commit: fsync, rename over `file`, close, fsync of the directory. Any
 * failure of commit, or abort, removes the temporary file: `file` is
 * either untouched or complete.
 * The writer holds a lock on its temporary until after the rename, so a
 * temporary nobody holds locked was left by a writer that died (SIGKILL,
 * a crash, a power cut): begin removes those of `file` (the same
 * "<file>.tmp." prefix and a 6-letter suffix; never a live writer's) and
 * says so in one line on stderr. */
struct ckpt_atomic {
	char *file, *tmp;
	int fd;
};
int ckpt_atomic_begin(struct ckpt_atomic *a, const char *file);
/* The same, removing stale temporaries only if remove_stale: the scan reads
 * the whole directory, too much for each of thousands of pictures in one. */
int ckpt_atomic_begin_opt(struct ckpt_atomic *a, const char *file, int remove_stale);
int ckpt_atomic_commit(struct ckpt_atomic *a);
void ckpt_atomic_abort(struct ckpt_atomic *a);
/* H5Fcreate of the temporary (HDF5's own file locking off: the temporary
 * is private and our lock guards it); < 0 on failure, with HDF5's reason
 * in why. */
int64_t ckpt_atomic_h5create(struct ckpt_atomic *a, char *why, size_t size);
/* For an HDF5 file being abandoned after a failed write (a full disk, the
 * file size limit): its remaining writes go to an anonymous file in memory.
 * HDF5 1.10 cannot close a dataset or a file whose flush fails, and such a
 * half-closed file crashes the library's clean-up at exit (H5F__close_cb);
 * after this the closes succeed, except under a file size limit smaller
 * than the file (HDF5 truncates it to its full size at close): a program
 * that may write files then calls H5dont_atexit() first (models/unet does).
 * The file's contents are lost: for temporaries only, before their
 * removal. Clears HDF5's error stack. */
void ckpt_h5_discard(int64_t fid);

/* Test hook (builds with --enable-test-hooks): with
 * STARNN_TEST_WRITE_PAUSE_MS=N in the environment (1 to 60000), sleeps N
 * ms; ckpt_write calls it once half the datasets are written and
 * ckpt_atomic_commit between the fsync and the rename, so that a test can
 * kill the writer in the middle of a write (tests/models/unet_kill.sh).
 * Otherwise, and in builds without test hooks, it does nothing. */
void ckpt_test_pause(void);

/* HDF5 error handling of this thread: stops HDF5 from printing its error
 * stack (call before HDF5 calls), and the reason of the last HDF5 failure
 * (innermost message of the stack, which is then cleared) into buf. */
void ckpt_hdf5_quiet(void);
const char *ckpt_hdf5_reason(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
