/* How the convolutions are chosen (codelets/conv2d_routes.h): the settings
 * of conv2d and convt2d (their variables: runtime/core/choice.h, read once,
 * test hooks), their setters, the routes handed to the kernels, and the
 * policies the submit functions and the models ask: the activations'
 * layout, whole-batch weight gradients, which passes widen 16-bit data,
 * and the start-up lines that say which kernels run. */

#include <stdio.h>

#include "codelets/conv2d_internal.h"
#include "runtime/core/choice.h"
#include "runtime/core/init.h" /* (starnn_ndevice_workers) */

/* The table's values are these enums' (runtime/core/choice.h). */
_Static_assert(STARNN_CONV2D_IM2COL == 0 && STARNN_CONV2D_DNNL == 1, "STARNN_CONV2D_CPU's values");
_Static_assert(STARNN_CONV2D_WGRAD_DNNL == 1 && STARNN_CONV2D_WGRAD_GEMM == 2 && STARNN_CONV2D_WGRAD_DIRECT == 3,
               "STARNN_CONV2D_WGRAD's values");
_Static_assert(STARNN_CONV2D_WGRAD_WHOLE_ON == 1 && STARNN_CONV2D_WGRAD_WHOLE_OFF == 2,
               "STARNN_CONV2D_WGRAD_WHOLE's values");
_Static_assert(STARNN_CONV2D_1X1_DNNL == 1 && STARNN_CONV2D_1X1_GEMM == 2, "STARNN_CONV2D_1X1's values");
_Static_assert(STARNN_CONV2D_NCHW_IN_DNNL == 1 && STARNN_CONV2D_NCHW_IN_DIRECT == 2, "STARNN_CONV2D_NCHW_IN's values");
_Static_assert(STARNN_CONV2D_ALGO_DIRECT == 1 && STARNN_CONV2D_ALGO_WINOGRAD == 2, "STARNN_CONV2D_ALGO's values");
_Static_assert(STARNN_CONVT2D_DNNL == 1 && STARNN_CONVT2D_DIRECT == 2, "STARNN_CONVT2D's values");
_Static_assert(STARNN_CONV2D_PACK_OFF == 0 && STARNN_CONV2D_PACK_ON == 1 && STARNN_CONV2D_PACK_TASKS == 2,
               "STARNN_CONV2D_PACK's values");
_Static_assert(STARNN_LAYOUT_BLOCKED == 1 && STARNN_LAYOUT_NHWC == 2 && STARNN_LAYOUT_NCHW == 3,
               "STARNN_LAYOUT's values");
_Static_assert(STARNN_CUDA_HALF_WIDEN == 0 && STARNN_CUDA_HALF_NATIVE == 1, "STARNN_CUDA_HALF_CONV's values");

int starnn_conv2d_settings_check(void)
{
	for (int s = 0; s < STARNN_NSETTINGS; s++)
		STARNN_CHECK(starnn_choice_check(starnn_setting((enum starnn_setting)s)));
	return 0;
}

/* ------------------------------------------------------- the CPU kernels */

enum starnn_conv2d_backend starnn_conv2d_cpu_backend(void)
{
	/* (without oneDNN the setting's one value is im2col) */
	return (enum starnn_conv2d_backend)starnn_choice_mode(starnn_setting(STARNN_SETTING_CONV2D_CPU));
}

int starnn_conv2d_cpu_backend_set(enum starnn_conv2d_backend b)
{
	if (b != STARNN_CONV2D_IM2COL && b != STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL, "conv2d: unknown CPU backend %d", (int)b);
#ifndef STARNN_HAVE_DNNL
	if (b == STARNN_CONV2D_DNNL)
		return starnn_error(STARNN_EINVAL, "conv2d: this starnn was built without oneDNN");
#endif
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_CPU), (int)b, STARNN_CONV2D_DNNL,
	                         "conv2d: CPU backend");
}

const char *starnn_conv2d_cpu_backend_name(enum starnn_conv2d_backend b)
{
	return b == STARNN_CONV2D_DNNL ? "oneDNN convolution primitives" : "im2col + OpenBLAS sgemm";
}

/* --------------------------------------------------------------- routes */

int starnn_conv2d_wgrad_set(enum starnn_conv2d_wgrad mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_WGRAD), (int)mode, STARNN_CONV2D_WGRAD_DIRECT,
	                         "conv2d: unknown weight-gradient route");
}

