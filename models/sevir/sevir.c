/* SEVIR nowcasting data: the synthetic generator, the raw and prepared HDF5
 * readers, the prefetching loader thread and the writers (see sevir.h).
 *
 * Shapes: raw `vil` is N x H x W x T uint8 (NHWC, T = 49 frames), prepared
 * `IN` / `OUT` are N x H x W x 13 / 12 floats. Batches are NCHW floats,
 * x[b][t][h][w], normalised. A sample is read as a "region" of R x R pixels
 * (the crop, or the whole image when downsampling) for its in + out frames,
 * kept frame-major as raw floats, then brought to size and normalised. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "models/sevir/sevir.h"
#include "runtime/error.h"


/* ------------------------------------------------------------ random numbers */

static inline uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};
static inline uint64_t rng_next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	uint64_t z = r->s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static inline double rng_uniform(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * ((double)(rng_next(r) >> 11) * 0x1p-53);
}
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

uint64_t sevir_synthetic_stream(uint64_t seed, enum sevir_split split)
{
	return split == SEVIR_TEST ? mix64(seed ^ 0x5445535453504c54ull) : seed;
}

/* ------------------------------------------------------------ synthetic events
 *
 * An event is a flow (a velocity per frame that slowly turns and changes
 * speed) carrying a few storm cells: elliptical blobs with a broad skirt
 * and a sharper core, each growing to a peak and decaying, rotating, with
 * their own small drift relative to the flow; some cells have satellite
 * cores on their flank that rotate around them and peak at other times;
 * large weak stratiform blobs form the background. Sizes and speeds scale
 * with the image size so that an event looks the same at any size. The
 * profile is a compact polynomial (no exp in the pixel loops), rendered
 * over each blob's bounding box only. */

#define SYN_MAX_BLOBS 64
#define SYN_LATTICE 32 /* power of two */
#define SYN_CELL1 14.0f /* texture cells at 128 px */
#define SYN_CELL2 6.0f

struct syn_blob {
	float x0, y0;        /* centre at t = 0 relative to the flow, px */
	float vx, vy;        /* own drift, px / frame */
	float a, b;          /* semi-axes at peak ("sigma"), px */
	float theta0, omega; /* orientation (rad), rotation (rad / frame) */
	float peak;          /* VIL at the peak of the envelope */
	float tpeak, tgrow, tdecay;
	float core;          /* weight of the sharp core */
	int parent;          /* satellite of this blob, or -1 */
	float ox, oy;        /* satellite: offset in the parent's rotating frame, px */
};

struct syn_event {
	int size, nblobs;
	float dx[SEVIR_FRAMES], dy[SEVIR_FRAMES]; /* flow displacement since frame 0 */
	struct syn_blob blob[SYN_MAX_BLOBS];
	uint64_t noise_key;
	/* texture: periodic value-noise lattices in [-1, 1] carried by the flow;
	 * octave 1 fixed, octave 2 morphing from lattice 2a to 2b over the event */
	float tex1[SYN_LATTICE * SYN_LATTICE], tex2a[SYN_LATTICE * SYN_LATTICE], tex2b[SYN_LATTICE * SYN_LATTICE];
};

static void syn_event_init(struct syn_event *ev, uint64_t seed, int64_t event, int size)
{
	struct rng r = {mix64(seed) ^ mix64((uint64_t)event * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull)};
	double scale = size / 128.0;
	ev->size = size;
	ev->noise_key = rng_next(&r);
	for (int i = 0; i < SYN_LATTICE * SYN_LATTICE; i++) {
		ev->tex1[i] = (float)rng_uniform(&r, -1, 1);
		ev->tex2a[i] = (float)rng_uniform(&r, -1, 1);
		ev->tex2b[i] = (float)rng_uniform(&r, -1, 1);
	}

	/* the flow: speed 0.5..2.5 px / frame at 128 px, turning and accelerating gently */
	double speed = rng_uniform(&r, 0.4, 2.0) * scale;
	double phi = rng_uniform(&r, 0, 2 * M_PI);
	double turn = rng_uniform(&r, -0.012, 0.012);
	double accel = rng_uniform(&r, -0.006, 0.006);
	double x = 0, y = 0;
	for (int t = 0; t < SEVIR_FRAMES; t++) {
		ev->dx[t] = (float)x;
		ev->dy[t] = (float)y;
		double tm = t + 0.5, s = speed * (1 + accel * (tm - 24));
		x += s * cos(phi + turn * tm);
		y += s * sin(phi + turn * tm);
	}

	int n = 0;
	/* background: 1..3 large weak stratiform blobs */
	int nstrat = 1 + (int)rng_below(&r, 3);
	for (int i = 0; i < nstrat; i++) {
		struct syn_blob *b = &ev->blob[n++];
		b->a = (float)(rng_uniform(&r, 18, 40) * scale);
		b->b = b->a * (float)rng_uniform(&r, 0.5, 1.0);
		b->theta0 = (float)rng_uniform(&r, 0, M_PI);
		b->omega = (float)rng_uniform(&r, -0.005, 0.005);
		b->peak = (float)rng_uniform(&r, 12, 45);
		b->tpeak = (float)rng_uniform(&r, 0, 48);
		b->tgrow = (float)rng_uniform(&r, 30, 80);
		b->tdecay = (float)rng_uniform(&r, 30, 80);
		b->core = 0;
		b->vx = (float)(rng_uniform(&r, -0.15, 0.15) * scale);
		b->vy = (float)(rng_uniform(&r, -0.15, 0.15) * scale);
		b->parent = -1;
	}
	/* convective cells: 5..12, a third of them with satellites */
	int ncells = 6 + (int)rng_below(&r, 9);
	for (int i = 0; i < ncells && n < SYN_MAX_BLOBS; i++) {
		int self = n;
		struct syn_blob *b = &ev->blob[n++];
		b->a = (float)(rng_uniform(&r, 6, 14) * scale);
		b->b = b->a * (float)rng_uniform(&r, 0.45, 1.0);
		b->theta0 = (float)rng_uniform(&r, 0, M_PI);
		b->omega = (float)rng_uniform(&r, -0.03, 0.03);
		b->peak = (float)(rng_uniform(&r, 0, 1) < 0.75 ? rng_uniform(&r, 140, 275) : rng_uniform(&r, 50, 140));
		b->tpeak = (float)rng_uniform(&r, -15, 64);
		b->tgrow = (float)rng_uniform(&r, 8, 25);
		b->tdecay = (float)rng_uniform(&r, 12, 40);
		b->core = (float)rng_uniform(&r, 0.35, 0.65);
		b->vx = (float)(rng_uniform(&r, -0.3, 0.3) * scale);
		b->vy = (float)(rng_uniform(&r, -0.3, 0.3) * scale);
		b->parent = -1;
		/* placed so that it is near the image at its peak (cells flow in and out) */
		int tm = b->tpeak < 0 ? 0 : b->tpeak > 48 ? 48 : (int)b->tpeak;
		double xc = rng_uniform(&r, -0.25, 1.25) * size, yc = rng_uniform(&r, -0.25, 1.25) * size;
		b->x0 = (float)(xc - ev->dx[tm] - b->vx * tm);
		b->y0 = (float)(yc - ev->dy[tm] - b->vy * tm);
		if (rng_uniform(&r, 0, 1) < 0.35) {
			int nsat = 1 + (int)rng_below(&r, 2);
			for (int k = 0; k < nsat && n < SYN_MAX_BLOBS; k++) {
				struct syn_blob *s = &ev->blob[n++];
				*s = ev->blob[self];
				double dist = rng_uniform(&r, 1.2, 2.5) * s->a, ang = rng_uniform(&r, 0, 2 * M_PI);
				s->parent = self;
				s->ox = (float)(dist * cos(ang));
				s->oy = (float)(dist * sin(ang));
				s->a *= (float)rng_uniform(&r, 0.4, 0.7);
				s->b = s->a * (float)rng_uniform(&r, 0.5, 1.0);
				s->theta0 = (float)rng_uniform(&r, 0, M_PI);
				s->peak *= (float)rng_uniform(&r, 0.5, 0.95);
				s->tpeak += (float)rng_uniform(&r, -10, 15);
			}
		}
	}
	/* stratiform centres: anywhere over the image at mid-event */
	for (int i = 0; i < nstrat; i++) {
		struct syn_blob *b = &ev->blob[i];
		double xc = rng_uniform(&r, 0.0, 1.0) * size, yc = rng_uniform(&r, 0.0, 1.0) * size;
		b->x0 = (float)(xc - ev->dx[24] - b->vx * 24);
		b->y0 = (float)(yc - ev->dy[24] - b->vy * 24);
	}
	ev->nblobs = n;
}

static inline float syn_envelope(const struct syn_blob *b, float t)
{
	float u = (t - b->tpeak) / (t < b->tpeak ? b->tgrow : b->tdecay);
	float q = 1 - u * u / 9; /* ~ exp(-u^2 / 2), zero beyond 3 widths */
	return q > 0 ? q * q * q * q : 0;
}

