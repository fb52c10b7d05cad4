/* What the glue of conv2d and convt2d shares (codelets/conv2d.c,
 * conv2d_pack.c, conv2d_routes.c, convt2d.c) and their tests look into;
 * not installed. The public API is codelets/conv2d.h and
 * codelets/convt2d.h, the settings codelets/conv2d_routes.h, the kernels
 * codelets/kernels/conv2d.h and convt2d.h. */
#ifndef STARNN_CONV2D_INTERNAL_H
#define STARNN_CONV2D_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "codelets/conv2d.h"
#include "codelets/conv2d_routes.h"
#include "codelets/kernels/conv2d.h"
#include "codelets/kernels/convt2d.h"
#include "runtime/base/error.h"
#include "runtime/core/codelet.h"
#include "runtime/core/tensor.h"

/* A kernel's status in a task: its error becomes the task's deferred
 * error. */
static inline void starnn_conv2d_done(int rc)
{
	if (rc < 0)
		starnn_defer_last_error(rc);
}

/* ------------------------------------------------- conv2d_routes.c */
/* Whether oneDNN computes 16-bit dt natively on this processor (bf16 with
 * AVX512-BF16 / AMX; never fp16). */
int starnn_conv2d_native_cpu(starnn_dtype dt);
/* Whether the CPU passes of g in dt (16-bit) widen their data to fp32 and
 * run the fp32 kernels: every pass where oneDNN has no native kernels for
 * dt, else the 1x1 convolutions into NCHW that the routes r put on the
 * fp32 sgemm kernels. Their weights' packed copies are then fp32, of the
 * widened values. */
int starnn_conv2d_widened_cpu(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                              const struct starnn_conv2d_routes *r);

/* --------------------------------------------------- conv2d_pack.c
 * Weights in oneDNN's layouts. On oneDNN CPUs the forward and
 * backward-data passes read w in oneDNN's blocked weight layouts; a
 * layer's passes of one step (one task per batch part) all read the same
 * w, so it is packed once into that layout by a conv2d_pack_weight task,
 * which runs again only when w has been written since (its version,
 * runtime/core/tensor.h), and the _packed codelets read the packed copy
 * (they also take w: their kernel reorders w itself if the packed layout
 * is not its primitive's). With packing on, a copy in a layout that
 * runtime/base/types.h describes is also offered to the tasks that update
 * w (the optimizers, codelets/copy.h), which keep it current. CPU only
 * (no device worker: CUDA or OpenCL), oneDNN backend only. */

/* The packed copy of w for one pass of geometry g (x / dy rows lda apart,
 * y / dx rows ldout apart, routes r: the task's), packed again first if w
 * has been written since it was last packed; NULL where the pass takes w
 * as it is: packing off, not the oneDNN backend, device workers, w a part of
 * a larger tensor, or a primitive that reads OIHW itself. 16-bit w that
 * the passes widen gets an fp32 copy of its widened values. *rc: 0 or the
 * error. */
starnn_tensor *starnn_conv2d_packed_copy(starnn_tensor *w, enum starnn_conv2d_pass pass,
                                         const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                         const struct starnn_conv2d_routes *r, size_t lda, size_t ldout, float beta,
                                         int *rc);
/* For the forward of a row part of w (output channels o0 .. o0 + g->o, a
 * channel-split task): a whole copy of the root tensor in the blocked
 * layout the part's primitive reads (the same for every part), whose
 * slice the part's task reads (conv2d_fwd_sliced); NULL where that does
 * not apply (packing not on, not oneDNN, device workers, not a part of
 * whole blocks of rows, a layout runtime/base/types.h does not describe). */
starnn_tensor *starnn_conv2d_sliced_copy(starnn_tensor *w, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                         const struct starnn_conv2d_routes *r, size_t lda, size_t ldout, int *rc);
/* A whole copy of root (a whole weight tensor) in the blocked layout L
 * (runtime/base/types.h; L->o is taken from root, the header is L itself,
 * the data 64-byte aligned), made by a conv2d_pack_blocked task where root
 * was written since the copy was last made (16-bit root: its values
 * widened, then put into L, which rounds them back where L is bf16 in
 * pairs), and kept current by the optimizers as they write root
 * (codelets/copy.h); NULL where root has no room for one more derived
 * tensor, or where the copy cannot be made (*rc). The passes of root's
 * row parts read slices of it (starnn_conv2d_fwd_dnnl_sliced,
 * starnn_convt2d_bwd_data_dnnl_sliced). */
starnn_tensor *starnn_conv2d_blocked_copy(starnn_tensor *root, const struct starnn_blocked_weights *L, int *rc);
/* The pack tasks submitted since the program began. */
uint64_t starnn_conv2d_pack_count(void);

/* The weight gradients' layouts (runtime/core/tensor.h: wl), for the
 * submit functions of conv2d and convt2d: a dw is written in a kernel's
 * blocked layout where its first writer finds one.
 * starnn_dw_layout_open: whether dw's layout is still to be chosen and may
 * be blocked (one task writes all of it, as yet unwritten, whole and
 * dense; the oneDNN backend, no device worker, packing not off; the tensor
 * layer allows it: one rank): then the caller asks its kernel and sets the
 * answer, OIHW otherwise, with starnn_tensor_set_wlayout.
 * starnn_dw_layout_check: STARNN_EINVAL with a message where dw is blocked
 * and not one oneDNN task writes it. */
int starnn_dw_layout_open(const starnn_tensor *dw, int one_task);
int starnn_dw_layout_check(const char *op, const starnn_tensor *dw, int one_task);
/* conv2d's: whether one task would write dw in a blocked layout (dw
 * already in one, or still open and oneDNN's primitive for the whole of g
 * writes one); and dw's layout chosen and checked for a pass cut into
 * `parts` tasks (*L: it). */
int starnn_conv2d_dw_blocked_whole(const starnn_tensor *dw, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                   const struct starnn_conv2d_routes *r);
int starnn_conv2d_dw_layout(starnn_tensor *dw, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, int parts, struct starnn_blocked_weights *L);

/* A CPU-only codelet var_cl of a conv2d pass or copy: fn(buffers, cl_arg,
 * DT), label nm, perfmodel starnn_conv2d_<op>_<dt> with footprint fp. */
#define STARNN_CONV2D_CPU_CL(op, nm, fn, dt, DT, fp, nb, ...)                                                 \
	static void op##_##dt##_cpu(void *buffers[], void *cl_arg) { fn(buffers, cl_arg, DT); }             \
	static STARNN_PERFMODEL_FP(conv2d_##op, dt, fp);                                                    \
	static struct starpu_codelet op##_##dt##_cl = {                                                     \
		.name = nm,                                                                                 \
		.cpu_funcs = {op##_##dt##_cpu},                                                             \
		.cpu_funcs_name = {#op "_" #dt "_cpu"},                                                     \
		.nbuffers = nb,                                                                             \
		.modes = {__VA_ARGS__},                                                                     \
		STARNN_MODELS(conv2d_##op, dt),                                                             \
	};

#endif
