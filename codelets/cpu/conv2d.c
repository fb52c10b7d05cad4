/* CPU kernels of conv2d: im2col + OpenBLAS sgemm (single-threaded: one task
 * per core, parallelism comes from several tasks).
 *
 * Legend (one sample, row-major matrices):
 *   x   C x HW           (channel rows HW apart; samples ldx apart)
 *   col C*k*k x cols     im2col of a block of output pixels:
 *                        col[(c*k+i)*k+j][p] = x[c, h(p)+i-pad, w(p)+j-pad] or 0
 *   w   O x C*k*k        (rows ldw apart)
 *   y   O x HW           y[:, block] = w * col + b
 * Backward data is the forward convolution of dy with the flipped,
 * transposed kernel w'[c][(o*k+i)*k+j] = w[o][c][k-1-i][k-1-j] (C x O*k*k),
 * so it needs no col2im scatter; backward weight is dw += dy[:, block] *
 * col^T.
 *
 * Blocking: the column buffer covers a block of output rows of one sample,
 * sized to stay in L2 (about 1 MiB) but at least MIN_COLS columns so that
 * each sgemm call amortises the packing of w (and, in backward weight, the
 * read-modify-write of dw). Images smaller than that (the deep levels of a
 * UNet) are grouped: a block then holds several whole samples, and the
 * output goes through a small buffer because samples are not one stride
 * apart. */
#include <cblas.h>
#include <string.h>

#include "codelets/kernels/conv2d.h"

#define TARGET_BYTES ((size_t)1 << 20)
#define MIN_COLS ((size_t)512)

struct block_plan {
	size_t samples; /* > 0: blocks of that many whole samples; 0: blocks of rows of one sample */
	size_t rows;    /* rows of the image per block (when samples == 0) */
	size_t cols;    /* largest number of columns of a block */
};

static struct block_plan plan_blocks(const struct starnn_conv2d_geom *g, size_t col_rows)
{
	struct block_plan p = {0, 0, 0};
	size_t hw = g->h * g->w;
	size_t target = TARGET_BYTES / (col_rows * sizeof(float));
	if (target < MIN_COLS)
		target = MIN_COLS;
	if (g->n > 1 && 2 * hw <= target) {
		p.samples = target / hw;
		if (p.samples > g->n)
			p.samples = g->n;
		p.cols = p.samples * hw;
	} else {
		p.rows = (target + g->w - 1) / g->w;
		if (p.rows > g->h)
			p.rows = g->h;
		p.cols = p.rows * g->w;
	}
	return p;
}

static int bwd_data_col2im(const struct starnn_conv2d_geom *g);
static int bwd_weight_transposed(const struct starnn_conv2d_geom *g);

size_t starnn_conv2d_cpu_workspace(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass)
{
	if (g->k == 1)
		return 0;
	size_t kk = g->k * g->k;
	switch (pass) {
	case STARNN_CONV2D_FWD: {
		struct block_plan p = plan_blocks(g, g->c * kk);
		return g->c * kk * p.cols + (p.samples ? g->o * p.cols : 0);
	}
	case STARNN_CONV2D_BWD_DATA: {
		if (bwd_data_col2im(g)) {
			struct block_plan p = plan_blocks(g, g->c * kk);
			return g->c * kk * p.cols + (p.samples ? g->o * p.cols : 0);
		}
		struct block_plan p = plan_blocks(g, g->o * kk);
		return g->c * g->o * kk + g->o * kk * p.cols + (p.samples ? g->c * p.cols : 0);
	}
	case STARNN_CONV2D_BWD_WEIGHT: {
		struct block_plan p = plan_blocks(g, g->c * kk);
		return g->c * kk * p.cols + (p.samples ? g->o * p.cols : 0) +
		       (bwd_weight_transposed(g) ? g->c * kk * g->o : 0);
	}
	}
	return 0;
}

double starnn_conv2d_flops(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass)
{
	(void)pass; /* the three passes are GEMMs of the same size */
	return 2.0 * (double)g->n * (double)g->o * (double)g->c * (double)(g->k * g->k) * (double)(g->h * g->w);
}

/* col[(c*k+i)*k+j][(h-h0)*W + q] = x[c][h+i-pad][q+j-pad] (0 outside) for
 * output rows h0 <= h < h1; col rows are ldcol apart. x is C x H*W.
 * For one (c, i, j) the valid rows are a contiguous run of x shifted by
 * j - pad: one copy, then the |j - pad| wrapped elements of each row are
 * zeroed, so small images cost no more per element than large ones. */
