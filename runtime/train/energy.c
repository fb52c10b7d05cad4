/* Energy meters: RAPL (powercap sysfs, sampled), perf's power PMU, NVML,
 * and an optional power model over StarPU's worker profiling. See
 * runtime/train/energy.h for what each figure means. */
#include <config.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>

#include "runtime/core/launch.h"
#include "runtime/train/dist.h"
#include "runtime/train/energy.h"
#include "runtime/base/error.h"

#define MAX_ZONES 32   /* RAPL zones summed (packages and their dram) */
#define MAX_PERF 32    /* perf counters (packages x {pkg, ram}) */
#define MAX_GPUS 16
/* The sampler's bound on the power of one zone, to choose a period at
 * which no counter can wrap twice between two samples. */
#define MAX_ZONE_WATTS 500.0

struct rapl_zone {
	char path[PATH_MAX]; /* .../energy_uj */
	char name[24];       /* package-N or dram-N */
	uint64_t modulus;    /* max_energy_range_uj + 1 */
	uint64_t last;       /* last value read */
	uint64_t total_uj;   /* accumulated since start */
};

struct perf_counter {
	int fd;
	char name[24];
	double scale; /* joules per count */
	uint64_t start;
};

/* NVML, declared here (no header, no link: dlopen). */
typedef int nvml_return;
typedef void *nvml_device;
struct nvml_api {
	void *lib;
	nvml_return (*init)(void);
	nvml_return (*shutdown)(void);
	nvml_return (*count)(unsigned *);
	nvml_return (*handle)(unsigned, nvml_device *);
	nvml_return (*energy)(nvml_device, unsigned long long *); /* mJ since the driver loaded */
	const char *(*error_string)(nvml_return);
};

struct starnn_energy_meter {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t sampler;
	int sampler_running, stopping;
	long period_ms;
	int passive; /* not local rank 0: same discovery, reports 0 J */
	struct timespec t0;

	int nzones;
	struct rapl_zone zone[MAX_ZONES];
	char rapl_error[256]; /* a read failure after start ("" if none) */
	int rapl_ok, perf_ok, nvml_ok;
	char rapl_reason[256], perf_reason[256], nvml_reason[256];

	int nperf;
	struct perf_counter perf[MAX_PERF];

	struct nvml_api nvml;
	int ngpus;
	nvml_device gpu[MAX_GPUS];
	unsigned long long gpu_start[MAX_GPUS];
	unsigned gpu_index[MAX_GPUS];

	/* power model */
	int model, profiling_before;
	double cpu_watts, gpu_watts, idle_watts;
	double cpu_busy, gpu_busy;
};

