/* Energy meters (runtime/train/energy.c):
 *  - RAPL on powercap fixture trees in the sysfs layout (STARNN_POWERCAP_ROOT):
 *    two packages, core and dram subzones, a psys zone, the top-level
 *    links to subzones; counters rewritten (temp + rename) with known
 *    increments that wrap at max_energy_range_uj many times, read after
 *    each write and left to the sampler alone: exact joules, core and psys
 *    not counted;
 *  - errors: a counter that is not a number, a directory in its place,
 *    permission denied (not as root: root reads anything), no powercap
 *    directory, a counter that breaks during the run: "not available"
 *    with the reason;
 *  - NVML through a stand-in library: joules per GPU, a GPU without energy
 *    left out, no driver, no library; RAPL and NVML together;
 *  - the real machine: no powercap here, so "not available" naming it; a
 *    machine with RAPL must give a positive number;
 *  - the power model over StarPU's worker profiling, and the report line
 *    and the JSON summary record. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>

#include "tests/testlib.h"

static char tmp[256];

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

static void write_file(const char *dir, const char *file, const char *text)
{
	char path[512], tpath[600];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	snprintf(tpath, sizeof tpath, "%s.tmp", path);
	FILE *f = fopen(tpath, "w");
	if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0 || rename(tpath, path) != 0) {
		fprintf(stderr, "FAIL: cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void write_u64(const char *dir, const char *file, unsigned long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", v);
	write_file(dir, file, buf);
}

struct zone {
	const char *dir, *name;
	unsigned long long max, value, total; /* total: what was added since the meter started */
};

/* A fixture root: intel-rapl:0 (package-0; subzones core, dram),
 * intel-rapl:1 (package-1), intel-rapl:2 (psys), the control-type
 * directory intel-rapl, and the top-level links to the subzones. */
static struct zone zones[] = {
	{"intel-rapl:0", "package-0", 999999, 123456, 0},
	{"intel-rapl:0/intel-rapl:0:0", "core", 999999, 5, 0},
	{"intel-rapl:0/intel-rapl:0:1", "dram", 499999, 499000, 0},
	{"intel-rapl:1", "package-1", 1999999, 0, 0},
	{"intel-rapl:2", "psys", 999999, 7, 0},
};
#define NZONES (int)(sizeof zones / sizeof *zones)
static const unsigned long long step_uj[NZONES] = {370000, 100000, 230000, 910000, 640000};

static void zone_dir(const char *root, int i, char *dir, size_t size)
{
	snprintf(dir, size, "%s/%s", root, zones[i].dir);
}

static void make_tree(const char *root)
{
	char dir[512];
	mkdir(root, 0755);
	snprintf(dir, sizeof dir, "%s/intel-rapl", root);
	mkdir(dir, 0755);
	for (int i = 0; i < NZONES; i++) {
		zone_dir(root, i, dir, sizeof dir);
		mkdir(dir, 0755);
		write_file(dir, "name", zones[i].name);
		write_u64(dir, "max_energy_range_uj", zones[i].max);
		write_u64(dir, "energy_uj", zones[i].value);
		zones[i].total = 0;
	}
	char link[512];
	snprintf(link, sizeof link, "%s/intel-rapl:0:0", root);
	if (symlink("intel-rapl:0/intel-rapl:0:0", link) != 0 && errno != EEXIST)
		fprintf(stderr, "note: no symlink %s: %s\n", link, strerror(errno));
	snprintf(link, sizeof link, "%s/intel-rapl:0:1", root);
	if (symlink("intel-rapl:0/intel-rapl:0:1", link) != 0 && errno != EEXIST)
		fprintf(stderr, "note: no symlink %s: %s\n", link, strerror(errno));
}

/* Every counter advances by its step, modulo max + 1. */
static void advance(const char *root, int scale)
{
	char dir[512];
	for (int i = 0; i < NZONES; i++) {
		struct zone *z = &zones[i];
		unsigned long long d = step_uj[i] * (unsigned long long)scale / 4;
		z->value = (z->value + d) % (z->max + 1);
		z->total += d;
		zone_dir(root, i, dir, sizeof dir);
		write_u64(dir, "energy_uj", z->value);
	}
}

