/* convt2d's passes on the oneDNN backend (codelets/kernels/convt2d.h): the
 * routes (starnn's direct AVX2 kernels, or oneDNN's deconvolution with
 * the forward as a 1x1 convolution to 4o channels whose output is spread
 * into y, on AVX-512 by permutes), whole blocked copies of the weights,
 * and the bf16 weight gradient as one bf16 GEMM where bf16 is native. */
#include <string.h>

#include "codelets/cpu/conv2d_dnnl.h"
#include "codelets/cpu/halfrow.h"
#include "codelets/cpu/simd.h"
#include "runtime/base/half.h"

int starnn_convt2d_direct(size_t ch, size_t b, starnn_dtype dt, const struct starnn_conv2d_routes *r)
{
	r = starnn_dnnl_routes(r);
	if (dt != STARNN_FP32 || r->convt == STARNN_CONVT2D_DNNL || !starnn_convt2d_direct_ok(ch, b))
		return 0;
	return r->convt == STARNN_CONVT2D_DIRECT || starnn_conv2d_dnnl_block(STARNN_FP32) == 8;
}

#ifdef STARNN_SIMD_X86
#include <immintrin.h>
/* starnn_dnnl_up_spread where z and y are both in blocks of 16 (AVX-512):
 * lane l of y's block ob at output pixel (2i + a, 2j + b) is lane 4 (l % 4) + ab of z's
 * block 4 ob + l / 4 at pixel (i, j) (ab = 2a + b), so each (a, b) is two
 * two-source permutes of the pixel's four z vectors and a blend. The same
 * fp32 addition as the scalar loop, and bf16 rounded by
 * STARNN_BF16X16_NARROW (codelets/cpu/halfrow.h: starnn_float_to_bf16's
 * bits): bit for bit its results. */
STARNN_TARGET_AVX512 static void up_spread16_avx512(size_t n, size_t o, size_t h, size_t w, int bf16,
                                                     const float *z, const float *bias, void *y, size_t ldy)
{
	const size_t hw = h * w;
	__m512i idx[4];
	for (int ab = 0; ab < 4; ab++) {
		int v[16];
		for (int l = 0; l < 16; l++)
			v[l] = (l % 8) / 4 * 16 + 4 * (l % 4) + ab;
		idx[ab] = _mm512_loadu_si512(v);
	}
	for (size_t ob = 0; ob < o / 16; ob++) {
		const __m512 bv = bias ? _mm512_loadu_ps(bias + ob * 16) : _mm512_setzero_ps();
		for (size_t r = 0; r < n; r++) {
			const float *zb = z + r * 4 * o * hw + 4 * ob * hw * 16;
			const size_t y0 = r * ldy + ob * 16 * 4 * hw;
			for (size_t i = 0; i < h; i++)
				for (size_t j = 0; j < w; j++) {
					const float *zp = zb + (i * w + j) * 16;
					const __m512 z0 = _mm512_loadu_ps(zp), z1 = _mm512_loadu_ps(zp + hw * 16);
					const __m512 z2 = _mm512_loadu_ps(zp + 2 * hw * 16), z3 = _mm512_loadu_ps(zp + 3 * hw * 16);
					for (int ab = 0; ab < 4; ab++) {
						const __m512 lo = _mm512_permutex2var_ps(z0, idx[ab], z1);
						const __m512 hi = _mm512_permutex2var_ps(z2, idx[ab], z3);
						const __m512 v = _mm512_add_ps(_mm512_mask_blend_ps(0xFF00, lo, hi), bv);
						const size_t at = y0 + ((2 * i + (size_t)(ab >> 1)) * 2 * w + 2 * j + (size_t)(ab & 1)) * 16;
						if (bf16)
							STARNN_BF16X16_NARROW((uint16_t *)y + at, (starnn_vf16)v);
						else
							_mm512_storeu_ps((float *)y + at, v);
					}
				}
		}
	}
}

#endif

