/* Building the oneDNN kernels' cache entries (codelets/cpu/conv2d_dnnl.h):
 * the memory descriptors of starnn's layouts, attributes (user-managed
 * scratchpads, sum post-ops), the reorders around a primitive, the
 * (de)convolution primitives, and a transposed forward as a 1x1
 * convolution.
 *
 * starnn's tensors are NCHW (weights OIHW), possibly channel slices of a
 * larger tensor (rows ld apart), or activations in oneDNN's blocked
 * layouts. oneDNN's fast direct convolutions work on blocked layouts
 * (nChw16c, OIhw16i16o ...), which the primitive chooses (format "any");
 * an entry reorders its inputs into those layouts and the result back,
 * adding it to beta times the old values when beta != 0 (a reorder with a
 * sum post-op: one rounding for 16-bit outputs, the sum done in fp32).
 * Where the primitive takes the user's layout no reorder is made. */
#include <string.h>

#include "codelets/cpu/conv2d_dnnl.h"

/* An activation [n, c, h, w] with samples ld elements apart: NCHW (cb 1),
 * NHWC (cb = c), or channels in blocks of cb (c a multiple of cb; oneDNN's
 * nChw8c / nChw16c for 8 / 16): runtime/base/types.h, oneDNN's blocked layouts
 * with the samples' stride replaced (channel slices of a larger tensor). */
static dnnl_status_t act_md(dnnl_memory_desc_t *md, size_t n, size_t c, size_t h, size_t w, size_t ld,
                            dnnl_data_type_t dt, size_t cb)
{
	dnnl_dims_t dims = {(dnnl_dim_t)n, (dnnl_dim_t)c, (dnnl_dim_t)h, (dnnl_dim_t)w};
	/* one block of 8 or 16 is described as oneDNN's nChw8c / nChw16c where
	 * those are its pick (the same bytes as NHWC, not the same descriptor) */
	int pick = starnn_conv2d_dnnl_block(dt == dnnl_bf16 ? STARNN_BF16 : STARNN_FP32);
	if (cb == c && c > 1 && pick != (int)cb) {
		dnnl_dims_t strides = {(dnnl_dim_t)ld, 1, (dnnl_dim_t)(w * c), (dnnl_dim_t)c};
		return dnnl_memory_desc_init_by_strides(md, 4, dims, dt, strides);
	}
	if (cb == 8 || cb == 16) {
		dnnl_status_t s = dnnl_memory_desc_init_by_tag(md, 4, dims, dt, cb == 16 ? dnnl_nChw16c : dnnl_nChw8c);
		if (s == dnnl_success && (c % cb || md->format_kind != dnnl_blocked))
			s = dnnl_invalid_arguments;
		if (s == dnnl_success)
			md->format_desc.blocking.strides[0] = (dnnl_dim_t)ld;
		return s;
	}
	if (cb > 1) {
		/* nChw16c's descriptor, its block and strides made cb's */
		dnnl_status_t s = dnnl_memory_desc_init_by_tag(md, 4, dims, dt, dnnl_nChw16c);
		if (s == dnnl_success && (c % cb || md->format_kind != dnnl_blocked))
			s = dnnl_invalid_arguments;
		if (s == dnnl_success) {
			dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
			md->padded_dims[1] = (dnnl_dim_t)c;
			bd->inner_nblks = 1, bd->inner_blks[0] = (dnnl_dim_t)cb, bd->inner_idxs[0] = 1;
			bd->strides[0] = (dnnl_dim_t)ld;
			bd->strides[1] = (dnnl_dim_t)(h * w * cb);
			bd->strides[2] = (dnnl_dim_t)(w * cb);
			bd->strides[3] = (dnnl_dim_t)cb;
		}
		return s;
	}
	dnnl_dims_t strides = {(dnnl_dim_t)ld, (dnnl_dim_t)(h * w), (dnnl_dim_t)w, 1};
	return dnnl_memory_desc_init_by_strides(md, 4, dims, dt, strides);
}

/* Weights as oneDNN sees them, [o, c, k, k]: a convolution's OIHW with
 * rows (output channels) ld elements apart; a transposed convolution's
 * PyTorch IOHW [c, o, 2, 2] with rows (input channels) ld apart. */
