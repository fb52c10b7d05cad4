/* The process's launch: one process, or one rank of several started by
 * mpirun (StarPU-MPI).
 *
 * starnn_init() starts MPI and StarPU-MPI when the program was launched
 * by mpirun with more than one rank (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
 * PMIX size > 1); otherwise nothing of this is used: rank 0 of 1. Before
 * StarPU starts, the ranks of one node get disjoint cores
 * (STARPU_WORKERS_CPUID and STARPU_NCPU per local rank) unless the user
 * set StarPU's binding variables (STARPU_WORKERS_CPUID,
 * STARPU_WORKERS_COREID, STARPU_WORKERS_NOBIND) or the launcher already
 * restricted the process to a subset of the cores; the start-up line of
 * each rank says which cores it has. The ranks compare a hash of their
 * configuration (starnn_config.config_hash) at start: a rank started with
 * other options is refused on every rank.
 *
 * This is the process level only: what the ranks exchange during training
 * (collectives, the sharded optimizer) is the training layer's
 * (runtime/train/dist.h). Without StarPU-MPI (configure --disable-mpi, or
 * a StarPU without it) the same functions exist and behave as one rank. */
#ifndef STARNN_LAUNCH_H
#define STARNN_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* After starnn_init(): this process's rank and the number of ranks (0 and
 * 1 without MPI), its rank among the ranks of its node and their number. */
int starnn_launch_rank(void);
int starnn_launch_size(void);
int starnn_launch_local_rank(void);
int starnn_launch_local_size(void);
/* 1 when starnn_init() started StarPU-MPI (more than one rank). */
int starnn_launch_mpi(void);
/* "rank 0/2 (local 0/2 on host), cores 0" or "" without MPI. */
const char *starnn_launch_summary(void);

/* A 64-bit FNV-1a hash of argv[1..argc), for starnn_config.config_hash. */
uint64_t starnn_launch_hash_args(int argc, char **argv);

/* After an error on this rank, under mpirun: ends every rank with
 * MPI_Abort(status) (the failed rank cannot take part in the collective
 * shutdown, and the others would wait for it); does nothing with one rank.
 * For programs, in place of their error exit; it does not return under
 * mpirun. */
void starnn_launch_abort(int status);

/* Called by starnn_shutdown() under StarPU-MPI once every task and every
 * request has completed, before StarPU-MPI stops: the training layer's
 * collectives free their buffers there (one hook; NULL: none). */
void starnn_launch_set_stop_hook(void (*fn)(void));

/* Internal to the runtime (runtime/core/init.c). setup runs before StarPU
 * starts: MPI, local ranks, binding variables, the configuration check;
 * *mpi is set to 1 when StarPU-MPI must be started (starpu_mpi_init_conf)
 * instead of starpu_init. start runs in place of starpu_init, stop before
 * StarPU stops (it stops StarPU-MPI and StarPU), finish after. */
struct starpu_conf;
int starnn_launch_setup(uint64_t config_hash, int *mpi);
int starnn_launch_start(struct starpu_conf *conf);
void starnn_launch_stop(void);
void starnn_launch_finish(void);

#ifdef __cplusplus
}
#endif
#endif