/* y[n, oc, 2i + a, 2j + b] = z[n, oc * 4 + a * 2 + b, i, j] + bias[oc] (no
 * bias: NULL), z in nChw{e->zb}c, y in e->yb's layout (runtime/base/types.h:
 * channels in blocks of B, NCHW for B = 1; a block plane starts where its
 * first channel's NCHW plane would) and e's dtype (bf16: the fp32 sum
 * rounded once), samples ldy apart. y is written row after row; each
 * lane's z offset is worked out once per block and (a, b). Blocks of 16
 * on both sides take up_spread16_avx512 where AVX-512 is in use. */
void starnn_dnnl_up_spread(const struct dnnl_conv *e, const float *z, const float *bias, void *y, size_t ldy)
{
	const size_t n = e->n, o = e->o, h = e->h, w = e->w, hw = h * w, Z = e->zb, B = e->yb;
	const int bf16 = e->dt == (int)dnnl_bf16;
#ifdef STARNN_SIMD_X86
	if (Z == 16 && B == 16 && starnn_simd_level() >= STARNN_SIMD_AVX512) {
		up_spread16_avx512(n, o, h, w, bf16, z, bias, y, ldy);
		return;
	}
#endif
	size_t zoff[4][STARNN_CBLOCK_MAX];
	float bl[STARNN_CBLOCK_MAX];
	for (size_t ob = 0; ob < o / B; ob++) {
		for (size_t l = 0; l < B; l++) {
			bl[l] = bias ? bias[ob * B + l] : 0.0f;
			for (size_t ab = 0; ab < 4; ab++) {
				size_t q = (ob * B + l) * 4 + ab;
				zoff[ab][l] = q / Z * hw * Z + q % Z;
			}
		}
		for (size_t r = 0; r < n; r++) {
			const float *zn = z + r * 4 * o * hw;
			size_t yo = r * ldy + ob * B * 4 * hw;
			for (size_t i = 0; i < h; i++)
				for (size_t a = 0; a < 2; a++)
					for (size_t j = 0; j < w; j++) {
						const float *zp = zn + (i * w + j) * Z;
						for (size_t b = 0; b < 2; b++, yo += B) {
							const size_t *zo = zoff[a * 2 + b];
							if (bf16) {
								uint16_t *yp = (uint16_t *)y + yo;
								for (size_t l = 0; l < B; l++)
									yp[l] = starnn_float_to_bf16(zp[zo[l]] + bl[l]);
							} else {
								float *yp = (float *)y + yo;
								for (size_t l = 0; l < B; l++)
									yp[l] = zp[zo[l]] + bl[l];
							}
						}
					}
		}
	}
}

static int convt_nomem(const char *pass, const struct starnn_conv2d_geom *g)
{
	return starnn_error(STARNN_ENOMEM, "convt2d: cannot allocate the %s's workspace (n %zu c %zu o %zu %zux%zu)", pass,
	                    g->n, g->c, g->o, g->h, g->w);
}

/* Transposed 2x2 / stride 2 (codelets/kernels/convt2d.h): x [n, c, h, w],
 * w PyTorch's [c, o, 2, 2] (rows ldw apart), y [n, o, 2h, 2w]. */
int starnn_convt2d_fwd_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *wt,
                            size_t ldw, const float *bias, void *y, size_t ldy)
{
	return starnn_convt2d_fwd_dnnl_sliced(n, c, o, h, w, xb, yb, dt, r, x, ldx, wt, ldw, NULL, 0, bias, y, ldy);
}

int starnn_convt2d_fwd_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x, size_t ldx,
                                   const void *wt, size_t ldw, const void *whole, size_t row0, const float *bias,
                                   void *y, size_t ldy)
{
	struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct packed_ref p = {whole, row0, 1};
	if (n && h && w && c && starnn_convt2d_direct(o, yb, dt, r)) {
		float *work = starnn_dnnl_buf(2, starnn_convt2d_direct_workspace(c, o) * sizeof *work);
		if (!work)
			return convt_nomem("forward", &g);
		starnn_convt2d_fwd_direct_cpu(n, c, o, h, w, xb, yb, x, ldx, wt, ldw, bias, y, ldy, work);
		return 0;
	}
	return starnn_dnnl_run_packed(1, STARNN_CONV2D_FWD, dt, &g, r, x, ldx, wt, ldw, whole ? &p : NULL, bias, 0.0f, y,
	                              ldy);
}

