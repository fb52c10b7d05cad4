/* Nowcast verification scores (see metrics.h).
 *
 * Conventions (those of the public SEVIR challenge code):
 *   - an event is a value >= threshold (raw VIL units);
 *   - MSE / MAE in raw units: the normalised error times 47.54 (squared for
 *     MSE), accumulated in double;
 *   - scores with an empty denominator are NaN (never 0 or 1 by smoothing);
 *   - the mean CSI is taken over the thresholds at which the truth has at
 *     least one event (H + M > 0), so that model and persistence are
 *     averaged over the same thresholds; NaN if there is none.
 *
 * Thresholds are compared in normalised units against
 * sevir_normalise(threshold): the data are normalised with that function,
 * which is monotone, so an integer raw value v gives an event exactly when
 * v >= threshold (denormalising instead would turn 16 into 15.999999). */
#include <config.h>

#include <math.h>
#include <string.h>

#include "models/sevir/metrics.h"

/* The thresholds of the metrics (declared in sevir.h; defined here, their
 * user: sevir.c must not define them). */

void metrics_init(struct nowcast_metrics *m, int lead_times)
{
	memset(m, 0, sizeof *m);
	if (lead_times < 0)
		lead_times = 0;
	m->batch_lead_times = lead_times;
	if (lead_times > SEVIR_OUT_FRAMES)
		lead_times = SEVIR_OUT_FRAMES;
	m->model.lead_times = lead_times;
	m->persistence.lead_times = lead_times;
}

/* Copies the sums of s out to *out (advanced), or in from *in. */
static void scores_io(struct nowcast_scores *s, double **out, const double **in)
{
	for (int l = 0; l < SEVIR_OUT_FRAMES; l++) {
		double *d[4] = {NULL, &s->sse[l], &s->sae[l], &s->sse_norm[l]};
		for (int k = 0; k < 4; k++) {
			if (out)
				*(*out)++ = k ? *d[k] : (double)s->pixels[l];
			else if (k)
				*d[k] = *(*in)++;
			else
				s->pixels[l] = (int64_t) * (*in)++;
		}
		for (int t = 0; t < SEVIR_NTHRESHOLDS; t++) {
			int64_t *c[3] = {&s->hits[l][t], &s->misses[l][t], &s->false_alarms[l][t]};
			for (int k = 0; k < 3; k++) {
				if (out)
					*(*out)++ = (double)*c[k];
				else
					*c[k] = (int64_t) * (*in)++;
			}
		}
	}
}

void metrics_pack(const struct nowcast_metrics *m, double *v)
{
	struct nowcast_metrics c = *m;
	scores_io(&c.model, &v, NULL);
	scores_io(&c.persistence, &v, NULL);
}

void metrics_unpack(struct nowcast_metrics *m, const double *v)
{
	scores_io(&m->model, NULL, &v);
	scores_io(&m->persistence, NULL, &v);
}

/* Pixels are processed in blocks of LANES elements whose float partial sums
 * stay in LANES independent accumulators (vectorisable without reordering
 * a single sum), flushed into double every BLOCK pixels. */
#define LANES 16
#define BLOCK 2048

/* Sum of d^2 and |d| of d = p - y over n elements. */
static void error_sums(const float *restrict y, const float *restrict p, int64_t n, double *sse, double *sae)
{
	double s2 = 0, s1 = 0;
	for (int64_t b0 = 0; b0 < n; b0 += BLOCK) {
		int64_t len = n - b0 < BLOCK ? n - b0 : BLOCK;
		int64_t full = len / LANES * LANES;
		float a2[LANES] = {0}, a1[LANES] = {0};
		const float *yb = y + b0, *pb = p + b0;
		for (int64_t i = 0; i < full; i += LANES)
			for (int j = 0; j < LANES; j++) {
				float d = pb[i + j] - yb[i + j];
				a2[j] += d * d;
				a1[j] += fabsf(d);
			}
		for (int64_t i = full; i < len; i++) {
			float d = pb[i] - yb[i];
			a2[0] += d * d;
			a1[0] += fabsf(d);
		}
		for (int j = 0; j < LANES; j++) {
			s2 += a2[j];
			s1 += a1[j];
		}
	}
	*sse += s2;
	*sae += s1;
}

