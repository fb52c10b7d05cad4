/* Fuzz harness: the command line of models/unet (models/unet_options.c,
 * with the common options of runtime/train/options.c).
 * The input is the argument vector after the program name, arguments
 * separated by NUL bytes (at most 64 of them). Checks that the parser
 * returns one of its three values and that accepted options are within the
 * ranges the usage states. Seeds: command lines of the README and the
 * tests (tests/fuzz/corpus/unet_options). */
#include <string.h>

#include "models/unet_convention.h"
#include "models/unet_options.h"
#include "tests/fuzz/fuzz.h"

#define MAX_ARGS 64

int fuzz_unet_options(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *argv[MAX_ARGS + 2];
	struct options *o = malloc(sizeof *o);
	int rc = 0;
	if (!text || !o)
		goto out;
	memcpy(text, data, size);
	text[size] = 0;
	int argc = 0;
	argv[argc++] = (char *)"unet";
	for (size_t i = 0; i < size && argc < MAX_ARGS + 1;) {
		argv[argc++] = text + i;
		i += strlen(text + i) + 1;
	}
	argv[argc] = NULL;
	int r = parse_options(argc, argv, o);
	if (r != 0 && r != -1 && r != PARSE_HELP) {
		rc = FUZZ_FAIL("parse_options returned %d", r);
	} else if (r == 0) {
		const struct starnn_train_opts *t = &o->train;
		if (o->cmd < CMD_TRAIN || o->cmd > CMD_INFO || o->depth < 1 || o->depth > 5 || o->filters < 1 ||
		    t->batch < 1 || t->micro < 0 || t->micro > 64 || o->in_frames < 1 || o->out_frames < 1 ||
		    o->out_frames > SEVIR_OUT_FRAMES || !(t->lr >= 0 && t->lr <= 10) || !o->data)
			rc = FUZZ_FAIL("parse_options accepted depth %d, filters %d, batch %d, micro-batches %d, frames "
			               "%d + %d, lr %g",
			               o->depth, o->filters, t->batch, t->micro, o->in_frames, o->out_frames, (double)t->lr);
		if (t->resume && t->init)
			rc = FUZZ_FAIL("parse_options accepted --resume with --init");
		if (!unet_convention_name(o->convention))
			rc = FUZZ_FAIL("parse_options accepted convention %d", o->convention);
		if ((o->cmd == CMD_EVAL || o->cmd == CMD_PREDICT) && !t->checkpoint)
			rc = FUZZ_FAIL("parse_options accepted eval / predict without --checkpoint");
	}
out:
	free(text);
	free(o);
	return rc;
}

FUZZ_ENTRY(fuzz_unet_options)
