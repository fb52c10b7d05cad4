/* The trainer: one training loop for every model, and the program around
 * it.
 *
 * A model gives the trainer a table of callbacks (struct
 * starnn_model_ops) and its own state; the trainer runs the options every
 * model shares (runtime/train/options.h):
 *   - the run: --resume / --init from a checkpoint (the training state,
 *     the optimizer's, the loss scale's and the adaptive wire state come
 *     back), the total steps (--steps, or --epochs of the model's data),
 *     the replicas' share of the batch and the micro-batches;
 *   - the distribution (mpirun): rank 0's initial weights on every
 *     replica, the gradients' exchange (--wire-grads), the sharded
 *     optimizer (--shard-optimizer, --wire-weights, AWP), the exchange
 *     report, every rank stopped after an error on one;
 *   - the step pipeline: step k+1 is staged and submitted before the loss
 *     of step k is read, so the host never drains the task graph between
 *     steps (at most two steps in flight); a step after which a checkpoint,
 *     an evaluation or the inject test hook needs the model as it left it
 *     is finished before the next is submitted;
 *   - the evaluation cadence (--eval-every), the checkpoint cadence
 *     (--checkpoint, --checkpoint-every; atomic files, rank 0 writes),
 *     progress (a bar on a terminal, else a line every --log-every steps),
 *     the --log-json records (per step, evaluations, the exchange, the
 *     transfers, the summary), the energy of the run, with device workers
 *     (CUDA, OpenCL) the bytes StarPU moved between each pair of memory
 *     nodes per step (the first step, finished before the second is
 *     submitted, apart: it uploads the weights), a loss that is not finite (the run
 *     stops naming the step), SIGINT / SIGTERM (the steps in flight
 *     finish, --checkpoint is saved, exit 128 + the signal; a second
 *     signal exits at once).
 * The model keeps its layers, its own options, its data and its outputs'
 * wording (README, "Adding a model"). */
#ifndef STARNN_TRAIN_TRAINER_H
#define STARNN_TRAIN_TRAINER_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/train/checkpoint.h"
#include "runtime/train/options.h"
#include "runtime/train/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes besides starnn's (negative STARNN_E*): bad usage found
 * late (the message is printed; exit status 2), and a run stopped by a
 * signal (exit status 128 + its number). */
#define STARNN_TRAIN_USAGE (-1000)
#define STARNN_TRAIN_INTERRUPTED (-1001)

/* ------------------------------------------------------------ the program */

struct starnn_program {
	const char *name; /* messages "<name>: ..." */
	int quiet;        /* no "starnn: StarPU ..." line from starnn_init */
	int announce;     /* under mpirun: "<name>: rank r/n (local ...), cores ..." on stderr */
};
/* Starts the runtime for a program (starnn_init; under mpirun every rank
 * must get the same command line, and ranks other than 0 print nothing on
 * stdout), then catches SIGINT and SIGTERM (starnn_interrupted) and
 * ignores SIGXFSZ (a file over the size limit fails its write like a full
 * disk). 0, or < 0 with the message printed. */
int starnn_program_start(const struct starnn_program *p, int argc, char **argv);
/* Ends it: prints the error of rc (unless STARNN_TRAIN_USAGE or
 * STARNN_TRAIN_INTERRUPTED), stops every rank after an error under
 * mpirun, shuts the runtime down, and returns the exit status: 0, 1 (an
 * error), 2 (STARNN_TRAIN_USAGE), 128 + the signal (interrupted, with a
 * line saying so). */
int starnn_program_end(const struct starnn_program *p, int rc);
/* The first SIGINT or SIGTERM received (0: none): a loop stops at its
 * next step boundary. A second one exits at once without saving. */
int starnn_interrupted(void);
const char *starnn_signal_name(int sig);
/* Micro-batches of a batch when none is asked for: one per worker (CPU,
 * CUDA or OpenCL), at most 8 and the batch. After starnn_init. */
int starnn_default_micro(int batch);
/* Seconds on a monotonic clock (for the time of a program's phases). */
double starnn_now(void);

/* ------------------------------------------------------------ the model */

typedef struct starnn_trainer starnn_trainer;

/* What a model is created for (create below). */
struct starnn_model_config {
	int batch;        /* this replica's samples per step */
	int global_batch; /* every replica's: the loss is a mean over them */
	int first;        /* this replica's first sample of each batch */
	int micro;        /* micro-batches of this replica's batch */
	struct starnn_params_config params; /* optimizer, precision, loss scaling: for starnn_params_new */
	uint64_t seed;
};

/* What the trainer knows of the run (starnn_trainer_info), for a model's
 * lines. */
struct starnn_train_info {
	const struct starnn_train_opts *opts; /* as the run uses them (a checkpoint's included) */
	int64_t total;           /* the last step of the run */
	int64_t first_step;      /* steps done before it (--resume) */
	int64_t step;            /* steps done */
	int64_t steps_per_epoch; /* the model's samples / the batch */
	int replicas, batch, micro; /* batch: this replica's samples per step */
	double loss;             /* the last loss read (NAN before) */
};

/* A step's progress line (report_step). */
struct starnn_step_report {
	int64_t step, total, epoch; /* epoch counts from 1 */
	double loss;
	double window_sps;          /* samples per second since the last line */
	double elapsed, eta;        /* seconds since the start, to the end (NAN: unknown) */
};

