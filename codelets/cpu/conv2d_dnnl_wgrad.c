/* conv2d's weight gradient on the oneDNN backend (codelets/kernels/conv2d.h:
 * enum starnn_conv2d_wgrad): the route a layer takes, and the routes of
 * starnn's own (fp32 im2col + sgemm; bf16 im2col + one bf16 matmul of
 * oneDNN; the direct AVX2 kernel) beside oneDNN's primitive, which runs
 * on tiles of large images (fp32 on AVX-512: cache; bf16 on AMX: oneDNN
 * 2.6's AMX kernel is wrong on large images). Every route but oneDNN's
 * whole-image primitive writes dw in OIHW; that one may write it in its
 * own blocked layout (g->dwb). */
#include <stdlib.h>
#include <string.h>

#include "codelets/cpu/conv2d_dnnl.h"
#include "runtime/base/half.h"

static size_t wgrad_tile_side(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                              const struct starnn_conv2d_routes *r);

int starnn_dnnl_wgrad_writes_oihw(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r)
{
	if (starnn_conv2d_1x1_gemm(g, dt, r))
		return 1;
	const enum starnn_conv2d_wgrad route = starnn_conv2d_dnnl_wgrad_route(g, dt, r);
	return route == STARNN_CONV2D_WGRAD_GEMM || route == STARNN_CONV2D_WGRAD_DIRECT || wgrad_tile_side(g, dt, r);
}

enum starnn_conv2d_wgrad starnn_conv2d_dnnl_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                                        const struct starnn_conv2d_routes *r)
{
	r = starnn_dnnl_routes(r);
	/* auto's gemm layers (both dtypes): wide, on few pixels */
	const int wide = g->c >= STARNN_CONV2D_WGRAD_MIN_C && g->o >= STARNN_CONV2D_WGRAD_MIN_O &&
	                 g->h * g->w <= STARNN_CONV2D_WGRAD_GEMM_MAX_HW;
	if (dt == STARNN_BF16 && g->k >= 3 && g->k % 2 && starnn_conv2d_dnnl_bf16()) {
		const int mode = r->wgrad;
		if (mode == STARNN_CONV2D_WGRAD_GEMM)
			return STARNN_CONV2D_WGRAD_GEMM;
		return mode == STARNN_CONV2D_WGRAD_AUTO && wide &&
		               starnn_conv2d_dnnl_block(STARNN_BF16) == STARNN_CONV2D_NHWC
		           ? STARNN_CONV2D_WGRAD_GEMM
		           : STARNN_CONV2D_WGRAD_DNNL;
	}
	if (dt != STARNN_FP32 || g->k < 2)
		return STARNN_CONV2D_WGRAD_DNNL;
	const int direct = starnn_conv2d_wgrad_direct_ok(g);
	switch (r->wgrad) {
	case STARNN_CONV2D_WGRAD_GEMM:
		return STARNN_CONV2D_WGRAD_GEMM;
	case STARNN_CONV2D_WGRAD_DIRECT:
		return direct ? STARNN_CONV2D_WGRAD_DIRECT : STARNN_CONV2D_WGRAD_DNNL;
	case STARNN_CONV2D_WGRAD_DNNL:
		return STARNN_CONV2D_WGRAD_DNNL;
	default: {
		const int blk = starnn_conv2d_dnnl_block(STARNN_FP32);
		if (blk != 8 && blk != 16)
			return STARNN_CONV2D_WGRAD_DNNL;
		if (wide)
			return STARNN_CONV2D_WGRAD_GEMM;
		if (blk == 8)
			return direct ? STARNN_CONV2D_WGRAD_DIRECT : STARNN_CONV2D_WGRAD_DNNL;
		/* AVX-512: oneDNN's 16-lane kernel, but where x is NCHW (input
		 * channels not a multiple of 16: a UNet's first layer) */
		return direct && g->xb <= 1 && g->c % 16 ? STARNN_CONV2D_WGRAD_DIRECT : STARNN_CONV2D_WGRAD_DNNL;
	}
	}
}

/* The error of the weight-gradient routes when their scratch cannot be had. */
static int wgrad_nomem(const struct starnn_conv2d_geom *g)
{
	return starnn_error(STARNN_ENOMEM, "conv2d: cannot allocate the weight gradient's buffers (n %zu c %zu o %zu %zux%zu)",
	                    g->n, g->c, g->o, g->h, g->w);
}

