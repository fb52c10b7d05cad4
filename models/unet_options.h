/* The command line of models/unet: its options, and the parser (kept apart
 * from models/unet.c so that the fuzz harness tests/fuzz/unet_options.c
 * can take it without StarPU or the model). */
#ifndef STARNN_MODELS_UNET_OPTIONS_H
#define STARNN_MODELS_UNET_OPTIONS_H

#include <stdint.h>

#include "models/sevir/sevir.h"
#include "runtime/train/options.h"

enum command { CMD_TRAIN, CMD_EVAL, CMD_PREDICT, CMD_INFO };

/* The UNet's own options (the common ones are runtime/train/options.h's,
 * in o->train); `given` records those set on the command line (a resumed
 * run takes the others from its checkpoint). */
enum opt_id {
	O_DATA = 256, O_VAL_DATA, O_CATALOG, O_SIZE, O_RESIZE, O_SYN_SIZE, O_SAMPLES, O_VAL_SAMPLES,
	O_DEPTH, O_FILTERS, O_IN_FRAMES, O_OUT_FRAMES, O_SHUFFLE, O_OUTPUT, O_PNG, O_PNG_SAMPLES, O_HELP, O_BN_SYNC,
	O_CONVENTION, O_END
};

struct options {
	enum command cmd;
	struct starnn_train_opts train; /* steps, batch, optimizer, precision, checkpoints, ... */
	const char *data, *val_data, *catalog;
	int size, synthetic_size, samples, val_samples;
	enum sevir_resize resize;
	int depth, filters, in_frames, out_frames;
	int convention;     /* enum unet_convention (models/unet_model.h) */
	int shuffle;
	const char *output, *png;
	int png_samples;
	int bn_local;       /* --bn-sync local (under mpirun) */
	char given[O_END];
	/* strings taken from a checkpoint live here */
	char data_buf[4096], val_data_buf[4096], catalog_buf[4096];
};

/* Whether option id (the UNet's or a common one) was given. */
int unet_given(const struct options *o, int id);

/* What parse_options returns besides 0 (options valid) and -1 (bad usage,
 * the message printed: exit status 2): --help was given and the usage
 * printed on stdout (exit status 0). */
#define PARSE_HELP 1

/* Parses argv[1] (the command) and the options after it into o (its
 * defaults first); messages go to stderr. Never exits; may be called again
 * (getopt starts afresh each time). */
int parse_options(int argc, char **argv, struct options *o);

#endif