int starnn_conv2d_1x1_set(enum starnn_conv2d_1x1 mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_1X1), (int)mode, STARNN_CONV2D_1X1_GEMM,
	                         "conv2d: unknown 1x1 route");
}

int starnn_conv2d_nchw_in_set(enum starnn_conv2d_nchw_in mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_NCHW_IN), (int)mode, STARNN_CONV2D_NCHW_IN_DIRECT,
	                         "conv2d: unknown NCHW-input route");
}

int starnn_conv2d_algo_set(enum starnn_conv2d_algo mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_ALGO), (int)mode, STARNN_CONV2D_ALGO_WINOGRAD,
	                         "conv2d: unknown algorithm");
}

int starnn_convt2d_route_set(enum starnn_convt2d_route mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONVT2D), (int)mode, STARNN_CONVT2D_DIRECT,
	                         "convt2d: unknown route");
}

void starnn_conv2d_routes_in_force(struct starnn_conv2d_routes *r)
{
	r->wgrad = (enum starnn_conv2d_wgrad)starnn_choice_mode(starnn_setting(STARNN_SETTING_CONV2D_WGRAD));
	r->onebyone = (enum starnn_conv2d_1x1)starnn_choice_mode(starnn_setting(STARNN_SETTING_CONV2D_1X1));
	r->nchw_in = (enum starnn_conv2d_nchw_in)starnn_choice_mode(starnn_setting(STARNN_SETTING_CONV2D_NCHW_IN));
	r->algo = (enum starnn_conv2d_algo)starnn_choice_mode(starnn_setting(STARNN_SETTING_CONV2D_ALGO));
	r->convt = (enum starnn_convt2d_route)starnn_choice_mode(starnn_setting(STARNN_SETTING_CONVT2D));
}

enum starnn_conv2d_wgrad starnn_conv2d_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt)
{
	struct starnn_conv2d_routes r;
	starnn_conv2d_routes_in_force(&r);
	return starnn_conv2d_dnnl_wgrad_route(g, dt, &r);
}

int starnn_conv2d_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt)
{
	struct starnn_conv2d_routes r;
	starnn_conv2d_routes_in_force(&r);
	return starnn_conv2d_dnnl_winograd(g, pass, dt, &r);
}

const char *starnn_conv2d_algo_given(void)
{
	return starnn_choice_given(starnn_setting(STARNN_SETTING_CONV2D_ALGO));
}

/* Whether oneDNN has native kernels for 16-bit dt on this processor: bf16
 * where it has bf16 kernels (AVX512-BF16, AMX); never fp16 (oneDNN 2.6). */
static int native_cpu(starnn_dtype dt)
{
	return dt == STARNN_BF16 && starnn_conv2d_dnnl_bf16();
}

/* (all of dt's passes where oneDNN has no native kernels for it here; else
 * the 1x1 convolutions from blocked activations into NCHW, the UNet's
 * output layer, which starnn's fp32 sgemm kernels take on the widened
 * data: oneDNN's bf16 1x1 convolution would reorder the NCHW side, and the
 * padded 12 output channels, at every call) */
int starnn_conv2d_widened_cpu(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                              const struct starnn_conv2d_routes *r)
{
	return dt != STARNN_FP32 && (!native_cpu(dt) || starnn_conv2d_1x1_gemm(g, STARNN_FP32, r));
}

int starnn_conv2d_native_cpu(starnn_dtype dt)
{
	return native_cpu(dt);
}

/* ------------------------------------------------------- packed weights */

int starnn_conv2d_pack(void)
{
	return starnn_choice_mode(starnn_setting(STARNN_SETTING_CONV2D_PACK));
}

void starnn_conv2d_pack_set(int mode)
{
	starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_PACK),
	                  mode == STARNN_CONV2D_PACK_TASKS ? STARNN_CONV2D_PACK_TASKS
	                  : mode                           ? STARNN_CONV2D_PACK_ON
	                                                   : STARNN_CONV2D_PACK_OFF,
	                  STARNN_CONV2D_PACK_TASKS, "conv2d: unknown packing mode");
}

/* ------------------------------------------- 16-bit convolutions on CUDA */

enum starnn_cuda_half_conv starnn_cuda_half_conv(void)
{
	return (enum starnn_cuda_half_conv)starnn_choice_mode(starnn_setting(STARNN_SETTING_CUDA_HALF_CONV));
}