static void syn_centre(const struct syn_event *ev, const struct syn_blob *b, int t, float *cx, float *cy, float *theta)
{
	if (b->parent >= 0) {
		const struct syn_blob *p = &ev->blob[b->parent];
		float pcx, pcy, pth;
		syn_centre(ev, p, t, &pcx, &pcy, &pth);
		float c = cosf(pth), s = sinf(pth);
		*cx = pcx + c * b->ox - s * b->oy;
		*cy = pcy + s * b->ox + c * b->oy;
		*theta = b->theta0 + b->omega * t;
		return;
	}
	*cx = b->x0 + ev->dx[t] + b->vx * t;
	*cy = b->y0 + ev->dy[t] + b->vy * t;
	*theta = b->theta0 + b->omega * t;
}

static inline uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* Adds amp * (value noise of lattice la, morphing to lb by w) sampled at
 * (x - sx, y - sy) with cells of `cell` px to mul (n x n). Smoothstep
 * bilinear interpolation; the lattice rows are interpolated along x once,
 * then every pixel is one (vectorised) lerp between two of those rows. */
static void syn_texture(const float *la, const float *lb, float w, float cell, float sx, float sy, float amp, int n,
                        float *restrict mul, float *restrict rows, int *restrict xi, float *restrict xf)
{
	const int L = SYN_LATTICE;
	float lat[SYN_LATTICE * SYN_LATTICE];
	for (int i = 0; i < L * L; i++)
		lat[i] = amp * ((1 - w) * la[i] + w * lb[i]);
	for (int x = 0; x < n; x++) {
		float u = (x + 0.5f - sx) / cell, fu = floorf(u), f = u - fu;
		xi[x] = (int)fu & (L - 1);
		xf[x] = f * f * (3 - 2 * f);
	}
	int j0 = (int)floorf((0.5f - sy) / cell), j1 = (int)floorf((n - 0.5f - sy) / cell) + 1;
	for (int j = j0; j <= j1; j++) {
		float *row = rows + (size_t)(j - j0) * n;
		const float *lr = lat + (j & (L - 1)) * L;
		for (int x = 0; x < n; x++) {
			float a = lr[xi[x]], b = lr[(xi[x] + 1) & (L - 1)];
			row[x] = a + xf[x] * (b - a);
		}
	}
	for (int y = 0; y < n; y++) {
		float v = (y + 0.5f - sy) / cell, fv = floorf(v), f = v - fv;
		f = f * f * (3 - 2 * f);
		const float *r0 = rows + (size_t)((int)fv - j0) * n, *r1 = r0 + n;
		float *m = mul + (size_t)y * n;
		for (int x = 0; x < n; x++)
			m[x] += r0[x] + f * (r1[x] - r0[x]);
	}
}

struct syn_scratch {
	float *acc, *mul, *rows, *xf;
	int *xi;
};

static int syn_scratch_alloc(struct syn_scratch *s, int n)
{
	size_t rows = (size_t)(n / (SYN_CELL2 * n / 128.0f)) + 4;
	s->acc = malloc((size_t)n * n * sizeof(float));
	s->mul = malloc((size_t)n * n * sizeof(float));
	s->rows = malloc(rows * n * sizeof(float));
	s->xf = malloc((size_t)n * sizeof(float));
	s->xi = malloc((size_t)n * sizeof(int));
	return s->acc && s->mul && s->rows && s->xf && s->xi ? 0 : -1;
}

static void syn_scratch_free(struct syn_scratch *s)
{
	free(s->acc);
	free(s->mul);
	free(s->rows);
	free(s->xf);
	free(s->xi);
}

/* Renders frame t into out (size x size uint8). */
static void syn_render(const struct syn_event *ev, int t, struct syn_scratch *sc, uint8_t *restrict out)
{
	float *restrict acc = sc->acc;
	const int n = ev->size;
	memset(acc, 0, (size_t)n * n * sizeof *acc);
	for (int i = 0; i < ev->nblobs; i++) {
		const struct syn_blob *b = &ev->blob[i];
		float env = syn_envelope(b, (float)t);
		float amp = b->peak * env;
		if (amp < 0.25f)
			continue;
		float cx, cy, th;
		syn_centre(ev, b, t, &cx, &cy, &th);
		float grow = 0.5f + 0.5f * sqrtf(env); /* cells widen as they grow */
		float a = b->a * grow, bb = b->b * grow;
		float c = cosf(th), s = sinf(th);
		float hx = 3 * sqrtf(a * a * c * c + bb * bb * s * s), hy = 3 * sqrtf(a * a * s * s + bb * bb * c * c);
		int x0 = (int)floorf(cx - hx), x1 = (int)ceilf(cx + hx), y0 = (int)floorf(cy - hy), y1 = (int)ceilf(cy + hy);
		if (x0 < 0)
			x0 = 0;
		if (y0 < 0)
			y0 = 0;
		if (x1 > n - 1)
			x1 = n - 1;
		if (y1 > n - 1)
			y1 = n - 1;
		if (x0 > x1 || y0 > y1)
			continue;
		/* q = (u / a)^2 + (v / b)^2 in the blob's frame, pre-divided by 9 (the skirt's support) */
		float ca = c / (3 * a), sa = s / (3 * a), cb = c / (3 * bb), sb = s / (3 * bb);
		float wskirt = amp * (1 - b->core), wcore = amp * b->core;
		const float qcore = 1.5f / 9; /* core radius 1.2 a */
		const float icore = 1 / qcore;
		for (int y = y0; y <= y1; y++) {
			float dy = y + 0.5f - cy;
			float *row = acc + (size_t)y * n;
			for (int x = x0; x <= x1; x++) {
				float dx = x + 0.5f - cx;
				float u = dx * ca + dy * sa, v = dy * cb - dx * sb;
				float q = u * u + v * v;
				float k = 1 - q, kc = 1 - q * icore;
				k = 0.5f * (k + fabsf(k)); /* max(k, 0), branch-free so that it vectorises */
				kc = 0.5f * (kc + fabsf(kc));
				k *= k;
				row[x] += wskirt * k * k + wcore * kc * kc;
			}
		}
	}
	/* texture carried by the flow: irregular shapes, fragmented cores */
	{
		float *restrict mul = sc->mul;
		float scale = n / 128.0f, sx = ev->dx[t], sy = ev->dy[t];
		for (int p = 0; p < n * n; p++)
			mul[p] = 1;
		syn_texture(ev->tex1, ev->tex1, 0, SYN_CELL1 * scale, sx, sy, 0.45f, n, mul, sc->rows, sc->xi, sc->xf);
		syn_texture(ev->tex2a, ev->tex2b, t / 48.0f, SYN_CELL2 * scale, sx, sy, 0.25f, n, mul, sc->rows, sc->xi,
		            sc->xf);
		for (int p = 0; p < n * n; p++) {
			float m = mul[p];
			acc[p] *= 0.5f * (m + fabsf(m));
		}
	}
	/* measurement noise where there is weather; clear sky stays 0 */
	uint32_t key = (uint32_t)ev->noise_key ^ hash32((uint32_t)(ev->noise_key >> 32) + (uint32_t)t * 0x9e3779b9u);
	for (int p = 0; p < n * n; p++) {
		float v = acc[p];
		float u = (float)(int32_t)(hash32(key + (uint32_t)p) >> 8) * (1.0f / 16777216.0f) - 0.5f;
		float wet = 4 * (v - 1) - 0.5f * (4 * (v - 1) - 1 + fabsf(4 * (v - 1) - 1)); /* min(4 (v - 1), 1) */
		wet = 0.5f * (wet + fabsf(wet)); /* 0 below 1, 1 from 1.25 (no compare: it vectorises) */
		v += wet * u * (2 + 0.06f * v) + 0.5f;
		v = 0.5f * (v + fabsf(v));               /* >= 0 */
		v = 254.5f - 0.5f * ((254.5f - v) + fabsf(254.5f - v)); /* <= 254.5 */
		out[p] = (uint8_t)(int)v; /* 0..254 */
	}
}

void sevir_synthetic_frames(uint64_t seed, int64_t event, int size, int t0, int nt, uint8_t *out)
{
	struct syn_event *ev = malloc(sizeof *ev);
	struct syn_scratch sc;
	if (!ev || syn_scratch_alloc(&sc, size)) { /* cannot report from a void function: leave zeros */
		if (out)
			memset(out, 0, (size_t)nt * size * size);
		if (ev)
			syn_scratch_free(&sc);
		free(ev);
		return;
	}
	syn_event_init(ev, seed, event, size);
	for (int t = 0; t < nt; t++)
		syn_render(ev, t0 + t, &sc, out + (size_t)t * size * size);
	syn_scratch_free(&sc);
	free(ev);
}

