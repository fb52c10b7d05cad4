/* One small task graph (a reduction tree of axpy / scale / add over
 * micro-batches, with partitioning) gives bit-identical results under every
 * scheduling policy this StarPU ships. */
#include <signal.h>
#include <unistd.h>

#include "codelets/axpy.h"
#include "tests/testlib.h"

/* A policy that deadlocks must fail the test, naming itself, not hang it. */
static const char *volatile current_policy = "";

static void watchdog(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: timed out under policy ";
	write(2, msg, sizeof msg - 1);
	write(2, current_policy, strlen(current_policy));
	write(2, "\n", 1);
	_exit(1);
}

#define NB 8
#define NCOLS 257

static void run_graph(float *out)
{
	int64_t shape[2] = {NB, NCOLS};
	float *x = malloc(NB * NCOLS * sizeof *x);
	test_seed(42);
	for (int i = 0; i < NB * NCOLS; i++)
		x[i] = test_uniform(-1, 1);
	starnn_tensor *a = test_tensor("a", 2, shape, x), *b = test_tensor("b", 2, shape, NULL);
	starnn_tensor *c = test_tensor("c", 2, shape, NULL);
	starnn_tensor **pa, **pb, **pc;
	TEST_OK(starnn_tensor_split(a, 0, 4, NULL, &pa));
	TEST_OK(starnn_tensor_split(b, 0, 4, NULL, &pb));
	TEST_OK(starnn_tensor_split(c, 0, 4, NULL, &pc));
	for (int step = 0; step < 5; step++) {
		for (int p = 0; p < 4; p++) {
			TEST_OK(starnn_add(0.5f, pa[p], 1.5f, pb[p], pc[p]));
			TEST_OK(starnn_scale(0.75f, pa[p]));
			TEST_OK(starnn_axpy(1.0f, pc[p], pb[p]));
		}
		TEST_OK(starnn_axpy(-0.25f, b, a)); /* whole-tensor task between part tasks */
	}
	TEST_OK(starnn_tensor_read(a, out));
	starnn_tensor_destroy(a);
	starnn_tensor_destroy(b);
	starnn_tensor_destroy(c);
	free(x);
}

int main(void)
{
	struct starpu_sched_policy **policies = starpu_sched_get_predefined_policies();
	float ref[NB * NCOLS], got[NB * NCOLS];
	int first = 1, npolicies = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, watchdog);
	for (int i = 0; policies[i]; i++) {
		const char *name = policies[i]->policy_name;
		current_policy = name;
		alarm(60);
		struct starnn_config cfg;
		starnn_config_init(&cfg);
		cfg.sched = name;
		cfg.quiet = 1;
		/* STARPU_SCHED in the environment would override the policy. */
		unsetenv("STARPU_SCHED");
		int rc = starnn_init(&cfg);
		if (rc < 0) {
			fprintf(stderr, "FAIL %s: starnn_init: %s\n", name, starnn_last_error());
			test_failures++;
			continue;
		}
		run_graph(first ? ref : got);
		if (!first) {
			char what[64];
			snprintf(what, sizeof what, "graph under %s", name);
			test_close(what, got, ref, NB * NCOLS, 0, 0);
		}
		first = 0;
		npolicies++;
		rc = starnn_shutdown();
		TEST_ASSERT(rc == 0, "%s: shutdown: %s", name, starnn_last_error());
		alarm(0);
		printf("%-16s ok\n", name);
	}
	TEST_ASSERT(npolicies >= 10, "only %d scheduling policies ran", npolicies);
	printf("%s: %d policies, %d checks, %d failed\n", test_failures ? "FAIL" : "PASS", npolicies, test_checks,
	       test_failures);
	return test_failures ? 1 : 0;
}
