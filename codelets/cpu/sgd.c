/* CPU kernel of the SGD update. Row by row (strided views). The variants
 * (no momentum / first step / momentum / Nesterov) are separate loops over
 * restrict pointers so that each one vectorises; compiled per instruction
 * set (codelets/cpu/simd.h). */
#include "codelets/cpu/simd.h"
#include "codelets/kernels/sgd.h"

/* One row; the int flags are constants in each call below. */
STARNN_SIMD_INLINE void sgd_row(size_t n, float lr, float mom, float keep, float wd, float gs, int momentum, int first,
                           int nesterov, float *restrict w, const float *restrict grad, float *restrict buf)
{
	for (size_t c = 0; c < n; c++) {
		float g = gs * grad[c] + wd * w[c];
		float d = g;
		if (momentum) {
			float b = first ? g : mom * buf[c] + keep * g;
			buf[c] = b;
			d = nesterov ? g + mom * b : b;
		}
		w[c] -= lr * d;
	}
}

STARNN_SIMD_INLINE void sgd_impl(size_t rows, size_t cols, const struct starnn_sgd_step *s, float *w, size_t ldw,
                                 const float *grad, size_t ldg, float *buf, size_t ldb)
{
	const float lr = s->p.lr, mom = s->p.momentum, keep = 1.0f - s->p.dampening, wd = s->p.weight_decay;
	const float gs = s->grad_scale;
	const int nesterov = s->p.nesterov != 0, first = s->first != 0;
	for (size_t r = 0; r < rows; r++) {
		float *wr = w + r * ldw, *br = buf + r * ldb;
		const float *gr = grad + r * ldg;
		if (mom == 0.0f)
			sgd_row(cols, lr, mom, keep, wd, gs, 0, 0, 0, wr, gr, br);
		else if (first && nesterov)
			sgd_row(cols, lr, mom, keep, wd, gs, 1, 1, 1, wr, gr, br);
		else if (first)
			sgd_row(cols, lr, mom, keep, wd, gs, 1, 1, 0, wr, gr, br);
		else if (nesterov)
			sgd_row(cols, lr, mom, keep, wd, gs, 1, 0, 1, wr, gr, br);
		else
			sgd_row(cols, lr, mom, keep, wd, gs, 1, 0, 0, wr, gr, br);
	}
}
STARNN_SIMD_CLONES(sgd_impl,
                   (size_t rows, size_t cols, const struct starnn_sgd_step *s, float *w, size_t ldw,
                    const float *grad, size_t ldg, float *buf, size_t ldb),
                   (rows, cols, s, w, ldw, grad, ldg, buf, ldb))

void starnn_sgd_cpu(size_t rows, size_t cols, const struct starnn_sgd_step *s, float *w, size_t ldw,
                    const float *grad, size_t ldg, float *buf, size_t ldb)
{
	STARNN_SIMD_CALL(sgd_impl, (rows, cols, s, w, ldw, grad, ldg, buf, ldb));
}

void starnn_sgd_amp_cpu(size_t rows, size_t cols, const struct starnn_sgd_params *p, const float *state,
                        const float *flag, float *w, size_t ldw, const float *grad, size_t ldg, float *buf,
                        size_t ldb)
{
	if (flag[0] != 0.0f)
		return; /* an Inf/NaN gradient: skip the step */
	struct starnn_sgd_step s = {*p, 1.0f / state[0], state[3] == 0.0f};
	starnn_sgd_cpu(rows, cols, &s, w, ldw, grad, ldg, buf, ldb);
}