static double domain(const struct starnn_energy_reading *r, const char *name)
{
	for (int i = 0; i < r->ndomains; i++)
		if (strcmp(r->domain[i].name, name) == 0)
			return r->domain[i].joules;
	return -1;
}

static void check_exact(const struct starnn_energy_reading *r, const char *what)
{
	TEST_ASSERT(r->available && strcmp(r->method, "rapl") == 0, "%s: method '%s' (%s)", what, r->method, r->reason);
	TEST_ASSERT(r->ndomains == 3, "%s: %d domains, expected package-0, dram-0, package-1", what, r->ndomains);
	double p0 = (double)zones[0].total * 1e-6, dram = (double)zones[2].total * 1e-6, p1 = (double)zones[3].total * 1e-6;
	TEST_ASSERT(fabs(domain(r, "package-0") - p0) < 1e-9, "%s: package-0 %.9f J, expected %.9f", what,
	            domain(r, "package-0"), p0);
	TEST_ASSERT(fabs(domain(r, "dram-0") - dram) < 1e-9, "%s: dram-0 %.9f J, expected %.9f", what,
	            domain(r, "dram-0"), dram);
	TEST_ASSERT(fabs(domain(r, "package-1") - p1) < 1e-9, "%s: package-1 %.9f J, expected %.9f", what,
	            domain(r, "package-1"), p1);
	TEST_ASSERT(fabs(r->joules - (p0 + dram + p1)) < 1e-9, "%s: total %.9f J, expected %.9f (core and psys not counted)",
	            what, r->joules, p0 + dram + p1);
}

static void rapl_fixture(void)
{
	char root[300];
	snprintf(root, sizeof root, "%s/powercap", tmp);
	make_tree(root);
	setenv("STARNN_POWERCAP_ROOT", root, 1);
	setenv("STARNN_ENERGY_PERIOD_MS", "2", 1);
	struct starnn_energy_opts o;
	starnn_energy_opts_init(&o);
	o.methods = STARNN_ENERGY_RAPL;

	/* 1. A reading after each write: every change seen; package-0 wraps
	 * about every 3 writes, dram-0 every 2. */
	starnn_energy_meter *m;
	struct starnn_energy_reading r;
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(r.available && r.joules == 0, "fresh meter: %g J (%s)", r.joules, r.reason);
	for (int k = 0; k < 25; k++) {
		advance(root, 4);
		TEST_OK(starnn_energy_read(m, &r));
	}
	check_exact(&r, "read after each write");
	printf("fixture, read after each write: %.6f J (package-0 %.6f, dram-0 %.6f, package-1 %.6f), %d wraps of "
	       "package-0\n",
	       r.joules, domain(&r, "package-0"), domain(&r, "dram-0"), domain(&r, "package-1"),
	       (int)((zones[0].total + 123456) / 1000000));
	starnn_energy_stop(m);

	/* 2. The sampler alone: 12 writes 30 ms apart (period 2 ms), each
	 * 3/4 of a step; then one reading. */
	make_tree(root);
	TEST_OK(starnn_energy_start(&m, &o));
	for (int k = 0; k < 12; k++) {
		advance(root, 3);
		sleep_ms(30);
	}
	TEST_OK(starnn_energy_read(m, &r));
	check_exact(&r, "sampler alone");
	printf("fixture, sampler alone: %.6f J\n", r.joules);

	/* 3. A counter that breaks during the run. */
	char dir[512];
	zone_dir(root, 3, dir, sizeof dir);
	write_file(dir, "energy_uj", "garbage");
	sleep_ms(10);
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(!r.available && strcmp(r.method, "not available") == 0 && strstr(r.reason, "intel-rapl:1/energy_uj") &&
	                    strstr(r.reason, "not a counter") && isnan(r.joules),
	            "broken counter during the run: %s (%s)", r.method, r.reason);
	printf("counter broken during the run: %s (%s)\n", r.method, r.reason);
	starnn_energy_stop(m);

	/* 4. Not a number at start. */
	make_tree(root);
	write_file(dir, "energy_uj", "12x");
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(!r.available && strstr(r.reason, "no RAPL: ") && strstr(r.reason, "not a counter"),
	            "not a number: %s", r.reason);
	printf("not a number: %s\n", r.reason);
	starnn_energy_stop(m);

	/* 5. A directory where the counter should be (unreadable, even by root). */
	char path[600];
	snprintf(path, sizeof path, "%s/energy_uj", dir);
	remove(path);
	mkdir(path, 0755);
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(!r.available && strstr(r.reason, path) && strstr(r.reason, strerror(EISDIR)), "directory: %s",
	            r.reason);
	printf("directory in place of energy_uj: %s\n", r.reason);
	starnn_energy_stop(m);
	rmdir(path);

	/* 6. Permission denied (Linux >= 5.10 for non-root). */
	make_tree(root);
	snprintf(path, sizeof path, "%s/energy_uj", dir);
	if (geteuid() == 0) {
		printf("permission denied: skipped (root reads mode 000 files)\n");
	} else {
		chmod(path, 0);
		TEST_OK(starnn_energy_start(&m, &o));
		TEST_OK(starnn_energy_read(m, &r));
		TEST_ASSERT(!r.available && strstr(r.reason, path) && strstr(r.reason, "permission denied"),
		            "mode 000: %s", r.reason);
		printf("permission denied: %s\n", r.reason);
		starnn_energy_stop(m);
		chmod(path, 0644);
	}

	/* 7. No powercap directory at all. */
	char none[320];
	snprintf(none, sizeof none, "%s/absent", tmp);
	setenv("STARNN_POWERCAP_ROOT", none, 1);
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	char want[400];
	snprintf(want, sizeof want, "no RAPL: %s is absent", none);
	TEST_ASSERT(!r.available && strcmp(r.reason, want) == 0, "absent root: '%s', expected '%s'", r.reason, want);
	starnn_energy_stop(m);

	/* 8. A root without package zones. */
	snprintf(none, sizeof none, "%s/empty", tmp);
	mkdir(none, 0755);
	setenv("STARNN_POWERCAP_ROOT", none, 1);
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(!r.available && strstr(r.reason, "has no intel-rapl package zone"), "empty root: %s", r.reason);
	starnn_energy_stop(m);
	rmdir(none);

	/* Bad period. */
	setenv("STARNN_ENERGY_PERIOD_MS", "0", 1);
	TEST_ASSERT(starnn_energy_start(&m, &o) == STARNN_EINVAL && m == NULL, "STARNN_ENERGY_PERIOD_MS=0 accepted");
	unsetenv("STARNN_ENERGY_PERIOD_MS");
	unsetenv("STARNN_POWERCAP_ROOT");
}

