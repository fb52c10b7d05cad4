/* OpenCL launchers of batch normalisation (codelets/kernels/batchnorm.h;
 * the kernels: codelets/opencl/batchnorm.cl). The reductions and the
 * per-channel steps run one work-item per channel (a 1 x c grid), the
 * elementwise passes one per element (n x c inner). Slots are addressed in
 * doubles (offset and leading dimension). */
#include "codelets/opencl/common.h"
#include "codelets/kernels/batchnorm.h"

cl_int starnn_bn_stats_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                              cl_mem x, size_t x_off, size_t ldx, cl_mem sums, size_t sums_off, int accumulate)
{
	const cl_uint d = (cl_uint)dt, acc = accumulate != 0;
	const cl_ulong nn = n, cc = c, in = inner, xo = x_off, lx = ldx, so = sums_off;
	return STARNN_CL_RUN_2D(ctx, "bn_stats", 1, c, STARNN_CL_ARG(d), STARNN_CL_ARG(nn), STARNN_CL_ARG(cc),
	                        STARNN_CL_ARG(in), STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx),
	                        STARNN_CL_ARG(sums), STARNN_CL_ARG(so), STARNN_CL_ARG(acc));
}

cl_int starnn_bn_finalize_opencl(struct starnn_opencl_ctx *ctx, size_t c, size_t nslots, cl_mem slots,
                                 size_t slots_off, size_t lds, double count, float eps, float momentum,
                                 int update_running, cl_mem mean, size_t mean_off, cl_mem invstd, size_t invstd_off,
                                 cl_mem running_mean, size_t rm_off, cl_mem running_var, size_t rv_off)
{
	const cl_ulong cc = c, ns = nslots, so = slots_off, ls = lds, mo = mean_off, io = invstd_off, rmo = rm_off,
	               rvo = rv_off;
	const cl_double cnt = count;
	const cl_uint upd = update_running != 0;
	return STARNN_CL_RUN_2D(ctx, "bn_finalize", 1, c, STARNN_CL_ARG(cc), STARNN_CL_ARG(ns), STARNN_CL_ARG(slots),
	                        STARNN_CL_ARG(so), STARNN_CL_ARG(ls), STARNN_CL_ARG(cnt), STARNN_CL_ARG(eps),
	                        STARNN_CL_ARG(momentum), STARNN_CL_ARG(upd), STARNN_CL_ARG(mean), STARNN_CL_ARG(mo),
	                        STARNN_CL_ARG(invstd), STARNN_CL_ARG(io), STARNN_CL_ARG(running_mean),
	                        STARNN_CL_ARG(rmo), STARNN_CL_ARG(running_var), STARNN_CL_ARG(rvo));
}

cl_int starnn_bn_apply_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                              cl_mem x, size_t x_off, size_t ldx, cl_mem mean, size_t mean_off, cl_mem stat,
                              size_t stat_off, int var_given, float eps, cl_mem gamma, size_t gamma_off, cl_mem beta,
                              size_t beta_off, int relu, cl_mem y, size_t y_off, size_t ldy)
{
	const cl_uint d = (cl_uint)dt, vg = var_given != 0, rl = relu != 0;
	const cl_ulong cols = c * inner, in = inner, xo = x_off, lx = ldx, mo = mean_off, sto = stat_off,
	               go = gamma_off, bo = beta_off, yo = y_off, ly = ldy;
	return STARNN_CL_RUN_2D(ctx, "bn_apply", n, c * inner, STARNN_CL_ARG(d), STARNN_CL_ARG(cols), STARNN_CL_ARG(in),
	                        STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx), STARNN_CL_ARG(mean),
	                        STARNN_CL_ARG(mo), STARNN_CL_ARG(stat), STARNN_CL_ARG(sto), STARNN_CL_ARG(vg),
	                        STARNN_CL_ARG(eps), STARNN_CL_ARG(gamma), STARNN_CL_ARG(go), STARNN_CL_ARG(beta),
	                        STARNN_CL_ARG(bo), STARNN_CL_ARG(rl), STARNN_CL_ARG(y), STARNN_CL_ARG(yo),
	                        STARNN_CL_ARG(ly));
}

