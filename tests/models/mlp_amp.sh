#!/bin/sh
# models/mlp with mixed precision (--precision amp-fp16 / amp-bf16).
# 1. Quality: same seed, same 3000 steps: the validation MSE of amp-fp16 and
#    amp-bf16 is not worse than fp32's by more than 2% (one-sided), and
#    within 15% of it (a sanity bound). Measured here (seed 3): fp32 0.003981,
#    amp-fp16 0.003775, amp-bf16 0.003946; seeds 1 and 4 gave amp/fp32 ratios
#    0.92 to 0.99. The run is optimisation-limited (the noise floor is 0.0004),
#    so any rounding change moves the trajectory by a few per cent either way:
#    at 1000 steps the ratios spread from 0.91 to 1.04, which is why a
#    two-sided 2% bound is not used and why the test trains 3000 steps.
# 2. Overflow: an Inf put into one gradient at one step
#    (STARNN_MLP_INJECT_INF_STEP) skips that step (the program compares every
#    weight and optimizer value bit for bit before and after it and fails
#    otherwise), halves a dynamic scale, keeps a static one, and training
#    goes on to finite weights.
# 3. The peak memory line is printed, smaller for amp-bf16 than for fp32.
# 4. Bad options exit with status 2.
# In the sanitizer build part 1 trains 300 steps per precision without the
# quality bound (it needs 3000 steps to mean something; the plain builds
# check it): the same code paths, checked for memory and undefined behaviour;
# the same with STARNN_TEST_QUALITY=off (CI's second StarPU build).
set -u
mlp=${top_builddir:-.}/models/mlp
QSTEPS=3000 sanitized=0
if grep -q '^ *sanitizers *: *yes' "${top_builddir:-.}/config.summary" 2> /dev/null ||
	[ "${STARNN_TEST_QUALITY:-on}" = off ]; then
	QSTEPS=300 sanitized=1
	echo "note: sanitizer build or STARNN_TEST_QUALITY=off: 300 steps per precision, no quality bound"
fi
status=0
fail() { echo "FAIL: $*"; status=1; }

run() { # run NAME ARGS...: output in $out, MSE in $mse, peak in $peak
	name=$1; shift
	out=$(STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" --quiet "$@" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/[$name] /"
	[ $rc = 0 ] || fail "$name: mlp exited $rc"
	mse=$(echo "$out" | sed -n 's/.*validation MSE \([0-9.e+-]*\).*/\1/p')
	peak=$(echo "$out" | sed -n 's/^peak memory node 0: \([0-9.]*\) MiB.*/\1/p')
	[ -n "$mse" ] || fail "$name: no validation MSE"
	[ -n "$peak" ] || fail "$name: no 'peak memory node 0' line"
}

run fp32 --steps $QSTEPS --seed 3
mse32=$mse peak32=$peak
for p in amp-fp16 amp-bf16; do
	run $p --steps $QSTEPS --seed 3 --precision $p
	if [ $sanitized = 1 ]; then
		echo "note: $p validation MSE $mse vs fp32 $mse32 after $QSTEPS steps (not bounded here)"
	elif awk -v a="$mse" -v f="$mse32" 'BEGIN { exit !(a <= 1.02 * f && a >= 0.85 * f) }'; then
		echo "ok: $p validation MSE $mse vs fp32 $mse32 (<= +2%, >= -15%)"
	else
		fail "$p validation MSE $mse vs fp32 $mse32 (bound: at most 2% worse, at most 15% better)"
	fi
	[ $p = amp-bf16 ] && { awk -v a="$peak" -v f="$peak32" 'BEGIN { exit !(a < f) }' ||
		fail "amp-bf16 peak memory $peak MiB not below fp32's $peak32 MiB"; }
done

inject() { # inject NAME EXPECTED_SCALE ARGS...
	name=$1 scale=$2; shift 2
	out=$(STARNN_MLP_INJECT_INF_STEP=40 STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" --quiet --steps 150 --seed 2 "$@" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/[$name] /"
	[ $rc = 0 ] || fail "$name: mlp exited $rc"
	echo "$out" | grep -q "step 40: weights and optimizer state unchanged bit for bit" || fail "$name: step not skipped"
	echo "$out" | grep -q "^loss scaling: 1 skipped steps, final scale $scale\$" || fail "$name: expected 1 skipped step, scale $scale"
	echo "$out" | grep -q "^inject: 0 of [0-9]* final weights" || fail "$name: non-finite weights at the end"
}
# (STARNN_MLP_INJECT_INF_STEP is a test hook: builds configured with
# --enable-test-hooks, as tools/setup's, only)
hooks=no
grep -q '^ *test hooks *: *yes' "${top_builddir:-.}/config.summary" 2> /dev/null && hooks=yes
if [ $hooks = yes ]; then
	inject "inject amp-fp16" 32768 --precision amp-fp16
	inject "inject amp-bf16 sgd" 32768 --precision amp-bf16 --loss-scale dynamic --optimizer sgd
	inject "inject fp16 static 1024" 1024 --precision amp-fp16 --loss-scale 1024
else
	echo "note: no test hooks in this build (configure --enable-test-hooks): the overflow is not checked"
fi

"$mlp" --precision fp8 > /dev/null 2>&1
[ $? = 2 ] || fail "--precision fp8 not refused with status 2"
"$mlp" --loss-scale 0 > /dev/null 2>&1
[ $? = 2 ] || fail "--loss-scale 0 not refused with status 2"
if [ $hooks = yes ]; then
	STARNN_MLP_INJECT_INF_STEP=3 "$mlp" --precision amp-bf16 > /dev/null 2>&1
	[ $? = 2 ] || fail "an injected Inf without loss scaling not refused with status 2"
fi
exit $status
