/* Energy of a run, measured where the machine can measure it, and never
 * invented where it cannot: every figure carries the way it was obtained.
 *
 * Methods, tried in this order (starnn_energy_opts.methods restricts them):
 *   rapl  Linux powercap sysfs (/sys/class/powercap, or the directory in
 *         STARNN_POWERCAP_ROOT): the zones intel-rapl:N (name package-N)
 *         and their dram subzones. The files are read directly rather than
 *         through libpowercap: it is a few text files, no package is needed
 *         to build or run, and tests can point STARNN_POWERCAP_ROOT at a
 *         fixture tree in the same layout.
 *   perf  when powercap is not readable: perf_event_open of the `power`
 *         PMU (power/energy-pkg, power/energy-ram), system-wide on the one
 *         CPU per package that the PMU's cpumask names.
 *   nvml  GPUs, through libnvidia-ml.so.1 opened with dlopen (no build
 *         dependency): nvmlDeviceGetTotalEnergyConsumption per GPU
 *         (STARNN_NVML_LIBRARY names another library, for tests); a GPU
 *         that cannot tell its energy (before Volta) is left out.
 * What cannot be measured is "not available" with the reason, e.g. "no
 * RAPL: /sys/class/powercap is absent, and perf has no power PMU; no NVML:
 * libnvidia-ml.so.1 not found".
 *
 * Totals: package zones (package-N) plus their dram subzones (dram-N) plus
 * GPUs (gpu-N). The core, uncore and psys zones are not added: core and
 * uncore are parts of their package, psys contains the packages. The
 * domains of a reading therefore sum to its total.
 *
 * RAPL counters wrap at max_energy_range_uj (they count 0 ..
 * max_energy_range_uj, then start again from 0): a sampler thread reads
 * every zone each min(1 s, range / (2 x 500 W)) (STARNN_ENERGY_PERIOD_MS
 * overrides, for tests), so that no zone can wrap twice between two
 * readings, and accumulates 64-bit microjoules; a counter that went down
 * has wrapped once and advanced by (max_energy_range_uj + 1) - before +
 * after. The hardware's modulus is max_energy_range_uj plus one energy unit
 * (about 61 uJ, not visible in sysfs): at most that much error per wrap.
 * perf and NVML counters are 64-bit and need no sampler.
 *
 * Power model (optional, starnn_energy_opts cpu_watts, gpu_watts,
 * idle_watts): an estimate from StarPU's worker profiling, W per busy CPU
 * or CUDA worker times its task execution time, plus idle_watts for the
 * whole machine over the whole run. It is reported apart (estimated_*),
 * never added to measured joules. Asking for it turns StarPU's profiling
 * on for the meter's life (starpu_profiling_status_set); otherwise the
 * meter leaves profiling alone.
 *
 * Under mpirun: local rank 0 of each node measures the node; the other
 * ranks find the same method and domains but report 0 J (each rank still
 * estimates its own workers). starnn_energy_read_all sums over the ranks.
 *
 * Thread safety: one meter may be read from any thread; the sampler and
 * the readers share its state under a mutex. */
#ifndef STARNN_ENERGY_H
#define STARNN_ENERGY_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct starnn_energy_meter starnn_energy_meter;

enum starnn_energy_method {
	STARNN_ENERGY_RAPL = 1,
	STARNN_ENERGY_PERF = 2, /* tried only when RAPL is not readable */
	STARNN_ENERGY_NVML = 4,
	STARNN_ENERGY_ALL = 7,
};

struct starnn_energy_opts {
	unsigned methods;  /* STARNN_ENERGY_* bits (default ALL) */
	double cpu_watts;  /* power model: W per busy CPU worker (0: none) */
	double gpu_watts;  /* W per busy CUDA worker (0: none) */
	double idle_watts; /* W of the whole machine over the run (0: none) */
};

void starnn_energy_opts_init(struct starnn_energy_opts *o);

#define STARNN_ENERGY_MAX_DOMAINS 48

struct starnn_energy_domain {
	char name[24]; /* package-N, dram-N, gpu-N */
	double joules;
};

struct starnn_energy_reading {
	int available;      /* 1: joules is measured (by method) */
	char method[24];    /* "rapl", "perf", "nvml", "rapl+nvml", "perf+nvml" or "not available" */
	char reason[512];   /* what could not be measured and why ("" if all could) */
	double joules;      /* measured total since start; NAN when not available */
	int ndomains;
	struct starnn_energy_domain domain[STARNN_ENERGY_MAX_DOMAINS];
	double elapsed;     /* seconds since start (monotonic clock) */
	/* Power model: estimated = 1 when any of the watts was given. */
	int estimated;
	double estimated_joules;
	double cpu_busy_s, gpu_busy_s; /* worker execution time, all workers summed */
	double cpu_watts, gpu_watts, idle_watts;
};

/* Starts a meter: finds what can be measured (a method that is not
 * available is not an error: the readings say why) and starts the RAPL
 * sampler. The power model needs StarPU started (starnn_init). Errors:
 * STARNN_EINVAL (negative watts, bad STARNN_ENERGY_PERIOD_MS),
 * STARNN_ESTATE (power model without StarPU), STARNN_ENOMEM, STARNN_EIO
 * (no sampler thread). o may be NULL (defaults). */
int starnn_energy_start(starnn_energy_meter **out, const struct starnn_energy_opts *o);
/* This process's figures since start (local rank 0 of a node: the node's
 * energy; other local ranks: 0 J, same method). A counter that cannot be
 * read any more makes the reading "not available" with the reason. */
int starnn_energy_read(starnn_energy_meter *m, struct starnn_energy_reading *r);
/* starnn_energy_read summed over the MPI ranks (starnn_dist_sum_doubles):
 * collective, every rank calls it at the same point. Without MPI, the same
 * as starnn_energy_read. The elapsed time is this rank's; method and
 * domain names are this rank's (ranks of identical nodes agree); measured
 * joules are available only when every measuring rank had them. */
int starnn_energy_read_all(starnn_energy_meter *m, struct starnn_energy_reading *r);
/* Stops the sampler (joined), closes the counters, frees the meter.
 * NULL is allowed. */
void starnn_energy_stop(starnn_energy_meter *m);

/* The report lines of programs: "energy: 12.3 J (rapl: package-0 10.1 J,
 * dram-0 2.2 J), 6.15 J per epoch, 0.0120 J per sample" or "energy: not
 * available (REASON)", then with a power model "energy estimated: ..."
 * on its own line. epochs <= 0 or samples <= 0 leave out that ratio. */
void starnn_energy_print(FILE *f, const struct starnn_energy_reading *r, double epochs, double samples);
/* The last line of a --log-json file (and its newline):
 * {"summary":{"steps":S,"epochs":E,"samples":N,"elapsed":T,"samples_per_s":X,
 *  "energy":{"method":M,["reason":R,]"joules":J|null,"joules_per_epoch":J|null,
 *  "joules_per_sample":J|null,"domains":{NAME:J,...},"estimated":{...}|null}}}
 * elapsed is r->elapsed. Returns 0 or STARNN_EIO. */
int starnn_energy_summary_json(FILE *f, int64_t steps, double epochs, int64_t samples,
                               const struct starnn_energy_reading *r);

#ifdef __cplusplus
}
#endif
#endif
