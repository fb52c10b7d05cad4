#!/bin/bash
# models/unet train with OpenCL devices beside the CPU (docs/opencl.md):
# one and two POCL devices (POCL_DEVICES="pthread pthread"), one CPU
# worker, 2 micro-batches, 20 SGD steps at 32x32, fp32. StarPU places the
# tasks; the weights are replicated to the devices by StarPU and the
# gradients reduced in starnn's fixed order, so the only differences from
# the CPU-only run are the summation orders of the kernels that are not
# the CPU's bits (gemm on CLBlast, the direct convolutions).
#
# The bound: each step's loss must lie within 8 times the envelope that a
# legitimate change of summation order on the CPU alone opens by that step
# (the same run with 1 micro-batch instead of 2: other weight-gradient and
# batch-norm sums; E_k = max over steps j <= k of |loss_j(1 mb) -
# loss_j(2 mb)|), plus 4 ulps of fp32 (2^-21 relative) for the steps before
# the paths part. This is not a bound derived operation by operation (the
# training path amplifies rounding differences, step after step, by factors
# that depend on the data), but it measures the amplification of this very
# configuration in the same run; a kernel with a real error (a wrong index,
# a lost beta) moves the loss by orders of magnitude more. The runs also
# check that the devices ran tasks (STARPU_WORKER_STATS) and that the
# losses are bit for bit the CPU's where that is what the line says.
# Skips (77) without OpenCL kernels or without an OpenCL CPU device.
set -u
top=${top_builddir:-.}
unet=$top/models/unet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
export STARNN_QUIET=1 STARPU_SILENT=1

grep -q '^  OpenCL kernels: yes' "$top/config.summary" 2>/dev/null || { echo "SKIP: built without OpenCL"; exit 77; }
if ! out=$(env STARPU_HOME="$tmp/home-probe" STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 \
	"$top/models/mlp" --steps 1 --quiet 2>&1); then
	echo "SKIP: no OpenCL CPU device here ($out)"
	exit 77
fi

common=(train --size 32 --depth 2 --filters 4 --batch 4 --samples 32 --steps 20 --optimizer sgd --lr 0.01
	--eval-every 0 --progress off --log-every 1)
# run NAME ENV... -- ARGS...: the losses of every step (9 digits, from --log-json) into $tmp/NAME.loss
run() {
	local name=$1 env=() out
	shift
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	local rc
	out=$(env STARPU_HOME="$tmp/home-$name" STARPU_WORKER_STATS=1 "${env[@]}" "$unet" "${common[@]}" \
		--log-json "$tmp/$name.jsonl" "$@" 2>&1)
	rc=$?
	[ $rc = 0 ] || { echo "$out" | tail -n 20; fail "$name: exit $rc"; return 1; }
	grep -o '"step":[0-9]*,"epoch":[0-9]*,"loss":[^,]*' "$tmp/$name.jsonl" | sed 's/.*"loss"://' > "$tmp/$name.loss"
	echo "$out" > "$tmp/$name.out"
	[ "$(wc -l < "$tmp/$name.loss")" = 20 ] || fail "$name: $(wc -l < "$tmp/$name.loss") losses, expected 20"
}
run cpu STARPU_NCPU=2 -- --micro-batches 2 || exit 1
run cpu1mb STARPU_NCPU=2 -- --micro-batches 1 || exit 1
run dev1 STARPU_NCPU=1 STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 -- --micro-batches 2
run dev2 STARPU_NCPU=1 STARPU_NOPENCL=2 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 \
	POCL_DEVICES="pthread pthread" STARPU_SCHED=dmdas -- --micro-batches 2

# check NAME DEVICES: the devices ran tasks; the losses within the envelope
check() {
	local name=$1 ndev=$2 busy verdict
	[ -s "$tmp/$name.loss" ] || return
	busy=$(grep -A1 '^OpenCL [01] ' "$tmp/$name.out" | grep -cE '^[[:space:]]*[1-9][0-9]* task')
	grep -A1 '^OpenCL [01] ' "$tmp/$name.out" | grep -E 'task' | sed "s/^/[$name] /"
	[ "$busy" = "$ndev" ] || fail "$name: $busy of $ndev OpenCL devices ran tasks"
	verdict=$(paste "$tmp/cpu.loss" "$tmp/cpu1mb.loss" "$tmp/$name.loss" | awk '
		function abs(x) { return x < 0 ? -x : x }
		{ e = abs($2 - $1); if (e > env) env = e
		  b = 8 * env + abs($1) * 4.76837158203125e-07; d = abs($3 - $1); if (d > b) bad = 1
		  if (d / (b > 0 ? b : 1) > worst) worst = d / (b > 0 ? b : 1)
		  printf "step %d: cpu %s, 1 mb %s, %s %s, |d| %.3g, bound %.3g\n", NR, $1, $2, NAME, $3, d, b }
		END { printf "%s\n", bad ? "OUTSIDE" : (worst == 0 ? "BITWISE" : sprintf("WITHIN (at most %.2f of the bound)", worst)) }' NAME="$name")
	echo "$verdict" | sed "s/^/[$name] /"
	case $(tail -n 1 <<< "$verdict") in
	OUTSIDE) fail "$name: a loss is outside the bound" ;;
	esac
}
cmp -s "$tmp/cpu.loss" "$tmp/cpu1mb.loss" && echo "(the 1 micro-batch run is the 2 micro-batch one's bits: the envelope is 4 ulps)"
check dev1 1
check dev2 2
[ $status = 0 ] && echo "PASS"
exit $status
