/* OpenCL kernels of batch normalisation (codelets/kernels/batchnorm.h),
 * NCHW data: the arithmetic of codelets/cpu/batchnorm.c in its order, so
 * that every result is the CPU kernels' bit for bit.
 *
 * Shapes: x, y, dy, dx are n rows of c channels of inner elements, from
 * element xo (...) of their buffer, rows ldx (...) apart; a per-channel
 * vector is c floats from element vo of its buffer; slots are doubles (a
 * slot: 2c sums), from double so of their buffer, lds doubles apart. The
 * data are of dtype dt (0 fp32, 1 fp16, 2 bf16: starnn_dtype's codes):
 * 16-bit values are widened exactly to fp32 (common.cl) and y / dx are
 * rounded once (nearest even), as the CPU's _mp kernels do, which are
 * bitwise the fp32 kernels on the widened data.
 *
 * Reductions (bn_stats, bn_bwd_reduce), one work-item per channel: the CPU
 * kernel's loops, in double, in its order: per sample, 16 lanes (lane l
 * adds the elements i = l mod 16 of the plane's whole groups of 16, in
 * order), then the plane's sum starts with its last (inner mod 16) values,
 * then adds the lanes in order; the channel's sum adds the samples' in
 * order; the slot gets it (added to its old value when accumulating). The
 * per-channel steps (bn_finalize, bn_bwd_params): one work-item per
 * channel, the slots added in order. The elementwise passes (bn_apply,
 * bn_bwd_apply): one work-item per element, each computing its channel's
 * coefficients as the CPU does once per channel (the same operations, so
 * the same values). Doubles need cl_khr_fp64 (POCL has it); their +, -, *,
 * / and sqrt are correctly rounded in OpenCL. */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define BN_LANES 16

/* Element i of data of dtype dt, as fp32 (exact). */
float bn_load(global const void *p, ulong i, uint dt)
{
	if (dt == 0)
		return ((global const float *)p)[i];
	const ushort h = ((global const ushort *)p)[i];
	return dt == 1 ? starnn_half_to_float(h) : starnn_bf16_to_float(h);
}

/* Element i of data of dtype dt = v (rounded once for the 16-bit ones). */
void bn_store(global void *p, ulong i, uint dt, float v)
{
	if (dt == 0)
		((global float *)p)[i] = v;
	else
		((global ushort *)p)[i] = dt == 1 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
}

/* Totals of channel k over nslots slots. */
void bn_slot_totals(global const double *slots, ulong so, ulong lds, ulong nslots, ulong c, ulong k, double *s1,
                    double *s2)
{
	double a = 0, b = 0;
	for (ulong j = 0; j < nslots; j++) {
		a += slots[so + j * lds + k];
		b += slots[so + j * lds + c + k];
	}
	*s1 = a;
	*s2 = b;
}

/* sums[k] (+)= sum of x, sums[c + k] (+)= sum of x^2 over channel k. */
kernel void bn_stats(uint dt, ulong n, ulong c, ulong inner, global const void *x, ulong xo, ulong ldx,
                     global double *sums, ulong so, uint accumulate)
{
	const ulong k = get_global_id(0);
	if (k >= c)
		return;
	const ulong whole = inner / BN_LANES * BN_LANES;
	double s0 = 0, s1 = 0;
	for (ulong r = 0; r < n; r++) {
		const ulong p = xo + r * ldx + k * inner;
		double a[BN_LANES], b[BN_LANES];
		for (int l = 0; l < BN_LANES; l++)
			a[l] = 0, b[l] = 0;
		for (ulong i = 0; i < whole; i += BN_LANES)
			for (int l = 0; l < BN_LANES; l++) {
				const double t = bn_load(x, p + i + l, dt);
				a[l] += t;
				b[l] += t * t;
			}
		double sa = 0, sb = 0;
		for (ulong i = whole; i < inner; i++) {
			const double t = bn_load(x, p + i, dt);
			sa += t;
			sb += t * t;
		}
		for (int l = 0; l < BN_LANES; l++)
			sa += a[l], sb += b[l];
		s0 += sa;
		s1 += sb;
	}
	sums[so + k] = (accumulate ? sums[so + k] : 0.0) + s0;
	sums[so + c + k] = (accumulate ? sums[so + c + k] : 0.0) + s1;
}