/* Event counts at normalised threshold th over n elements of the truth y
 * and of two forecasts p and q: events of y, p, q, and hits of p and q
 * (integer sums: vectorisable as they are). */
static void contingency(const float *restrict y, const float *restrict p, const float *restrict q, int64_t n,
                        float th, int64_t c[5])
{
	for (int64_t b0 = 0; b0 < n; b0 += BLOCK) {
		int64_t len = n - b0 < BLOCK ? n - b0 : BLOCK;
		int32_t ny = 0, np = 0, nq = 0, hp = 0, hq = 0;
		const float *yb = y + b0, *pb = p + b0, *qb = q + b0;
		for (int64_t i = 0; i < len; i++) {
			int32_t t = yb[i] >= th, f = pb[i] >= th, g = qb[i] >= th;
			ny += t;
			np += f;
			nq += g;
			hp += t & f;
			hq += t & g;
		}
		c[0] += ny;
		c[1] += np;
		c[2] += nq;
		c[3] += hp;
		c[4] += hq;
	}
}

static void add_counts(struct nowcast_scores *s, int t, int k, int64_t events, int64_t forecast, int64_t hits)
{
	s->hits[t][k] += hits;
	s->misses[t][k] += events - hits;
	s->false_alarms[t][k] += forecast - hits;
}

static void add_errors(struct nowcast_scores *s, int t, const float *y, const float *f, int64_t hw)
{
	double sse = 0, sae = 0;
	error_sums(y, f, hw, &sse, &sae);
	s->pixels[t] += hw;
	s->sse_norm[t] += sse;
	s->sse[t] += sse * ((double)SEVIR_NORM_SCALE * SEVIR_NORM_SCALE);
	s->sae[t] += sae * SEVIR_NORM_SCALE;
}

void metrics_add(struct nowcast_metrics *m, const float *x, int in_frames, const float *y, const float *pred, int n,
                 int64_t hw)
{
	int lead = m->model.lead_times, stride = m->batch_lead_times;
	float th[SEVIR_NTHRESHOLDS];
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++)
		th[k] = sevir_normalise(sevir_thresholds[k]);
	for (int b = 0; b < n; b++) {
		const float *last = x + ((int64_t)b * in_frames + in_frames - 1) * hw;
		for (int t = 0; t < lead; t++) {
			const float *yt = y + ((int64_t)b * stride + t) * hw;
			const float *pt = pred + ((int64_t)b * stride + t) * hw;
			add_errors(&m->model, t, yt, pt, hw);
			add_errors(&m->persistence, t, yt, last, hw);
			for (int k = 0; k < SEVIR_NTHRESHOLDS; k++) {
				int64_t c[5] = {0};
				contingency(yt, pt, last, hw, th[k], c);
				add_counts(&m->model, t, k, c[0], c[1], c[3]);
				add_counts(&m->persistence, t, k, c[0], c[2], c[4]);
			}
		}
	}
}

/* ------------------------------------------------------------ summaries */

static int lead_range(const struct nowcast_scores *s, int lead, int *t0, int *t1)
{
	if (lead < 0) {
		*t0 = 0;
		*t1 = s->lead_times;
		return 1;
	}
	if (lead >= s->lead_times)
		return 0;
	*t0 = lead;
	*t1 = lead + 1;
	return 1;
}

static double ratio(double num, double den)
{
	return den > 0 ? num / den : NAN;
}

static double mean_of(const struct nowcast_scores *s, const double *sums, int lead)
{
	int t0, t1;
	if (!lead_range(s, lead, &t0, &t1))
		return NAN;
	double sum = 0, px = 0;
	for (int t = t0; t < t1; t++) {
		sum += sums[t];
		px += (double)s->pixels[t];
	}
	return ratio(sum, px);
}

