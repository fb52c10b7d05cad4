/* CPU kernels of convt2d (2x2, stride 2): OpenBLAS sgemm per sample, on
 * tiles of whole input rows so that the Z / G workspace (4*O x tile) stays
 * near the cache (~1 MiB) while the GEMM keeps >= 256 columns; and, at the
 * end, the direct AVX2 kernels for blocked layouts. Shapes and formulas:
 * codelets/kernels/convt2d.h. */
#include <cblas.h>
#include <stdlib.h>

#include "codelets/kernels/convert.h"
#include "codelets/kernels/convt2d.h"
#include "runtime/base/error.h"

/* Input rows per tile. */
static size_t tile_rows(size_t o, size_t h, size_t w)
{
	size_t t = (size_t)(1 << 18) / (4 * o * w);
	size_t min_t = (256 + w - 1) / w;
	if (t < min_t)
		t = min_t;
	if (t < 1)
		t = 1;
	return t < h ? t : h;
}

/* G (4o x rows*w, dense) <- dy rows [i0, i0+rows) of sample plane set yr. */
static void gather(size_t o, size_t h, size_t w, size_t i0, size_t rows, const float *yr, float *g)
{
	size_t tw = rows * w, hw4 = 4 * h * w;
	for (size_t oc = 0; oc < o; oc++)
		for (size_t a = 0; a < 2; a++) {
			float *g0 = g + (oc * 4 + a * 2) * tw, *g1 = g0 + tw;
			for (size_t ii = 0; ii < rows; ii++) {
				const float *src = yr + oc * hw4 + (2 * (i0 + ii) + a) * 2 * w;
				float *d0 = g0 + ii * w, *d1 = g1 + ii * w;
				for (size_t j = 0; j < w; j++) {
					d0[j] = src[2 * j];
					d1[j] = src[2 * j + 1];
				}
			}
		}
}

int starnn_convt2d_fwd_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                           const float *wt, size_t ldw, const float *bias, float *y, size_t ldy)
{
	size_t hw = h * w, hw4 = 4 * hw, o4 = 4 * o, t = tile_rows(o, h, w);
	float *z = malloc(o4 * t * w * sizeof *z);
	if (!z)
		return starnn_error(STARNN_ENOMEM, "convt2d_fwd: no memory for a %zu x %zu workspace", o4, t * w);
	for (size_t r = 0; r < n; r++) {
		const float *xr = x + r * ldx;
		float *yr = y + r * ldy;
		for (size_t i0 = 0; i0 < h; i0 += t) {
			size_t rows = h - i0 < t ? h - i0 : t, tw = rows * w;
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)o4, (int)tw, (int)c, 1.0f, wt, (int)ldw,
			            xr + i0 * w, (int)hw, 0.0f, z, (int)tw);
			for (size_t oc = 0; oc < o; oc++) {
				float bo = bias[oc];
				for (size_t a = 0; a < 2; a++) {
					const float *z0 = z + (oc * 4 + a * 2) * tw, *z1 = z0 + tw;
					for (size_t ii = 0; ii < rows; ii++) {
						float *dst = yr + oc * hw4 + (2 * (i0 + ii) + a) * 2 * w;
						const float *s0 = z0 + ii * w, *s1 = z1 + ii * w;
						for (size_t j = 0; j < w; j++) {
							dst[2 * j] = s0[j] + bo;
							dst[2 * j + 1] = s1[j] + bo;
						}
					}
				}
			}
		}
	}
	free(z);
	return 0;
}

int starnn_convt2d_bwd_data_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *wt, size_t ldw,
                                const float *dy, size_t lddy, float beta, float *dx, size_t lddx)
{
	size_t hw = h * w, o4 = 4 * o, t = tile_rows(o, h, w);
	float *g = malloc(o4 * t * w * sizeof *g);
	if (!g)
		return starnn_error(STARNN_ENOMEM, "convt2d_bwd_data: no memory for a %zu x %zu workspace", o4, t * w);
	for (size_t r = 0; r < n; r++)
		for (size_t i0 = 0; i0 < h; i0 += t) {
			size_t rows = h - i0 < t ? h - i0 : t, tw = rows * w;
			gather(o, h, w, i0, rows, dy + r * lddy, g);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c, (int)tw, (int)o4, 1.0f, wt, (int)ldw,
			            g, (int)tw, beta, dx + r * lddx + i0 * w, (int)hw);
		}
	free(g);
	return 0;
}

