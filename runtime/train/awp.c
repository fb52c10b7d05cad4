/* The adaptive weight precision rule (see awp.h). */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/awp.h"
#include "runtime/base/error.h"

void starnn_awp_defaults(struct starnn_awp_config *c)
{
	*c = (struct starnn_awp_config){.rel_res = 8e-5, .interval = 10, .start_bits = 8, .stride = 8,
	                                .family = STARNN_WIRE_LADDER_TRUNC, .rule = STARNN_AWP_RULE_PAPER, .res_factor = 0.0625};
}

int starnn_awp_check(const struct starnn_awp_config *c)
{
	if (!(c->rel_res >= 0) || !isfinite(c->rel_res))
		return starnn_error(STARNN_EINVAL, "--awp-rel-res %g: expected a finite value >= 0", c->rel_res);
	if (c->interval < 1)
		return starnn_error(STARNN_EINVAL, "--awp-interval %d: expected at least 1 step", c->interval);
	if (c->start_bits != 8 && c->start_bits != 16 && c->start_bits != 24 && c->start_bits != 32)
		return starnn_error(STARNN_EINVAL, "--awp-start-bits %d: expected 8, 16, 24 or 32 (whole bytes per value)",
		                    c->start_bits);
	if (c->stride != 8 && c->stride != 16 && c->stride != 24)
		return starnn_error(STARNN_EINVAL, "--awp-stride %d: expected 8, 16 or 24 (whole bytes per value)",
		                    c->stride);
	if (c->family != STARNN_WIRE_LADDER_TRUNC && c->family != STARNN_WIRE_LADDER_RNE)
		return starnn_error(STARNN_EINVAL, "awp: unknown rounding family %d", (int)c->family);
	if (c->rule != STARNN_AWP_RULE_PAPER && c->rule != STARNN_AWP_RULE_RESOLUTION)
		return starnn_error(STARNN_EINVAL, "awp: unknown rule %d", c->rule);
	if (!(c->res_factor > 0) || !isfinite(c->res_factor))
		return starnn_error(STARNN_EINVAL, "--awp-res-factor %g: expected a finite value > 0", c->res_factor);
	return 0;
}

void starnn_awp_layer_init(const struct starnn_awp_config *c, struct starnn_awp_layer *l)
{
	*l = (struct starnn_awp_layer){.bits = c->start_bits, .counter = 0, .seen = 0, .n_ref = 0.0,
	                               .step_sq_pending = -1.0};
}


double starnn_awp_resolution(starnn_wire_format f)
{
	switch (f) {
	case STARNN_WIRE_INT8: return 1.0 / 254.0;
	case STARNN_WIRE_FP8: return 1.0 / 16.0;
	case STARNN_WIRE_TRUNC16: return 0x1p-7;
	case STARNN_WIRE_RNE16:
	case STARNN_WIRE_BF16: return 0x1p-8;
	case STARNN_WIRE_FP16: return 0x1p-11;
	case STARNN_WIRE_TRUNC24: return 0x1p-15;
	case STARNN_WIRE_RNE24: return 0x1p-16;
	default: return 0.0;
	}
}

/* Gains stride bits (at most 32); under the resolution rule, also past a
 * width that resolves no finer than the one the layer had. */
static void gain_bits(const struct starnn_awp_config *c, int rule, struct starnn_awp_layer *l)
{
	double before = starnn_awp_resolution(starnn_awp_format(c, l));
	do
		l->bits = l->bits + c->stride > 32 ? 32 : l->bits + c->stride;
	while (rule == STARNN_AWP_RULE_RESOLUTION && l->bits < 32 &&
	       starnn_awp_resolution(starnn_awp_format(c, l)) >= before);
}

/* One observation by `rule` (u: the step, the resolution rule's only). */
static int observe(const struct starnn_awp_config *c, int rule, struct starnn_awp_layer *l, double n, double u)
{
	const int resolution = rule == STARNN_AWP_RULE_RESOLUTION;
	if (!isfinite(n) || n < 0 || (resolution && (!isfinite(u) || u < 0)))
		return 0;
	if (!l->seen) {
		l->seen = 1;
		l->n_ref = n;
		l->counter = 0;
		return 0;
	}
	int large;
	if (resolution) {
		if (u == 0)
			return 0; /* no step (skipped): nothing to observe */
		large = u > c->res_factor * starnn_awp_resolution(starnn_awp_format(c, l)) * n;
	} else {
		large = l->n_ref > 0 ? (n - l->n_ref) / l->n_ref > c->rel_res : n > 0;
	}
	l->counter = large ? 0 : l->counter + 1;
	l->n_ref = n;
	if (l->counter < c->interval)
		return 0;
	l->counter = 0;
	if (l->bits >= 32)
		return 0;
	gain_bits(c, rule, l);
	return 1;
}

