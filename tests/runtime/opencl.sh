#!/bin/bash
# OpenCL devices asked for and absent, and a model on one (docs/opencl.md):
#   - STARPU_NOPENCL=1 where no OpenCL platform exists (ocl-icd told to
#     look in an empty directory), with POCL's CPU device but without
#     STARPU_OPENCL_ON_CPUS=1, or more devices than there are, or in a
#     build without OpenCL: models/mlp exits 1 with a message that says
#     what was asked, what StarPU started and why, and writes no
#     checkpoint;
#   - the operations' OpenCL tests (tests/codelets/*_opencl) on two POCL
#     devices (POCL_DEVICES="pthread pthread", STARPU_NOPENCL=2): their
#     tasks spread over both, the data moving between the two device
#     nodes; they pass as on one (and in one of them at least, both
#     devices ran tasks: the scheduler decides);
#   - models/mlp (fp32, amp-bf16, amp-fp16; 30 steps, 2 micro-batches)
#     with one OpenCL worker on POCL's CPU device: the losses equal the
#     CPU-only run's bit for bit where the device ran only operations whose
#     OpenCL kernels are the CPU kernels' bits (axpy, fill, copy, convert);
#     gemm's are not (CLBlast sums in another order than OpenBLAS), so each
#     printed loss must be within a relative 1e-5 of the CPU run's, or one
#     unit of its last printed digit (the runs seen differ in the 8th
#     digit; a wrong kernel moves the loss by far more), and the line says
#     whether they were bit for bit.
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

	both=0
	for t in "$top"/tests/codelets/*_opencl; do
		[ -x "$t" ] || continue
		out=$(STARPU_HOME="$tmp/home-two" POCL_DEVICES="pthread pthread" STARPU_NOPENCL=2 STARPU_OPENCL_ON_CPUS=1 \
			STARPU_OPENCL_ONLY_ON_CPUS=1 STARPU_WORKER_STATS=1 "$t" 2>&1)
		rc=$?
		[ $rc = 77 ] && continue # (an operation without OpenCL kernels yet)
		busy=$(grep -A1 '^OpenCL [01] ' <<< "$out" | grep -cE '^[[:space:]]*[1-9][0-9]* task')
		echo "[two devices] ${t##*/}: exit $rc, $busy of 2 devices ran tasks; $(tail -n 1 <<< "$out")"
		[ $rc = 0 ] || { echo "$out" | tail -n 20; fail "${t##*/} on two OpenCL devices: exit $rc"; }
		[ "$busy" != 2 ] || both=$((both + 1))
	done
	[ $both -gt 0 ] || fail "on two OpenCL devices, no test had both run tasks"

	losses() { grep -E '^step .*loss|^final' <<< "$1" | sed 's/ *[0-9.]* samples\/s.*//; s/ in [0-9.]* s .*//'; }
	# close_losses CPU DEV: the same lines, word for word, but numbers within a relative 1e-5 (or one
	# unit of their last printed digit)
	close_losses() {
		awk -v tol=1e-5 'NR == FNR { a[FNR] = $0; n = FNR; next }
			{ m = FNR; na = split(a[FNR], x, " "); nb = split($0, y, " "); if (na != nb) bad = 1
			  for (i = 1; i <= na && !bad; i++) {
				if (x[i] == y[i]) continue
				u = x[i]; v = y[i]; gsub(/[,()]/, "", u); gsub(/[,()]/, "", v)
				if (u !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ || v !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { bad = 1; break }
				d = u - v; if (d < 0) d = -d; r = u < 0 ? -u : u
				# (a number printed with few digits may round either way: one unit of its last digit)
				q = u; sub(/e.*/, "", q); dec = index(q, ".") ? length(q) - index(q, ".") : 0
				if (d > tol * r && d > 10 ^ -dec * 1.0000001) bad = 1
			  } }
			END { exit (bad || n != m) }' <(echo "$1") <(echo "$2")
	}
	for p in fp32 amp-bf16 amp-fp16; do
		common=(--steps 30 --micro-batches 2 --log-every 10 --precision "$p" --seed 5)
		cpu=$(STARPU_HOME="$tmp/home-cpu" STARNN_MLP_EXACT=1 "$mlp" "${common[@]}" 2>&1) || fail "$p: the CPU run failed: $cpu"
		dev=$(STARPU_HOME="$tmp/home-dev" STARNN_MLP_EXACT=1 STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 \
			STARPU_OPENCL_ONLY_ON_CPUS=1 STARPU_WORKER_STATS=1 "$mlp" "${common[@]}" 2>&1) ||
			fail "$p: the run with an OpenCL worker failed: $dev"
		echo "[$p] CPU:"; losses "$cpu"
		echo "[$p] CPU + OpenCL:"; losses "$dev"
		grep -A1 '^OpenCL 0' <<< "$dev"
		if [ -z "$(losses "$cpu")" ]; then
			fail "$p: the CPU run printed no losses"
		elif [ "$(losses "$cpu")" = "$(losses "$dev")" ]; then
			echo "[$p] the losses with an OpenCL worker: the CPU-only run's bit for bit"
		elif close_losses "$(losses "$cpu")" "$(losses "$dev")"; then
			echo "[$p] the losses with an OpenCL worker: within a relative 1e-5 of the CPU-only run's, not bit for bit"
		else
			fail "$p: the losses with an OpenCL worker differ from the CPU-only run's by more than a relative 1e-5"
		fi
	done
fi
[ $status = 0 ] && echo "PASS"
exit $status