/* mean, invstd (and the running statistics) of channel k from the slots'
 * totals over count values. */
kernel void bn_finalize(ulong c, ulong nslots, global const double *slots, ulong so, ulong lds, double count,
                        float eps, float momentum, uint update_running, global float *mean, ulong mo,
                        global float *invstd, ulong io, global float *running_mean, ulong rmo,
                        global float *running_var, ulong rvo)
{
	const ulong k = get_global_id(0);
	if (k >= c)
		return;
	double s1, s2;
	bn_slot_totals(slots, so, lds, nslots, c, k, &s1, &s2);
	const double m = s1 / count;
	double var = s2 / count - m * m;
	if (var < 0)
		var = 0;
	mean[mo + k] = (float)m;
	invstd[io + k] = (float)(1.0 / sqrt(var + (double)eps));
	if (update_running) {
		const double unbiased = count > 1 ? var * count / (count - 1) : var;
		running_mean[rmo + k] = (float)((1.0 - momentum) * running_mean[rmo + k] + (double)momentum * m);
		running_var[rvo + k] = (float)((1.0 - momentum) * running_var[rvo + k] + (double)momentum * unbiased);
	}
}

/* y = (x - mean) * s + beta, s = gamma * invstd rounded to fp32 (invstd =
 * 1 / sqrt(var + eps) in double when var_given); then max(., 0) when relu
 * (NaN and -0 kept, as the CPU's v < 0 ? 0 : v). One work-item per
 * element of the n x (c inner) grid. */
kernel void bn_apply(uint dt, ulong cols, ulong inner, global const void *x, ulong xo, ulong ldx,
                     global const float *mean, ulong mo, global const float *stat, ulong sto, uint var_given,
                     float eps, global const float *gamma, ulong go, global const float *beta, ulong bo, uint relu,
                     global void *y, ulong yo, ulong ldy)
{
	const ulong col = get_global_id(0), r = get_global_id(1);
	if (col >= cols)
		return;
	const ulong k = col / inner;
	const double istd = var_given ? 1.0 / sqrt((double)stat[sto + k] + eps) : (double)stat[sto + k];
	const float m = mean[mo + k], s = (float)(gamma[go + k] * istd), b = beta[bo + k];
	float v = (bn_load(x, xo + r * ldx + col, dt) - m) * s + b;
	if (relu)
		v = v < 0 ? 0 : v;
	bn_store(y, yo + r * ldy + col, dt, v);
}

/* g = dy, or dy where y > 0 and +0 elsewhere (has_y: the fused ReLU):
 * sums[k] (+)= sum g, sums[c + k] (+)= sum g * ((double)x - mean). */
