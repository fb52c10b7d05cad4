/* Energy calibration of captured tasks: what tools/energy-calibrate does
 * with the tasks of a training step (runtime/core/submit.h, capture), the way
 * StarPU 1.4's energy calibration does it, on StarPU 1.3.10, whose own
 * measurement of task energy needs NVML at StarPU's build time.
 *
 * For one captured (codelet, footprint) and one worker: fresh scratch
 * buffers of the task's shapes (never the model's own handles, so nothing
 * of the model changes however often the task runs), the task run many
 * times on that worker alone (execute_on_specific_worker) in a number of
 * windows, each window between two meter readings (runtime/train/energy.h); the
 * joules of a window, less the idle power times its length when an idle
 * power is given, divided by the tasks it ran, are recorded into the
 * codelet's energy model with starpu_perfmodel_update_history(), so that
 * StarPU writes them to starnn_<op>_<dtype>_energy.<host> in its sampling
 * directory at shutdown (starpu_perfmodel_display -s shows them).
 *
 * Which domains of a reading count for a worker: a CPU worker, every
 * package-N and dram-N domain (RAPL and perf measure whole packages, not
 * cores: with one worker busy and the others idle, the idle power of the
 * rest is in every window, which is what the idle subtraction removes); a
 * CUDA worker of device D, the domain gpu-D (NVML's index taken as CUDA's
 * device number: true on one GPU, and on several with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID and no CUDA_VISIBLE_DEVICES).
 *
 * Measurements need windows much longer than the meters' update period
 * (RAPL about 1 ms, NVML 20 to 100 ms): tasks of a few microseconds are
 * run thousands of times per window. The windows of a task follow each
 * other closely, so the meters' steps largely cancel in their mean. */
#ifndef STARNN_CALIBRATE_H
#define STARNN_CALIBRATE_H

#include <stdint.h>

#include "runtime/train/energy.h"
#include "runtime/core/submit.h"

#ifdef __cplusplus
extern "C" {
#endif

struct starnn_calib_opts {
	double seconds;   /* measured time per (task, worker), split evenly over the windows */
	/* The shortest window, so that the meter's own resolution stays small
	 * beside it; 0: 20 ms on a CPU worker (RAPL and perf update every
	 * millisecond), 200 ms on a GPU (NVML every 20 to 100 ms). */
	double min_window;
	int64_t repeat;   /* > 0: this many tasks per window instead (seconds unused) */
	/* Windows per round, each recorded as one measurement; up to 3 more
	 * rounds while StarPU's entry would have fewer samples than it needs
	 * to use it (STARPU_CALIBRATE_MINIMUM: it drops a new entry's first
	 * sample). A window over 3 times the median length of its round is not
	 * recorded: the process or the worker was interrupted, the meter
	 * counted what else ran. Nor is one whose joules per task are more than
	 * 2 times (or 1 + STARPU_HISTORY_MAX_ERROR / 100, if less) above or
	 * below the median of all the rounds' windows: the meter's domains
	 * counted a burst of something else, or the meter lagged and caught up
	 * (StarPU would count it as an error against its mean, and empty the
	 * entry once errors outnumber samples). A round whose median window is
	 * under half the length asked is measured again with more tasks per
	 * window (at most 4 times). */
	int windows;
	double idle_watts; /* the worker's domains' idle power, subtracted (0: none) */
	/* 1: fill the scratch buffers with the values of the captured tensors
	 * (read, never written), so that data-dependent paths (the loss-scale
	 * overflow flag that makes an optimizer skip its update) run as in the
	 * step; they must still live. 0: random values of magnitude in
	 * [1/4, 1) and random sign (u8 buffers: zeros). */
	int from_tensors;
	uint64_t seed;
};
/* seconds 1, min_window 0, repeat 0, windows STARPU_CALIBRATE_MINIMUM
 * (default 10) + 1:
 * StarPU drops the first measurement of a history entry and uses an entry
 * from that many on; idle 0, from_tensors 0, seed 1. */
void starnn_calib_opts_init(struct starnn_calib_opts *o);

struct starnn_calib_result {
	/* every measured window: */
	int64_t tasks;          /* tasks run */
	double seconds;         /* total length */
	double joules;          /* measured (the worker's domains, idle included) */
	double idle_joules;     /* idle_watts x seconds */
	/* the same over the windows recorded */
	int64_t rec_tasks;
	double rec_seconds, rec_joules, rec_idle_joules;
	int recorded;           /* windows recorded (those above the idle power) */
	int stretched;          /* windows not recorded: over 3 times their round's median length */
	int strays;             /* windows not recorded: joules per task over 2 times (or StarPU's
	                           STARPU_HISTORY_MAX_ERROR, if less) above or below the median */
	unsigned samples;       /* samples of StarPU's entry now */
	unsigned needed;        /* the samples from which StarPU uses it (STARPU_CALIBRATE_MINIMUM) */
	double joules_per_task; /* the mean of StarPU's entry (NAN if nothing recorded) */
};

/* Whether a reading has the domains of worker w (see above): 0, or
 * STARNN_ENODEV with the reason in why. *joules: their sum. */
int starnn_calib_worker_joules(const struct starnn_energy_reading *r, int worker, double *joules, char *why,
                               size_t why_size);

/* Calibrates one captured task on worker w (a StarPU worker id that can
 * run it) with meter m, and records the result into t->cl->energy_model.
 * Needs StarPU started and no other task running. Errors: STARNN_EINVAL
 * (no energy model, a worker that cannot run it, bad options),
 * STARNN_ENODEV (the meter does not measure that worker), STARNN_ENOMEM,
 * a task's own error. */
int starnn_calibrate_task(const struct starnn_captured_task *t, int worker, starnn_energy_meter *m,
                          const struct starnn_calib_opts *o, struct starnn_calib_result *res);

/* "4x2304 R, 36x4 R, 4x2304 W" into buf: each buffer's rows x cols and
 * access mode (ld when it is not cols: "4x2304/4608"). */
const char *starnn_captured_shape(const struct starnn_captured_task *t, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
