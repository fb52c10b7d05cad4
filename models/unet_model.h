/* The SEVIR nowcasting UNet as a StarPU task graph (no devices here: the
 * runtime and StarPU place the tasks).
 *
 * Architecture (../shared/docs/brief.md and README.md):
 *   conv_block(c): [conv 3x3 'same' -> BatchNorm -> ReLU] x 2 (BN+ReLU fused)
 *   encoder level i = 0..depth-1: conv_block(f*2^i), skip, max-pool 2x2/2
 *   centre: conv_block(32*f)
 *   decoder level i = depth-1..0: transposed conv 2x2/2 to f*2^i channels,
 *     concat [skip, up] (channel views of one tensor: no copy), BatchNorm +
 *     ReLU, conv_block(f*2^i)
 *   output: conv 1x1 to out_frames channels, linear
 *   loss: MSE over all output elements (normalised values)
 * Depth 4, f = 32, 13 -> 12 frames: 16,556,044 parameters.
 * Conventions (enum unet_convention): by default those of the study's Keras
 * model (concat [skip, up], BatchNorm eps 1e-3); UNET_STARNN_V1, starnn's
 * first models (concat [up, skip], eps 1e-5), for their checkpoints.
 *
 * Parameter paths (checkpoint dataset names, PyTorch-like, '/'-separated):
 *   enc<i>/conv1/weight, enc<i>/conv1/bias, enc<i>/bn1/{weight,bias,running_mean,running_var},
 *   enc<i>/conv2/..., enc<i>/bn2/..., centre/conv1 ... centre/bn2,
 *   dec<i>/up/{weight,bias} (IOHW), dec<i>/bn0/... (after the concat: its
 *   channels [0, c) are the skip's and [c, 2c) the up's, or the other way
 *   round for UNET_STARNN_V1; dec<i>/conv1's input channels likewise),
 *   dec<i>/conv1, dec<i>/bn1, dec<i>/conv2, dec<i>/bn2, out/{weight,bias}
 * with dec<i> the decoder level of resolution i. */
#ifndef STARNN_UNET_MODEL_H
#define STARNN_UNET_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "models/unet_convention.h"
#include "runtime/starnn.h"

struct unet_config {
	int depth;          /* 1..5 */
	int filters;        /* f */
	int in_frames;      /* 13 */
	int out_frames;     /* 12 */
	int size;           /* H = W; a multiple of 2^depth */
	int batch;          /* samples per step */
	int micro;          /* micro-batches per step (<= batch) */
	/* Mixed precision (extension; zero-initialised = fp32, no scaling):
	 * compute: STARNN_FP32, or STARNN_FP16 / STARNN_BF16 for the
	 * activations, their gradients and the weight copies the convolutions
	 * read (fp32 master weights, gradients, optimizer state, BN statistics
	 * and loss); loss_scale: 0 none, 1 dynamic (codelets/amp.h: start 2^16,
	 * halve on overflow, double after 2000 clean steps), 2 static at
	 * static_scale. */
	int compute;        /* starnn_dtype */
	int loss_scale;
	float static_scale;
	/* Data-parallel replicas (runtime/train/replica.h): batch is this
	 * replica's share of global_batch samples per step (0: batch, one
	 * replica); the loss is a mean over the global batch, the trainer sums
	 * the gradients over the replicas and every replica reads the same
	 * loss. */
	int global_batch;
	/* Batch norm over several replicas: 0 (default) statistics over the
	 * global batch (every replica's sums added inside the graph: the same
	 * model as one replica trains), 1 each replica's own statistics. */
	int bn_local;
	/* enum unet_convention (models/unet_convention.h; 0: UNET_KERAS, the default) */
	int convention;
	/* The host <-> device edge (runtime/train/params.h: master_host,
	 * wire_weights, wire_grads, awp are taken from it), NULL: none. */
	const struct starnn_params_config *edge;
};

enum unet_optimizer { UNET_ADAM = 0, UNET_SGD = 1 };

struct unet_optim {
	enum unet_optimizer kind;
	float lr;           /* peak learning rate */
	int warmup;         /* linear warm-up over this many steps (0: none) */
	float momentum;     /* SGD */
	float beta1, beta2, eps, weight_decay; /* Adam (PyTorch defaults) */
};
void unet_optim_defaults(struct unet_optim *o); /* Adam, lr 1e-3 */

typedef struct unet unet;

/* Creates the model for cfg (parameters initialised as PyTorch does for
 * Conv2d / ConvTranspose2d / BatchNorm2d, from `seed`), the activation and
 * gradient tensors for cfg.batch split into cfg.micro micro-batches, and
 * the optimizer state. Bad configurations: STARNN_EINVAL with a message. */
int unet_create(unet **out, const struct unet_config *cfg, const struct unet_optim *opt, uint64_t seed);
void unet_destroy(unet *m);
int64_t unet_parameter_count(const unet *m);

/* Prints the layers, their output shapes and parameter counts, and a last
 * line "parameters: N". */
