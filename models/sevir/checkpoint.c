/* HDF5 checkpoints of models/unet (see checkpoint.h), and the atomic file
 * and HDF5 error helpers shared with output.c.
 *
 * Layout: one fp32 dataset per tensor at its '/'-separated path (groups
 * made along the way), the tensor's shape as the dataset's; root
 * attributes: int64, double, or variable-length UTF-8 strings (h5py reads
 * them as str). File problems are STARNN_EIO; contents that do not fit
 * (missing dataset or attribute, other shape or type, NaN) STARNN_EINVAL or
 * STARNN_ENUM, with the file and the dataset named. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "models/sevir/checkpoint.h"

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

hid_t ckpt_atomic_h5create(struct ckpt_atomic *a, char *why, size_t size)
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

void ckpt_h5_discard(hid_t fid)
{
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
	const char *s = getenv("STARNN_TEST_WRITE_PAUSE_MS");
	char *end;
	long ms = s && *s ? strtol(s, &end, 10) : 0;
	if (ms <= 0 || *end || ms > 60000)
		return; /* unset or not a plain number of ms up to a minute: no pause */
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
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

/* ------------------------------------------------------ writing */

static int check_path(const char *file, const char *path)
{
	if (!path || !path[0])
		return starnn_error(STARNN_EINVAL, "checkpoint %s: empty dataset path", file);
	if (path[0] == '/' || path[strlen(path) - 1] == '/' || strstr(path, "//"))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: bad dataset path '%s' (relative, '/'-separated names)",
		                    file, path);
	return 0;
}

/* Whether every component of path exists (H5Lexists fails on a missing
 * intermediate group instead of saying no). */
static int link_exists(hid_t fid, const char *path)
{
	char *buf = dup_string(path);
	if (!buf)
		return 0;
	int exists = 1;
	for (size_t i = 0, n = strlen(buf); exists && i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (H5Lexists(fid, buf, H5P_DEFAULT) <= 0) {
			H5Eclear2(H5E_DEFAULT);
			exists = 0;
		}
		buf[i] = c;
	}
	free(buf);
	return exists;
}