void sevir_synthetic_displacement(uint64_t seed, int64_t event, int size, int t0, int t1, float *dx, float *dy)
{
	struct syn_event *ev = malloc(sizeof *ev);
	*dx = *dy = 0;
	if (!ev)
		return;
	syn_event_init(ev, seed, event, size);
	if (t0 >= 0 && t1 >= 0 && t0 < SEVIR_FRAMES && t1 < SEVIR_FRAMES) {
		*dx = ev->dx[t1] - ev->dx[t0];
		*dy = ev->dy[t1] - ev->dy[t0];
	}
	free(ev);
}

/* ------------------------------------------------------------ data sources */

enum sevir_kind { KIND_SYNTHETIC, KIND_RAW, KIND_PREPARED };

struct sevir_data {
	enum sevir_kind kind;
	char *path, *catalog;
	enum sevir_split split;
	enum sevir_resize resize;
	int native, size;        /* image sizes: the data's, the batches' */
	int in_frames, out_frames;
	int frames, windows;     /* frames per event (raw, synthetic), samples per event */
	int count;               /* samples */
	uint64_t stream;         /* synthetic */
	hid_t file, vil, in, out;
	int64_t nrows;           /* rows of vil / IN */
	int64_t *rows;           /* raw: the selected rows of vil, in file order */
	char **ids;              /* raw: the `id` of each row */
	int nevents;
	char desc[768];
};

void sevir_options_init(struct sevir_options *o)
{
	memset(o, 0, sizeof *o);
	o->path = "synthetic";
	o->split = SEVIR_TRAIN;
	o->resize = SEVIR_CROP;
	o->in_frames = SEVIR_IN_FRAMES;
	o->out_frames = SEVIR_OUT_FRAMES;
	o->synthetic_size = 128;
	o->seed = 1;
}

int sevir_count(const sevir_data *d)
{
	return d->count;
}
int sevir_size(const sevir_data *d)
{
	return d->size;
}
const char *sevir_describe(const sevir_data *d)
{
	return d->desc;
}

static const char *split_name(enum sevir_split s)
{
	return s == SEVIR_TEST ? "test" : "train";
}

static void describe_resize(const sevir_data *d, char *buf, size_t n)
{
	if (d->size == d->native)
		snprintf(buf, n, "%dx%d", d->size, d->size);
	else
		snprintf(buf, n, "%dx%d -> %dx%d by %s", d->native, d->native, d->size, d->size,
		         d->resize == SEVIR_DOWNSAMPLE ? "downsampling"
		         : d->split == SEVIR_TEST   ? "centre crop"
		                                    : "random crop");
}

void sevir_close(sevir_data *d)
{
	if (!d)
		return;
	H5E_BEGIN_TRY
	{
		if (d->vil > 0)
			H5Dclose(d->vil);
		if (d->in > 0)
			H5Dclose(d->in);
		if (d->out > 0)
			H5Dclose(d->out);
		if (d->file > 0)
			H5Fclose(d->file);
	}
	H5E_END_TRY;
	if (d->ids)
		for (int64_t i = 0; i < d->nrows; i++)
			free(d->ids[i]);
	free(d->ids);
	free(d->rows);
	free(d->path);
	free(d->catalog);
	free(d);
}

/* Shape and type of a dataset: rank, dims; class and size of its type. */
static int dataset_shape(const sevir_data *d, hid_t ds, const char *name, int want_rank, hsize_t *dims)
{
	hid_t sp = H5Dget_space(ds);
	if (sp < 0)
		return starnn_error(STARNN_EIO, "%s: cannot read the dataspace of `%s`", d->path, name);
	int rank = H5Sget_simple_extent_ndims(sp);
	if (rank != want_rank) {
		H5Sclose(sp);
		return starnn_error(STARNN_EINVAL, "%s: dataset `%s` has rank %d, expected %d", d->path, name, rank,
		                    want_rank);
	}
	H5Sget_simple_extent_dims(sp, dims, NULL);
	H5Sclose(sp);
	return 0;
}

static int open_dataset(sevir_data *d, const char *name, hid_t *out)
{
	H5E_BEGIN_TRY
	{
		*out = H5Dopen2(d->file, name, H5P_DEFAULT);
	}
	H5E_END_TRY;
	if (*out < 0)
		return starnn_error(STARNN_EIO, "%s: cannot open dataset `%s`", d->path, name);
	return 0;
}

static int has_dataset(hid_t file, const char *name)
{
	htri_t r;
	H5E_BEGIN_TRY
	{
		r = H5Lexists(file, name, H5P_DEFAULT);
		if (r > 0) {
			H5O_info_t info;
			if (H5Oget_info_by_name(file, name, &info, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET)
				r = 0;
		}
	}
	H5E_END_TRY;
	return r > 0;
}

/* ---- CATALOG.csv */

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

/* "YYYY-MM-DD HH:MM:SS" (or with T, fractional seconds ignored) -> a sortable key */
static int parse_time(const char *s, int64_t *key)
{
	int Y, M, D, h = 0, m = 0, sec = 0;
	char sep = 0;
	int n = sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d", &Y, &M, &D, &sep, &h, &m, &sec);
	if (n < 3 || (n > 3 && n < 6) || (n >= 4 && sep != ' ' && sep != 'T'))
		return -1;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60)
		return -1;
	*key = (((((int64_t)Y * 13 + M) * 32 + D) * 24 + h) * 60 + m) * 61 + sec;
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

static int select_events(sevir_data *d)
{
	char *buf = NULL;
	size_t len = 0, pos = 0;
	STARNN_CHECK(read_text_file(d->catalog, &buf, &len));
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
		if ((key < split_key) != (d->split == SEVIR_TRAIN))
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
			                  "file, %lld without missing data, %lld in the %s split (%s 2019-06-01)",
			                  d->path, split_name(d->split), d->catalog, (long long)nrows, (long long)nvil,
			                  (long long)nfile, (long long)nmissing, (long long)nsplit, split_name(d->split),
			                  d->split == SEVIR_TRAIN ? "before" : "from");
		else if (n * d->windows > INT32_MAX)
			rc = starnn_error(STARNN_EINVAL, "%s: too many events (%lld)", d->path, (long long)n);
		d->nevents = (int)n;
	}
	free(base);
done:
	free(buf);
	return rc;
}

/* ---- raw event files */

static int read_ids(sevir_data *d)
{
	hid_t ds;
	STARNN_CHECK(open_dataset(d, "id", &ds));
	int rc = 0;
	hsize_t dims[1];
	hid_t type = -1, mem = -1;
	char *fixed = NULL, **var = NULL;
	rc = dataset_shape(d, ds, "id", 1, dims);
	if (rc)
		goto out;
	if ((int64_t)dims[0] != d->nrows) {
		rc = starnn_error(STARNN_EINVAL, "%s: `id` has %llu entries but `vil` has %lld events", d->path,
		                  (unsigned long long)dims[0], (long long)d->nrows);
		goto out;
	}
	type = H5Dget_type(ds);
	if (H5Tget_class(type) != H5T_STRING) {
		rc = starnn_error(STARNN_EINVAL, "%s: `id` is not a string dataset", d->path);
		goto out;
	}
	d->ids = calloc((size_t)d->nrows + 1, sizeof *d->ids);
	if (!d->ids) {
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
		goto out;
	}
	mem = H5Tcopy(H5T_C_S1);
	if (H5Tis_variable_str(type) > 0) {
		H5Tset_size(mem, H5T_VARIABLE);
		var = calloc((size_t)d->nrows + 1, sizeof *var);
		if (!var || H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, var) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot read `id`", d->path);
			goto out;
		}
		for (int64_t i = 0; i < d->nrows; i++)
			d->ids[i] = strdup(var[i] ? var[i] : "");
		hid_t sp = H5Dget_space(ds);
		H5Dvlen_reclaim(mem, sp, H5P_DEFAULT, var);
		H5Sclose(sp);
	} else {
		size_t w = H5Tget_size(type);
		H5Tset_size(mem, w + 1);
		H5Tset_strpad(mem, H5T_STR_NULLTERM);
		fixed = calloc((size_t)d->nrows + 1, w + 1);
		if (!fixed || H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, fixed) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot read `id`", d->path);
			goto out;
		}
		for (int64_t i = 0; i < d->nrows; i++)
			d->ids[i] = strdup(fixed + (size_t)i * (w + 1));
	}
	for (int64_t i = 0; i < d->nrows; i++)
		if (!d->ids[i]) {
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
			goto out;
		}
out:
	free(fixed);
	free(var);
	if (mem >= 0)
		H5Tclose(mem);
	if (type >= 0)
		H5Tclose(type);
	H5Dclose(ds);
	return rc;
}

