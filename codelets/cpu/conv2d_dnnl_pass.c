/* Running a pass on the oneDNN kernels (codelets/cpu/conv2d_dnnl.h), and
 * conv2d's forward and backward-data passes: the routes they take (the
 * 1x1 sgemm kernels into NCHW, the direct NCHW first layer, Winograd)
 * decided from the routes argument, the shape and what oneDNN picks on
 * this processor, and activations strided over several samples (a
 * concatenation's half) run sample by sample rather than copied. */
#include <string.h>

#include "codelets/cpu/conv2d_dnnl.h"

int starnn_conv2d_1x1_gemm(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *r)
{
	r = starnn_dnnl_routes(r);
	if (dt != STARNN_FP32 || r->onebyone == STARNN_CONV2D_1X1_DNNL || !starnn_conv2d_1x1_nchw_ok(g))
		return 0;
	return 1; /* (auto and gemm alike: codelets/kernels/conv2d.h) */
}

int starnn_conv2d_nchw_in_direct(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *r)
{
	r = starnn_dnnl_routes(r);
	if (dt != STARNN_FP32 || r->nchw_in == STARNN_CONV2D_NCHW_IN_DNNL || !starnn_conv2d_fwd_nchw_direct_ok(g))
		return 0;
	return r->nchw_in == STARNN_CONV2D_NCHW_IN_DIRECT || starnn_conv2d_dnnl_block(STARNN_FP32) == 8;
}

int starnn_conv2d_dnnl_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt,
                                const struct starnn_conv2d_routes *r)
{
	r = starnn_dnnl_routes(r);
	if (dt != STARNN_FP32 || g->k != 3 || r->algo == STARNN_CONV2D_ALGO_DIRECT)
		return 0;
	if (r->algo == STARNN_CONV2D_ALGO_WINOGRAD)
		return 1;
	if (starnn_conv2d_dnnl_block(STARNN_FP32) != 16 || g->h * g->w < STARNN_CONV2D_WINO_MIN_HW)
		return 0;
	if (pass == STARNN_CONV2D_BWD_WEIGHT)
		return g->c >= 16 && g->o >= 16 && g->c * g->o <= STARNN_CONV2D_WINO_MAX_WGRAD_CO;
	const size_t in = pass == STARNN_CONV2D_BWD_DATA ? g->o : g->c, out = pass == STARNN_CONV2D_BWD_DATA ? g->c : g->o;
	return in >= 32 && out >= 16;
}

int starnn_dnnl_run(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                    const struct starnn_conv2d_routes *r, const void *a, size_t lda, const void *b, size_t ldb,
                    const void *packed, const float *bias, float beta, void *out, size_t ldout)
{
	const struct packed_ref p = {packed, 0, 0};
	return starnn_dnnl_run_packed(kind, pass, sdt, g, r, a, lda, b, ldb, packed ? &p : NULL, bias, beta, out, ldout);
}

/* (strided: samples further apart than a sample's size) */
struct dnnl_conv starnn_dnnl_data_pass_key(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                                           const struct starnn_conv2d_routes *r, size_t lda, size_t ldb, int bias,
                                           float beta, size_t ldout, int *per_sample)
{
	const size_t xs = g->c * g->h * g->w, ys = g->o * g->h * g->w * (kind ? 4 : 1);
	const size_t as = pass == STARNN_CONV2D_FWD ? xs : ys, os = pass == STARNN_CONV2D_FWD ? ys : xs;
	*per_sample = g->n > 1 && (lda > as || ldout > os);
	if (!*per_sample)
		return starnn_dnnl_key(kind, pass, sdt, g, r, lda, ldb, bias, beta, ldout);
	struct starnn_conv2d_geom g1 = *g;
	g1.n = 1;
	return starnn_dnnl_key(kind, pass, sdt, &g1, r, as, ldb, bias, beta, os);
}

/* pk: b packed (NULL: none; used when its layout is the primitive's, else
 * b is reordered as without it). */
