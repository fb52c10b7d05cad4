/* amp: the Inf/NaN test (kernel against a naive loop for fp32 / fp16 / bf16,
 * strided rows whose padding holds Inf that must not count; the codelet
 * ORs into the flag), the loss-scale state machine (backoff, growth after
 * the interval, bounds, static scale, counters) against a host model, one
 * whole scaled step as a task graph (fill flag, nonfinite, adam_amp,
 * scale_update) with and without an injected Inf, and bad arguments; the
 * codelets (CPU, CUDA or OpenCL) against the CPU kernels on host copies:
 * the flag on Inf / NaN patterns of every payload (signalling NaNs too)
 * and the largest finite and subnormal ones, the state bit for bit.
 * Everything here is exact (bit patterns, powers of two). */
#include "codelets/adam.h"
#include "codelets/amp.h"
#include "codelets/fill.h"
#include "codelets/kernels/amp.h"
#include "runtime/base/half.h"
#include "tests/testlib.h"

static uint16_t to16(starnn_dtype dt, float v)
{
	return dt == STARNN_FP16 ? starnn_float_to_half(v) : starnn_float_to_bf16(v);
}

/* A rows x ld buffer of dtype dt with finite values; padding columns get
 * Inf when pad_inf. */
static void *make(starnn_dtype dt, size_t rows, size_t cols, size_t ld, int pad_inf)
{
	size_t es = starnn_dtype_size(dt);
	char *p = malloc(rows * ld * es);
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < ld; c++) {
			float v = c < cols ? test_uniform(-60000, 60000) : pad_inf ? INFINITY : 1.0f;
			if (dt == STARNN_FP32)
				memcpy(p + (r * ld + c) * es, &v, 4);
			else {
				uint16_t h = to16(dt, v);
				memcpy(p + (r * ld + c) * es, &h, 2);
			}
		}
	return p;
}

static void put(starnn_dtype dt, void *p, size_t i, float v)
{
	if (dt == STARNN_FP32)
		((float *)p)[i] = v;
	else
		((uint16_t *)p)[i] = to16(dt, v);
}

static void kernel_vs_naive(starnn_dtype dt)
{
	size_t rows = 5, cols = 37, ld = 41;
	const char *n = starnn_dtype_name(dt);
	void *x = make(dt, rows, cols, ld, 1);
	TEST_ASSERT(starnn_amp_nonfinite_cpu(dt, rows, cols, x, ld) == 0, "%s: finite data (Inf only in padding) flagged", n);
	float bad[4] = {INFINITY, -INFINITY, NAN, -NAN};
	for (int b = 0; b < 4; b++) {
		size_t i = (size_t)(b + 1) * ld + (size_t)(7 * b + 3);
		put(dt, x, i, bad[b]);
		TEST_ASSERT(starnn_amp_nonfinite_cpu(dt, rows, cols, x, ld) == 1, "%s: %g at [%zu] not found", n,
		            (double)bad[b], i);
		put(dt, x, i, 0.5f);
	}
	/* The largest finite values are finite; fp16 overflow of 70000 is Inf. */
	put(dt, x, 0, dt == STARNN_FP16 ? 65504.0f : 3.0e38f);
	TEST_ASSERT(starnn_amp_nonfinite_cpu(dt, rows, cols, x, ld) == 0, "%s: the largest finite value flagged", n);
	if (dt == STARNN_FP16) {
		put(dt, x, 0, 70000.0f);
		TEST_ASSERT(starnn_amp_nonfinite_cpu(dt, rows, cols, x, ld) == 1, "fp16: 70000 (Inf in fp16) not found");
	}
	free(x);
}

static float read1(starnn_tensor *t)
{
	float v;
	TEST_OK(starnn_tensor_read(t, &v));
	return v;
}

