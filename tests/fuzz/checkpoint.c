/* Fuzz harness: the checkpoint reader (runtime/train/checkpoint.c) on an
 * HDF5 file image, read as models/unet reads one for --resume, eval and
 * predict: the format and architecture attributes, the training settings
 * (integers, doubles, strings into the program's buffers), the
 * mixed-precision state (ckpt_get_amp), and tensors of the model of depth
 * 1 with 1 filter (weights, batch-norm statistics, Adam moments) with their
 * shape and finiteness checks. Seeds: checkpoints of short training runs of
 * that model, cut down to the attributes and a few datasets
 * (tests/fuzz/corpus/checkpoint; format version 2, and 3 with the
 * convention attributes: adam-fp32-keras.h5). */
#include <math.h>
#include <string.h>

#define STARNN_FUZZ_HDF5
#include "runtime/train/checkpoint.h"
#include "tests/fuzz/fuzz.h"

int fuzz_checkpoint(const uint8_t *data, size_t size)
{
	static const char *const ints[] = {
		"format_version", "depth", "filters", "in_frames", "out_frames", "step", "epoch", "total_steps",
		"size", "batch", "micro_batches", "warmup", "shuffle", "synthetic_size", "samples", "val_samples", "seed"};
	static const char *const doubles[] = {"lr", "momentum", "weight_decay", "bn_eps"};
	static const struct {
		const char *path;
		int ndim;
		int64_t shape[4];
	} tensors[] = {
		{"enc0/conv1/weight", 4, {1, 13, 3, 3}},
		{"enc0/conv1/bias", 1, {1}},
		{"enc0/bn1/running_var", 1, {1}},
		{"dec0/up/weight", 4, {32, 1, 2, 2}},
		{"out/weight", 4, {12, 1, 1, 1}},
		{"optimizer/enc0/conv1/weight/exp_avg", 4, {1, 13, 3, 3}},
	};
	hid_t fid = fuzz_h5_open(data, size);
	if (fid < 0)
		return 0;
	ckpt_file *f;
	if (ckpt_open_hdf5(&f, fid, "fuzz.h5") < 0)
		return fuzz_h5_all_closed();
	int rc = 0;
	char s[64], path[4096];
	int64_t v;
	double x;
	(void)ckpt_get_string(f, "format", s, sizeof s);
	(void)ckpt_get_string(f, "optimizer", s, sizeof s);
	(void)ckpt_get_string(f, "resize", s, sizeof s);
	(void)ckpt_get_string(f, "convention", s, sizeof s);
	(void)ckpt_get_string(f, "concat", s, sizeof s);
	(void)ckpt_get_string(f, "data", path, sizeof path);
	(void)ckpt_get_string(f, "val_data", path, sizeof path);
	(void)ckpt_get_string(f, "catalog", path, sizeof path);
	if (ckpt_get_string(f, "precision", s, sizeof s) == 0 && strlen(s) >= sizeof s)
		rc = FUZZ_FAIL("ckpt_get_string: %zu characters in a buffer of %zu", strlen(s), sizeof s);
	for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
		(void)ckpt_get_int(f, ints[i], &v);
	for (size_t i = 0; i < sizeof doubles / sizeof *doubles; i++)
		(void)ckpt_get_double(f, doubles[i], &x);
	struct ckpt_amp amp;
	if (ckpt_get_amp(f, &amp) == 0 && amp.loss_scaling != CKPT_SCALING_NONE &&
	    !(amp.scale > 0 && isfinite(amp.scale) && amp.good_steps >= 0 && amp.skipped_steps >= 0 &&
	      amp.applied_steps >= 0))
		rc = FUZZ_FAIL("ckpt_get_amp accepted scale %g, counters %lld %lld %lld", amp.scale,
		               (long long)amp.good_steps, (long long)amp.skipped_steps, (long long)amp.applied_steps);
	float buf[128]; /* the largest tensor of the table: dec0/up/weight */
	for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) {
		(void)ckpt_has(f, tensors[i].path);
		if (ckpt_read_f32(f, tensors[i].path, tensors[i].path, tensors[i].ndim, tensors[i].shape, buf) == 0) {
			size_t n = 1;
			for (int d = 0; d < tensors[i].ndim; d++)
				n *= (size_t)tensors[i].shape[d];
			for (size_t k = 0; k < n && rc == 0; k++)
				if (!isfinite(buf[k]))
					rc = FUZZ_FAIL("ckpt_read_f32 accepted %g in %s", (double)buf[k], tensors[i].path);
		}
	}
	ckpt_close(f);
	return rc ? rc : fuzz_h5_all_closed();
}

FUZZ_ENTRY(fuzz_checkpoint)

/* The harness reads no tensors (ckpt_read_f32 instead of ckpt_read_tensor)
 * and writes none: these stand in for libstarnn's, so that the harness
 * (and tests/fuzz/regress) links without StarPU. */
#include "runtime/base/error.h"
#include "runtime/core/tensor.h"
size_t starnn_tensor_numel(const starnn_tensor *t)
{
	(void)t;
	return 0;
}
int starnn_tensor_write_f32(starnn_tensor *t, const float *src)
{
	(void)t, (void)src;
	return starnn_error(STARNN_ESTARPU, "no tensors in the fuzz harness");
}
int starnn_tensor_read_f32(starnn_tensor *t, float *dst)
{
	(void)t, (void)dst;
	return starnn_error(STARNN_ESTARPU, "no tensors in the fuzz harness");
}
const char *starnn_tensor_describe(const starnn_tensor *t, char *buf, size_t size)
{
	(void)t;
	snprintf(buf, size, "(no tensor)");
	return buf;
}
