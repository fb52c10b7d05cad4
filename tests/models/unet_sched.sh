#!/bin/sh
# models/unet trains under every scheduling policy this StarPU ships (the
# list StarPU prints for STARPU_SCHED=help): a tiny UNet, 4 steps, 2 CPU
# workers, 2 micro-batches; every policy must give the same losses as the
# default one, bit for bit (same graph, same kernels, same summation order);
# so must the default policy with priorities off (STARNN_PRIORITIES). In a
# sanitizer build, seven representative policies (below).
# modular-heteroprio-heft runs where StarPU has the fix of
# tools/dev/starpu-patches/0002 (see below), on uncalibrated models too.
set -u
B=${top_builddir:-.}
unet=$B/models/unet
help=$(STARPU_SCHED=help "$B/models/mlp" --steps 1 --quiet 2>&1)
policies=$(echo "$help" | sed -n 's/^\([a-z][a-z0-9_-]*\) *\t*-> .*/\1/p')
n=$(echo "$policies" | wc -w)
if [ "$n" -lt 10 ]; then
	echo "FAIL: only $n policies listed by STARPU_SCHED=help"
	exit 1
fi
# A run normally takes about a second; one that does not end is stopped
# after 60 s and tried once more, and a second stall fails the test. (The
# stalls seen here were modular-heteroprio-heft's, whose cause is below;
# its run from no models is not retried.)
#
# History-based models: StarPU 1.3.10's modular-heteroprio-heft, as
# released, livelocks when some of them are not calibrated yet (its
# heteroprio component never places a task without an estimate; see below).
# A user calibrates first, as StarPU's documentation advises for
# model-based policies (README: Calibrating the performance models); so
# does this test: in a
# STARPU_HOME of its own (the bus calibration copied from the shared one),
# 80 steps under dmda with STARPU_CALIBRATE=1 give every footprint its 10
# measurements, then every policy runs on those models. (starnn widens
# STARPU_HISTORY_MAX_ERROR, so that StarPU does not empty the history of a
# microsecond task whose times vary by more than 50% on a busy machine:
# that made a CI run stall here after its first step.) Each run starts from
# a copy of the calibrated models: the model-based policies go on recording
# the footprints that have fewer than 10 measurements (the first step's
# packing tasks) and save them at exit, so without the copy each policy
# would run on the models the policies before it left, and the order of
# the policies would matter: before the calibration of the packing tasks
# below, modular-heteroprio-heft ran on the first step's uncalibrated packing
# tasks only because the model-based policies listed before it had added
# their measurements, and a CI run under the sanitizers stalled there.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
[ -d "${STARPU_HOME:-$HOME}/.starpu" ] && cp -r "${STARPU_HOME:-$HOME}/.starpu" "$home/"
export STARPU_HOME=$home
args="--size 16 --depth 1 --filters 2 --batch 4 --micro-batches 2 --samples 16 --eval-every 0 --progress off"
STARPU_SCHED=dmda STARPU_CALIBRATE=1 STARPU_SILENT=1 STARPU_NCPU=2 STARPU_NCUDA=0 timeout -k 5 120 "$unet" train $args \
	--steps 80 --quiet > "$home/calibrate.log" 2>&1 ||
	{ echo "FAIL: calibration run under dmda:"; cat "$home/calibrate.log"; exit 1; }
# The weights' packing tasks run in a run's first step only (then the
# optimizer keeps the packed copies current: codelets/copy.h), one
# measurement per run; with packing tasks in every step
# (STARNN_CONV2D_PACK=tasks, the same tasks and footprints) 12 steps give
# them their 10.
STARNN_CONV2D_PACK=tasks STARPU_SCHED=dmda STARPU_CALIBRATE=1 STARPU_SILENT=1 STARPU_NCPU=2 STARPU_NCUDA=0 \
	timeout -k 5 120 "$unet" train $args --steps 12 --quiet > "$home/calibrate.log" 2>&1 ||
	{ echo "FAIL: calibration run of the packing tasks:"; cat "$home/calibrate.log"; exit 1; }
cp -r "$home/.starpu" "$home/calibrated"
# The losses of a run, "step loss" lines; its exit status in $home/rc (a
# sanitizer build's leak report comes after the losses: only the status
# tells; 124 / 137: stopped by timeout).
# $1: the models to start from (default: the calibrated ones).
run() {
	rm -rf "$home/.starpu" && cp -r "${1:-$home/calibrated}" "$home/.starpu"
	STARPU_NCPU=2 STARPU_NCUDA=0 timeout -k 5 60 "$unet" train $args --steps 4 --log-every 1 > "$home/run.out" 2>&1
	echo $? > "$home/rc"
	sed -n 's/^step \([0-9]*\)\/.* loss \([0-9.]*\).*/\1 \2/p' "$home/run.out"
}
ref=$(unset STARPU_SCHED; run)
[ "$(echo "$ref" | wc -l)" = 4 ] && [ "$(cat "$home/rc")" = 0 ] ||
	{ echo "FAIL: default policy: exit $(cat "$home/rc"), $(echo "$ref" | grep -c .) losses"; cat "$home/run.out"; exit 1; }