static void im2col(const float *x, size_t C, size_t H, size_t W, size_t k, size_t h0, size_t h1, float *col,
                   size_t ldcol)
{
	const ptrdiff_t pad = (ptrdiff_t)(k / 2), w = (ptrdiff_t)W;
	for (size_t c = 0; c < C; c++)
		for (size_t i = 0; i < k; i++) {
			/* output rows whose input row h + i - pad exists */
			ptrdiff_t hs = pad - (ptrdiff_t)i, he = (ptrdiff_t)H + pad - (ptrdiff_t)i;
			if (hs < (ptrdiff_t)h0)
				hs = (ptrdiff_t)h0;
			if (he > (ptrdiff_t)h1)
				he = (ptrdiff_t)h1;
			if (he < hs)
				he = hs;
			const float *src = x + c * H * W + (size_t)(hs + (ptrdiff_t)i - pad) * W;
			for (size_t j = 0; j < k; j++) {
				float *dst = col + ((c * k + i) * k + j) * ldcol;
				const ptrdiff_t off = (ptrdiff_t)j - pad; /* dst[q] = src[q + off] */
				const ptrdiff_t lo = off < 0 ? -off : 0, hi = off > 0 ? w - off : w;
				memset(dst, 0, (size_t)(hs - (ptrdiff_t)h0) * W * sizeof *dst);
				memset(dst + (size_t)(he - (ptrdiff_t)h0) * W, 0, (size_t)((ptrdiff_t)h1 - he) * W * sizeof *dst);
				float *d = dst + (size_t)(hs - (ptrdiff_t)h0) * W;
				size_t rows = (size_t)(he - hs);
				if (!rows)
					continue;
				if (hi <= lo) { /* kernel wider than the image */
					memset(d, 0, rows * W * sizeof *d);
					continue;
				}
				memcpy(d + lo, src + lo + off, (rows * W - (size_t)lo - (size_t)(w - hi)) * sizeof *d);
				for (size_t r = 0; r < rows; r++) {
					for (ptrdiff_t q = 0; q < lo; q++)
						d[r * W + (size_t)q] = 0.0f;
					for (ptrdiff_t q = hi; q < w; q++)
						d[r * W + (size_t)q] = 0.0f;
				}
			}
		}
}

/* The adjoint of im2col: dx[c][h+i-pad][q+j-pad] += col[(c*k+i)*k+j][(h-h0)*W + q]
 * for output rows h0 <= h < h1 (terms falling in the padding dropped). */
static void col2im_add(const float *col, size_t ldcol, size_t C, size_t H, size_t W, size_t k, size_t h0, size_t h1,
                       float *dx)
{
	const ptrdiff_t pad = (ptrdiff_t)(k / 2), w = (ptrdiff_t)W;
	for (size_t c = 0; c < C; c++)
		for (size_t i = 0; i < k; i++)
			for (size_t j = 0; j < k; j++) {
				const float *src = col + ((c * k + i) * k + j) * ldcol;
				const ptrdiff_t off = (ptrdiff_t)j - pad;
				ptrdiff_t lo = off < 0 ? -off : 0, hi = off > 0 ? w - off : w;
				for (size_t h = h0; h < h1; h++) {
					ptrdiff_t ih = (ptrdiff_t)h + (ptrdiff_t)i - pad;
					if (ih < 0 || ih >= (ptrdiff_t)H)
						continue;
					float *d = dx + c * H * W + (size_t)ih * W + off;
					const float *sr = src + (h - h0) * W;
					for (ptrdiff_t q = lo; q < hi; q++)
						d[q] += sr[q];
				}
			}
}

/* Backward data: the flipped kernel (GEMM depth O*k*k) costs a transposed
 * copy of w per call, negligible unless the images are small; when there
 * are fewer pixels than about 2 O (the deep levels), col = w^T dy then
 * col2im is faster (no copy; depth O >= 64 is enough for the GEMM). */
static int bwd_data_col2im(const struct starnn_conv2d_geom *g)
{
	return g->o >= 64 && g->n * g->h * g->w <= 2 * g->o;
}

/* Backward weight: with few output channels a GEMM with M = O is slow in
 * OpenBLAS; accumulate dw^T = col dy^T (M = C*k*k) and transpose once. */
static int bwd_weight_transposed(const struct starnn_conv2d_geom *g)
{
	return g->o < 64;
}

void starnn_conv2d_fwd_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                           size_t ldw, const float *b, float *y, size_t ldy, float *work)
{
	const size_t N = g->n, C = g->c, O = g->o, H = g->h, W = g->w, k = g->k, HW = H * W, ckk = C * k * k;
	if (k == 1) {
		for (size_t n = 0; n < N; n++) {
			float *yn = y + n * ldy;
			if (b)
				for (size_t o = 0; o < O; o++)
					for (size_t p = 0; p < HW; p++)
						yn[o * HW + p] = b[o];
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)O, (int)HW, (int)C, 1.0f, w, (int)ldw,
			            x + n * ldx, (int)HW, b ? 1.0f : 0.0f, yn, (int)HW);
		}
		return;
	}
	struct block_plan p = plan_blocks(g, ckk);
	float *col = work;
	if (!p.samples) {
		for (size_t n = 0; n < N; n++)
			for (size_t h0 = 0; h0 < H; h0 += p.rows) {
				size_t h1 = h0 + p.rows < H ? h0 + p.rows : H, cols = (h1 - h0) * W;
				im2col(x + n * ldx, C, H, W, k, h0, h1, col, cols);
				float *yb = y + n * ldy + h0 * W;
				if (b)
					for (size_t o = 0; o < O; o++)
						for (size_t q = 0; q < cols; q++)
							yb[o * HW + q] = b[o];
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)O, (int)cols, (int)ckk, 1.0f, w,
				            (int)ldw, col, (int)cols, b ? 1.0f : 0.0f, yb, (int)HW);
			}
		return;
	}
	float *tmp = work + ckk * p.cols;
	for (size_t n0 = 0; n0 < N; n0 += p.samples) {
		size_t ns = n0 + p.samples < N ? p.samples : N - n0, cols = ns * HW;
		for (size_t s = 0; s < ns; s++)
			im2col(x + (n0 + s) * ldx, C, H, W, k, 0, H, col + s * HW, cols);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)O, (int)cols, (int)ckk, 1.0f, w, (int)ldw,
		            col, (int)cols, 0.0f, tmp, (int)cols);
		for (size_t s = 0; s < ns; s++)
			for (size_t o = 0; o < O; o++) {
				float *yr = y + (n0 + s) * ldy + o * HW;
				const float *tr = tmp + o * cols + s * HW;
				float bo = b ? b[o] : 0.0f;
				for (size_t q = 0; q < HW; q++)
					yr[q] = tr[q] + bo;
			}
	}
}

