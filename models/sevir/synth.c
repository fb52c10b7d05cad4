/* The synthetic SEVIR generator (see sevir.h): storm cells carried by a
 * flow, rendered as uint8-like VIL frames, deterministic by (stream, event,
 * size). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/sevir/internal.h"

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
