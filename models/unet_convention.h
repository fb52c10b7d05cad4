/* The conventions a UNet's weights depend on, beyond their shapes: the
 * order of the decoder's concatenation (which input channels of dec<i>/bn0
 * and dec<i>/conv1 are the skip's) and the batch norms' eps. A checkpoint
 * records them (README, "File formats"). Plain C: models/unet_options.c
 * parses --convention without the model or StarPU. */
#ifndef STARNN_MODELS_UNET_CONVENTION_H
#define STARNN_MODELS_UNET_CONVENTION_H

#include <string.h>

enum unet_convention {
	UNET_KERAS = 0,     /* the study's Keras UNet (neurips-2020-sevir): concatenation
	                     * [skip, up], eps 1e-3 (Keras' BatchNormalization); the default */
	UNET_STARNN_V1 = 1, /* starnn's first models: [up, skip], eps 1e-5 (PyTorch's
	                     * BatchNorm2d); a checkpoint without a `convention` attribute */
};
#define UNET_NCONVENTIONS 2

/* "keras", "starnn-v1" (NULL for another value), and back (-1 for another name). */
static inline const char *unet_convention_name(int convention)
{
	return convention == UNET_KERAS ? "keras" : convention == UNET_STARNN_V1 ? "starnn-v1" : NULL;
}

static inline int unet_convention_parse(const char *name)
{
	for (int c = 0; c < UNET_NCONVENTIONS; c++)
		if (name && strcmp(name, unet_convention_name(c)) == 0)
			return c;
	return -1;
}

/* Its batch norms' eps (the checkpoint attribute bn_eps; the batch norms
 * compute with it rounded to float), and its concatenation order,
 * "skip,up" or "up,skip". */
static inline double unet_convention_bn_eps(int convention)
{
	return convention == UNET_STARNN_V1 ? 1e-5 : 1e-3;
}

static inline const char *unet_convention_concat(int convention)
{
	return convention == UNET_STARNN_V1 ? "up,skip" : "skip,up";
}

#endif