int starnn_awp_observe(const struct starnn_awp_config *c, struct starnn_awp_layer *l, double n)
{
	return observe(c, STARNN_AWP_RULE_PAPER, l, n, 0.0);
}

int starnn_awp_observe_step(const struct starnn_awp_config *c, struct starnn_awp_layer *l, double n, double u)
{
	return observe(c, c->rule, l, n, u);
}

starnn_wire_format starnn_awp_format(const struct starnn_awp_config *c, const struct starnn_awp_layer *l)
{
	starnn_wire_format f = STARNN_WIRE_FP32; /* bits and family are valid (starnn_awp_check) */
	(void)starnn_wire_ladder(c->family, l->bits, &f);
	return f;
}

int starnn_awp_layer_format(const struct starnn_awp_layer *l, char *buf, size_t size)
{
	int w = l->step_sq_pending >= 0
	            ? snprintf(buf, size, "%d %d %d %.17g %.17g", l->bits, l->counter, l->seen, l->n_ref,
	                       l->step_sq_pending)
	            : snprintf(buf, size, "%d %d %d %.17g", l->bits, l->counter, l->seen, l->n_ref);
	if (w < 0 || (size_t)w >= size)
		return starnn_error(STARNN_EINVAL, "awp: state text too long");
	return 0;
}

int starnn_awp_layer_parse(const char *text, struct starnn_awp_layer *l)
{
	struct starnn_awp_layer v = {.step_sq_pending = -1.0};
	int used = 0, more = 0;
	int ok = sscanf(text, "%d %d %d %lg%n", &v.bits, &v.counter, &v.seen, &v.n_ref, &used) == 4;
	if (ok && text[used] == ' ' &&
	    (sscanf(text + used, " %lg%n", &v.step_sq_pending, &more) != 1 || !(v.step_sq_pending >= 0) ||
	     !isfinite(v.step_sq_pending)))
		ok = 0;
	used += more;
	if (!ok || text[used] != '\0' || (v.bits != 8 && v.bits != 16 && v.bits != 24 && v.bits != 32) || v.counter < 0 ||
	    (v.seen != 0 && v.seen != 1) || !(v.n_ref >= 0) || !isfinite(v.n_ref))
		return starnn_error(STARNN_EINVAL,
		                    "awp: malformed layer state '%s' (expected 'bits counter seen n_ref [step_sq]')", text);
	*l = v;
	return 0;
}

int starnn_awp_states_format(int n, starnn_awp_layer_at at, void *ctx, char **text)
{
	*text = NULL;
	size_t size = 1, off = 0;
	for (int i = 0; i < n; i++)
		size += strlen(at(ctx, i).name) + 96;
	char *buf = malloc(size);
	if (!buf)
		return starnn_error(STARNN_ENOMEM, "awp: out of memory");
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		struct starnn_awp_named l = at(ctx, i);
		char st[96];
		int rc = starnn_awp_layer_format(l.layer, st, sizeof st);
		if (rc < 0) {
			free(buf);
			return rc;
		}
		off += (size_t)snprintf(buf + off, size - off, "%s %s\n", l.name, st);
	}
	*text = buf;
	return 0;
}

int starnn_awp_states_parse(const char *text, int n, starnn_awp_layer_at at, void *ctx)
{
	int *seen = calloc((size_t)(n > 0 ? n : 1), sizeof *seen);
	if (!seen)
		return starnn_error(STARNN_ENOMEM, "awp: out of memory");
	int rc = 0;
	for (const char *line = text; *line && rc == 0;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *buf = malloc(len + 1);
		if (!buf) {
			rc = starnn_error(STARNN_ENOMEM, "awp: out of memory");
			break;
		}
		memcpy(buf, line, len);
		buf[len] = '\0';
		char *sp = strchr(buf, ' ');
		int idx = -1;
		if (sp) {
			*sp = '\0';
			for (int i = 0; i < n; i++)
				if (strcmp(at(ctx, i).name, buf) == 0)
					idx = i;
		}
		if (idx < 0)
			rc = starnn_error(STARNN_EINVAL, "adaptive wire state: '%s' is not a parameter of this model", buf);
		else if ((rc = starnn_awp_layer_parse(sp + 1, at(ctx, idx).layer)) == 0)
			seen[idx] = 1;
		free(buf);
		line = end ? end + 1 : line + len;
	}
	for (int i = 0; i < n && rc == 0; i++)
		if (!seen[i])
			rc = starnn_error(STARNN_EINVAL, "adaptive wire state: no state for parameter %s", at(ctx, i).name);
	free(seen);
	return rc;
}