void starnn_conv2d_bwd_data_cpu(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy, const float *w,
                                size_t ldw, float beta, float *dx, size_t ldx, float *work)
{
	const size_t N = g->n, C = g->c, O = g->o, H = g->h, W = g->w, k = g->k, HW = H * W, kk = k * k;
	const size_t okk = O * kk;
	if (k == 1) {
		for (size_t n = 0; n < N; n++)
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)C, (int)HW, (int)O, 1.0f, w, (int)ldw,
			            dy + n * ldy, (int)HW, beta, dx + n * ldx, (int)HW);
		return;
	}
	if (bwd_data_col2im(g)) {
		const size_t ckk = C * kk;
		struct block_plan p = plan_blocks(g, ckk);
		float *col = work, *dyp = work + ckk * p.cols;
		for (size_t n = 0; n < N; n++) /* dx = beta * dx, then accumulate */
			for (size_t q = 0; q < C * HW; q++)
				dx[n * ldx + q] = beta == 0.0f ? 0.0f : beta * dx[n * ldx + q];
		if (!p.samples) {
			for (size_t n = 0; n < N; n++)
				for (size_t h0 = 0; h0 < H; h0 += p.rows) {
					size_t h1 = h0 + p.rows < H ? h0 + p.rows : H, cols = (h1 - h0) * W;
					cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ckk, (int)cols, (int)O, 1.0f, w,
					            (int)ldw, dy + n * ldy + h0 * W, (int)HW, 0.0f, col, (int)cols);
					col2im_add(col, cols, C, H, W, k, h0, h1, dx + n * ldx);
				}
			return;
		}
		for (size_t n0 = 0; n0 < N; n0 += p.samples) {
			size_t ns = n0 + p.samples < N ? p.samples : N - n0, cols = ns * HW;
			for (size_t s = 0; s < ns; s++)
				for (size_t o = 0; o < O; o++)
					memcpy(dyp + o * cols + s * HW, dy + (n0 + s) * ldy + o * HW, HW * sizeof *dyp);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ckk, (int)cols, (int)O, 1.0f, w, (int)ldw,
			            dyp, (int)cols, 0.0f, col, (int)cols);
			for (size_t s = 0; s < ns; s++)
				col2im_add(col + s * HW, cols, C, H, W, k, 0, H, dx + (n0 + s) * ldx);
		}
		return;
	}
	/* w' = flipped, transposed kernel: C x O*k*k. */
	float *wt = work;
	for (size_t c = 0; c < C; c++)
		for (size_t o = 0; o < O; o++) {
			const float *src = w + o * ldw + c * kk;
			float *dst = wt + c * okk + o * kk;
			for (size_t t = 0; t < kk; t++)
				dst[t] = src[kk - 1 - t];
		}
	float *col = work + C * okk;
	struct block_plan p = plan_blocks(g, okk);
	if (!p.samples) {
		for (size_t n = 0; n < N; n++)
			for (size_t h0 = 0; h0 < H; h0 += p.rows) {
				size_t h1 = h0 + p.rows < H ? h0 + p.rows : H, cols = (h1 - h0) * W;
				im2col(dy + n * ldy, O, H, W, k, h0, h1, col, cols);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)C, (int)cols, (int)okk, 1.0f, wt,
				            (int)okk, col, (int)cols, beta, dx + n * ldx + h0 * W, (int)HW);
			}
		return;
	}
	float *tmp = col + okk * p.cols;
	for (size_t n0 = 0; n0 < N; n0 += p.samples) {
		size_t ns = n0 + p.samples < N ? p.samples : N - n0, cols = ns * HW;
		for (size_t s = 0; s < ns; s++)
			im2col(dy + (n0 + s) * ldy, O, H, W, k, 0, H, col + s * HW, cols);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)C, (int)cols, (int)okk, 1.0f, wt, (int)okk,
		            col, (int)cols, 0.0f, tmp, (int)cols);
		for (size_t s = 0; s < ns; s++)
			for (size_t c = 0; c < C; c++) {
				float *dr = dx + (n0 + s) * ldx + c * HW;
				const float *tr = tmp + c * cols + s * HW;
				if (beta == 0.0f) /* overwrite: no 0 * NaN from stale memory */
					for (size_t q = 0; q < HW; q++)
						dr[q] = tr[q];
				else
					for (size_t q = 0; q < HW; q++)
						dr[q] = beta * dr[q] + tr[q];
			}
	}
}

