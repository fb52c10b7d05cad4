/* OpenCL launchers of convt2d (codelets/kernels/convt2d.h; the kernels:
 * codelets/opencl/convt2d.cl): NCHW activations, one kernel per pass and
 * dtype of the activations (fp32, fp16, bf16). */
#include <stdio.h>

#include "codelets/opencl/common.h"
#include "codelets/kernels/convt2d.h"

/* "convt2d_<pass>_<dtype>" into buf */
static const char *kname(char *buf, size_t size, const char *pass, starnn_dtype dt)
{
	snprintf(buf, size, "convt2d_%s_%s", pass, dt == STARNN_FP16 ? "fp16" : dt == STARNN_BF16 ? "bf16" : "fp32");
	return buf;
}

cl_int starnn_convt2d_fwd_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t c, size_t o, size_t h, size_t w,
                                 starnn_dtype dt, cl_mem x, size_t x_off, size_t ldx, cl_mem wt, size_t w_off,
                                 size_t ldw, cl_mem b, size_t b_off, cl_mem y, size_t y_off, size_t ldy)
{
	char name[40];
	const cl_ulong cc = c, oo = o, hh = h, ww = w, xo = x_off, lx = ldx, wo = w_off, lw = ldw, bo = b_off,
	               yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "fwd", dt), n * o, 4 * h * w, STARNN_CL_ARG(cc),
	                        STARNN_CL_ARG(oo), STARNN_CL_ARG(hh), STARNN_CL_ARG(ww), STARNN_CL_ARG(x),
	                        STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(wt), STARNN_CL_ARG(wo),
	                        STARNN_CL_ARG(lw), STARNN_CL_ARG(b), STARNN_CL_ARG(bo), STARNN_CL_ARG(y),
	                        STARNN_CL_ARG(yo), STARNN_CL_ARG(ly));
}

cl_int starnn_convt2d_bwd_data_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t c, size_t o, size_t h, size_t w,
                                      starnn_dtype dt, cl_mem wt, size_t w_off, size_t ldw, cl_mem dy, size_t dy_off,
                                      size_t lddy, float beta, cl_mem dx, size_t dx_off, size_t lddx)
{
	char name[40];
	const cl_ulong cc = c, oo = o, hh = h, ww = w, wo = w_off, lw = ldw, dyo = dy_off, ly = lddy, dxo = dx_off,
	               lx = lddx;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "bwd_data", dt), n * c, h * w, STARNN_CL_ARG(cc),
	                        STARNN_CL_ARG(oo), STARNN_CL_ARG(hh), STARNN_CL_ARG(ww), STARNN_CL_ARG(wt),
	                        STARNN_CL_ARG(wo), STARNN_CL_ARG(lw), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo),
	                        STARNN_CL_ARG(ly), STARNN_CL_ARG(beta), STARNN_CL_ARG(dx), STARNN_CL_ARG(dxo),
	                        STARNN_CL_ARG(lx));
}

cl_int starnn_convt2d_bwd_weight_opencl(struct starnn_opencl_ctx *ctx, size_t n, size_t c, size_t o, size_t h,
                                        size_t w, starnn_dtype dt, cl_mem x, size_t x_off, size_t ldx, cl_mem dy,
                                        size_t dy_off, size_t lddy, float beta, cl_mem dw, size_t dw_off, size_t lddw,
                                        cl_mem db, size_t db_off)
{
	char name[40];
	const cl_ulong nn = n, oo = o, hh = h, ww = w, xo = x_off, lx = ldx, dyo = dy_off, ly = lddy, dwo = dw_off,
	               lw = lddw, hw4 = 4 * h * w, dbo = db_off;
	cl_int err = STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "bwd_weight", dt), c, 4 * o, STARNN_CL_ARG(nn),
	                              STARNN_CL_ARG(oo), STARNN_CL_ARG(hh), STARNN_CL_ARG(ww), STARNN_CL_ARG(x),
	                              STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo),
	                              STARNN_CL_ARG(ly), STARNN_CL_ARG(beta), STARNN_CL_ARG(dw), STARNN_CL_ARG(dwo),
	                              STARNN_CL_ARG(lw));
	if (err != CL_SUCCESS)
		return err;
	return STARNN_CL_RUN_2D(ctx, kname(name, sizeof name, "bwd_bias", dt), 1, o, STARNN_CL_ARG(nn),
	                        STARNN_CL_ARG(oo), STARNN_CL_ARG(hw4), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo),
	                        STARNN_CL_ARG(ly), STARNN_CL_ARG(beta), STARNN_CL_ARG(db), STARNN_CL_ARG(dbo));
}
