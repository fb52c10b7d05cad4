/* CATALOG.csv of raw SEVIR files: which rows of a raw event file are
 * events of the split (img_type vil, pct_missing 0, file_name matching the
 * file's base name; time_utc up to 2019-06-01 00:00:00 inclusive for
 * training, after it for the test, the rule of the SEVIR authors' nowcast
 * generators: train end_date <= 2019-06-01, test time_utc > it). The
 * parser works in place on the text: a malformed line is an error naming
 * the line. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/sevir/internal.h"
#include "runtime/base/error.h"

/* Parses one CSV record at *pos in place (fields NUL-terminated, quotes
 * removed, "" unescaped). Returns the number of fields (0 at the end);
 * fields beyond maxf are counted but not stored; *bad set on an unclosed quote. */
static int csv_record(char *buf, size_t len, size_t *pos, char **fields, int maxf, int *bad)
{
	size_t r = *pos, w = *pos;
	int nf = 0;
	if (r >= len)
		return 0;
	int quoted = 0, at_start = 1;
	if (nf < maxf)
		fields[nf] = buf + w;
	nf = 1;
	while (r < len) {
		char c = buf[r++];
		if (quoted) {
			if (c == '"') {
				if (r < len && buf[r] == '"') {
					buf[w++] = '"';
					r++;
				} else {
					quoted = 0;
				}
			} else {
				buf[w++] = c;
			}
			continue;
		}
		if (c == '"' && at_start) {
			quoted = 1;
			at_start = 0;
			continue;
		}
		if (c == ',') {
			buf[w++] = 0;
			if (nf < maxf)
				fields[nf] = buf + w;
			nf++;
			at_start = 1;
			continue;
		}
		if (c == '\n')
			break;
		if (c == '\r')
			continue;
		buf[w++] = c;
		at_start = 0;
	}
	if (quoted)
		*bad = 1;
	buf[w] = 0; /* w < r <= len, or w == len with the extra byte */
	*pos = r;
	return nf;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
	return s;
}

/* "YYYY-MM-DD HH:MM:SS" (or with T, or the date alone) -> a sortable key;
 * fractional seconds count as later than the whole second (so that
 * 2019-06-01 00:00:00.5 is after the split's 2019-06-01 00:00:00, as a
 * datetime comparison has it) */
static int parse_time(const char *s, int64_t *key)
{
	int Y, M, D, h = 0, m = 0, sec = 0, used = 0;
	char sep = 0;
	int n = sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &Y, &M, &D, &sep, &h, &m, &sec, &used);
	if (n < 3 || (n > 3 && n < 6) || (n >= 4 && sep != ' ' && sep != 'T'))
		return -1;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60)
		return -1;
	int frac = 0;
	if (n == 7 && s[used] == '.')
		for (const char *p = s + used + 1; *p >= '0' && *p <= '9'; p++)
			frac |= *p != '0';
	*key = ((((((int64_t)Y * 13 + M) * 32 + D) * 24 + h) * 60 + m) * 61 + sec) * 2 + frac;
	return 0;
}