void starnn_energy_opts_init(struct starnn_energy_opts *o)
{
	memset(o, 0, sizeof *o);
	o->methods = STARNN_ENERGY_ALL;
}

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void set_reason(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_reason(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* Reads a small sysfs file into buf (NUL-terminated, trailing newline
 * removed). Returns 0, or -errno. */
static int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int err = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static const char *errno_text(int err)
{
	return err == EACCES || err == EPERM ? "permission denied" : strerror(err);
}

/* A decimal counter file. Returns 0, or -1 with the reason in why. */
static int read_counter(const char *path, uint64_t *v, char *why, size_t whysize)
{
	char buf[64];
	int rc = read_text(path, buf, sizeof buf);
	if (rc < 0) {
		set_reason(why, whysize, "%s: %s", path, errno_text(-rc));
		return -1;
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 10);
	if (errno || end == buf || *end || buf[0] == '-') {
		set_reason(why, whysize, "%s: not a counter ('%.20s')", path, buf);
		return -1;
	}
	*v = x;
	return 0;
}

/* ------------------------------------------------------------------ RAPL */

/* "intel-rapl:N" (a package-level zone), N in *n. */
static int top_zone(const char *name, unsigned *n)
{
	char tail;
	return sscanf(name, "intel-rapl:%u%c", n, &tail) == 1;
}

/* dir + "/" + name into buf; -1 (with the reason in m) when too long. */
static int join(starnn_energy_meter *m, char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size) {
		set_reason(m->rapl_reason, sizeof m->rapl_reason, "%.200s/%s: path too long", dir, name);
		return -1;
	}
	return 0;
}

/* Adds the zone in dir (a package or its dram subzone) as name. */
static int rapl_add(starnn_energy_meter *m, const char *dir, const char *name)
{
	if (m->nzones == MAX_ZONES) {
		set_reason(m->rapl_reason, sizeof m->rapl_reason, "more than %d RAPL zones", MAX_ZONES);
		return -1;
	}
	struct rapl_zone *z = &m->zone[m->nzones];
	char path[PATH_MAX];
	uint64_t range;
	if (join(m, path, sizeof path, dir, "max_energy_range_uj") < 0)
		return -1;
	if (read_counter(path, &range, m->rapl_reason, sizeof m->rapl_reason) < 0)
		return -1;
	if (range == 0 || range == UINT64_MAX) {
		set_reason(m->rapl_reason, sizeof m->rapl_reason, "%s: range %" PRIu64 " unusable", path, range);
		return -1;
	}
	if (join(m, z->path, sizeof z->path, dir, "energy_uj") < 0)
		return -1;
	if (read_counter(z->path, &z->last, m->rapl_reason, sizeof m->rapl_reason) < 0)
		return -1;
	snprintf(z->name, sizeof z->name, "%s", name);
	z->modulus = range + 1;
	z->total_uj = 0;
	m->nzones++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Finds the package zones of root and their dram subzones. 0 with
 * m->rapl_ok set, or -1 with m->rapl_reason. */
static int rapl_discover(starnn_energy_meter *m, const char *root)
{
	DIR *d = opendir(root);
	if (!d) {
		if (errno == ENOENT)
			set_reason(m->rapl_reason, sizeof m->rapl_reason, "%s is absent", root);
		else
			set_reason(m->rapl_reason, sizeof m->rapl_reason, "%s: %s", root, errno_text(errno));
		return -1;
	}
	/* Package zones in their number order (intel-rapl:0, :1, ...); the
	 * subzones are found inside each. intel-rapl-mmio:N duplicates the
	 * package counter on some CPUs: not counted. */
	char *names[MAX_ZONES];
	int nnames = 0;
	struct dirent *e;
	unsigned n;
	while ((e = readdir(d)) && nnames < MAX_ZONES)
		if (top_zone(e->d_name, &n) && (names[nnames] = strdup(e->d_name)))
			nnames++;
	closedir(d);
	qsort(names, (size_t)nnames, sizeof *names, by_name);
	int rc = 0, packages = 0;
	for (int i = 0; i < nnames && rc == 0; i++) {
		char dir[PATH_MAX], path[PATH_MAX], zname[64];
		if (join(m, dir, sizeof dir, root, names[i]) < 0 || join(m, path, sizeof path, dir, "name") < 0) {
			rc = -1;
			break;
		}
		int r = read_text(path, zname, sizeof zname);
		if (r < 0) {
			set_reason(m->rapl_reason, sizeof m->rapl_reason, "%s: %s", path, errno_text(-r));
			rc = -1;
			break;
		}
		unsigned pkg;
		char tail;
		if (sscanf(zname, "package-%u%c", &pkg, &tail) != 1)
			continue; /* psys: the platform, packages included */
		rc = rapl_add(m, dir, zname);
		packages++;
		/* subzones intel-rapl:N:M: dram is counted, core / uncore are
		 * inside the package */
		DIR *sd = rc == 0 ? opendir(dir) : NULL;
		while (sd && rc == 0 && (e = readdir(sd))) {
			size_t len = strlen(names[i]);
			if (strncmp(e->d_name, names[i], len) || e->d_name[len] != ':')
				continue;
			char sub[PATH_MAX], sname[64];
			if (join(m, sub, sizeof sub, dir, e->d_name) < 0 || join(m, path, sizeof path, sub, "name") < 0) {
				rc = -1;
				break;
			}
			r = read_text(path, sname, sizeof sname);
			if (r < 0) {
				set_reason(m->rapl_reason, sizeof m->rapl_reason, "%s: %s", path, errno_text(-r));
				rc = -1;
			} else if (strcmp(sname, "dram") == 0) {
				char dname[24];
				snprintf(dname, sizeof dname, "dram-%u", pkg);
				rc = rapl_add(m, sub, dname);
			}
		}
		if (sd)
			closedir(sd);
	}
	for (int i = 0; i < nnames; i++)
		free(names[i]);
	if (rc == 0 && packages == 0) {
		set_reason(m->rapl_reason, sizeof m->rapl_reason, "%s has no intel-rapl package zone", root);
		rc = -1;
	}
	if (rc < 0)
		m->nzones = 0;
	m->rapl_ok = rc == 0;
	return rc;
}

/* One reading of every zone; called with the lock held. */
static void rapl_sample(starnn_energy_meter *m)
{
	if (m->rapl_error[0])
		return;
	for (int i = 0; i < m->nzones; i++) {
		struct rapl_zone *z = &m->zone[i];
		uint64_t v;
		if (read_counter(z->path, &v, m->rapl_error, sizeof m->rapl_error) < 0)
			return;
		if (v >= z->modulus) {
			set_reason(m->rapl_error, sizeof m->rapl_error, "%s: %" PRIu64 " beyond max_energy_range_uj %" PRIu64,
			           z->path, v, z->modulus - 1);
			return;
		}
		z->total_uj += v >= z->last ? v - z->last : z->modulus - z->last + v;
		z->last = v;
	}
}

/* Every counter starts from now: discovery (NVML's start-up above all)
 * takes a while, and the window is what follows. */
static void baseline(starnn_energy_meter *m)
{
	rapl_sample(m);
	for (int i = 0; i < m->nzones; i++)
		m->zone[i].total_uj = 0;
	for (int i = 0; i < m->nperf; i++)
		if (read(m->perf[i].fd, &m->perf[i].start, sizeof m->perf[i].start) != (ssize_t)sizeof m->perf[i].start)
			m->perf[i].start = 0; /* reported by the next reading, which fails alike */
	for (int i = 0; i < m->ngpus; i++) {
		unsigned long long mj;
		if (m->nvml.energy(m->gpu[i], &mj) == 0)
			m->gpu_start[i] = mj;
	}
}

static void *sampler_main(void *arg)
{
	starnn_energy_meter *m = arg;
	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += m->period_ms / 1000;
		t.tv_nsec += (m->period_ms % 1000) * 1000000L;
		if (t.tv_nsec >= 1000000000L)
			t.tv_sec++, t.tv_nsec -= 1000000000L;
		while (!m->stopping && pthread_cond_timedwait(&m->wake, &m->lock, &t) != ETIMEDOUT)
			;
		if (!m->stopping)
			rapl_sample(m);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ------------------------------------------------------------------ perf */

static long perf_open(struct perf_event_attr *a, int cpu)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, -1, 0UL);
}

/* One event of the power PMU (energy-pkg or energy-ram) on each CPU of
 * the cpumask. Returns 1 if the event exists and opened, 0 if the PMU
 * lacks it, -1 with m->perf_reason. */
static int perf_event(starnn_energy_meter *m, const char *pmu, int type, const char *event, const char *prefix,
                      const int *cpus, int ncpus)
{
	char path[PATH_MAX], buf[128];
	snprintf(path, sizeof path, "%s/events/%s", pmu, event);
	if (read_text(path, buf, sizeof buf) < 0)
		return 0;
	unsigned long long config;
	if (sscanf(buf, "event=%llx", &config) != 1) {
		set_reason(m->perf_reason, sizeof m->perf_reason, "has %s = '%.40s', not event=0x..", path, buf);
		return -1;
	}
	snprintf(path, sizeof path, "%s/events/%s.scale", pmu, event);
	double scale = 0;
	if (read_text(path, buf, sizeof buf) < 0 || (scale = strtod(buf, NULL)) <= 0) {
		set_reason(m->perf_reason, sizeof m->perf_reason, "has no usable %s", path);
		return -1;
	}
	for (int i = 0; i < ncpus; i++) {
		if (m->nperf == MAX_PERF) {
			set_reason(m->perf_reason, sizeof m->perf_reason, "has more than %d counters", MAX_PERF);
			return -1;
		}
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = (unsigned)type;
		a.config = config;
		long fd = perf_open(&a, cpus[i]);
		if (fd < 0) {
			int err = errno;
			char par[16] = "?";
			read_text("/proc/sys/kernel/perf_event_paranoid", par, sizeof par);
			set_reason(m->perf_reason, sizeof m->perf_reason,
			           "cannot open power/%s on CPU %d: %s (perf_event_paranoid %s)", event, cpus[i],
			           strerror(err), par);
			return -1;
		}
		struct perf_counter *c = &m->perf[m->nperf++];
		c->fd = (int)fd;
		c->scale = scale;
		snprintf(c->name, sizeof c->name, "%s-%d", prefix, i);
		if (read(c->fd, &c->start, sizeof c->start) != (ssize_t)sizeof c->start) {
			set_reason(m->perf_reason, sizeof m->perf_reason, "cannot read power/%s on CPU %d: %s", event,
			           cpus[i], strerror(errno));
			return -1;
		}
	}
	return 1;
}

static void perf_close(starnn_energy_meter *m)
{
	for (int i = 0; i < m->nperf; i++)
		close(m->perf[i].fd);
	m->nperf = 0;
}

static int perf_discover(starnn_energy_meter *m)
{
	const char *pmu = "/sys/bus/event_source/devices/power";
	char path[PATH_MAX], buf[256];
	snprintf(path, sizeof path, "%s/type", pmu);
	if (read_text(path, buf, sizeof buf) < 0) {
		set_reason(m->perf_reason, sizeof m->perf_reason, "has no power PMU");
		return -1;
	}
	int type = atoi(buf);
	/* One CPU per package: the PMU's cpumask ("0,28" or "0-1"). */
	int cpus[MAX_PERF / 2], ncpus = 0;
	snprintf(path, sizeof path, "%s/cpumask", pmu);
	if (read_text(path, buf, sizeof buf) < 0) {
		cpus[ncpus++] = 0;
	} else {
		for (char *s = buf; *s && ncpus < MAX_PERF / 2;) {
			char *end;
			long a = strtol(s, &end, 10), b = a;
			if (end == s)
				break;
			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (long c = a; c <= b && ncpus < MAX_PERF / 2; c++)
				cpus[ncpus++] = (int)c;
			s = *end == ',' ? end + 1 : end;
			if (!*end)
				break;
		}
	}
	if (ncpus == 0) {
		set_reason(m->perf_reason, sizeof m->perf_reason, "power PMU has an empty cpumask");
		return -1;
	}
	int rc = perf_event(m, pmu, type, "energy-pkg", "package", cpus, ncpus);
	if (rc == 0)
		set_reason(m->perf_reason, sizeof m->perf_reason, "power PMU has no energy-pkg event");
	if (rc == 1 && perf_event(m, pmu, type, "energy-ram", "dram", cpus, ncpus) < 0)
		rc = -1;
	if (rc != 1) {
		perf_close(m);
		return -1;
	}
	m->perf_ok = 1;
	return 0;
}

/* ------------------------------------------------------------------ NVML */

static int nvml_discover(starnn_energy_meter *m)
{
	struct nvml_api *n = &m->nvml;
	/* STARNN_NVML_LIBRARY: another library of the same functions (tests) */
	const char *name = getenv("STARNN_NVML_LIBRARY");
	if (!name || !*name)
		name = "libnvidia-ml.so.1";
	n->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		set_reason(m->nvml_reason, sizeof m->nvml_reason, "%.200s not found", name);
		return -1;
	}
	*(void **)&n->init = dlsym(n->lib, "nvmlInit_v2");
	*(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
	*(void **)&n->count = dlsym(n->lib, "nvmlDeviceGetCount_v2");
	*(void **)&n->handle = dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&n->energy = dlsym(n->lib, "nvmlDeviceGetTotalEnergyConsumption");
	*(void **)&n->error_string = dlsym(n->lib, "nvmlErrorString");
	if (!n->init || !n->shutdown || !n->count || !n->handle || !n->energy || !n->error_string) {
		set_reason(m->nvml_reason, sizeof m->nvml_reason,
		           "%.200s lacks nvmlDeviceGetTotalEnergyConsumption or another function", name);
		dlclose(n->lib);
		n->lib = NULL;
		return -1;
	}
	nvml_return r = n->init();
	if (r != 0) {
		set_reason(m->nvml_reason, sizeof m->nvml_reason, "nvmlInit: %s", n->error_string(r));
		dlclose(n->lib);
		n->lib = NULL;
		return -1;
	}
	unsigned count = 0;
	r = n->count(&count);
	if (r != 0)
		set_reason(m->nvml_reason, sizeof m->nvml_reason, "nvmlDeviceGetCount: %s", n->error_string(r));
	else if (count == 0)
		set_reason(m->nvml_reason, sizeof m->nvml_reason, "no GPU");
	for (unsigned i = 0; r == 0 && i < count && m->ngpus < MAX_GPUS; i++) {
		nvml_device dev;
		unsigned long long mj;
		nvml_return e = n->handle(i, &dev);
		if (e == 0)
			e = n->energy(dev, &mj);
		if (e != 0) { /* e.g. not supported before Volta: that GPU is left out */
			set_reason(m->nvml_reason, sizeof m->nvml_reason, "GPU %u: %s", i, n->error_string(e));
			continue;
		}
		m->gpu[m->ngpus] = dev;
		m->gpu_start[m->ngpus] = mj;
		m->gpu_index[m->ngpus] = i;
		m->ngpus++;
	}
	if (m->ngpus == 0) {
		n->shutdown();
		dlclose(n->lib);
		n->lib = NULL;
		return -1;
	}
	m->nvml_ok = 1;
	return 0;
}

static void nvml_close(starnn_energy_meter *m)
{
	if (!m->nvml.lib)
		return;
	m->nvml.shutdown();
	dlclose(m->nvml.lib);
	m->nvml.lib = NULL;
}

/* ------------------------------------------------------------ power model */

/* Adds the execution time of every worker since the last call (StarPU
 * resets a worker's counters when they are read); lock held. */
static void model_sample(starnn_energy_meter *m)
{
	unsigned nw = starpu_worker_get_count();
	for (unsigned w = 0; w < nw; w++) {
		struct starpu_profiling_worker_info info;
		if (starpu_profiling_worker_get_info((int)w, &info) != 0)
			continue;
		double busy = (double)info.executing_time.tv_sec + 1e-9 * (double)info.executing_time.tv_nsec;
		enum starpu_worker_archtype t = starpu_worker_get_type((int)w);
		if (t == STARPU_CPU_WORKER)
			m->cpu_busy += busy;
		else if (t == STARPU_CUDA_WORKER)
			m->gpu_busy += busy;
	}
}

/* ------------------------------------------------------------------ meter */

static int parse_period(long *ms)
{
	const char *s = getenv("STARNN_ENERGY_PERIOD_MS");
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > 60000)
		return starnn_error(STARNN_EINVAL, "STARNN_ENERGY_PERIOD_MS='%s': expected milliseconds in 1..60000", s);
	*ms = v;
	return 0;
}