const char *const starnn_awp_options[STARNN_AWP_NOPTIONS] = {"--awp-rel-res", "--awp-interval", "--awp-start-bits",
                                                              "--awp-stride", "--awp-rounding", "--awp-rule",
                                                              "--awp-res-factor"};

static int parse_long(const char *option, const char *arg, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi)
		return starnn_error(STARNN_EINVAL, "%s '%s': expected an integer in [%ld, %ld]", option, arg, lo, hi);
	*out = v;
	return 0;
}

/* A finite number >= 0 (> 0 when positive) */
static int parse_number(const char *option, const char *arg, int positive, const char *example, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(arg, &end);
	if (errno || end == arg || *end || !(positive ? d > 0 : d >= 0) || !isfinite(d))
		return starnn_error(STARNN_EINVAL, "%s '%s': expected a finite number %s 0 (e.g. %s)", option, arg,
		                    positive ? ">" : ">=", example);
	*out = d;
	return 0;
}

/* arg is a (*second = 0) or b (*second = 1) */
static int parse_choice(const char *option, const char *arg, const char *a, const char *b, const char *expected,
                        int *second)
{
	if (strcmp(arg, a) != 0 && strcmp(arg, b) != 0)
		return starnn_error(STARNN_EINVAL, "%s '%s': expected %s", option, arg, expected);
	*second = strcmp(arg, b) == 0;
	return 0;
}

int starnn_awp_option(const char *option, const char *arg, struct starnn_awp_config *c)
{
	long v = 0;
	if (strcmp(option, "--awp-rel-res") == 0) {
		STARNN_CHECK(parse_number(option, arg, 0, "8e-5", &c->rel_res));
	} else if (strcmp(option, "--awp-res-factor") == 0) {
		STARNN_CHECK(parse_number(option, arg, 1, "0.0625", &c->res_factor));
	} else if (strcmp(option, "--awp-rule") == 0) {
		int resolution = 0;
		STARNN_CHECK(parse_choice(option, arg, "paper", "resolution",
		                          "paper (the norm's relative growth against --awp-rel-res) or resolution (the "
		                          "step against what the format resolves)",
		                          &resolution));
		c->rule = resolution ? STARNN_AWP_RULE_RESOLUTION : STARNN_AWP_RULE_PAPER;
	} else if (strcmp(option, "--awp-interval") == 0) {
		STARNN_CHECK(parse_long(option, arg, 1, 1000000000L, &v));
		c->interval = (int)v;
	} else if (strcmp(option, "--awp-start-bits") == 0 || strcmp(option, "--awp-stride") == 0) {
		int start = strcmp(option, "--awp-start-bits") == 0;
		STARNN_CHECK(parse_long(option, arg, 1, 32, &v));
		if (start ? v % 8 != 0 : v % 8 != 0 || v > 24)
			return starnn_error(STARNN_EINVAL, "%s %s: expected %s (whole bytes per value)", option, arg,
			                    start ? "8, 16, 24 or 32" : "8, 16 or 24");
		if (start)
			c->start_bits = (int)v;
		else
			c->stride = (int)v;
	} else if (strcmp(option, "--awp-rounding") == 0) {
		int rne = 0;
		STARNN_CHECK(parse_choice(option, arg, "trunc", "rne",
		                          "trunc (drop the low bytes, the paper's) or rne (round to nearest even)", &rne));
		c->family = rne ? STARNN_WIRE_LADDER_RNE : STARNN_WIRE_LADDER_TRUNC;
	} else {
		return starnn_error(STARNN_EINVAL, "awp: unknown option %s", option);
	}
	return 0;
}

int starnn_awp_wire_option(const char *option, const char *arg, int *wire)
{
	if (strcmp(arg, "awp") == 0) {
		*wire = STARNN_WIRE_ADAPTIVE;
		return 0;
	}
	if (starnn_wire_option(option, arg, wire) < 0)
		return starnn_error(STARNN_EINVAL,
		                    "%s is none, awp (adaptive), bf16, fp16, trunc16, rne16, trunc24, rne24, int8 or fp8, "
		                    "not '%s'",
		                    option, arg);
	return 0;
}