# modular-heteroprio-heft: StarPU 1.3.10 as released (Debian's) never hands
# a task without an estimate (a footprint with fewer than 10 measurements)
# to a worker: its workers spin and the run stalls. The calibration above
# does not always prevent it: on a loaded machine StarPU counts far-off
# measurements as errors, not samples (beside three busy loops it kept 8 of
# a packing task's 12, and 6 of 6 runs stalled; CI's sanitizer stage and a
# plain build beside a busy fuzzer stalled 3 of 3 tries). The StarPU of
# tools/build-starpu is patched (tools/dev/starpu-patches/0002: such a task goes
# to the worker free first, where it is measured) and says so in the
# policy's description: there the policy runs, and also from no models at
# all; without the fix it is skipped, and starnn must warn at start-up.
heteroprio_fixed=0
echo "$help" | grep -q '^modular-heteroprio-heft.*schedules uncalibrated tasks' && heteroprio_fixed=1
# no models: the calibrated directory without the codelets' (the bus's kept)
cp -r "$home/calibrated" "$home/none" && rm -rf "$home/none/sampling/codelets"
# In a sanitizer build the loop runs a subset of the policies (the list
# below that this StarPU has): each run costs seconds under ASan, and what
# the sanitizers check is starnn's code under different task orders, which
# these cover (a work-stealing, a greedy, a history-model, a random, a
# priority and the two heteroprio policies); the plain builds run them all.
if grep -q '^ *sanitizers *: *yes' "$B/config.summary" 2> /dev/null; then
	all=$policies policies=
	for p in lws eager dmdas random prio heteroprio modular-heteroprio-heft; do
		echo "$all" | grep -qx "$p" && policies="$policies $p"
	done
	echo "sanitizer build: $(echo $policies | wc -w) of the $n policies:$policies"
fi
status=0
for p in $policies; do
	if [ "$p" = modular-heteroprio-heft ] && [ $heteroprio_fixed = 0 ]; then
		echo "skip $p: this StarPU lacks the fix of tools/dev/starpu-patches/0002 (runs stall on uncalibrated tasks)"
		warn=$(STARPU_SCHED=$p STARPU_NCPU=2 STARPU_NCUDA=0 timeout -k 5 60 "$unet" train $args --steps 0 \
			--checkpoint "$home/init.h5" 2>&1)
		if echo "$warn" | grep -q "starnn: warning: this StarPU's modular-heteroprio-heft never schedules"; then
			echo "ok   $p: starnn warns at start-up"
		else
			echo "FAIL $p: no start-up warning about this StarPU's stalls:"
			echo "$warn" | tail -n 20
			status=1
		fi
		continue
	fi
	if [ "$p" = modular-heteroprio-heft ]; then
		got=$(STARPU_SCHED=$p run "$home/none")
		if [ "$got" = "$ref" ] && [ "$(cat "$home/rc")" = 0 ]; then
			echo "ok   $p (no models: every task uncalibrated)"
		else
			echo "FAIL $p from no models: $(echo "$got" | grep -c .) of 4 losses, exit $(cat "$home/rc"):"
			tail -n 20 "$home/run.out"
			status=1
		fi
	fi
	got=$(STARPU_SCHED=$p run)
	if [ "$(echo "$got" | grep -c .)" != 4 ]; then
		echo "note $p: $(echo "$got" | grep -c .) of 4 losses (stalled or failed, exit $(cat "$home/rc")): trying once more"
		got=$(STARPU_SCHED=$p run)
	fi
	rc=$(cat "$home/rc")
	if [ "$got" = "$ref" ] && [ "$rc" = 0 ]; then
		echo "ok   $p"
	elif [ "$got" = "$ref" ]; then
		echo "FAIL $p: the right losses, but exit status $rc:"
		tail -n 40 "$home/run.out"
		status=1
	else
		echo "FAIL $p: losses $(echo $got) differ from $(echo $ref) (exit $rc)"
		status=1
	fi
done
# Priorities (runtime/core/submit.h: the parameter side after the activations)
# change the order tasks run in, never the losses; off, every task has
# priority 0. An unknown value is refused at start-up.
# STARNN_PRIORITIES is a test hook (configure --enable-test-hooks, on in
# tools/setup's builds).
if ! grep -q '^ *test hooks *: *yes' "${top_builddir:-.}/config.summary" 2> /dev/null; then
	echo "note: no test hooks in this build (configure --enable-test-hooks): STARNN_PRIORITIES is not checked"
else
got=$(unset STARPU_SCHED; STARNN_PRIORITIES=off run)
if [ "$got" = "$ref" ] && [ "$(cat "$home/rc")" = 0 ]; then
	echo "ok   STARNN_PRIORITIES=off: the default policy's losses"
else
	echo "FAIL STARNN_PRIORITIES=off: losses $(echo $got) differ from $(echo $ref) (exit $(cat "$home/rc"))"
	status=1
fi
bad=$(STARNN_PRIORITIES=sideways STARPU_NCPU=2 STARPU_NCUDA=0 timeout -k 5 60 "$unet" train $args --steps 1 2>&1)
rc=$?
if [ $rc != 0 ] && echo "$bad" | grep -q "STARNN_PRIORITIES is 'sideways': expected on or off"; then
	echo "ok   STARNN_PRIORITIES=sideways refused (exit $rc)"
else
	echo "FAIL STARNN_PRIORITIES=sideways: exit $rc, no message:"
	echo "$bad" | tail -n 5
	status=1
fi
fi
echo "$n policies"
exit $status