static int open_raw(sevir_data *d)
{
	STARNN_CHECK(open_dataset(d, "vil", &d->vil));
	hsize_t dims[4];
	STARNN_CHECK(dataset_shape(d, d->vil, "vil", 4, dims));
	hid_t type = H5Dget_type(d->vil);
	int ok = H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 1 && H5Tget_sign(type) == H5T_SGN_NONE;
	H5Tclose(type);
	if (!ok)
		return starnn_error(STARNN_EINVAL, "%s: `vil` must hold 8-bit unsigned integers", d->path);
	if (dims[0] < 1 || dims[1] != dims[2] || dims[1] < 1 || dims[1] > 1 << 16)
		return starnn_error(STARNN_EINVAL, "%s: `vil` is %llux%llux%llux%llu, expected N x H x W x %d with H = W",
		                    d->path, (unsigned long long)dims[0], (unsigned long long)dims[1],
		                    (unsigned long long)dims[2], (unsigned long long)dims[3], SEVIR_FRAMES);
	if (dims[3] != SEVIR_FRAMES)
		return starnn_error(STARNN_EINVAL, "%s: `vil` has %llu frames per event, expected %d", d->path,
		                    (unsigned long long)dims[3], SEVIR_FRAMES);
	d->nrows = (int64_t)dims[0];
	d->native = (int)dims[1];
	d->frames = SEVIR_FRAMES;
	STARNN_CHECK(read_ids(d));
	STARNN_CHECK(select_events(d));
	d->count = d->nevents * d->windows;
	return 0;
}

/* ---- prepared files */

static int check_values(const sevir_data *d, const char *name, int64_t sample, const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(v[i] >= 0 && v[i] <= 255))
			return starnn_error(isnan(v[i]) ? STARNN_ENUM : STARNN_EINVAL,
			                    "%s: dataset `%s`, sample %lld: value %g%s (element %zu; raw VIL must be 0..255)",
			                    d->path, name, (long long)sample, v[i], isnan(v[i]) ? " (NaN)" : "", i);
	return 0;
}

static int read_prepared_block(const sevir_data *d, hid_t ds, const char *name, int64_t row, int oy, int ox, int r,
                               int frames, float *out)
{
	hsize_t start[4] = {(hsize_t)row, (hsize_t)oy, (hsize_t)ox, 0};
	hsize_t count[4] = {1, (hsize_t)r, (hsize_t)r, (hsize_t)frames};
	hid_t fs = H5Dget_space(ds);
	hid_t ms = H5Screate_simple(4, count, NULL);
	herr_t e = fs < 0 || ms < 0 ? -1 : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
	if (e >= 0)
		e = H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, out);
	if (ms >= 0)
		H5Sclose(ms);
	if (fs >= 0)
		H5Sclose(fs);
	if (e < 0)
		return starnn_error(STARNN_EIO, "%s: cannot read `%s` sample %lld", d->path, name, (long long)row);
	return check_values(d, name, row, out, (size_t)r * r * frames);
}

static int open_prepared(sevir_data *d)
{
	STARNN_CHECK(open_dataset(d, "IN", &d->in));
	STARNN_CHECK(open_dataset(d, "OUT", &d->out));
	hsize_t di[4], dout[4];
	STARNN_CHECK(dataset_shape(d, d->in, "IN", 4, di));
	STARNN_CHECK(dataset_shape(d, d->out, "OUT", 4, dout));
	const char *names[2] = {"IN", "OUT"};
	hid_t ds[2] = {d->in, d->out};
	for (int k = 0; k < 2; k++) {
		hid_t type = H5Dget_type(ds[k]);
		int ok = H5Tget_class(type) == H5T_FLOAT && (H5Tget_size(type) == 4 || H5Tget_size(type) == 8);
		H5Tclose(type);
		if (!ok)
			return starnn_error(STARNN_EINVAL, "%s: `%s` must hold float32 or float64 values", d->path, names[k]);
	}
	if (di[1] != di[2] || di[1] < 1 || di[1] > 1 << 16 || di[0] < 1)
		return starnn_error(STARNN_EINVAL, "%s: `IN` is %llux%llux%llux%llu, expected N x H x W x %d with H = W",
		                    d->path, (unsigned long long)di[0], (unsigned long long)di[1], (unsigned long long)di[2],
		                    (unsigned long long)di[3], d->in_frames);
	if (dout[0] != di[0] || dout[1] != di[1] || dout[2] != di[2])
		return starnn_error(STARNN_EINVAL, "%s: `OUT` is %llux%llux%llux%llu but `IN` is %llux%llux%llux%llu", d->path,
		                    (unsigned long long)dout[0], (unsigned long long)dout[1], (unsigned long long)dout[2],
		                    (unsigned long long)dout[3], (unsigned long long)di[0], (unsigned long long)di[1],
		                    (unsigned long long)di[2], (unsigned long long)di[3]);
	if ((int)di[3] != d->in_frames || (int)dout[3] != d->out_frames)
		return starnn_error(STARNN_EINVAL, "%s: `IN` has %llu frames and `OUT` %llu, expected %d and %d", d->path,
		                    (unsigned long long)di[3], (unsigned long long)dout[3], d->in_frames, d->out_frames);
	if (di[0] > INT32_MAX)
		return starnn_error(STARNN_EINVAL, "%s: too many samples", d->path);
	d->nrows = (int64_t)di[0];
	d->native = (int)di[1];
	d->count = (int)d->nrows;
	d->windows = 1;
	/* small files are checked whole now (NaN, range), so that a bad file fails before training;
	 * every read checks what it reads anyway */
	size_t per = (size_t)d->native * d->native;
	if ((double)d->nrows * per * (d->in_frames + d->out_frames) * 4 <= 1024.0 * 1024 * 1024) {
		float *buf = malloc(per * (d->in_frames > d->out_frames ? d->in_frames : d->out_frames) * sizeof *buf);
		if (!buf)
			return starnn_error(STARNN_ENOMEM, "out of memory");
		int rc = 0;
		for (int64_t i = 0; i < d->nrows && !rc; i++) {
			rc = read_prepared_block(d, d->in, "IN", i, 0, 0, d->native, d->in_frames, buf);
			if (!rc)
				rc = read_prepared_block(d, d->out, "OUT", i, 0, 0, d->native, d->out_frames, buf);
		}
		free(buf);
		STARNN_CHECK(rc);
	}
	return 0;
}

