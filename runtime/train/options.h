/* The command-line options every training program shares, which the
 * trainer (runtime/train/trainer.h) runs: steps and epochs, batch and
 * micro-batches, the optimizer and its settings, precision and loss
 * scaling, the exchange between replicas (wire formats, the sharded
 * optimizer, AWP), the seed, logging and progress, checkpoints, the
 * evaluation cadence and the energy power model.
 *
 * A program keeps its own getopt_long loop: it adds the common options it
 * offers to its table (starnn_train_longopts), hands each one to
 * starnn_train_opts_parse, and checks them together once the command line
 * is read (starnn_train_opts_check). The messages go to stderr as
 * "<prog>: ...". Plain C: no StarPU (the fuzz harness of models/unet's
 * command line builds this file alone). */
#ifndef STARNN_TRAIN_OPTIONS_H
#define STARNN_TRAIN_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/types.h"
#include "runtime/train/awp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* getopt_long values of the common options (a program's own options take
 * values below STARNN_TOPT_FIRST). */
enum starnn_topt {
	STARNN_TOPT_FIRST = 0x4000,
	STARNN_TOPT_STEPS = STARNN_TOPT_FIRST, /* --steps N */
	STARNN_TOPT_EPOCHS,                    /* --epochs N */
	STARNN_TOPT_BATCH,                     /* --batch N (all replicas) */
	STARNN_TOPT_MICRO,                     /* --micro-batches N (per replica) */
	STARNN_TOPT_OPTIMIZER,                 /* --optimizer adam|sgd */
	STARNN_TOPT_LR,                        /* --lr X */
	STARNN_TOPT_WARMUP,                    /* --warmup N */
	STARNN_TOPT_MOMENTUM,                  /* --momentum X (SGD) */
	STARNN_TOPT_WEIGHT_DECAY,              /* --weight-decay X */
	STARNN_TOPT_SEED,                      /* --seed N */
	STARNN_TOPT_PRECISION,                 /* --precision fp32|amp-fp16|amp-bf16 */
	STARNN_TOPT_LOSS_SCALE,                /* --loss-scale dynamic|none|N */
	STARNN_TOPT_WIRE_GRADS,                /* --wire-grads F */
	STARNN_TOPT_SHARD,                     /* --shard-optimizer */
	STARNN_TOPT_WIRE_WEIGHTS,              /* --wire-weights F|awp|none */
	STARNN_TOPT_AWP_REL_RES,               /* --awp-rel-res X ... in starnn_awp_options' order */
	STARNN_TOPT_AWP_INTERVAL,
	STARNN_TOPT_AWP_START_BITS,
	STARNN_TOPT_AWP_STRIDE,
	STARNN_TOPT_AWP_ROUNDING,
	STARNN_TOPT_AWP_RULE,
	STARNN_TOPT_AWP_RES_FACTOR,
	STARNN_TOPT_LOG_JSON,                  /* --log-json FILE */
	STARNN_TOPT_LOG_EVERY,                 /* --log-every N */
	STARNN_TOPT_PROGRESS,                  /* --progress on|off */
	STARNN_TOPT_QUIET,                     /* --quiet */
	STARNN_TOPT_CHECKPOINT,                /* --checkpoint FILE */
	STARNN_TOPT_CHECKPOINT_EVERY,          /* --checkpoint-every N */
	STARNN_TOPT_RESUME,                    /* --resume FILE */
	STARNN_TOPT_INIT,                      /* --init FILE */
	STARNN_TOPT_EVAL_EVERY,                /* --eval-every N */
	STARNN_TOPT_CPU_WATTS,                 /* --cpu-watts W */
	STARNN_TOPT_GPU_WATTS,                 /* --gpu-watts W */
	STARNN_TOPT_IDLE_WATTS,                /* --idle-watts W */
	STARNN_TOPT_MASTER,                    /* --master host|auto */
	STARNN_TOPT_END
};
#define STARNN_TOPT_COUNT (STARNN_TOPT_END - STARNN_TOPT_FIRST)
/* The bit of option id in a mask of options (starnn_train_longopts). */
#define STARNN_TOPT_BIT(id) (UINT64_C(1) << ((id) - STARNN_TOPT_FIRST))