void starnn_conv2d_bwd_weight_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *dy,
                                  size_t ldy, float beta, float *dw, size_t ldw, float *work)
{
	const size_t N = g->n, C = g->c, O = g->o, H = g->h, W = g->w, k = g->k, HW = H * W, ckk = C * k * k;
	float bt = beta; /* beta for the first product, then accumulate */
	if (k == 1) {
		for (size_t n = 0; n < N; n++, bt = 1.0f)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)O, (int)C, (int)HW, 1.0f, dy + n * ldy,
			            (int)HW, x + n * ldx, (int)HW, bt, dw, (int)ldw);
		return;
	}
	struct block_plan p = plan_blocks(g, ckk);
	float *col = work;
	if (bwd_weight_transposed(g)) {
		float *dwt = work + ckk * p.cols + (p.samples ? O * p.cols : 0), *dyp = work + ckk * p.cols;
		float b0 = 0.0f; /* dw^T (C*k*k x O) = sum col dy^T */
		if (!p.samples) {
			for (size_t n = 0; n < N; n++)
				for (size_t h0 = 0; h0 < H; h0 += p.rows, b0 = 1.0f) {
					size_t h1 = h0 + p.rows < H ? h0 + p.rows : H, cols = (h1 - h0) * W;
					im2col(x + n * ldx, C, H, W, k, h0, h1, col, cols);
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ckk, (int)O, (int)cols, 1.0f, col,
					            (int)cols, dy + n * ldy + h0 * W, (int)HW, b0, dwt, (int)O);
				}
		} else {
			for (size_t n0 = 0; n0 < N; n0 += p.samples, b0 = 1.0f) {
				size_t ns = n0 + p.samples < N ? p.samples : N - n0, cols = ns * HW;
				for (size_t s = 0; s < ns; s++) {
					im2col(x + (n0 + s) * ldx, C, H, W, k, 0, H, col + s * HW, cols);
					for (size_t o = 0; o < O; o++)
						memcpy(dyp + o * cols + s * HW, dy + (n0 + s) * ldy + o * HW, HW * sizeof *dyp);
				}
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ckk, (int)O, (int)cols, 1.0f, col,
				            (int)cols, dyp, (int)cols, b0, dwt, (int)O);
			}
		}
		for (size_t o = 0; o < O; o++) {
			float *d = dw + o * ldw;
			for (size_t r = 0; r < ckk; r++)
				d[r] = (beta == 0.0f ? 0.0f : beta * d[r]) + dwt[r * O + o];
		}
		return;
	}
	if (!p.samples) {
		for (size_t n = 0; n < N; n++)
			for (size_t h0 = 0; h0 < H; h0 += p.rows, bt = 1.0f) {
				size_t h1 = h0 + p.rows < H ? h0 + p.rows : H, cols = (h1 - h0) * W;
				im2col(x + n * ldx, C, H, W, k, h0, h1, col, cols);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)O, (int)ckk, (int)cols, 1.0f,
				            dy + n * ldy + h0 * W, (int)HW, col, (int)cols, bt, dw, (int)ldw);
			}
		return;
	}
	float *dyp = work + ckk * p.cols;
	for (size_t n0 = 0; n0 < N; n0 += p.samples, bt = 1.0f) {
		size_t ns = n0 + p.samples < N ? p.samples : N - n0, cols = ns * HW;
		for (size_t s = 0; s < ns; s++) {
			im2col(x + (n0 + s) * ldx, C, H, W, k, 0, H, col + s * HW, cols);
			for (size_t o = 0; o < O; o++)
				memcpy(dyp + o * cols + s * HW, dy + (n0 + s) * ldy + o * HW, HW * sizeof *dyp);
		}
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)O, (int)ckk, (int)cols, 1.0f, dyp, (int)cols,
		            col, (int)cols, bt, dw, (int)ldw);
	}
}

/* 1x1 convolutions from x in blocks of xb > 1 channels to y in NCHW
 * (codelets/kernels/conv2d.h: starnn_conv2d_1x1_nchw_ok): block cb of a sample is
 * a row-major P x xb matrix X_cb (P = h w pixels), so each pass is one
 * OpenBLAS sgemm per block and sample, on the data where it is:
 *   forward:     Y (O x P) = b + sum_cb W[:, cb] (O x xb) X_cb^T
 *   bwd_data:    dX_cb (P x xb) = beta dX_cb + dY^T (P x O) W[:, cb]
 *   bwd_weight:  dW[:, cb] (O x xb) = beta dW[:, cb] + sum_n dY X_cb
 * with W the O x C weights (rows ldw apart). */
void starnn_conv2d_1x1_nchw_fwd_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                    size_t ldw, const float *b, float *y, size_t ldy)
{
	const size_t P = g->h * g->w, B = g->xb, CB = g->c / B;
	for (size_t n = 0; n < g->n; n++) {
		float *yn = y + n * ldy;
		for (size_t o = 0; o < g->o; o++)
			for (size_t p = 0; p < P; p++)
				yn[o * P + p] = b ? b[o] : 0.0f;
		for (size_t cb = 0; cb < CB; cb++)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->o, (int)P, (int)B, 1.0f, w + cb * B, (int)ldw,
			            x + n * ldx + cb * B * P, (int)B, 1.0f, yn, (int)P);
	}
}

void starnn_conv2d_1x1_nchw_bwd_data_cpu(const struct starnn_conv2d_geom *g, const float *dy, size_t ldy,
                                         const float *w, size_t ldw, float beta, float *dx, size_t ldx)
{
	const size_t P = g->h * g->w, B = g->xb, CB = g->c / B;
	for (size_t n = 0; n < g->n; n++)
		for (size_t cb = 0; cb < CB; cb++) {
			float *d = dx + n * ldx + cb * B * P;
			if (beta == 0.0f) /* sgemm's beta 0 may still read C (NaN * 0) */
				memset(d, 0, P * B * sizeof *d);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)P, (int)B, (int)g->o, 1.0f, dy + n * ldy, (int)P,
			            w + cb * B, (int)ldw, beta == 0.0f ? 1.0f : beta, d, (int)B);
		}
}