void unet_print(const unet *m, FILE *f);

/* The input and target tensors of a step ([batch, in_frames, H, W] and
 * [batch, out_frames, H, W], normalised): write them with
 * starnn_tensor_write_f32() before submitting a step. */
starnn_tensor *unet_input(unet *m);
starnn_tensor *unet_target(unet *m);
/* The prediction of the last forward ([batch, out_frames, H, W]). */
starnn_tensor *unet_prediction(unet *m);

/* Submits one training step (forward, loss, backward, gradient reduction
 * across micro-batches, optimizer update at step `step`, 1-based, with the
 * warm-up applied). Returns without waiting. */
int unet_train_step(unet *m, int64_t step);
/* Submits an evaluation forward (running BN statistics) and its loss. */
int unet_eval_step(unet *m);
/* Waits for the loss of the last step: mean squared error over all output
 * elements, normalised units. STARNN_ENUM if it is not finite. */
int unet_read_loss(unet *m, double *loss);

/* Every tensor of the model that a checkpoint holds: parameters and BN
 * running statistics (paths above), then the optimizer state under
 * "optimizer/<path>/<slot>" (Adam: exp_avg, exp_avg_sq; SGD:
 * momentum_buffer). *n receives the count; the array lives with the model. */
struct unet_tensor_ref {
	const char *path;
	starnn_tensor *tensor;
	int is_parameter; /* trainable (gets a gradient) */
};
const struct unet_tensor_ref *unet_tensors(unet *m, int *n);
const struct unet_config *unet_get_config(const unet *m);
/* How many of the model's convolutions take their weight gradient once on
 * the whole batch (codelets/conv2d.h: starnn_conv2d_wgrad_whole), of all. */
void unet_wgrad_whole(const unet *m, int *whole, int *nconv);
/* The fp32 passes of its 3x3 convolutions that run on oneDNN (forward,
 * backward data but the first layer's, weight gradients on oneDNN's route:
 * codelets/conv2d.h) and ask for its Winograd kernel
 * (starnn_conv2d_winograd), of all those. */
void unet_winograd(const unet *m, int *wino, int *npasses);
/* The parameter set (runtime/train/params.h): what the trainer updates,
 * distributes and checkpoints. */
starnn_params *unet_params(unet *m);
/* How many of unet_tensors() are the model's own (the optimizer state
 * follows them). */
int unet_state_count(const unet *m);

/* ---------------------------------------------------------------- extensions
 * (additive to the contract above) */

/* Parameters of a configuration without creating a model (only depth,
 * filters, frames and size are used); -1 for a bad configuration. */
int64_t unet_count_parameters(const struct unet_config *cfg);
/* Floating-point operations per sample of the convolutions (2 per
 * multiply-add): the forward pass, and a training step (forward, backward
 * data but for the first layer, backward weights). */
int unet_count_flops(const struct unet_config *cfg, double *forward, double *train);
/* unet_print for a configuration, without a model (no allocation).
 * STARNN_EINVAL for a bad configuration. */
int unet_print_config(const struct unet_config *cfg, FILE *f);
/* Submits a forward and its loss without backward nor update: training = 1
 * uses the batch statistics (and updates the BN running statistics as a
 * training forward does), 0 the running statistics (= unet_eval_step). */
int unet_loss_step(unet *m, int training);
/* Submits forward, loss, backward and the reduction of the micro-batch
 * gradients, without the optimizer update: then unet_gradient() holds
 * dLoss/dparameter. */
int unet_gradient_step(unet *m);
/* The summed gradient of tensor i of unet_tensors() after a step (NULL if
 * that tensor is not a parameter or i is out of range). */
starnn_tensor *unet_gradient(unet *m, int i);

/* Mixed precision (see struct unet_config). The loss-scale state (waits for it): scale, skipped steps, applied steps
 * (any may be NULL). STARNN_EINVAL without loss scaling. */
int unet_loss_scale_state(unet *m, float *scale, int64_t *skipped, int64_t *applied);

/* Pipelined training: step k+1 submitted before step k's loss is read.
 * unet_stage_batch writes a batch (the layouts and units of unet_input()
 * and unet_target(), fp32) into staging tensors of the model (created on
 * first use; starnn's memory count includes them) and submits the copies
 * into the input and target: it waits only for the copies of the previous
 * batch, not for the previous step's backward. A step submitted after it
 * trains on that batch (the same values as starnn_tensor_write_f32 into
 * unet_input() / unet_target() give). unet_train_step(m, k) keeps its loss
 * in one of two slots (a copy task); unet_read_step_loss(m, k, &loss) waits
 * for that copy only, so step k+1 may already be submitted. Kept: the last
 * two training steps submitted; others: STARNN_EINVAL. Not finite:
 * STARNN_ENUM (*loss set), as unet_read_loss. */
int unet_stage_batch(unet *m, const float *x, const float *y);
int unet_read_step_loss(unet *m, int64_t step, double *loss);

#endif
