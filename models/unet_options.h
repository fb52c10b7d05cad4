/* The command line of models/unet: its options, and the parser (kept apart
 * from models/unet.c so that the fuzz harness tests/fuzz/unet_options.c
 * can take it without StarPU or the model). */
#ifndef STARNN_MODELS_UNET_OPTIONS_H
#define STARNN_MODELS_UNET_OPTIONS_H

#include <stdint.h>

#include "models/sevir/sevir.h"
#include "models/unet_model.h"
#include "runtime/train/awp.h"
#include "runtime/core/tensor.h"

enum command { CMD_TRAIN, CMD_EVAL, CMD_PREDICT, CMD_INFO };

/* Options; `given` records those set on the command line (a resumed run
 * takes the others from its checkpoint). */
enum opt_id {
	O_DATA = 256, O_VAL_DATA, O_CATALOG, O_SIZE, O_RESIZE, O_SYN_SIZE, O_SAMPLES, O_VAL_SAMPLES,
	O_DEPTH, O_FILTERS, O_IN_FRAMES, O_OUT_FRAMES, O_BATCH, O_MICRO, O_EPOCHS, O_STEPS, O_LR, O_WARMUP,
	O_OPTIMIZER, O_MOMENTUM, O_WEIGHT_DECAY, O_SEED, O_SHUFFLE, O_CHECKPOINT, O_CHECKPOINT_EVERY, O_RESUME,
	O_INIT, O_LOG_JSON, O_LOG_EVERY, O_EVAL_EVERY, O_OUTPUT, O_PNG, O_PNG_SAMPLES, O_PROGRESS, O_QUIET,
	O_HELP, O_PRECISION, O_LOSS_SCALE, O_BN_SYNC, O_WIRE_GRADS, O_SHARD, O_WIRE_WEIGHTS, O_AWP_REL_RES, O_AWP_INTERVAL,
	O_AWP_START_BITS, O_AWP_STRIDE, O_AWP_ROUNDING, O_CPU_WATTS, O_GPU_WATTS, O_IDLE_WATTS, O_END
};

struct options {
	enum command cmd;
	const char *data, *val_data, *catalog;
	int size, synthetic_size, samples, val_samples;
	enum sevir_resize resize;
	int depth, filters, in_frames, out_frames;
	int batch, micro, epochs;
	int64_t steps;
	float lr, momentum, weight_decay;
	int warmup;
	enum unet_optimizer optimizer;
	uint64_t seed;
	int shuffle;
	const char *checkpoint, *resume, *init, *log_json, *output, *png;
	int64_t checkpoint_every, eval_every;
	int log_every, png_samples, progress, quiet;
	int compute;        /* starnn_dtype of activations (--precision) */
	int loss_scale;     /* 0 none, 1 dynamic, 2 static (--loss-scale); -1: the default */
	float static_scale;
	int64_t inject_inf_step; /* STARNN_UNET_INJECT_INF_STEP (test hook) */
	int bn_local;       /* --bn-sync local (under mpirun) */
	int wire_grads;     /* --wire-grads: a starnn_wire_format, -1 none (under mpirun) */
	int shard;          /* --shard-optimizer */
	int wire_weights;   /* --wire-weights: a starnn_wire_format, -1 none, STARNN_WIRE_ADAPTIVE */
	struct starnn_awp_config awp; /* --awp-* */
	const char *awp_state; /* a resumed run's adaptive state (checkpoint attribute awp_state) */
	/* power model of the energy report (--cpu-watts, --gpu-watts,
	 * --idle-watts; 0: none): runtime/train/energy.h */
	float cpu_watts, gpu_watts, idle_watts;
	char given[O_END];
	/* strings taken from a checkpoint live here */
	char data_buf[4096], val_data_buf[4096], catalog_buf[4096];
};

/* What parse_options returns besides 0 (options valid) and -1 (bad usage,
 * the message printed: exit status 2): --help was given and the usage
 * printed on stdout (exit status 0). */
#define PARSE_HELP 1

/* Parses argv[1] (the command) and the options after it into o (its
 * defaults first); messages go to stderr. Never exits; may be called again
 * (getopt starts afresh each time). */
int parse_options(int argc, char **argv, struct options *o);
/* The default loss scaling of the precision when --loss-scale was not
 * given, and the check of the test hook that needs one: 0, or -1 with the
 * message printed. */
int finish_loss_scale(struct options *o);

#endif
