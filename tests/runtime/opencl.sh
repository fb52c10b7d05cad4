#!/bin/bash
# OpenCL devices asked for and absent, and a model on one (docs/opencl.md):
#   - STARPU_NOPENCL=1 where no OpenCL platform exists (ocl-icd told to
#     look in an empty directory), with POCL's CPU device but without
#     STARPU_OPENCL_ON_CPUS=1, or more devices than there are, or in a
#     build without OpenCL: models/mlp exits 1 with a message that says
#     what was asked, what StarPU started and why, and writes no
#     checkpoint;
#   - the operations' OpenCL tests (tests/codelets/*_opencl, but the
#     convolutions': see below) on two POCL devices (POCL_DEVICES="pthread pthread", STARPU_NOPENCL=2): their
#     tasks spread over both, the data moving between the two device
#     nodes; they pass as on one (and in one of them at least, both
#     devices ran tasks: the scheduler decides); only with
#     STARNN_TEST_OPENCL_OPS=all (the default, one-device, leaves this
#     repeat out: the models below, tests/models/unet_opencl.sh and
#     tests/runtime/device_edge.sh run a training step's operations on two);
#   - models/mlp (fp32, amp-bf16, amp-fp16; 30 steps, 2 micro-batches)
#     with one OpenCL worker on POCL's CPU device beside a CPU worker (the
#     device must run tasks), and with two beside one CPU worker: the losses equal the CPU-only run's bit for
#     bit, or, since gemm and the 16-bit roundings after it are not the CPU's
#     bits on the device (CLBlast sums in another order than OpenBLAS),
#     each step's loss lies within 8 times the envelope that the CPU-only
#     run with 1 micro-batch instead of 2 (a legitimate reordering of the
#     same sums) opens by that step, plus 4 ulps of fp32
#     (tests/models/unet_opencl.sh says why that bound); the line says which.
# Each run has its own StarPU home (their buses differ from the suite's).
# Skips (77) the POCL parts where there is no OpenCL CPU device.
set -u
top=${top_builddir:-.}
mlp=$top/models/mlp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
export STARNN_QUIET=1

# run NAME EXPECTED-TEXT ENV... : mlp must exit 1, say EXPECTED-TEXT, write no checkpoint
refused() {
	local name=$1 want=$2 out rc
	shift 2
	out=$(env STARPU_HOME="$tmp/home-$name" "$@" "$mlp" --steps 2 --checkpoint "$tmp/$name.h5" 2>&1)
	rc=$?
	echo "[$name] exit $rc: $out"
	[ $rc = 1 ] || fail "$name: exit $rc, expected 1"
	grep -qF -- "$want" <<< "$out" || fail "$name: the message does not say '$want'"
	[ ! -e "$tmp/$name.h5" ] || fail "$name: a checkpoint was written"
}

opencl=no
grep -q '^  OpenCL kernels: yes' "$top/config.summary" 2>/dev/null && opencl=yes
if [ $opencl = no ]; then
	refused nobuild "built without OpenCL" STARPU_NOPENCL=1
	echo "this starnn has no OpenCL: the rest skipped"
	exit $status
fi
mkdir -p "$tmp/no-icd"
refused noplatform "no OpenCL platform" STARPU_NOPENCL=1 OCL_ICD_VENDORS="$tmp/no-icd"

# POCL's CPU device (any CPU OpenCL device will do)
pocl=no
if out=$(env STARPU_HOME="$tmp/home-probe" STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 \
	"$mlp" --steps 1 --quiet 2>&1); then
	pocl=yes
else
	echo "no OpenCL CPU device here ($out): the POCL parts skipped"
