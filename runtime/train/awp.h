/* The adaptive weight precision policy (AWP, Study 2: Zhuang, Malossi,
 * Casas, arXiv 2004.02297): each layer's weights travel in a wire format
 * of `bits` bits per value (codelets/kernels/wire.h's ladder: 8 -> 16 -> 24 -> 32),
 * low precision early, more bits as the updates become small against the
 * weights; never fewer bits.
 *
 * The rule, per layer, once per step, on n = ||w||_2 of the layer's fp32
 * master weights after the step's update:
 *   first observation:  n_ref = n, counter 0;
 *   then                 r = (n - n_ref) / n_ref;
 *                        counter = r > rel_res ? 0 : counter + 1;
 *                        n_ref = n (the reference is the previous step's norm);
 *                        when counter reaches interval and bits < 32:
 *                          bits += stride (at most 32), counter = 0.
 * r is signed, as in the paper: a norm that shrinks (weight decay) counts
 * as a small update. A layer whose reference norm is 0 (all-zero weights,
 * e.g. biases at the start) counts a step as small when n is 0 too, and
 * as large otherwise.
 *
 * A second rule, --awp-rule resolution (ours, not the paper's), looks at
 * the update itself: u = ||w_t - w_{t-1}||_2, the layer's step, against
 * what the layer's current wire format resolves:
 *   a step is small when u <= K rho(format) n  (K: --awp-res-factor, 1/16),
 * rho being the format's rounding error relative to the values it rounds
 * (starnn_awp_resolution: int8 1/254 of its block's largest value, rne16
 * 2^-8, trunc16 2^-7, rne24 2^-16, trunc24 2^-15). A layer whose steps stay
 * below what its format can show for `interval` steps in a row gains
 * bits; a width that resolves no finer than the current one (trunc16
 * after int8) is skipped. A zero step (an amp step skipped for an
 * overflow) is no observation. The first observation only sets the
 * reference, as in the paper's rule.
 *
 * Host-side state only: the caller gives the norms (runtime/train/dist.c reads
 * them one step late so that no step waits, see there). */
#ifndef STARNN_RUNTIME_AWP_H
#define STARNN_RUNTIME_AWP_H

#include "codelets/kernels/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct starnn_awp_config {
	double rel_res;            /* --awp-rel-res (default 8e-5, the paper's) */
	int interval;              /* --awp-interval (default 10) */
	int start_bits;            /* --awp-start-bits: 8, 16, 24 or 32 (default 8) */
	int stride;                /* --awp-stride: 8, 16 or 24 (default 8) */
	starnn_wire_family family; /* --awp-rounding trunc (the paper's) | rne */
	int rule;                  /* --awp-rule: STARNN_AWP_RULE_PAPER (default) | _RESOLUTION */
	double res_factor;         /* --awp-res-factor K of the resolution rule (default 1/16) */
};
#define STARNN_AWP_RULE_PAPER 0
#define STARNN_AWP_RULE_RESOLUTION 1
void starnn_awp_defaults(struct starnn_awp_config *c);
/* STARNN_EINVAL with a message naming the option for a bad setting. */
int starnn_awp_check(const struct starnn_awp_config *c);

struct starnn_awp_layer {
	int bits;     /* current width: 8, 16, 24 or 32 */
	int counter;  /* consecutive small steps */
	int seen;     /* a reference norm exists */
	double n_ref; /* the previous step's norm */
	/* resolution rule, in checkpoints only: the squared step of the
	 * observation pending when the state was saved (-1: none) */
	double step_sq_pending;
};
void starnn_awp_layer_init(const struct starnn_awp_config *c, struct starnn_awp_layer *l);
/* One observation n (>= 0, finite; a NaN or Inf norm leaves the state as
 * it is and returns 0): updates l; returns 1 when the layer gained bits. */
int starnn_awp_observe(const struct starnn_awp_config *c, struct starnn_awp_layer *l, double n);
/* The same with the layer's step u = ||w_t - w_{t-1}||_2 (>= 0, finite):
 * the configured rule decides (the paper's ignores u). */
int starnn_awp_observe_step(const struct starnn_awp_config *c, struct starnn_awp_layer *l, double n, double u);
/* The rule reads the steps' norms (the caller computes u). */
static inline int starnn_awp_uses_steps(const struct starnn_awp_config *c)
{
	return c->rule == STARNN_AWP_RULE_RESOLUTION;
}
/* rho(f) of the resolution rule (above); 0 for fp32. */
double starnn_awp_resolution(starnn_wire_format f);
/* The wire format of the layer's current width in the configured family. */
starnn_wire_format starnn_awp_format(const struct starnn_awp_config *c, const struct starnn_awp_layer *l);

/* Program options (models/unet train, models/mlp): option is one of
 * "--awp-rel-res", "--awp-interval", "--awp-start-bits", "--awp-stride",
 * "--awp-rounding" (trunc | rne), "--awp-rule" (paper | resolution),
 * "--awp-res-factor" (a number > 0), arg its value, checked alone (the
 * combination by starnn_awp_check). STARNN_EINVAL with a message naming
 * the option otherwise. */
int starnn_awp_option(const char *option, const char *arg, struct starnn_awp_config *c);
/* Those option names, in that order (for getopt tables). */
#define STARNN_AWP_NOPTIONS 7
extern const char *const starnn_awp_options[STARNN_AWP_NOPTIONS];
/* --wire-weights: "awp" gives STARNN_WIRE_ADAPTIVE, "none" / "fp32" -1,
 * a format name its starnn_wire_format. */
#define STARNN_WIRE_ADAPTIVE (-2)
int starnn_awp_wire_option(const char *option, const char *arg, int *wire);

/* A layer's state as text and back, for checkpoints: "bits counter seen
 * n_ref" with n_ref in %.17g (exact), then step_sq_pending the same way
 * when it is >= 0 (absent: -1). STARNN_EINVAL for malformed text. */
int starnn_awp_layer_format(const struct starnn_awp_layer *l, char *buf, size_t size);
int starnn_awp_layer_parse(const char *text, struct starnn_awp_layer *l);
/* Many layers' states as text, one line "<name> <state>" per layer (what a
 * checkpoint keeps: the rank edge's, runtime/train/shard.c, and the device
 * edge's, runtime/train/params.c), and back: at(ctx, i) names layer i of
 * n and gives its state. Parsing sets the state of each layer a line names;
 * a name that is not one of the n, a malformed line or a layer left without
 * a line is STARNN_EINVAL with a message. *text is malloc'ed. */
struct starnn_awp_named {
	const char *name;
	struct starnn_awp_layer *layer;
};
typedef struct starnn_awp_named (*starnn_awp_layer_at)(void *ctx, int i);
int starnn_awp_states_format(int n, starnn_awp_layer_at at, void *ctx, char **text);
int starnn_awp_states_parse(const char *text, int n, starnn_awp_layer_at at, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