int starnn_convt2d_bwd_weight_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, const float *x, size_t ldx,
                                  const float *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db)
{
	size_t hw = h * w, o4 = 4 * o, t = tile_rows(o, h, w);
	float *g = malloc(o4 * t * w * sizeof *g);
	if (!g)
		return starnn_error(STARNN_ENOMEM, "convt2d_bwd_weight: no memory for a %zu x %zu workspace", o4, t * w);
	float bw = beta;
	for (size_t r = 0; r < n; r++)
		for (size_t i0 = 0; i0 < h; i0 += t) {
			size_t rows = h - i0 < t ? h - i0 : t, tw = rows * w;
			gather(o, h, w, i0, rows, dy + r * lddy, g);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)c, (int)o4, (int)tw, 1.0f,
			            x + r * ldx + i0 * w, (int)hw, g, (int)tw, bw, dw, (int)lddw);
			bw = 1.0f;
		}
	free(g);

	starnn_convt2d_bias_grad_cpu(n, o, h, w, STARNN_FP32, dy, lddy, beta, db);
	return 0;
}

void starnn_convt2d_bias_grad_cpu(size_t n, size_t o, size_t h, size_t w, starnn_dtype dt, const void *dy,
                                  size_t lddy, float beta, float *db)
{
	/* Per output channel, a sum over the batch and its 2H x 2W plane: 8
	 * float lanes per chunk of 256 values (16-bit ones widened on the
	 * stack), chunks accumulated in double. */
	enum { CHUNK = 256 };
	const size_t hw4 = 4 * h * w, es = starnn_dtype_size(dt);
	float buf[CHUNK];
	for (size_t oc = 0; oc < o; oc++) {
		double s = 0;
		for (size_t r = 0; r < n; r++) {
			const char *plane = (const char *)dy + (r * lddy + oc * hw4) * es;
			for (size_t k0 = 0; k0 < hw4; k0 += CHUNK) {
				size_t m = hw4 - k0 < CHUNK ? hw4 - k0 : CHUNK;
				const float *p = buf;
				if (dt == STARNN_FP32)
					p = (const float *)plane + k0;
				else
					starnn_widen_row_cpu(dt, m, plane + k0 * es, buf);
				float ps[8] = {0};
				size_t k = 0;
				for (; k + 8 <= m; k += 8)
					for (int l = 0; l < 8; l++)
						ps[l] += p[k + l];
				for (; k < m; k++)
					ps[0] += p[k];
				for (int l = 0; l < 8; l++)
					s += ps[l];
			}
		}
		db[oc] = beta == 0.0f ? (float)s : beta * db[oc] + (float)s;
	}
}

/* ------------------------------------------------------ direct kernels
 * fp32 passes on the layouts oneDNN's AVX2 kernels keep (codelets/
 * convt2d.h: starnn_convt2d_fwd_direct_cpu ...). Element (ch, p) of a
 * sample in blocks of b channels (b = 1: NCHW) with hw pixels per channel
 * is at starnn_chan_offset(ch, hw, b) + p * b, so 8 channels of a block of b (a
 * multiple of 8) starting at a multiple of 8 are one vector. Each kernel
 * keeps 12 ymm accumulators and does 12 FMAs per 6-8 loads.
 *
 * Forward: for an 8-channel block of y (the vector), 6 input pixels and
 * one row a of their 2x2 windows, the accumulators y[k][b] start at the
 * bias and sum, over input channel c, the broadcast x(c, pixel k) times
 * the weight vectors w[c][o0..o7][a][b] (repacked into the workspace as
 * wf [O/8][C][4][8]): per c 2 loads, 6 broadcasts, 12 FMAs. Pixels run
 * as a flat index over strips whose x fills about 128 KiB, so a block's
 * weights serve the whole strip from L2.
 *
 * Weight gradient: for an 8-channel block of dy (the vector) and a group
 * of 3 input channels, one sweep over input pixels (i, j) keeps the 4 taps
 * x 3 channels accumulators acc[a * 2 + b][ci][8 o]: per pixel it
 * broadcasts x(c0..c2, i, j), loads the 4 dy vectors at (2i + a, 2j + b)
 * and does 12 FMAs. The sweeps run over strips of input rows (at least 256
 * pixels) so that the strip of dy stays in L1 while every channel group
 * passes over it; a last group of 1 or 2 channels repeats its first channel
 * and drops those sums.
 *
 * Data gradient: for 2 blocks of 8 input channels (the vector) and 6
 * input pixels, the accumulators dx[cb][k] sum, over output channel o and
 * tap, the weight vectors w[c0..c7][o][tap] (repacked as wp [C/8][O][4][8])
 * times the broadcast dy(o, 2i + a, 2j + b): per (o, tap) 2 loads, 6
 * broadcasts and 12 FMAs. An odd last block pairs with itself (stored
 * once). In the forward and data-gradient kernels a last group of fewer
 * than 6 pixels repeats its last pixel and does not store it; dy and x are
 * read where they are, in any layout, through per-channel offsets. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define CT_X86 1
#endif
#include <string.h>

#include "codelets/cpu/simd.h"

#define CT_PIXELS 256 /* least input pixels of a weight-gradient strip */
#define CT_GROUP 6    /* input pixels of a forward or data-gradient group */

