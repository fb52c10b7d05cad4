/* Forecast outputs of models/unet predict: an HDF5 file in the prepared
 * layout (`OUT`, N x H x W x lead_times float32 raw VIL values, chunked
 * per sample; no `IN`: there is no call for it yet) and PNG pictures in a
 * VIL colour map. */
#ifndef STARNN_SEVIR_OUTPUT_H
#define STARNN_SEVIR_OUTPUT_H

#include <stdint.h>

/* Streams forecasts into an HDF5 file written atomically: create, append
 * batches (NCHW normalised, converted to NHWC raw), commit (fsync, rename)
 * or abort (the temporary file is removed).
 * forecast_commit and forecast_abort both free the handle, whatever the
 * outcome: after a failed commit the temporary file is already removed
 * (do not call forecast_abort then). Commit refuses a file that did not
 * get all `nsamples` samples, or after a failed append. An append refuses
 * NaN / Inf forecasts (STARNN_ENUM). */
typedef struct forecast_file forecast_file;
int forecast_create(forecast_file **out, const char *path, int nsamples, int lead_times, int h, int w);
int forecast_append(forecast_file *f, const float *pred, int n);
int forecast_commit(forecast_file *f);
void forecast_abort(forecast_file *f);

/* Writes DIR/sample<i>_lead<t>.png for each lead time: three panels side
 * by side (last input frame, truth, forecast) in the SEVIR VIL colour map,
 * with a colour bar; normalised inputs. Creates DIR if needed. */
int forecast_png(const char *dir, int sample, const float *x_last, const float *y, const float *pred,
                 int lead_times, int h, int w);

/* Extension (additive): the colour of a raw VIL value in that map
 * (NaN: black; < 16: grey; boundaries 16 31 59 74 100 133 160 181 219
 * start the next colour; >= 219: magenta). */
void forecast_vil_rgb(float raw, unsigned char rgb[3]);

#endif