static int write_attr(hid_t root, const char *file, const struct ckpt_attr *at)
{
	char why[256];
	if (!at->name || !at->name[0])
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute without a name", file);
	if (H5Aexists(root, at->name) > 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' given twice", file, at->name);
	hid_t type, mtype;
	const void *value;
	const char *s = at->s ? at->s : "";
	switch (at->type) {
	case CKPT_INT:
		type = H5Tcopy(H5T_STD_I64LE);
		mtype = H5Tcopy(H5T_NATIVE_INT64);
		value = &at->i;
		break;
	case CKPT_DOUBLE:
		type = H5Tcopy(H5T_IEEE_F64LE);
		mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
		value = &at->d;
		break;
	case CKPT_STRING:
		type = H5Tcopy(H5T_C_S1);
		H5Tset_size(type, H5T_VARIABLE);
		H5Tset_cset(type, H5T_CSET_UTF8);
		mtype = H5Tcopy(type);
		value = &s;
		break;
	default:
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' of unknown type %d", file, at->name,
		                    (int)at->type);
	}
	hid_t space = H5Screate(H5S_SCALAR);
	hid_t attr = H5Acreate2(root, at->name, type, space, H5P_DEFAULT, H5P_DEFAULT);
	herr_t st = attr < 0 ? -1 : H5Awrite(attr, mtype, value);
	if (st < 0)
		REASON(why); /* now: any later successful call clears the stack */
	if (attr >= 0 && H5Aclose(attr) < 0 && st >= 0) {
		st = -1;
		REASON(why);
	}
	H5Sclose(space);
	H5Tclose(type);
	H5Tclose(mtype);
	if (st < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot write attribute '%s': %s", file, at->name, why);
	return 0;
}

static int write_tensor(hid_t fid, hid_t lcpl, const char *file, const struct ckpt_entry *e, float *buf)
{
	char why[256], desc[128];
	starnn_tensor *t = e->tensor;
	if (link_exists(fid, e->path))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: dataset '%s' given twice", file, e->path);
	int rc = starnn_tensor_read_f32(t, buf);
	if (rc < 0) {
		char prev[512];
		snprintf(prev, sizeof prev, "%s", starnn_error_message());
		return starnn_error(rc, "checkpoint %s: cannot read tensor %s for '%s': %s", file,
		                    starnn_tensor_describe(t, desc, sizeof desc), e->path, prev);
	}
	hsize_t dims[STARNN_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++)
		dims[d] = (hsize_t)t->shape[d];
	hid_t space = H5Screate_simple(t->ndim, dims, NULL);
	hid_t dset = H5Dcreate2(fid, e->path, H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	herr_t st = dset < 0 ? -1 : H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	/* HDF5 may hold small data back (sieve buffer): the flush makes a full
	 * disk show now, while the dataset can still be closed (see
	 * ckpt_h5_discard) */
	if (st >= 0)
		st = H5Dflush(dset);
	if (st < 0) {
		REASON(why);
		ckpt_h5_discard(fid);
	}
	if (dset >= 0 && H5Dclose(dset) < 0 && st >= 0) {
		st = -1;
		REASON(why);
		ckpt_h5_discard(fid);
	}
	H5Sclose(space);
	if (st < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot write dataset '%s': %s", file, e->path, why);
	return 0;
}

int ckpt_write(const char *file, const struct ckpt_entry *entries, int nentries, const struct ckpt_attr *attrs,
               int nattrs)
{
	ckpt_hdf5_quiet();
	if (nentries < 0 || nattrs < 0 || (nentries && !entries) || (nattrs && !attrs))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: bad arguments", file ? file : "(null)");
	size_t maxn = 1;
	for (int i = 0; i < nentries; i++) {
		STARNN_CHECK(check_path(file ? file : "(null)", entries[i].path));
		if (!entries[i].tensor)
			return starnn_error(STARNN_EINVAL, "checkpoint %s: no tensor for '%s'", file, entries[i].path);
		size_t n = starnn_tensor_numel(entries[i].tensor);
		maxn = n > maxn ? n : maxn;
	}
	float *buf = malloc(maxn * sizeof *buf);
	if (!buf)
		return starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory (%zu elements)", file, maxn);

	struct ckpt_atomic a;
	int rc = ckpt_atomic_begin(&a, file);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	char why[256];
	hid_t lcpl = -1, root = -1;
	hid_t fid = ckpt_atomic_h5create(&a, why, sizeof why);
	if (fid < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot create HDF5 file %s: %s", file, a.tmp, why);
		goto fail;
	}
	lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	for (int i = 0; i < nentries && rc == 0; i++) {
		if (i == nentries / 2)
			ckpt_test_pause(); /* half written: where a kill test wants to strike */
		rc = write_tensor(fid, lcpl, file, &entries[i], buf);
	}
	if (rc < 0)
		goto fail;
	root = H5Gopen2(fid, "/", H5P_DEFAULT);
	if (root < 0)
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot open the root group: %s", file, REASON(why));
	for (int i = 0; i < nattrs && rc == 0; i++)
		rc = write_attr(root, file, &attrs[i]);
	if (rc < 0)
		goto fail;
	herr_t st = H5Gclose(root);
	root = -1;
	if (st < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot write the attributes: %s", file, REASON(why));
		goto fail;
	}
	H5Pclose(lcpl);
	lcpl = -1;
	/* The metadata reach the file only now: a full disk often shows here.
	 * The file is closed even after a failed flush (the descriptor must
	 * not outlive the temporary), the first reason kept. */
	st = H5Fflush(fid, H5F_SCOPE_GLOBAL);
	if (st < 0) {
		REASON(why);
		ckpt_h5_discard(fid);
	}
	if (H5Fclose(fid) < 0 && st >= 0) {
		st = -1;
		REASON(why);
	}
	fid = -1;
	if (st < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot finish the HDF5 file: %s", file, why);
		goto fail;
	}
	free(buf);
	return ckpt_atomic_commit(&a);

fail:
	if (fid >= 0)
		ckpt_h5_discard(fid);
	if (root >= 0)
		H5Gclose(root);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (fid >= 0)
		H5Fclose(fid);
	H5Eclear2(H5E_DEFAULT);
	ckpt_atomic_abort(&a);
	free(buf);
	return rc;
}

/* ------------------------------------------------------ reading */

struct ckpt_file {
	hid_t fid;
	char *name;
};

int ckpt_open(ckpt_file **out, const char *file)
{
	ckpt_hdf5_quiet();
	*out = NULL;
	char why[256];
	struct stat st;
	if (!file || !file[0])
		return starnn_error(STARNN_EINVAL, "no checkpoint file name");
	if (stat(file, &st) < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: %s", file, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return starnn_error(STARNN_EIO, "checkpoint %s: is a directory", file);
	if (access(file, R_OK) < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: %s", file, strerror(errno));
	htri_t is = H5Fis_hdf5(file);
	if (is <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return starnn_error(STARNN_EIO, "checkpoint %s: not an HDF5 file", file);
	}
	hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (fid < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot open: %s", file, REASON(why));
	return ckpt_open_hdf5(out, fid, file);
}

/* checkpoint.h takes the file as int64_t, so that it need not include hdf5.h */
_Static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is 64-bit since HDF5 1.10");

int ckpt_open_hdf5(ckpt_file **out, int64_t fid, const char *name)
{
	ckpt_hdf5_quiet();
	*out = NULL;
	ckpt_file *f = calloc(1, sizeof *f);
	if (!f || !(f->name = dup_string(name))) {
		free(f);
		H5Fclose((hid_t)fid);
		return starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory", name);
	}
	f->fid = (hid_t)fid;
	*out = f;
	return 0;
}

void ckpt_close(ckpt_file *f)
{
	if (!f)
		return;
	ckpt_hdf5_quiet();
	H5Fclose(f->fid);
	free(f->name);
	free(f);
}

/* Opens root attribute `name` of type class `cls` holding one value. */
int ckpt_has_attr(ckpt_file *f, const char *name)
{
	ckpt_hdf5_quiet();
	int yes = name && H5Aexists(f->fid, name) > 0;
	H5Eclear2(H5E_DEFAULT);
	return yes;
}

static int open_attr(ckpt_file *f, const char *name, H5T_class_t cls, const char *what, hid_t *attr)
{
	ckpt_hdf5_quiet();
	if (!name || H5Aexists(f->fid, name) <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return starnn_error(STARNN_EINVAL, "checkpoint %s: no attribute '%s'", f->name, name ? name : "(null)");
	}
	hid_t a = H5Aopen(f->fid, name, H5P_DEFAULT);
	if (a < 0) {
		char why[256];
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot open attribute '%s': %s", f->name, name, REASON(why));
	}
	hid_t type = H5Aget_type(a), space = H5Aget_space(a);
	H5T_class_t c = H5Tget_class(type);
	hssize_t npoints = H5Sget_simple_extent_npoints(space);
	H5Tclose(type);
	H5Sclose(space);
	static const char *const names[] = {[H5T_INTEGER] = "an integer", [H5T_FLOAT] = "a floating-point number",
	                                    [H5T_STRING] = "a string"};
	const char *got = c >= 0 && c < (int)(sizeof names / sizeof *names) && names[c] ? names[c] : "another type";
	if (c != cls || npoints != 1) {
		H5Aclose(a);
		if (npoints != 1)
			return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' holds %lld values, expected one %s",
			                    f->name, name, (long long)npoints, what);
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' is %s, expected %s", f->name, name, got,
		                    what);
	}
	*attr = a;
	return 0;
}

int ckpt_get_int(ckpt_file *f, const char *name, int64_t *value)
{
	hid_t a;
	STARNN_CHECK(open_attr(f, name, H5T_INTEGER, "an integer", &a));
	char why[256];
	herr_t st = H5Aread(a, H5T_NATIVE_INT64, value);
	if (st < 0)
		REASON(why);
	H5Aclose(a);
	if (st < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, why);
	return 0;
}

int ckpt_get_double(ckpt_file *f, const char *name, double *value)
{
	hid_t a;
	STARNN_CHECK(open_attr(f, name, H5T_FLOAT, "a floating-point number", &a));
	char why[256];
	herr_t st = H5Aread(a, H5T_NATIVE_DOUBLE, value);
	if (st < 0)
		REASON(why);
	H5Aclose(a);
	if (st < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, why);
	return 0;
}

int ckpt_get_string(ckpt_file *f, const char *name, char *buf, size_t size)
{
	hid_t a;
	char why[256];
	STARNN_CHECK(open_attr(f, name, H5T_STRING, "a string", &a));
	hid_t type = H5Aget_type(a);
	hid_t mtype = H5Tcopy(type);
	char *s = NULL;
	int rc = 0;
	if (H5Tis_variable_str(type) > 0) {
		if (H5Aread(a, mtype, &s) < 0)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, REASON(why));
	} else {
		size_t n = H5Tget_size(type);
		/* the size is the file's: a damaged one must not size the allocation */
		if (n == 0 || n > CKPT_MAX_STRING)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' is a string of %zu bytes (at most %d)",
			                  f->name, name, n, CKPT_MAX_STRING);
		else if (!(s = malloc(n + 1)))
			rc = starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory", f->name);
		else if (H5Aread(a, mtype, s) < 0)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s': %s", f->name, name, REASON(why));
		else
			s[n] = '\0';
	}
	if (rc == 0) {
		/* a variable-length string may be stored as null (HDF5 then reads a
		 * NULL pointer): the empty string */
		const char *v = s ? s : "";
		size_t n = strlen(v);
		if (n >= size)
			rc = starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' (%zu characters) does not fit in %zu bytes",
			                  f->name, name, n, size);
		else
			memcpy(buf, v, n + 1);
	}
	if (H5Tis_variable_str(type) > 0) {
		if (s)
			H5free_memory(s);
	} else {
		free(s);
	}
	H5Tclose(mtype);
	H5Tclose(type);
	H5Aclose(a);
	return rc;
}

int ckpt_has(ckpt_file *f, const char *path)
{
	ckpt_hdf5_quiet();
	if (!f || !path || !path[0] || !link_exists(f->fid, path))
		return 0;
	hid_t o = H5Oopen(f->fid, path, H5P_DEFAULT);
	if (o < 0) {
		H5Eclear2(H5E_DEFAULT);
		return 0;
	}
	int is_dataset = H5Iget_type(o) == H5I_DATASET;
	H5Oclose(o);
	return is_dataset;
}

static void shape_string(char *buf, size_t size, int ndim, const int64_t *dims)
{
	size_t o = 0;
	o += snprintf(buf + o, size - o, "[");
	for (int d = 0; d < ndim && o < size; d++)
		o += snprintf(buf + o, size - o, d ? ",%" PRId64 : "%" PRId64, dims[d]);
	if (o < size)
		snprintf(buf + o, size - o, "]");
}

int ckpt_read_f32(ckpt_file *f, const char *path, const char *tensor_name, int ndim, const int64_t *shape,
                  float *buf)
{
	ckpt_hdf5_quiet();
	char why[256];
	if (!ckpt_has(f, path))
		return starnn_error(STARNN_EINVAL, "checkpoint %s: no dataset '%s'", f->name, path ? path : "(null)");
	hid_t dset = H5Dopen2(f->fid, path, H5P_DEFAULT);
	if (dset < 0)
		return starnn_error(STARNN_EIO, "checkpoint %s: cannot open dataset '%s': %s", f->name, path, REASON(why));
	hid_t type = H5Dget_type(dset), space = H5Dget_space(dset);
	H5T_class_t cls = H5Tget_class(type);
	int fndim = H5Sget_simple_extent_ndims(space);
	hsize_t dims[H5S_MAX_RANK];
	int64_t fshape[H5S_MAX_RANK];
	if (fndim > 0)
		H5Sget_simple_extent_dims(space, dims, NULL);
	for (int d = 0; d < fndim; d++)
		fshape[d] = (int64_t)dims[d];
	H5Tclose(type);
	H5Sclose(space);
	int rc = 0;
	int same = fndim == ndim;
	size_t n = 1;
	for (int d = 0; same && d < ndim; d++) {
		same = fshape[d] == shape[d];
		n *= (size_t)shape[d];
	}
	if (cls != H5T_FLOAT) {
		rc = starnn_error(STARNN_EINVAL, "checkpoint %s: dataset '%s' is not floating-point", f->name, path);
	} else if (!same) {
		char a[128], b[128];
		shape_string(a, sizeof a, fndim < 0 ? 0 : fndim, fshape);
		shape_string(b, sizeof b, ndim, shape);
		rc = starnn_error(STARNN_EINVAL, "checkpoint %s: dataset '%s' has shape %s, the model's tensor '%s' has %s",
		                  f->name, path, a, tensor_name, b);
	} else if (H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		rc = starnn_error(STARNN_EIO, "checkpoint %s: cannot read dataset '%s': %s", f->name, path, REASON(why));
	}
	H5Dclose(dset);
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			if (!isfinite(buf[i]))
				return starnn_error(STARNN_ENUM, "checkpoint %s: dataset '%s' holds %g at element %zu", f->name,
				                    path, (double)buf[i], i);
	return rc;
}

int ckpt_read_tensor(ckpt_file *f, const char *path, starnn_tensor *t)
{
	float *buf = malloc((starnn_tensor_numel(t) ? starnn_tensor_numel(t) : 1) * sizeof *buf);
	if (!buf)
		return starnn_error(STARNN_ENOMEM, "checkpoint %s: out of memory", f->name);
	int rc = ckpt_read_f32(f, path, t->name, t->ndim, t->shape, buf);
	if (rc == 0)
		rc = starnn_tensor_write_f32(t, buf);
	free(buf);
	return rc;
}

/* ------------------------------------------------------ mixed precision */

static const char *const scaling_names[] = {[CKPT_SCALING_NONE] = "none", [CKPT_SCALING_DYNAMIC] = "dynamic",
                                            [CKPT_SCALING_STATIC] = "static"};

const char *ckpt_precision_name(starnn_dtype compute)
{
	switch (compute) {
	case STARNN_FP32: return "fp32";
	case STARNN_FP16: return "amp-fp16";
	case STARNN_BF16: return "amp-bf16";
	default: return NULL;
	}
}

int ckpt_precision_parse(const char *name)
{
	static const starnn_dtype all[] = {STARNN_FP32, STARNN_FP16, STARNN_BF16};
	for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
		if (strcmp(name, ckpt_precision_name(all[i])) == 0)
			return (int)all[i];
	return -1;
}

static int amp_check(const char *where, const struct ckpt_amp *a)
{
	if (!ckpt_precision_name(a->compute))
		return starnn_error(STARNN_EINVAL, "%s: unknown compute precision %d", where, (int)a->compute);
	if (a->loss_scaling < CKPT_SCALING_NONE || a->loss_scaling > CKPT_SCALING_STATIC)
		return starnn_error(STARNN_EINVAL, "%s: unknown loss scaling %d", where, a->loss_scaling);
	if (a->loss_scaling == CKPT_SCALING_NONE)
		return 0;
	if (!(a->scale > 0) || !isfinite(a->scale))
		return starnn_error(STARNN_EINVAL, "%s: 'loss_scale' is %g, not a positive finite number", where, a->scale);
	const struct {
		const char *name;
		int64_t v;
	} counters[] = {{"loss_scale_good_steps", a->good_steps},
	                {"loss_scale_skipped_steps", a->skipped_steps},
	                {"loss_scale_applied_steps", a->applied_steps}};
	for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
		if (counters[i].v < 0)
			return starnn_error(STARNN_EINVAL, "%s: '%s' is %lld, negative", where, counters[i].name,
			                    (long long)counters[i].v);
	return 0;
}

int ckpt_amp_attrs(const struct ckpt_amp *a, struct ckpt_attr *attrs, int *n)
{
	*n = 0;
	STARNN_CHECK(amp_check("checkpoint", a));
	int k = 0;
	attrs[k++] = (struct ckpt_attr){.name = "precision", .type = CKPT_STRING, .s = ckpt_precision_name(a->compute)};
	attrs[k++] = (struct ckpt_attr){.name = "loss_scaling", .type = CKPT_STRING, .s = scaling_names[a->loss_scaling]};
	if (a->loss_scaling != CKPT_SCALING_NONE) {
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale", .type = CKPT_DOUBLE, .d = a->scale};
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale_good_steps", .type = CKPT_INT, .i = a->good_steps};
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale_skipped_steps", .type = CKPT_INT, .i = a->skipped_steps};
		attrs[k++] = (struct ckpt_attr){.name = "loss_scale_applied_steps", .type = CKPT_INT, .i = a->applied_steps};
	}
	*n = k;
	return 0;
}

static int has_attr(ckpt_file *f, const char *name)
{
	ckpt_hdf5_quiet();
	htri_t e = H5Aexists(f->fid, name);
	if (e < 0)
		H5Eclear2(H5E_DEFAULT);
	return e > 0;
}

int ckpt_get_amp(ckpt_file *f, struct ckpt_amp *a)
{
	static const char *const later[] = {"loss_scaling", "loss_scale", "loss_scale_good_steps",
	                                    "loss_scale_skipped_steps", "loss_scale_applied_steps"};
	*a = (struct ckpt_amp){.compute = STARNN_FP32, .loss_scaling = CKPT_SCALING_NONE};
	if (!has_attr(f, "precision")) {
		/* an older file: fp32 and no loss scaling, unless it is a
		 * damaged newer one */
		for (size_t i = 0; i < sizeof later / sizeof *later; i++)
			if (has_attr(f, later[i]))
				return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute '%s' without 'precision'", f->name,
				                    later[i]);
		return 0;
	}
	char s[32];
	STARNN_CHECK(ckpt_get_string(f, "precision", s, sizeof s));
	int c = ckpt_precision_parse(s);
	if (c < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute 'precision' is '%s', not fp32, amp-fp16 or amp-bf16",
		                    f->name, s);
	a->compute = (starnn_dtype)c;
	STARNN_CHECK(ckpt_get_string(f, "loss_scaling", s, sizeof s));
	a->loss_scaling = -1;
	for (int i = 0; i < (int)(sizeof scaling_names / sizeof *scaling_names); i++)
		if (strcmp(s, scaling_names[i]) == 0)
			a->loss_scaling = i;
	if (a->loss_scaling < 0)
		return starnn_error(STARNN_EINVAL, "checkpoint %s: attribute 'loss_scaling' is '%s', not none, dynamic or static",
		                    f->name, s);
	if (a->loss_scaling == CKPT_SCALING_NONE)
		return 0;
	STARNN_CHECK(ckpt_get_double(f, "loss_scale", &a->scale));
	STARNN_CHECK(ckpt_get_int(f, "loss_scale_good_steps", &a->good_steps));
	STARNN_CHECK(ckpt_get_int(f, "loss_scale_skipped_steps", &a->skipped_steps));
	STARNN_CHECK(ckpt_get_int(f, "loss_scale_applied_steps", &a->applied_steps));
	char where[600];
	snprintf(where, sizeof where, "checkpoint %s", f->name);
	return amp_check(where, a);
}
