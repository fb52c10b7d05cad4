/* One small task graph (a reduction tree of axpy / scale / add over
 * micro-batches, with partitioning) gives bit-identical results under every
 * scheduling policy this StarPU ships. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codelets/axpy.h"
#include "tests/testlib.h"

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

/* Runs the graph under one policy in a child process (StarPU starts and
 * stops there), returning its result through a pipe: 0 done, 1 failed,
 * 2 stalled. StarPU 1.3.10's modular-heteroprio-heft has been seen to
 * deadlock inside its own components (both workers blocked on scheduler
 * mutexes), rarely and only on a loaded machine: a stall is killed after
 * STALL_SECONDS and the policy tried once more; a second stall fails. */
#define STALL_SECONDS 60

static int run_policy(const char *name, float *out)
{
	int fd[2];
	if (pipe(fd) != 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(fd[0]);
		struct starnn_config cfg;
		starnn_config_init(&cfg);
		cfg.sched = name;
		cfg.quiet = 1;
		unsetenv("STARPU_SCHED"); /* it would override the policy */
		if (starnn_init(&cfg) < 0) {
			fprintf(stderr, "FAIL %s: starnn_init: %s\n", name, starnn_last_error());
			_exit(1);
		}
		run_graph(out);
		int rc = starnn_shutdown();
		if (rc < 0 || test_failures) {
			fprintf(stderr, "FAIL %s: %s\n", name, rc < 0 ? starnn_last_error() : "checks failed");
			_exit(1);
		}
		ssize_t n = write(fd[1], out, sizeof(float) * NB * NCOLS);
		_exit(n == (ssize_t)(sizeof(float) * NB * NCOLS) ? 0 : 1);
	}
	close(fd[1]);
	int status = 0;
	time_t start = time(NULL);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (time(NULL) - start > STALL_SECONDS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(fd[0]);
			return 2;
		}
		usleep(20000);
	}
	size_t want = sizeof(float) * NB * NCOLS, got = 0;
	while (got < want) {
		ssize_t n = read(fd[0], (char *)out + got, want - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd[0]);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == want ? 0 : 1;
}

int main(void)
{
	struct starpu_sched_policy **policies = starpu_sched_get_predefined_policies();
	static float ref[NB * NCOLS], got[NB * NCOLS];
	int first = 1, npolicies = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; policies[i]; i++) {
		const char *name = policies[i]->policy_name;
		int rc = run_policy(name, first ? ref : got);
		if (rc == 2) {
			printf("%-16s stalled for %d s: trying once more\n", name, STALL_SECONDS);
			rc = run_policy(name, first ? ref : got);
		}
		test_checks++;
		if (rc != 0) {
			fprintf(stderr, "FAIL %s: %s\n", name, rc == 2 ? "stalled twice" : "failed");
			test_failures++;
			continue;
		}
		if (!first) {
			char what[64];
			snprintf(what, sizeof what, "graph under %s", name);
			test_close(what, got, ref, NB * NCOLS, 0, 0);
		}
		first = 0;
		npolicies++;
		printf("%-16s ok\n", name);
	}
	TEST_ASSERT(npolicies >= 10, "only %d scheduling policies ran", npolicies);
	printf("%s: %d policies, %d checks, %d failed\n", test_failures ? "FAIL" : "PASS", npolicies, test_checks,
	       test_failures);
	return test_failures ? 1 : 0;
}