/* NVML through a stand-in library (tests/runtime/fake_nvml.c): GPU 0
 * advances 250 mJ per read, GPU 1 cannot tell its energy. */
static void nvml_fake(void)
{
	struct starnn_energy_opts o;
	starnn_energy_opts_init(&o);
	o.methods = STARNN_ENERGY_NVML;
	starnn_energy_meter *m;
	struct starnn_energy_reading r;
	setenv("STARNN_NVML_LIBRARY", FAKE_NVML, 1);
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	/* reads: discovery 5000, baseline 5250, this one 5500 mJ */
	TEST_ASSERT(r.available && strcmp(r.method, "nvml") == 0 && r.ndomains == 1 &&
	                    strcmp(r.domain[0].name, "gpu-0") == 0 && fabs(r.joules - 0.25) < 1e-12,
	            "fake NVML: %s, %d domains, %g J (%s)", r.method, r.ndomains, r.joules, r.reason);
	TEST_ASSERT(strcmp(r.reason, "NVML: GPU 1: Not Supported (left out)") == 0, "fake NVML reason: '%s'", r.reason);
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(fabs(r.joules - 0.5) < 1e-12 && fabs(r.domain[0].joules - 0.5) < 1e-12, "fake NVML, 2nd read: %g J",
	            r.joules);
	starnn_energy_stop(m);

	/* With RAPL (fixture): both, summed. */
	char root[300];
	snprintf(root, sizeof root, "%s/powercap", tmp);
	make_tree(root);
	setenv("STARNN_POWERCAP_ROOT", root, 1);
	o.methods = STARNN_ENERGY_ALL;
	TEST_OK(starnn_energy_start(&m, &o));
	advance(root, 4);
	TEST_OK(starnn_energy_read(m, &r));
	double rapl = (double)(zones[0].total + zones[2].total + zones[3].total) * 1e-6;
	TEST_ASSERT(r.available && strcmp(r.method, "rapl+nvml") == 0 && r.ndomains == 4 &&
	                    fabs(domain(&r, "gpu-0") - 0.25) < 1e-12 && fabs(r.joules - (rapl + 0.25)) < 1e-9,
	            "rapl+nvml: %s, %d domains, %.9f J, expected %.9f", r.method, r.ndomains, r.joules, rapl + 0.25);
	starnn_energy_print(stdout, &r, 0, 0);
	starnn_energy_stop(m);
	unsetenv("STARNN_POWERCAP_ROOT");

	o.methods = STARNN_ENERGY_NVML;
	setenv("FAKE_NVML_INIT_FAIL", "1", 1);
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(!r.available && strcmp(r.reason, "no NVML: nvmlInit: Driver Not Loaded") == 0, "no driver: '%s'",
	            r.reason);
	starnn_energy_stop(m);
	unsetenv("FAKE_NVML_INIT_FAIL");

	setenv("STARNN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_OK(starnn_energy_read(m, &r));
	TEST_ASSERT(!r.available && strcmp(r.reason, "no NVML: /nonexistent/libnvidia-ml.so.1 not found") == 0,
	            "no library: '%s'", r.reason);
	starnn_energy_stop(m);
	unsetenv("STARNN_NVML_LIBRARY");
}

/* The machine this runs on, every method. */
static void real_machine(void)
{
	starnn_energy_meter *m;
	struct starnn_energy_reading r;
	TEST_OK(starnn_energy_start(&m, NULL));
	sleep_ms(300);
	TEST_OK(starnn_energy_read(m, &r));
	starnn_energy_stop(m);
	printf("this machine: method %s, %s%s%s\n", r.method, r.available ? "" : "reason: ", r.reason,
	       r.available ? "" : "");
	if (r.available)
		printf("this machine: %.3f J in %.3f s\n", r.joules, r.elapsed);
	if (access("/sys/class/powercap", F_OK) != 0) {
		TEST_ASSERT(strstr(r.reason, "no RAPL: /sys/class/powercap is absent"),
		            "no /sys/class/powercap here, but the reason does not say so: '%s'", r.reason);
		TEST_ASSERT(r.available == (strncmp(r.method, "perf", 4) == 0 || strstr(r.method, "nvml") != NULL),
		            "method '%s' with available %d", r.method, r.available);
	} else if (strncmp(r.method, "rapl", 4) == 0) {
		TEST_ASSERT(r.joules > 0, "RAPL here, but %g J in %.3f s", r.joules, r.elapsed);
	} else {
		TEST_ASSERT(r.reason[0], "powercap present, no RAPL and no reason");
	}
}

static void busy_cpu(void *buffers[], void *arg)
{
	(void)buffers, (void)arg;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000000L);
}

