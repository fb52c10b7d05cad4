/* How the CPU (and CUDA) convolutions are chosen: the settings of conv2d
 * and convt2d, the functions that set them, and what programs ask about
 * them (the activations' layout, the start-up lines).
 *
 * The settings are read once, in one place (runtime/core/choice.h: the
 * table and its variables, loaded by starnn_init). Every one is an
 * experiment switch that no user needs: its variable is a test hook,
 * read only in builds configured with --enable-test-hooks, and a build
 * without them runs the defaults (auto, the measured rules). Benchmarks
 * and tests set them with the _set functions below, which override the
 * variables; tasks take the settings in force at submission (the routes
 * reach the kernels as an argument: codelets/kernels/conv2d.h, struct
 * starnn_conv2d_routes). docs/convolutions.md says what each route is,
 * why it exists and how to measure it.
 *
 *   setting (variable)                  values, default first
 *   CPU kernels (STARNN_CONV2D_CPU)     dnnl (with oneDNN) | im2col
 *   routes (STARNN_CONV2D_WGRAD, _1X1, _NCHW_IN, _ALGO, STARNN_CONVT2D)
 *                                       auto | ... (kernels/conv2d.h)
 *   whole-batch weight gradients (STARNN_CONV2D_WGRAD_WHOLE)
 *                                       auto | on | off
 *   packed weights (STARNN_CONV2D_PACK) on | tasks | off
 *   activation layout (STARNN_LAYOUT)   auto | blocked | nhwc | nchw
 *   16-bit convolutions on CUDA (STARNN_CUDA_HALF_CONV)
 *                                       widen | native */
#ifndef STARNN_CONV2D_ROUTES_H
#define STARNN_CONV2D_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include "codelets/kernels/conv2d.h"
#include "runtime/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0, or STARNN_EINVAL with a message naming the variable where one of the
 * settings' variables has a value that is not one of its names (and the
 * setting is not set by a _set function). The submit functions call it. */
int starnn_conv2d_settings_check(void);

/* Which CPU kernels the conv2d and convt2d codelets run: oneDNN where
 * starnn was built with it (the default: 1.5-2.7x faster than im2col in
 * fp32 on AVX-512, and the only route that computes bf16 natively), else
 * im2col + OpenBLAS sgemm. fp16 always widens to fp32 (oneDNN 2.6 has no
 * fp16 convolution on CPUs). _set: STARNN_EINVAL for an unknown backend,
 * or oneDNN in a build without it. */
enum starnn_conv2d_backend { STARNN_CONV2D_IM2COL = 0, STARNN_CONV2D_DNNL = 1 };
enum starnn_conv2d_backend starnn_conv2d_cpu_backend(void);
int starnn_conv2d_cpu_backend_set(enum starnn_conv2d_backend b);
const char *starnn_conv2d_cpu_backend_name(enum starnn_conv2d_backend b);

/* The oneDNN backend's routes (codelets/kernels/conv2d.h), one setter each;
 * STARNN_EINVAL for an unknown mode. */
int starnn_conv2d_wgrad_set(enum starnn_conv2d_wgrad mode);
int starnn_conv2d_1x1_set(enum starnn_conv2d_1x1 mode);
int starnn_conv2d_nchw_in_set(enum starnn_conv2d_nchw_in mode);
int starnn_conv2d_algo_set(enum starnn_conv2d_algo mode);
int starnn_convt2d_route_set(enum starnn_convt2d_route mode);
/* The routes in force, for the kernels. */
void starnn_conv2d_routes_in_force(struct starnn_conv2d_routes *r);
/* What the oneDNN backend's routes in force give for g in dt
 * (codelets/kernels/conv2d.h: starnn_conv2d_dnnl_wgrad_route,
 * starnn_conv2d_dnnl_winograd). */
enum starnn_conv2d_wgrad starnn_conv2d_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt);
int starnn_conv2d_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt);
/* The STARNN_CONV2D_ALGO value in force where the variable sets one
 * ("direct" ...), NULL where auto applies unasked (messages). */
const char *starnn_conv2d_algo_given(void);

/* Whether the weight gradient of a k x k convolution of c -> o channels,
 * on a batch of `batch` images of hw pixels submitted as nparts
 * micro-batches, is better taken once on the whole batch (one task after
 * every part's output gradient, into one gradient) than once per part
 * (into slices that a reduction adds afterwards). Per part, each task
 * writes a whole weight gradient (oneDNN's, then its reorder to OIHW) and
 * the reduction reads them all again: where the weights outweigh the
 * activations, that traffic costs more than the parallelism of the parts
 * gives. auto: where the weights hold at least half as many values as the
 * batch's input and output activations together (2 o c k^2 >= batch hw (c
 * + o): the UNet's two deepest levels), for nparts > 1; on: every layer,
 * with nparts > 1; off: none. Returns 1 or 0, or STARNN_EINVAL for a bad
 * variable. _given: the variable's value where it sets one ("on" ...),
 * NULL where the rule applies unasked (messages). */