static dnnl_status_t wei_md(dnnl_memory_desc_t *md, int kind, size_t o, size_t c, size_t k, size_t ld,
                            dnnl_data_type_t dt)
{
	dnnl_dims_t dims = {(dnnl_dim_t)o, (dnnl_dim_t)c, (dnnl_dim_t)k, (dnnl_dim_t)k};
	dnnl_dims_t strides = {(dnnl_dim_t)ld, (dnnl_dim_t)(k * k), (dnnl_dim_t)k, 1};
	if (kind == 1)
		strides[0] = (dnnl_dim_t)(k * k), strides[1] = (dnnl_dim_t)ld;
	return dnnl_memory_desc_init_by_strides(md, 4, dims, dt, strides);
}

/* The user layout of an activation of e's pass: act_md's, or for a tile
 * (e->fh != 0) a window of rows x cols pixels in the image's layout (its
 * strides; the caller points the data at the window's first pixel). */
static dnnl_status_t act_window_md(dnnl_memory_desc_t *md, const struct dnnl_conv *e, size_t c, size_t rows,
                                   size_t cols, size_t ld, dnnl_data_type_t dt, size_t cb)
{
	if (!e->fh)
		return act_md(md, e->n, c, rows, cols, ld, dt, cb);
	dnnl_status_t s = act_md(md, e->n, c, e->fh, e->fw, ld, dt, cb);
	if (s == dnnl_success && md->format_kind == dnnl_blocked) {
		md->dims[2] = md->padded_dims[2] = (dnnl_dim_t)rows;
		md->dims[3] = md->padded_dims[3] = (dnnl_dim_t)cols;
	} else if (s == dnnl_success)
		s = dnnl_invalid_arguments;
	return s;
}

/* Attributes with a user-managed scratchpad. */
static dnnl_status_t user_scratchpad_attr(dnnl_primitive_attr_t *attr)
{
	dnnl_status_t s = dnnl_primitive_attr_create(attr);
	if (s == dnnl_success)
		s = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
	return s;
}

dnnl_status_t starnn_dnnl_scratchpad_of(const_dnnl_primitive_desc_t pd, dnnl_memory_t *mem, size_t *bytes)
{
	*mem = NULL;
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	size_t n = md ? dnnl_memory_desc_get_size(md) : 0;
	if (!n)
		return dnnl_success;
	if (n > *bytes)
		*bytes = n;
	return dnnl_memory_create(mem, md, starnn_dnnl_engine, DNNL_MEMORY_NONE);
}

dnnl_status_t starnn_dnnl_sum_attr(dnnl_primitive_attr_t *attr, dnnl_post_ops_t *po, int accumulate, float beta)
{
	dnnl_status_t s = user_scratchpad_attr(attr);
	if (s == dnnl_success && accumulate && (s = dnnl_post_ops_create(po)) == dnnl_success &&
	    (s = dnnl_post_ops_append_sum(*po, beta)) == dnnl_success)
		s = dnnl_primitive_attr_set_post_ops(*attr, *po);
	return s;
}

void starnn_dnnl_desc_free(dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr, dnnl_post_ops_t po)
{
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
}

/* A reorder from -> to into *re (NULL when the layouts are equal), with
 * dst = beta dst + src (a sum post-op) when accumulate; *scratch its
 * scratchpad memory object (handle set later), its size raised into
 * *scratch_bytes. */
static dnnl_status_t make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, int accumulate,
                                  float beta, dnnl_primitive_t *re, dnnl_memory_t *scratch, size_t *scratch_bytes)
{
	*re = NULL;
	if (!accumulate && dnnl_memory_desc_equal(from, to))
		return dnnl_success;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t s = starnn_dnnl_sum_attr(&attr, &po, accumulate, beta);
	if (s == dnnl_success && (s = dnnl_reorder_primitive_desc_create(&pd, from, starnn_dnnl_engine, to, starnn_dnnl_engine, attr)) == dnnl_success &&
	    (s = dnnl_primitive_create(re, pd)) == dnnl_success)
		s = starnn_dnnl_scratchpad_of(pd, scratch, scratch_bytes);
	starnn_dnnl_desc_free(pd, attr, po);
	return s;
}