double scores_mse(const struct nowcast_scores *s, int lead)
{
	return mean_of(s, s->sse, lead);
}

double scores_mse_norm(const struct nowcast_scores *s, int lead)
{
	return mean_of(s, s->sse_norm, lead);
}

double scores_mae(const struct nowcast_scores *s, int lead)
{
	return mean_of(s, s->sae, lead);
}

/* Hits, misses, false alarms at threshold k over one lead (or all). */
static int counts(const struct nowcast_scores *s, int lead, int k, double *h, double *mi, double *fa)
{
	int t0, t1;
	*h = *mi = *fa = 0;
	if (k < 0 || k >= SEVIR_NTHRESHOLDS || !lead_range(s, lead, &t0, &t1))
		return 0;
	for (int t = t0; t < t1; t++) {
		*h += (double)s->hits[t][k];
		*mi += (double)s->misses[t][k];
		*fa += (double)s->false_alarms[t][k];
	}
	return 1;
}

double scores_csi(const struct nowcast_scores *s, int lead, int threshold)
{
	double h, mi, fa;
	if (!counts(s, lead, threshold, &h, &mi, &fa))
		return NAN;
	return ratio(h, h + mi + fa);
}

double scores_pod(const struct nowcast_scores *s, int lead, int threshold)
{
	double h, mi, fa;
	if (!counts(s, lead, threshold, &h, &mi, &fa))
		return NAN;
	return ratio(h, h + mi);
}

double scores_sr(const struct nowcast_scores *s, int lead, int threshold)
{
	double h, mi, fa;
	if (!counts(s, lead, threshold, &h, &mi, &fa))
		return NAN;
	return ratio(h, h + fa);
}

double scores_bias(const struct nowcast_scores *s, int lead, int threshold)
{
	double h, mi, fa;
	if (!counts(s, lead, threshold, &h, &mi, &fa))
		return NAN;
	return ratio(h + fa, h + mi);
}

/* Mean CSI over the thresholds at which the truth has events. */
static double mean_csi_at(const struct nowcast_scores *s, int lead)
{
	double sum = 0;
	int used = 0;
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++) {
		double h, mi, fa;
		if (!counts(s, lead, k, &h, &mi, &fa) || h + mi <= 0)
			continue;
		sum += h / (h + mi + fa);
		used++;
	}
	return used ? sum / used : NAN;
}

double scores_mean_csi(const struct nowcast_scores *s)
{
	return mean_csi_at(s, -1);
}

/* --------------------------------------------------------------- output */

/* A number in a fixed-width field; NaN as "-". */
static void num(FILE *f, int width, int prec, double v)
{
	if (isfinite(v))
		fprintf(f, " %*.*f", width, prec, v);
	else
		fprintf(f, " %*s", width, "-");
}

static void lead_label(FILE *f, int lead)
{
	char buf[16];
	if (lead < 0)
		snprintf(buf, sizeof buf, "all");
	else
		snprintf(buf, sizeof buf, "+%d min", 5 * (lead + 1));
	fprintf(f, "%-8s", buf);
}

