/* OpenCL kernels of the Adam / AdamW update (codelets/kernels/adam.h): one
 * work-item per element, dimension 0 the columns, dimension 1 the rows
 * (the grid's columns are rounded up to 64: each kernel returns past
 * cols). w, grad, m, v (and h) are rows x cols from element off of their
 * buffers, rows ld apart. The CPU kernel's operations in its order
 * (codelets/cpu/adam.c), each rounded (FP_CONTRACT OFF; / and sqrt
 * correctly rounded by the build option), so the results are its bits.
 * The step's scalars come from the host (starnn_adam_step_init: the bias
 * corrections in double; the _amp launchers read the loss-scale state
 * first, codelets/opencl/adam.c). */
#pragma OPENCL FP_CONTRACT OFF

/* One element: updates m and v, returns the new w (stored by the caller). */
float adam_element(float b1, float b2, float eps, float gs, float l2, float decay, float step_size, float bc2_sqrt,
                   float wv, global const float *grad, global float *m, global float *v)
{
	const float g = gs * *grad + l2 * wv;
	const float mv = b1 * *m + (1.0f - b1) * g;
	const float vv = b2 * *v + (1.0f - b2) * g * g;
	*m = mv;
	*v = vv;
	const float denom = sqrt(vv) / bc2_sqrt + eps;
	return wv * decay - step_size * mv / denom;
}

#define ADAM_PARAMS                                                                                           \
	ulong cols, float b1, float b2, float eps, float gs, float l2, float decay, float step_size, float bc2_sqrt, \
		global float *w, ulong wo, ulong ldw, global const float *grad, ulong go, ulong ldg, global float *m,  \
		ulong mo, ulong ldm, global float *v, ulong vo, ulong ldv
#define ADAM_UPDATE(c, r)                                                                                     \
	(w[wo + r * ldw + c] = adam_element(b1, b2, eps, gs, l2, decay, step_size, bc2_sqrt, w[wo + r * ldw + c],  \
	                                    grad + go + r * ldg + c, m + mo + r * ldm + c, v + vo + r * ldv + c))

kernel void adam(ADAM_PARAMS)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		ADAM_UPDATE(c, r);
}

/* The same, and h = the new w rounded to fp16 / bf16 (common.cl: the CPU
 * conversion's bits). */
kernel void adam_cast_fp16(ADAM_PARAMS, global ushort *h, ulong ho, ulong ldh)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		h[ho + r * ldh + c] = starnn_float_to_half(ADAM_UPDATE(c, r));
}

kernel void adam_cast_bf16(ADAM_PARAMS, global ushort *h, ulong ho, ulong ldh)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	if (c < cols)
		h[ho + r * ldh + c] = starnn_float_to_bf16(ADAM_UPDATE(c, r));
}
