/* Internal to the trainer: the run in progress (trainer.c) and its
 * checkpoints (trainer_state.c). */
#ifndef STARNN_TRAINER_INTERNAL_H
#define STARNN_TRAINER_INTERNAL_H

#include "runtime/core/init.h"
#include "runtime/train/trainer.h"

struct starnn_trainer {
	const struct starnn_model_ops *ops;
	void *self;
	struct starnn_train_opts *o;
	struct starnn_train_info info;
	starnn_params *ps;
	FILE *log;
	int tty;             /* the progress bar is on */
	int bar;             /* its line is on the screen */
	int every_step;      /* every step's loss is read (per-step records) */
	int evaluating;      /* the model evaluates (open_eval) */
	int64_t epoch;       /* epochs completed */
	double t_start;
	struct ckpt_amp amp; /* --resume: the checkpoint's precision and loss-scale state */
	char *awp_state;     /* --resume: the adaptive wire state (o->awp_state points here) */
	/* Runs with device workers: StarPU's transfer totals at the first
	 * step's start, at its end (taken only when the run has a second
	 * step), and at the last step's end (transfer_report). */
	int devices;
	struct starnn_transfers *moved; /* [3], NULL without devices */
	int64_t moved_after;            /* the step moved[1] was taken after; 0: none */
	/* --master host: the edge's counts at the same three points (before
	 * the first step, after it with devices, after the last step). */
	struct starnn_edge_stats edge_at[3];
};

/* The program's name in messages. */
extern const char *starnn_trainer_prog;

/* --resume: the training state of f (steps, optimizer and its settings,
 * seed, the exchange's settings and state, precision and loss scaling)
 * into the options, those given on the command line kept. */
int starnn_trainer_read_state(starnn_trainer *tr, ckpt_file *f, const char *file);
/* Once the model exists: the tensors of f (with the optimizer state, or
 * the weights only), then rank 0's on every replica. */
int starnn_trainer_load(starnn_trainer *tr, ckpt_file *f, int with_optimizer);
int starnn_trainer_broadcast(starnn_trainer *tr, int with_optimizer);
/* --resume: the loss-scale state of the checkpoint, or a fresh one with a
 * note when the precision or the loss scaling changed. */
int starnn_trainer_resume_precision(starnn_trainer *tr, const char *file);
/* Writes --checkpoint: every replica calls it, rank 0 writes. */
int starnn_trainer_write(starnn_trainer *tr, const char *file);

#endif