void metrics_print(const struct nowcast_metrics *m, FILE *f)
{
	const struct nowcast_scores *a = &m->model, *p = &m->persistence;
	int lead = a->lead_times;

	/* Rows: each lead time, then "all" (lead -1: pooled over lead times). */
	fprintf(f, "Nowcast scores (raw VIL units, %lld pixels per lead time): model | persistence\n",
	        (long long)(lead ? a->pixels[0] : 0));
	fprintf(f, "%-8s  ------- MSE -------  ----- MAE -----  -- mean CSI -\n", "");
	fprintf(f, "%-8s %9s %9s  %7s %7s  %6s %6s\n", "lead", "model", "pers.", "model", "pers.", "model", "pers.");
	for (int t = 0; t <= lead; t++) {
		int l = t < lead ? t : -1;
		lead_label(f, l);
		num(f, 9, 2, scores_mse(a, l));
		num(f, 9, 2, scores_mse(p, l));
		fputc(' ', f);
		num(f, 7, 3, scores_mae(a, l));
		num(f, 7, 3, scores_mae(p, l));
		fputc(' ', f);
		num(f, 6, 4, mean_csi_at(a, l));
		num(f, 6, 4, mean_csi_at(p, l));
		fputc('\n', f);
	}

	fprintf(f, "\nCSI at VIL >= threshold: model | persistence\n%-8s", "lead");
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++)
		fprintf(f, "  %5s %5.0f", "", sevir_thresholds[k]);
	fputc('\n', f);
	for (int t = 0; t <= lead; t++) {
		int l = t < lead ? t : -1;
		lead_label(f, l);
		for (int k = 0; k < SEVIR_NTHRESHOLDS; k++) {
			fputc(' ', f);
			num(f, 5, 3, scores_csi(a, l, k));
			num(f, 5, 3, scores_csi(p, l, k));
		}
		fputc('\n', f);
	}

	fprintf(f, "\nAll lead times pooled: model | persistence\n%-8s %13s %13s %13s %13s\n", "VIL >=", "CSI",
	        "POD", "SR", "bias");
	double (*const fn[4])(const struct nowcast_scores *, int, int) = {scores_csi, scores_pod, scores_sr,
	                                                                  scores_bias};
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++) {
		fprintf(f, "%-8.0f", sevir_thresholds[k]);
		for (int j = 0; j < 4; j++) {
			num(f, 6, 3, fn[j](a, -1, k));
			num(f, 6, 3, fn[j](p, -1, k));
		}
		fputc('\n', f);
	}
	fputs("(mean CSI: over the thresholds the truth reaches; '-': undefined, no event)\n", f);
}

/* JSON has no NaN: undefined scores are null. */
static void jnum(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
	else
		fputs("null", f);
}

static void jkey(FILE *f, const char *key, double v)
{
	fprintf(f, "\"%s\":", key);
	jnum(f, v);
}

static void jarray(FILE *f, const char *key, const struct nowcast_scores *s, int lead,
                   double (*fn)(const struct nowcast_scores *, int, int))
{
	fprintf(f, "\"%s\":[", key);
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++) {
		if (k)
			fputc(',', f);
		jnum(f, fn(s, lead, k));
	}
	fputc(']', f);
}

static void json_scores(const struct nowcast_scores *s, FILE *f)
{
	jkey(f, "mse", scores_mse(s, -1));
	fputc(',', f);
	jkey(f, "mae", scores_mae(s, -1));
	fputc(',', f);
	jkey(f, "mse_norm", scores_mse_norm(s, -1));
	fputc(',', f);
	jarray(f, "csi", s, -1, scores_csi);
	fputc(',', f);
	jkey(f, "mean_csi", scores_mean_csi(s));
	fputc(',', f);
	jarray(f, "pod", s, -1, scores_pod);
	fputc(',', f);
	jarray(f, "sr", s, -1, scores_sr);
	fputc(',', f);
	jarray(f, "bias", s, -1, scores_bias);
	fputs(",\"per_lead\":[", f);
	for (int t = 0; t < s->lead_times; t++) {
		fputs(t ? ",{" : "{", f);
		jkey(f, "mse", scores_mse(s, t));
		fputc(',', f);
		jkey(f, "mae", scores_mae(s, t));
		fputc(',', f);
		jarray(f, "csi", s, t, scores_csi);
		fputc(',', f);
		jkey(f, "mean_csi", mean_csi_at(s, t));
		fputc('}', f);
	}
	fputc(']', f);
}

void metrics_json(const struct nowcast_metrics *m, FILE *f)
{
	fputs("{\"thresholds\":[", f);
	for (int k = 0; k < SEVIR_NTHRESHOLDS; k++)
		fprintf(f, k ? ",%g" : "%g", sevir_thresholds[k]);
	fputs("],", f);
	json_scores(&m->model, f);
	fputs(",\"persistence\":{", f);
	json_scores(&m->persistence, f);
	fputs("}}", f);
}
