/* CPU kernel of the Adam / AdamW update. Row by row (strided views); the
 * inner loop vectorises (sqrtf and division have vector forms), compiled
 * per instruction set (codelets/cpu/simd.h). */
#include <math.h>

#include "codelets/cpu/simd.h"
#include "codelets/kernels/adam.h"
#include "codelets/kernels/convert.h"

/* The bias corrections of step t, in double (the glue fills the args of
 * a task with it; the _amp kernels below, from the loss-scale state). */
void starnn_adam_step_init(struct starnn_adam_step *s, const struct starnn_adam_params *p, int64_t t,
                           float grad_scale)
{
	double bc1 = 1.0 - pow((double)p->beta1, (double)t), bc2 = 1.0 - pow((double)p->beta2, (double)t);
	s->p = *p;
	s->p.decoupled = p->decoupled != 0;
	s->grad_scale = grad_scale;
	s->step_size = (float)((double)p->lr / bc1);
	s->bc2_sqrt = (float)sqrt(bc2);
	s->decay = p->decoupled ? (float)(1.0 - (double)p->lr * (double)p->weight_decay) : 1.0f;
}

STARNN_SIMD_INLINE void adam_impl(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                                  const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv)
{
	const float b1 = s->p.beta1, b2 = s->p.beta2, eps = s->p.eps, gs = s->grad_scale;
	const float l2 = s->p.decoupled ? 0.0f : s->p.weight_decay, decay = s->decay;
	const float step_size = s->step_size, bc2_sqrt = s->bc2_sqrt;
	for (size_t r = 0; r < rows; r++) {
		float *restrict wr = w + r * ldw, *restrict mr = m + r * ldm, *restrict vr = v + r * ldv;
		const float *restrict gr = grad + r * ldg;
		for (size_t c = 0; c < cols; c++) {
			float wv = wr[c];
			float g = gs * gr[c] + l2 * wv;
			float mv = b1 * mr[c] + (1.0f - b1) * g;
			float vv = b2 * vr[c] + (1.0f - b2) * g * g;
			mr[c] = mv;
			vr[c] = vv;
			float denom = sqrtf(vv) / bc2_sqrt + eps;
			wr[c] = wv * decay - step_size * mv / denom;
		}
	}
}
STARNN_SIMD_CLONES(adam_impl,
                   (size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                    const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv),
                   (rows, cols, s, w, ldw, grad, ldg, m, ldm, v, ldv))

void starnn_adam_cpu(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                     const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv)
{
	STARNN_SIMD_CALL(adam_impl, (rows, cols, s, w, ldw, grad, ldg, m, ldm, v, ldv));
}

void starnn_adam_amp_cpu(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                         const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m, size_t ldm,
                         float *v, size_t ldv)
{
	if (flag[0] != 0.0f)
		return; /* an Inf/NaN gradient: skip the step */
	struct starnn_adam_step s;
	starnn_adam_step_init(&s, p, (int64_t)state[3] + 1, 1.0f / state[0]);
	starnn_adam_cpu(rows, cols, &s, w, ldw, grad, ldg, m, ldm, v, ldv);
}

/* Chunks of a row small enough that the updated w is still in L1 when it
 * is narrowed (8 KiB of fp32). */
#define CAST_CHUNK 2048

void starnn_adam_cast_cpu(size_t rows, size_t cols, const struct starnn_adam_step *s, float *w, size_t ldw,
                          const float *grad, size_t ldg, float *m, size_t ldm, float *v, size_t ldv, starnn_dtype hdt,
                          void *h, size_t ldh)
{
	const size_t hs = starnn_dtype_size(hdt);
	for (size_t r = 0; r < rows; r++)
		for (size_t c0 = 0; c0 < cols; c0 += CAST_CHUNK) {
			const size_t n = cols - c0 < CAST_CHUNK ? cols - c0 : CAST_CHUNK;
			float *wr = w + r * ldw + c0;
			starnn_adam_cpu(1, n, s, wr, n, grad + r * ldg + c0, n, m + r * ldm + c0, n, v + r * ldv + c0, n);
			starnn_narrow_row_cpu(hdt, n, wr, (char *)h + (r * ldh + c0) * hs);
		}
}

void starnn_adam_amp_cast_cpu(size_t rows, size_t cols, const struct starnn_adam_params *p, const float *state,
                              const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *m,
                              size_t ldm, float *v, size_t ldv, starnn_dtype hdt, void *h, size_t ldh)
{
	if (flag[0] != 0.0f)
		return; /* skipped: w unchanged, so h (made from it) is too */
	struct starnn_adam_step s;
	starnn_adam_step_init(&s, p, (int64_t)state[3] + 1, 1.0f / state[0]);
	starnn_adam_cast_cpu(rows, cols, &s, w, ldw, grad, ldg, m, ldm, v, ldv, hdt, h, ldh);
}
