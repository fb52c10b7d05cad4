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

#include "runtime/tensor.h"

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
	const char *name;                /* optional: default "<op> <written tensor>" */
	int priority;                    /* STARPU_MIN_PRIO .. STARPU_MAX_PRIO, 0 default */
};

int starnn_submit(const struct starnn_task_desc *desc);

/* Waits for every submitted task; returns the first error a task raised. */
int starnn_wait(void);

void starnn_set_placement(int memory_node);
int starnn_get_placement(void);
/* Number of memory nodes that have compute workers, and their ids. */
int starnn_memory_nodes(int *nodes, int max);

/* Restricts the tasks submitted afterwards (by this thread) to one kind of
 * worker: STARPU_CPU or STARPU_CUDA; 0 lifts the restriction. Tests use it
 * to run a codelet's CPU and CUDA implementations in turn. */
void starnn_set_where(uint32_t where);

typedef int (*starnn_edge_fn)(void *ctx, starnn_tensor *t, int from_node, int to_node,
                              starnn_tensor **replacement);
void starnn_set_edge_hook(starnn_edge_fn fn, void *ctx);

/* Interned copy of a string that lives until starnn_shutdown(): task names
 * must outlive their tasks. */
const char *starnn_intern(const char *s);

/* Internal to the runtime: make t's own handle hold its data (gathers parts,
 * partitions ancestors), asynchronously. make_whole drops every plan of t;
 * prepare keeps t's read-only plans when the access only reads t, and
 * partitions ancestors read-only for reads (so readers of a whole and of
 * its parts do not wait for each other). */
void starnn_tensor_make_whole(starnn_tensor *t);
void starnn_tensor_prepare(starnn_tensor *t, int write);
void starnn_submit_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif
