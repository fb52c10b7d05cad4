/* What a model sees of its replicas (see replica.h): the collectives of
 * runtime/train/dist.h under the names of what they do for a model. */
#include "codelets/fill.h"
#include "runtime/core/launch.h"
#include "runtime/train/dist.h"
#include "runtime/train/replica.h"

int starnn_replicas(void)
{
	return starnn_launch_size();
}

void starnn_replica_share(int64_t n, int64_t *begin, int64_t *count)
{
	starnn_dist_share(n, starnn_launch_rank(), starnn_launch_size(), begin, count);
}

int starnn_replica_sum(starnn_tensor *t)
{
	return starnn_dist_allreduce(t);
}

int starnn_replica_sum_with(starnn_tensor *t, starnn_replica_add_fn add)
{
	return starnn_dist_allreduce_with(t, add);
}

int starnn_replica_sum_doubles(double *v, int n)
{
	return starnn_dist_sum_doubles(v, n);
}

starnn_tensor *starnn_replica_part(starnn_tensor *all, int k, int p)
{
	return all->parts[starnn_launch_rank() * k + p];
}

int starnn_replica_gather(starnn_tensor *all, int k)
{
	int rank = starnn_launch_rank(), n = starnn_launch_size() * k;
	if (starnn_launch_size() == 1)
		return 0;
	if (all->nparts != n)
		return starnn_error(STARNN_EINVAL, "replica_gather: %s has %d parts, not %d replicas x %d", all->name,
		                    all->nparts, starnn_launch_size(), k);
	for (int q = 0; q < n; q++)
		if (q / k != rank)
			STARNN_CHECK(starnn_fill(0.0f, all->parts[q]));
	return starnn_dist_allreduce(all);
}