void starnn_conv2d_1x1_nchw_bwd_weight_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                           const float *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	const size_t P = g->h * g->w, B = g->xb, CB = g->c / B;
	for (size_t cb = 0; cb < CB; cb++) {
		float *d = dw + cb * B;
		if (beta == 0.0f)
			for (size_t o = 0; o < g->o; o++)
				memset(d + o * ldw, 0, B * sizeof *d);
		for (size_t n = 0; n < g->n; n++)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->o, (int)B, (int)P, 1.0f, dy + n * ldy,
			            (int)P, x + n * ldx + cb * B * P, (int)B, n == 0 && beta != 0.0f ? beta : 1.0f, d, (int)ldw);
	}
	if (db)
		starnn_conv2d_bwd_bias_cpu(g->n, g->o, P, dy, ldy, beta, db);
}

int starnn_conv2d_1x1_nchw_ok(const struct starnn_conv2d_geom *g)
{
	return g->k == 1 && g->xb > 1 && g->yb <= 1 && g->c % g->xb == 0;
}

void starnn_conv2d_bwd_bias_cpu(size_t n, size_t o, size_t hw, const float *dy, size_t ldy, float beta, float *db)
{
	/* 16 float partial sums per row (vectorised), rows summed in double. */
	enum { LANES = 16 };
	for (size_t c = 0; c < o; c++) {
		double total = 0;
		for (size_t s = 0; s < n; s++) {
			const float *r = dy + s * ldy + c * hw;
			float acc[LANES] = {0};
			size_t q = 0;
			for (; q + LANES <= hw; q += LANES)
				for (int l = 0; l < LANES; l++)
					acc[l] += r[q + l];
			double part = 0;
			for (; q < hw; q++)
				part += r[q];
			for (int l = 0; l < LANES; l++)
				part += acc[l];
			total += part;
		}
		db[c] = (beta == 0.0f ? 0.0f : beta * db[c]) + (float)total;
	}
}

/* The direct fp32 3x3 weight gradient (codelets/kernels/conv2d.h:
 * starnn_conv2d_bwd_weight_direct_cpu).
 *
 * Each sample of x is first copied, zero-padded, into the workspace as xp
 * [C8/8][H+2][W+2][8] (C8: C rounded up to 8, lanes past C zero), so that
 * the loops have no edge cases. The gradient is accumulated in the
 * workspace as acc [O/4][C8/8][kh][kw][4 o][8 c]: for a group of 4 output
 * channels, a block of 8 input channels and a kernel row kh, one sweep
 * over output pixels keeps the 3 x 4 vectors acc[kh][kw][o] (each over
 * the 8 c) in 12 ymm registers and, per pixel, loads the 3 x vectors
 * xp(h + kh, w + kw) and broadcasts the 4 dy(o, h, w): 12 FMAs for 7 loads
 * (FMA-bound). The sweeps run over strips of output rows (at least 256
 * pixels, or the whole image), for chunks of (o group, c block) pairs
 * whose accumulators stay in L2; acc is added to dw with beta at the end.
 * dy is read where it is, in any layout: element (o, p) of sample n at
 * dy + n*ldy + starnn_chan_offset(o, HW, yb) + p*yb (yb = 1 for NCHW). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define DIRECT_X86 1
#endif
#include "codelets/cpu/simd.h"

#define DIRECT_PIXELS 256 /* least output pixels of a strip */
#define DIRECT_PAIRS 84   /* (o group, c block) pairs per chunk: 84 * 1152 B of accumulators */

static size_t ceil8(size_t c) { return (c + 7) / 8 * 8; }


int starnn_conv2d_wgrad_direct_ok(const struct starnn_conv2d_geom *g)
{
#ifdef DIRECT_X86
	return g->k == 3 && g->o % 4 == 0 && starnn_simd_level() >= STARNN_SIMD_AVX2;
#else
	(void)g;
	return 0;
#endif
}

size_t starnn_conv2d_wgrad_direct_workspace(const struct starnn_conv2d_geom *g)
{
	return g->o * ceil8(g->c) * 9 + ceil8(g->c) * (g->h + 2) * (g->w + 2);
}

#ifdef DIRECT_X86
/* One sweep: rows output rows of W pixels; xr: the padded x row h + kh of
 * the 8-channel block (pixels 8 floats apart, rows xrow apart); d: dy of
 * the first of the 4 output channels (the others dstep apart; pixels ps
 * apart, rows W * ps apart); a: the 12 accumulators [kw][o][8]. */