int starnn_energy_start(starnn_energy_meter **out, const struct starnn_energy_opts *user)
{
	struct starnn_energy_opts o;
	if (user)
		o = *user;
	else
		starnn_energy_opts_init(&o);
	*out = NULL;
	if (!(o.cpu_watts >= 0 && o.gpu_watts >= 0 && o.idle_watts >= 0) || !isfinite(o.cpu_watts + o.gpu_watts + o.idle_watts))
		return starnn_error(STARNN_EINVAL, "energy: power model watts must be finite and >= 0 (cpu %g, gpu %g, idle %g)",
		                    o.cpu_watts, o.gpu_watts, o.idle_watts);
	int model = o.cpu_watts > 0 || o.gpu_watts > 0 || o.idle_watts > 0;
	if (model && !starpu_is_initialized())
		return starnn_error(STARNN_ESTATE, "energy: the power model reads StarPU's worker profiling: call starnn_init first");
	long period_env = 0;
	STARNN_CHECK(parse_period(&period_env));

	starnn_energy_meter *m = calloc(1, sizeof *m);
	if (!m)
		return starnn_error(STARNN_ENOMEM, "energy: out of memory");
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	m->passive = starnn_launch_local_rank() != 0;

	const char *root = getenv("STARNN_POWERCAP_ROOT");
	if (!root || !*root)
		root = "/sys/class/powercap";
	if (o.methods & STARNN_ENERGY_RAPL)
		rapl_discover(m, root);
	if ((o.methods & STARNN_ENERGY_PERF) && !m->rapl_ok)
		perf_discover(m);
	if (o.methods & STARNN_ENERGY_NVML)
		nvml_discover(m);

	if (model) {
		m->model = 1;
		m->cpu_watts = o.cpu_watts, m->gpu_watts = o.gpu_watts, m->idle_watts = o.idle_watts;
		m->profiling_before = starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
		unsigned nw = starpu_worker_get_count();
		for (unsigned w = 0; w < nw; w++)
			starpu_profiling_worker_get_info((int)w, NULL); /* counts from now */
	}
	baseline(m); /* no thread runs yet */
	clock_gettime(CLOCK_MONOTONIC, &m->t0);
	if (m->rapl_ok && !m->passive) {
		/* Period: a zone at MAX_ZONE_WATTS covers half its range. */
		double range_s = INFINITY;
		for (int i = 0; i < m->nzones; i++) {
			double s = (double)(m->zone[i].modulus - 1) * 1e-6 / (2 * MAX_ZONE_WATTS);
			range_s = s < range_s ? s : range_s;
		}
		double p = range_s < 1.0 ? range_s : 1.0;
		m->period_ms = period_env ? period_env : p * 1000 < 1 ? 1 : (long)(p * 1000);
		if (pthread_create(&m->sampler, NULL, sampler_main, m) != 0) {
			starnn_energy_stop(m);
			return starnn_error(STARNN_EIO, "energy: cannot start the RAPL sampler thread");
		}
		m->sampler_running = 1;
	}
	*out = m;
	return 0;
}