/* An activation [n, c, hw] in blocks of cb channels (runtime/base/types.h;
 * cb <= 1: NCHW), samples ld apart, copied to dense NCHW. */
static void to_nchw(const float *s, size_t n, size_t c, size_t hw, size_t ld, size_t cb, float *d)
{
	for (size_t r = 0; r < n; r++)
		for (size_t k0 = 0; k0 < c; k0 += cb) {
			const float *sp = s + r * ld + k0 * hw;
			float *dp = d + (r * c + k0) * hw;
			for (size_t p = 0; p < hw; p++)
				for (size_t l = 0; l < cb; l++)
					dp[l * hw + p] = sp[p * cb + l];
		}
}

/* The gemm route of the fp32 weight gradient (codelets/kernels/conv2d.h): blocked
 * x and dy to NCHW in the thread's scratch (NCHW ones are read in place),
 * then the im2col kernels, dw and db accumulated with beta as oneDNN's
 * route does. */
static int wgrad_gemm(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy, size_t ldy,
                      float beta, float *dw, size_t ldw, float *db)
{
	const size_t hw = g->h * g->w, xb = g->xb > 1 ? g->xb : 1, yb = g->yb > 1 ? g->yb : 1;
	struct starnn_conv2d_geom p = *g;
	p.xb = p.yb = 1;
	size_t nwork = starnn_conv2d_cpu_workspace(&p, STARNN_CONV2D_BWD_WEIGHT);
	float *work = starnn_dnnl_buf(2, (nwork ? nwork : 1) * sizeof *work);
	float *xs = xb > 1 ? starnn_dnnl_buf(0, g->n * g->c * hw * sizeof *xs) : NULL;
	float *dys = yb > 1 ? starnn_dnnl_buf(1, g->n * g->o * hw * sizeof *dys) : NULL;
	if (!work || (xb > 1 && !xs) || (yb > 1 && !dys))
		return wgrad_nomem(g);
	if (xs) {
		to_nchw(x, g->n, g->c, hw, ldx, xb, xs);
		x = xs, ldx = g->c * hw;
	}
	if (dys) {
		to_nchw(dy, g->n, g->o, hw, ldy, yb, dys);
		dy = dys, ldy = g->o * hw;
	}
	starnn_conv2d_bwd_weight_cpu(&p, x, ldx, dy, ldy, beta, dw, ldw, work);
	if (db)
		starnn_conv2d_bwd_bias_cpu(g->n, g->o, hw, dy, ldy, beta, db);
	return 0;
}

/* The direct route (codelets/kernels/conv2d.h): x and dy read in place. */
static int wgrad_direct(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy, size_t ldy,
                        float beta, float *dw, size_t ldw, float *db)
{
	float *work = starnn_dnnl_buf(2, starnn_conv2d_wgrad_direct_workspace(g) * sizeof *work);
	if (!work)
		return wgrad_nomem(g);
	starnn_conv2d_bwd_weight_direct_cpu(g, x, ldx, dy, ldy, beta, dw, ldw, db, work);
	return 0;
}

/* The matmul of the bf16 gemm route for (m, n, k, ldc, beta) into *out:
 * thread t's cached one, else a new one; an error when oneDNN has no bf16
 * matmul here. */