cl_int starnn_bn_bwd_reduce_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                                   cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem y,
                                   size_t y_off, size_t ldy, cl_mem mean, size_t mean_off, cl_mem sums,
                                   size_t sums_off, int accumulate)
{
	const cl_uint d = (cl_uint)dt, has_y = y != NULL, acc = accumulate != 0;
	const cl_mem ym = y ? y : dy; /* not read without y */
	const cl_ulong nn = n, cc = c, in = inner, xo = x_off, lx = ldx, dyo = dy_off, ldg = lddy, yo = y_off, ly = ldy,
	               mo = mean_off, so = sums_off;
	return STARNN_CL_RUN_2D(ctx, "bn_bwd_reduce", 1, c, STARNN_CL_ARG(d), STARNN_CL_ARG(nn), STARNN_CL_ARG(cc),
	                        STARNN_CL_ARG(in), STARNN_CL_ARG(x), STARNN_CL_ARG(xo), STARNN_CL_ARG(lx),
	                        STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(ldg), STARNN_CL_ARG(has_y),
	                        STARNN_CL_ARG(ym), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly), STARNN_CL_ARG(mean),
	                        STARNN_CL_ARG(mo), STARNN_CL_ARG(sums), STARNN_CL_ARG(so), STARNN_CL_ARG(acc));
}

cl_int starnn_bn_bwd_params_opencl(struct starnn_opencl_ctx *ctx, size_t c, size_t nslots, cl_mem slots,
                                   size_t slots_off, size_t lds, cl_mem invstd, size_t invstd_off, float beta,
                                   cl_mem dgamma, size_t dgamma_off, cl_mem dbeta, size_t dbeta_off)
{
	const cl_ulong cc = c, ns = nslots, so = slots_off, ls = lds, io = invstd_off, dgo = dgamma_off, dbo = dbeta_off;
	return STARNN_CL_RUN_2D(ctx, "bn_bwd_params", 1, c, STARNN_CL_ARG(cc), STARNN_CL_ARG(ns), STARNN_CL_ARG(slots),
	                        STARNN_CL_ARG(so), STARNN_CL_ARG(ls), STARNN_CL_ARG(invstd), STARNN_CL_ARG(io),
	                        STARNN_CL_ARG(beta), STARNN_CL_ARG(dgamma), STARNN_CL_ARG(dgo), STARNN_CL_ARG(dbeta),
	                        STARNN_CL_ARG(dbo));
}

cl_int starnn_bn_bwd_apply_opencl(struct starnn_opencl_ctx *ctx, starnn_dtype dt, size_t n, size_t c, size_t inner,
                                  cl_mem x, size_t x_off, size_t ldx, cl_mem dy, size_t dy_off, size_t lddy, cl_mem y,
                                  size_t y_off, size_t ldy, cl_mem mean, size_t mean_off, cl_mem invstd,
                                  size_t invstd_off, cl_mem gamma, size_t gamma_off, size_t nslots, cl_mem slots,
                                  size_t slots_off, size_t lds, double count, float beta, cl_mem dx, size_t dx_off,
                                  size_t lddx)
{
	const cl_uint d = (cl_uint)dt, has_y = y != NULL;
	const cl_mem ym = y ? y : dy; /* not read without y */
	const cl_ulong cols = c * inner, in = inner, cc = c, xo = x_off, lx = ldx, dyo = dy_off, ldg = lddy, yo = y_off,
	               ly = ldy, mo = mean_off, io = invstd_off, go = gamma_off, ns = nslots, so = slots_off, ls = lds,
	               dxo = dx_off, ldd = lddx;
	const cl_double cnt = count;
	return STARNN_CL_RUN_2D(ctx, "bn_bwd_apply", n, c * inner, STARNN_CL_ARG(d), STARNN_CL_ARG(cols),
	                        STARNN_CL_ARG(in), STARNN_CL_ARG(cc), STARNN_CL_ARG(x), STARNN_CL_ARG(xo),
	                        STARNN_CL_ARG(lx), STARNN_CL_ARG(dy), STARNN_CL_ARG(dyo), STARNN_CL_ARG(ldg),
	                        STARNN_CL_ARG(has_y), STARNN_CL_ARG(ym), STARNN_CL_ARG(yo), STARNN_CL_ARG(ly),
	                        STARNN_CL_ARG(mean), STARNN_CL_ARG(mo), STARNN_CL_ARG(invstd), STARNN_CL_ARG(io),
	                        STARNN_CL_ARG(gamma), STARNN_CL_ARG(go), STARNN_CL_ARG(ns), STARNN_CL_ARG(slots),
	                        STARNN_CL_ARG(so), STARNN_CL_ARG(ls), STARNN_CL_ARG(cnt), STARNN_CL_ARG(beta),
	                        STARNN_CL_ARG(dx), STARNN_CL_ARG(dxo), STARNN_CL_ARG(ldd));
}

cl_int starnn_bn_slot_add_opencl(struct starnn_opencl_ctx *ctx, size_t n, cl_mem slot, size_t slot_off, cl_mem total,
                                 size_t total_off)
{
	const cl_ulong nn = n, so = slot_off, to = total_off;
	return STARNN_CL_RUN_2D(ctx, "bn_slot_add", 1, n, STARNN_CL_ARG(nn), STARNN_CL_ARG(slot), STARNN_CL_ARG(so),
	                        STARNN_CL_ARG(total), STARNN_CL_ARG(to));
}
