#!/bin/sh
# tests/runtime/allreduce under mpirun with 2, 3 and 4 ranks (one CPU
# worker each, oversubscribed on this 2-core machine), then alone (one
# rank). Skips (77) without StarPU-MPI or without mpirun. --bind-to none:
# starnn gives the ranks their cores itself (runtime/train/dist.c).
set -u
bin=${top_builddir:-.}/tests/runtime/allreduce
"$bin" --has-mpi || { echo "SKIP: starnn was built without StarPU-MPI"; exit 77; }
command -v mpirun > /dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 STARPU_NCPU=1 STARPU_NCUDA=0
status=0
for np in 2 3 4; do
	echo "== mpirun -np $np"
	if ! timeout 120 mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,tcp "$bin"; then
		echo "FAIL: $np ranks"
		status=1
	fi
done
echo "== one rank, no mpirun"
"$bin" || { echo "FAIL: one rank"; status=1; }
exit $status
