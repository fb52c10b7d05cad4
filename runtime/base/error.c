#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/error.h"

static _Thread_local char last_message[4096]; /* (room for an OpenCL build log) */
static _Thread_local size_t last_where; /* length of last_message's "file:line: " */

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static int deferred_code;
static char deferred_message[4096];
static size_t deferred_where;

/* "file:line: text" into buf; returns the prefix's length. */
static size_t format_at(char *buf, size_t size, const char *file, int line, const char *fmt, va_list ap)
{
	int n = snprintf(buf, size, "%s:%d: ", file, line);
	if (n < 0 || (size_t)n >= size)
		return 0;
	vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	return (size_t)n;
}

int starnn_error_at(const char *file, int line, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	last_where = format_at(last_message, sizeof last_message, file, line, fmt, ap);
	va_end(ap);
	return code;
}

const char *starnn_last_error(void)
{
	return last_message;
}

const char *starnn_error_message(void)
{
	return last_message + last_where;
}

const char *starnn_strerror(int code)
{
	switch (code) {
	case STARNN_OK: return "success";
	case STARNN_EINVAL: return "invalid argument";
	case STARNN_ENOMEM: return "out of memory";
	case STARNN_ESTARPU: return "StarPU error";
	case STARNN_ECUDA: return "CUDA error";
	case STARNN_EIO: return "input/output error";
	case STARNN_ENODEV: return "no worker can run this";
	case STARNN_ENUM: return "numerical error";
	case STARNN_ESTATE: return "invalid state";
	case STARNN_EOPENCL: return "OpenCL error";
	default: return "unknown error";
	}
}

void starnn_defer_error_at(const char *file, int line, int code, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&deferred_lock);
	if (deferred_code == 0) { /* keep the first one: later ones are usually consequences */
		deferred_code = code;
		va_start(ap, fmt);
		deferred_where = format_at(deferred_message, sizeof deferred_message, file, line, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&deferred_lock);
}

void starnn_defer_last_error(int code)
{
	pthread_mutex_lock(&deferred_lock);
	if (deferred_code == 0) {
		deferred_code = code;
		memcpy(deferred_message, last_message, sizeof deferred_message);
		deferred_where = last_where;
	}
	pthread_mutex_unlock(&deferred_lock);
}

int starnn_take_deferred_error(void)
{
	int code;
	pthread_mutex_lock(&deferred_lock);
	code = deferred_code;
	if (code) {
		memcpy(last_message, deferred_message, sizeof last_message);
		last_where = deferred_where;
		deferred_code = 0;
		deferred_message[0] = 0;
		deferred_where = 0;
	}
	pthread_mutex_unlock(&deferred_lock);
	return code;
}
