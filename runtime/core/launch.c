/* The process's launch under mpirun (see launch.h): launcher detection,
 * local ranks, core binding, MPI and StarPU-MPI start and stop, the
 * configuration check, abort. Without StarPU-MPI the same functions exist
 * and behave as one rank. */
#include <config.h>

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>
#ifdef STARNN_USE_MPI
#include <mpi.h>
#include <starpu_mpi.h>
#endif

#include "runtime/base/error.h"
#include "runtime/core/launch.h"
#include "runtime/core/tensor.h"

static int rank, size = 1, local_rank, local_size = 1, mpi_on;
static char line[256];
static void (*stop_hook)(void);

int starnn_launch_rank(void) { return rank; }
int starnn_launch_size(void) { return size; }
int starnn_launch_local_rank(void) { return local_rank; }
int starnn_launch_local_size(void) { return local_size; }
int starnn_launch_mpi(void) { return mpi_on; }
const char *starnn_launch_summary(void) { return line; }
void starnn_launch_set_stop_hook(void (*fn)(void)) { stop_hook = fn; }

uint64_t starnn_launch_hash_args(int argc, char **argv)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 1; i < argc; i++) {
		for (const unsigned char *c = (const unsigned char *)argv[i]; *c; c++)
			h = (h ^ *c) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull; /* argument separator */
	}
	return h;
}

#ifdef STARNN_USE_MPI

static int mpi_inited_here;

/* Launched by mpirun (Open MPI, MPICH/Hydra, PMIx launchers) with more
 * than one rank? */
static int launcher_size(void)
{
	const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

/* "0-3" or "0,2,5" of a CPU set, into buf. */
static void cpus_text(const int *cpus, int n, char *buf, size_t bufsize)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && off < bufsize; i++) {
		int j = i;
		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		int w = j > i ? snprintf(buf + off, bufsize - off, "%s%d-%d", off ? "," : "", cpus[i], cpus[j])
		              : snprintf(buf + off, bufsize - off, "%s%d", off ? "," : "", cpus[i]);
		if (w < 0)
			break;
		off += (size_t)w;
		i = j;
	}
}

/* Gives the ranks of this node disjoint cores through StarPU's variables,
 * unless the user or the launcher already decided; says what in where. */
static void bind_cores(char *where, size_t wsize)
{
	const char *user[] = {"STARPU_WORKERS_CPUID", "STARPU_WORKERS_COREID", "STARPU_WORKERS_NOBIND"};
	for (size_t i = 0; i < sizeof user / sizeof *user; i++)
		if (getenv(user[i])) {
			snprintf(where, wsize, "cores as %s=%s says", user[i], getenv(user[i]));
			return;
		}
	cpu_set_t set;
	int allowed[CPU_SETSIZE], nallowed = 0;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				allowed[nallowed++] = c;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	char text[128];
	if (nallowed > 0 && nallowed < online) {
		/* The launcher bound this process (e.g. mpirun --bind-to core):
		 * StarPU sees only these cores. */
		cpus_text(allowed, nallowed, text, sizeof text);
		snprintf(where, wsize, "cores %s (the launcher's binding)", text);
		return;
	}
	int n = online > 0 ? (int)online : 1, per = n / local_size, first;
	if (per >= 1) {
		first = local_rank * per;
	} else { /* more ranks than cores: they share, one core each */
		per = 1;
		first = local_rank % n;
	}
	char list[CPU_SETSIZE * 5];
	size_t off = 0;
	int ids[CPU_SETSIZE];
	for (int i = 0; i < per && off < sizeof list; i++) {
		ids[i] = first + i;
		off += (size_t)snprintf(list + off, sizeof list - off, "%s%d", i ? " " : "", first + i);
	}
	setenv("STARPU_WORKERS_CPUID", list, 1);
	char ncpu[16];
	snprintf(ncpu, sizeof ncpu, "%d", per);
	setenv("STARPU_NCPU", ncpu, 0); /* the user's STARPU_NCPU wins */
	cpus_text(ids, per, text, sizeof text);
	snprintf(where, wsize, "cores %s%s", text, per * local_size > n ? " (shared: more ranks than cores)" : "");
}