/* The layout of the weights the forward (fwd 1: its 1x1 convolution [4o,
 * c], a layout of the transpose of [c, o, 2, 2]) or the backward-data pass
 * (its deconvolution: a layout of the rows c) reads, dy and dx dense,
 * where runtime/base/types.h describes it. */
static int convt_w_layout(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                          starnn_dtype dt, const struct starnn_conv2d_routes *r, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !n || !c || !o || !h || !w ||
	    (fwd ? starnn_convt2d_direct(o, yb, dt, r) : starnn_convt2d_direct(c, xb, dt, r)))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const size_t xs = c * h * w, ys = o * 4 * h * w;
	const struct dnnl_conv key = fwd ? starnn_dnnl_key(1, STARNN_CONV2D_FWD, dt, &g, r, xs, o * 4, 1, 0.0f, ys)
	                                 : starnn_dnnl_key(1, STARNN_CONV2D_BWD_DATA, dt, &g, r, ys, o * 4, 0, 0.0f, xs);
	return starnn_dnnl_probe_layout(&key, 0, fwd, fwd ? starnn_dnnl_pack_layout : starnn_dnnl_deconv_layout, L,
	                                NULL);
}

int starnn_convt2d_dnnl_fwd_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                   struct starnn_blocked_weights *L)
{
	return convt_w_layout(1, n, c, o, h, w, xb, yb, dt, r, L);
}

int starnn_convt2d_bwd_data_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                 starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *wt, size_t ldw,
                                 const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	return starnn_convt2d_bwd_data_dnnl_sliced(n, c, o, h, w, xb, yb, dt, r, wt, ldw, NULL, 0, dy, lddy, beta, dx,
	                                           lddx);
}

int starnn_convt2d_dnnl_bwd_data_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                        struct starnn_blocked_weights *L)
{
	return convt_w_layout(0, n, c, o, h, w, xb, yb, dt, r, L);
}

int starnn_convt2d_bwd_data_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *wt,
                                        size_t ldw, const void *whole, size_t row0, const void *dy, size_t lddy,
                                        float beta, void *dx, size_t lddx)
{
	struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct packed_ref p = {whole, row0, 1};
	if (n && h && w && starnn_convt2d_direct(c, xb, dt, r)) {
		float *work = starnn_dnnl_buf(2, starnn_convt2d_direct_workspace(c, o) * sizeof *work);
		if (!work)
			return convt_nomem("backward data", &g);
		starnn_convt2d_bwd_data_direct_cpu(n, c, o, h, w, xb, yb, wt, ldw, dy, lddy, beta, dx, lddx, work);
		return 0;
	}
	return starnn_dnnl_run_packed(1, STARNN_CONV2D_BWD_DATA, dt, &g, r, dy, lddy, wt, ldw, whole ? &p : NULL, NULL,
	                              beta, dx, lddx);
}

int starnn_convt2d_dnnl_sliced_ok(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  const struct starnn_conv2d_routes *r, size_t ldin, size_t ldw, size_t ldout,
                                  float beta, const void *whole, size_t row0)
{
	if (!whole || !n || !c || !o || !h || !w ||
	    (fwd ? starnn_convt2d_direct(o, yb, STARNN_FP32, r) : starnn_convt2d_direct(c, xb, STARNN_FP32, r)))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	int per_sample;
	const struct dnnl_conv key =
		starnn_dnnl_data_pass_key(1, fwd ? STARNN_CONV2D_FWD : STARNN_CONV2D_BWD_DATA, STARNN_FP32, &g, r, ldin, ldw,
		                          fwd, fwd ? 0.0f : beta, ldout, &per_sample);
	struct dnnl_thread *t = starnn_dnnl_thread();
	struct dnnl_conv *e;
	if (!t || starnn_dnnl_entry(t, &key, &e) < 0)
		return 0; /* (the pass itself reports it) */
	const struct packed_ref p = {whole, row0, 1};
	return starnn_dnnl_sliced_weights(e, &p) != NULL;
}

