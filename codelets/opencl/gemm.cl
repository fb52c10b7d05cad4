/* OpenCL kernels of gemm (codelets/kernels/gemm.h) beside CLBlast, which
 * computes the fp32 products (codelets/opencl/gemm.c): what CLBlast does
 * not do. Row-major operands, each from its own offset with its own
 * leading dimension (elements); one work-item per element of C (dimension
 * 0 its column j, dimension 1 its row i).
 *
 * gemm_beta: C = beta C, C = 0 for beta == 0 (not read: BLAS semantics),
 * the product of an empty sum (k == 0), which CLBlast refuses.
 *
 * gemm_half_*: the mixed-precision products, A and B fp16 or bf16 (ab: 0
 * fp16, 1 bf16), each element widened exactly (common.cl) and the k
 * products summed in fp32, in order of p, without contraction; then
 * alpha times the sum, plus beta times the old C unless beta == 0 (C not
 * read). C fp32 (gemm_half_f32), or of A's dtype, rounded once
 * (gemm_half_16). The CPU sums in OpenBLAS's order, so results agree
 * within the rounding bound of each sum, not bit for bit. */
#pragma OPENCL FP_CONTRACT OFF

kernel void gemm_beta(ulong n, float beta, global float *c, ulong co, ulong ldc)
{
	const ulong j = get_global_id(0), i = get_global_id(1);
	if (j < n)
		c[co + i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[co + i * ldc + j];
}

float gemm_widen(ushort v, uint ab)
{
	return ab ? starnn_bf16_to_float(v) : starnn_half_to_float(v);
}

/* alpha op(A)[i, :] op(B)[:, j], the sum in fp32 */
float gemm_half_dot(ulong i, ulong j, ulong k, uint ab, uint ta, uint tb, float alpha, global const ushort *a,
                    ulong ao, ulong lda, global const ushort *b, ulong bo, ulong ldb)
{
	float s = 0.0f;
	for (ulong p = 0; p < k; p++) {
		const float x = gemm_widen(a[ao + (ta ? p * lda + i : i * lda + p)], ab);
		const float y = gemm_widen(b[bo + (tb ? j * ldb + p : p * ldb + j)], ab);
		s += x * y;
	}
	return alpha * s;
}

kernel void gemm_half_f32(ulong n, ulong k, uint ab, uint ta, uint tb, float alpha, global const ushort *a, ulong ao,
                          ulong lda, global const ushort *b, ulong bo, ulong ldb, float beta, global float *c,
                          ulong co, ulong ldc)
{
	const ulong j = get_global_id(0), i = get_global_id(1);
	if (j < n) {
		const float s = gemm_half_dot(i, j, k, ab, ta, tb, alpha, a, ao, lda, b, bo, ldb);
		c[co + i * ldc + j] = beta == 0.0f ? s : s + beta * c[co + i * ldc + j];
	}
}

kernel void gemm_half_16(ulong n, ulong k, uint ab, uint ta, uint tb, float alpha, global const ushort *a, ulong ao,
                         ulong lda, global const ushort *b, ulong bo, ulong ldb, float beta, global ushort *c,
                         ulong co, ulong ldc)
{
	const ulong j = get_global_id(0), i = get_global_id(1);
	if (j < n) {
		float s = gemm_half_dot(i, j, k, ab, ta, tb, alpha, a, ao, lda, b, bo, ldb);
		if (beta != 0.0f)
			s = s + beta * gemm_widen(c[co + i * ldc + j], ab);
		c[co + i * ldc + j] = ab ? starnn_float_to_bf16(s) : starnn_float_to_half(s);
	}
}
