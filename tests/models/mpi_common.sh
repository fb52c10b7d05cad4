# Sourced by the MPI shell tests (tests/models/*_mpi*.sh): skips (77)
# without StarPU-MPI or mpirun; mpirun as root, oversubscribed, over TCP,
# one CPU worker per rank; $top, $MPIRUN, a temporary directory $tmp
# removed at exit, and status=0.
top=$(cd "${top_builddir:-.}" && pwd)
"$top/tests/runtime/allreduce" --has-mpi || { echo "SKIP: starnn was built without StarPU-MPI"; exit 77; }
command -v mpirun > /dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export STARPU_NCPU=1 STARPU_NCUDA=0
# The tests compare N ranks with one rank running as many micro-batches,
# bit for bit: one rank must then take every weight gradient per
# micro-batch, as the ranks do (codelets/conv2d.h:
# starnn_conv2d_wgrad_whole; on the whole batch the wide layers' sums run
# in another order).
export STARNN_CONV2D_WGRAD_WHOLE=off
MPIRUN="mpirun --oversubscribe --bind-to none --mca btl self,tcp"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# rank_pids LAUNCHER PROGRAM: the PIDs of LAUNCHER's children that run
# PROGRAM (by the executable's name, not the process name, which Open MPI's
# launch may leave as "exe": seen on an Intel Xeon VM), space-separated.
rank_pids() {
	for p in $(pgrep -P "$1"); do
		exe=$(readlink "/proc/$p/exe" 2> /dev/null) || continue
		case ${exe##*/} in "$2" | "lt-$2") printf '%s ' "$p" ;; esac
	done
}
