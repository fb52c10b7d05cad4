/* runtime/awp: the adaptive weight precision rule on synthetic sequences
 * of norms, against the format changes worked out by hand from the rule
 * of awp.h; the option parsing, the checkpoint text and the error paths.
 * Host logic only (no tasks). */
#include <math.h>

#include "runtime/train/awp.h"
#include "tests/testlib.h"

/* Feeds norms[0..n) and returns, for each observation, the width after it. */
static void run(const struct starnn_awp_config *c, const double *norms, int n, int *bits)
{
	struct starnn_awp_layer l;
	starnn_awp_layer_init(c, &l);
	for (int i = 0; i < n; i++) {
		int before = l.bits;
		int gained = starnn_awp_observe(c, &l, norms[i]);
		TEST_ASSERT(gained == (l.bits != before), "observation %d: gained %d but %d -> %d bits", i, gained, before,
		            l.bits);
		bits[i] = l.bits;
	}
}

static void expect(const char *what, const int *got, const int *want, int n)
{
	for (int i = 0; i < n; i++)
		TEST_ASSERT(got[i] == want[i], "%s: after observation %d: %d bits, expected %d", what, i, got[i], want[i]);
}

static void rule(void)
{
	struct starnn_awp_config c;
	starnn_awp_defaults(&c);
	TEST_ASSERT(c.rel_res == 8e-5 && c.interval == 10 && c.start_bits == 8 && c.stride == 8 &&
	                c.family == STARNN_WIRE_LADDER_TRUNC,
	            "defaults: rel_res 8e-5, interval 10, 8 bits, stride 8, trunc");
	TEST_OK(starnn_awp_check(&c));
	c.interval = 3;

	/* A constant norm: the first observation sets the reference, then
	 * every step is small (r = 0): +8 bits after 3, 6, 9 small steps, then
	 * 32 stays. */
	double flat[12];
	for (int i = 0; i < 12; i++)
		flat[i] = 2.0;
	int got[16];
	run(&c, flat, 12, got);
	const int want_flat[12] = {8, 8, 8, 16, 16, 16, 24, 24, 24, 32, 32, 32};
	expect("constant norm", got, want_flat, 12);

	/* Growth above rel_res resets the counter: norms growing by 1e-3 (r =
	 * 1e-3 > 8e-5) never gain bits; a growth below rel_res counts as
	 * small; a shrinking norm (r < 0) counts as small too. The sequence (interval 3):
	 *   obs 0: reference                          bits 8
	 *   obs 1: +1e-3 -> reset                     8
	 *   obs 2: +1e-3 -> reset                     8
	 *   obs 3: -50%  -> small (1)                 8
	 *   obs 4: same  -> small (2)                 8
	 *   obs 5: +1e-3 -> reset                     8
	 *   obs 6: +rel_res/2 -> small (1)             8
	 *   obs 7: same  -> small (2)                 8
	 *   obs 8: same  -> small (3): +8 bits         16 */
	double seq[9];
	seq[0] = 1.0;
	seq[1] = seq[0] * (1 + 1e-3);
	seq[2] = seq[1] * (1 + 1e-3);
	seq[3] = seq[2] * 0.5;
	seq[4] = seq[3];
	seq[5] = seq[4] * (1 + 1e-3);
	seq[6] = seq[5] + seq[5] * 0.5 * c.rel_res; /* half of rel_res: small */
	seq[7] = seq[6];
	seq[8] = seq[7];
	run(&c, seq, 9, got);
	const int want_seq[9] = {8, 8, 8, 8, 8, 8, 8, 8, 16};
	expect("resets and small steps", got, want_seq, 9);

	/* Stride 16 from 8: 8 -> 24 -> 32 (never beyond 32). */
	c.stride = 16;
	run(&c, flat, 12, got);
	const int want_s16[12] = {8, 8, 8, 24, 24, 24, 32, 32, 32, 32, 32, 32};
	expect("stride 16", got, want_s16, 12);
	c.stride = 8;

	/* A zero reference (a bias at the start): zero again is small, any
	 * value after zero is large. */
	double zeros[8] = {0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5};
	run(&c, zeros, 8, got);
	const int want_z[8] = {8, 8, 8, 16, 16, 16, 16, 24};
	expect("zero norms", got, want_z, 8);

	/* NaN and Inf norms change nothing. */
	struct starnn_awp_layer l;
	starnn_awp_layer_init(&c, &l);
	TEST_ASSERT(starnn_awp_observe(&c, &l, NAN) == 0 && !l.seen, "a NaN norm is not observed");
	TEST_ASSERT(starnn_awp_observe(&c, &l, INFINITY) == 0 && !l.seen, "an Inf norm is not observed");

	/* Formats of each width in both families. */
	struct {
		int bits;
		starnn_wire_family fam;
		starnn_wire_format f;
	} fm[] = {{8, STARNN_WIRE_LADDER_TRUNC, STARNN_WIRE_INT8},   {16, STARNN_WIRE_LADDER_TRUNC, STARNN_WIRE_TRUNC16},
	          {24, STARNN_WIRE_LADDER_TRUNC, STARNN_WIRE_TRUNC24}, {32, STARNN_WIRE_LADDER_TRUNC, STARNN_WIRE_FP32},
	          {16, STARNN_WIRE_LADDER_RNE, STARNN_WIRE_RNE16},     {24, STARNN_WIRE_LADDER_RNE, STARNN_WIRE_RNE24}};
	for (size_t i = 0; i < sizeof fm / sizeof *fm; i++) {
		c.family = fm[i].fam;
		l.bits = fm[i].bits;
		TEST_ASSERT(starnn_awp_format(&c, &l) == fm[i].f, "%d bits (family %d): format %s", fm[i].bits,
		            (int)fm[i].fam, starnn_wire_name(fm[i].f));
	}
}