static void codelet_nonfinite(starnn_dtype dt)
{
	const char *n = starnn_dtype_name(dt);
	int64_t shape[4] = {4, 3, 5, 7}, one = 1;
	size_t numel = 4 * 3 * 5 * 7;
	float *v = test_random(numel, -100, 100);
	starnn_tensor *x, *flag;
	TEST_OK(starnn_tensor_create(&x, "x", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	TEST_OK(starnn_tensor_write_f32(x, v));
	TEST_OK(starnn_fill(0.0f, flag));
	TEST_OK(starnn_amp_nonfinite(x, flag));
	TEST_ASSERT(read1(flag) == 0.0f, "%s codelet: finite tensor flagged", n);
	/* Channel views: Inf in channel 0 only; the view of channels 1.. is clean. */
	int64_t sizes[2] = {1, 2};
	starnn_tensor **parts;
	v[105 + 2] = INFINITY; /* sample 1, channel 0 */
	TEST_OK(starnn_tensor_write_f32(x, v));
	TEST_OK(starnn_tensor_split(x, 1, 2, sizes, &parts));
	TEST_OK(starnn_amp_nonfinite(parts[1], flag));
	TEST_ASSERT(read1(flag) == 0.0f, "%s codelet: Inf outside the channel view flagged", n);
	TEST_OK(starnn_amp_nonfinite(parts[0], flag));
	TEST_ASSERT(read1(flag) == 1.0f, "%s codelet: Inf in the channel view not flagged", n);
	TEST_OK(starnn_amp_nonfinite(parts[1], flag)); /* accumulates: stays set */
	TEST_ASSERT(read1(flag) == 1.0f, "%s codelet: a clean tensor cleared the flag", n);
	v[105 + 2] = NAN;
	TEST_OK(starnn_tensor_write_f32(x, v));
	TEST_OK(starnn_fill(0.0f, flag));
	TEST_OK(starnn_amp_nonfinite(x, flag));
	TEST_ASSERT(read1(flag) == 1.0f, "%s codelet: NaN not flagged", n);
	starnn_tensor_destroy(x), starnn_tensor_destroy(flag);
	free(v);
}

/* The nonfinite codelet on one pattern (bits of dtype dt) put at element
 * 1234 of a finite tensor, read through a channel view (ld > cols) that
 * holds it: the flag as the CPU kernel finds it on the same data. */
static void codelet_patterns(starnn_dtype dt)
{
	static const uint32_t p32[] = {0x7f800000u, 0xff800000u, 0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu,
	                               0x7f7fffffu, 0xff7fffffu, 0x00000001u, 0x80000000u, 0x3f800000u};
	static const uint16_t p16[] = {0x7c00u, 0xfc00u, 0x7c01u, 0xfc01u, 0x7e00u, 0x7fffu, 0x7bffu, 0xfbffu, 0x0001u,
	                               0x8000u, 0x3c00u};
	static const uint16_t pbf[] = {0x7f80u, 0xff80u, 0x7f81u, 0xff81u, 0x7fc0u, 0x7fffu, 0x7f7fu, 0xff7fu, 0x0001u,
	                               0x8000u, 0x3f80u};
	const char *n = starnn_dtype_name(dt);
	const size_t es = starnn_dtype_size(dt), np = sizeof p32 / sizeof *p32;
	int64_t shape[4] = {3, 2, 10, 50}, one = 1, sizes[2] = {1, 1};
	char *x = make(dt, 3, 1000, 1000, 0);
	starnn_tensor *tx, *flag, **parts;
	TEST_OK(starnn_tensor_create(&tx, "x", dt, 4, shape));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	TEST_OK(starnn_tensor_split(tx, 1, 2, sizes, &parts));
	for (size_t k = 0; k < np; k++) {
		uint32_t b = dt == STARNN_FP32 ? p32[k] : dt == STARNN_FP16 ? p16[k] : pbf[k];
		uint16_t h = (uint16_t)b;
		memcpy(x + 1234 * es, es == 4 ? (const void *)&b : (const void *)&h, es); /* sample 1, channel 0 */
		TEST_OK(starnn_tensor_write(tx, x));
		TEST_OK(starnn_fill(0.0f, flag));
		TEST_OK(starnn_amp_nonfinite(parts[0], flag));
		float want = starnn_amp_nonfinite_cpu(dt, 3, 500, x, 1000) ? 1.0f : 0.0f, got = read1(flag);
		TEST_ASSERT(memcmp(&got, &want, 4) == 0, "%s codelet on the pattern %0*x: flag %g, the CPU kernel's %g", n,
		            (int)(2 * es), b, (double)got, (double)want);
	}
	starnn_tensor_destroy(tx), starnn_tensor_destroy(flag);
	free(x);
}

/* Host model of the state machine. */
static void model_update(const struct starnn_amp_policy *p, float *s, int overflow)
{
	if (overflow) {
		if (p->dynamic)
			s[0] = fmaxf(s[0] * p->backoff, p->min_scale);
		s[1] = 0, s[2] += 1;
	} else {
		s[3] += 1, s[1] += 1;
		if (p->dynamic && s[1] >= (float)p->growth_interval)
			s[0] = fminf(s[0] * p->growth, p->max_scale), s[1] = 0;
	}
}

static void scale_update(int dynamic)
{
	struct starnn_amp_policy p;
	starnn_amp_policy_default(&p);
	p.dynamic = dynamic;
	p.growth_interval = 3;
	p.max_scale = 8.0f;
	p.min_scale = 0.5f;
	starnn_tensor *state, *flag;
	int64_t four = 4, one = 1;
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	TEST_OK(starnn_amp_state_init(state, 2.0f));
	float model[4] = {2.0f, 0, 0, 0}, cpu[4] = {2.0f, 0, 0, 0}; /* cpu: the CPU kernel on a host copy */
	/* clean x7 (grows 2 -> 4 -> 8 and stays at the 8 ceiling), overflow x5
	 * (8 -> 4 -> 2 -> 1 -> 0.5 -> stays at the 0.5 floor), clean x2,
	 * overflow x2 (reset the counter), clean x4 (grows once). */
	const char *pattern = "00000001111100110000";
	for (const char *c = pattern; *c; c++) {
		int of = *c == '1';
		TEST_OK(starnn_fill(of ? 1.0f : 0.0f, flag));
		TEST_OK(starnn_amp_scale_update(state, flag, &p));
		model_update(&p, model, of);
		const float fl = of ? 1.0f : 0.0f;
		starnn_amp_scale_update_cpu(&p, cpu, &fl);
		float got[4];
		TEST_OK(starnn_tensor_read(state, got));
		char what[96];
		snprintf(what, sizeof what, "scale_update (dynamic %d) after step %d: the CPU kernel's bits", dynamic,
		         (int)(c - pattern) + 1);
		test_same_bits(what, got, cpu, 4, 4);
		TEST_ASSERT(memcmp(got, model, sizeof got) == 0,
		            "scale_update (dynamic %d) after step %d: state [%g %g %g %g], expected [%g %g %g %g]",
		            dynamic, (int)(c - pattern) + 1, got[0], got[1], got[2], got[3], model[0], model[1],
		            model[2], model[3]);
	}
	struct starnn_amp_state st;
	TEST_OK(starnn_amp_state_read(state, &st));
	TEST_ASSERT(st.skipped_steps == 7 && st.applied_steps == 13, "counters: %lld skipped, %lld applied",
	            (long long)st.skipped_steps, (long long)st.applied_steps);
	TEST_ASSERT(dynamic || st.scale == 2.0f, "a static scale changed to %g", st.scale);
	starnn_tensor_destroy(state), starnn_tensor_destroy(flag);
}

/* The default policy: 2^16, x2 after 2000 clean steps, bounds [1, 2^24]. */
static void default_policy(void)
{
	struct starnn_amp_policy p;
	starnn_amp_policy_default(&p);
	TEST_ASSERT(p.dynamic && p.growth_interval == 2000 && p.growth == 2.0f && p.backoff == 0.5f &&
	                    p.min_scale == 1.0f && p.max_scale == 16777216.0f && STARNN_AMP_INIT_SCALE == 65536.0f,
	            "default policy differs from the documented one");
	float s[4] = {65536.0f, 0, 0, 0};
	for (int i = 0; i < 1999; i++)
		starnn_amp_scale_update_cpu(&p, s, (float[]){0.0f});
	TEST_ASSERT(s[0] == 65536.0f && s[1] == 1999.0f, "grew before 2000 clean steps: scale %g", s[0]);
	starnn_amp_scale_update_cpu(&p, s, (float[]){0.0f});
	TEST_ASSERT(s[0] == 131072.0f && s[1] == 0.0f && s[3] == 2000.0f, "no growth after 2000 clean steps: %g", s[0]);
	s[0] = 16777216.0f, s[1] = 1999.0f;
	starnn_amp_scale_update_cpu(&p, s, (float[]){0.0f});
	TEST_ASSERT(s[0] == 16777216.0f, "scale above 2^24: %g", s[0]);
	s[0] = 1.0f;
	starnn_amp_scale_update_cpu(&p, s, (float[]){1.0f});
	TEST_ASSERT(s[0] == 1.0f, "scale below 1: %g", s[0]);
}

/* One scaled training step as a task graph: the loss gradient was scaled by
 * state[0] (here: grad = S * g0), Adam unscales; with an Inf in the
 * gradient, w, m, v stay bit for bit and the scale halves. */
static void scaled_step(void)
{
	int64_t shape[2] = {6, 10}, four = 4, one = 1;
	size_t n = 60;
	float *w0 = test_random(n, -1, 1), *g0 = test_random(n, -1e-3f, 1e-3f), *gs = malloc(n * sizeof *gs);
	starnn_tensor *w = test_tensor("w", 2, shape, w0), *g = test_tensor("g", 2, shape, NULL);
	starnn_tensor *m = test_tensor("m", 2, shape, NULL), *v = test_tensor("v", 2, shape, NULL);
	starnn_tensor *wr = test_tensor("wr", 2, shape, w0), *gr = test_tensor("gr", 2, shape, g0);
	starnn_tensor *mr = test_tensor("mr", 2, shape, NULL), *vr = test_tensor("vr", 2, shape, NULL);
	starnn_tensor *state, *flag;
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	TEST_OK(starnn_amp_state_init(state, 65536.0f));
	struct starnn_amp_policy pol;
	starnn_amp_policy_default(&pol);
	struct starnn_adam_params ap = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
	for (int step = 1; step <= 3; step++) {
		float S = step == 3 ? 32768.0f : 65536.0f; /* step 2 overflows, halving the scale */
		for (size_t i = 0; i < n; i++)
			gs[i] = g0[i] * S;
		if (step == 2)
			gs[17] = INFINITY;
		TEST_OK(starnn_tensor_write(g, gs));
		TEST_OK(starnn_fill(0.0f, flag));
		TEST_OK(starnn_amp_nonfinite(g, flag));
		TEST_OK(starnn_adam_amp(w, g, m, v, &ap, state, flag));
		TEST_OK(starnn_amp_scale_update(state, flag, &pol));
		if (step != 2) /* the reference skips step 2 and counts t = 1, 2 */
			TEST_OK(starnn_adam(wr, gr, mr, vr, &ap, step == 1 ? 1 : 2, 1.0f));
		float *a = test_read(w), *b = test_read(wr), *ma = test_read(m), *mb = test_read(mr);
		TEST_ASSERT(memcmp(a, b, n * sizeof *a) == 0 && memcmp(ma, mb, n * sizeof *a) == 0,
		            "scaled step %d: weights or moments differ from the unscaled reference", step);
		free(a), free(b), free(ma), free(mb);
	}
	struct starnn_amp_state st;
	TEST_OK(starnn_amp_state_read(state, &st));
	TEST_ASSERT(st.scale == 32768.0f && st.skipped_steps == 1 && st.applied_steps == 2 && st.good_steps == 1,
	            "state after clean, overflow, clean: scale %g, skipped %lld, applied %lld, good %lld", st.scale,
	            (long long)st.skipped_steps, (long long)st.applied_steps, (long long)st.good_steps);
	starnn_tensor *all[] = {w, g, m, v, wr, gr, mr, vr, state, flag};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		starnn_tensor_destroy(all[i]);
	free(w0), free(g0), free(gs);
}

static void bad_arguments(void)
{
	starnn_tensor *x, *flag, *f2, *state, *s3;
	int64_t one = 1, two = 2, four = 4;
	TEST_OK(starnn_tensor_new(&x, "x", STARNN_FP32, 2, 3, 4));
	TEST_OK(starnn_tensor_create(&flag, "flag", STARNN_FP32, 1, &one));
	TEST_OK(starnn_tensor_create(&f2, "f2", STARNN_FP32, 1, &two));
	TEST_OK(starnn_tensor_create(&state, "state", STARNN_FP32, 1, &four));
	TEST_OK(starnn_tensor_new(&s3, "s3", STARNN_FP16, 1, (int64_t)4));
	struct starnn_amp_policy p;
	starnn_amp_policy_default(&p);
	TEST_ASSERT(starnn_amp_nonfinite(x, f2) == STARNN_EINVAL, "nonfinite with a 2-element flag must fail");
	TEST_ASSERT(starnn_amp_nonfinite(NULL, flag) == STARNN_EINVAL, "nonfinite of NULL must fail");
	TEST_ASSERT(starnn_amp_nonfinite(flag, flag) == STARNN_EINVAL, "nonfinite with x == flag must fail");
	TEST_ASSERT(starnn_amp_scale_update(x, flag, &p) == STARNN_EINVAL, "scale_update with a 3x4 state must fail");
	TEST_ASSERT(starnn_amp_scale_update(s3, flag, &p) == STARNN_EINVAL, "scale_update with an fp16 state must fail");
	TEST_ASSERT(starnn_amp_scale_update(state, f2, &p) == STARNN_EINVAL, "scale_update with a 2-element flag must fail");
	p.growth_interval = 0;
	TEST_ASSERT(starnn_amp_scale_update(state, flag, &p) == STARNN_EINVAL, "growth interval 0 must fail");
	starnn_amp_policy_default(&p);
	p.backoff = 0.0f;
	TEST_ASSERT(starnn_amp_scale_update(state, flag, &p) == STARNN_EINVAL, "backoff 0 must fail");
	TEST_ASSERT(starnn_amp_state_init(state, 0.0f) == STARNN_EINVAL, "a zero scale must fail");
	TEST_ASSERT(starnn_amp_state_init(x, 1.0f) == STARNN_EINVAL, "a 3x4 state must fail");
	starnn_tensor_destroy(x), starnn_tensor_destroy(flag), starnn_tensor_destroy(f2);
	starnn_tensor_destroy(state), starnn_tensor_destroy(s3);
}

int main(void)
{
	test_init();
	if (!TEST_ON_DEVICE) {
		kernel_vs_naive(STARNN_FP32);
		kernel_vs_naive(STARNN_FP16);
		kernel_vs_naive(STARNN_BF16);
		default_policy();
	}
	codelet_nonfinite(STARNN_FP32);
	codelet_nonfinite(STARNN_FP16);
	codelet_nonfinite(STARNN_BF16);
	codelet_patterns(STARNN_FP32);
	codelet_patterns(STARNN_FP16);
	codelet_patterns(STARNN_BF16);
	scale_update(1);
	scale_update(0);
	scaled_step();
	bad_arguments();
	return test_finish();
}
