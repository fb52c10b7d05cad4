/* The checkpoint format: a training run in one HDF5 file.
 *
 * One dataset per tensor, named by its path in the model ("enc0/conv1/weight",
 * "enc0/bn1/running_mean", ...), stored in PyTorch / ONNX layouts (a model's
 * tensors already use them), fp32. Optimizer state is stored under
 * "optimizer/<param path>/<slot>" (e.g. "optimizer/enc0/conv1/weight/exp_avg"),
 * plus scalar attributes. The model's architecture and the run's training
 * state are root attributes (integers, doubles, strings): the trainer
 * (runtime/train/trainer.h) writes and reads those of every run, the model
 * its own (a format name and version, its architecture, its data). Files
 * are written atomically (runtime/train/atomic.h): a temporary file in the
 * same directory, fsync, rename; a failure leaves no partial file. Reading
 * validates what it reads: types, shapes, finite values, string lengths. */
#ifndef STARNN_TRAIN_CHECKPOINT_H
#define STARNN_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ckpt_entry {
	const char *path;        /* dataset path, '/'-separated */
	starnn_tensor *tensor;   /* fp32 */
};

struct ckpt_attr {
	const char *name;
	enum { CKPT_INT, CKPT_DOUBLE, CKPT_STRING } type;
	int64_t i;
	double d;
	const char *s;
};

/* Writes every entry (reading tensors back from StarPU: this waits for the
 * tasks that write them) and the attributes. */
int ckpt_write(const char *file, const struct ckpt_entry *entries, int nentries, const struct ckpt_attr *attrs,
               int nattrs);

typedef struct ckpt_file ckpt_file;
int ckpt_open(ckpt_file **out, const char *file);
void ckpt_close(ckpt_file *f);
/* Attribute lookups: STARNN_EINVAL with a message if absent or of another type. */
int ckpt_get_int(ckpt_file *f, const char *name, int64_t *value);
int ckpt_get_double(ckpt_file *f, const char *name, double *value);
int ckpt_get_string(ckpt_file *f, const char *name, char *buf, size_t size);
int ckpt_has(ckpt_file *f, const char *path); /* dataset exists */
int ckpt_has_attr(ckpt_file *f, const char *name); /* root attribute exists (attributes added in later versions) */
/* Reads dataset `path` into the tensor: the shape must match exactly
 * (message names the path, both shapes). */
int ckpt_read_tensor(ckpt_file *f, const char *path, starnn_tensor *t);

/* ---- The reader without a file name or StarPU, for the fuzz harness
 * (tests/fuzz/checkpoint.c) ----
 *
 * ckpt_open on an HDF5 file already open (hid_t `fid`, e.g. a file image):
 * takes it over (closed by ckpt_close, or on failure); `name` names it in
 * messages. */
int ckpt_open_hdf5(ckpt_file **out, int64_t fid, const char *name);
/* ckpt_read_tensor into buf (the product of shape[0..ndim) floats) instead
 * of a tensor; tensor_name names the model's tensor in messages. */
int ckpt_read_f32(ckpt_file *f, const char *path, const char *tensor_name, int ndim, const int64_t *shape,
                  float *buf);
/* Longest fixed-length string attribute read (the file gives the length). */
#define CKPT_MAX_STRING (1 << 20)

/* ---- The mixed-precision training state ----
 *
 * Root attributes of a checkpoint (models/unet format_version 2):
 *   precision                 "fp32", "amp-fp16" or "amp-bf16": the compute
 *                             precision of the run (weights are fp32 always)
 *   loss_scaling              "none", "dynamic" or "static"
 * and, unless loss_scaling is "none", the loss-scale state
 * (codelets/amp.h):
 *   loss_scale                double: the current scale
 *   loss_scale_good_steps     int: consecutive clean steps since the scale
 *                             last changed (toward the next doubling)
 *   loss_scale_skipped_steps  int: steps skipped for Inf/NaN gradients
 *   loss_scale_applied_steps  int: optimizer steps applied (Adam's t - 1)
 * A file without `precision` (written before these existed) reads as fp32
 * without loss scaling. */
enum ckpt_loss_scaling { CKPT_SCALING_NONE = 0, CKPT_SCALING_DYNAMIC = 1, CKPT_SCALING_STATIC = 2 };

struct ckpt_amp {
	starnn_dtype compute;  /* STARNN_FP32, STARNN_FP16 or STARNN_BF16 */
	int loss_scaling;      /* enum ckpt_loss_scaling */
	double scale;          /* the rest: with loss scaling only */
	int64_t good_steps, skipped_steps, applied_steps;
};
#define CKPT_AMP_MAX_ATTRS 6

/* "fp32", "amp-fp16", "amp-bf16" (NULL for another dtype) and back
 * (-1 for another name). */
const char *ckpt_precision_name(starnn_dtype compute);
int ckpt_precision_parse(const char *name);
/* Fills attrs[0..*n) (room for CKPT_AMP_MAX_ATTRS; the strings are static)
 * for ckpt_write. STARNN_EINVAL for an unknown precision or scaling, a scale
 * that is not positive and finite, or a negative counter. */
int ckpt_amp_attrs(const struct ckpt_amp *a, struct ckpt_attr *attrs, int *n);
/* Reads them back (defaults for an older file). A present but malformed or
 * incomplete set: STARNN_EINVAL naming the attribute. */
int ckpt_get_amp(ckpt_file *f, struct ckpt_amp *a);

#ifdef __cplusplus
}
#endif
#endif
