/* OpenCL kernels of the SGD update (codelets/kernels/sgd.h): one work-item
 * per element, dimension 0 the columns, dimension 1 the rows (the grid's
 * columns are rounded up to 64: each kernel returns past cols). w, grad,
 * buf are rows x cols from element off of their buffers, rows ld apart.
 * The CPU kernel's operations in its order (codelets/cpu/sgd.c), each
 * rounded (FP_CONTRACT OFF), so the results are its bits; with momentum 0,
 * buf is neither read nor written. */
#pragma OPENCL FP_CONTRACT OFF

/* One element: keep = 1 - dampening (computed once, as on the CPU). */
void sgd_element(float lr, float mom, float keep, float wd, float gs, int first, int nesterov, global float *w,
                 global const float *grad, global float *buf)
{
	const float g = gs * *grad + wd * *w;
	float d = g;
	if (mom != 0.0f) {
		const float b = first ? g : mom * *buf + keep * g;
		*buf = b;
		d = nesterov ? g + mom * b : b;
	}
	*w -= lr * d;
}

kernel void sgd(ulong cols, float lr, float mom, float keep, float wd, float gs, int first, int nesterov,
                global float *w, ulong wo, ulong ldw, global const float *grad, ulong go, ulong ldg, global float *buf,
                ulong bo, ulong ldb)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		sgd_element(lr, mom, keep, wd, gs, first, nesterov, w + wo + r * ldw + c, grad + go + r * ldg + c,
		            buf + bo + r * ldb + c);
}

/* The step read from the loss-scale state (codelets/kernels/amp.h): every
 * work-item returns when the overflow flag is set, else grad_scale = 1 /
 * state[0] (correctly rounded: the build option) and first = state[3] == 0. */
kernel void sgd_amp(ulong cols, float lr, float mom, float keep, float wd, int nesterov, global const float *state,
                    ulong so, global const float *flag, ulong fo, global float *w, ulong wo, ulong ldw,
                    global const float *grad, ulong go, ulong ldg, global float *buf, ulong bo, ulong ldb)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c >= cols || flag[fo] != 0.0f)
		return;
	const float gs = 1.0f / state[so];
	const int first = state[so + 3] == 0.0f;
	sgd_element(lr, mom, keep, wd, gs, first, nesterov, w + wo + r * ldw + c, grad + go + r * ldg + c,
	            buf + bo + r * ldb + c);
}
