/* Atomic file writes and HDF5 error messages (see atomic.h), shared by
 * the checkpoints (checkpoint.c) and the programs' other outputs
 * (models/sevir/output.c). */
#define _GNU_SOURCE /* F_OFD_SETLK, memfd_create */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/train/atomic.h"

/* atomic.h takes HDF5 file ids as int64_t, so that it need not include hdf5.h */
_Static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is 64-bit since HDF5 1.10");

/* ------------------------------------------------------ HDF5 errors */

void ckpt_hdf5_quiet(void)
{
	/* Per thread in thread-safe builds of HDF5: done before every use. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

struct reason {
	char inner[256], outer[256];
	int n;
};

static herr_t reason_walk(unsigned n, const H5E_error2_t *e, void *data)
{
	struct reason *r = data;
	/* upward walk: the most specific entry first, the API call last */
	snprintf(n == 0 ? r->inner : r->outer, sizeof r->inner, "%s", e->desc ? e->desc : "");
	r->n = (int)n + 1;
	return 0;
}

/* A failed system call reads "file write failed: time = <ctime, with its
 * newline>, filename = ..., errno = 28, error message = 'No space left on
 * device', buf = ..., ...": what the user needs is the system's message. */
static void shorten_io_reason(char *s, size_t size)
{
	static const char key[] = "error message = '";
	char *m = strstr(s, key), *end = m ? strchr(m + sizeof key - 1, '\'') : NULL;
	if (end) {
		char msg[128];
		snprintf(msg, sizeof msg, "%.*s", (int)(end - (m + sizeof key - 1)), m + sizeof key - 1);
		snprintf(s, size, "%s", msg);
	}
	for (; *s; s++)
		if (*s == '\n')
			*s = ' ';
}

const char *ckpt_hdf5_reason(char *buf, size_t size)
{
	struct reason r = {.n = 0};
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, reason_walk, &r);
	H5Eclear2(H5E_DEFAULT);
	shorten_io_reason(r.inner, sizeof r.inner);
	shorten_io_reason(r.outer, sizeof r.outer);
	if (r.n == 0)
		snprintf(buf, size, "HDF5 error");
	else if (r.n == 1)
		snprintf(buf, size, "%s", r.inner);
	else if (snprintf(buf, size, "%s (%s)", r.outer, r.inner) >= (int)size && size > 4)
		memcpy(buf + size - 4, "...", 4); /* cut: say so */
	return buf;
}

#define REASON(buf) ckpt_hdf5_reason((buf), sizeof(buf))

/* ------------------------------------------------------ atomic files */

static char *dup_string(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Liveness of a temporary: its writer holds a write lock on the whole file
 * from just after creating it until after the rename, so a temporary that
 * can be locked has no writer any more (the process died: locks go with
 * it). Open-file-description locks (Linux): independent of any flock()
 * HDF5 takes on its own descriptor of the same file (ckpt_atomic_h5create
 * turns HDF5's locking off, but HDF5_USE_FILE_LOCKING can turn it back
 * on), and not dropped when HDF5 closes that descriptor (POSIX record
 * locks would be). Elsewhere flock(). */
static int lock_file(int fd, int exclusive, int wait)
{
	int r;
#ifdef F_OFD_SETLK
	struct flock l = {.l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	while ((r = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &l)) < 0 && errno == EINTR)
		;
#else
	while ((r = flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB))) < 0 && errno == EINTR)
		;
#endif
	return r;
}

/* Whether no one holds an exclusive flock() on the file either (HDF5
 * writers with file locking on, flock(1)): a temporary someone else is
 * writing that way is not ours to remove. */
static int free_of_flock(int fd)
{
#ifdef F_OFD_SETLK
	int r;
	while ((r = flock(fd, LOCK_SH | LOCK_NB)) < 0 && errno == EINTR)
		;
	return r == 0;
#else
	(void)fd;
	return 1; /* lock_file took a flock already */
#endif
}

static const char tmp_letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define TMP_SUFFIX ".tmp."
#define TMP_RANDOM 6