int sevir_open(sevir_data **out, const struct sevir_options *o)
{
	*out = NULL;
	if (o->in_frames < 1 || o->out_frames < 1 || o->in_frames + o->out_frames > SEVIR_FRAMES)
		return starnn_error(STARNN_EINVAL, "sevir: %d input + %d output frames: each >= 1, together <= %d",
		                    o->in_frames, o->out_frames, SEVIR_FRAMES);
	if (o->size < 0)
		return starnn_error(STARNN_EINVAL, "sevir: size %d must be >= 0", o->size);
	if (o->resize != SEVIR_CROP && o->resize != SEVIR_DOWNSAMPLE)
		return starnn_error(STARNN_EINVAL, "sevir: unknown resize mode %d", (int)o->resize);
	if (o->split != SEVIR_TRAIN && o->split != SEVIR_TEST)
		return starnn_error(STARNN_EINVAL, "sevir: unknown split %d", (int)o->split);
	sevir_data *d = calloc(1, sizeof *d);
	if (!d)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	d->file = d->vil = d->in = d->out = -1;
	d->split = o->split;
	d->resize = o->resize;
	d->in_frames = o->in_frames;
	d->out_frames = o->out_frames;
	d->frames = SEVIR_FRAMES;
	/* samples of an event: inputs start every out_frames frames, as in [0:13], [12:25], [24:37] */
	d->windows = (SEVIR_FRAMES - o->in_frames - o->out_frames) / o->out_frames + 1;
	int rc = 0;
	char res[160];
	if (!o->path || !strcmp(o->path, "synthetic")) {
		d->kind = KIND_SYNTHETIC;
		if (o->synthetic_size < 8 || o->synthetic_size > 4096) {
			rc = starnn_error(STARNN_EINVAL, "sevir: synthetic size %d must be 8..4096", o->synthetic_size);
			goto fail;
		}
		if (o->synthetic_samples < 0) {
			rc = starnn_error(STARNN_EINVAL, "sevir: synthetic samples %d must be >= 0", o->synthetic_samples);
			goto fail;
		}
		d->native = o->synthetic_size;
		d->count = o->synthetic_samples ? o->synthetic_samples : o->split == SEVIR_TEST ? 64 : 256;
		d->stream = sevir_synthetic_stream(o->seed, o->split);
		d->path = strdup("synthetic");
	} else {
		d->path = strdup(o->path);
		if (!d->path) {
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
			goto fail;
		}
		struct stat st;
		if (stat(o->path, &st) != 0) {
			rc = starnn_error(STARNN_EIO, "%s: %s", o->path, strerror(errno));
			goto fail;
		}
		if (!S_ISREG(st.st_mode)) {
			rc = starnn_error(STARNN_EIO, "%s: not a regular file", o->path);
			goto fail;
		}
		htri_t is;
		H5E_BEGIN_TRY
		{
			is = H5Fis_hdf5(o->path);
			d->file = is > 0 ? H5Fopen(o->path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
		}
		H5E_END_TRY;
		if (is <= 0) {
			rc = starnn_error(STARNN_EIO, "%s: not an HDF5 file", o->path);
			goto fail;
		}
		if (d->file < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot open the HDF5 file", o->path);
			goto fail;
		}
		if (has_dataset(d->file, "vil")) {
			d->kind = KIND_RAW;
			if (o->catalog) {
				d->catalog = strdup(o->catalog);
			} else { /* CATALOG.csv beside the file */
				char *dir = strdup(o->path);
				if (dir && asprintf(&d->catalog, "%s/CATALOG.csv", dirname(dir)) < 0)
					d->catalog = NULL;
				free(dir);
			}
			if (!d->catalog) {
				rc = starnn_error(STARNN_ENOMEM, "out of memory");
				goto fail;
			}
			rc = open_raw(d);
		} else if (has_dataset(d->file, "IN") || has_dataset(d->file, "OUT")) {
			d->kind = KIND_PREPARED;
			rc = open_prepared(d);
		} else {
			rc = starnn_error(STARNN_EINVAL,
			                  "%s: neither a raw SEVIR event file (dataset `vil`) nor a prepared nowcast file "
			                  "(datasets `IN` and `OUT`)",
			                  o->path);
		}
		if (rc)
			goto fail;
	}
	d->size = o->size ? o->size : d->native;
	if (d->size > d->native) {
		rc = starnn_error(STARNN_EINVAL, "%s: size %d is larger than the data's %d", d->path, d->size, d->native);
		goto fail;
	}
	if (d->resize == SEVIR_DOWNSAMPLE && d->native % d->size) {
		rc = starnn_error(STARNN_EINVAL, "%s: cannot downsample %d to %d: the size must divide %d", d->path,
		                  d->native, d->size, d->native);
		goto fail;
	}
	if (d->count < 1) {
		rc = starnn_error(STARNN_EINVAL, "%s: no samples", d->path);
		goto fail;
	}
	describe_resize(d, res, sizeof res);
	switch (d->kind) {
	case KIND_SYNTHETIC:
		snprintf(d->desc, sizeof d->desc, "synthetic SEVIR (seed %llu, %s): %d samples, %s",
		         (unsigned long long)o->seed, split_name(d->split), d->count, res);
		break;
	case KIND_RAW:
		snprintf(d->desc, sizeof d->desc, "raw SEVIR events %s (%s, %s): %d events, %d samples, %s", d->path,
		         d->catalog, split_name(d->split), d->nevents, d->count, res);
		break;
	case KIND_PREPARED:
		snprintf(d->desc, sizeof d->desc, "prepared nowcast file %s: %d samples, %s", d->path, d->count, res);
		break;
	}
	*out = d;
	return 0;
fail:
	sevir_close(d);
	return rc;
}

int sevir_sample_source(const sevir_data *d, int i, int64_t *event, int *first_frame)
{
	if (i < 0 || i >= d->count)
		return starnn_error(STARNN_EINVAL, "%s: sample %d out of 0..%d", d->path, i, d->count - 1);
	int w = i % d->windows;
	int64_t e = i / d->windows;
	*event = d->kind == KIND_RAW ? d->rows[e] : e;
	*first_frame = d->kind == KIND_PREPARED ? 0 : w * d->out_frames;
	return 0;
}

/* ------------------------------------------------------------ reading */

/* Transposes a region read as R x R x T (HWC) into T x R x R floats, in
 * tiles of 64 pixels so that both sides stay in cache. */
#define TRANSPOSE_TILE 64
static void hwc_to_chw_u8(const uint8_t *restrict in, int rr, int stride, int frames, float *restrict out)
{
	for (int p0 = 0; p0 < rr; p0 += TRANSPOSE_TILE) {
		int p1 = p0 + TRANSPOSE_TILE < rr ? p0 + TRANSPOSE_TILE : rr;
		for (int t = 0; t < frames; t++)
			for (int p = p0; p < p1; p++)
				out[(size_t)t * rr + p] = in[(size_t)p * stride + t];
	}
}
static void hwc_to_chw_f32(const float *restrict in, int rr, int frames, float *restrict out)
{
	for (int p0 = 0; p0 < rr; p0 += TRANSPOSE_TILE) {
		int p1 = p0 + TRANSPOSE_TILE < rr ? p0 + TRANSPOSE_TILE : rr;
		for (int t = 0; t < frames; t++)
			for (int p = p0; p < p1; p++)
				out[(size_t)t * rr + p] = in[(size_t)p * frames + t];
	}
}

/* One frame of the region (R x R raw) to size x size normalised: copy or block average. */
static void emit_frame(const float *restrict region, int r, int size, float *restrict dst)
{
	if (r == size) {
		for (size_t p = 0; p < (size_t)size * size; p++)
			dst[p] = (region[p] - SEVIR_NORM_MEAN) / SEVIR_NORM_SCALE;
		return;
	}
	int f = r / size;
	float inv = 1.0f / ((float)f * f);
	for (int y = 0; y < size; y++) {
		float *drow = dst + (size_t)y * size;
		for (int x = 0; x < size; x++)
			drow[x] = 0;
		for (int dy = 0; dy < f; dy++) {
			const float *srow = region + (size_t)(y * f + dy) * r;
			for (int x = 0; x < size; x++) {
				float s = 0;
				for (int dx = 0; dx < f; dx++)
					s += srow[x * f + dx];
				drow[x] += s;
			}
		}
		for (int x = 0; x < size; x++)
			drow[x] = (drow[x] * inv - SEVIR_NORM_MEAN) / SEVIR_NORM_SCALE;
	}
}

static int read_one(sevir_data *d, int i, int slot, uint64_t crop_seed, float *x, float *y, float *region,
                    void *scratch)
{
	const int T = d->in_frames + d->out_frames;
	int r = d->native, oy = 0, ox = 0;
	if (d->size < d->native && d->resize == SEVIR_CROP) {
		r = d->size;
		int room = d->native - d->size;
		if (d->split == SEVIR_TEST) {
			oy = ox = room / 2;
		} else {
			uint64_t h = mix64(crop_seed ^ mix64((uint64_t)slot + 0x63726f70ull));
			oy = (int)((h & 0xffffffffu) % (uint64_t)(room + 1));
			ox = (int)((h >> 32) % (uint64_t)(room + 1));
		}
	}
	const size_t rr = (size_t)r * r;
	int64_t event = 0;
	int t0 = 0;
	STARNN_CHECK(sevir_sample_source(d, i, &event, &t0));
	if (d->kind == KIND_SYNTHETIC) {
		uint8_t *frames = scratch;
		const int n = d->native;
		sevir_synthetic_frames(d->stream, event, n, t0, T, frames);
		for (int t = 0; t < T; t++)
			for (int yy = 0; yy < r; yy++) {
				const uint8_t *src = frames + (size_t)t * n * n + (size_t)(oy + yy) * n + ox;
				float *dst = region + (size_t)t * rr + (size_t)yy * r;
				for (int xx = 0; xx < r; xx++)
					dst[xx] = src[xx];
			}
	} else if (d->kind == KIND_RAW) {
		/* all frames of the pixels: long contiguous runs (a partial last dimension
		 * makes HDF5 copy runs of T bytes); the transpose picks [t0, t0 + T) */
		uint8_t *buf = scratch;
		const int F = d->frames;
		hsize_t start[4] = {(hsize_t)event, (hsize_t)oy, (hsize_t)ox, 0};
		hsize_t count[4] = {1, (hsize_t)r, (hsize_t)r, (hsize_t)F};
		hid_t fs = H5Dget_space(d->vil);
		hid_t ms = H5Screate_simple(4, count, NULL);
		herr_t e = fs < 0 || ms < 0 ? -1 : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
		if (e >= 0)
			e = H5Dread(d->vil, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, buf);
		if (ms >= 0)
			H5Sclose(ms);
		if (fs >= 0)
			H5Sclose(fs);
		if (e < 0)
			return starnn_error(STARNN_EIO, "%s: cannot read `vil` row %lld", d->path, (long long)event);
		for (size_t p = 0; p < rr; p++)
			for (int t = t0; t < t0 + T; t++)
				if (buf[p * F + t] == 255)
					return starnn_error(STARNN_EINVAL,
					                    "%s: `vil` row %lld (id %s) has missing pixels (255) at frame %d, "
					                    "though %s lists pct_missing 0",
					                    d->path, (long long)event, d->ids ? d->ids[event] : "?", t, d->catalog);
		hwc_to_chw_u8(buf + t0, (int)rr, F, T, region);
	} else {
		float *buf = scratch;
		STARNN_CHECK(read_prepared_block(d, d->in, "IN", event, oy, ox, r, d->in_frames, buf));
		hwc_to_chw_f32(buf, (int)rr, d->in_frames, region);
		STARNN_CHECK(read_prepared_block(d, d->out, "OUT", event, oy, ox, r, d->out_frames, buf));
		hwc_to_chw_f32(buf, (int)rr, d->out_frames, region + (size_t)d->in_frames * rr);
	}
	const size_t ss = (size_t)d->size * d->size;
	for (int t = 0; t < T; t++) {
		float *dst = t < d->in_frames ? x + (size_t)t * ss : y + (size_t)(t - d->in_frames) * ss;
		emit_frame(region + (size_t)t * rr, r, d->size, dst);
	}
	return 0;
}

int sevir_read(sevir_data *d, const int *idx, int n, uint64_t crop_seed, float *x, float *y)
{
	if (n < 0)
		return starnn_error(STARNN_EINVAL, "sevir_read: %d samples", n);
	for (int j = 0; j < n; j++)
		if (idx[j] < 0 || idx[j] >= d->count)
			return starnn_error(STARNN_EINVAL, "sevir_read: %s: sample %d out of 0..%d", d->path, idx[j],
			                    d->count - 1);
	const int T = d->in_frames + d->out_frames;
	const size_t nn = (size_t)d->native * d->native;
	/* region: T x R x R floats; scratch: the synthetic frames (T x native^2 bytes) or the HDF5 block */
	size_t scratch_bytes = d->kind == KIND_SYNTHETIC ? nn * T : d->kind == KIND_RAW ? nn * d->frames : nn * T * sizeof(float);
	float *region = malloc(nn * T * sizeof *region);
	void *scratch = malloc(scratch_bytes);
	if (!region || !scratch) {
		free(region);
		free(scratch);
		return starnn_error(STARNN_ENOMEM, "sevir_read: out of memory");
	}
	const size_t ss = (size_t)d->size * d->size;
	int rc = 0;
	for (int j = 0; j < n && !rc; j++)
		rc = read_one(d, idx[j], j, crop_seed, x + (size_t)j * d->in_frames * ss, y + (size_t)j * d->out_frames * ss,
		              region, scratch);
	free(region);
	free(scratch);
	return rc;
}

/* ------------------------------------------------------------ loader */

static uint64_t epoch_seed(uint64_t seed, int64_t epoch)
{
	return mix64(seed ^ 0x65706f6368ull) ^ mix64((uint64_t)epoch + 0x7065726dull);
}

static void epoch_order(int count, int shuffle, uint64_t seed, int64_t epoch, int *perm)
{
	for (int i = 0; i < count; i++)
		perm[i] = i;
	if (!shuffle)
		return;
	struct rng r = {epoch_seed(seed, epoch)};
	for (int i = count - 1; i > 0; i--) { /* Fisher-Yates */
		int j = (int)rng_below(&r, (uint64_t)i + 1);
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

uint64_t sevir_batch_crop_seed(uint64_t seed, int64_t batch)
{
	return mix64(seed ^ 0x63726f7073656564ull) ^ mix64((uint64_t)batch * 0x9e3779b97f4a7c15ull + 1);
}

int sevir_batch_plan(int count, int batch, int shuffle, uint64_t seed, int64_t g, int *idx, uint64_t *crop_seed)
{
	if (batch < 1 || count / batch < 1 || g < 0)
		return starnn_error(STARNN_EINVAL, "sevir_batch_plan: batch %d of %d samples, batch number %lld", batch,
		                    count, (long long)g);
	int bpe = count / batch;
	int *perm = malloc((size_t)count * sizeof *perm);
	if (!perm)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	epoch_order(count, shuffle, seed, g / bpe, perm);
	memcpy(idx, perm + (size_t)(g % bpe) * batch, (size_t)batch * sizeof *idx);
	free(perm);
	if (crop_seed)
		*crop_seed = sevir_batch_crop_seed(seed, g);
	return 0;
}

struct loader_slot {
	float *x, *y;
	int64_t g;
	int ready, rc;
	char msg[1024];
};

struct sevir_loader {
	sevir_data *d;
	int batch, shuffle, nslots, bpe;
	uint64_t seed;
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv_free, cv_ready;
	struct loader_slot *slots;
	int64_t first_batch, next_consume;
	int held; /* slot the caller holds, or -1 */
	int stop;
	int *perm, *idx;
	int64_t perm_epoch;
};

int sevir_batches_per_epoch(const sevir_loader *l)
{
	return l->bpe;
}

/* The message without its "file:line: " prefix (it is re-raised in the caller's thread). */
static const char *strip_where(const char *m)
{
	const char *p = strstr(m, ": ");
	if (p && p - m < 200 && memchr(m, ':', (size_t)(p - m)))
		return p + 2;
	return m;
}

static void *loader_main(void *arg)
{
	sevir_loader *l = arg;
	for (int64_t g = l->first_batch;; g++) {
		struct loader_slot *s = &l->slots[g % l->nslots];
		pthread_mutex_lock(&l->mu);
		while (!l->stop && (s->ready || l->held == (int)(g % l->nslots)))
			pthread_cond_wait(&l->cv_free, &l->mu);
		int stop = l->stop;
		pthread_mutex_unlock(&l->mu);
		if (stop)
			break;
		int64_t e = g / l->bpe;
		if (e != l->perm_epoch) {
			epoch_order(l->d->count, l->shuffle, l->seed, e, l->perm);
			l->perm_epoch = e;
		}
		memcpy(l->idx, l->perm + (size_t)(g % l->bpe) * l->batch, (size_t)l->batch * sizeof *l->idx);
		int rc = sevir_read(l->d, l->idx, l->batch, sevir_batch_crop_seed(l->seed, g), s->x, s->y);
		pthread_mutex_lock(&l->mu);
		s->g = g;
		s->rc = rc;
		if (rc)
			snprintf(s->msg, sizeof s->msg, "%s", strip_where(starnn_last_error()));
		s->ready = 1;
		pthread_cond_broadcast(&l->cv_ready);
		pthread_mutex_unlock(&l->mu);
		if (rc)
			break; /* the caller gets the error at this batch */
	}
	return NULL;
}

void sevir_loader_stop(sevir_loader *l)
{
	if (!l)
		return;
	if (l->thread_started) {
		pthread_mutex_lock(&l->mu);
		l->stop = 1;
		pthread_cond_broadcast(&l->cv_free);
		pthread_cond_broadcast(&l->cv_ready);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cv_free);
		pthread_cond_destroy(&l->cv_ready);
	}
	if (l->slots)
		for (int i = 0; i < l->nslots; i++) {
			free(l->slots[i].x);
			free(l->slots[i].y);
		}
	free(l->slots);
	free(l->perm);
	free(l->idx);
	free(l);
}

int sevir_loader_start(sevir_loader **out, sevir_data *d, int batch, int shuffle, uint64_t seed, int depth,
                       int64_t first_batch)
{
	*out = NULL;
	if (batch < 1)
		return starnn_error(STARNN_EINVAL, "sevir loader: batch %d must be >= 1", batch);
	if (batch > d->count)
		return starnn_error(STARNN_EINVAL, "sevir loader: batch %d is larger than the %d samples of %s", batch,
		                    d->count, d->path);
	if (depth < 1 || depth > 64)
		return starnn_error(STARNN_EINVAL, "sevir loader: depth %d must be 1..64", depth);
	if (first_batch < 0)
		return starnn_error(STARNN_EINVAL, "sevir loader: first batch %lld must be >= 0", (long long)first_batch);
	sevir_loader *l = calloc(1, sizeof *l);
	if (!l)
		return starnn_error(STARNN_ENOMEM, "out of memory");
	l->d = d;
	l->batch = batch;
	l->shuffle = shuffle;
	l->seed = seed;
	l->bpe = d->count / batch;
	l->nslots = depth + 1; /* depth ahead, plus the one the caller holds */
	l->first_batch = l->next_consume = first_batch;
	l->held = -1;
	l->perm_epoch = -1;
	const size_t ss = (size_t)d->size * d->size;
	l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
	l->perm = malloc((size_t)d->count * sizeof *l->perm);
	l->idx = malloc((size_t)batch * sizeof *l->idx);
	int ok = l->slots && l->perm && l->idx;
	for (int i = 0; ok && i < l->nslots; i++) {
		l->slots[i].x = malloc((size_t)batch * d->in_frames * ss * sizeof(float));
		l->slots[i].y = malloc((size_t)batch * d->out_frames * ss * sizeof(float));
		ok = l->slots[i].x && l->slots[i].y;
	}
	if (!ok) {
		sevir_loader_stop(l);
		return starnn_error(STARNN_ENOMEM, "sevir loader: out of memory for %d batches of %d", l->nslots, batch);
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv_free, NULL);
	pthread_cond_init(&l->cv_ready, NULL);
	int e = pthread_create(&l->thread, NULL, loader_main, l);
	if (e) {
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cv_free);
		pthread_cond_destroy(&l->cv_ready);
		sevir_loader_stop(l);
		return starnn_error(STARNN_EINVAL, "sevir loader: cannot start the thread: %s", strerror(e));
	}
	l->thread_started = 1;
	*out = l;
	return 0;
}

int sevir_loader_next(sevir_loader *l, const float **x, const float **y, int64_t *epoch, int64_t *index_in_epoch)
{
	pthread_mutex_lock(&l->mu);
	if (l->held >= 0) { /* the caller is done with the previous batch */
		l->slots[l->held].ready = 0;
		l->held = -1;
		pthread_cond_broadcast(&l->cv_free);
	}
	int k = (int)(l->next_consume % l->nslots);
	struct loader_slot *s = &l->slots[k];
	while (!s->ready && !l->stop)
		pthread_cond_wait(&l->cv_ready, &l->mu);
	if (!s->ready) {
		pthread_mutex_unlock(&l->mu);
		return starnn_error(STARNN_ESTATE, "sevir loader: stopped");
	}
	if (s->rc) { /* stays failed: later calls report the same error */
		int rc = s->rc;
		pthread_mutex_unlock(&l->mu);
		return starnn_error(rc, "%s (batch %lld)", s->msg, (long long)s->g);
	}
	l->held = k;
	l->next_consume++;
	pthread_mutex_unlock(&l->mu);
	*x = s->x;
	*y = s->y;
	if (epoch)
		*epoch = s->g / l->bpe;
	if (index_in_epoch)
		*index_in_epoch = s->g % l->bpe;
	return 0;
}

/* ------------------------------------------------------------ writers */

struct tmpfile {
	char *path, *tmp;
};

static int tmp_create(struct tmpfile *t, const char *path)
{
	t->path = NULL;
	t->tmp = NULL;
	if (asprintf(&t->tmp, "%s.tmp.XXXXXX", path) < 0) {
		t->tmp = NULL;
		return starnn_error(STARNN_ENOMEM, "out of memory");
	}
	int fd = mkstemp(t->tmp);
	if (fd < 0) {
		int e = errno;
		free(t->tmp);
		t->tmp = NULL;
		return starnn_error(STARNN_EIO, "cannot create a temporary file beside %s: %s", path, strerror(e));
	}
	close(fd);
	t->path = strdup(path);
	if (!t->path) {
		unlink(t->tmp);
		free(t->tmp);
		t->tmp = NULL;
		return starnn_error(STARNN_ENOMEM, "out of memory");
	}
	return 0;
}

/* fsync the temporary file, rename it over the target, fsync the directory. */
static int tmp_commit(struct tmpfile *t)
{
	int fd = open(t->tmp, O_RDONLY);
	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return starnn_error(STARNN_EIO, "%s: cannot sync: %s", t->tmp, strerror(e));
	}
	close(fd);
	if (rename(t->tmp, t->path) != 0)
		return starnn_error(STARNN_EIO, "cannot rename %s to %s: %s", t->tmp, t->path, strerror(errno));
	char *dir = strdup(t->path);
	if (dir) {
		int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		free(dir);
	}
	free(t->tmp);
	t->tmp = NULL;
	return 0;
}