/* The offset of input pixel p's 2x2 window in y / dy (rows of 2w pixels,
 * pixels b floats apart). */
static size_t window(size_t p, size_t w, size_t b) { return (2 * (p / w) * 2 * w + 2 * (p % w)) * b; }


int starnn_convt2d_direct_ok(size_t ch, size_t b)
{
#ifdef CT_X86
	return ch % 8 == 0 && b > 1 && b % 8 == 0 && starnn_simd_level() >= STARNN_SIMD_AVX2;
#else
	(void)ch, (void)b;
	return 0;
#endif
}

size_t starnn_convt2d_direct_workspace(size_t c, size_t o)
{
	/* weight gradient: acc [O/8][ceil(C/3)][4][3][8]; data gradient: the
	 * dy offsets (4 O size_t) then wp [C/8][O][4][8]; forward: the x
	 * channel offsets (C size_t) then wf [O/8][C][4][8] */
	size_t wg = o / 8 * ((c + 2) / 3) * 96, dg = (4 * o * sizeof(size_t) + sizeof(float) - 1) / sizeof(float) + c * o * 4;
	size_t fw = (c * sizeof(size_t) + sizeof(float) - 1) / sizeof(float) + c * o * 4;
	wg = wg > dg ? wg : dg;
	return wg > fw ? wg : fw;
}

#ifdef CT_X86
/* One strip: rows input rows of W pixels; x0..x2: the 3 channels (pixels
 * xs apart); d: dy row 2i of the 8-channel block (pixels ds apart, output
 * rows 2W * ds apart); a: the 12 accumulators [tap][ci][8]. */