/* Whether `name` is "<base>.tmp.XXXXXX" (X: our letters), as made below. */
static int is_tmp_of(const char *name, const char *base)
{
	size_t nb = strlen(base), ns = sizeof TMP_SUFFIX - 1;
	if (strncmp(name, base, nb) != 0 || strncmp(name + nb, TMP_SUFFIX, ns) != 0)
		return 0;
	const char *x = name + nb + ns;
	if (strlen(x) != TMP_RANDOM)
		return 0;
	for (; *x; x++)
		if (!strchr(tmp_letters, *x))
			return 0;
	return 1;
}

/* Removes the temporaries of `file` left by writers that are gone (killed
 * in the middle of a write: nothing else leaves one), except `mine`; says
 * so on stderr. A temporary whose lock is held (a live writer, in this
 * process or another) is left alone, and so is anything that is not a
 * regular file of that exact name pattern. Failures only mean that
 * something stays behind, so they are not errors. */
static void remove_stale_temporaries(const char *file, const char *mine)
{
	char *dir = dup_string(file);
	if (!dir)
		return;
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : file;
	const char *dname = !slash ? "." : slash == dir ? "/" : (*slash = '\0', dir);
	const char *mine_base = strrchr(mine, '/') ? strrchr(mine, '/') + 1 : mine;
	int dfd = open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		free(dir);
		return;
	}
	int removed = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!is_tmp_of(e->d_name, base) || strcmp(e->d_name, mine_base) == 0)
			continue;
		/* O_NONBLOCK: a FIFO of that name must not hang us (it is skipped). */
		int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat a, b;
		/* Locked by us, and still the file of that name (not renamed away or
		 * replaced between the readdir and the lock): stale. A writer that
		 * created it but has not locked it yet waits for our lock, then sees
		 * it unlinked (ckpt_atomic_begin) and makes another. */
		if (fstat(fd, &a) == 0 && S_ISREG(a.st_mode) && lock_file(fd, 0, 0) == 0 && free_of_flock(fd) &&
		    fstatat(dfd, e->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
		    unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
		close(fd);
	}
	closedir(d); /* closes dfd */
	if (removed)
		fprintf(stderr, "%s: removed %d stale temporary file%s (%s%sXXXXXX) of writers that are gone (killed or crashed)\n",
		        file, removed, removed > 1 ? "s" : "", file, TMP_SUFFIX);
	free(dir);
}

int ckpt_atomic_begin(struct ckpt_atomic *a, const char *file)
{
	return ckpt_atomic_begin_opt(a, file, 1);
}

int ckpt_atomic_begin_opt(struct ckpt_atomic *a, const char *file, int remove_stale)
{
	a->fd = -1;
	a->tmp = NULL;
	a->file = NULL;
	if (!file || !file[0])
		return starnn_error(STARNN_EINVAL, "no output file name");
	size_t n = strlen(file);
	if (file[n - 1] == '/')
		return starnn_error(STARNN_EINVAL, "%s: is a directory name, not a file name", file);
	a->file = dup_string(file);
	size_t tn = n + sizeof TMP_SUFFIX + TMP_RANDOM;
	a->tmp = malloc(tn);
	if (!a->file || !a->tmp) {
		free(a->file), free(a->tmp);
		a->file = a->tmp = NULL;
		return starnn_error(STARNN_ENOMEM, "%s: out of memory", file);
	}
	/* Our own mkstemp: open(O_EXCL) with mode 0666 lets the umask apply. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)a;
	int err = 0;
	const char *what = "cannot create a temporary file beside it";
	for (int attempt = 0; attempt < 100; attempt++) {
		char suffix[TMP_RANDOM + 1];
		for (int i = 0; i < TMP_RANDOM; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			suffix[i] = tmp_letters[(seed >> 33) % (sizeof tmp_letters - 1)];
		}
		suffix[TMP_RANDOM] = '\0';
		snprintf(a->tmp, tn, "%s%s%s", file, TMP_SUFFIX, suffix);
		a->fd = open(a->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (a->fd < 0) {
			err = errno;
			if (err != EEXIST)
				break;
			continue;
		}
		struct stat st;
		if (lock_file(a->fd, 1, 1) < 0 || fstat(a->fd, &st) < 0) {
			err = errno;
			what = "cannot lock its temporary file";
			close(a->fd);
			unlink(a->tmp);
			a->fd = -1;
			break;
		}
		if (st.st_nlink > 0) {
			if (remove_stale)
				remove_stale_temporaries(file, a->tmp);
			return 0;
		}
		/* Another run took it for stale between our create and our lock,
		 * and removed it: make another. */
		close(a->fd);
		a->fd = -1;
		err = EEXIST;
	}
	free(a->file), free(a->tmp);
	a->file = a->tmp = NULL;
	return starnn_error(STARNN_EIO, "%s: %s: %s", file, what, strerror(err));
}