__attribute__((noinline, target("avx2,fma"))) static void direct_sweep(const float *xr, size_t xrow, const float *d,
                                                                      size_t dstep, size_t ps, size_t W,
                                                                      size_t rows, float *a)
{
	__m256 a00 = _mm256_loadu_ps(a), a01 = _mm256_loadu_ps(a + 8), a02 = _mm256_loadu_ps(a + 16);
	__m256 a03 = _mm256_loadu_ps(a + 24), a10 = _mm256_loadu_ps(a + 32), a11 = _mm256_loadu_ps(a + 40);
	__m256 a12 = _mm256_loadu_ps(a + 48), a13 = _mm256_loadu_ps(a + 56), a20 = _mm256_loadu_ps(a + 64);
	__m256 a21 = _mm256_loadu_ps(a + 72), a22 = _mm256_loadu_ps(a + 80), a23 = _mm256_loadu_ps(a + 88);
	for (size_t r = 0; r < rows; r++, xr += xrow, d += W * ps) {
		const float *xp = xr, *d0 = d, *d1 = d + dstep, *d2 = d + 2 * dstep, *d3 = d + 3 * dstep;
		for (size_t q = 0; q < W * ps; q += ps, xp += 8) {
			__m256 x0 = _mm256_loadu_ps(xp), x1 = _mm256_loadu_ps(xp + 8), x2 = _mm256_loadu_ps(xp + 16), b;
			b = _mm256_broadcast_ss(d0 + q);
			a00 = _mm256_fmadd_ps(x0, b, a00), a10 = _mm256_fmadd_ps(x1, b, a10), a20 = _mm256_fmadd_ps(x2, b, a20);
			b = _mm256_broadcast_ss(d1 + q);
			a01 = _mm256_fmadd_ps(x0, b, a01), a11 = _mm256_fmadd_ps(x1, b, a11), a21 = _mm256_fmadd_ps(x2, b, a21);
			b = _mm256_broadcast_ss(d2 + q);
			a02 = _mm256_fmadd_ps(x0, b, a02), a12 = _mm256_fmadd_ps(x1, b, a12), a22 = _mm256_fmadd_ps(x2, b, a22);
			b = _mm256_broadcast_ss(d3 + q);
			a03 = _mm256_fmadd_ps(x0, b, a03), a13 = _mm256_fmadd_ps(x1, b, a13), a23 = _mm256_fmadd_ps(x2, b, a23);
		}
	}
	_mm256_storeu_ps(a, a00), _mm256_storeu_ps(a + 8, a01), _mm256_storeu_ps(a + 16, a02);
	_mm256_storeu_ps(a + 24, a03), _mm256_storeu_ps(a + 32, a10), _mm256_storeu_ps(a + 40, a11);
	_mm256_storeu_ps(a + 48, a12), _mm256_storeu_ps(a + 56, a13), _mm256_storeu_ps(a + 64, a20);
	_mm256_storeu_ps(a + 72, a21), _mm256_storeu_ps(a + 80, a22), _mm256_storeu_ps(a + 88, a23);
}
#endif

/* x of one sample (layout xb) into xp, zero-padded. */
static void direct_pad(const struct starnn_conv2d_geom *g, const float *x, float *xp)
{
	const size_t C = g->c, H = g->h, W = g->w, HW = H * W, Hp = H + 2, Wp = W + 2, CB = ceil8(C) / 8;
	const size_t xb = g->xb > 1 ? g->xb : 1;
	for (size_t cb = 0; cb < CB; cb++) {
		float *d = xp + cb * Hp * Wp * 8;
		const size_t lanes = C - cb * 8 < 8 ? C - cb * 8 : 8;
		memset(d, 0, Wp * 8 * sizeof *d);
		memset(d + (H + 1) * Wp * 8, 0, Wp * 8 * sizeof *d);
		for (size_t h = 0; h < H; h++) {
			float *r = d + (h + 1) * Wp * 8;
			memset(r, 0, 8 * sizeof *r);
			memset(r + (W + 1) * 8, 0, 8 * sizeof *r);
			if (xb == 8) { /* the row as it is */
				memcpy(r + 8, x + (cb * H + h) * W * 8, W * 8 * sizeof *r);
			} else if (xb > 1) { /* 8 channels of a block of xb: 8 floats of each pixel's xb */
				const float *s = x + starnn_chan_offset(cb * 8, HW, xb) + h * W * xb;
				for (size_t w = 0; w < W; w++)
					memcpy(r + (w + 1) * 8, s + w * xb, 8 * sizeof *r);
			} else {
				const float *s = x + cb * 8 * HW + h * W;
				for (size_t w = 0; w < W; w++) {
					float *p = r + (w + 1) * 8;
					size_t l = 0;
					for (; l < lanes; l++)
						p[l] = s[l * HW + w];
					for (; l < 8; l++)
						p[l] = 0.0f;
				}
			}
		}
	}
}

void starnn_conv2d_bias_blocked_cpu(size_t n, size_t o, size_t hw, size_t yb, const float *dy, size_t ldy, float beta,
                                   float *db)
{
	enum { RUN = 64 };
	for (size_t o0 = 0; o0 < o; o0 += 8) {
		double total[8] = {0};
		for (size_t r = 0; r < n; r++) {
			const float *s = dy + r * ldy + starnn_chan_offset(o0, hw, yb);
			for (size_t p0 = 0; p0 < hw; p0 += RUN) {
				const size_t p1 = p0 + RUN < hw ? p0 + RUN : hw;
				float part[8] = {0};
				for (size_t p = p0; p < p1; p++)
					for (size_t l = 0; l < 8; l++)
						part[l] += s[p * yb + l];
				for (size_t l = 0; l < 8; l++)
					total[l] += part[l];
			}
		}
		for (size_t l = 0; l < 8; l++)
			db[o0 + l] = (beta == 0.0f ? 0.0f : beta * db[o0 + l]) + (float)total[l];
	}
}