static int read_text_file(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return starnn_error(STARNN_EIO, "cannot open the catalog %s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fclose(f);
			return starnn_error(STARNN_ENOMEM, "reading %s: out of memory", path);
		}
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		cap *= 2;
		char *nb = realloc(buf, cap);
		if (!nb)
			free(buf);
		buf = nb;
	}
	int err = ferror(f);
	fclose(f);
	if (err) {
		free(buf);
		return starnn_error(STARNN_EIO, "cannot read the catalog %s", path);
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

#define CSV_MAXF 256

int sevir_catalog_parse(sevir_data *d, char *buf, size_t len)
{
	size_t pos = 0;
	char *f[CSV_MAXF];
	int bad = 0, rc = 0;
	int nh = csv_record(buf, len, &pos, f, CSV_MAXF, &bad);
	if (nh > 0 && (unsigned char)f[0][0] == 0xef && (unsigned char)f[0][1] == 0xbb && (unsigned char)f[0][2] == 0xbf)
		f[0] += 3; /* UTF-8 byte order mark */
	static const char *want[] = {"id", "file_name", "file_index", "img_type", "time_utc", "pct_missing"};
	enum { C_ID, C_FILE, C_INDEX, C_TYPE, C_TIME, C_MISSING, C_N };
	int col[C_N];
	for (int k = 0; k < C_N; k++) {
		col[k] = -1;
		for (int i = 0; i < nh && i < CSV_MAXF; i++)
			if (!strcmp(trim(f[i]), want[k]))
				col[k] = i;
		if (col[k] < 0) {
			rc = starnn_error(STARNN_EINVAL,
			                  "%s: no column '%s' in the header line (needs id, file_name, file_index, "
			                  "img_type, time_utc, pct_missing)",
			                  d->catalog, want[k]);
			goto done;
		}
	}
	int maxcol = 0;
	for (int k = 0; k < C_N; k++)
		maxcol = col[k] > maxcol ? col[k] : maxcol;

	int64_t split_key;
	parse_time("2019-06-01 00:00:00", &split_key);
	char *base = strdup(d->path), *mybase = basename(base);
	int64_t cap = 64, n = 0, nrows = 0, nvil = 0, nfile = 0, nmissing = 0, nsplit = 0;
	d->rows = malloc((size_t)cap * sizeof *d->rows);
	if (!d->rows || !base) {
		free(base);
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
		goto done;
	}
	for (int line = 2;; line++) {
		int nf = csv_record(buf, len, &pos, f, CSV_MAXF, &bad);
		if (nf == 0)
			break;
		if (bad) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d: unclosed quote", d->catalog, line);
			break;
		}
		if (nf == 1 && !*trim(f[0]))
			continue; /* blank line */
		nrows++;
		if (nf <= maxcol) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d has %d fields, the header has %d", d->catalog, line,
			                  nf, nh);
			break;
		}
		if (strcmp(trim(f[col[C_TYPE]]), "vil"))
			continue;
		nvil++;
		char *fname = strdup(trim(f[col[C_FILE]]));
		int same = fname && !strcmp(basename(fname), mybase);
		free(fname);
		if (!same)
			continue;
		nfile++;
		char *end;
		const char *ms = trim(f[col[C_MISSING]]);
		double missing = strtod(ms, &end);
		if (end == ms || *end || isnan(missing)) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d: pct_missing '%s' is not a number", d->catalog, line, ms);
			break;
		}
		if (missing != 0)
			continue;
		nmissing++;
		const char *is = trim(f[col[C_INDEX]]);
		double index = strtod(is, &end);
		if (end == is || *end || index != floor(index) || index < 0) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d: file_index '%s' is not a row number", d->catalog,
			                  line, is);
			break;
		}
		if (index >= (double)d->nrows) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d: file_index %.0f, but %s has %lld events", d->catalog,
			                  line, index, d->path, (long long)d->nrows);
			break;
		}
		const char *id = trim(f[col[C_ID]]);
		if (d->ids && d->ids[(int64_t)index] && strcmp(d->ids[(int64_t)index], id)) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d: event id '%s', but row %.0f of %s holds id '%s'",
			                  d->catalog, line, id, index, d->path, d->ids[(int64_t)index]);
			break;
		}
		int64_t key;
		const char *ts = trim(f[col[C_TIME]]);
		if (parse_time(ts, &key)) {
			rc = starnn_error(STARNN_EINVAL, "%s: line %d: time_utc '%s' is not a date (YYYY-MM-DD HH:MM:SS)",
			                  d->catalog, line, ts);
			break;
		}
		if ((key <= split_key) != (d->split == SEVIR_TRAIN))
			continue;
		nsplit++;
		if (n == cap) {
			int64_t *nr = realloc(d->rows, (size_t)(cap *= 2) * sizeof *nr);
			if (!nr) {
				rc = starnn_error(STARNN_ENOMEM, "out of memory");
				break;
			}
			d->rows = nr;
		}
		d->rows[n++] = (int64_t)index;
	}
	if (rc == 0) {
		qsort(d->rows, (size_t)n, sizeof *d->rows, cmp_i64);
		int64_t u = 0; /* a row listed twice is one event */
		for (int64_t i = 0; i < n; i++)
			if (u == 0 || d->rows[u - 1] != d->rows[i])
				d->rows[u++] = d->rows[i];
		n = u;
		if (n == 0)
			rc = starnn_error(STARNN_EINVAL,
			                  "%s: no usable events for %s in %s: %lld catalog rows, %lld vil, %lld for this "
			                  "file, %lld without missing data, %lld in the %s split (%s 2019-06-01 00:00:00)",
			                  d->path, sevir_split_name(d->split), d->catalog, (long long)nrows, (long long)nvil,
			                  (long long)nfile, (long long)nmissing, (long long)nsplit, sevir_split_name(d->split),
			                  d->split == SEVIR_TRAIN ? "up to" : "after");
		else if (n * d->windows > INT32_MAX)
			rc = starnn_error(STARNN_EINVAL, "%s: too many events (%lld)", d->path, (long long)n);
		d->nevents = (int)n;
	}
	free(base);
done:
	return rc;
}

int sevir_select_events(sevir_data *d)
{
	char *buf = NULL;
	size_t len = 0;
	if (d->catalog_text) { /* a copy: the parser writes into it, and wants buf[len] */
		len = d->catalog_len;
		buf = malloc(len + 1);
		if (!buf)
			return starnn_error(STARNN_ENOMEM, "reading %s: out of memory", d->catalog);
		memcpy(buf, d->catalog_text, len);
		buf[len] = 0;
	} else {
		STARNN_CHECK(read_text_file(d->catalog, &buf, &len));
	}
	int rc = sevir_catalog_parse(d, buf, len);
	free(buf);
	return rc;
}
