/* tests/fuzz/regress: every committed input of the fuzz harnesses, through
 * the harnesses built as ordinary code (no libFuzzer): the seed corpora
 * (tests/fuzz/corpus/NAME/) and the inputs that once crashed a parser
 * (tests/fuzz/regressions/NAME/, one file per bug, named after it). A
 * harness that reports a broken property fails the test; a crash is a
 * crash (and under the sanitizer build, so is a leak or an overflow). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

#ifndef FUZZ_DIR
#define FUZZ_DIR "tests/fuzz"
#endif

static const struct {
	const char *name;
	int (*fn)(const uint8_t *, size_t);
} harnesses[] = {
	{"sevir_prepared", fuzz_sevir_prepared}, {"sevir_raw", fuzz_sevir_raw}, {"sevir_catalog", fuzz_sevir_catalog},
	{"checkpoint", fuzz_checkpoint},         {"unet_options", fuzz_unet_options},
};

static int read_file(const char *path, uint8_t **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *nb = realloc(buf, cap *= 2);
		if (!nb)
			free(buf);
		buf = nb;
	}
	int err = ferror(f);
	fclose(f);
	if (!buf || err) {
		free(buf);
		return -1;
	}
	*data = buf;
	*size = n;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Feeds every file of dir to fn; returns the number of failures, counts the inputs. */
static int run_dir(const char *dir, int (*fn)(const uint8_t *, size_t), int *inputs)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return 0; /* no such inputs (yet) */
	char *names[4096];
	int n = 0, failed = 0;
	struct dirent *e;
	while ((e = readdir(dp)) && n < 4096)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(dp);
	qsort(names, (size_t)n, sizeof *names, cmp_names);
	for (int i = 0; i < n; i++) {
		char path[4096];
		uint8_t *data;
		size_t size;
		snprintf(path, sizeof path, "%s/%s", dir, names[i] ? names[i] : "");
		if (!names[i] || read_file(path, &data, &size) < 0) {
			fprintf(stderr, "FAIL: cannot read %s\n", path);
			failed++;
		} else {
			if (fn(data, size) != 0) {
				fprintf(stderr, "FAIL: %s\n", path);
				failed++;
			}
			free(data);
			++*inputs;
		}
		free(names[i]);
	}
	return failed;
}

int main(void)
{
	int failed = 0;
	for (size_t h = 0; h < sizeof harnesses / sizeof *harnesses; h++) {
		int inputs = 0, f = 0;
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/corpus/%s", FUZZ_DIR, harnesses[h].name);
		f += run_dir(dir, harnesses[h].fn, &inputs);
		snprintf(dir, sizeof dir, "%s/regressions/%s", FUZZ_DIR, harnesses[h].name);
		f += run_dir(dir, harnesses[h].fn, &inputs);
		if (inputs == 0) { /* a corpus left out (of the tarball, say) must not pass unseen */
			fprintf(stderr, "FAIL: no inputs for %s in %s/corpus or %s/regressions\n", harnesses[h].name, FUZZ_DIR,
			        FUZZ_DIR);
			f++;
		}
		printf("%-15s %4d inputs, %d failed\n", harnesses[h].name, inputs, f);
		failed += f;
	}
	return failed ? 1 : 0;
}
