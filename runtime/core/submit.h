/* The submit layer: how models and the training loop put tasks into the
 * StarPU graph.
 *
 * Every operation's submit function (starnn_gemm(), starnn_axpy() ...) fills
 * a starnn_task_desc and calls starnn_submit(). Submission is asynchronous:
 * StarPU derives dependencies from the access modes in submission order
 * (sequential consistency), so a whole training step is a list of calls with
 * no wait inside. Only starnn_wait() and starnn_tensor_read() block.
 *
 * Placement: starnn_set_placement(node) restricts the tasks submitted
 * afterwards (by this thread) to the workers of one StarPU memory node
 * (STARPU_MAIN_RAM = 0 for the CPUs, one node per GPU), until set back to
 * STARNN_ANYWHERE.
 *
 * Edges: when a placed task reads a tensor whose last writer was placed on
 * another memory node, the edge hook (if any) is called first; it may submit
 * tasks of its own on either side (e.g. compress on the producer's node,
 * decompress on the consumer's) and hand back the tensor the consumer should
 * read instead. Compression on transfers is built on this. */
#ifndef STARNN_SUBMIT_H
#define STARNN_SUBMIT_H

#include <starpu.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STARNN_MAX_BUFFERS 8
#define STARNN_ANYWHERE (-1)

struct starnn_task_desc {
	struct starpu_codelet *cl;       /* its modes[] give the access modes */
	const void *args;                /* copied; given to the kernels as cl_arg */
	size_t args_size;
	starnn_tensor *tensors[STARNN_MAX_BUFFERS]; /* cl->nbuffers of them */
	const char *name;                /* optional: default "<op>:<written tensor>" */
	int priority;                    /* STARPU_MIN_PRIO .. STARPU_MAX_PRIO, 0 default */
	/* Floating-point operations of this task, given to StarPU as
	 * task->flops (its perfmodels, STARPU_WORKER_STATS and traces show
	 * GFlop/s from it). 0: one per element of the largest buffer, the
	 * count of element-wise operations; STARNN_NO_FLOPS: none (copies,
	 * fills). Tasks of one footprint must have the same count, or StarPU
	 * stops recording flops for it: compute it from the footprint's keys. */
	double flops;
};
#define STARNN_NO_FLOPS (-1.0)

int starnn_submit(const struct starnn_task_desc *desc);

/* Priorities. A training step's critical path is the chain of tasks on
 * activations (forward, loss, backward data); the parameter side (weight
 * and bias gradients, their sums over micro-batches, the optimizer) need
 * only be done before the next step's forward reaches that layer. A task's
 * priority is its descriptor's, else that of the first tensor it writes
 * (starnn_tensor.priority, a part's taken from its root): runtime/train/params.c gives STARNN_PRIO_PARAM to the
 * parameters' masters, gradients and optimizer state (and to the loss
 * scale), so every task that writes them, in any model, has it. Under a
 * scheduler that orders its ready tasks by priority (lws, StarPU's default,
 * and prio, dmdas), a free worker then takes the ready activation tasks
 * first and fills the gaps with the parameter side. starnn_priorities_set(0)
 * gives every task priority 0 (on, the default, keeps them); so does
 * STARNN_PRIORITIES=off in builds with test hooks (configure
 * --enable-test-hooks). Priorities change the order tasks run in, never
 * their results. */
#define STARNN_PRIO_PARAM (-1)
/* Whether priorities are on; the check reports an unknown value of
 * STARNN_PRIORITIES (STARNN_EINVAL and the message). */
int starnn_priorities_on(void);
int starnn_priorities_check(void);
/* 1 on, 0 off (tests, benchmarks; over STARNN_PRIORITIES). */
int starnn_priorities_set(int on);
/* Told the scheduling policy's range of priorities by starnn_init
 * (starpu_sched_get_min_priority / _max): priorities are clamped to it,
 * and off where it holds one value (eager, dmda, and heteroprio, which
 * reads a priority as the index of its bucket and aborts on a negative
 * one) whatever STARNN_PRIORITIES says. */
void starnn_priorities_range(int lo, int hi);

/* Sum of the flops of every task submitted since starnn_init() (all
 * threads), as given to StarPU. */
double starnn_submitted_flops(void);

/* Waits for every submitted task; returns the first error a task raised. */
int starnn_wait(void);