static int mm_entry(struct dnnl_thread *t, size_t m, size_t n, size_t k, size_t ldc, float beta,
                    struct dnnl_mm **out)
{
	for (int i = 0; i < MM_SLOTS; i++) {
		struct dnnl_mm *e = t->mm[i];
		if (e && e->m == m && e->n == n && e->k == k && e->ldc == ldc && e->beta == beta)
			return *out = e, 0;
	}
	struct dnnl_mm *e = calloc(1, sizeof *e);
	if (!e)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): out of memory");
	e->m = m, e->n = n, e->k = k, e->ldc = ldc, e->beta = beta;
	dnnl_memory_desc_t ad, bd, cd;
	dnnl_dims_t adims = {(dnnl_dim_t)m, (dnnl_dim_t)k}, bdims = {(dnnl_dim_t)k, (dnnl_dim_t)n},
	            cdims = {(dnnl_dim_t)m, (dnnl_dim_t)n};
	dnnl_dims_t as = {1, (dnnl_dim_t)m}, bs = {(dnnl_dim_t)n, 1}, cs = {(dnnl_dim_t)ldc, 1};
	dnnl_matmul_desc_t md;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t st;
	if ((st = dnnl_memory_desc_init_by_strides(&ad, 2, adims, dnnl_bf16, as)) != dnnl_success ||
	    (st = dnnl_memory_desc_init_by_strides(&bd, 2, bdims, dnnl_bf16, bs)) != dnnl_success ||
	    (st = dnnl_memory_desc_init_by_strides(&cd, 2, cdims, dnnl_f32, cs)) != dnnl_success ||
	    (st = dnnl_matmul_desc_init(&md, &ad, &bd, NULL, &cd)) != dnnl_success ||
	    (st = starnn_dnnl_sum_attr(&attr, &po, beta != 0.0f, beta)) != dnnl_success)
		goto done;
	if ((st = dnnl_primitive_desc_create(&pd, &md, attr, starnn_dnnl_engine, NULL)) == dnnl_success &&
	    (st = dnnl_primitive_create(&e->prim, pd)) == dnnl_success &&
	    (st = starnn_dnnl_scratchpad_of(pd, &e->scratch, &e->bytes_scratch)) == dnnl_success &&
	    (st = dnnl_memory_create(&e->a, &ad, starnn_dnnl_engine, DNNL_MEMORY_NONE)) == dnnl_success &&
	    (st = dnnl_memory_create(&e->b, &bd, starnn_dnnl_engine, DNNL_MEMORY_NONE)) == dnnl_success)
		st = dnnl_memory_create(&e->c, &cd, starnn_dnnl_engine, DNNL_MEMORY_NONE);
done:
	starnn_dnnl_desc_free(pd, attr, po);
	if (st != dnnl_success) {
		starnn_dnnl_mm_destroy(e);
		return starnn_error(STARNN_EINVAL,
		                    "conv2d (oneDNN): no bf16 matmul of %zu x %zu x %zu for the weight gradient: %s", m, n,
		                    k, dnnl_status2str(st));
	}
	starnn_dnnl_mm_destroy(t->mm[t->mm_next]);
	t->mm[t->mm_next] = e;
	t->mm_next = (t->mm_next + 1) % MM_SLOTS;
	*out = e;
	return 0;
}

void starnn_dnnl_col_sums_bf16(const uint16_t *a, size_t rows, size_t cols, size_t ld, double *acc)
{
	for (size_t p = 0; p < rows; p++)
		for (size_t j = 0; j < cols; j++)
			acc[j] += starnn_bf16_to_float(a[p * ld + j]);
}

/* The gemm route of the bf16 weight gradient (codelets/kernels/conv2d.h): with
 * P = h w pixels, K = n P and N = c k k,
 *   dw (o x N, OIHW) = beta dw + A B,   A = dy as o x K,
 *   B (K x N) = im2col of x: B[(r, p)][i k k + t] = x[r, i, p shifted by
 *   tap t] (0 outside the image),
 * one bf16 matmul of oneDNN (AMX where present) into dw in place (beta
 * by a sum post-op): no reorder of the gradient out of oneDNN's blocked
 * layout. A is dy itself where dy is NHWC (read k-major); dy in another
 * layout is gathered first. The bias gradient sums A's columns. */