__attribute__((noinline, target("avx2,fma"))) static void ct_wsweep(const float *x0, const float *x1,
                                                                   const float *x2, size_t xs, const float *d,
                                                                   size_t ds, size_t W, size_t rows, float *a)
{
	__m256 a00 = _mm256_loadu_ps(a), a01 = _mm256_loadu_ps(a + 8), a02 = _mm256_loadu_ps(a + 16);
	__m256 a10 = _mm256_loadu_ps(a + 24), a11 = _mm256_loadu_ps(a + 32), a12 = _mm256_loadu_ps(a + 40);
	__m256 a20 = _mm256_loadu_ps(a + 48), a21 = _mm256_loadu_ps(a + 56), a22 = _mm256_loadu_ps(a + 64);
	__m256 a30 = _mm256_loadu_ps(a + 72), a31 = _mm256_loadu_ps(a + 80), a32 = _mm256_loadu_ps(a + 88);
	const size_t row = 2 * W * ds;
	for (size_t r = 0; r < rows; r++, d += 2 * row)
		for (size_t j = 0; j < W; j++) {
			const size_t p = (r * W + j) * xs;
			const __m256 b0 = _mm256_broadcast_ss(x0 + p), b1 = _mm256_broadcast_ss(x1 + p),
			             b2 = _mm256_broadcast_ss(x2 + p);
			const float *q = d + 2 * j * ds;
			__m256 y = _mm256_loadu_ps(q);
			a00 = _mm256_fmadd_ps(y, b0, a00), a01 = _mm256_fmadd_ps(y, b1, a01), a02 = _mm256_fmadd_ps(y, b2, a02);
			y = _mm256_loadu_ps(q + ds);
			a10 = _mm256_fmadd_ps(y, b0, a10), a11 = _mm256_fmadd_ps(y, b1, a11), a12 = _mm256_fmadd_ps(y, b2, a12);
			y = _mm256_loadu_ps(q + row);
			a20 = _mm256_fmadd_ps(y, b0, a20), a21 = _mm256_fmadd_ps(y, b1, a21), a22 = _mm256_fmadd_ps(y, b2, a22);
			y = _mm256_loadu_ps(q + row + ds);
			a30 = _mm256_fmadd_ps(y, b0, a30), a31 = _mm256_fmadd_ps(y, b1, a31), a32 = _mm256_fmadd_ps(y, b2, a32);
		}
	_mm256_storeu_ps(a, a00), _mm256_storeu_ps(a + 8, a01), _mm256_storeu_ps(a + 16, a02);
	_mm256_storeu_ps(a + 24, a10), _mm256_storeu_ps(a + 32, a11), _mm256_storeu_ps(a + 40, a12);
	_mm256_storeu_ps(a + 48, a20), _mm256_storeu_ps(a + 56, a21), _mm256_storeu_ps(a + 64, a22);
	_mm256_storeu_ps(a + 72, a30), _mm256_storeu_ps(a + 80, a31), _mm256_storeu_ps(a + 88, a32);
}

/* One group of 6 pixels over n terms: term i loads the weight vectors
 * u = w + i * wstep and v = u + voff and, for each pixel k, broadcasts
 * e[eoff[i] + px[k]]; out [6][2][8] receives the sums of u * e and v * e. */
__attribute__((noinline, target("avx2,fma"))) static void ct_group(const float *w, size_t wstep, size_t voff,
                                                                  const float *e, const size_t *eoff, size_t n,
                                                                  const size_t *px, float *out)
{
	__m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00, s04 = s00, s05 = s00;
	__m256 s10 = s00, s11 = s00, s12 = s00, s13 = s00, s14 = s00, s15 = s00;
	for (size_t i = 0; i < n; i++, w += wstep) {
		const __m256 u = _mm256_loadu_ps(w), v = _mm256_loadu_ps(w + voff);
		const float *q = e + eoff[i];
		__m256 b;
		b = _mm256_broadcast_ss(q + px[0]), s00 = _mm256_fmadd_ps(u, b, s00), s10 = _mm256_fmadd_ps(v, b, s10);
		b = _mm256_broadcast_ss(q + px[1]), s01 = _mm256_fmadd_ps(u, b, s01), s11 = _mm256_fmadd_ps(v, b, s11);
		b = _mm256_broadcast_ss(q + px[2]), s02 = _mm256_fmadd_ps(u, b, s02), s12 = _mm256_fmadd_ps(v, b, s12);
		b = _mm256_broadcast_ss(q + px[3]), s03 = _mm256_fmadd_ps(u, b, s03), s13 = _mm256_fmadd_ps(v, b, s13);
		b = _mm256_broadcast_ss(q + px[4]), s04 = _mm256_fmadd_ps(u, b, s04), s14 = _mm256_fmadd_ps(v, b, s14);
		b = _mm256_broadcast_ss(q + px[5]), s05 = _mm256_fmadd_ps(u, b, s05), s15 = _mm256_fmadd_ps(v, b, s15);
	}
	_mm256_storeu_ps(out, s00), _mm256_storeu_ps(out + 8, s10), _mm256_storeu_ps(out + 16, s01);
	_mm256_storeu_ps(out + 24, s11), _mm256_storeu_ps(out + 32, s02), _mm256_storeu_ps(out + 40, s12);
	_mm256_storeu_ps(out + 48, s03), _mm256_storeu_ps(out + 56, s13), _mm256_storeu_ps(out + 64, s04);
	_mm256_storeu_ps(out + 72, s14), _mm256_storeu_ps(out + 80, s05), _mm256_storeu_ps(out + 88, s15);
}

