/* Settings chosen by environment variables among a few names.
 *
 * A struct starnn_choice is one such setting: names[i] gives values[i];
 * unset or empty gives values[0] (its default); another name is an error
 * that starnn_choice_check reports (STARNN_EINVAL with "VAR is 'x':
 * expected ...") and starnn_choice_mode reads as values[0]. A _set
 * function of its owner may override it (forced >= 0). Defined
 * statically, e.g.
 *   static struct starnn_choice c = {"STARNN_X", "auto, on or off", names,
 *                                    values, 3, -1, 0, 0, PTHREAD_MUTEX_INITIALIZER};
 *
 * The settings of the operations (enum starnn_setting: the convolutions'
 * routes) are one table, read and checked in one place: starnn_settings_load
 * reads every one of them at once (starnn_init calls it; the first query
 * of a setting before that loads the table too), and their owners
 * (codelets/conv2d_routes.h) read and force them through starnn_setting.
 * Every one of them is an experiment switch that a user does not need, so
 * a test hook: read only in builds configured with --enable-test-hooks
 * (STARNN_TEST_HOOKS); a build without them runs their defaults (auto),
 * and benchmarks set them through their owners' functions. */
#ifndef STARNN_CHOICE_H
#define STARNN_CHOICE_H
#include <pthread.h>
#ifdef __cplusplus
extern "C" {
#endif

struct starnn_choice {
	const char *var, *expect; /* expect: the names, for the error message */
	const char *const *names;
	const int *values;
	int n, forced, env, read;
	pthread_mutex_t lock;
};

/* 0, or STARNN_EINVAL with the message for an unknown name (not when forced). */
int starnn_choice_check(struct starnn_choice *c);
/* The value in force: the forced one, else the variable's (values[0] for an
 * unknown name). */
int starnn_choice_mode(struct starnn_choice *c);
/* Forces mode (0..last), or STARNN_EINVAL with "what mode". */
int starnn_choice_set(struct starnn_choice *c, int mode, int last, const char *what);
/* The variable's value where it is set to one of the names and not
 * overridden (for messages that say where a setting came from), else NULL. */
const char *starnn_choice_given(struct starnn_choice *c);

/* The operations' settings. The values are those of their owners' enums
 * (codelets/kernels/conv2d.h, codelets/conv2d_routes.h, which check that
 * they agree); the names each takes, their default first:
 *   STARNN_CONV2D_CPU          dnnl (onednn) | im2col; im2col alone without oneDNN
 *   STARNN_CONV2D_WGRAD        auto | dnnl (onednn) | gemm | direct
 *   STARNN_CONV2D_WGRAD_WHOLE  auto | on | off
 *   STARNN_CONV2D_1X1          auto | dnnl (onednn) | gemm
 *   STARNN_CONV2D_NCHW_IN      auto | dnnl (onednn) | direct
 *   STARNN_CONV2D_ALGO         auto | direct | winograd
 *   STARNN_CONVT2D             auto | dnnl (onednn) | direct
 *   STARNN_CONV2D_PACK         on (1) | tasks | off (0)
 *   STARNN_LAYOUT              auto | blocked | nhwc | nchw
 *   STARNN_CUDA_HALF_CONV      widen | native */
enum starnn_setting {
	STARNN_SETTING_CPU_SIMD,   /* a user's setting, read in every build */
	STARNN_SETTING_CONV2D_CPU, /* the rest: test hooks */
	STARNN_SETTING_CONV2D_WGRAD,
	STARNN_SETTING_CONV2D_WGRAD_WHOLE,
	STARNN_SETTING_CONV2D_1X1,
	STARNN_SETTING_CONV2D_NCHW_IN,
	STARNN_SETTING_CONV2D_ALGO,
	STARNN_SETTING_CONVT2D,
	STARNN_SETTING_CONV2D_PACK,
	STARNN_SETTING_LAYOUT,
	STARNN_SETTING_CUDA_HALF_CONV,
	STARNN_NSETTINGS
};
/* Reads every setting of the table again (the hooks only in builds with
 * test hooks): 0, or STARNN_EINVAL with the message of the first one whose
 * value is not one of its names (and not forced). Forced values stay. */
int starnn_settings_load(void);
/* Setting s of the table (the table loaded first if it was not). */
struct starnn_choice *starnn_setting(enum starnn_setting s);

#ifdef __cplusplus
}
#endif
#endif
