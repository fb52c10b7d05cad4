/* The prefetching loader (see sevir.h): a thread that reads the next
 * batches of an epoch (sevir_read) into slots while the caller trains on
 * the current one, and the plan it follows (epoch permutations, crop seeds)
 * as a pure function. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/sevir/internal.h"
#include "runtime/base/error.h"

static uint64_t epoch_seed(uint64_t seed, int64_t epoch)
{
	return mix64(seed ^ 0x65706f6368ull) ^ mix64((uint64_t)epoch + 0x7065726dull);
}

static void epoch_order(int count, int shuffle, uint64_t seed, int64_t epoch, int *perm)
{
	for (int i = 0; i < count; i++)
		perm[i] = i;
	if (!shuffle)
		return;
	struct rng r = {epoch_seed(seed, epoch)};
	for (int i = count - 1; i > 0; i--) { /* Fisher-Yates */
		int j = (int)rng_below(&r, (uint64_t)i + 1);
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

uint64_t sevir_batch_crop_seed(uint64_t seed, int64_t batch)
{
	return mix64(seed ^ 0x63726f7073656564ull) ^ mix64((uint64_t)batch * 0x9e3779b97f4a7c15ull + 1);
}

int sevir_batch_plan(int count, int batch, int shuffle, uint64_t seed, int64_t g, int *idx, uint64_t *crop_seed)
{
	if (batch < 1 || count / batch < 1 || g < 0)
		return starnn_error(STARNN_EINVAL, "sevir_batch_plan: batch %d of %d samples, batch number %lld", batch,
		                    count, (long long)g);
	int bpe = count / batch;
	int *perm = malloc((size_t)count * sizeof *perm);
	if (!perm)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	epoch_order(count, shuffle, seed, g / bpe, perm);
	memcpy(idx, perm + (size_t)(g % bpe) * batch, (size_t)batch * sizeof *idx);
	free(perm);
	if (crop_seed)
		*crop_seed = sevir_batch_crop_seed(seed, g);
	return 0;
}

struct loader_slot {
	float *x, *y;
	int64_t g;
	int ready, rc;
	char msg[1024];
};

struct sevir_loader {
	sevir_data *d;
	int batch, shuffle, nslots, bpe;
	int part_first, part_count; /* the samples of each batch read */
	uint64_t seed;
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv_free, cv_ready;
	struct loader_slot *slots;
	int64_t first_batch, next_consume;
	int held; /* slot the caller holds, or -1 */
	int stop;
	int *perm, *idx;
	int64_t perm_epoch;
};

int sevir_batches_per_epoch(const sevir_loader *l)
{
	return l->bpe;
}

static void *loader_main(void *arg)
{
	sevir_loader *l = arg;
	for (int64_t g = l->first_batch;; g++) {
		struct loader_slot *s = &l->slots[g % l->nslots];
		pthread_mutex_lock(&l->mu);
		while (!l->stop && (s->ready || l->held == (int)(g % l->nslots)))
			pthread_cond_wait(&l->cv_free, &l->mu);
		int stop = l->stop;
		pthread_mutex_unlock(&l->mu);
		if (stop)
			break;
		int64_t e = g / l->bpe;
		if (e != l->perm_epoch) {
			epoch_order(l->d->count, l->shuffle, l->seed, e, l->perm);
			l->perm_epoch = e;
		}
		memcpy(l->idx, l->perm + (size_t)(g % l->bpe) * l->batch, (size_t)l->batch * sizeof *l->idx);
		int rc = sevir_read_slots(l->d, l->idx + l->part_first, l->part_count, l->part_first,
		                          sevir_batch_crop_seed(l->seed, g), s->x, s->y);
		pthread_mutex_lock(&l->mu);
		s->g = g;
		s->rc = rc;
		if (rc)
			snprintf(s->msg, sizeof s->msg, "%s", starnn_error_message() /* re-raised in the caller's thread */);
		s->ready = 1;
		pthread_cond_broadcast(&l->cv_ready);
		pthread_mutex_unlock(&l->mu);
		if (rc)
			break; /* the caller gets the error at this batch */
	}
	return NULL;
}

void sevir_loader_stop(sevir_loader *l)
{
	if (!l)
		return;
	if (l->thread_started) {
		pthread_mutex_lock(&l->mu);
		l->stop = 1;
		pthread_cond_broadcast(&l->cv_free);
		pthread_cond_broadcast(&l->cv_ready);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cv_free);
		pthread_cond_destroy(&l->cv_ready);
	}
	if (l->slots)
		for (int i = 0; i < l->nslots; i++) {
			free(l->slots[i].x);
			free(l->slots[i].y);
		}
	free(l->slots);
	free(l->perm);
	free(l->idx);
	free(l);
}