/* oneDNN 2.6 exports this row-major GEMM without declaring it in dnnl.h
 * (codelets/cpu/gemm.c declares it too). */
extern dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
                                           float alpha, const uint16_t *A, dnnl_dim_t lda, const uint16_t *B,
                                           dnnl_dim_t ldb, float beta, float *C, dnnl_dim_t ldc);

/* Whether a transposed convolution's bf16 weight gradient runs as a GEMM
 * (convt_wgrad_gemm): wherever oneDNN has native bf16 (AMX; AVX512-BF16,
 * where oneDNN's bf16 deconvolution runs at 0.58-1.63x its fp32 one and
 * the GEMM at 1.19-1.85x, one thread, a Zen 4: tools/bench/conv
 * --convt-bf16), x and dy NCHW, NHWC or blocked (nChw16c). */
static int convt_wgrad_gemm_ok(size_t c, size_t o, size_t xb, size_t yb, starnn_dtype dt)
{
	return dt == STARNN_BF16 && (xb <= 1 || c % xb == 0) && (yb <= 1 || o % yb == 0) && starnn_conv2d_dnnl_bf16();
}

/* The sum of n bf16 values in double: 8 lanes (value i in lane i % 8),
 * then the lanes in order. */
static double row_sum_bf16(const uint16_t *v, size_t n)
{
	double lane[8] = {0};
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int q = 0; q < 8; q++)
			lane[q] += starnn_bf16_to_float(v[i + q]);
	for (; i < n; i++)
		lane[i % 8] += starnn_bf16_to_float(v[i]);
	double s = 0;
	for (int q = 0; q < 8; q++)
		s += lane[q];
	return s;
}

/* A bf16 transposed 2x2 / stride-2 convolution's weight and bias
 * gradients as one bf16 GEMM (AMX): dw[c, o, a, b] = sum over n, i, j of
 * x[n, c, i, j] dy[n, o, 2i + a, 2j + b], so with D[(n, i, j), (a, b, o)]
 * the dy values gathered (bf16, exact), Z = X^T D [c, 4o] in fp32
 * (dnnl_gemm_bf16bf16f32: one call for NHWC x and for blocked x gathered
 * into NHWC, one per image for NCHW), then dw = beta dw + Z
 * in PyTorch's [c, o, 2, 2] and db = beta db + the sums of dy per channel
 * (in double, pixel by pixel). oneDNN 2.6's own kernels for this pass are
 * slow at the UNet's shapes: its AMX deconvolution 1.1-3x slower than its
 * fp32 one (starnn_dnnl_conv_create), which widens x and dy and ran at about 56
 * GFLOP/s on the 192 -> 384 up-sampling of a 384x384 UNet. NHWC is the
 * blocked layout of one block of all the channels: dy takes the same
 * gather in both. */