/* AMX_WGRAD_MAX_SIDE (conv2d_dnnl.h): bf16 weight gradients whose input
 * is at most that many pixels high and wide use the AMX kernel (correct up
 * to 192x192 on the UNet's channel counts, checked by tests/codelets/conv2d;
 * 4-5x faster than the next implementation); larger ones avoid it, and on
 * AMX are computed in tiles that fit (wgrad_tiled, conv2d_dnnl_wgrad.c).
 * Wider inputs are not safe even when small: oneDNN 2.6 crashes on 16x360
 * (32 -> 32 channels) and gets 96x320 wrong (13 -> 32).
 *
 * The first implementation of op_desc whose name does not contain avoid
 * (NULL: the first), else the first one. oneDNN 2.6's AMX bf16 backward
 * weights convolution (jit:avx512_core_amx_bf16) computes wrong gradients
 * on 384x384 images and writes 3 KiB before its diff_weights buffer
 * (tools/bench/conv and tests/codelets/conv2d reproduce it), so bf16
 * weight gradients of large images avoid it. */
static dnnl_status_t pd_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                               const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint, const char *avoid)
{
	if (!avoid)
		return dnnl_primitive_desc_create(pd, op_desc, attr, starnn_dnnl_engine, hint);
	dnnl_primitive_desc_iterator_t it;
	dnnl_status_t s = dnnl_primitive_desc_iterator_create(&it, op_desc, attr, starnn_dnnl_engine, hint);
	if (s != dnnl_success)
		return s;
	dnnl_primitive_desc_t first = NULL;
	*pd = NULL;
	do {
		dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
		if (!cand)
			break;
		const char *impl = NULL;
		if (dnnl_primitive_desc_query(cand, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
		    !strstr(impl, avoid)) {
			*pd = cand;
			break;
		}
		if (!first)
			first = cand;
		else
			dnnl_primitive_desc_destroy(cand);
	} while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
	dnnl_primitive_desc_iterator_destroy(it);
	if (*pd) {
		if (first)
			dnnl_primitive_desc_destroy(first);
		return dnnl_success;
	}
	*pd = first;
	return first ? dnnl_success : dnnl_unimplemented;
}

/* conv_build's answer when oneDNN's pick for a bf16 transposed weight
 * gradient is its AMX kernel (see starnn_dnnl_conv_create). */
#define BUILD_WIDEN 1

/* Builds the cached convolution for a pass with primitive type pdt (the
 * user's dt, or fp32 for a widened bf16 pass). User layouts: a, b inputs
 * and out (ld: their row strides), per pass:
 *   fwd:        a = x [n,c,h,w], b = w [o,c,k,k], out = y [n,o,h,w]
 *   bwd_data:   a = dy,           b = w,           out = dx
 *   bwd_weight: a = x,            b = dy,          out = dw (fp32) */
static int conv_build(struct dnnl_conv *e, dnnl_data_type_t pdt)
{
	char shape[160];
	int rc = 0;
	const size_t n = e->n, c = e->c, o = e->o, h = e->h, w = e->w, k = e->k;
	/* dt: the user's buffers; the primitive's are pdt (a widened pass
	 * converts in the input reorders it makes anyway) */
	const dnnl_data_type_t dt = (dnnl_data_type_t)e->dt;
	/* internal (primitive) output type: the 16-bit result of a backward
	 * data pass is summed in fp32 when accumulating */
	const dnnl_data_type_t dt_dx = e->accumulate ? dnnl_f32 : pdt;
	dnnl_memory_desc_t ux, uw, uy, ax, aw, ay, adx, adw, ub;
	/* convolution: stride 1, 'same' padding; transposed: 2x2, stride 2 */
	const int kind = e->kind;
	const size_t yh = kind ? 2 * h : h, yw = kind ? 2 * w : w;
	/* a tile's input: its output pixels and their neighbours within the
	 * image (e->pad: zero padding where there are none) */
	const size_t tile = e->fh != 0;
	const size_t xh = tile ? h + k - 1 - (size_t)(e->pad[0] + e->pad[1]) : h,
	             xw = tile ? w + k - 1 - (size_t)(e->pad[2] + e->pad[3]) : w;
	dnnl_dims_t xd = {(dnnl_dim_t)n, (dnnl_dim_t)c, (dnnl_dim_t)xh, (dnnl_dim_t)xw};
	dnnl_dims_t wd = {(dnnl_dim_t)o, (dnnl_dim_t)c, (dnnl_dim_t)k, (dnnl_dim_t)k};
	dnnl_dims_t yd = {(dnnl_dim_t)n, (dnnl_dim_t)o, (dnnl_dim_t)yh, (dnnl_dim_t)yw};
	dnnl_dims_t bd = {(dnnl_dim_t)o};
	dnnl_dims_t stride = {1, 1}, pad = {(dnnl_dim_t)(k / 2), (dnnl_dim_t)(k / 2)}, padr = {pad[0], pad[1]};
	if (kind)
		stride[0] = stride[1] = 2, pad[0] = pad[1] = padr[0] = padr[1] = 0;
	if (tile)
		pad[0] = e->pad[0], padr[0] = e->pad[1], pad[1] = e->pad[2], padr[1] = e->pad[3];
	/* Winograd where asked (e->wino), until oneDNN declines it: then the
	 * direct kernel (retry) */
	dnnl_alg_kind_t alg = kind ? dnnl_deconvolution_direct
	                           : e->wino && pdt == dnnl_f32 ? dnnl_convolution_winograd : dnnl_convolution_direct;
	dnnl_primitive_desc_t fpd = NULL, pd = NULL;
	dnnl_primitive_attr_t attr = NULL;
	DNNL_TRY(user_scratchpad_attr(&attr), "attributes");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ax, 4, xd, pdt, dnnl_format_tag_any), "src descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&aw, 4, wd, pdt, dnnl_format_tag_any), "weights descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ay, 4, yd, pdt, dnnl_format_tag_any), "dst descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&adx, 4, xd, dt_dx, dnnl_format_tag_any), "diff src descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&adw, 4, wd, dnnl_f32, dnnl_format_tag_any), "diff weights descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ub, 1, bd, dnnl_f32, dnnl_x), "bias descriptor");
	/* (a primitive descriptor oneDNN declines with the Winograd algorithm:
	 * everything again with the direct one) */
