/* Placement and edges of the submit layer.
 *  - Tasks placed on the memory node of the CPUs run there; a node without
 *    workers is refused with STARNN_ENODEV, not hung.
 *  - The edge hook is called when a placed consumer reads a tensor whose
 *    producer was placed on another node, and what it returns is read
 *    instead. With one memory node on this machine, the producer's node is
 *    set by hand to stand for "produced on node 1" (on a GPU machine a
 *    placed producer sets it). */
#include "codelets/axpy.h"
#include "tests/testlib.h"

struct edge_log {
	int calls, from, to;
	starnn_tensor *copy;
};

/* An edge that hands the consumer a doubled copy: the consumer's result
 * shows whether the replacement was used. */
static int doubling_edge(void *ctx, starnn_tensor *t, int from, int to, starnn_tensor **repl)
{
	struct edge_log *log = ctx;
	log->calls++;
	log->from = from;
	log->to = to;
	int saved = starnn_get_placement();
	starnn_set_placement(STARNN_ANYWHERE); /* the edge's own tasks: no recursion */
	STARNN_CHECK(starnn_add(2.0f, t, 0.0f, t, log->copy));
	starnn_set_placement(saved);
	*repl = log->copy;
	return 0;
}

int main(void)
{
	test_init();
	int nodes[8];
	int nnodes = starnn_memory_nodes(nodes, 8);
	TEST_ASSERT(nnodes >= 1 && nodes[0] == STARPU_MAIN_RAM, "memory nodes: %d, first %d", nnodes, nodes[0]);

	int64_t shape[2] = {4, 33};
	float *x = test_random(4 * 33, -1, 1);
	starnn_tensor *a = test_tensor("a", 2, shape, x), *b = test_tensor("b", 2, shape, NULL);
	struct edge_log log = {0};
	log.copy = test_tensor("a.wire", 2, shape, NULL);

	/* Placed on the CPUs' node: runs, and records where it wrote. */
	starnn_set_placement(STARPU_MAIN_RAM);
	TEST_OK(starnn_scale(1.0f, a));
	TEST_ASSERT(a->node == STARPU_MAIN_RAM, "writer node recorded: %d", a->node);

	/* A node with no worker. */
	starnn_set_placement(57);
	TEST_ASSERT(starnn_scale(1.0f, a) == STARNN_ENODEV, "node 57 refused");
	TEST_ASSERT(strstr(starnn_last_error(), "memory node 57") != NULL, "message: %s", starnn_last_error());

	/* Same node: no edge. */
	starnn_set_edge_hook(doubling_edge, &log);
	starnn_set_placement(STARPU_MAIN_RAM);
	TEST_OK(starnn_axpy(1.0f, a, b));
	TEST_ASSERT(log.calls == 0, "no edge between tasks on one node (%d calls)", log.calls);

	/* "Produced on node 1", consumed on node 0: the edge runs once. */
	a->node = 1;
	TEST_OK(starnn_axpy(1.0f, a, b)); /* b = a + 2a */
	TEST_ASSERT(log.calls == 1 && log.from == 1 && log.to == STARPU_MAIN_RAM, "edge 1 -> 0 (%d calls, %d -> %d)",
	            log.calls, log.from, log.to);
	/* Unplaced consumers never trigger edges. */
	starnn_set_placement(STARNN_ANYWHERE);
	TEST_OK(starnn_scale(1.0f, b));
	TEST_ASSERT(log.calls == 1, "no edge for unplaced tasks");
	TEST_ASSERT(b->node == STARNN_ANYWHERE, "unplaced writer resets node");
	starnn_set_edge_hook(NULL, NULL);

	float *got = test_read(b);
	float *ref = malloc(4 * 33 * sizeof *ref);
	for (int i = 0; i < 4 * 33; i++)
		ref[i] = x[i] + 2.0f * x[i];
	test_close("edge replacement used", got, ref, 4 * 33, 1e-6f, 0);

	starnn_tensor_destroy(a), starnn_tensor_destroy(b), starnn_tensor_destroy(log.copy);
	free(x), free(got), free(ref);
	return test_finish();
}