int starnn_launch_setup(uint64_t config_hash, int *mpi)
{
	*mpi = 0;
	rank = 0, size = 1, local_rank = 0, local_size = 1, mpi_on = 0;
	line[0] = '\0';
	/* gradients in a kernel's blocked layout stay on one rank: they cross
	 * the wire as rows, which its formats compress (runtime/core/tensor.h) */
	starnn_tensor_allow_wlayouts(launcher_size() <= 1);
	if (launcher_size() <= 1)
		return 0;
	int inited = 0, provided = 0;
	MPI_Initialized(&inited);
	if (!inited) {
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
			return starnn_error(STARNN_ESTARPU, "dist: MPI_Init_thread failed");
		mpi_inited_here = 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm node;
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &local_rank);
	MPI_Comm_size(node, &local_size);
	MPI_Comm_free(&node);

	/* Same configuration on every rank: every rank sees every hash, so
	 * they all stop together with the same message. */
	uint64_t *hashes = malloc(sizeof *hashes * (size_t)size);
	if (!hashes) {
		starnn_launch_finish();
		return starnn_error(STARNN_ENOMEM, "dist: out of memory");
	}
	MPI_Allgather(&config_hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	int bad = -1;
	for (int r = 1; r < size && bad < 0; r++)
		if (hashes[r] != hashes[0])
			bad = r;
	if (bad >= 0) {
		unsigned long long h0 = (unsigned long long)hashes[0], hb = (unsigned long long)hashes[bad];
		free(hashes);
		starnn_launch_finish();
		return starnn_error(STARNN_EINVAL,
		                    "rank %d was started with other options than rank 0 (configuration hash %016llx vs "
		                    "%016llx): every rank must get the same command line",
		                    bad, hb, h0);
	}
	free(hashes);

	char where[200];
	bind_cores(where, sizeof where);
	/* The progression thread mostly waits: it shares the rank's cores
	 * rather than asking for a core of its own (StarPU-MPI would bind it
	 * onto a worker's core with a warning when none is left). */
	if (!getenv("STARPU_MPI_THREAD_CPUID") && !getenv("STARPU_MPI_THREAD_COREID"))
		setenv("STARPU_MPI_NOBIND", "1", 0);
	/* StarPU's CPU workers and its MPI progression thread both poll
	 * (Debian's StarPU has non-blocking drivers), so a rank with one
	 * worker keeps two threads busy on one core, and the exchange and the
	 * compute slow each other down (measured: 5x slower steps with 2 ranks
	 * x 1 worker on 2 cores). Unless the user chose otherwise, the
	 * progression thread drives the first CPU worker itself
	 * (STARPU_MPI_DRIVER_CALL_FREQUENCY): one polling thread per core,
	 * which runs a task, tests the requests, runs the next task. */
	const char *ncpu_env = getenv("STARPU_NCPU");
	if (!getenv("STARPU_MPI_DRIVER_CALL_FREQUENCY") && !(ncpu_env && atoi(ncpu_env) == 0)) {
		setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "1", 1);
		setenv("STARPU_MPI_DRIVER_TASK_FREQUENCY", "1", 0);
	}
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	snprintf(line, sizeof line, "rank %d/%d (local %d/%d on %s), %s", rank, size, local_rank, local_size, host,
	         where);
	*mpi = 1;
	return 0;
}

/* StarPU-MPI's progression thread sleeps when it has no receive pending
 * and nothing to send, and while it sleeps the worker it drives runs
 * nothing: each rank keeps one receive from itself posted for the whole
 * run (the sentinel), which its own send completes once all its tasks
 * have run (starnn_launch_stop). From itself, not from another rank: a
 * neighbour that finished first would stop this rank's worker. */
#define SENTINEL_TAG ((starpu_mpi_tag_t)1 << 51)
static starpu_data_handle_t sentinel_recv, sentinel_send;
static int sentinel_in, sentinel_out;

static int sentinel_post(void)
{
	starpu_variable_data_register(&sentinel_recv, STARPU_MAIN_RAM, (uintptr_t)&sentinel_in, sizeof sentinel_in);
	starpu_variable_data_register(&sentinel_send, STARPU_MAIN_RAM, (uintptr_t)&sentinel_out, sizeof sentinel_out);
	int rc = starpu_mpi_irecv_detached(sentinel_recv, rank, SENTINEL_TAG, MPI_COMM_WORLD, NULL, NULL);
	if (rc)
		return starnn_error(STARNN_ESTARPU, "dist: posting the progression sentinel failed (%d)", rc);
	return 0;
}

static void sentinel_release(void)
{
	if (!sentinel_recv)
		return;
	/* Every task has run: the driven worker is not needed any more. */
	starpu_mpi_isend_detached(sentinel_send, rank, SENTINEL_TAG, MPI_COMM_WORLD, NULL, NULL);
	starpu_data_unregister(sentinel_recv);
	starpu_data_unregister(sentinel_send);
	sentinel_recv = sentinel_send = NULL;
}

int starnn_launch_start(struct starpu_conf *conf)
{
	/* StarPU-MPI reserves a core for its progression thread unless the
	 * worker count is given: with STARPU_NCPU set (by the user or by
	 * bind_cores), that many workers, the thread sharing their cores. */
	const char *ncpu = getenv("STARPU_NCPU");
	if (ncpu && *ncpu)
		conf->ncpus = atoi(ncpu);
	int rc = starpu_mpi_init_conf(NULL, NULL, 0, MPI_COMM_WORLD, conf);
	if (rc != 0)
		return rc;
	mpi_on = 1;
	const char *freq = getenv("STARPU_MPI_DRIVER_CALL_FREQUENCY");
	if (freq && atoi(freq) > 0 && starpu_cpu_worker_get_count() > 0)
		return sentinel_post();
	return 0;
}

void starnn_launch_stop(void)
{
	if (!mpi_on)
		return;
	starpu_task_wait_for_all();
	sentinel_release();
	starpu_mpi_wait_for_all(MPI_COMM_WORLD);
	if (stop_hook)
		stop_hook();
	starpu_mpi_barrier(MPI_COMM_WORLD);
	starpu_mpi_shutdown();
	mpi_on = 0;
}

void starnn_launch_abort(int status)
{
	if (!mpi_on)
		return;
	fflush(stdout);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, status);
}

void starnn_launch_finish(void)
{
	if (mpi_inited_here) {
		MPI_Finalize();
		mpi_inited_here = 0;
	}
}

#else /* no StarPU-MPI: one rank */

int starnn_launch_setup(uint64_t config_hash, int *mpi)
{
	(void)config_hash;
	*mpi = 0;
	return 0;
}

int starnn_launch_start(struct starpu_conf *conf)
{
	(void)conf;
	return -ENODEV;
}

void starnn_launch_stop(void) {}
void starnn_launch_finish(void) {}
void starnn_launch_abort(int status) { (void)status; }

#endif
