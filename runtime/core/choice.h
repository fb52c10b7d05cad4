/* A setting chosen by an environment variable among a few names, read
 * once: names[i] gives values[i]; unset or empty gives values[0] (auto);
 * another name is an error that starnn_choice_check reports (STARNN_EINVAL
 * with "VAR is 'x': expected ...") and starnn_choice_mode reads as
 * values[0]. A _set function of its owner may override it (forced >= 0).
 * Defined statically, e.g.
 *   static struct starnn_choice c = {"STARNN_X", "auto, on or off", names,
 *                                    values, 3, -1, 0, 0, PTHREAD_MUTEX_INITIALIZER}; */
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

#ifdef __cplusplus
}
#endif
#endif