static int wgrad_gemm_bf16(const struct starnn_conv2d_geom *g, const uint16_t *x, size_t ldx, const uint16_t *dy,
                           size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	const size_t H = g->h, W = g->w, P = H * W, C = g->c, O = g->o, k = g->k, kk = k * k, r = k / 2;
	const size_t K = g->n * P, N = C * kk;
	const size_t xb = g->xb > 1 ? g->xb : 1, yb = g->yb > 1 ? g->yb : 1;
	struct dnnl_thread *th = starnn_dnnl_thread();
	if (!th)
		return STARNN_EINVAL; /* starnn_dnnl_thread's message */
	struct dnnl_mm *e;
	STARNN_CHECK(mm_entry(th, O, N, K, ldw, beta, &e));
	uint16_t *B = starnn_dnnl_buf(0, K * N * sizeof *B);
	const int in_place = yb == O && ldy == P * O;
	uint16_t *A = in_place ? (uint16_t *)dy : starnn_dnnl_buf(1, K * O * sizeof *A);
	void *sp = e->bytes_scratch ? starnn_dnnl_buf(3, e->bytes_scratch) : NULL;
	if (!B || !A || (e->bytes_scratch && !sp))
		return wgrad_nomem(g);
	/* B: one row per output pixel, its k x k window of every channel */
	for (size_t s = 0; s < g->n; s++) {
		const uint16_t *xs = x + s * ldx;
		for (size_t h = 0; h < H; h++)
			for (size_t w = 0; w < W; w++) {
				uint16_t *row = B + ((s * H + h) * W + w) * N;
				for (size_t t = 0; t < kk; t++) {
					const size_t hh = h + t / k, ww = w + t % k; /* + r: the padded image */
					if (hh < r || hh - r >= H || ww < r || ww - r >= W) {
						for (size_t i = 0; i < C; i++)
							row[i * kk + t] = 0;
						continue;
					}
					const size_t pix = (hh - r) * W + (ww - r);
					if (xb == C) {
						const uint16_t *px = xs + pix * C;
						for (size_t i = 0; i < C; i++)
							row[i * kk + t] = px[i];
					} else {
						for (size_t i = 0; i < C; i++)
							row[i * kk + t] = xs[starnn_chan_offset(i, P, xb) + pix * xb];
					}
				}
			}
	}
	/* A, k-major ([K][O]): dy's pixels with their O channels side by side */
	if (!in_place)
		for (size_t s = 0; s < g->n; s++)
			for (size_t o = 0; o < O; o++) {
				const uint16_t *src = dy + s * ldy + starnn_chan_offset(o, P, yb);
				for (size_t p = 0; p < P; p++)
					A[(s * P + p) * O + o] = src[p * yb];
			}
	dnnl_status_t st;
	if ((st = dnnl_memory_set_data_handle(e->a, A)) != dnnl_success ||
	    (st = dnnl_memory_set_data_handle(e->b, B)) != dnnl_success ||
	    (st = dnnl_memory_set_data_handle(e->c, dw)) != dnnl_success ||
	    (e->scratch && (st = dnnl_memory_set_data_handle(e->scratch, sp)) != dnnl_success))
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the weight gradient's matmul: %s", dnnl_status2str(st));
	dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c},
	                           {DNNL_ARG_SCRATCHPAD, e->scratch}};
	if ((st = dnnl_primitive_execute(e->prim, th->stream, e->scratch ? 4 : 3, args)) != dnnl_success ||
	    (st = dnnl_stream_wait(th->stream)) != dnnl_success)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the weight gradient's matmul failed: %s",
		                    dnnl_status2str(st));
	if (db) {
		double *total = starnn_dnnl_buf(2, O * sizeof *total);
		if (!total)
			return wgrad_nomem(g);
		memset(total, 0, O * sizeof *total);
		starnn_dnnl_col_sums_bf16(A, K, O, O, total);
		for (size_t o = 0; o < O; o++)
			db[o] = (beta == 0.0f ? 0.0f : beta * db[o]) + (float)total[o];
	}
	return 0;
}

/* fp32 weight gradients of oneDNN's kernel on images higher or wider than
 * FP32_WGRAD_TILE_MIN run in tiles of at most FP32_WGRAD_TILE output
 * pixels a side (wgrad_tiled): the tiles' rows stay in cache across the
 * kernel's passes over them. tools/bench/conv --wgrad (one thread, AVX-512
 * Xeon, against untiled): on the 384x384 UNet's 384x384 layers
 * 1.12-1.19x (1.52x on its first, 13 -> 32 channels), on its 192x192 ones
 * 0.97-1.11x; tiles of 64 or 96 pixels of the 128x128 UNet's 128x128
 * layers (batch 2) were 0.6-0.9x, hence the threshold. Whole 384x384 fp32
 * steps: 1.02x with tiles of 96, 1.03x with 64. */
#define FP32_WGRAD_TILE ((size_t)64)
#define FP32_WGRAD_TILE_MIN ((size_t)160)

/* The largest tile side (output pixels) of a weight gradient of g in dt
 * on oneDNN's kernel, 0 for no tiles: bf16 on AMX (where oneDNN picks
 * NHWC for bf16), an image higher or wider than the AMX kernel takes; fp32
 * on a large image (FP32_WGRAD_TILE_MIN) where oneDNN's fp32 layout is
 * nChw16c (AVX-512: where the tiles were measured); a 'same' convolution
 * (odd k) in both. */