int starnn_dnnl_run_packed(int kind, int pass, starnn_dtype sdt, const struct starnn_conv2d_geom *g,
                           const struct starnn_conv2d_routes *r, const void *a, size_t lda, const void *b, size_t ldb,
                           const struct packed_ref *pk, const float *bias, float beta, void *out, size_t ldout)
{
	if (kind == 0 && g->n && g->o && g->h && g->w && starnn_conv2d_1x1_gemm(g, sdt, r)) {
		if (pass == STARNN_CONV2D_FWD)
			starnn_conv2d_1x1_nchw_fwd_cpu(g, a, lda, b, ldb, bias, out, ldout);
		else if (pass == STARNN_CONV2D_BWD_DATA)
			starnn_conv2d_1x1_nchw_bwd_data_cpu(g, a, lda, b, ldb, beta, out, ldout);
		else
			starnn_conv2d_1x1_nchw_bwd_weight_cpu(g, a, lda, b, ldb, beta, out, ldout, (float *)bias);
		return 0;
	}
	if (kind == 0 && pass == STARNN_CONV2D_FWD && g->n && g->o && g->h && g->w && g->c &&
	    starnn_conv2d_nchw_in_direct(g, sdt, r)) {
		float *work = starnn_dnnl_buf(2, starnn_conv2d_fwd_nchw_direct_workspace(g) * sizeof *work);
		if (!work)
			return starnn_error(STARNN_ENOMEM, "conv2d: cannot allocate the direct forward's workspace (c %zu o %zu)",
			                    g->c, g->o);
		starnn_conv2d_fwd_nchw_direct_cpu(g, a, lda, b, ldb, bias, out, ldout, work);
		return 0;
	}
	if (sdt != STARNN_FP32 && sdt != STARNN_BF16)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): %s: only fp32 and bf16 are supported",
		                    starnn_dtype_name(sdt));
	if (g->n == 0 || g->c == 0 || g->o == 0 || g->h == 0 || g->w == 0)
		return 0;
	/* An activation whose samples lie further apart than one sample's
	 * size (a channel view: a concatenation half of a micro-batch part)
	 * is not the dense layout any primitive takes, so the primitive's
	 * reorder would copy all of it. A forward or backward-data pass over
	 * several samples then runs sample by sample instead, each sample
	 * described as dense (one sample's stride is never used): no copy. */
	const size_t es = sdt == STARNN_FP32 ? 4 : 2;
	if (pass != STARNN_CONV2D_BWD_WEIGHT) {
		int per_sample;
		const struct dnnl_conv key =
			starnn_dnnl_data_pass_key(kind, pass, sdt, g, r, lda, ldb, bias != NULL, beta, ldout, &per_sample);
		return per_sample ? starnn_dnnl_exec_acc(&key, a, b, pk, bias, beta, out, NULL, 0, g->n, lda * es, ldout * es)
		                  : starnn_dnnl_exec(&key, a, b, pk, bias, beta, out);
	}
	const size_t xs = g->c * g->h * g->w, ys = g->o * g->h * g->w * (kind ? 4 : 1);
	/* The same for a weight gradient whose dw is in the primitive's own
	 * layout (g->dwb: dense, no output reorder): the first sample into dw
	 * and db (with beta), each other one into this thread's scratch, added
	 * to them (starnn's sums, not oneDNN's accumulating reorders). */
	if (g->dwb && g->n > 1 && (lda > xs || ldb > ys)) {
		struct starnn_conv2d_geom g1 = *g;
		g1.n = 1;
		const struct dnnl_conv key0 = starnn_dnnl_key(kind, pass, sdt, &g1, r, xs, ys, bias != NULL, beta, ldout),
		                       key = starnn_dnnl_key(kind, pass, sdt, &g1, r, xs, ys, bias != NULL, 0.0f, ldout);
		const size_t nw = g->o * g->c * g->k * g->k;
		float *tmp = starnn_dnnl_buf(7, (nw + g->o) * sizeof *tmp), *dw = out, *db = (float *)bias;
		if (!tmp)
			return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate a weight gradient's sample sum");
		STARNN_CHECK(starnn_dnnl_exec(&key0, a, b, NULL, bias, beta, out));
		for (size_t k = 1; k < g->n; k++) {
			STARNN_CHECK(starnn_dnnl_exec(&key, (const char *)a + k * lda * es, (const char *)b + k * ldb * es, NULL,
			                              db ? tmp + nw : NULL, 0.0f, tmp));
			starnn_axpy_cpu(1, nw, 1.0f, tmp, nw, dw, nw);
			if (db)
				starnn_axpy_cpu(1, g->o, 1.0f, tmp + nw, g->o, db, g->o);
		}
		return 0;
	}
	struct dnnl_conv key = starnn_dnnl_key(kind, pass, sdt, g, r, lda, ldb, bias != NULL, beta, ldout);
	return starnn_dnnl_exec(&key, a, b, pk, bias, beta, out);
}

int starnn_conv2d_fwd_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *r,
                           const void *x, size_t ldx, const void *w, size_t ldw, const float *b, void *y, size_t ldy)
{
	return starnn_dnnl_run(0, STARNN_CONV2D_FWD, dt, g, r, x, ldx, w, ldw, NULL, b, 0.0f, y, ldy);
}

int starnn_conv2d_fwd_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *w,
                                  size_t ldw, const void *packed, const float *b, void *y, size_t ldy)
{
	return starnn_dnnl_run(0, STARNN_CONV2D_FWD, dt, g, r, x, ldx, w, ldw, packed, b, 0.0f, y, ldy);
}

int starnn_conv2d_fwd_dnnl_sliced(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *w,
                                  size_t ldw, const void *whole, size_t row0, const float *b, void *y, size_t ldy)
{
	const struct packed_ref p = {whole, row0, 1};
	return starnn_dnnl_run_packed(0, STARNN_CONV2D_FWD, dt, g, r, x, ldx, w, ldw, whole ? &p : NULL, b, 0.0f, y, ldy);
}

int starnn_conv2d_bwd_data_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                const struct starnn_conv2d_routes *r, const void *dy, size_t ldy, const void *w,
                                size_t ldw, float beta, void *dx, size_t ldx)
{
	return starnn_dnnl_run(0, STARNN_CONV2D_BWD_DATA, dt, g, r, dy, ldy, w, ldw, NULL, NULL, beta, dx, ldx);
}

int starnn_conv2d_bwd_data_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                       const struct starnn_conv2d_routes *r, const void *dy, size_t ldy, const void *w,
                                       size_t ldw, const void *packed, float beta, void *dx, size_t ldx)
{
	return starnn_dnnl_run(0, STARNN_CONV2D_BWD_DATA, dt, g, r, dy, ldy, w, ldw, packed, NULL, beta, dx, ldx);
}