int starnn_cuda_half_conv_set(enum starnn_cuda_half_conv m)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CUDA_HALF_CONV), (int)m, STARNN_CUDA_HALF_NATIVE,
	                         "conv2d: unknown CUDA 16-bit mode (expected native 1 or widen 0):");
}

const char *starnn_cuda_half_conv_name(enum starnn_cuda_half_conv m)
{
	return m == STARNN_CUDA_HALF_NATIVE ? "native 16-bit cuDNN (tensor ops)" : "widened to fp32 (FMA)";
}

/* -------------------------------------------------- activation layouts */

int starnn_conv2d_layout_set(enum starnn_conv2d_layout mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_LAYOUT), (int)mode, STARNN_LAYOUT_NCHW,
	                         "conv2d: unknown layout");
}

/* The layout for activations of dt submitted as nparts batch parts: the
 * one oneDNN wants here (a block, or STARNN_CONV2D_NHWC), or 0 with *why
 * set; -2 for a bad STARNN_LAYOUT (its message set). */
static int wanted_block(starnn_dtype dt, int nparts, const char **why)
{
	static __thread char buf[240];
	if (starnn_choice_check(starnn_setting(STARNN_SETTING_LAYOUT)) < 0) {
		*why = starnn_last_error();
		return -2;
	}
	const int mode = starnn_choice_mode(starnn_setting(STARNN_SETTING_LAYOUT));
	if (mode == STARNN_LAYOUT_NCHW) {
		*why = "STARNN_LAYOUT=nchw";
		return 0;
	}
	if (starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL) {
		*why = "the im2col convolutions take NCHW";
		return 0;
	}
	if (starnn_ndevice_workers() > 0) {
		*why = "CUDA and OpenCL workers take NCHW";
		return 0;
	}
	if (mode == STARNN_LAYOUT_NHWC)
		return STARNN_CONV2D_NHWC;
	int native = dt == STARNN_BF16 && starnn_conv2d_dnnl_bf16();
	int b = starnn_conv2d_dnnl_block(native && mode != STARNN_LAYOUT_BLOCKED ? STARNN_BF16 : STARNN_FP32);
	/* NHWC is one block: no channel-split tasks; with fewer batch parts
	 * than CPU workers those are the parallelism (measured at 384x384,
	 * batch 1: NCHW, reordered to NHWC around each AMX convolution, ran
	 * 1.1x faster than NHWC on one worker at a time). There the fp32
	 * block (nChw16c), cut by channel blocks, is reordered to NHWC more
	 * cheaply than NCHW: 1.04x NCHW's samples/s (docs/performance-log.md,
	 * "Blocked bf16 at batch 1"). */
	unsigned ncpu = starpu_cpu_worker_get_count();
	if (b == STARNN_CONV2D_NHWC && nparts > 0 && (unsigned)nparts < ncpu) {
		int fb = starnn_conv2d_dnnl_block(STARNN_FP32);
		snprintf(buf, sizeof buf,
		         "NHWC, oneDNN's pick here, is never cut by channels, and with %d batch part%s for %u CPU "
		         "workers the convolutions need their channel-split tasks%s",
		         nparts, nparts == 1 ? "" : "s", ncpu,
		         fb >= 8 ? "; oneDNN reorders to NHWC around each AMX convolution" : "");
		*why = buf;
		return fb >= 8 ? fb : 0;
	}
	if (b == STARNN_CONV2D_NHWC)
		return b;
	if (b < 8)
		*why = "oneDNN picks no blocked layout on this processor";
	return b < 8 ? 0 : b;
}

int starnn_conv2d_act_cblock(int64_t channels, starnn_dtype dt, int nparts)
{
	const char *why;
	int b = wanted_block(dt, nparts, &why);
	if (b == -2)
		return STARNN_EINVAL; /* starnn_choice_check's message */
	if (b == STARNN_CONV2D_NHWC)
		return channels % 8 == 0 && channels <= STARNN_CBLOCK_MAX ? (int)channels : 1;
	return b > 1 && channels % b == 0 ? b : 1;
}

/* ------------------------------------------ whole-batch weight gradients */

int starnn_conv2d_wgrad_whole_set(enum starnn_conv2d_wgrad_whole mode)
{
	return starnn_choice_set(starnn_setting(STARNN_SETTING_CONV2D_WGRAD_WHOLE), (int)mode, STARNN_CONV2D_WGRAD_WHOLE_OFF,
	                         "conv2d: unknown whole-batch weight-gradient mode");
}