static size_t wgrad_tile_side(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                              const struct starnn_conv2d_routes *r)
{
	/* (the tiles are for the direct kernels: Winograd takes the whole
	 * image, 1.11x a whole 384x384 fp32 step; nor the 1x1 layers into
	 * NCHW, whole images on the sgemm kernels) */
	if (g->k % 2 == 0 || starnn_conv2d_dnnl_winograd(g, STARNN_CONV2D_BWD_WEIGHT, dt, r) ||
	    starnn_conv2d_1x1_gemm(g, dt, r))
		return 0;
	if (dt == STARNN_BF16)
		return 2 * g->k < AMX_WGRAD_MAX_SIDE && (g->h > AMX_WGRAD_MAX_SIDE || g->w > AMX_WGRAD_MAX_SIDE) &&
		               starnn_conv2d_dnnl_block(STARNN_BF16) == STARNN_CONV2D_NHWC
		           ? AMX_WGRAD_MAX_SIDE - 2 * (g->k / 2)
		           : 0;
	return dt == STARNN_FP32 && 2 * g->k < FP32_WGRAD_TILE &&
	               (g->h > FP32_WGRAD_TILE_MIN || g->w > FP32_WGRAD_TILE_MIN) &&
	               starnn_conv2d_dnnl_block(STARNN_FP32) == 16
	           ? FP32_WGRAD_TILE
	           : 0;
}

/* The key of the tile of output rows r0 .. and columns c0 .. (at most th
 * x tw) of a weight gradient of g: its input is the tile and its
 * neighbours within the image, zero-padded only at the image's border. */
static struct dnnl_conv tile_key(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *rt, size_t r0, size_t c0, size_t th, size_t tw,
                                 size_t ldx, size_t ldy, size_t ldw, int bias, float beta)
{
	const int r = (int)(g->k / 2);
	struct starnn_conv2d_geom tg = *g;
	tg.h = th < g->h - r0 ? th : g->h - r0;
	tg.w = tw < g->w - c0 ? tw : g->w - c0;
	struct dnnl_conv key = starnn_dnnl_key(0, STARNN_CONV2D_BWD_WEIGHT, dt, &tg, rt, ldx, ldy, bias, beta, ldw);
	key.fh = g->h, key.fw = g->w;
	key.wino = 0; /* (the tiles are for the direct kernel) */
	key.pad[0] = r0 ? 0 : r;
	key.pad[1] = r0 + tg.h < g->h ? 0 : r;
	key.pad[2] = c0 ? 0 : r;
	key.pad[3] = c0 + tg.w < g->w ? 0 : r;
	return key;
}

/* The layout of an entry's internal output (its primitive's). */
static dnnl_status_t internal_out_md(const struct dnnl_conv *e, dnnl_memory_desc_t *md)
{
	const dnnl_memory_desc_t *m = NULL;
	dnnl_status_t s = dnnl_memory_get_memory_desc(e->iout, &m);
	if (s == dnnl_success && !m)
		s = dnnl_invalid_arguments;
	if (s == dnnl_success)
		*md = *m;
	return s;
}

/* out (beta out + in, as key's entry's output reorder) from in, a result
 * in that entry's internal output layout. */
static int conv_reorder_out(const struct dnnl_conv *key, const float *in, void *out)
{
	struct dnnl_thread *t = starnn_dnnl_thread();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv *e;
	STARNN_CHECK(starnn_dnnl_entry(t, key, &e));
	return starnn_dnnl_run_reorder(t, e, e->re_out, e->scratch[3], e->iout, in, e->uout, out, "output reorder");
}

/* A weight gradient (and bias gradient) as the sum of those of tiles of
 * the output pixels, at most side a side (wgrad_tile_side): each tile's
 * input is its pixels and their neighbours, k / 2 around (in bf16 on AMX
 * at most AMX_WGRAD_MAX_SIDE a side, so that each runs on oneDNN's AMX
 * kernel, which is wrong or crashes on the whole image). The tiles are
 * windows of x and dy in their own layouts (no copies); the first adds to
 * beta * dw, the others to what it left. */
