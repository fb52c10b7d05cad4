/* OpenCL launchers of conv2d (codelets/kernels/conv2d.h; the kernels:
 * codelets/opencl/conv2d.cl): NCHW activations, one kernel per pass and
 * dtype of the activations (fp32, fp16, bf16). */
#include <stdio.h>

#include "codelets/opencl/common.h"
#include "codelets/kernels/conv2d.h"

/* "conv2d_<pass>_<dtype>" into buf */
static const char *kname(char *buf, size_t size, const char *pass, starnn_dtype dt)
{
	snprintf(buf, size, "conv2d_%s_%s", pass, dt == STARNN_FP16 ? "fp16" : dt == STARNN_BF16 ? "bf16" : "fp32");
	return buf;
}

cl_int starnn_conv2d_fwd_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                cl_mem x, size_t x_off, size_t ldx, cl_mem w, size_t w_off, size_t ldw, cl_mem b,
                                size_t b_off, cl_mem y, size_t y_off, size_t ldy)
{
	char name[40];
	const cl_ulong c = g->c, o = g->o, h = g->h, wd = g->w, k = g->k, xo = x_off, lx = ldx, wo = w_off, lw = ldw,
	               bo = b_off, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "fwd", dt), g->n * g->o, g->h * g->w, STARNN_CL_ARG(c),
	                        STARNN_CL_ARG(o), STARNN_CL_ARG(h), STARNN_CL_ARG(wd), STARNN_CL_ARG(k), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(w), STARNN_CL_ARG(wo),
	                        STARNN_CL_ARG(lw), STARNN_CL_ARG(b), STARNN_CL_ARG(bo), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_conv2d_bwd_data_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, cl_mem dy, size_t dy_off, size_t ldy, cl_mem w, size_t w_off,
                                     size_t ldw, float beta, cl_mem dx, size_t dx_off, size_t ldx)
{
	char name[40];
	const cl_ulong c = g->c, o = g->o, h = g->h, wd = g->w, k = g->k, dyo = dy_off, ly = ldy, wo = w_off, lw = ldw,
	               dxo = dx_off, lx = ldx;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "bwd_data", dt), g->n * g->c, g->h * g->w,
	                        STARNN_CL_ARG(c), STARNN_CL_ARG(o), STARNN_CL_ARG(h), STARNN_CL_ARG(wd), STARNN_CL_ARG(k),
	                        STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(ly), STARNN_CL_ARG(w),
	                        STARNN_CL_ARG(wo), STARNN_CL_ARG(lw), STARNN_CL_ARG(beta), STARNN_CL_ARG(dx),
	                        STARNN_CL_ARG(dxo), STARNN_CL_ARG(lx));
}

cl_int starnn_conv2d_bwd_weight_opencl(struct starnn_opencl_ctx *ctx, const struct starnn_conv2d_geom *g,
                                       starnn_dtype dt, cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off,
                                       size_t ldy, float beta, cl_mem dw, size_t dw_off, size_t ldw)
{
	char name[40];
	const cl_ulong n = g->n, c = g->c, h = g->h, wd = g->w, k = g->k, xo = x_off, lx = ldx, dyo = dy_off, ly = ldy,
	               dwo = dw_off, lw = ldw;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "bwd_weight", dt), g->o, g->c * g->k * g->k,
	                        STARNN_CL_ARG(n), STARNN_CL_ARG(c), STARNN_CL_ARG(h), STARNN_CL_ARG(wd), STARNN_CL_ARG(k),
	                        STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(dy),
	                        STARNN_CL_ARG(dyo), STARNN_CL_ARG(ly), STARNN_CL_ARG(beta), STARNN_CL_ARG(dw),
	                        STARNN_CL_ARG(dwo), STARNN_CL_ARG(lw));
}

cl_int starnn_conv2d_bwd_bias_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t o, size_t hw, starnn_dtype dt,
                                     cl_mem dy, size_t dy_off, size_t ldy, float beta, cl_mem db, size_t db_off)
{
	char name[40];
	const cl_ulong nn = n, oo = o, p = hw, dyo = dy_off, ly = ldy, dbo = db_off;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "bwd_bias", dt), 1, o, STARNN_CL_ARG(nn), STARNN_CL_ARG(oo),
	                        STARNN_CL_ARG(p), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(ly),
	                        STARNN_CL_ARG(beta), STARNN_CL_ARG(db), STARNN_CL_ARG(dbo));
}