enum starnn_topt_optimizer { STARNN_TOPT_ADAM = 0, STARNN_TOPT_SGD = 1 };

struct starnn_train_opts {
	const char *prog;         /* the program's name in messages ("unet") */
	int64_t steps;            /* total steps; -1: --epochs decides */
	int epochs;
	int batch;                /* the global batch: all replicas' samples of a step */
	int micro;                /* micro-batches per replica (0: one per worker, at most 8) */
	int optimizer;            /* enum starnn_topt_optimizer */
	float lr, momentum, weight_decay;
	int warmup;
	uint64_t seed;
	int compute;              /* starnn_dtype of the activations (--precision) */
	int loss_scale;           /* 0 none, 1 dynamic, 2 static (--loss-scale); -1: the precision's default */
	float static_scale;
	int wire_grads;           /* a starnn_wire_format, -1 none */
	int shard;                /* --shard-optimizer */
	int wire_weights;         /* a starnn_wire_format, -1 none, STARNN_WIRE_ADAPTIVE */
	int master_host;          /* --master host: masters and update on the host, the device edge */
	struct starnn_awp_config awp;
	const char *awp_state;    /* a resumed run's adaptive state (set by the trainer) */
	const char *log_json;
	int log_every, progress, quiet; /* progress: 1 on, 0 off, -1 on a terminal */
	const char *checkpoint, *resume, *init;
	int64_t checkpoint_every;
	int64_t eval_every;       /* -1: at the end only; 0: never */
	float cpu_watts, gpu_watts, idle_watts; /* power model (runtime/train/energy.h) */
	/* Test hook (builds with --enable-test-hooks): at this step (0: none)
	 * an Inf goes into a gradient and the trainer checks that the step is
	 * skipped; set by the program from its variable, named here for the
	 * messages (STARNN_UNET_INJECT_INF_STEP ...). */
	int64_t inject_inf_step;
	const char *inject_name;
	char given[STARNN_TOPT_COUNT]; /* set on the command line */
};

/* The defaults (those of models/unet: batch 8, one epoch, Adam lr 1e-3,
 * SGD momentum 0.9, seed 1, fp32, evaluation at the end, a line every 10
 * steps, the progress bar on a terminal); a program sets its own after. */
void starnn_train_opts_init(struct starnn_train_opts *o, const char *prog);
/* Whether option id was given on the command line. */
int starnn_train_opts_given(const struct starnn_train_opts *o, int id);

/* Appends to table (which has n entries, room for STARNN_TOPT_COUNT more
 * and the terminating zero entry) the common options whose bits are not
 * in skip; returns the new count (the zero entry is written after it). */
size_t starnn_train_longopts(struct option *table, size_t n, uint64_t skip);

/* Parses common option id with value arg (NULL for flags) into o:
 * 0 valid, -1 bad (message printed), 1 id is not a common option. */
int starnn_train_opts_parse(struct starnn_train_opts *o, int id, const char *arg);

/* Once the command line is read: the checks between common options
 * (--wire-weights without --shard-optimizer or --master host, --master host
 * with --shard-optimizer, --awp-* without awp, --resume
 * with --init, --micro-batches over --batch), and the default loss
 * scaling unless a training run resumes (the checkpoint's then). 0, or -1
 * with the message. */
int starnn_train_opts_check(struct starnn_train_opts *o, int training);
/* The default loss scaling of the precision when --loss-scale was not
 * given, and the check of the inject test hook, which needs one: 0, or
 * -1 with the message printed. */
int starnn_train_opts_finish_loss_scale(struct starnn_train_opts *o);

/* Messages and values of programs' options, "<prog>: ..." on stderr: */
void starnn_fail(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer / number in [lo, hi], on or off (on, yes, 1 / off, no, 0):
 * 0, or -1 with "<opt> wants ..." printed. */
int starnn_parse_i64(const char *prog, const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);
int starnn_parse_int(const char *prog, const char *opt, const char *s, int lo, int hi, int *out);
int starnn_parse_float(const char *prog, const char *opt, const char *s, float lo, float hi, float *out);
int starnn_parse_onoff(const char *prog, const char *opt, const char *s, int *out);

/* "adam" or "sgd". */
const char *starnn_optimizer_name(int optimizer);

#ifdef __cplusplus
}
#endif
#endif