static int wgrad_tiled(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *rt,
                       size_t side, const void *x, size_t ldx, const void *dy, size_t ldy, float beta, float *dw,
                       size_t ldw, float *db)
{
	const size_t r = g->k / 2;
	const size_t nr = (g->h + side - 1) / side, nc = (g->w + side - 1) / side;
	const size_t th = (g->h + nr - 1) / nr, tw = (g->w + nc - 1) / nc;
	/* a pixel's offset in a layout: NCHW one element, blocked cb (runtime/base/types.h) */
	const size_t xpix = g->xb > 1 ? g->xb : 1, ypix = g->yb > 1 ? g->yb : 1, es = dt == STARNN_FP32 ? 4 : 2;
	/* the tiles' dw summed in the primitives' own layout where they all
	 * have the same one (not the user's), then reordered into dw once:
	 * one reorder per weight gradient rather than one per tile */
	const struct dnnl_conv first = tile_key(g, dt, rt, 0, 0, th, tw, ldx, ldy, ldw, db != NULL, beta);
	struct dnnl_thread *t = starnn_dnnl_thread();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv *e0, *e;
	STARNN_CHECK(starnn_dnnl_entry(t, &first, &e0));
	const size_t bytes0 = e0->bytes_out;
	if (!e0->tiles_same) { /* once per entry */
		dnnl_memory_desc_t md0;
		int same = e0->re_out && e0->iout && bytes0 && !e0->zb && internal_out_md(e0, &md0) == dnnl_success;
		for (size_t r0 = 0; r0 < g->h && same; r0 += th)
			for (size_t c0 = 0; c0 < g->w && same; c0 += tw) {
				const struct dnnl_conv key = tile_key(g, dt, rt, r0, c0, th, tw, ldx, ldy, ldw, db != NULL, 1.0f);
				dnnl_memory_desc_t md;
				STARNN_CHECK(starnn_dnnl_entry(t, &key, &e));
				same = e->iout && e->bytes_out == bytes0 && internal_out_md(e, &md) == dnnl_success &&
				       dnnl_memory_desc_equal(&md, &md0);
			}
		/* (the loop may have evicted e0 from the cache: look it up again) */
		STARNN_CHECK(starnn_dnnl_entry(t, &first, &e0));
		e0->tiles_same = same ? 1 : -1;
	}
	const int same = e0->tiles_same > 0;
	float *acc = same ? starnn_dnnl_buf(7, bytes0) : NULL;
	if (same && !acc)
		return starnn_error(STARNN_ENOMEM, "conv2d (oneDNN): cannot allocate a tiled weight gradient's sum (%zu bytes)",
		                    bytes0);
	int k = 0;
	for (size_t r0 = 0; r0 < g->h; r0 += th)
		for (size_t c0 = 0; c0 < g->w; c0 += tw, k++) {
			const float tb = k ? 1.0f : beta;
			const struct dnnl_conv key = tile_key(g, dt, rt, r0, c0, th, tw, ldx, ldy, ldw, db != NULL, tb);
			const size_t xr = r0 ? r0 - r : 0, xc = c0 ? c0 - r : 0;
			const char *xt = (const char *)x + (xr * g->w + xc) * xpix * es,
			           *dyt = (const char *)dy + (r0 * g->w + c0) * ypix * es;
			STARNN_CHECK(starnn_dnnl_exec_acc(&key, xt, dyt, NULL, db, tb, dw, acc, k == 0, 1, 0, 0));
		}
	return acc ? conv_reorder_out(&first, acc, dw) : 0;
}

int starnn_conv2d_bwd_weight_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *dy,
                                  size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	/* dw in a blocked layout: the primitive writes it (in any other layout
	 * through its output reorder); the other routes write OIHW only */
	if (g->dwb && (starnn_dnnl_blocked_tag(0, g->dwb, g->dwib, g->dwi) == dnnl_format_tag_undef ||
	               starnn_dnnl_wgrad_writes_oihw(g, dt, r)))
		return starnn_error(STARNN_EINVAL,
		                    "conv2d_bwd_weight (oneDNN): dw in blocks of %zu x %zu (i_inner %zu), which this pass's "
		                    "route does not write (n %zu c %zu o %zu %zux%zu k %zu)",
		                    g->dwb, g->dwib, g->dwi, g->n, g->c, g->o, g->h, g->w, g->k);
	if (g->n && g->c && g->o && g->h && g->w) {
		switch (starnn_conv2d_dnnl_wgrad_route(g, dt, r)) {
		case STARNN_CONV2D_WGRAD_GEMM:
			return dt == STARNN_BF16 ? wgrad_gemm_bf16(g, x, ldx, dy, ldy, beta, dw, ldw, db)
			                         : wgrad_gemm(g, x, ldx, dy, ldy, beta, dw, ldw, db);
		case STARNN_CONV2D_WGRAD_DIRECT:
			return wgrad_direct(g, x, ldx, dy, ldy, beta, dw, ldw, db);
		default:
			break;
		}
		const size_t side = wgrad_tile_side(g, dt, r);
		if (side)
			return wgrad_tiled(g, dt, r, side, x, ldx, dy, ldy, beta, dw, ldw, db);
	}
	return starnn_dnnl_run(0, STARNN_CONV2D_BWD_WEIGHT, dt, g, r, x, ldx, dy, ldy, NULL, db, beta, dw, ldw);
}
