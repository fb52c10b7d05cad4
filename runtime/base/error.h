/* starnn error handling: errors are values.
 *
 * Every library function that can fail returns an int: 0 on success, a
 * negative STARNN_E* code otherwise, and records a message with the place it
 * came from (starnn_last_error()). The library never calls exit() and never
 * uses assert() for error handling.
 *
 * Kernels run inside StarPU tasks, which cannot return a status. A failing
 * task records a "deferred" error instead; the next starnn_wait() or
 * starnn_tensor_read() returns it. */
#ifndef STARNN_ERROR_H
#define STARNN_ERROR_H

#include <errno.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

enum starnn_status {
	STARNN_OK = 0,
	STARNN_EINVAL = -1,   /* bad argument: shape, dtype, option */
	STARNN_ENOMEM = -2,   /* allocation failed */
	STARNN_ESTARPU = -3,  /* StarPU refused or failed */
	STARNN_ECUDA = -4,    /* CUDA, cuBLAS or cuDNN error */
	STARNN_EIO = -5,      /* file input / output */
	STARNN_ENODEV = -6,   /* no worker can run the request */
	STARNN_ENUM = -7,     /* numerical failure: NaN / Inf where it must not be */
	STARNN_ESTATE = -8,   /* called at the wrong time (not initialised ...) */
	STARNN_EOPENCL = -9,  /* OpenCL error: a program's build, a kernel's launch */
};

/* Records an error and returns code, so that `return starnn_error(...)`
 * reads naturally. */
int starnn_error_at(const char *file, int line, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define starnn_error(code, ...) starnn_error_at(__FILE__, __LINE__, (code), __VA_ARGS__)

/* The message of the last error of this thread ("" if none): "file:line: text". */
const char *starnn_last_error(void);
/* The same without its "file:line: " (what a program shows its user). */
const char *starnn_error_message(void);
const char *starnn_strerror(int code);

/* Errors raised inside tasks (any thread), reported at the next wait. */
void starnn_defer_error_at(const char *file, int line, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define starnn_defer_error(code, ...) starnn_defer_error_at(__FILE__, __LINE__, (code), __VA_ARGS__)
/* Defers this thread's last error as it is (its source location kept):
 * a kernel's error becoming its task's. */
void starnn_defer_last_error(int code);
/* Returns and clears the first deferred error (0 if none), copying its
 * message into the caller thread's last error. */
int starnn_take_deferred_error(void);

/* Propagate a failing status with context. */
#define STARNN_CHECK(expr)                                                     \
	do {                                                                   \
		int starnn_check_rc_ = (expr);                                 \
		if (starnn_check_rc_ < 0)                                      \
			return starnn_check_rc_;                               \
	} while (0)

/* Turn a StarPU return code (negative errno) into a starnn error. */
#define STARNN_STARPU_CHECK(expr)                                              \
	do {                                                                   \
		int starnn_sp_rc_ = (expr);                                    \
		if (starnn_sp_rc_ == -ENODEV)                                  \
			return starnn_error(STARNN_ENODEV, "%s: no worker can execute this task", #expr); \
		if (starnn_sp_rc_ < 0)                                         \
			return starnn_error(STARNN_ESTARPU, "%s failed: %s", #expr, strerror(-starnn_sp_rc_)); \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif
