/* CPU kernels of convt2d (2x2, stride 2): OpenBLAS sgemm per sample, on
 * tiles of whole input rows so that the Z / G workspace (4*O x tile) stays
 * near the cache (~1 MiB) while the GEMM keeps >= 256 columns. Shapes and
 * formulas: codelets/convt2d.h. */
#include <cblas.h>
#include <stdlib.h>

#include "codelets/convert.h"
#include "codelets/convt2d.h"
#include "runtime/error.h"

/* The build's -O2 does not vectorise the scatter / gather / bias loops
 * (GCC's very-cheap cost model). */
#if defined(__GNUC__) && !defined(__clang__)
#endif

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
