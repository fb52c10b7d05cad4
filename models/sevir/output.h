/* Forecast outputs of models/unet predict: an HDF5 file in the prepared
 * layout (`OUT`, N x H x W x lead_times float32 raw VIL values, chunked
 * per sample; no `IN`: there is no call for it yet) and PNG pictures in a
 * VIL colour map, one panel per sample. */
#ifndef STARNN_SEVIR_OUTPUT_H
#define STARNN_SEVIR_OUTPUT_H

#include <stdint.h>

/* Streams forecasts into an HDF5 file written atomically: create, append
 * batches (NCHW normalised, converted to NHWC raw and clipped to the valid
 * range [0, 254]: sevir_forecast_clip), commit (fsync, rename) or abort
 * (the temporary file is removed).
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

/* Writes DIR/sample<i>.png: one panel per sample, as forecast figures of
 * nowcasting papers are drawn. Three rows of frames in the SEVIR VIL colour
 * map over the lead times' columns: the last min(in_frames, lead_times)
 * input frames (titled -55 MIN ... 0 MIN, frames being 5 minutes apart),
 * the truth (+5 MIN ... +60 MIN) and the forecast under it; row labels on
 * the left, one VIL colour bar with its class boundaries on the right, the
 * sample's number on top. Frames are scaled up by an integer factor
 * (nearest neighbour) to at least 128 pixels a side. Inputs normalised:
 *   x    in_frames x H x W  (the sample's inputs, oldest first)
 *   y    lead_times x H x W (the truth)
 *   pred lead_times x H x W (the forecast)
 * Creates DIR if needed; written atomically (temporary file, rename). */
int forecast_png(const char *dir, int sample, const float *x, int in_frames, const float *y, const float *pred,
                 int lead_times, int h, int w);

/* The layout of that picture, from the sizes alone: what forecast_png
 * draws, box by box, and what a test checks (frames where they should be,
 * no text over anything else). Boxes are in picture pixels, (x, y) their
 * top left corner; a frame's 1-pixel border is drawn just outside it. */
enum forecast_box_kind { FORECAST_TEXT, FORECAST_FRAME, FORECAST_COLOUR_BAR };
struct forecast_box {
	enum forecast_box_kind kind;
	int x, y, w, h;
	int row;       /* FRAME: 0 inputs, 1 truth, 2 forecast; else -1 */
	int frame;     /* FRAME: index in x (row 0) or in y / pred (rows 1, 2) */
	int scale;     /* TEXT: glyph scale (a 5 x 7 glyph every 6 scale pixels) */
	char text[24]; /* TEXT: capitals, digits, '+', '-' and spaces */
};
struct forecast_layout {
	int width, height; /* the picture */
	int zoom;          /* picture pixels per data pixel, both ways */
	int nboxes;
	struct forecast_box *boxes; /* the title, row labels, column titles,
	                             * frames, colour bar, its title and labels */
};
int forecast_layout_make(struct forecast_layout *l, int sample, int in_frames, int lead_times, int h, int w);
void forecast_layout_free(struct forecast_layout *l);

/* Extension (additive): the colour of a raw VIL value in that map
 * (NaN: black; < 16: grey; boundaries 16 31 59 74 100 133 160 181 219
 * start the next colour; >= 219: magenta). */
void forecast_vil_rgb(float raw, unsigned char rgb[3]);

#endif