/* The resolution rule (awp.h), worked by hand: (norm, step) pairs. */
static void resolution_rule(void)
{
	struct starnn_awp_config c;
	starnn_awp_defaults(&c);
	TEST_ASSERT(c.rule == STARNN_AWP_RULE_PAPER && c.res_factor == 0.0625, "defaults: the paper's rule, factor 1/16");
	c.rule = STARNN_AWP_RULE_RESOLUTION;
	c.res_factor = 1.0;
	c.interval = 3;
	c.family = STARNN_WIRE_LADDER_RNE;
	TEST_OK(starnn_awp_check(&c));
	TEST_ASSERT(starnn_awp_uses_steps(&c), "the resolution rule reads the steps");
	TEST_ASSERT(starnn_awp_resolution(STARNN_WIRE_INT8) == 1.0 / 254 &&
	                starnn_awp_resolution(STARNN_WIRE_RNE16) == 0x1p-8 &&
	                starnn_awp_resolution(STARNN_WIRE_TRUNC16) == 0x1p-7 &&
	                starnn_awp_resolution(STARNN_WIRE_RNE24) == 0x1p-16 && starnn_awp_resolution(STARNN_WIRE_FP32) == 0,
	            "resolutions: int8 1/254, rne16 2^-8, trunc16 2^-7, rne24 2^-16, fp32 0");
	/* norm 10: the threshold is 10/254 = 0.03937 at 8 bits, 10 * 2^-8 =
	 * 0.0390625 at 16, 10 * 2^-16 = 1.53e-4 at 24 */
	static const double obs[][2] = {
		{10, 0},      /* 0: the reference */
		{10, 0.03},   /* 1: small (1) */
		{10, 0.05},   /* 2: large (0) */
		{10, 0.039},  /* 3: small (1) */
		{10, 0.039},  /* 4: small (2) */
		{10, 0},      /* 5: no step: not observed (2) */
		{10, 0.0393}, /* 6: small (3): 8 -> 16 */
		{10, 0.0393}, /* 7: large at 16 bits (0) */
		{10, 0.01},   {10, 0.01}, {10, 0.01}, /* 8-10: small: 16 -> 24 at 10 */
		{10, 1e-4},   {10, 1e-4}, {10, 1e-4}, /* 11-13: small: 24 -> 32 at 13 */
		{10, 1e-4},   {10, 1e-4}, {10, 1e-4}, /* 14-16: 32 stays */
	};
	static const int want[] = {8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 24, 24, 24, 32, 32, 32, 32};
	struct starnn_awp_layer l;
	starnn_awp_layer_init(&c, &l);
	for (int i = 0; i < (int)(sizeof want / sizeof *want); i++) {
		int before = l.bits;
		int gained = starnn_awp_observe_step(&c, &l, obs[i][0], obs[i][1]);
		TEST_ASSERT(gained == (l.bits != before) && l.bits == want[i],
		            "resolution rule, observation %d: %d bits (gained %d), expected %d", i, l.bits, gained, want[i]);
	}
	/* the trunc ladder: trunc16 resolves no finer than int8, so 8 -> 24 */
	c.family = STARNN_WIRE_LADDER_TRUNC;
	c.interval = 1;
	starnn_awp_layer_init(&c, &l);
	starnn_awp_observe_step(&c, &l, 1, 0);
	TEST_ASSERT(starnn_awp_observe_step(&c, &l, 1, 1e-3) == 1 && l.bits == 24 &&
	                starnn_awp_format(&c, &l) == STARNN_WIRE_TRUNC24,
	            "trunc ladder: int8 goes to trunc24 past trunc16 (%d bits)", l.bits);
	/* the factor scales the threshold; zero weights with a step, NaN */
	c.family = STARNN_WIRE_LADDER_RNE;
	c.res_factor = 0.5;
	starnn_awp_layer_init(&c, &l);
	starnn_awp_observe_step(&c, &l, 10, 0);
	TEST_ASSERT(starnn_awp_observe_step(&c, &l, 10, 0.03) == 0 && l.counter == 0,
	            "factor 0.5: a step of 0.03 against 0.0197 is large");
	TEST_ASSERT(starnn_awp_observe_step(&c, &l, 10, 0.019) == 1 && l.bits == 16, "factor 0.5: 0.019 is small");
	starnn_awp_layer_init(&c, &l);
	starnn_awp_observe_step(&c, &l, 0, 0);
	TEST_ASSERT(starnn_awp_observe_step(&c, &l, 0, 1e-30) == 0 && l.counter == 0,
	            "zero weights that moved: a large step");
	TEST_ASSERT(starnn_awp_observe_step(&c, &l, 1, NAN) == 0 && l.n_ref == 0, "a NaN step is not observed");
	/* the paper's rule ignores the step */
	struct starnn_awp_config p;
	starnn_awp_defaults(&p);
	struct starnn_awp_layer a, b;
	starnn_awp_layer_init(&p, &a);
	starnn_awp_layer_init(&p, &b);
	for (int i = 0; i < 25; i++) {
		starnn_awp_observe(&p, &a, 1.0);
		starnn_awp_observe_step(&p, &b, 1.0, 1e9);
	}
	TEST_ASSERT(a.bits == b.bits && a.counter == b.counter && a.bits == 24,
	            "the paper's rule through observe_step: as observe (%d bits)", b.bits);
}

