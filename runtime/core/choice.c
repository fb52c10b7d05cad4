/* Settings chosen by environment variables (runtime/core/choice.h), and
 * the table of the operations' settings, read in one place. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "runtime/core/choice.h"
#include "runtime/base/error.h"

/* ------------------------------------------------ the operations' settings
 * Their names and values (the owners' enums: codelets/kernels/conv2d.h,
 * codelets/conv2d_routes.h), the default first. */

/* A test hook of the table: var, the names for the message, the names, the values. */
#define HOOK(var, expect, names, values)                                                                     \
	{var, expect, names, values, (int)(sizeof names / sizeof *names), -1, 0, 0, PTHREAD_MUTEX_INITIALIZER}

/* STARNN_CPU_SIMD: the highest instruction set the CPU kernels use
 * (codelets/simd.c applies it); auto (unset): the best the CPU has. */
static const char *const simd_names[] = {"auto", "generic", "avx2", "avx512"};
static const int simd_values[] = {0, 1, 2, 3};

static const char *const cpu_names[] = {
#ifdef STARNN_HAVE_DNNL
	"dnnl", "onednn",
#endif
	"im2col"};
static const int cpu_values[] = {
#ifdef STARNN_HAVE_DNNL
	1, 1,
#endif
	0};
static const char *const wgrad_names[] = {"auto", "dnnl", "onednn", "gemm", "direct"};
static const int wgrad_values[] = {0, 1, 1, 2, 3};
static const char *const whole_names[] = {"auto", "on", "off"};
static const int whole_values[] = {0, 1, 2};
static const char *const onebyone_names[] = {"auto", "dnnl", "onednn", "gemm"};
static const int onebyone_values[] = {0, 1, 1, 2};
static const char *const nchw_in_names[] = {"auto", "dnnl", "onednn", "direct"};
static const int nchw_in_values[] = {0, 1, 1, 2};
static const char *const algo_names[] = {"auto", "direct", "winograd"};
static const int algo_values[] = {0, 1, 2};
static const char *const convt_names[] = {"auto", "dnnl", "onednn", "direct"};
static const int convt_values[] = {0, 1, 1, 2};
static const char *const pack_names[] = {"on", "1", "tasks", "off", "0"};
static const int pack_values[] = {1, 1, 2, 0, 0};
static const char *const layout_names[] = {"auto", "blocked", "nhwc", "nchw"};
static const int layout_values[] = {0, 1, 2, 3};
static const char *const cuda_half_names[] = {"widen", "native"};
static const int cuda_half_values[] = {0, 1};

static struct starnn_choice table[STARNN_NSETTINGS] = {
	[STARNN_SETTING_CPU_SIMD] = HOOK("STARNN_CPU_SIMD", "auto, generic, avx2 or avx512", simd_names, simd_values),
#ifdef STARNN_HAVE_DNNL
	[STARNN_SETTING_CONV2D_CPU] = HOOK("STARNN_CONV2D_CPU", "dnnl or im2col", cpu_names, cpu_values),
#else
	[STARNN_SETTING_CONV2D_CPU] = HOOK("STARNN_CONV2D_CPU",
	                                   "im2col (this starnn was built without oneDNN; Debian: apt-get install "
	                                   "libdnnl-dev, then configure again)",
	                                   cpu_names, cpu_values),
#endif
	[STARNN_SETTING_CONV2D_WGRAD] = HOOK("STARNN_CONV2D_WGRAD", "auto, dnnl, gemm or direct", wgrad_names,
	                                     wgrad_values),
	[STARNN_SETTING_CONV2D_WGRAD_WHOLE] = HOOK("STARNN_CONV2D_WGRAD_WHOLE", "auto, on or off", whole_names,
	                                           whole_values),
	[STARNN_SETTING_CONV2D_1X1] = HOOK("STARNN_CONV2D_1X1", "auto, dnnl or gemm", onebyone_names, onebyone_values),
	[STARNN_SETTING_CONV2D_NCHW_IN] = HOOK("STARNN_CONV2D_NCHW_IN", "auto, dnnl or direct", nchw_in_names,
	                                       nchw_in_values),
	[STARNN_SETTING_CONV2D_ALGO] = HOOK("STARNN_CONV2D_ALGO", "auto, direct or winograd", algo_names, algo_values),
	[STARNN_SETTING_CONVT2D] = HOOK("STARNN_CONVT2D", "auto, dnnl or direct", convt_names, convt_values),
	[STARNN_SETTING_CONV2D_PACK] = HOOK("STARNN_CONV2D_PACK", "on, tasks or off", pack_names, pack_values),
	[STARNN_SETTING_LAYOUT] = HOOK("STARNN_LAYOUT", "auto, blocked, nhwc or nchw", layout_names, layout_values),
	[STARNN_SETTING_CUDA_HALF_CONV] = HOOK("STARNN_CUDA_HALF_CONV", "native or widen", cuda_half_names,
	                                       cuda_half_values),
};

/* The value of a variable's word e among c's names (-2: not one of them;
 * unset or empty: the default). */
static int choice_parse(const struct starnn_choice *c, const char *e)
{
	if (!e || !*e)
		return c->values[0];
	for (int i = 0; i < c->n; i++)
		if (!strcmp(e, c->names[i]))
			return c->values[i];
	return -2;
}

/* Whether c's variable is read at all: the table's settings but the
 * user's (STARNN_CPU_SIMD) are test hooks. */
static int env_read(const struct starnn_choice *c)
{
#ifdef STARNN_TEST_HOOKS
	(void)c;
	return 1;
#else
	return c < table + 1 || c >= table + STARNN_NSETTINGS;
#endif
}

/* The variable's value (-2: not one of the names), read once. */
static int choice_env(struct starnn_choice *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->read) {
		c->env = choice_parse(c, env_read(c) ? getenv(c->var) : NULL);
		c->read = 1;
	}
	int v = c->env;
	pthread_mutex_unlock(&c->lock);
	return v;
}

int starnn_choice_check(struct starnn_choice *c)
{
	if (c->forced < 0 && choice_env(c) == -2)
		return starnn_error(STARNN_EINVAL, "%s is '%s': expected %s", c->var, getenv(c->var), c->expect);
	return 0;
}

int starnn_choice_mode(struct starnn_choice *c)
{
	const int e = choice_env(c);
	return c->forced >= 0 ? c->forced : e == -2 ? c->values[0] : e;
}

int starnn_choice_set(struct starnn_choice *c, int mode, int last, const char *what)
{
	if (mode < 0 || mode > last)
		return starnn_error(STARNN_EINVAL, "%s %d", what, mode);
	c->forced = mode;
	return 0;
}

const char *starnn_choice_given(struct starnn_choice *c)
{
	if (c->forced >= 0 || choice_env(c) == -2 || !env_read(c))
		return NULL;
	const char *e = getenv(c->var);
	return e && *e ? e : NULL;
}

static int loaded;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

int starnn_settings_load(void)
{
	int rc = 0;
	pthread_mutex_lock(&load_lock);
	for (int s = 0; s < STARNN_NSETTINGS; s++) {
		struct starnn_choice *c = &table[s];
		pthread_mutex_lock(&c->lock);
		c->env = choice_parse(c, env_read(c) ? getenv(c->var) : NULL);
		c->read = 1;
		pthread_mutex_unlock(&c->lock);
		if (!rc)
			rc = starnn_choice_check(c);
	}
	__atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&load_lock);
	return rc;
}

struct starnn_choice *starnn_setting(enum starnn_setting s)
{
	if (!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE))
		(void)starnn_settings_load(); /* (a bad value: reported by the owners' checks) */
	return &table[s];
}