kernel void bn_bwd_reduce(uint dt, ulong n, ulong c, ulong inner, global const void *x, ulong xo, ulong ldx,
                          global const void *dy, ulong dyo, ulong lddy, uint has_y, global const void *y, ulong yo,
                          ulong ldy, global const float *mean, ulong mo, global double *sums, ulong so,
                          uint accumulate)
{
	const ulong k = get_global_id(0);
	if (k >= c)
		return;
	const ulong whole = inner / BN_LANES * BN_LANES;
	const double m = mean[mo + k];
	double s0 = 0, s1 = 0;
	for (ulong r = 0; r < n; r++) {
		const ulong px = xo + r * ldx + k * inner, pg = dyo + r * lddy + k * inner, py = yo + r * ldy + k * inner;
		double a[BN_LANES], b[BN_LANES];
		for (int l = 0; l < BN_LANES; l++)
			a[l] = 0, b[l] = 0;
		for (ulong i = 0; i < whole; i += BN_LANES)
			for (int l = 0; l < BN_LANES; l++) {
				double g = bn_load(dy, pg + i + l, dt);
				if (has_y && !(bn_load(y, py + i + l, dt) > 0))
					g = 0.0;
				a[l] += g;
				b[l] += g * ((double)bn_load(x, px + i + l, dt) - m);
			}
		double sa = 0, sb = 0;
		for (ulong i = whole; i < inner; i++) {
			double g = bn_load(dy, pg + i, dt);
			if (has_y && !(bn_load(y, py + i, dt) > 0))
				g = 0.0;
			sa += g;
			sb += g * ((double)bn_load(x, px + i, dt) - m);
		}
		for (int l = 0; l < BN_LANES; l++)
			sa += a[l], sb += b[l];
		s0 += sa;
		s1 += sb;
	}
	sums[so + k] = (accumulate ? sums[so + k] : 0.0) + s0;
	sums[so + c + k] = (accumulate ? sums[so + c + k] : 0.0) + s1;
}

/* dgamma = invstd * sum(g (x - mean)) (+ beta * dgamma), dbeta = sum g
 * (+ beta * dbeta), the sums over the slots; beta 0: the old values are
 * not read. */
kernel void bn_bwd_params(ulong c, ulong nslots, global const double *slots, ulong so, ulong lds,
                          global const float *invstd, ulong io, float beta, global float *dgamma, ulong dgo,
                          global float *dbeta, ulong dbo)
{
	const ulong k = get_global_id(0);
	if (k >= c)
		return;
	double s1, s2;
	bn_slot_totals(slots, so, lds, nslots, c, k, &s1, &s2);
	const float dg = (float)(invstd[io + k] * s2), db = (float)s1;
	dgamma[dgo + k] = beta == 0 ? dg : dg + beta * dgamma[dgo + k];
	dbeta[dbo + k] = beta == 0 ? db : db + beta * dbeta[dbo + k];
}

/* dx = a g + kk - d (x - mean) (+ beta * dx), a = gamma invstd, kk =
 * -a sum(g) / count, d = a invstd^2 sum(g (x - mean)) / count (in double,
 * each rounded to fp32 once), g = dy or dy masked by y > 0 (has_y). One
 * work-item per element. */
kernel void bn_bwd_apply(uint dt, ulong cols, ulong inner, ulong c, global const void *x, ulong xo, ulong ldx,
                         global const void *dy, ulong dyo, ulong lddy, uint has_y, global const void *y, ulong yo,
                         ulong ldy, global const float *mean, ulong mo, global const float *invstd, ulong io,
                         global const float *gamma, ulong go, ulong nslots, global const double *slots, ulong so,
                         ulong lds, double count, float beta, global void *dx, ulong dxo, ulong lddx)
{
	const ulong col = get_global_id(0), r = get_global_id(1);
	if (col >= cols)
		return;
	const ulong k = col / inner;
	double s1, s2;
	bn_slot_totals(slots, so, lds, nslots, c, k, &s1, &s2);
	const double istd = invstd[io + k], ad = gamma[go + k] * istd;
	const float a = (float)ad, kk = (float)(-ad * s1 / count), d = (float)(ad * istd * istd * s2 / count);
	const float m = mean[mo + k];
	float g = bn_load(dy, dyo + r * lddy + col, dt);
	if (has_y && !(bn_load(y, yo + r * ldy + col, dt) > 0))
		g = 0.0f;
	float v = a * g + kk - d * (bn_load(x, xo + r * ldx + col, dt) - m);
	const ulong o = dxo + r * lddx + col;
	if (beta != 0)
		v = v + beta * bn_load(dx, o, dt);
	bn_store(dx, o, dt, v);
}

/* total[i] += slot[i], i < n (doubles). */
kernel void bn_slot_add(ulong n, global const double *slot, ulong so, global double *total, ulong to)
{
	const ulong i = get_global_id(0);
	if (i < n)
		total[to + i] += slot[so + i];
}
