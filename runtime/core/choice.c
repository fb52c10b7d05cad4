/* Settings chosen by environment variables (runtime/core/choice.h). */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "runtime/core/choice.h"
#include "runtime/base/error.h"

/* The variable's value (-2: not one of the names), read once. */
static int choice_env(struct starnn_choice *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->read) {
		const char *e = getenv(c->var);
		c->env = e && *e ? -2 : c->values[0];
		for (int i = 0; e && *e && i < c->n; i++)
			if (!strcmp(e, c->names[i]))
				c->env = c->values[i];
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
	if (c->forced >= 0 || choice_env(c) == -2)
		return NULL;
	const char *e = getenv(c->var);
	return e && *e ? e : NULL;
}
