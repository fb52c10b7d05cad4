/* OpenCL launchers of the SGD update (codelets/kernels/sgd.h; the kernels:
 * codelets/opencl/sgd.cl). keep = 1 - dampening is rounded here once, as
 * the CPU kernel does before its loops. */
#include "codelets/opencl/common.h"
#include "codelets/kernels/sgd.h"

cl_int starnn_sgd_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols, const struct starnn_sgd_step *s,
                         cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off, size_t ldg, cl_mem buf,
                         size_t b_off, size_t ldb)
{
	float lr = s->p.lr, mom = s->p.momentum, keep = 1.0f - s->p.dampening, wd = s->p.weight_decay;
	float gs = s->grad_scale;
	const cl_int first = s->first != 0, nesterov = s->p.nesterov != 0;
	const cl_ulong c = cols, wo = w_off, lw = ldw, go = g_off, lg = ldg, bo = b_off, lb = ldb;
	return STARNN_CL_RUN_2D(ctx, "sgd", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(lr), STARNN_CL_ARG(mom),
	                        STARNN_CL_ARG(keep), STARNN_CL_ARG(wd), STARNN_CL_ARG(gs), STARNN_CL_ARG(first),
	                        STARNN_CL_ARG(nesterov), STARNN_CL_ARG(w), STARNN_CL_ARG(wo), STARNN_CL_ARG(lw),
	                        STARNN_CL_ARG(grad), STARNN_CL_ARG(go), STARNN_CL_ARG(lg), STARNN_CL_ARG(buf),
	                        STARNN_CL_ARG(bo), STARNN_CL_ARG(lb));
}

cl_int starnn_sgd_amp_opencl(struct starnn_opencl_ctx *ctx, size_t rows, size_t cols,
                             const struct starnn_sgd_params *p, cl_mem state, size_t state_off, cl_mem flag,
                             size_t flag_off, cl_mem w, size_t w_off, size_t ldw, cl_mem grad, size_t g_off,
                             size_t ldg, cl_mem buf, size_t b_off, size_t ldb)
{
	float lr = p->lr, mom = p->momentum, keep = 1.0f - p->dampening, wd = p->weight_decay;
	const cl_int nesterov = p->nesterov != 0;
	const cl_ulong c = cols, so = state_off, fo = flag_off, wo = w_off, lw = ldw, go = g_off, lg = ldg, bo = b_off,
	               lb = ldb;
	return STARNN_CL_RUN_2D(ctx, "sgd_amp", rows, cols, STARNN_CL_ARG(c), STARNN_CL_ARG(lr), STARNN_CL_ARG(mom),
	                        STARNN_CL_ARG(keep), STARNN_CL_ARG(wd), STARNN_CL_ARG(nesterov), STARNN_CL_ARG(state),
	                        STARNN_CL_ARG(so), STARNN_CL_ARG(flag), STARNN_CL_ARG(fo), STARNN_CL_ARG(w),
	                        STARNN_CL_ARG(wo), STARNN_CL_ARG(lw), STARNN_CL_ARG(grad), STARNN_CL_ARG(go),
	                        STARNN_CL_ARG(lg), STARNN_CL_ARG(buf), STARNN_CL_ARG(bo), STARNN_CL_ARG(lb));
}