enum {
	/* The loss is read only for the steps a line is printed for (and the
	 * last): no per-step --log-json records. */
	STARNN_MODEL_LOSS_WHEN_LOGGED = 1,
	/* The memory, exchange and energy lines are printed with --quiet too,
	 * and after a run of no steps. */
	STARNN_MODEL_REPORTS_WHEN_QUIET = 2,
};

/* The callbacks a model gives; self is the model's own state. Those
 * marked optional may be NULL. Every callback returns 0 or a negative
 * starnn error (with its message), or STARNN_TRAIN_USAGE. */
struct starnn_model_ops {
	unsigned flags;
	/* optional (no checkpoints without it): --resume and --init read the
	 * model's attributes from f (file is its name): its format and
	 * architecture (an option given on the command line must agree), and
	 * with resume its own settings too. */
	int (*read_checkpoint)(void *self, ckpt_file *f, const char *file, int resume);
	/* Opens the training data: *samples per epoch, *what describes it
	 * (messages). */
	int (*open_data)(void *self, int64_t *samples, const char **what);
	/* Creates the model for c and its parameter set (starnn_params_new
	 * with c->params): the trainer distributes, updates through the model
	 * and checkpoints it; the model keeps and destroys it. */
	int (*create)(void *self, const struct starnn_model_config *c, starnn_params **ps);
	/* optional: the tensors a checkpoint holds besides the optimizer
	 * state, in a fixed order, named by their dataset paths (weights,
	 * running statistics ...); NULL: the parameters' masters under their
	 * names. The trainer adds "optimizer/<parameter>/<slot>". */
	int (*state)(void *self, const struct ckpt_entry **entries, int *n);
	/* optional: opens the evaluation data when there is training to
	 * evaluate and --eval-every is not 0: 1 evaluations follow, 0 none. */
	int (*open_eval)(void *self);
	/* optional: the lines saying what runs, unless --quiet. */
	void (*describe)(void *self, const starnn_trainer *tr, FILE *out);
	/* optional: training starts after `step` steps (0, or --resume's). */
	int (*start)(void *self, int64_t step);
	/* Stages the batch of step (1-based) into the model's inputs, without
	 * waiting for the step in flight; *epoch: its epoch, from 0. */
	int (*stage)(void *self, int64_t step, int64_t *epoch);
	/* Submits step's graph: forward, loss, backward, the parameter set's
	 * reduction and update at step. Returns without waiting. */
	int (*submit)(void *self, int64_t step);
	/* Waits for step's loss, summed over the replicas, and reads it: the
	 * loss of either of the last two steps submitted. STARNN_ENUM (and
	 * *loss) when it is not finite. */
	int (*loss)(void *self, int64_t step, double *loss);
	/* optional: a step's progress line in the model's words (default:
	 * "step S/T  epoch E  loss L  N samples/s  elapsed Ts  ETA ..."). */
	void (*report_step)(void *self, const struct starnn_step_report *r);
	/* optional: an evaluation at step (in an epoch from 0): prints its
	 * line (starnn_trainer_end_line first) and writes its --log-json
	 * record (starnn_trainer_log). Called every --eval-every steps and
	 * at the end, when open_eval said so. */
	int (*evaluate)(void *self, starnn_trainer *tr, int64_t step, int64_t epoch);
	/* optional: the model's lines once training is over (the trainer's
	 * memory, exchange and energy lines follow). */
	int (*finish)(void *self, starnn_trainer *tr);
	/* optional (with read_checkpoint): the model's root attributes of a
	 * checkpoint (its "format", "format_version", architecture, data)
	 * into attrs (room for max); returns their count or an error. */
	int (*checkpoint_attrs)(void *self, struct ckpt_attr *attrs, int max);
};

/* Runs the training o describes. The model is the caller's before and
 * after (the trainer destroys nothing of it, but detaches its parameter
 * set from the distribution). 0, a starnn error, STARNN_TRAIN_USAGE or
 * STARNN_TRAIN_INTERRUPTED (the steps in flight finished, --checkpoint
 * saved). */
int starnn_trainer_run(const struct starnn_model_ops *ops, void *self, struct starnn_train_opts *o);

/* During the run, for the model's callbacks: */
const struct starnn_train_info *starnn_trainer_info(const starnn_trainer *tr);
/* --log-json's file on rank 0 (NULL: none). */
FILE *starnn_trainer_log(starnn_trainer *tr);
/* Ends the line of the progress bar, when one is on the screen, before
 * another line is printed. */
void starnn_trainer_end_line(starnn_trainer *tr);
/* Seconds since the first step was submitted. */
double starnn_trainer_elapsed(const starnn_trainer *tr);
/* The line saying how the optimizer is sharded (--shard-optimizer),
 * nothing without. */
void starnn_trainer_describe_shard(const starnn_trainer *tr, FILE *out);

/* For a model's read_checkpoint on --resume: the setting `attr` of the
 * checkpoint into *value unless the option was given (then a note when
 * they differ: not the run an uninterrupted one would be). */
int starnn_ckpt_setting_int(const struct starnn_train_opts *o, ckpt_file *f, const char *file, const char *attr,
                            int given, int *value);
int starnn_ckpt_setting_float(const struct starnn_train_opts *o, ckpt_file *f, const char *file, const char *attr,
                              int given, float *value);

#ifdef __cplusplus
}
#endif
#endif