const char *starnn_conv2d_wgrad_whole_given(void)
{
	return starnn_choice_given(starnn_setting(STARNN_SETTING_CONV2D_WGRAD_WHOLE));
}

int starnn_conv2d_wgrad_whole(int64_t c, int64_t o, int64_t k, int64_t batch, int64_t hw, int nparts)
{
	struct starnn_choice *s = starnn_setting(STARNN_SETTING_CONV2D_WGRAD_WHOLE);
	STARNN_CHECK(starnn_choice_check(s));
	const int mode = starnn_choice_mode(s);
	if (nparts < 2 || mode == STARNN_CONV2D_WGRAD_WHOLE_OFF)
		return 0;
	return mode == STARNN_CONV2D_WGRAD_WHOLE_ON || 2 * o * c * k * k >= batch * hw * (c + o);
}

const char *starnn_conv2d_layout_note(starnn_dtype dt, int nparts, char *buf, size_t size)
{
	const char *why = NULL;
	char l[24];
	int b = wanted_block(dt, nparts, &why);
	if (b == STARNN_CONV2D_NHWC)
		snprintf(buf, size,
		         "NHWC (%s) where the channels are a multiple of 8, a concatenation as its two NHWC halves "
		         "(its batch norm writes one NHWC tensor): no reorder between NHWC tensors; NCHW elsewhere",
		         starnn_choice_mode(starnn_setting(STARNN_SETTING_LAYOUT)) == STARNN_LAYOUT_NHWC
		                 ? "STARNN_LAYOUT=nhwc"
		                 : "oneDNN's pick for bf16 on AMX");
	else if (b > 1 && why)
		snprintf(buf, size, "%s where the channels are a multiple of %d (%s); NCHW elsewhere",
		         starnn_layout_name(b, 0, l, sizeof l), b, why);
	else if (b > 1)
		snprintf(buf, size,
		         "%s (oneDNN's blocked layout) where the channels are a multiple of %d: no reorder around the "
		         "convolutions; NCHW elsewhere",
		         starnn_layout_name(b, 0, l, sizeof l), b);
	else
		snprintf(buf, size, "NCHW (%s)", why);
	return buf;
}

/* ------------------------------------------------------ start-up lines */