int64_t ckpt_atomic_h5create(struct ckpt_atomic *a, char *why, size_t size)
{
	/* The temporary is ours alone and our own lock guards it (above):
	 * HDF5's lock (a flock of its descriptor) adds nothing and, where our
	 * lock is a flock too, would collide with it. */
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl < 0) {
		ckpt_hdf5_reason(why, size);
		return -1;
	}
#if H5_VERSION_GE(1, 10, 7)
	H5Pset_file_locking(fapl, 0, 1);
#endif
	hid_t fid = H5Fcreate(a->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	if (fid < 0)
		ckpt_hdf5_reason(why, size); /* now: H5Pclose would clear it */
	H5Pclose(fapl);
	return fid;
}

void ckpt_h5_discard(int64_t file)
{
	hid_t fid = (hid_t)file;
	hid_t fapl = H5Fget_access_plist(fid);
	int *fd = NULL;
	if (fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2 && H5Fget_vfd_handle(fid, fapl, (void **)&fd) >= 0 && fd &&
	    *fd >= 0) {
		/* An anonymous file in memory: HDF5 can write its last metadata
		 * and truncate it to its size (it does at close; /dev/null cannot
		 * be truncated). Under a file size limit that truncation can still
		 * fail: unet calls H5dont_atexit so that the file left half-closed
		 * is not cleaned up at exit. */
		int mem = memfd_create("starnn-discarded", MFD_CLOEXEC);
		if (mem >= 0) {
			dup3(mem, *fd, O_CLOEXEC);
			close(mem);
		}
	}
	if (fapl >= 0)
		H5Pclose(fapl);
	H5Eclear2(H5E_DEFAULT);
}

void ckpt_test_pause(void)
{
#ifdef STARNN_TEST_HOOKS
	const char *s = getenv("STARNN_TEST_WRITE_PAUSE_MS");
	char *end;
	long ms = s && *s ? strtol(s, &end, 10) : 0;
	if (ms <= 0 || *end || ms > 60000)
		return; /* unset or not a plain number of ms up to a minute: no pause */
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
#endif
}

void ckpt_atomic_abort(struct ckpt_atomic *a)
{
	/* unlink before close: while our lock holds, no other run takes the
	 * file for stale (and reports it removed) */
	if (a->tmp)
		unlink(a->tmp);
	if (a->fd >= 0)
		close(a->fd);
	free(a->tmp), free(a->file);
	a->fd = -1;
	a->tmp = a->file = NULL;
}

int ckpt_atomic_commit(struct ckpt_atomic *a)
{
	int rc = 0;
	if (fsync(a->fd) < 0)
		rc = starnn_error(STARNN_EIO, "%s: fsync failed: %s", a->file, strerror(errno));
	ckpt_test_pause();
	/* Renamed while still open and locked: a closed temporary could be
	 * taken for stale by another run and removed before the rename. */
	if (rc == 0 && rename(a->tmp, a->file) < 0)
		rc = starnn_error(STARNN_EIO, "%s: cannot rename %s to it: %s", a->file, a->tmp, strerror(errno));
	if (rc < 0) {
		ckpt_atomic_abort(a);
		return rc;
	}
	/* The data are on disk (fsync) and in place: a failed close can only
	 * be reported. */
	if (close(a->fd) < 0)
		rc = starnn_error(STARNN_EIO, "%s: close failed after it was written: %s", a->file, strerror(errno));
	a->fd = -1;
	/* The rename itself is durable once the directory is synced. */
	char *dir = dup_string(a->file);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	const char *dname = !dir ? NULL : !slash ? "." : slash == dir ? "/" : (*slash = '\0', dir);
	int dfd = dname ? open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (dfd >= 0) {
		if (fsync(dfd) < 0 && errno == EIO && rc == 0)
			rc = starnn_error(STARNN_EIO, "%s: fsync of its directory failed: %s", a->file, strerror(errno));
		close(dfd);
	}
	free(dir);
	free(a->tmp), free(a->file);
	a->tmp = a->file = NULL;
	return rc;
}
