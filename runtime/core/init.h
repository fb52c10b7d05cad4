/* Starting and stopping the runtime: StarPU (and StarPU-MPI under mpirun,
 * runtime/core/launch.h), the workers, BLAS threads, and how many tasks one
 * operation is cut into. */
#ifndef STARNN_CORE_INIT_H
#define STARNN_CORE_INIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct starnn_config {
	/* Defaults that STARPU_* environment variables override, as in StarPU:
	 * -1 means StarPU's own default. */
	int ncpus;            /* STARPU_NCPU */
	int ncuda;            /* STARPU_NCUDA */
	const char *sched;    /* STARPU_SCHED; NULL: StarPU's default (lws) */
	int quiet;            /* no "starnn: ..." worker summary on stderr (or
	                       * STARNN_QUIET=1 in the environment) */
	uint64_t config_hash; /* under mpirun: must be equal on every rank (e.g.
	                       * starnn_launch_hash_args of the command line) */
};

void starnn_config_init(struct starnn_config *cfg);

/* Starts StarPU (every STARPU_* variable applies), initialises cuBLAS on the
 * CUDA workers, keeps OpenBLAS single-threaded inside workers (each worker
 * is one core), and creates no OpenCL worker unless STARPU_NOPENCL asks
 * (an OpenCL worker takes a core to drive its device; StarPU counts CPU
 * devices such as POCL's only with STARPU_OPENCL_ON_CPUS=1).
 * Under mpirun with more than one rank, also MPI and StarPU-MPI, with
 * disjoint cores per rank of a node (runtime/core/launch.h). cfg may be NULL.
 * Returns STARNN_ENODEV when no worker could be started, or when
 * STARPU_NOPENCL asks for more OpenCL workers than StarPU could start (or
 * for any, in a build without OpenCL), with a message saying why. */
int starnn_init(const struct starnn_config *cfg);
/* Waits for all tasks and shuts StarPU down. Returns the first deferred
 * task error, if any. */
int starnn_shutdown(void);

/* A yes/no environment variable: *on = 1 when set to 1, yes, on or empty,
 * 0 when unset or 0, no, off; another value is STARNN_EINVAL with a
 * message naming the variable (STARNN_QUIET, STARNN_KEEP_BLAS_CORE). */
int starnn_env_flag(const char *name, int *on);

/* The OpenBLAS core in use ("SkylakeX", "Haswell", ...), NULL if the BLAS
 * is not OpenBLAS. */
const char *starnn_blas_core(void);
/* Call first thing in main(): when OpenBLAS fell back to its generic
 * "Prescott" kernels on a CPU with AVX-512 (OpenBLAS 0.3.21 does not know
 * recent Xeons), restarts the program with OPENBLAS_CORETYPE=SkylakeX.
 * Does nothing when OPENBLAS_CORETYPE is set or STARNN_KEEP_BLAS_CORE=1
 * (a value other than 1, yes, on, 0, no, off also keeps the core here,
 * and starnn_init refuses it). */
void starnn_blas_autoselect(char **argv);

/* Worker counts after starnn_init(). */
int starnn_ncpu_workers(void);
int starnn_ncuda_workers(void);
int starnn_nopencl_workers(void);
/* CUDA and OpenCL workers together: the workers with a memory node of
 * their own (a device), whose data StarPU moves to and from RAM. */
int starnn_ndevice_workers(void);

/* Bytes StarPU moved between memory nodes: its bus statistics, which count
 * every transfer of a data copy (StarPU 1.3 counts them whether or not its
 * profiling is on). [src][dst] by memory node; node 0 is RAM. */
#define STARNN_MAX_MEMORY_NODES 16
struct starnn_transfers {
	int nodes; /* memory nodes: StarPU's */
	long long bytes[STARNN_MAX_MEMORY_NODES][STARNN_MAX_MEMORY_NODES];
	long long count[STARNN_MAX_MEMORY_NODES][STARNN_MAX_MEMORY_NODES];
};
/* The totals since starnn_init into *t. StarPU 1.3 resets a bus's counters
 * when they are read (starpu_bus_get_profiling_info) and when its profiling
 * is turned on (starpu_profiling_status_set); starnn adds what each call
 * reads to its own totals, so calls see everything since the previous one,
 * but STARPU_BUS_STATS=1's table at exit shows only what moved after the
 * last call, and a profiling switch-on drops what moved since the last
 * call. Differences of two calls give what moved in between. */
void starnn_transfers_read(struct starnn_transfers *t);
/* A memory node's name as StarPU's tables give it ("NUMA 0", "OpenCL 0",
 * "CUDA 0"). */
void starnn_memory_node_name(int node, char *name, size_t size);

/* How many tasks one operation is cut into so that every worker has work.
 * A caller that submits S independent streams of operations side by side
 * (micro-batches of one step) says so with starnn_set_streams(S); each
 * operation is then cut into ceil(workers / S) parts instead of one per
 * worker, since the streams already keep the workers busy (fewer, larger
 * tasks: less scheduling, fewer partitions, better kernel efficiency).
 * starnn_set_streams(1) (the default) restores one part per worker. */
void starnn_set_streams(int streams);
int starnn_split_width(void);
/* One line describing the workers and the scheduler, e.g. for logs. */
const char *starnn_runtime_summary(void);

#ifdef __cplusplus
}
#endif
#endif