#define WINO_OR_TRY(call, what)                                                                                \
	do {                                                                                                   \
		dnnl_status_t w_ = (call);                                                                     \
		if (w_ != dnnl_success && alg == dnnl_convolution_winograd) {                                  \
			starnn_dnnl_desc_free(pd, NULL, NULL), starnn_dnnl_desc_free(fpd, NULL, NULL);                                 \
			pd = fpd = NULL;                                                                       \
			alg = dnnl_convolution_direct;                                                         \
			goto retry;                                                                            \
		}                                                                                              \
		DNNL_TRY(w_, what);                                                                            \
	} while (0)
retry:;
	/* the forward primitive (also the hint of the backward ones) */
	dnnl_convolution_desc_t cd;
	if (kind)
		DNNL_TRY(dnnl_deconvolution_forward_desc_init(&cd, dnnl_forward_training, alg, &ax, &aw,
		                                              e->bias ? &ub : NULL, &ay, stride, pad, padr),
		         "forward descriptor");
	else
		DNNL_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, alg, &ax, &aw,
		                                            e->bias ? &ub : NULL, &ay, stride, pad, padr),
		         "forward descriptor");
	WINO_OR_TRY(dnnl_primitive_desc_create(&fpd, &cd, attr, starnn_dnnl_engine, NULL), "forward primitive descriptor");
	dnnl_query_t qa, qb, qout;
	const dnnl_memory_desc_t *ua = NULL, *ubm = NULL, *uo = NULL;
	if (e->pass == STARNN_CONV2D_FWD) {
		DNNL_TRY(act_md(&ux, n, c, h, w, e->lda, dt, e->xb), "x layout");
		DNNL_TRY(wei_md(&uw, kind, o, c, k, e->ldb, dt), "w layout");
		DNNL_TRY(act_md(&uy, n, o, yh, yw, e->ldout, dt, e->yb), "y layout");
		pd = fpd, fpd = NULL;
		qa = dnnl_query_src_md, qb = dnnl_query_weights_md, qout = dnnl_query_dst_md;
		e->arg_a = DNNL_ARG_SRC, e->arg_b = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DST;
		ua = &ux, ubm = &uw, uo = &uy;
	} else if (e->pass == STARNN_CONV2D_BWD_DATA) {
		DNNL_TRY(act_md(&uy, n, o, yh, yw, e->lda, dt, e->yb), "dy layout");
		DNNL_TRY(wei_md(&uw, kind, o, c, k, e->ldb, dt), "w layout");
		DNNL_TRY(act_md(&ux, n, c, h, w, e->ldout, dt, e->xb), "dx layout");
		dnnl_convolution_desc_t bd_;
		if (kind)
			DNNL_TRY(dnnl_deconvolution_backward_data_desc_init(&bd_, alg, &adx, &aw, &ay, stride, pad, pad),
			         "backward data descriptor");
		else
			DNNL_TRY(dnnl_convolution_backward_data_desc_init(&bd_, alg, &adx, &aw, &ay, stride, pad, pad),
			         "backward data descriptor");
		WINO_OR_TRY(dnnl_primitive_desc_create(&pd, &bd_, attr, starnn_dnnl_engine, fpd), "backward data primitive descriptor");
		qa = dnnl_query_diff_dst_md, qb = dnnl_query_weights_md, qout = dnnl_query_diff_src_md;
		e->arg_a = DNNL_ARG_DIFF_DST, e->arg_b = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DIFF_SRC;
		ua = &uy, ubm = &uw, uo = &ux;
	} else {
		DNNL_TRY(act_window_md(&ux, e, c, xh, xw, e->lda, dt, e->xb), "x layout");
		DNNL_TRY(act_window_md(&uy, e, o, yh, yw, e->ldb, dt, e->yb), "dy layout");
		if (e->dwb)
			DNNL_TRY(dnnl_memory_desc_init_by_tag(&uw, 4, wd, dnnl_f32, starnn_dnnl_blocked_tag(kind, e->dwb, e->dwib, e->dwi)),
			         "dw layout");
		else
			DNNL_TRY(wei_md(&uw, kind, o, c, k, e->ldout, dnnl_f32), "dw layout");
		dnnl_convolution_desc_t wd_;
		if (kind)
			DNNL_TRY(dnnl_deconvolution_backward_weights_desc_init(&wd_, alg, &ax, &adw, e->bias ? &ub : NULL, &ay,
			                                                       stride, pad, padr),
			         "backward weights descriptor");
		else
			DNNL_TRY(dnnl_convolution_backward_weights_desc_init(&wd_, alg, &ax, &adw, e->bias ? &ub : NULL, &ay,
			                                                     stride, pad, padr),
			         "backward weights descriptor");
		WINO_OR_TRY(pd_create(&pd, &wd_, attr, fpd,
		                      pdt == dnnl_bf16 && (xh > AMX_WGRAD_MAX_SIDE || xw > AMX_WGRAD_MAX_SIDE) ? "amx" : NULL),
		            "backward weights primitive descriptor");
		const char *impl = NULL;
		if (kind && pdt == dnnl_bf16 &&
		    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
		    strstr(impl, "amx")) {
			rc = BUILD_WIDEN;
			goto fail;
		}
		qa = dnnl_query_src_md, qb = dnnl_query_diff_dst_md, qout = dnnl_query_diff_weights_md;
		e->arg_a = DNNL_ARG_SRC, e->arg_b = DNNL_ARG_DIFF_DST, e->arg_out = DNNL_ARG_DIFF_WEIGHTS;
		ua = &ux, ubm = &uy, uo = &uw;
	}
	const dnnl_memory_desc_t *ia = dnnl_primitive_desc_query_md(pd, qa, 0),
	                         *ib = dnnl_primitive_desc_query_md(pd, qb, 0),
	                         *io = dnnl_primitive_desc_query_md(pd, qout, 0);
	if (!ia || !ib || !io) {
		rc = starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the primitive has no memory descriptors (%s)",
		                  starnn_dnnl_describe(shape, sizeof shape, e));
		goto fail;
	}
	DNNL_TRY(dnnl_primitive_create(&e->conv, pd), "convolution primitive");
	DNNL_TRY(starnn_dnnl_scratchpad_of(pd, &e->scratch[0], &e->bytes_scratch), "scratchpad");
	DNNL_TRY(make_reorder(ua, ia, 0, 0.0f, &e->re_a, &e->scratch[1], &e->bytes_scratch), "input reorder");
	DNNL_TRY(make_reorder(ubm, ib, 0, 0.0f, &e->re_b, &e->scratch[2], &e->bytes_scratch), "input reorder");
	DNNL_TRY(make_reorder(io, uo, e->accumulate, e->beta, &e->re_out, &e->scratch[3], &e->bytes_scratch),
	         "output reorder");
	e->bytes_a = e->re_a ? md_bytes(ia) : 0;
	e->bytes_b = e->re_b ? md_bytes(ib) : 0;
	e->bytes_out = e->re_out ? md_bytes(io) : 0;
	DNNL_TRY(dnnl_memory_create(&e->ua, ua, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->ub, ubm, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->uout, uo, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_a)
		DNNL_TRY(dnnl_memory_create(&e->ia, ia, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_b)
		DNNL_TRY(dnnl_memory_create(&e->ib, ib, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_out)
		DNNL_TRY(dnnl_memory_create(&e->iout, io, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	if (e->bias)
		DNNL_TRY(dnnl_memory_create(&e->bias_mem, &ub, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
fail:
	starnn_dnnl_desc_free(pd, attr, NULL);
	starnn_dnnl_desc_free(fpd, NULL, NULL);
	return rc;
#undef WINO_OR_TRY
}

/* A transposed 2x2 / stride-2 convolution's forward is a 1x1 convolution
 * to 4o channels followed by a spread of its pixels: with w PyTorch's
 * [c, o, 2, 2], y[n, oc, 2i + a, 2j + b] = b[oc] + sum_c x[n, c, i, j]
 * w[c, oc, a, b], so z = conv1x1(x, W) with W[oc * 4 + a * 2 + b, c] =
 * w[c, oc, a, b] (w itself read with strides {1, ld}: no copy) holds every
 * y value, at channel oc * 4 + a * 2 + b of pixel (i, j). oneDNN 2.6 runs
 * its deconvolution (jit:avx2) at 8-39 GFLOP/s on the UNet's up-sampling
 * shapes and its 1x1 convolution (jit_1x1:avx2) at 85-99 GFLOP/s (one
 * thread, batch 2, an AVX2 EPYC); in bf16 on AVX512-BF16 without AMX its
 * deconvolution (jit_bf16:avx512_core_bf16) runs at 3.7-22 GFLOP/s (one
 * thread, batch 1, a Zen 4 EPYC: DNNL_VERBOSE of 128x128 amp-bf16 steps).
 * z is fp32 in both dtypes: a bf16 pass sums in fp32, adds the bias and
 * rounds once in starnn_dnnl_up_spread, as the deconvolution does. Built where oneDNN
 * picks a blocked layout for z (nChw8c / nChw16c, 4o a multiple of the
 * block: fp32 on AVX2 / AVX-512, bf16 on AVX512-BF16; bf16 on AMX is left
 * to the deconvolution by starnn_dnnl_conv_create); returns 1 when it does not (the
 * caller builds the deconvolution), else 0 or the error. */
#define BUILD_NOT_UP 1
static int conv_build_up(struct dnnl_conv *e)
{
	char shape[160];
	int rc = 0;
	const size_t n = e->n, c = e->c, o = e->o, h = e->h, w = e->w;
	const dnnl_data_type_t dt = (dnnl_data_type_t)e->dt;
	dnnl_dims_t xd = {(dnnl_dim_t)n, (dnnl_dim_t)c, (dnnl_dim_t)h, (dnnl_dim_t)w};
	dnnl_dims_t wd = {(dnnl_dim_t)(4 * o), (dnnl_dim_t)c, 1, 1};
	dnnl_dims_t zd = {(dnnl_dim_t)n, (dnnl_dim_t)(4 * o), (dnnl_dim_t)h, (dnnl_dim_t)w};
	dnnl_dims_t wstrides = {1, (dnnl_dim_t)e->ldb, 1, 1};
	dnnl_dims_t stride = {1, 1}, pad = {0, 0};
	dnnl_memory_desc_t ax, aw, az, ux, uw, z8, z16;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_attr_t attr = NULL;
	DNNL_TRY(user_scratchpad_attr(&attr), "attributes");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&ax, 4, xd, dt, dnnl_format_tag_any), "src descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&aw, 4, wd, dt, dnnl_format_tag_any), "weights descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&az, 4, zd, dnnl_f32, dnnl_format_tag_any), "dst descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&z8, 4, zd, dnnl_f32, dnnl_nChw8c), "dst descriptor");
	DNNL_TRY(dnnl_memory_desc_init_by_tag(&z16, 4, zd, dnnl_f32, dnnl_nChw16c), "dst descriptor");
	dnnl_convolution_desc_t cd;
	DNNL_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &ax, &aw, NULL,
	                                            &az, stride, pad, pad),
	         "forward descriptor");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &cd, attr, starnn_dnnl_engine, NULL), "forward primitive descriptor");
	const dnnl_memory_desc_t *ia = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
	                         *ib = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
	                         *io = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	if (!ia || !ib || !io) {
		rc = starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the primitive has no memory descriptors (%s)",
		                  starnn_dnnl_describe(shape, sizeof shape, e));
		goto fail;
	}
	size_t zb = dnnl_memory_desc_equal(io, &z8) && (4 * o) % 8 == 0     ? 8
	            : dnnl_memory_desc_equal(io, &z16) && (4 * o) % 16 == 0 ? 16
	                                                                      : 0;
	if (!zb) {
		rc = BUILD_NOT_UP;
		goto fail;
	}
	DNNL_TRY(act_md(&ux, n, c, h, w, e->lda, dt, e->xb), "x layout");
	DNNL_TRY(dnnl_memory_desc_init_by_strides(&uw, 4, wd, dt, wstrides), "w layout");
	DNNL_TRY(dnnl_primitive_create(&e->conv, pd), "convolution primitive");
	DNNL_TRY(starnn_dnnl_scratchpad_of(pd, &e->scratch[0], &e->bytes_scratch), "scratchpad");
	DNNL_TRY(make_reorder(&ux, ia, 0, 0.0f, &e->re_a, &e->scratch[1], &e->bytes_scratch), "input reorder");
	DNNL_TRY(make_reorder(&uw, ib, 0, 0.0f, &e->re_b, &e->scratch[2], &e->bytes_scratch), "input reorder");
	e->bytes_a = e->re_a ? md_bytes(ia) : 0;
	e->bytes_b = e->re_b ? md_bytes(ib) : 0;
	e->bytes_out = md_bytes(io);
	DNNL_TRY(dnnl_memory_create(&e->ua, &ux, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->ub, &uw, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_a)
		DNNL_TRY(dnnl_memory_create(&e->ia, ia, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	if (e->re_b)
		DNNL_TRY(dnnl_memory_create(&e->ib, ib, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	DNNL_TRY(dnnl_memory_create(&e->iout, io, starnn_dnnl_engine, DNNL_MEMORY_NONE), "memory");
	e->arg_a = DNNL_ARG_SRC, e->arg_b = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DST;
	e->zb = zb;
fail:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return rc;
}

/* The cached convolution of a pass: in its own type, except the weight
 * gradient of a bf16 transposed convolution where oneDNN picks its AMX
 * kernel. oneDNN 2.6's AMX kernel for that pass (2x2, stride 2) is 1.1-3x
 * slower than its fp32 kernel at the UNet's shapes on a Sapphire Rapids
 * (DNNL_VERBOSE, 128x128 amp-bf16 steps: 2.7 against 0.8 ms at 32 -> 16
 * channels, 64x64 -> 128x128), so there the pass runs the fp32 kernel on
 * x and dy widened inside the reorders into its blocked layout (exact:
 * every bf16 value is an fp32 value; products and sums in fp32 as in the
 * bf16 kernel). The codelets take convt_wgrad_gemm before it wherever
 * bf16 is native; this stays for layouts that route declines. */
int starnn_dnnl_conv_create(struct dnnl_conv *e)
{
	/* (starnn_dnnl_up_spread's per-lane tables hold STARNN_CBLOCK_MAX
	 * lanes: a block the tensor layer allows; bf16 on AMX keeps the
	 * deconvolution, whose NHWC kernel the route was not measured against) */
	const int up_dt = e->dt == (int)dnnl_f32 ||
	                  (e->dt == (int)dnnl_bf16 && starnn_conv2d_dnnl_block(STARNN_BF16) != STARNN_CONV2D_NHWC);
	if (e->kind == 1 && e->pass == STARNN_CONV2D_FWD && up_dt && !e->accumulate && e->yb <= STARNN_CBLOCK_MAX) {
		int up = conv_build_up(e);
		if (up != BUILD_NOT_UP)
			return up;
	}
	int rc = conv_build(e, (dnnl_data_type_t)e->dt);
	return rc == BUILD_WIDEN ? conv_build(e, dnnl_f32) : rc;
}