static int convt_wgrad_gemm(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                            const uint16_t *x, size_t ldx, const uint16_t *dy, size_t lddy, float beta, float *dw,
                            size_t lddw, float *db)
{
	const size_t hw = h * w, rows = n * hw, o4 = 4 * o, w2 = 2 * w, blk_x = xb > 1, blk_y = yb > 1;
	if (!starnn_dnnl_thread()) /* (oneDNN's OpenMP team of this thread: one thread) */
		return STARNN_ENOMEM;
	uint16_t *d = starnn_dnnl_buf(5, rows * o4 * sizeof *d);
	float *z = starnn_dnnl_buf(6, c * o4 * sizeof *z);
	double *acc = db ? starnn_dnnl_buf(4, o * sizeof *acc) : NULL;
	if (!d || !z || (db && !acc))
		return starnn_error(STARNN_ENOMEM, "convt2d: cannot allocate the weight gradient's workspace (n %zu c %zu o %zu "
		                                   "%zux%zu)",
		                    n, c, o, h, w);
	if (acc)
		for (size_t k = 0; k < o; k++)
			acc[k] = 0;
	for (size_t nn = 0; nn < n; nn++) {
		const uint16_t *dyn = dy + nn * lddy;
		uint16_t *dn = d + nn * hw * o4;
		if (blk_y) {
			/* row by row of D (i), block by block of dy: pixels (2i + a,
			 * 2j) and (2i + a, 2j + 1), yb values each (2o side by side
			 * for NHWC) */
			for (size_t i = 0; i < h; i++)
				for (size_t a = 0; a < 2; a++)
					for (size_t kb = 0; kb < o; kb += yb) {
						const uint16_t *src = dyn + kb * 4 * hw + (2 * i + a) * w2 * yb;
						uint16_t *dst = dn + i * w * o4 + a * 2 * o + kb;
						for (size_t j = 0; j < w; j++, src += 2 * yb, dst += o4)
							if (yb == o) {
								memcpy(dst, src, 2 * o * sizeof *d);
							} else {
								memcpy(dst, src, yb * sizeof *d);
								memcpy(dst + o, src + yb, yb * sizeof *d);
							}
					}
			if (acc)
				for (size_t kb = 0; kb < o; kb += yb)
					starnn_dnnl_col_sums_bf16(dyn + kb * 4 * hw, 4 * hw, yb, yb, acc + kb);
		} else {
			/* row by row of D (i): its w x 4o values stay in cache while
			 * the rows 2i and 2i + 1 of every channel's plane are read */
			for (size_t i = 0; i < h; i++)
				for (size_t a = 0; a < 2; a++)
					for (size_t k = 0; k < o; k++) {
						const uint16_t *src = dyn + k * 4 * hw + (2 * i + a) * w2;
						uint16_t *dst = dn + i * w * o4 + a * 2 * o + k;
						for (size_t j = 0; j < w; j++) {
							dst[j * o4] = src[2 * j];
							dst[j * o4 + o] = src[2 * j + 1];
						}
						if (acc) /* in 8 lanes of independent adds */
							acc[k] += row_sum_bf16(src, w2);
					}
		}
	}
	/* X^T: NHWC x is [pixels, c], one product over every image where the
	 * images are contiguous; blocked x is gathered into NHWC first (a
	 * product per block of xb rows would read D c / xb times); NCHW x is
	 * [c, pixels] per image */
	if (blk_x && xb < c) {
		uint16_t *xn = starnn_dnnl_buf(8, rows * c * sizeof *xn);
		if (!xn)
			return starnn_error(STARNN_ENOMEM, "convt2d: cannot allocate the weight gradient's workspace (n %zu c %zu "
			                                   "o %zu %zux%zu)",
			                    n, c, o, h, w);
		for (size_t nn = 0; nn < n; nn++)
			for (size_t cb = 0; cb < c; cb += xb) {
				const uint16_t *src = x + nn * ldx + cb * hw;
				uint16_t *dst = xn + nn * hw * c + cb;
				for (size_t p = 0; p < hw; p++)
					memcpy(dst + p * c, src + p * xb, xb * sizeof *xn);
			}
		x = xn, ldx = hw * c, xb = c;
	}
	const size_t parts = blk_x && (n == 1 || ldx == hw * c) ? 1 : n, kp = rows / parts;
	dnnl_status_t st = dnnl_success;
	for (size_t p = 0; p < parts && st == dnnl_success; p++)
		st = dnnl_gemm_bf16bf16f32(blk_x ? 'T' : 'N', 'N', (dnnl_dim_t)c, (dnnl_dim_t)o4, (dnnl_dim_t)kp, 1.0f,
		                           x + p * ldx, (dnnl_dim_t)(blk_x ? c : hw), d + p * kp * o4, (dnnl_dim_t)o4,
		                           p ? 1.0f : 0.0f, z, (dnnl_dim_t)o4);
	if (st != dnnl_success)
		return starnn_error(STARNN_EINVAL, "convt2d: oneDNN's bf16 GEMM failed (status %d; n %zu c %zu o %zu %zux%zu)",
		                    (int)st, n, c, o, h, w);
	for (size_t cc = 0; cc < c; cc++) {
		float *row = dw + cc * lddw;
		const float *zr = z + cc * o4;
		for (size_t k = 0; k < o; k++)
			for (size_t ab = 0; ab < 4; ab++) {
				const float v = zr[ab * o + k];
				row[k * 4 + ab] = beta != 0.0f ? beta * row[k * 4 + ab] + v : v;
			}
	}
	if (db)
		for (size_t k = 0; k < o; k++)
			db[k] = beta != 0.0f ? beta * db[k] + (float)acc[k] : (float)acc[k];
	return 0;
}