fi
if [ $pocl = yes ]; then
	# POCL's platform alone (its ICD file): its CPU device, left out
	icd=$(grep -l pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -n 1)
	if [ -n "$icd" ]; then
		mkdir -p "$tmp/pocl-icd" && cp "$icd" "$tmp/pocl-icd/"
		refused nocpus "STARPU_OPENCL_ON_CPUS=1" STARPU_NOPENCL=1 OCL_ICD_VENDORS="$tmp/pocl-icd"
	else
		echo "no POCL ICD file in /etc/OpenCL/vendors: the case without STARPU_OPENCL_ON_CPUS skipped"
	fi
	refused toomany "asks for 9 OpenCL worker(s), StarPU started" STARPU_NOPENCL=9 STARPU_OPENCL_ON_CPUS=1 \
		STARPU_OPENCL_ONLY_ON_CPUS=1

	# only with STARNN_TEST_OPENCL_OPS=all (not by default: see the header)
	both=0
	ops=${STARNN_TEST_OPENCL_OPS:-one-device}
	case $ops in all | one-device | off) ;; *) fail "STARNN_TEST_OPENCL_OPS='$ops': expected all, one-device or off"; ops=all ;; esac
	[ "$ops" = all ] || echo "STARNN_TEST_OPENCL_OPS=$ops: the operations' tests on two devices left out"
	for t in "$top"/tests/codelets/*_opencl; do
		[ "$ops" = all ] || break
		[ -x "$t" ] || continue
		# (the convolutions' tests are the suite's longest on POCL, a minute each; they run on
		# one device as tests/codelets/conv2d_opencl and convt2d_opencl, and on two inside
		# tests/models/unet_opencl.sh's training runs)
		case ${t##*/} in conv2d_opencl | convt2d_opencl) continue ;; esac
		out=$(STARPU_HOME="$tmp/home-two" POCL_DEVICES="pthread pthread" STARPU_NOPENCL=2 STARPU_OPENCL_ON_CPUS=1 \
			STARPU_OPENCL_ONLY_ON_CPUS=1 STARPU_WORKER_STATS=1 "$t" 2>&1)
		rc=$?
		[ $rc = 77 ] && continue # (an operation without OpenCL kernels yet)
		busy=$(grep -A1 '^OpenCL [01] ' <<< "$out" | grep -cE '^[[:space:]]*[1-9][0-9]* task')
		echo "[two devices] ${t##*/}: exit $rc, $busy of 2 devices ran tasks; $(tail -n 1 <<< "$out")"
		[ $rc = 0 ] || { echo "$out" | tail -n 20; fail "${t##*/} on two OpenCL devices: exit $rc"; }
		[ "$busy" != 2 ] || both=$((both + 1))
	done
	[ $both -gt 0 ] || [ "$ops" != all ] || fail "on two OpenCL devices, no test had both run tasks"

	# the losses of every step, all their digits (STARNN_MLP_EXACT)
	losses() { grep -E '^step .*loss' <<< "$1" | sed 's/.*loss //; s/ .*//'; }
	# envelope CPU CPU1MB DEV: each step's DEV loss within 8 times the envelope that the CPU run
	# with 1 micro-batch opens by that step (max |1 mb - 2 mb| over the steps so far) plus 4 ulps
	# of fp32; prints the worst share of the bound (tests/models/unet_opencl.sh says why)
	envelope() {
		paste <(echo "$1") <(echo "$2") <(echo "$3") | awk '
			function abs(x) { return x < 0 ? -x : x }
			{ e = abs($2 - $1); if (e > env) env = e
			  b = 8 * env + abs($1) * 4.76837158203125e-07; d = abs($3 - $1)
			  if (d > b) bad = 1; if (b > 0 && d / b > worst) worst = d / b; n++ }
			END { printf "%d steps, at most %.3f of the bound\n", n, worst; exit (bad || n == 0) }'
	}
	for p in fp32 amp-bf16 amp-fp16; do
		common=(--steps 30 --log-every 1 --precision "$p" --seed 5)
		cpu=$(STARPU_HOME="$tmp/home-cpu" STARNN_MLP_EXACT=1 "$mlp" "${common[@]}" --micro-batches 2 2>&1) ||
			fail "$p: the CPU run failed: $cpu"
		cpu1=$(STARPU_HOME="$tmp/home-cpu" STARNN_MLP_EXACT=1 "$mlp" "${common[@]}" --micro-batches 1 2>&1) ||
			fail "$p: the CPU run with 1 micro-batch failed: $cpu1"
		dev=$(STARPU_HOME="$tmp/home-dev" STARNN_MLP_EXACT=1 STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 \
			STARPU_OPENCL_ONLY_ON_CPUS=1 STARPU_WORKER_STATS=1 "$mlp" "${common[@]}" --micro-batches 2 2>&1) ||
			fail "$p: the run with an OpenCL worker failed: $dev"
		dev2=$(STARPU_HOME="$tmp/home-dev2" STARNN_MLP_EXACT=1 STARPU_NOPENCL=2 STARPU_OPENCL_ON_CPUS=1 \
			STARPU_OPENCL_ONLY_ON_CPUS=1 POCL_DEVICES="pthread pthread" STARPU_NCPU=1 STARPU_WORKER_STATS=1 \
			"$mlp" "${common[@]}" --micro-batches 2 2>&1) || fail "$p: the run with two OpenCL workers failed: $dev2"
		echo "[$p] CPU, CPU with 1 micro-batch, CPU + OpenCL (every 10th step):"
		paste <(losses "$cpu") <(losses "$cpu1") <(losses "$dev") | awk 'NR % 10 == 0'
		grep -A1 '^OpenCL 0' <<< "$dev"
		grep -A1 '^OpenCL 0' <<< "$dev" | grep -qE '^[[:space:]]*[1-9][0-9]* task' ||
			fail "$p: the OpenCL worker ran no task"
		[ -n "$(losses "$cpu")" ] || fail "$p: the CPU run printed no losses"
		for run in dev dev2; do
			what="an OpenCL worker"; [ $run = dev2 ] && what="two OpenCL workers"
			if [ "$(losses "$cpu")" = "$(losses "${!run}")" ]; then
				echo "[$p] the losses with $what: the CPU-only run's bit for bit"
			elif v=$(envelope "$(losses "$cpu")" "$(losses "$cpu1")" "$(losses "${!run}")"); then
				echo "[$p] the losses with $what: within the envelope, not bit for bit ($v)"
			else
				fail "$p: the losses with $what lie outside the envelope of the CPU's reordering ($v)"
			fi
		done
		busy=$(grep -A1 '^OpenCL [01] ' <<< "$dev2" | grep -cE '^[[:space:]]*[1-9][0-9]* task')
		echo "[$p] two OpenCL workers: $busy of 2 ran tasks"
	done
fi
[ $status = 0 ] && echo "PASS"
exit $status