/* 8 floats: dst = v + add (add: NULL for none; beta == 0), or beta * dst
 * + v. */
__attribute__((target("avx2,fma"))) static void ct_put(float *dst, const float *v, const float *add, float beta)
{
	__m256 r = _mm256_loadu_ps(v);
	if (add)
		r = _mm256_add_ps(r, _mm256_loadu_ps(add));
	if (beta != 0.0f)
		r = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(dst), r);
	_mm256_storeu_ps(dst, r);
}
#endif

void starnn_convt2d_bwd_weight_direct_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                          const float *x, size_t ldx, const float *dy, size_t lddy, float beta,
                                          float *dw, size_t lddw, float *db, float *work)
{
	const size_t HW = h * w, HW4 = 4 * HW, G = (c + 2) / 3, OB = o / 8, xs = xb > 1 ? xb : 1;
	float *acc = work;
	memset(acc, 0, OB * G * 96 * sizeof *acc);
	size_t rows = (CT_PIXELS + w - 1) / w;
	if (rows > h)
		rows = h;
	for (size_t r = 0; r < n; r++)
		for (size_t i0 = 0; i0 < h; i0 += rows) {
			const size_t rr = i0 + rows < h ? rows : h - i0;
			for (size_t ob = 0; ob < OB; ob++) {
				const float *d = dy + r * lddy + starnn_chan_offset(ob * 8, HW4, yb) + 2 * i0 * 2 * w * yb;
				for (size_t g = 0; g < G; g++) {
					const float *xc[3];
					for (size_t i = 0; i < 3; i++) {
						const size_t ch = g * 3 + i < c ? g * 3 + i : g * 3;
						xc[i] = x + r * ldx + starnn_chan_offset(ch, HW, xs) + i0 * w * xs;
					}
#ifdef CT_X86
					ct_wsweep(xc[0], xc[1], xc[2], xs, d, yb, w, rr, acc + (ob * G + g) * 96);
#else
					(void)d, (void)xc, (void)rr; /* starnn_convt2d_direct_ok: never called */
#endif
				}
			}
		}
	for (size_t ch = 0; ch < c; ch++) {
		const size_t g = ch / 3, ci = ch % 3;
		float *row = dw + ch * lddw;
		for (size_t oc = 0; oc < o; oc++)
			for (size_t t = 0; t < 4; t++) {
				const float v = acc[((oc / 8 * G + g) * 4 + t) * 24 + ci * 8 + oc % 8];
				float *p = row + oc * 4 + t;
				*p = (beta == 0.0f ? 0.0f : beta * *p) + v;
			}
	}
	if (db)
		starnn_conv2d_bias_blocked_cpu(n, o, HW4, yb, dy, lddy, beta, db);
}

void starnn_convt2d_bwd_data_direct_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        const float *wt, size_t ldw, const float *dy, size_t lddy, float beta,
                                        float *dx, size_t lddx, float *work)
{
	const size_t HW = h * w, HW4 = 4 * HW, CB = c / 8, ds = yb > 1 ? yb : 1, row = 2 * w * ds;
	size_t *eoff = (size_t *)(void *)work; /* [o][tap]: where dy(o, tap of pixel 0) is */
	float *wp = work + (4 * o * sizeof(size_t) + sizeof(float) - 1) / sizeof(float);
	for (size_t cb = 0; cb < CB; cb++)
		for (size_t oc = 0; oc < o; oc++)
			for (size_t t = 0; t < 4; t++)
				for (size_t l = 0; l < 8; l++)
					wp[((cb * o + oc) * 4 + t) * 8 + l] = wt[(cb * 8 + l) * ldw + oc * 4 + t];
	for (size_t oc = 0; oc < o; oc++) {
		const size_t tap[4] = {0, ds, row, row + ds};
		for (size_t t = 0; t < 4; t++)
			eoff[oc * 4 + t] = starnn_chan_offset(oc, HW4, ds) + tap[t];
	}
	for (size_t r = 0; r < n; r++) {
		const float *dyr = dy + r * lddy;
		float *dxr = dx + r * lddx;
		for (size_t p0 = 0; p0 < HW; p0 += CT_GROUP) {
			const size_t m = HW - p0 < CT_GROUP ? HW - p0 : CT_GROUP;
			size_t pix[CT_GROUP];
			for (size_t k = 0; k < CT_GROUP; k++) {
				pix[k] = window(p0 + (k < m ? k : m - 1), w, ds);
			}
			for (size_t cb = 0; cb < CB; cb += 2) {
				const size_t cb1 = cb + 1 < CB ? cb + 1 : cb;
				float *d0 = dxr + starnn_chan_offset(cb * 8, HW, xb) + p0 * xb, *d1 = dxr + starnn_chan_offset(cb1 * 8, HW, xb) + p0 * xb;
#ifdef CT_X86
				float out[CT_GROUP * 16];
				ct_group(wp + cb * o * 32, 8, (cb1 - cb) * o * 32, dyr, eoff, 4 * o, pix, out);
				for (size_t k = 0; k < m; k++) {
					ct_put(d0 + k * xb, out + k * 16, NULL, beta);
					if (cb1 != cb)
						ct_put(d1 + k * xb, out + k * 16 + 8, NULL, beta);
				}
#else
				(void)d0, (void)d1, (void)dyr, (void)m, (void)pix; /* starnn_convt2d_direct_ok: never called */
#endif
			}
		}
	}
}