int starnn_convt2d_bwd_weight_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x, size_t ldx,
                                   const void *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db)
{
	const struct starnn_blocked_weights plain = {0};
	return starnn_convt2d_bwd_weight_dnnl_in(n, c, o, h, w, xb, yb, dt, r, x, ldx, dy, lddy, beta, dw, lddw, db,
	                                         &plain);
}

/* Whether the transposed weight gradient runs on a route of its own
 * (the bf16 GEMM, the direct kernels), which writes [c, o, 2, 2] rows. */
static int convt_wgrad_own(size_t c, size_t o, size_t xb, size_t yb, starnn_dtype dt,
                           const struct starnn_conv2d_routes *r)
{
	return convt_wgrad_gemm_ok(c, o, xb, yb, dt) || starnn_convt2d_direct(o, yb, dt, r);
}

int starnn_convt2d_dnnl_dw_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                  struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !n || !c || !o || !h || !w ||
	    convt_wgrad_own(c, o, xb, yb, dt, r))
		return 0;
	const struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, 0, 0, 0};
	const struct dnnl_conv key =
		starnn_dnnl_key(1, STARNN_CONV2D_BWD_WEIGHT, dt, &g, r, c * h * w, o * 4 * h * w, 1, 0.0f, o * 4);
	if (starnn_dnnl_probe_layout(&key, 1, 0, starnn_dnnl_deconv_layout, L, NULL) &&
	    (L->pair || c % L->ob || o % L->ib))
		memset(L, 0, sizeof *L);
	return L->ob != 0;
}

int starnn_convt2d_bwd_weight_dnnl_in(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                      starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x,
                                      size_t ldx, const void *dy, size_t lddy, float beta, float *dw, size_t lddw,
                                      float *db, const struct starnn_blocked_weights *L)
{
	struct starnn_conv2d_geom g = {n, c, o, h, w, 2, xb, yb, L->ob, L->i_inner, L->ib};
	if (L->ob && (starnn_dnnl_blocked_tag(1, L->ob, L->ib, L->i_inner) == dnnl_format_tag_undef ||
	              convt_wgrad_own(c, o, xb, yb, dt, r)))
		return starnn_error(STARNN_EINVAL,
		                    "convt2d_bwd_weight (oneDNN): dw in blocks of %u x %u (i_inner %u), which this pass's "
		                    "route does not write (n %zu c %zu o %zu %zux%zu)",
		                    L->ob, L->ib, L->i_inner, n, c, o, h, w);
	if (n && c && o && h && w && convt_wgrad_gemm_ok(c, o, xb, yb, dt))
		return convt_wgrad_gemm(n, c, o, h, w, xb, yb, x, ldx, dy, lddy, beta, dw, lddw, db);
	if (n && h && w && starnn_convt2d_direct(o, yb, dt, r)) {
		float *work = starnn_dnnl_buf(2, starnn_convt2d_direct_workspace(c, o) * sizeof *work);
		if (!work)
			return convt_nomem("weight gradient", &g);
		starnn_convt2d_bwd_weight_direct_cpu(n, c, o, h, w, xb, yb, x, ldx, dy, lddy, beta, dw, lddw, db, work);
		return 0;
	}
	return starnn_dnnl_run(1, STARNN_CONV2D_BWD_WEIGHT, dt, &g, r, x, ldx, dy, lddy, NULL, db, beta, dw, lddw);
}

