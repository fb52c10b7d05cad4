/* Nowcast verification: per lead time MSE and MAE (raw VIL units unless
 * said), and at the six VIL thresholds (16, 74, 133, 160, 181, 219) the
 * contingency counts giving CSI = H / (H + M + F), POD = H / (H + M),
 * success ratio = H / (H + F), bias = (H + F) / (H + M); the same for the
 * persistence forecast (the last input frame repeated). */
#ifndef STARNN_SEVIR_METRICS_H
#define STARNN_SEVIR_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "models/sevir/sevir.h"

struct nowcast_scores {
	int lead_times;
	int64_t pixels[SEVIR_OUT_FRAMES];           /* per lead time */
	double sse[SEVIR_OUT_FRAMES], sae[SEVIR_OUT_FRAMES];   /* raw units */
	double sse_norm[SEVIR_OUT_FRAMES];          /* normalised units (the training loss's) */
	int64_t hits[SEVIR_OUT_FRAMES][SEVIR_NTHRESHOLDS];
	int64_t misses[SEVIR_OUT_FRAMES][SEVIR_NTHRESHOLDS];
	int64_t false_alarms[SEVIR_OUT_FRAMES][SEVIR_NTHRESHOLDS];
};

struct nowcast_metrics {
	struct nowcast_scores model, persistence;
	/* Extension: lead times per sample in the batches given to
	 * metrics_add; beyond SEVIR_OUT_FRAMES only the first
	 * SEVIR_OUT_FRAMES are scored (lead_times above). */
	int batch_lead_times;
};

void metrics_init(struct nowcast_metrics *m, int lead_times);
/* Adds a batch: x (n x in_frames x HW), y and pred (n x lead_times x HW),
 * all normalised. Persistence uses x's last frame. */
void metrics_add(struct nowcast_metrics *m, const float *x, int in_frames, const float *y, const float *pred, int n,
                 int64_t hw);
/* The sums of m (model and persistence: pixels, errors, contingency
 * counts) as METRICS_NSUMS doubles, and back: metrics of several parts
 * of a data set (e.g. one per rank) combine by adding these element by
 * element. Counts are exact in doubles below 2^53. */
#define SCORES_NSUMS (SEVIR_OUT_FRAMES * (4 + 3 * SEVIR_NTHRESHOLDS))
#define METRICS_NSUMS (2 * SCORES_NSUMS)
void metrics_pack(const struct nowcast_metrics *m, double *v);
void metrics_unpack(struct nowcast_metrics *m, const double *v);
/* Summary values of one forecast (model or persistence). */
double scores_mse(const struct nowcast_scores *s, int lead);       /* lead -1: all leads */
double scores_mse_norm(const struct nowcast_scores *s, int lead);
double scores_mae(const struct nowcast_scores *s, int lead);
double scores_csi(const struct nowcast_scores *s, int lead, int threshold); /* lead -1: pooled over leads */
double scores_pod(const struct nowcast_scores *s, int lead, int threshold);
double scores_sr(const struct nowcast_scores *s, int lead, int threshold);
double scores_bias(const struct nowcast_scores *s, int lead, int threshold);
double scores_mean_csi(const struct nowcast_scores *s); /* mean over thresholds of the pooled CSI */
/* Human-readable table: per lead time and averaged, model beside persistence. */
void metrics_print(const struct nowcast_metrics *m, FILE *f);
/* One JSON object (no newline): {"mse":..,"mae":..,"csi":[..6],"mean_csi":..,
 * "per_lead":[{"mse":..,"mae":..,"csi":[..]},..],"persistence":{...same}} */
void metrics_json(const struct nowcast_metrics *m, FILE *f);

#endif