int sevir_loader_start(sevir_loader **out, sevir_data *d, int batch, int shuffle, uint64_t seed, int depth,
                       int64_t first_batch)
{
	return sevir_loader_start_part(out, d, batch, 0, batch, shuffle, seed, depth, first_batch);
}

int sevir_loader_start_part(sevir_loader **out, sevir_data *d, int batch, int part_first, int part_count,
                            int shuffle, uint64_t seed, int depth, int64_t first_batch)
{
	*out = NULL;
	if (batch < 1)
		return starnn_error(STARNN_EINVAL, "sevir loader: batch %d must be >= 1", batch);
	if (part_first < 0 || part_count < 1 || part_first + part_count > batch)
		return starnn_error(STARNN_EINVAL, "sevir loader: part [%d, %d) is not inside a batch of %d", part_first,
		                    part_first + part_count, batch);
	if (batch > d->count)
		return starnn_error(STARNN_EINVAL, "sevir loader: batch %d is larger than the %d samples of %s", batch,
		                    d->count, d->path);
	if (depth < 1 || depth > 64)
		return starnn_error(STARNN_EINVAL, "sevir loader: depth %d must be 1..64", depth);
	if (first_batch < 0)
		return starnn_error(STARNN_EINVAL, "sevir loader: first batch %lld must be >= 0", (long long)first_batch);
	sevir_loader *l = calloc(1, sizeof *l);
	if (!l)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	l->d = d;
	l->batch = batch;
	l->part_first = part_first, l->part_count = part_count;
	l->shuffle = shuffle;
	l->seed = seed;
	l->bpe = d->count / batch;
	l->nslots = depth + 1; /* depth ahead, plus the one the caller holds */
	l->first_batch = l->next_consume = first_batch;
	l->held = -1;
	l->perm_epoch = -1;
	const size_t ss = (size_t)d->size * d->size;
	l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
	l->perm = malloc((size_t)d->count * sizeof *l->perm);
	l->idx = malloc((size_t)batch * sizeof *l->idx);
	int ok = l->slots && l->perm && l->idx;
	for (int i = 0; ok && i < l->nslots; i++) {
		l->slots[i].x = malloc((size_t)part_count * d->in_frames * ss * sizeof(float));
		l->slots[i].y = malloc((size_t)part_count * d->out_frames * ss * sizeof(float));
		ok = l->slots[i].x && l->slots[i].y;
	}
	if (!ok) {
		sevir_loader_stop(l);
		return starnn_error(STARNN_ENOMEM, "sevir loader: out of memory for %d batches of %d", l->nslots, batch);
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv_free, NULL);
	pthread_cond_init(&l->cv_ready, NULL);
	int e = pthread_create(&l->thread, NULL, loader_main, l);
	if (e) {
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cv_free);
		pthread_cond_destroy(&l->cv_ready);
		sevir_loader_stop(l);
		return starnn_error(STARNN_EINVAL, "sevir loader: cannot start the thread: %s", strerror(e));
	}
	l->thread_started = 1;
	*out = l;
	return 0;
}

int sevir_loader_next(sevir_loader *l, const float **x, const float **y, int64_t *epoch, int64_t *index_in_epoch)
{
	pthread_mutex_lock(&l->mu);
	if (l->held >= 0) { /* the caller is done with the previous batch */
		l->slots[l->held].ready = 0;
		l->held = -1;
		pthread_cond_broadcast(&l->cv_free);
	}
	int k = (int)(l->next_consume % l->nslots);
	struct loader_slot *s = &l->slots[k];
	while (!s->ready && !l->stop)
		pthread_cond_wait(&l->cv_ready, &l->mu);
	if (!s->ready) {
		pthread_mutex_unlock(&l->mu);
		return starnn_error(STARNN_ESTATE, "sevir loader: stopped");
	}
	if (s->rc) { /* stays failed: later calls report the same error */
		int rc = s->rc;
		pthread_mutex_unlock(&l->mu);
		return starnn_error(rc, "%s (batch %lld)", s->msg, (long long)s->g);
	}
	l->held = k;
	l->next_consume++;
	pthread_mutex_unlock(&l->mu);
	*x = s->x;
	*y = s->y;
	if (epoch)
		*epoch = s->g / l->bpe;
	if (index_in_epoch)
		*index_in_epoch = s->g % l->bpe;
	return 0;
}