enum starnn_conv2d_wgrad_whole {
	STARNN_CONV2D_WGRAD_WHOLE_AUTO = 0,
	STARNN_CONV2D_WGRAD_WHOLE_ON = 1,
	STARNN_CONV2D_WGRAD_WHOLE_OFF = 2,
};
int starnn_conv2d_wgrad_whole(int64_t c, int64_t o, int64_t k, int64_t batch, int64_t hw, int nparts);
int starnn_conv2d_wgrad_whole_set(enum starnn_conv2d_wgrad_whole mode);
const char *starnn_conv2d_wgrad_whole_given(void);

/* Weights packed into oneDNN's layouts (codelets/conv2d_internal.h says
 * how): on, the default, also offers the fp32 copies in layouts that
 * runtime/base/types.h describes to the optimizers, which write them as
 * they update the weights; tasks leaves the packing to the pack tasks;
 * off reorders in every call. _set: 1 is on. */
enum { STARNN_CONV2D_PACK_OFF = 0, STARNN_CONV2D_PACK_ON = 1, STARNN_CONV2D_PACK_TASKS = 2 };
int starnn_conv2d_pack(void);
void starnn_conv2d_pack_set(int mode);

/* The layout (runtime/base/types.h cblock) for activations of `channels`
 * channels in dt between the convolutions: the layout oneDNN picks
 * (starnn_conv2d_dnnl_block; cblock = channels for NHWC) when the CPU
 * backend is oneDNN, no device worker (CUDA, OpenCL) runs (they take
 * NCHW) and channels is a multiple of the block (NHWC: of 8, at most
 * STARNN_CBLOCK_MAX, and nparts, the batch parts each operation on them
 * is submitted as, at least the CPU workers: NHWC has no channel-split
 * tasks, so with fewer parts the fp32 block, cut by channels and
 * reordered around each AMX call); else 1.
 * The layout setting overrides oneDNN's pick: auto, blocked (nChw16c /
 * nChw8c, the fp32 pick), nhwc, nchw. STARNN_EINVAL for a bad
 * STARNN_LAYOUT. */
enum starnn_conv2d_layout {
	STARNN_LAYOUT_AUTO = 0,
	STARNN_LAYOUT_BLOCKED = 1,
	STARNN_LAYOUT_NHWC = 2,
	STARNN_LAYOUT_NCHW = 3,
};
int starnn_conv2d_act_cblock(int64_t channels, starnn_dtype dt, int nparts);
int starnn_conv2d_layout_set(enum starnn_conv2d_layout mode);
/* The start-up line's words for it ("nChw8c (...)" or "NCHW (why)"). */
const char *starnn_conv2d_layout_note(starnn_dtype dt, int nparts, char *buf, size_t size);

/* How the 16-bit conv2d and convt2d codelets compute on CUDA workers:
 *   STARNN_CUDA_HALF_WIDEN   the 16-bit buffers are widened to fp32 and the
 *                            fp32 kernels run (FMA math; the default, until
 *                            the native kernels have run on a GPU),
 *   STARNN_CUDA_HALF_NATIVE  the native kernels (16-bit cuDNN / cuBLAS,
 *                            codelets/kernels/conv2d.h, convt2d.h),
 *                            widening only where they decline.
 * Tasks take the mode in force at submission; CPU workers ignore it. */
enum starnn_cuda_half_conv { STARNN_CUDA_HALF_WIDEN = 0, STARNN_CUDA_HALF_NATIVE = 1 };
enum starnn_cuda_half_conv starnn_cuda_half_conv(void);
int starnn_cuda_half_conv_set(enum starnn_cuda_half_conv m);
const char *starnn_cuda_half_conv_name(enum starnn_cuda_half_conv m);

/* How the CPU workers run the convolutions of activations of dtype dt, in
 * words for a program's start-up lines ("bf16 native (oneDNN)", "fp16
 * widened to fp32 (...why, and what it costs...)", for fp32 the weight
 * gradients on im2col + sgemm where they are); NULL for plain fp32 or when
 * there is no CPU worker. After starnn_init. _convt2d: the same for the
 * transposed convolutions of a model in dt with activations in blocks of
 * cblock (starnn_conv2d_act_cblock) where they run on the direct kernels;
 * NULL when they run on oneDNN or im2col + sgemm. */
const char *starnn_conv2d_cpu_route(starnn_dtype dt);
const char *starnn_convt2d_cpu_route(starnn_dtype dt, int cblock);

#ifdef __cplusplus
}
#endif
#endif