static void add_domain(struct starnn_energy_reading *r, const char *name, double j)
{
	if (r->ndomains == STARNN_ENERGY_MAX_DOMAINS)
		return;
	snprintf(r->domain[r->ndomains].name, sizeof r->domain[0].name, "%s", name);
	r->domain[r->ndomains].joules = j;
	r->ndomains++;
}

static void append(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

int starnn_energy_read(starnn_energy_meter *m, struct starnn_energy_reading *r)
{
	if (!m || !r)
		return starnn_error(STARNN_EINVAL, "starnn_energy_read: NULL %s", m ? "reading" : "meter");
	memset(r, 0, sizeof *r);
	pthread_mutex_lock(&m->lock);
	r->elapsed = since(&m->t0);
	double scale = m->passive ? 0.0 : 1.0;
	int cpu = 0; /* a CPU method (rapl or perf) measured */
	char *why = r->reason;
	size_t wsize = sizeof r->reason;
	if (m->rapl_ok) {
		if (!m->passive)
			rapl_sample(m);
		if (m->rapl_error[0]) {
			set_reason(why, wsize, "no RAPL: %s", m->rapl_error);
		} else {
			cpu = 1;
			for (int i = 0; i < m->nzones; i++)
				add_domain(r, m->zone[i].name, scale * (double)m->zone[i].total_uj * 1e-6);
		}
	} else if (m->perf_ok) {
		for (int i = 0; i < m->nperf && !why[0]; i++) {
			uint64_t v;
			if (read(m->perf[i].fd, &v, sizeof v) != (ssize_t)sizeof v)
				set_reason(why, wsize, "no RAPL: %s; perf: cannot read %s: %s", m->rapl_reason, m->perf[i].name,
				           strerror(errno));
			else
				add_domain(r, m->perf[i].name, scale * (double)(v - m->perf[i].start) * m->perf[i].scale);
		}
		cpu = !why[0];
		if (!cpu)
			r->ndomains = 0;
	} else if (m->rapl_reason[0] || m->perf_reason[0]) {
		if (m->rapl_reason[0])
			set_reason(why, wsize, "no RAPL: %s%s%s", m->rapl_reason, m->perf_reason[0] ? ", and perf " : "",
			           m->perf_reason);
		else
			set_reason(why, wsize, "no perf energy: perf %s", m->perf_reason);
	}
	int gpu = 0;
	if (m->nvml_ok) {
		gpu = 1;
		for (int i = 0; i < m->ngpus; i++) {
			unsigned long long mj;
			nvml_return e = m->nvml.energy(m->gpu[i], &mj);
			if (e != 0) {
				append(why, wsize, "%sno NVML: GPU %u: %s", why[0] ? "; " : "", m->gpu_index[i],
				       m->nvml.error_string(e));
				gpu = 0;
				break;
			}
			char name[24];
			snprintf(name, sizeof name, "gpu-%u", m->gpu_index[i]);
			add_domain(r, name, scale * (double)(mj - m->gpu_start[i]) * 1e-3);
		}
		if (!gpu) /* drop the GPU domains read before the failure */
			while (r->ndomains > 0 && strncmp(r->domain[r->ndomains - 1].name, "gpu-", 4) == 0)
				r->ndomains--;
		else if (m->nvml_reason[0]) /* a GPU that cannot tell its energy */
			append(why, wsize, "%sNVML: %s (left out)", why[0] ? "; " : "", m->nvml_reason);
	} else if (m->nvml_reason[0]) {
		append(why, wsize, "%sno NVML: %s", why[0] ? "; " : "", m->nvml_reason);
	}
	r->available = cpu || gpu;
	if (r->available) {
		snprintf(r->method, sizeof r->method, "%s%s%s", cpu ? (m->rapl_ok ? "rapl" : "perf") : "",
		         cpu && gpu ? "+" : "", gpu ? "nvml" : "");
		r->joules = 0;
		for (int i = 0; i < r->ndomains; i++)
			r->joules += r->domain[i].joules;
	} else {
		snprintf(r->method, sizeof r->method, "not available");
		r->joules = NAN;
		r->ndomains = 0;
		if (!why[0])
			set_reason(why, wsize, "no method asked");
	}
	if (m->model) {
		model_sample(m);
		r->estimated = 1;
		r->cpu_busy_s = m->cpu_busy, r->gpu_busy_s = m->gpu_busy;
		r->cpu_watts = m->cpu_watts, r->gpu_watts = m->gpu_watts, r->idle_watts = m->idle_watts;
		/* the machine's idle power once per node */
		r->estimated_joules = m->cpu_watts * m->cpu_busy + m->gpu_watts * m->gpu_busy +
		                      (m->passive ? 0.0 : m->idle_watts * r->elapsed);
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int starnn_energy_read_all(starnn_energy_meter *m, struct starnn_energy_reading *r)
{
	STARNN_CHECK(starnn_energy_read(m, r));
	if (!starnn_launch_mpi())
		return 0;
	/* Same length and order on every rank: fixed slots. */
	enum { MEASURING, MEASURED, JOULES, EST, CPU_BUSY, GPU_BUSY, DOMAINS, N = DOMAINS + STARNN_ENERGY_MAX_DOMAINS };
	double v[N] = {0};
	v[MEASURING] = !m->passive;
	v[MEASURED] = !m->passive && r->available;
	v[JOULES] = r->available ? r->joules : 0;
	v[EST] = r->estimated_joules, v[CPU_BUSY] = r->cpu_busy_s, v[GPU_BUSY] = r->gpu_busy_s;
	for (int i = 0; i < r->ndomains; i++)
		v[DOMAINS + i] = r->domain[i].joules;
	STARNN_CHECK(starnn_dist_sum_doubles(v, N));
	r->estimated_joules = v[EST], r->cpu_busy_s = v[CPU_BUSY], r->gpu_busy_s = v[GPU_BUSY];
	if (r->available && v[MEASURED] == v[MEASURING]) {
		r->joules = v[JOULES];
		for (int i = 0; i < r->ndomains; i++)
			r->domain[i].joules = v[DOMAINS + i];
	} else if (r->available) {
		set_reason(r->reason, sizeof r->reason, "measured on %.0f of the %.0f nodes", v[MEASURED], v[MEASURING]);
		snprintf(r->method, sizeof r->method, "not available");
		r->available = 0;
		r->joules = NAN;
		r->ndomains = 0;
	}
	return 0;
}

void starnn_energy_stop(starnn_energy_meter *m)
{
	if (!m)
		return;
	if (m->sampler_running) {
		pthread_mutex_lock(&m->lock);
		m->stopping = 1;
		pthread_cond_signal(&m->wake);
		pthread_mutex_unlock(&m->lock);
		pthread_join(m->sampler, NULL);
	}
	if (m->model && starpu_is_initialized())
		starpu_profiling_status_set(m->profiling_before);
	perf_close(m);
	nvml_close(m);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* ---------------------------------------------------------------- reports */

/* ")", the joules per epoch and per sample where there are some, the end of the line. */
static void per_unit(FILE *f, double joules, double epochs, double samples)
{
	fprintf(f, ")");
	if (epochs > 0)
		fprintf(f, ", %.1f J per epoch", joules / epochs);
	if (samples > 0)
		fprintf(f, ", %.4g J per sample", joules / samples);
	fprintf(f, "\n");
}

void starnn_energy_print(FILE *f, const struct starnn_energy_reading *r, double epochs, double samples)
{
	if (!r->available) {
		fprintf(f, "energy: not available (%s)\n", r->reason);
	} else {
		fprintf(f, "energy: %.1f J (%s:", r->joules, r->method);
		for (int i = 0; i < r->ndomains; i++)
			fprintf(f, "%s %s %.1f J", i ? "," : "", r->domain[i].name, r->domain[i].joules);
		per_unit(f, r->joules, epochs, samples);
	}
	if (r->estimated) {
		/* the terms of the model that were given */
		fprintf(f, "energy estimated: %.1f J (power model, not measured:", r->estimated_joules);
		const char *sep = " ";
		if (r->cpu_watts > 0)
			fprintf(f, "%s%.2f s busy CPU workers x %g W", sep, r->cpu_busy_s, r->cpu_watts), sep = ", ";
		if (r->gpu_watts > 0)
			fprintf(f, "%s%.2f s busy GPU workers x %g W", sep, r->gpu_busy_s, r->gpu_watts), sep = ", ";
		if (r->idle_watts > 0)
			fprintf(f, "%s%.2f s x %g W idle", sep, r->elapsed, r->idle_watts);
		per_unit(f, r->estimated_joules, epochs, samples);
	}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_number(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%.10g", x);
	else
		fputs("null", f);
}

/* "joules":J,"joules_per_epoch":..,"joules_per_sample":.. (null where not
 * defined), for the measured figures and the estimated ones alike. */
static void json_joules(FILE *f, double j, double epochs, int64_t samples)
{
	fputs("\"joules\":", f);
	json_number(f, j);
	fputs(",\"joules_per_epoch\":", f);
	json_number(f, epochs > 0 ? j / epochs : NAN);
	fputs(",\"joules_per_sample\":", f);
	json_number(f, samples > 0 ? j / (double)samples : NAN);
}

int starnn_energy_summary_json(FILE *f, int64_t steps, double epochs, int64_t samples,
                               const struct starnn_energy_reading *r)
{
	double el = r->elapsed;
	fprintf(f, "{\"summary\":{\"steps\":%" PRId64 ",\"epochs\":", steps);
	json_number(f, epochs);
	fprintf(f, ",\"samples\":%" PRId64 ",\"elapsed\":", samples);
	json_number(f, el);
	fputs(",\"samples_per_s\":", f);
	json_number(f, el > 0 ? (double)samples / el : NAN);
	fputs(",\"energy\":{\"method\":", f);
	json_string(f, r->method);
	if (!r->available) {
		fputs(",\"reason\":", f);
		json_string(f, r->reason);
	}
	fputc(',', f);
	json_joules(f, r->available ? r->joules : NAN, epochs, samples);
	fputs(",\"domains\":{", f);
	for (int i = 0; r->available && i < r->ndomains; i++) {
		fputs(i ? "," : "", f);
		json_string(f, r->domain[i].name);
		fputc(':', f);
		json_number(f, r->domain[i].joules);
	}
	fputs("},\"estimated\":", f);
	if (r->estimated) {
		fputc('{', f);
		json_joules(f, r->estimated_joules, epochs, samples);
		fputs(",\"cpu_busy_s\":", f);
		json_number(f, r->cpu_busy_s);
		fputs(",\"gpu_busy_s\":", f);
		json_number(f, r->gpu_busy_s);
		fputs(",\"cpu_watts\":", f);
		json_number(f, r->cpu_watts);
		fputs(",\"gpu_watts\":", f);
		json_number(f, r->gpu_watts);
		fputs(",\"idle_watts\":", f);
		json_number(f, r->idle_watts);
		fputs("}", f);
	} else {
		fputs("null", f);
	}
	fputs("}}}\n", f);
	if (fflush(f) != 0 || ferror(f))
		return starnn_error(STARNN_EIO, "energy: cannot write the summary record: %s", strerror(errno));
	return 0;
}