const char *starnn_conv2d_cpu_route(starnn_dtype dt)
{
	if (starpu_cpu_worker_get_count() == 0)
		return NULL;
	/* the weight-gradient route (codelets/kernels/conv2d.h), asked of a
	 * wide layer at 8x8 and of a narrow one */
	const struct starnn_conv2d_geom wide = {1, STARNN_CONV2D_WGRAD_MIN_C, STARNN_CONV2D_WGRAD_MIN_O, 8, 8, 3, 1, 1, 0, 0, 0};
	const struct starnn_conv2d_geom narrow = {1, 16, 16, 32, 32, 3, 1, 1, 0, 0, 0};
	if (dt == STARNN_FP32) {
		struct starnn_conv2d_geom first = {1, 13, 16, 32, 32, 3, 1, 1, 0, 0, 0}; /* from NCHW x */
		if (starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL)
			return NULL;
		const enum starnn_conv2d_wgrad rn = starnn_conv2d_wgrad_route(&narrow, dt),
		                               rw = starnn_conv2d_wgrad_route(&wide, dt);
		if (rn == STARNN_CONV2D_WGRAD_GEMM)
			return "fp32 on oneDNN, every weight gradient on im2col + OpenBLAS sgemm (STARNN_CONV2D_WGRAD=gemm)";
		if (rn == STARNN_CONV2D_WGRAD_DIRECT && rw == STARNN_CONV2D_WGRAD_DIRECT)
			return "fp32 on oneDNN, the 3x3 weight gradients on starnn's direct AVX2 kernel "
			       "(STARNN_CONV2D_WGRAD=direct)";
		if (rn == STARNN_CONV2D_WGRAD_DIRECT)
			return "fp32 on oneDNN, the 3x3 weight gradients on starnn's direct AVX2 kernel, those of >= 64 -> "
			       ">= 128 channels at <= 8x8 pixels on im2col + OpenBLAS sgemm (both faster here than oneDNN's "
			       "AVX2 kernel; STARNN_CONV2D_WGRAD=dnnl: oneDNN)";
		if (rw == STARNN_CONV2D_WGRAD_GEMM && starnn_conv2d_wgrad_route(&first, dt) == STARNN_CONV2D_WGRAD_DIRECT)
			return "fp32 on oneDNN, the weight gradients of layers of >= 64 -> >= 128 channels at <= 8x8 pixels "
			       "on im2col + OpenBLAS sgemm, those of 3x3 layers from NCHW x (the first) on starnn's direct "
			       "kernel (both faster there than oneDNN's; STARNN_CONV2D_WGRAD=dnnl: oneDNN)";
		if (rw == STARNN_CONV2D_WGRAD_GEMM)
			return "fp32 on oneDNN, the weight gradients of layers of >= 64 -> >= 128 channels at <= 8x8 pixels "
			       "on im2col + OpenBLAS sgemm (faster there than oneDNN's AVX2 kernel; "
			       "STARNN_CONV2D_WGRAD=dnnl: oneDNN)";
		return NULL;
	}
	if (dt != STARNN_BF16 && dt != STARNN_FP16)
		return NULL;
	if (dt == STARNN_FP16)
		return "fp16 widened to fp32 on CPU workers (oneDNN 2.6 has no fp16 convolution): no faster than fp32 "
		       "(widening is one more pass), half the activation memory";
	if (starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL)
		return "bf16 widened to fp32 on CPU workers (the im2col route, STARNN_CONV2D_CPU=im2col): no faster than "
		       "fp32 (widening is one more pass), half the activation memory";
	if (starnn_conv2d_dnnl_bf16()) {
		static char buf[512];
		const char *base = "bf16 native on CPU workers (oneDNN: AVX512-BF16 / AMX where the processor has them)", *wg = "";
		if (starnn_conv2d_wgrad_route(&narrow, dt) == STARNN_CONV2D_WGRAD_GEMM)
			wg = ", every weight gradient on im2col + a bf16 matmul of oneDNN (STARNN_CONV2D_WGRAD=gemm)";
		else if (starnn_conv2d_wgrad_route(&wide, dt) == STARNN_CONV2D_WGRAD_GEMM)
			wg = ", the weight gradients of layers of >= 64 -> >= 128 channels at <= 8x8 pixels on im2col + a bf16 "
			     "matmul of oneDNN (faster there than its convolution; STARNN_CONV2D_WGRAD=dnnl: oneDNN)";
		/* the output layer: 16 channels in blocks into 12 in NCHW */
		const struct starnn_conv2d_geom out = {1, 16, 12, 32, 32, 1, 16, 1, 0, 0, 0};
		struct starnn_conv2d_routes r;
		starnn_conv2d_routes_in_force(&r);
		snprintf(buf, sizeof buf, "%s%s%s", base, wg,
		         starnn_conv2d_1x1_gemm(&out, STARNN_FP32, &r)
		                 ? "; 1x1 convolutions into NCHW (the output layer) widened to fp32 on OpenBLAS sgemm "
		                   "(STARNN_CONV2D_1X1=dnnl: oneDNN's bf16)"
		                 : "");
		return buf;
	}
	return "bf16 widened to fp32 on CPU workers (oneDNN has no bf16 kernels for this processor: they need "
	       "AVX-512): no faster than fp32 (widening is one more pass), half the activation memory";
}


const char *starnn_convt2d_cpu_route(starnn_dtype dt, int cblock)
{
	if (starpu_cpu_worker_get_count() == 0 || starnn_conv2d_cpu_backend() != STARNN_CONV2D_DNNL || cblock <= 1)
		return NULL;
	if (dt == STARNN_BF16 && starnn_conv2d_dnnl_bf16()) /* native bf16: oneDNN */
		return NULL;
	struct starnn_conv2d_routes r;
	starnn_conv2d_routes_in_force(&r);
	if (!starnn_convt2d_direct((size_t)cblock, (size_t)cblock, STARNN_FP32, &r))
		return NULL;
	return dt == STARNN_FP32 ? "fp32 on starnn's direct AVX2 kernels, forward and backward (STARNN_CONVT2D=dnnl: "
	                           "oneDNN)"
	                         : "widened to fp32 on starnn's direct AVX2 kernels, forward and backward "
	                           "(STARNN_CONVT2D=dnnl: oneDNN)";
}