void starnn_set_placement(int memory_node);
int starnn_get_placement(void);
/* Pins: a tensor pinned to memory node `node` has every task that reads or
 * writes it (submitted while this thread has no placement) run on that
 * node's workers; the tensors such a task writes are then "near" that node
 * (starnn_tensor.near), and a task without a pin whose near inputs all lie
 * on one node runs there too, so the tasks that follow a device's copy of
 * a parameter stay on that device (runtime/train/params.h, --master host).
 * Where no worker of the node can run a task (no implementation there), it
 * goes where StarPU places it. Two pins on different nodes in one task are
 * STARNN_EINVAL. A placement (starnn_set_placement) comes first. node < 0
 * lifts the pin. Without pins, nothing changes. */
void starnn_tensor_pin(starnn_tensor *t, int node);
/* Number of memory nodes that have compute workers, and their ids. */
int starnn_memory_nodes(int *nodes, int max);

/* Restricts the tasks submitted afterwards (by this thread) to kinds of
 * worker: STARPU_CPU, STARPU_CUDA, STARPU_OPENCL (or a union); 0 lifts the
 * restriction. Tests use it to run a codelet's implementations in turn; a
 * codelet without an implementation for those kinds is STARNN_ENODEV,
 * with a message.
 *
 * A task whose data (its distinct tensors) exceed the memory of a device
 * (CUDA, OpenCL; or STARPU_LIMIT_*_MEM) never goes to that device's
 * workers; where no other worker may run it (set_where, placement), the
 * submission fails with STARNN_ENOMEM and a message (StarPU 1.3 would wait
 * for room forever). */
void starnn_set_where(uint32_t where);

typedef int (*starnn_edge_fn)(void *ctx, starnn_tensor *t, int from_node, int to_node,
                              starnn_tensor **replacement);
void starnn_set_edge_hook(starnn_edge_fn fn, void *ctx);

/* Capture: the tasks of a piece of graph, for tools that replay them
 * (tools/energy-calibrate runs each task of a training step many times on
 * one worker between two energy readings). Between starnn_capture_begin()
 * and starnn_capture_end(), starnn_submit() (any thread) also records what
 * it submits, one record per distinct (codelet, footprint): the footprint
 * is the one cl->model keys its history with, so a record is one entry of
 * the codelet's time and energy models. The tasks are submitted and run as
 * usual. */
struct starnn_captured_buffer {
	size_t rows, cols, ld;               /* the StarPU matrix view */
	starnn_dtype dtype;
	enum starpu_data_access_mode mode;   /* cl->modes[i] */
	/* The tensor the first such task used (after the edge hook). Only
	 * valid while it lives: a model's own tensors live as long as the
	 * model; a temporary may be gone by starnn_capture_end(). */
	starnn_tensor *tensor;
};
struct starnn_captured_task {
	struct starpu_codelet *cl;
	void *args;                          /* a copy of the first task's args */
	size_t args_size;
	int nbuffers;
	struct starnn_captured_buffer buf[STARNN_MAX_BUFFERS];
	double flops;                        /* task->flops as given to StarPU */
	uint32_t footprint;
	int64_t count;                       /* tasks of this (codelet, footprint) */
	char name[STARNN_NAME_MAX + 64];     /* the first task's name */
};
/* STARNN_ESTATE when a capture is already on. */
int starnn_capture_begin(void);
/* Ends the capture: *tasks (in the order of their first submission; free
 * with starnn_capture_free) and *n. STARNN_ESTATE when none is on;
 * STARNN_ENOMEM when a record could not be made during the capture. */
int starnn_capture_end(struct starnn_captured_task **tasks, int *n);
void starnn_capture_free(struct starnn_captured_task *tasks, int n);

/* Interned copy of a task name that lives until starnn_shutdown(): task
 * names must outlive their tasks. The copy is made safe for traces first
 * (starnn_trace_name), so the interned string may differ from s; NULL when
 * out of memory. */
const char *starnn_intern(const char *s);

/* Writes into out (size > 0 bytes) a form of name that a Paje trace can
 * hold: StarPU writes task names into paje.trace unquoted, as
 * whitespace-separated fields, so spaces, tabs, control and non-ASCII bytes
 * become '_', quotes and backslashes are dropped, and an empty result
 * becomes "task". Truncates to size - 1 bytes; returns out. */
char *starnn_trace_name(const char *name, char *out, size_t size);

/* Internal to the runtime: make t's own handle hold its data (gathers parts,
 * partitions ancestors), asynchronously. make_whole drops every plan of t;
 * prepare keeps t's read-only plans when the access only reads t, and
 * partitions ancestors read-only for reads (so readers of a whole and of
 * its parts do not wait for each other). */
void starnn_tensor_make_whole(starnn_tensor *t);
void starnn_tensor_prepare(starnn_tensor *t, int write);
void starnn_submit_shutdown(void);
/* Reads the device memory nodes' sizes (starnn_init, once StarPU runs). */
void starnn_submit_start(void);

#ifdef __cplusplus
}
#endif
#endif
