/* The oneDNN kernels of conv2d and convt2d in a build without oneDNN
 * (compiled instead of codelets/cpu/conv2d_dnnl_*.c): the passes return
 * STARNN_EINVAL, the probes and layouts answer 0 (no blocked layout, no
 * native bf16, nothing to pack), the routes answer oneDNN's own (which
 * the codelets never take without it: their CPU backend is im2col). */
#include <string.h>

#include "codelets/kernels/conv2d.h"
#include "codelets/kernels/convt2d.h"
#include "runtime/base/error.h"

static int no_dnnl(void)
{
	return starnn_error(STARNN_EINVAL, "conv2d: this starnn was built without oneDNN");
}

enum starnn_conv2d_wgrad starnn_conv2d_dnnl_wgrad_route(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                                        const struct starnn_conv2d_routes *r)
{
	return STARNN_CONV2D_WGRAD_DNNL;
}

int starnn_conv2d_dnnl_winograd(const struct starnn_conv2d_geom *g, enum starnn_conv2d_pass pass, starnn_dtype dt,
                                const struct starnn_conv2d_routes *r)
{
	return 0;
}

int starnn_conv2d_1x1_gemm(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *r)
{
	return 0;
}

int starnn_conv2d_nchw_in_direct(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *r)
{
	return 0;
}

int starnn_convt2d_direct(size_t ch, size_t b, starnn_dtype dt, const struct starnn_conv2d_routes *r)
{
	return 0;
}

int starnn_conv2d_dnnl_block(starnn_dtype dt)
{
	return 0;
}

int starnn_conv2d_dnnl_bf16(void)
{
	return 0;
}

int starnn_conv2d_fwd_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt, const struct starnn_conv2d_routes *r,
                           const void *x, size_t ldx, const void *w, size_t ldw, const float *b, void *y, size_t ldy)
{
	return no_dnnl();
}

int starnn_conv2d_bwd_data_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                const struct starnn_conv2d_routes *r, const void *dy, size_t ldy, const void *w,
                                size_t ldw, float beta, void *dx, size_t ldx)
{
	return no_dnnl();
}

int starnn_conv2d_bwd_weight_dnnl(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *dy,
                                  size_t ldy, float beta, float *dw, size_t ldw, float *db)
{
	return no_dnnl();
}

int starnn_conv2d_fwd_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *w,
                                  size_t ldw, const void *packed, const float *b, void *y, size_t ldy)
{
	return no_dnnl();
}

int starnn_conv2d_bwd_data_dnnl_packed(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                       const struct starnn_conv2d_routes *r, const void *dy, size_t ldy, const void *w,
                                       size_t ldw, const void *packed, float beta, void *dx, size_t ldx)
{
	return no_dnnl();
}

int starnn_conv2d_fwd_dnnl_sliced(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                  const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *w,
                                  size_t ldw, const void *whole, size_t row0, const float *b, void *y, size_t ldy)
{
	return no_dnnl();
}

size_t starnn_conv2d_dnnl_pack_bytes(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, const struct starnn_conv2d_routes *r, size_t lda, size_t ldw,
                                     size_t ldout, float beta)
{
	return 0;
}

size_t starnn_conv2d_dnnl_pack_info(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                    starnn_dtype dt, const struct starnn_conv2d_routes *r, size_t lda, size_t ldw,
                                    size_t ldout, float beta, struct starnn_blocked_weights *layout)
{
	if (layout)
		memset(layout, 0, sizeof *layout);
	return 0;
}

int starnn_conv2d_dnnl_pack(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, size_t lda, const void *w, size_t ldw, size_t ldout,
                            float beta, void *packed, size_t bytes)
{
	return no_dnnl();
}

int starnn_conv2d_dnnl_packed_ok(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                 const struct starnn_conv2d_routes *r, size_t lda, size_t ldw, size_t ldout,
                                 float beta, const void *packed)
{
	return 0;
}

int starnn_conv2d_dnnl_sliced_ok(const struct starnn_conv2d_geom *g, const struct starnn_conv2d_routes *r, size_t ldx,
                                 size_t ldw, size_t ldy, const void *whole, size_t row0)
{
	return 0;
}

int starnn_conv2d_dnnl_dw_layout(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *r, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	return 0;
}

int starnn_convt2d_fwd_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, const void *x, size_t ldx, const void *wt,
                            size_t ldw, const float *bias, void *y, size_t ldy)
{
	return no_dnnl();
}

int starnn_convt2d_bwd_data_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                 starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *wt, size_t ldw,
                                 const void *dy, size_t lddy, float beta, void *dx, size_t lddx)
{
	return no_dnnl();
}

int starnn_convt2d_bwd_weight_dnnl(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x, size_t ldx,
                                   const void *dy, size_t lddy, float beta, float *dw, size_t lddw, float *db)
{
	return no_dnnl();
}

int starnn_convt2d_fwd_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x, size_t ldx,
                                   const void *wt, size_t ldw, const void *whole, size_t row0, const float *bias,
                                   void *y, size_t ldy)
{
	return no_dnnl();
}

int starnn_convt2d_bwd_data_dnnl_sliced(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *wt,
                                        size_t ldw, const void *whole, size_t row0, const void *dy, size_t lddy,
                                        float beta, void *dx, size_t lddx)
{
	return no_dnnl();
}

int starnn_convt2d_bwd_weight_dnnl_in(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                      starnn_dtype dt, const struct starnn_conv2d_routes *r, const void *x,
                                      size_t ldx, const void *dy, size_t lddy, float beta, float *dw, size_t lddw,
                                      float *db, const struct starnn_blocked_weights *L)
{
	return no_dnnl();
}

int starnn_convt2d_dnnl_fwd_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                   starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                   struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	return 0;
}

int starnn_convt2d_dnnl_bwd_data_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                        starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                        struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	return 0;
}

int starnn_convt2d_dnnl_sliced_ok(int fwd, size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  const struct starnn_conv2d_routes *r, size_t ldin, size_t ldw, size_t ldout,
                                  float beta, const void *whole, size_t row0)
{
	return 0;
}

int starnn_convt2d_dnnl_dw_layout(size_t n, size_t c, size_t o, size_t h, size_t w, size_t xb, size_t yb,
                                  starnn_dtype dt, const struct starnn_conv2d_routes *r,
                                  struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	return 0;
}