/* One sample's sweeps (x already padded into xp), accumulated into acc. */
static void direct_sample(const struct starnn_conv2d_geom *g, const float *xp, const float *dy, float *acc)
{
	const size_t H = g->h, W = g->w, HW = H * W, CB = ceil8(g->c) / 8, OG = g->o / 4, Hp = H + 2, Wp = W + 2;
	const size_t ps = g->yb > 1 ? g->yb : 1, dstep = ps > 1 ? 1 : HW; /* pixel, channel strides of dy */
	size_t rows = (DIRECT_PIXELS + W - 1) / W;
	if (rows > H)
		rows = H;
	size_t nog = OG, ncb = CB; /* a chunk of nog x ncb pairs */
	while (nog * ncb > DIRECT_PAIRS) {
		if (ncb >= nog && ncb > 1)
			ncb = (ncb + 1) / 2;
		else
			nog = (nog + 1) / 2;
	}
	for (size_t og0 = 0; og0 < OG; og0 += nog)
		for (size_t cb0 = 0; cb0 < CB; cb0 += ncb) {
			const size_t og1 = og0 + nog < OG ? og0 + nog : OG, cb1 = cb0 + ncb < CB ? cb0 + ncb : CB;
			for (size_t h0 = 0; h0 < H; h0 += rows) {
				const size_t rr = h0 + rows < H ? rows : H - h0;
				for (size_t og = og0; og < og1; og++) {
					const float *d = dy + starnn_chan_offset(og * 4, HW, ps) + h0 * W * ps;
					for (size_t cb = cb0; cb < cb1; cb++)
						for (size_t kh = 0; kh < 3; kh++) {
#ifdef DIRECT_X86
							direct_sweep(xp + (cb * Hp + h0 + kh) * Wp * 8, Wp * 8, d, dstep, ps, W, rr,
							             acc + ((og * CB + cb) * 3 + kh) * 96);
#else
							(void)d, (void)rr; /* starnn_conv2d_wgrad_direct_ok: never called */
#endif
						}
				}
			}
		}
}

void starnn_conv2d_bwd_weight_direct_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx,
                                         const float *dy, size_t ldy, float beta, float *dw, size_t ldw, float *db,
                                         float *work)
{
	const size_t C = g->c, O = g->o, C8 = ceil8(C), CB = C8 / 8;
	float *acc = work, *xp = work + O * C8 * 9;
	memset(acc, 0, O * C8 * 9 * sizeof *acc);
	for (size_t n = 0; n < g->n; n++) {
		direct_pad(g, x + n * ldx, xp);
		direct_sample(g, xp, dy + n * ldy, acc);
	}
	for (size_t o = 0; o < O; o++)
		for (size_t c = 0; c < C; c++)
			for (size_t kh = 0; kh < 3; kh++)
				for (size_t kw = 0; kw < 3; kw++) {
					const float v = acc[(((((o / 4) * CB + c / 8) * 3 + kh) * 3 + kw) * 4 + o % 4) * 8 + c % 8];
					float *p = dw + o * ldw + (c * 3 + kh) * 3 + kw;
					*p = (beta == 0.0f ? 0.0f : beta * *p) + v;
				}
	if (db && g->yb > 1)
		starnn_conv2d_bias_blocked_cpu(g->n, O, g->h * g->w, g->yb, dy, ldy, beta, db);
	else if (db)
		starnn_conv2d_bwd_bias_cpu(g->n, O, g->h * g->w, dy, ldy, beta, db);
}

/* ------------------------------------------ direct forward from NCHW x
 * The model's first layer: x in NCHW with few channels (13 frames), y in
 * blocks of 8 (nChw8c ...), 3x3. oneDNN's AVX2 kernel wants x in padded
 * nChw8c, which costs a copy of the input per task, and runs these shapes
 * at about 40 GFLOP/s. Here the weights are packed per task into
 * wp[c][tap][o] (c * 9 * o floats of work), and each output row is swept in
 * groups of 6 pixels x 16 output channels: 12 ymm accumulators, per term
 * (c, kh, kw) 2 weight loads and 6 broadcasts of x read where it is. The
 * first and last pixel of a row (whose windows leave the image), the last
 * group of fewer than 6 and a last group of 8 channels take the plain loop
 * below, over the same terms in the same order. */

int starnn_conv2d_fwd_nchw_direct_ok(const struct starnn_conv2d_geom *g)
{
#ifdef DIRECT_X86
	return g->k == 3 && g->xb <= 1 && g->yb >= 8 && g->yb % 8 == 0 && g->o % 8 == 0 && g->w >= 2 &&
	       starnn_simd_level() >= STARNN_SIMD_AVX2;
#else
	(void)g;
	return 0;
#endif
}

size_t starnn_conv2d_fwd_nchw_direct_workspace(const struct starnn_conv2d_geom *g)
{
	return g->c * 9 * g->o;
}

/* np pixels from (h, w0) x nch (8 or 16) output channels from og into
 * acc[p][16]: the plain loop, any window position. */
static void fwd_nchw_plain(const struct starnn_conv2d_geom *g, const float *x, const float *wp, size_t og, size_t nch,
                           size_t h, size_t w0, size_t np, float *acc)
{
	const size_t C = g->c, H = g->h, W = g->w, HW = H * W, O = g->o;
	for (size_t p = 0; p < np; p++) {
		const size_t w = w0 + p;
		for (size_t c = 0; c < C; c++)
			for (size_t kh = 0; kh < 3; kh++) {
				if (h + kh < 1 || h + kh > H)
					continue;
				for (size_t kw = 0; kw < 3; kw++) {
					if (w + kw < 1 || w + kw > W)
						continue;
					const float xv = x[c * HW + (h + kh - 1) * W + w + kw - 1];
					const float *wv = wp + (c * 9 + kh * 3 + kw) * O + og;
					for (size_t l = 0; l < nch; l++)
						acc[p * 16 + l] += xv * wv[l];
				}
			}
	}
}

#ifdef DIRECT_X86
/* 6 pixels x 16 channels whose windows lie inside the image columns: xr
 * at x(c = 0, row h + kh0 - 1, column w0 - 1), rows kh0 .. kh1 - 1 of the
 * window; wp at channel og of tap (0, kh0); bias: the 16 channels' (NULL:
 * none); the sums stored at y0 (channels og .. og + 7) and y1 (the next
 * 8), pixels ps floats apart. */
