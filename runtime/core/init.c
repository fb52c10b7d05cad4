#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "runtime/core/choice.h"
#include "runtime/core/codelet.h"
#include "runtime/core/init.h"
#include "runtime/core/launch.h"

#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
void openblas_set_num_threads(int);
#endif

static char summary[256];

static int split_streams = 1;

/* What starnn_transfers_read took from StarPU's counters since starnn_init
 * (reset there). */
static struct starnn_transfers transfers_taken;

void starnn_set_streams(int streams)
{
	split_streams = streams < 1 ? 1 : streams;
}

int starnn_split_width(void)
{
	int nw = (int)starpu_worker_get_count();
	int w = (nw + split_streams - 1) / split_streams;
	return w < 1 ? 1 : w;
}

int starnn_env_flag(const char *name, int *on)
{
	const char *v = getenv(name);
	*on = v && (!*v || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on"));
	if (v && !*on && strcmp(v, "0") && strcmp(v, "no") && strcmp(v, "off"))
		return starnn_error(STARNN_EINVAL, "%s is '%s': expected 1 (or yes, on) or 0 (or no, off)", name, v);
	return 0;
}

void starnn_config_init(struct starnn_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->ncpus = -1;
	cfg->ncuda = -1;
}

int starnn_init(const struct starnn_config *user_cfg)
{
	struct starnn_config cfg;
	struct starpu_conf conf;

	if (starpu_is_initialized())
		return starnn_error(STARNN_ESTATE, "starnn_init: already initialised");
	if (user_cfg)
		cfg = *user_cfg;
	else
		starnn_config_init(&cfg);
	split_streams = 1;
	memset(&transfers_taken, 0, sizeof transfers_taken);
	/* STARNN_QUIET: no start-up line (as cfg.quiet); STARNN_KEEP_BLAS_CORE
	 * (starnn_blas_autoselect, before) checked here, where an error can
	 * be returned */
	int quiet, keep;
	STARNN_CHECK(starnn_env_flag("STARNN_QUIET", &quiet));
	STARNN_CHECK(starnn_env_flag("STARNN_KEEP_BLAS_CORE", &keep));
	STARNN_CHECK(starnn_priorities_check());
	/* the operations' settings (STARNN_CPU_SIMD; the test hooks of the
	 * convolutions): read and checked once, here */
	STARNN_CHECK(starnn_settings_load());

	/* StarPU counts a measurement more than STARPU_HISTORY_MAX_ERROR percent
	 * (default 50) away from a history entry's mean as an error, and once
	 * errors outnumber samples it empties the entry: the model is
	 * uncalibrated again. Tasks of a few microseconds vary that much on a
	 * busy machine, and StarPU 1.3.10's modular-heteroprio-heft then stops
	 * scheduling altogether (a task without an estimate is never handed to
	 * a worker). A wider default keeps the entries; the user's setting wins. */
	setenv("STARPU_HISTORY_MAX_ERROR", "1000", 0);
	/* Under mpirun: MPI, local ranks and core binding before StarPU reads
	 * its variables. */
	int mpi = 0;
	STARNN_CHECK(starnn_launch_setup(cfg.config_hash, &mpi));
	starpu_conf_init(&conf);
	/* Environment variables keep precedence over these (StarPU's rule). */
	conf.ncpus = cfg.ncpus;
	conf.ncuda = cfg.ncuda;
	conf.nopencl = 0;
	conf.nmic = 0;
	conf.nmpi_ms = 0;
	if (cfg.sched)
		conf.sched_policy_name = cfg.sched;

#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	/* StarPU runs one task per core: a BLAS call must not spawn threads. */
	openblas_set_num_threads(1);
#endif
	/* Tensor storage (starpu_malloc) on 64-byte boundaries, a cache line:
	 * the kernels' 64-byte vector loads and stores then never straddle two
	 * lines (glibc's malloc gives 16). */
	starpu_malloc_set_align(STARNN_TENSOR_ALIGN);
	int rc = mpi ? starnn_launch_start(&conf) : starpu_init(&conf);
	if (rc)
		starnn_launch_finish();
	if (rc == -ENODEV)
		return starnn_error(STARNN_ENODEV, "starpu_init: no worker available (check STARPU_NCPU / STARPU_NCUDA)");
	if (rc)
		return starnn_error(STARNN_ESTARPU, "%s failed (%d)", mpi ? "starpu_mpi_init_conf" : "starpu_init", rc);
	/* OpenCL workers asked for (STARPU_NOPENCL) that StarPU could not
	 * start: StarPU warns (silenced by STARPU_SILENT) and runs without
	 * them; starnn refuses, as for any device asked for and absent. */
	rc = starnn_opencl_check_workers();
	if (rc < 0) {
		if (mpi)
			starnn_launch_stop();
		else
			starpu_shutdown();
		starnn_launch_finish();
		return rc;
	}
	starnn_submit_start();
#ifdef STARNN_USE_CUDA
	if (starpu_cuda_worker_get_count() > 0) {
		starpu_cublas_init();
		starnn_cudnn_init();
	}
#endif
	struct starpu_sched_policy *policy = starpu_sched_ctx_get_sched_policy(0);
	starnn_priorities_range(starpu_sched_get_min_priority(), starpu_sched_get_max_priority());
	/* StarPU 1.3.10's modular-heteroprio-heft never hands a task without an
	 * estimate (a footprint its history-based model has fewer than
	 * STARPU_CALIBRATE_MINIMUM measurements of) to a worker: the workers
	 * spin and the run stalls at the first such task. The StarPU that
	 * tools/build-starpu makes is patched (tools/dev/starpu-patches/0002) and
	 * says so in the policy's description. */
	if (policy && policy->policy_name && !strcmp(policy->policy_name, "modular-heteroprio-heft") &&
	    !(policy->policy_description && strstr(policy->policy_description, "schedules uncalibrated tasks")))
		fprintf(stderr, "starnn: warning: this StarPU's modular-heteroprio-heft never schedules a task whose "
		                "performance model is not calibrated for its size, and the run stalls there: calibrate "
		                "the models under dmda first (README: Calibrating the performance models), or use a "
		                "StarPU built by tools/build-starpu, which has the fix\n");
	const char *core = starnn_blas_core();
	/* (OpenCL workers named only where there are some: the line is the
	 * same as ever elsewhere) */
	char opencl[48] = "";
	if (starpu_opencl_worker_get_count() > 0)
		snprintf(opencl, sizeof opencl, ", %u OpenCL worker(s)", starpu_opencl_worker_get_count());
	snprintf(summary, sizeof summary, "StarPU %d.%d.%d, scheduler %s, %d CPU worker(s), %d CUDA worker(s)%s%s%s",
	         STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION, policy ? policy->policy_name : "?",
	         starpu_cpu_worker_get_count(), starpu_cuda_worker_get_count(), opencl, core ? ", OpenBLAS " : "",
	         core ? core : "");
	if (!cfg.quiet && !quiet) {
		if (starnn_launch_mpi())
			fprintf(stderr, "starnn: %s: %s\n", starnn_launch_summary(), summary);
		else
			fprintf(stderr, "starnn: %s\n", summary);
	}
	return 0;
}

int starnn_shutdown(void)
{
	if (!starpu_is_initialized())
		return starnn_error(STARNN_ESTATE, "starnn_shutdown: not initialised");
	starpu_task_wait_for_all();
	/* StarPU-MPI 1.3 stops StarPU itself when it started it. */
	int mpi = starnn_launch_mpi();
#ifdef STARNN_USE_CUDA
	if (starpu_cuda_worker_get_count() > 0) {
		starnn_cudnn_shutdown();
		starpu_cublas_shutdown();
	}
#endif
	starnn_opencl_shutdown();
	if (mpi)
		starnn_launch_stop();
	else
		starpu_shutdown();
	starnn_submit_shutdown();
	starnn_launch_finish();
	return starnn_take_deferred_error();
}

int starnn_ncpu_workers(void)
{
	return (int)starpu_cpu_worker_get_count();
}

int starnn_ncuda_workers(void)
{
	return (int)starpu_cuda_worker_get_count();
}

int starnn_nopencl_workers(void)
{
	return (int)starpu_opencl_worker_get_count();
}

int starnn_ndevice_workers(void)
{
	return (int)(starpu_cuda_worker_get_count() + starpu_opencl_worker_get_count());
}

void starnn_transfers_read(struct starnn_transfers *t)
{
	int nodes = (int)starpu_memory_nodes_get_count();
	transfers_taken.nodes = nodes < STARNN_MAX_MEMORY_NODES ? nodes : STARNN_MAX_MEMORY_NODES;
	int buses = starpu_bus_get_count();
	for (int b = 0; b < buses; b++) {
		int src = starpu_bus_get_src(b), dst = starpu_bus_get_dst(b);
		struct starpu_profiling_bus_info info;
		if (src < 0 || dst < 0 || src >= STARNN_MAX_MEMORY_NODES || dst >= STARNN_MAX_MEMORY_NODES ||
		    starpu_bus_get_profiling_info(b, &info) != 0)
			continue;
		transfers_taken.bytes[src][dst] += info.transferred_bytes;
		transfers_taken.count[src][dst] += info.transfer_count;
	}
	*t = transfers_taken;
}

void starnn_memory_node_name(int node, char *name, size_t size)
{
	if (starpu_memory_node_get_name((unsigned)node, name, size) < 0 && size)
		snprintf(name, size, "node %d", node);
}

const char *starnn_runtime_summary(void)
{
	return summary;
}