void starnn_convt2d_fwd_direct_cpu(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   const float *x, size_t ldx, const float *wt, size_t ldw, const float *bias,
                                   float *y, size_t ldy, float *work)
{
	const size_t HW = h * w, HW4 = 4 * HW, OB = o / 8, xs = xb > 1 ? xb : 1, row = 2 * w * yb;
	static const float zero[8] = {0};
	size_t *xoff = (size_t *)(void *)work;
	float *wf = work + (c * sizeof(size_t) + sizeof(float) - 1) / sizeof(float);
	for (size_t ob = 0; ob < OB; ob++)
		for (size_t ch = 0; ch < c; ch++)
			for (size_t t = 0; t < 4; t++)
				for (size_t l = 0; l < 8; l++)
					wf[((ob * c + ch) * 4 + t) * 8 + l] = wt[ch * ldw + (ob * 8 + l) * 4 + t];
	for (size_t ch = 0; ch < c; ch++)
		xoff[ch] = starnn_chan_offset(ch, HW, xs);
	/* strips of pixels whose x (c values each) fill about 128 KiB: each
	 * block's weights then serve a whole strip from L2 */
	size_t strip = (32768 / c) / CT_GROUP * CT_GROUP;
	if (strip < CT_GROUP)
		strip = CT_GROUP;
	for (size_t r = 0; r < n; r++) {
		const float *xr = x + r * ldx;
		float *yr = y + r * ldy;
		for (size_t s0 = 0; s0 < HW; s0 += strip) {
			const size_t s1 = s0 + strip < HW ? s0 + strip : HW;
			for (size_t ob = 0; ob < OB; ob++) {
				float *yb0 = yr + starnn_chan_offset(ob * 8, HW4, yb);
				for (size_t p0 = s0; p0 < s1; p0 += CT_GROUP) {
					const size_t m = s1 - p0 < CT_GROUP ? s1 - p0 : CT_GROUP;
					size_t px[CT_GROUP], yo[CT_GROUP];
					for (size_t k = 0; k < CT_GROUP; k++) {
						const size_t p = p0 + (k < m ? k : m - 1);
						px[k] = p * xs, yo[k] = window(p, w, yb);
					}
					for (size_t a = 0; a < 2; a++) {
#ifdef CT_X86
						float out[CT_GROUP * 16], *ya = yb0 + a * row;
						const float *bv = bias ? bias + ob * 8 : zero;
						ct_group(wf + (ob * c * 4 + a * 2) * 8, 32, 8, xr, xoff, c, px, out);
						for (size_t k = 0; k < m; k++) {
							ct_put(ya + yo[k], out + k * 16, bv, 0.0f);
							ct_put(ya + yo[k] + yb, out + k * 16 + 8, bv, 0.0f);
						}
#else
						(void)yb0, (void)px, (void)yo; /* starnn_convt2d_direct_ok: never called */
#endif
					}
				}
			}
		}
	}
}
