/* Per-thread scratch buffers (runtime/base/scratch.h). */
#include <config.h>

#include <pthread.h>
#include <stdlib.h>

#include "runtime/base/scratch.h"

struct scratch {
	void *p[STARNN_SCRATCH_SLOTS];
	size_t n[STARNN_SCRATCH_SLOTS];
};

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int key_ok;

static void scratch_free(void *arg)
{
	struct scratch *s = arg;
	for (int i = 0; i < STARNN_SCRATCH_SLOTS; i++)
		free(s->p[i]);
	free(s);
}

static void make_key(void)
{
	key_ok = pthread_key_create(&key, scratch_free) == 0;
}

void *starnn_scratch(int slot, size_t bytes)
{
	pthread_once(&once, make_key);
	if (!key_ok || slot < 0 || slot >= STARNN_SCRATCH_SLOTS)
		return NULL;
	struct scratch *s = pthread_getspecific(key);
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			return NULL;
		if (pthread_setspecific(key, s) != 0) {
			free(s);
			return NULL;
		}
	}
	if (bytes == 0)
		bytes = 1;
	if (s->n[slot] < bytes) {
		free(s->p[slot]);
		s->p[slot] = NULL;
		s->n[slot] = 0;
		if (posix_memalign(&s->p[slot], 64, bytes) != 0) {
			s->p[slot] = NULL;
			return NULL;
		}
		s->n[slot] = bytes;
	}
	return s->p[slot];
}