__attribute__((noinline, target("avx2,fma"))) static void fwd_nchw_group(const float *xr, size_t HW, size_t W,
                                                                        size_t C, size_t nkh, const float *wp,
                                                                        size_t O, const float *bias, float *y0,
                                                                        float *y1, size_t ps)
{
	const __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
	const __m256 b1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
	__m256 a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1;
	__m256 a30 = b0, a31 = b1, a40 = b0, a41 = b1, a50 = b0, a51 = b1;
	for (size_t c = 0; c < C; c++, xr += HW, wp += 9 * O)
		for (size_t kh = 0; kh < nkh; kh++)
#pragma GCC unroll 1
			for (size_t kw = 0; kw < 3; kw++) {
				const float *xp = xr + kh * W + kw, *wv = wp + (kh * 3 + kw) * O;
				const __m256 w0 = _mm256_loadu_ps(wv), w1 = _mm256_loadu_ps(wv + 8);
				__m256 b = _mm256_broadcast_ss(xp);
				a00 = _mm256_fmadd_ps(b, w0, a00), a01 = _mm256_fmadd_ps(b, w1, a01);
				b = _mm256_broadcast_ss(xp + 1);
				a10 = _mm256_fmadd_ps(b, w0, a10), a11 = _mm256_fmadd_ps(b, w1, a11);
				b = _mm256_broadcast_ss(xp + 2);
				a20 = _mm256_fmadd_ps(b, w0, a20), a21 = _mm256_fmadd_ps(b, w1, a21);
				b = _mm256_broadcast_ss(xp + 3);
				a30 = _mm256_fmadd_ps(b, w0, a30), a31 = _mm256_fmadd_ps(b, w1, a31);
				b = _mm256_broadcast_ss(xp + 4);
				a40 = _mm256_fmadd_ps(b, w0, a40), a41 = _mm256_fmadd_ps(b, w1, a41);
				b = _mm256_broadcast_ss(xp + 5);
				a50 = _mm256_fmadd_ps(b, w0, a50), a51 = _mm256_fmadd_ps(b, w1, a51);
				/* keeps the compiler from reusing the broadcasts of one tap
				 * in the next (they overlap by 5 pixels): that needs more
				 * than 16 registers, and it spills accumulators */
				__asm__ volatile("" ::: "memory");
			}
	_mm256_storeu_ps(y0, a00), _mm256_storeu_ps(y1, a01), _mm256_storeu_ps(y0 + ps, a10);
	_mm256_storeu_ps(y1 + ps, a11), _mm256_storeu_ps(y0 + 2 * ps, a20), _mm256_storeu_ps(y1 + 2 * ps, a21);
	_mm256_storeu_ps(y0 + 3 * ps, a30), _mm256_storeu_ps(y1 + 3 * ps, a31), _mm256_storeu_ps(y0 + 4 * ps, a40);
	_mm256_storeu_ps(y1 + 4 * ps, a41), _mm256_storeu_ps(y0 + 5 * ps, a50), _mm256_storeu_ps(y1 + 5 * ps, a51);
}
#endif

void starnn_conv2d_fwd_nchw_direct_cpu(const struct starnn_conv2d_geom *g, const float *x, size_t ldx, const float *w,
                                       size_t ldw, const float *b, float *y, size_t ldy, float *work)
{
	const size_t C = g->c, H = g->h, W = g->w, HW = H * W, O = g->o, yb = g->yb;
	float *wp = work;
	for (size_t o = 0; o < O; o++)
		for (size_t ct = 0; ct < C * 9; ct++)
			wp[ct * O + o] = w[o * ldw + ct];
	float acc[6 * 16];
	for (size_t n = 0; n < g->n; n++) {
		const float *xs = x + n * ldx;
		float *ys = y + n * ldy;
		for (size_t h = 0; h < H; h++) /* the row's 3 x rows stay in cache over the channel groups */
			for (size_t og = 0; og < O; og += 16) {
				const size_t nch = O - og >= 16 ? 16 : 8;
				const size_t kh0 = h == 0 ? 1 : 0, kh1 = h + 1 == H ? 2 : 3;
				for (size_t w0 = 0; w0 < W;) {
					/* the first and last pixel, a short last group, 8 channels:
					 * the plain loop; else a group of 6 */
					const int edge = w0 == 0 || w0 + 6 > W - 1 || nch < 16;
					const size_t np = w0 == 0 ? 1 : edge ? (W - w0 < 6 ? W - w0 : 6) : 6;
					float *y0 = ys + starnn_chan_offset(og, HW, yb) + (h * W + w0) * yb;
#ifdef DIRECT_X86
					if (!edge) {
						fwd_nchw_group(xs + (h + kh0 - 1) * W + w0 - 1, HW, W, C, kh1 - kh0,
						               wp + kh0 * 3 * O + og, O, b ? b + og : NULL, y0,
						               ys + starnn_chan_offset(og + 8, HW, yb) + (h * W + w0) * yb, yb);
						w0 += np;
						continue;
					}
#endif
					for (size_t p = 0; p < np; p++)
						for (size_t l = 0; l < 16; l++)
							acc[p * 16 + l] = l < nch && b ? b[og + l] : 0.0f;
					fwd_nchw_plain(g, xs, wp, og, nch, h, w0, np, acc);
					for (size_t p = 0; p < np; p++)
						for (size_t v = 0; v < nch; v += 8)
							memcpy(ys + starnn_chan_offset(og + v, HW, yb) + (h * W + w0 + p) * yb,
							       acc + p * 16 + v, 8 * sizeof(float));
					w0 += np;
				}
			}
	}
}
