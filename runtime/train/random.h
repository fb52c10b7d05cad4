/* The random numbers of models' initial weights and generated data:
 * splitmix64, small and the same on every machine, so that a seed gives
 * the same model and data everywhere (and every replica the same initial
 * weights). Plain C, header only. */
#ifndef STARNN_TRAIN_RANDOM_H
#define STARNN_TRAIN_RANDOM_H

#include <stdint.h>

/* The next 64 random bits of the generator whose state is *s. */
static inline uint64_t starnn_rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A float in [lo, hi) from the top 24 bits (exact: k / 2^24). */
static inline float starnn_rng_uniform(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((starnn_rng_next(s) >> 40) * (1.0 / 16777216.0));
}

#endif