static void text(void)
{
	struct starnn_awp_layer l = {.bits = 24, .counter = 7, .seen = 1, .n_ref = 0.1 + 1e-17, .step_sq_pending = -1},
	                        back;
	char buf[96];
	TEST_OK(starnn_awp_layer_format(&l, buf, sizeof buf));
	TEST_OK(starnn_awp_layer_parse(buf, &back));
	TEST_ASSERT(back.bits == l.bits && back.counter == l.counter && back.seen == l.seen && back.n_ref == l.n_ref,
	            "state text '%s' round-trips exactly", buf);
	TEST_ASSERT(back.step_sq_pending == -1, "no pending step: -1");
	l.step_sq_pending = 0.25 + 1e-16;
	TEST_OK(starnn_awp_layer_format(&l, buf, sizeof buf));
	TEST_OK(starnn_awp_layer_parse(buf, &back));
	TEST_ASSERT(back.step_sq_pending == l.step_sq_pending && back.n_ref == l.n_ref,
	            "state text with a pending step '%s' round-trips exactly", buf);
	const char *bad[] = {"",          "24 7 1",      "12 0 0 1.0",  "8 -1 0 1",   "8 0 2 1",
	                     "8 0 1 nan", "8 0 1 -1",    "8 0 1 1 x",   "8 0 1 1 -1", "8 0 1 1 nan",
	                     "8 0 1 1 2 3"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		TEST_ASSERT(starnn_awp_layer_parse(bad[i], &back) == STARNN_EINVAL, "state text '%s' refused", bad[i]);
}

/* Many layers' states (starnn_awp_states_format / _parse): a round trip
 * of three named layers, and the texts refused. */
static struct starnn_awp_layer layers[3];
static const char *const layer_names[3] = {"enc0/conv1/weight", "enc0/conv1/bias", "head/weight"};
static struct starnn_awp_named layer_at(void *ctx, int i)
{
	(void)ctx;
	return (struct starnn_awp_named){layer_names[i], &layers[i]};
}

static void states(void)
{
	const struct starnn_awp_layer want[3] = {{.bits = 8, .counter = 0, .seen = 0, .n_ref = 0},
	                                         {.bits = 16, .counter = 3, .seen = 1, .n_ref = 2.5},
	                                         {.bits = 32, .counter = 9, .seen = 1, .n_ref = 1.0 / 3}};
	memcpy(layers, want, sizeof layers);
	char *txt = NULL;
	TEST_OK(starnn_awp_states_format(3, layer_at, NULL, &txt));
	TEST_ASSERT(txt && strncmp(txt, "enc0/conv1/weight 8 0 0 ", 24) == 0 && strchr(txt, '\n'),
	            "the states as lines '<name> <state>': %s", txt ? txt : "(null)");
	memset(layers, 0, sizeof layers);
	TEST_OK(starnn_awp_states_parse(txt, 3, layer_at, NULL));
	int same = 1;
	for (int i = 0; i < 3; i++)
		same &= layers[i].bits == want[i].bits && layers[i].counter == want[i].counter &&
		        layers[i].seen == want[i].seen && layers[i].n_ref == want[i].n_ref;
	TEST_ASSERT(same, "three layers' states round-trip exactly");
	free(txt);
	const char *bad[] = {
	    "enc0/conv1/weight 8 0 0 0\nenc0/conv1/bias 16 3 1 2.5\n",                                 /* one missing */
	    "enc0/conv1/weight 8 0 0 0\nenc0/conv1/bias 16 3 1 2.5\nhead/weight 32 9 1 1\nnope 8 0 0 0\n", /* not a layer */
	    "enc0/conv1/weight 8 0 0 0\nenc0/conv1/bias 12 3 1 2.5\nhead/weight 32 9 1 1\n",               /* bits 12 */
	    "enc0/conv1/weight\n",                                                                      /* no state */
	    ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		TEST_ASSERT(starnn_awp_states_parse(bad[i], 3, layer_at, NULL) == STARNN_EINVAL, "states text %zu refused", i);
	TEST_OK(starnn_awp_states_format(0, layer_at, NULL, &txt));
	TEST_ASSERT(txt && !*txt, "no layers: an empty text");
	free(txt);
}

static void options(void)
{
	struct starnn_awp_config c;
	starnn_awp_defaults(&c);
	TEST_OK(starnn_awp_option("--awp-rel-res", "1e-4", &c));
	TEST_OK(starnn_awp_option("--awp-interval", "25", &c));
	TEST_OK(starnn_awp_option("--awp-start-bits", "16", &c));
	TEST_OK(starnn_awp_option("--awp-stride", "16", &c));
	TEST_OK(starnn_awp_option("--awp-rounding", "rne", &c));
	TEST_ASSERT(c.rel_res == 1e-4 && c.interval == 25 && c.start_bits == 16 && c.stride == 16 &&
	                c.family == STARNN_WIRE_LADDER_RNE,
	            "options set the configuration");
	TEST_OK(starnn_awp_option("--awp-rule", "resolution", &c));
	TEST_OK(starnn_awp_option("--awp-res-factor", "0.5", &c));
	TEST_ASSERT(c.rule == STARNN_AWP_RULE_RESOLUTION && c.res_factor == 0.5, "--awp-rule, --awp-res-factor");
	TEST_OK(starnn_awp_option("--awp-rule", "paper", &c));
	TEST_ASSERT(c.rule == STARNN_AWP_RULE_PAPER, "--awp-rule paper");
	struct {
		const char *opt, *arg;
	} bad[] = {{"--awp-rel-res", "-1"},   {"--awp-rel-res", "inf"},   {"--awp-rel-res", "x"},
	           {"--awp-interval", "0"},   {"--awp-interval", "2.5"},  {"--awp-start-bits", "12"},
	           {"--awp-start-bits", "0"}, {"--awp-stride", "32"},     {"--awp-stride", "4"},
	           {"--awp-rounding", "up"},  {"--awp-unknown", "1"},     {"--awp-rule", "norm"},
	           {"--awp-res-factor", "0"}, {"--awp-res-factor", "-1"}, {"--awp-res-factor", "inf"}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		TEST_ASSERT(starnn_awp_option(bad[i].opt, bad[i].arg, &c) == STARNN_EINVAL &&
		                strstr(starnn_last_error(), bad[i].opt),
		            "%s %s refused with a message naming the option (%s)", bad[i].opt, bad[i].arg,
		            starnn_last_error());
	/* What a program shows its user: the message without the source
	 * location that starnn_last_error() starts with. */
	starnn_awp_option("--awp-interval", "0", &c);
	const char *full = starnn_last_error(), *msg = starnn_error_message();
	const char *where = strstr(full, "awp.c:"); /* runtime/train/awp.c, ../../runtime/awp.c in a VPATH build */
	TEST_ASSERT(where && where < msg && strncmp(msg, "--awp-interval", 14) == 0 &&
	                strcmp(strstr(full, ": ") + 2, msg) == 0,
	            "starnn_error_message() is '%s' without its location: '%s'", full, msg);
	int w = 0;
	TEST_OK(starnn_awp_wire_option("--wire-weights", "awp", &w));
	TEST_ASSERT(w == STARNN_WIRE_ADAPTIVE, "awp is the adaptive policy");
	TEST_OK(starnn_awp_wire_option("--wire-weights", "none", &w));
	TEST_ASSERT(w == -1, "none");
	TEST_OK(starnn_awp_wire_option("--wire-weights", "trunc24", &w));
	TEST_ASSERT(w == STARNN_WIRE_TRUNC24, "a fixed format");
	TEST_ASSERT(starnn_awp_wire_option("--wire-weights", "fp64", &w) == STARNN_EINVAL &&
	                strstr(starnn_last_error(), "awp"),
	            "an unknown format is refused, the message lists awp");
	c.interval = 0;
	TEST_ASSERT(starnn_awp_check(&c) == STARNN_EINVAL, "interval 0 refused by the check");
}

int main(void)
{
	test_init();
	rule();
	resolution_rule();
	text();
	states();
	options();
	return test_finish();
}