static void tmp_discard(struct tmpfile *t)
{
	if (t->tmp) {
		unlink(t->tmp);
		free(t->tmp);
	}
	free(t->path);
	t->tmp = t->path = NULL;
}

/* A chunked (1 x c x c x frames) dataset. Not compressed: gzip makes the
 * files 3-7x smaller but reading 3-5x slower (zlib dominated a batch read),
 * and the loader shares the cores with training. */
static hid_t create_nhwc(hid_t file, const char *name, hid_t type, int n, int size, int frames)
{
	hsize_t dims[4] = {(hsize_t)n, (hsize_t)size, (hsize_t)size, (hsize_t)frames};
	hsize_t c = size < 64 ? (hsize_t)size : 64;
	hsize_t chunk[4] = {1, c, c, (hsize_t)frames};
	hid_t sp = H5Screate_simple(4, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(dcpl, 4, chunk);
	hid_t ds = H5Dcreate2(file, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Pclose(dcpl);
	H5Sclose(sp);
	return ds;
}

static herr_t write_row(hid_t ds, int64_t row, int size, int frames, hid_t memtype, const void *buf)
{
	hsize_t start[4] = {(hsize_t)row, 0, 0, 0};
	hsize_t count[4] = {1, (hsize_t)size, (hsize_t)size, (hsize_t)frames};
	hid_t fs = H5Dget_space(ds);
	hid_t ms = H5Screate_simple(4, count, NULL);
	herr_t e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
	if (e >= 0)
		e = H5Dwrite(ds, memtype, ms, fs, H5P_DEFAULT, buf);
	H5Sclose(ms);
	H5Sclose(fs);
	return e;
}

/* Events of the raw writer: which ones have missing data (listed with pct_missing > 0). */
static int event_has_missing(int e, int nevents)
{
	return nevents >= 4 && e % 5 == 3;
}

static void event_time(int e, int nevents, uint64_t seed, char *buf, size_t n, int *year)
{
	/* spread over 2018-01-01 .. 2019-12-31 in event order (2019-06-01 is 70% of the way) */
	struct tm base = {.tm_year = 118, .tm_mon = 0, .tm_mday = 1};
	time_t t0 = timegm(&base);
	struct rng r = {mix64(seed ^ 0x74696d65ull) ^ mix64((uint64_t)e)};
	int day = (int)((e + 0.5) / nevents * 730);
	int minute = (int)rng_below(&r, 24 * 12) * 5;
	time_t t = t0 + (time_t)day * 86400 + (time_t)minute * 60;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	*year = tm.tm_year + 1900;
}

static int write_catalog(const char *catalog_path, const char *h5_base, int nevents, uint64_t seed,
                         const uint8_t *dmin, const uint8_t *dmax, const double *missing, int size)
{
	struct tmpfile t;
	STARNN_CHECK(tmp_create(&t, catalog_path));
	FILE *f = fopen(t.tmp, "w");
	if (!f) {
		int e = errno;
		tmp_discard(&t);
		return starnn_error(STARNN_EIO, "cannot write %s: %s", catalog_path, strerror(e));
	}
	char offsets[49 * 6];
	size_t o = 0;
	for (int k = 0; k < SEVIR_FRAMES; k++)
		o += (size_t)snprintf(offsets + o, sizeof offsets - o, "%s%d", k ? ":" : "", -120 + 5 * k);
	const char *proj = "+proj=laea +lat_0=38 +lon_0=-98 +units=m +a=6370997.0 +ellps=sphere ";
	const char *decoy = strcmp(h5_base, "SEVIR_VIL_RANDOMEVENTS_2019_0501_0831.h5")
	                    ? "SEVIR_VIL_RANDOMEVENTS_2019_0501_0831.h5" : "SEVIR_VIL_RANDOMEVENTS_2018_0501_0831.h5";
	fprintf(f, "id,file_name,file_index,img_type,time_utc,minute_offsets,episode_id,event_id,event_type,llcrnrlat,"
	           "llcrnrlon,urcrnrlat,urcrnrlon,proj,size_x,size_y,height_m,width_m,data_min,data_max,pct_missing\n");
	static const char *types[] = {"Hail", "Thunderstorm Wind", "\"Thunderstorm Wind, Hail\"", "Flash Flood",
	                              "Heavy Rain", "Tornado"};
	for (int e = 0; e < nevents; e++) {
		struct rng r = {mix64(seed ^ 0x636174616c6f67ull) ^ mix64((uint64_t)e)};
		char when[32];
		int year;
		event_time(e, nevents, seed, when, sizeof when, &year);
		double lat = rng_uniform(&r, 28, 46), lon = rng_uniform(&r, -110, -75);
		double dlat = size * 1000 / 111000.0, dlon = dlat / cos(lat * M_PI / 180);
		long episode = 120000 + (long)rng_below(&r, 20000), event = 750000 + (long)rng_below(&r, 100000);
		const char *type = types[rng_below(&r, 6)];
		char geo[512];
		snprintf(geo, sizeof geo, "%ld.0,%ld.0,%s,%.6f,%.6f,%.6f,%.6f,%s,%d,%d,%d.0,%d.0", episode, event, type, lat,
		         lon, lat + dlat, lon + dlon, proj, size, size, size * 1000, size * 1000);
		/* the other image types of the event, in their own files: never selected */
		fprintf(f, "S%d,ir069/%d/SEVIR_IR069_STORMEVENTS_%d_0101_0630.h5,%d,ir069,%s,%s,%s,-7000,-1000,0.0\n",
		        800000 + e, year, year, e, when, offsets, geo);
		fprintf(f, "S%d,vil/%d/%s,%d,vil,%s,%s,%s,%d,%d,%.6f\n", 800000 + e, year, h5_base, e, when, offsets,
		        geo, dmin[e], dmax[e], missing[e]);
		fprintf(f, "S%d,ir107/%d/SEVIR_IR107_STORMEVENTS_%d_0101_0630.h5,%d,ir107,%s,%s,%s,-6500,-900,0.0\n",
		        800000 + e, year, year, e, when, offsets, geo);
		if (e % 2 == 0)
			fprintf(f, "S%d,lght/%d/SEVIR_LGHT_ALLEVENTS_%d_0101_0701.h5,%d,lght,%s,%s,%s,0,0,0.0\n", 800000 + e,
			        year, year, e, when, offsets, geo);
		if (e % 4 == 1) /* a VIL event of another file */
			fprintf(f, "R%06d,vil/2019/%s,%d,vil,%s,%s,%s,0,200,0.0\n", 900000 + e, decoy, e, when, offsets, geo);
	}
	int bad = fflush(f) != 0 || ferror(f);
	bad |= fclose(f) != 0;
	if (bad) {
		tmp_discard(&t);
		return starnn_error(STARNN_EIO, "cannot write %s", catalog_path);
	}
	int rc = tmp_commit(&t);
	tmp_discard(&t);
	return rc;
}

int sevir_write_raw(const char *h5_path, const char *catalog_path, int nevents, int size, uint64_t seed)
{
	if (nevents < 1 || size < 8 || size > 4096)
		return starnn_error(STARNN_EINVAL, "sevir_write_raw: %d events of %dx%d: need >= 1 events, size 8..4096",
		                    nevents, size, size);
	char *catalog_alloc = NULL;
	if (!catalog_path) {
		char *dir = strdup(h5_path);
		if (!dir || asprintf(&catalog_alloc, "%s/CATALOG.csv", dirname(dir)) < 0) {
			free(dir);
			return starnn_error(STARNN_ENOMEM, "out of memory");
		}
		free(dir);
		catalog_path = catalog_alloc;
	}
	const size_t nn = (size_t)size * size;
	uint8_t *frames = malloc(nn * SEVIR_FRAMES), *hwc = malloc(nn * SEVIR_FRAMES);
	uint8_t *dmin = malloc((size_t)nevents), *dmax = malloc((size_t)nevents);
	double *missing = malloc((size_t)nevents * sizeof *missing);
	char *ids = malloc((size_t)nevents * 16);
	struct tmpfile t = {0};
	hid_t file = -1, vil = -1, id = -1, st = -1, sp = -1;
	int rc = 0;
	if (!frames || !hwc || !dmin || !dmax || !missing || !ids) {
		rc = starnn_error(STARNN_ENOMEM, "sevir_write_raw: out of memory");
		goto out;
	}
	rc = tmp_create(&t, h5_path);
	if (rc)
		goto out;
	H5E_BEGIN_TRY
	{
		file = H5Fcreate(t.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		vil = file < 0 ? -1 : create_nhwc(file, "vil", H5T_STD_U8LE, nevents, size, SEVIR_FRAMES);
	}
	H5E_END_TRY;
	if (vil < 0) {
		rc = starnn_error(STARNN_EIO, "%s: cannot create the HDF5 file", h5_path);
		goto out;
	}
	for (int e = 0; e < nevents; e++) {
		sevir_synthetic_frames(seed, e, size, 0, SEVIR_FRAMES, frames);
		if (event_has_missing(e, nevents)) { /* a radar outage: a corner missing for the first hour */
			int h = size / 4;
			for (int f = 0; f < 12; f++)
				for (int yy = 0; yy < h; yy++)
					memset(frames + f * nn + (size_t)yy * size, 255, (size_t)h);
			missing[e] = 100.0 * 12 * h * h / ((double)nn * SEVIR_FRAMES);
		} else {
			missing[e] = 0;
		}
		uint8_t lo = 255, hi = 0;
		for (size_t p = 0; p < nn; p++)
			for (int f = 0; f < SEVIR_FRAMES; f++) {
				uint8_t v = frames[(size_t)f * nn + p];
				hwc[p * SEVIR_FRAMES + f] = v;
				if (v != 255) {
					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
				}
			}
		dmin[e] = lo;
		dmax[e] = hi;
		if (write_row(vil, e, size, SEVIR_FRAMES, H5T_NATIVE_UCHAR, hwc) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot write `vil` event %d", h5_path, e);
			goto out;
		}
		snprintf(ids + (size_t)e * 16, 16, "S%d", 800000 + e);
	}
	hsize_t n = (hsize_t)nevents;
	st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, 8);
	H5Tset_strpad(st, H5T_STR_NULLPAD);
	sp = H5Screate_simple(1, &n, NULL);
	id = H5Dcreate2(file, "id", st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	{ /* the ids as 8 bytes each, NUL-padded */
		char *packed = calloc((size_t)nevents, 8);
		if (!packed) {
			rc = starnn_error(STARNN_ENOMEM, "out of memory");
			goto out;
		}
		for (int e = 0; e < nevents; e++)
			memcpy(packed + (size_t)e * 8, ids + (size_t)e * 16, strnlen(ids + (size_t)e * 16, 8));
		herr_t w = id < 0 ? -1 : H5Dwrite(id, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed);
		free(packed);
		if (w < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot write `id`", h5_path);
			goto out;
		}
	}
	H5Dclose(id);
	id = -1;
	H5Dclose(vil);
	vil = -1;
	if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) {
		file = -1;
		rc = starnn_error(STARNN_EIO, "%s: cannot close the HDF5 file", h5_path);
		goto out;
	}
	file = -1;
	rc = tmp_commit(&t);
	if (rc)
		goto out;
	char *base = strdup(h5_path);
	if (!base) {
		rc = starnn_error(STARNN_ENOMEM, "out of memory");
		goto out;
	}
	rc = write_catalog(catalog_path, basename(base), nevents, seed, dmin, dmax, missing, size);
	free(base);
out:
	H5E_BEGIN_TRY
	{
		if (id >= 0)
			H5Dclose(id);
		if (vil >= 0)
			H5Dclose(vil);
		if (sp >= 0)
			H5Sclose(sp);
		if (st >= 0)
			H5Tclose(st);
		if (file >= 0)
			H5Fclose(file);
	}
	H5E_END_TRY;
	tmp_discard(&t);
	free(frames);
	free(hwc);
	free(dmin);
	free(dmax);
	free(missing);
	free(ids);
	free(catalog_alloc);
	return rc;
}

int sevir_write_prepared(const char *h5_path, int nsamples, int size, uint64_t seed)
{
	if (nsamples < 1 || size < 8 || size > 4096)
		return starnn_error(STARNN_EINVAL,
		                    "sevir_write_prepared: %d samples of %dx%d: need >= 1 samples, size 8..4096", nsamples,
		                    size, size);
	const size_t nn = (size_t)size * size;
	const int T = SEVIR_IN_FRAMES + SEVIR_OUT_FRAMES;
	uint8_t *frames = malloc(nn * T);
	float *in = malloc(nn * SEVIR_IN_FRAMES * sizeof *in), *out = malloc(nn * SEVIR_OUT_FRAMES * sizeof *out);
	struct tmpfile t = {0};
	hid_t file = -1, dsi = -1, dso = -1;
	int rc = 0;
	if (!frames || !in || !out) {
		rc = starnn_error(STARNN_ENOMEM, "sevir_write_prepared: out of memory");
		goto out;
	}
	rc = tmp_create(&t, h5_path);
	if (rc)
		goto out;
	H5E_BEGIN_TRY
	{
		file = H5Fcreate(t.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		dsi = file < 0 ? -1 : create_nhwc(file, "IN", H5T_IEEE_F32LE, nsamples, size, SEVIR_IN_FRAMES);
		dso = file < 0 ? -1 : create_nhwc(file, "OUT", H5T_IEEE_F32LE, nsamples, size, SEVIR_OUT_FRAMES);
	}
	H5E_END_TRY;
	if (dsi < 0 || dso < 0) {
		rc = starnn_error(STARNN_EIO, "%s: cannot create the HDF5 file", h5_path);
		goto out;
	}
	const int windows = (SEVIR_FRAMES - T) / SEVIR_OUT_FRAMES + 1;
	for (int i = 0; i < nsamples; i++) {
		sevir_synthetic_frames(seed, i / windows, size, (i % windows) * SEVIR_OUT_FRAMES, T, frames);
		for (size_t p = 0; p < nn; p++) {
			for (int f = 0; f < SEVIR_IN_FRAMES; f++)
				in[p * SEVIR_IN_FRAMES + f] = frames[(size_t)f * nn + p];
			for (int f = 0; f < SEVIR_OUT_FRAMES; f++)
				out[p * SEVIR_OUT_FRAMES + f] = frames[(size_t)(SEVIR_IN_FRAMES + f) * nn + p];
		}
		if (write_row(dsi, i, size, SEVIR_IN_FRAMES, H5T_NATIVE_FLOAT, in) < 0 ||
		    write_row(dso, i, size, SEVIR_OUT_FRAMES, H5T_NATIVE_FLOAT, out) < 0) {
			rc = starnn_error(STARNN_EIO, "%s: cannot write sample %d", h5_path, i);
			goto out;
		}
	}
	H5Dclose(dsi);
	H5Dclose(dso);
	dsi = dso = -1;
	if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) {
		file = -1;
		rc = starnn_error(STARNN_EIO, "%s: cannot close the HDF5 file", h5_path);
		goto out;
	}
	file = -1;
	rc = tmp_commit(&t);
out:
	H5E_BEGIN_TRY
	{
		if (dsi >= 0)
			H5Dclose(dsi);
		if (dso >= 0)
			H5Dclose(dso);
		if (file >= 0)
			H5Fclose(file);
	}
	H5E_END_TRY;
	tmp_discard(&t);
	free(frames);
	free(in);
	free(out);
	return rc;
}