static struct starpu_codelet busy_cl = {
	.cpu_funcs = {busy_cpu},
	.nbuffers = 0,
	.name = "energy_test_busy",
};

static void power_model(void)
{
	struct starnn_energy_opts o;
	starnn_energy_opts_init(&o);
	starnn_energy_meter *m = NULL;
	o.cpu_watts = -1;
	TEST_ASSERT(starnn_energy_start(&m, &o) == STARNN_EINVAL && !m, "negative watts accepted");
	o.cpu_watts = 10, o.idle_watts = 5;
	o.methods = 0; /* estimated figures alone */
	int before = starpu_profiling_status_get();
	TEST_OK(starnn_energy_start(&m, &o));
	TEST_ASSERT(starpu_profiling_status_get() == STARPU_PROFILING_ENABLE, "profiling not enabled by the model");
	for (int i = 0; i < 8; i++)
		TEST_ASSERT(starpu_task_insert(&busy_cl, 0) == 0, "task insert");
	starpu_task_wait_for_all();
	struct starnn_energy_reading r;
	TEST_OK(starnn_energy_read(m, &r));
	starnn_energy_stop(m);
	TEST_ASSERT(starpu_profiling_status_get() == before, "profiling status not restored");
	TEST_ASSERT(!r.available && strcmp(r.reason, "no method asked") == 0 && isnan(r.joules), "measured: %s (%s)",
	            r.method, r.reason);
	TEST_ASSERT(r.estimated && r.cpu_busy_s >= 0.15 && r.cpu_busy_s < 0.15 + r.elapsed * starnn_ncpu_workers(),
	            "8 tasks of 20 ms: %.3f s busy in %.3f s", r.cpu_busy_s, r.elapsed);
	double want = 10 * r.cpu_busy_s + 5 * r.elapsed;
	TEST_ASSERT(fabs(r.estimated_joules - want) < 1e-9, "estimated %.6f J, expected %.6f", r.estimated_joules, want);

	/* The report line and the summary record. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	TEST_ASSERT(f != NULL, "open_memstream");
	if (!f)
		return;
	starnn_energy_print(f, &r, 2, 80);
	TEST_OK(starnn_energy_summary_json(f, 10, 2, 80, &r));
	fclose(f);
	printf("%s", text);
	TEST_ASSERT(strstr(text, "energy: not available (no method asked)\nenergy estimated: ") == text,
	            "report lines: %s", text);
	const char *rec = strstr(text, "{\"summary\":{\"steps\":10,\"epochs\":2,\"samples\":80,\"elapsed\":");
	TEST_ASSERT(rec != NULL, "no summary record: %s", text);
	TEST_ASSERT(rec && strstr(rec, ",\"energy\":{\"method\":\"not available\",\"reason\":\"no method asked\","
	                               "\"joules\":null,\"joules_per_epoch\":null,\"joules_per_sample\":null,"
	                               "\"domains\":{},\"estimated\":{\"joules\":"),
	            "energy record: %s", rec ? rec : "");
	TEST_ASSERT(rec && strcmp(rec + strlen(rec) - 4, "}}}\n") == 0, "record end: %s", rec ? rec : "");
	free(text);

	/* A measured reading's line and record (fixture values). */
	struct starnn_energy_reading q;
	memset(&q, 0, sizeof q);
	q.available = 1;
	snprintf(q.method, sizeof q.method, "rapl");
	q.joules = 1234.5, q.ndomains = 2, q.elapsed = 2;
	snprintf(q.domain[0].name, sizeof q.domain[0].name, "package-0");
	q.domain[0].joules = 1100.2;
	snprintf(q.domain[1].name, sizeof q.domain[1].name, "dram-0");
	q.domain[1].joules = 134.3;
	f = open_memstream(&text, &len);
	if (!f)
		return;
	starnn_energy_print(f, &q, 2, 2000);
	TEST_OK(starnn_energy_summary_json(f, 50, 2, 2000, &q));
	fclose(f);
	printf("%s", text);
	TEST_ASSERT(strcmp(text, "energy: 1234.5 J (rapl: package-0 1100.2 J, dram-0 134.3 J), 617.2 J per epoch, "
	                         "0.6172 J per sample\n"
	                         "{\"summary\":{\"steps\":50,\"epochs\":2,\"samples\":2000,\"elapsed\":2,"
	                         "\"samples_per_s\":1000,\"energy\":{\"method\":\"rapl\",\"joules\":1234.5,"
	                         "\"joules_per_epoch\":617.25,\"joules_per_sample\":0.61725,"
	                         "\"domains\":{\"package-0\":1100.2,\"dram-0\":134.3},\"estimated\":null}}}\n") == 0,
	            "measured report: %s", text);
	free(text);
}

int main(void)
{
	snprintf(tmp, sizeof tmp, "%s/starnn-energy-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	starnn_energy_meter *m = NULL;
	struct starnn_energy_opts o;
	starnn_energy_opts_init(&o);
	o.cpu_watts = 1;
	TEST_ASSERT(starnn_energy_start(&m, &o) == STARNN_ESTATE && !m, "power model accepted before starnn_init");

	rapl_fixture();
	nvml_fake();
	real_machine();
	test_init();
	power_model();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "note: could not remove %s\n", tmp);
	return test_finish();
}
