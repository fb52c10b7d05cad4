#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/error.h"

static _Thread_local char last_message[1024];

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static int deferred_code;
static char deferred_message[1024];

static void format_at(char *buf, size_t size, const char *file, int line, const char *fmt, va_list ap)
{
	int n = snprintf(buf, size, "%s:%d: ", file, line);
	if (n < 0 || (size_t)n >= size)
		return;
	vsnprintf(buf + n, size - (size_t)n, fmt, ap);
}

int starnn_error_at(const char *file, int line, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	format_at(last_message, sizeof last_message, file, line, fmt, ap);
	va_end(ap);
	return code;
}

const char *starnn_last_error(void)
{
	return last_message;
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
		format_at(deferred_message, sizeof deferred_message, file, line, fmt, ap);
		va_end(ap);
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
		deferred_code = 0;
		deferred_message[0] = 0;
	}
	pthread_mutex_unlock(&deferred_lock);
	return code;
}
