#!/bin/bash
# models/mlp learns: in 1000 steps (validation MSE about 0.013 here), with 1 and with 2 CPU
# workers, the validation MSE falls below a stated bound, far under the
# "predict the mean" baseline (about 0.5 on this data; the noise floor is
# 0.0004). Runs take a few seconds each. Then the energy lines, checkpoints
# (--resume continues a run bit for bit, --init) and bad options.
set -u
mlp=${top_builddir:-.}/models/mlp
BOUND=0.02
status=0
for ncpu in 1 2; do
	out=$(STARPU_NCPU=$ncpu STARPU_NCUDA=0 "$mlp" --steps 1000 --seed 3 --log-every 250 2>&1)
	rc=$?
	echo "$out"
	if [ $rc != 0 ]; then
		echo "FAIL: mlp exited $rc with STARPU_NCPU=$ncpu"
		status=1
		continue
	fi
	mse=$(echo "$out" | sed -n 's/.*validation MSE \([0-9.e+-]*\).*/\1/p')
	first=$(echo "$out" | sed -n 's/^step *250\/.*loss \([0-9.e+-]*\).*/\1/p')
	last=$(echo "$out" | sed -n 's/^step *1000\/.*loss \([0-9.e+-]*\).*/\1/p')
	if [ -z "$mse" ] || [ -z "$first" ] || [ -z "$last" ]; then
		echo "FAIL: no loss / validation MSE in the output (STARPU_NCPU=$ncpu)"
		status=1
	elif ! awk -v m="$mse" -v b="$BOUND" -v f="$first" -v l="$last" 'BEGIN { exit !(m < b && l < f) }'; then
		echo "FAIL: STARPU_NCPU=$ncpu: validation MSE $mse (bound $BOUND), loss $first -> $last"
		status=1
	else
		echo "ok: STARPU_NCPU=$ncpu: validation MSE $mse < $BOUND, loss $first -> $last"
	fi
done
# Energy: the line after the final one (measured by a named method, or "not
# available" with the reason: this VM has no /sys/class/powercap), the
# estimated line of the power model, and the --log-json summary record.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" --steps 64 --quiet --cpu-watts 10 --idle-watts 20 --log-json "$tmp/m.json" 2>&1)
echo "$out"
e=$(echo "$out" | grep '^energy: ')
if ! echo "$e" | grep -Eq '^energy: ([0-9.]+ J \((rapl|perf|nvml|rapl\+nvml|perf\+nvml): .*J per sample|not available \(.+\))$'; then
	echo "FAIL: no energy line: '$e'"; status=1
elif [ ! -d /sys/class/powercap ] && ! echo "$e" | grep -q '^energy: not available (no RAPL: /sys/class/powercap is absent'; then
	echo "FAIL: no /sys/class/powercap here, but the energy line does not say so: '$e'"; status=1
else
	echo "ok: $e"
fi
echo "$out" | grep -q '^energy estimated: [0-9.]* J (power model, not measured: [0-9.]* s busy CPU workers x 10 W, [0-9.]* s x 20 W idle)' ||
	{ echo "FAIL: no estimated energy line"; status=1; }
# 64 steps of 64 samples over 8192: 0.5 epochs.
if grep -Eq '^\{"summary":\{"steps":64,"epochs":0.5,"samples":4096,"elapsed":[0-9.e-]+,"samples_per_s":[0-9.e+]+,"energy":\{"method":"(rapl|perf|nvml|rapl\+nvml|perf\+nvml|not available)",.*"domains":\{[^}]*\},"estimated":\{"joules":[0-9.e-]+,.*\}\}\}\}$' "$tmp/m.json" &&
	[ "$(wc -l < "$tmp/m.json")" = 1 ]; then
	echo "ok: --log-json: $(cut -c1-100 "$tmp/m.json")..."
else
	echo "FAIL: --log-json summary record: $(cat "$tmp/m.json")"; status=1
fi
# Checkpoints (the trainer's, runtime/train/trainer.h): 20 steps + --resume
# to 40 give the losses of steps 25-40, the validation MSE and the final
# checkpoint (datasets and attributes, bit for bit) of an uninterrupted
# 40-step run; --init starts from the weights; another network is refused.
ckutil=${top_builddir:-.}/tests/models/ckpt_util
R="--steps 40 --log-every 5 --seed 5"
lines() { grep -h '^step\|^final' "$@" | sed 's/  [0-9.]* samples\/s//; s/, [0-9]* steps in .*//'; }
STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" $R --checkpoint "$tmp/a.h5" > "$tmp/a.out" 2>&1 || { echo "FAIL: 40-step run"; status=1; }
STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" $R --steps 20 --checkpoint "$tmp/b.h5" > /dev/null 2>&1 || { echo "FAIL: 20-step run"; status=1; }
STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" --resume "$tmp/b.h5" --steps 40 --log-every 5 --checkpoint "$tmp/b.h5" \
	> "$tmp/b.out" 2>&1 || { echo "FAIL: resumed run"; cat "$tmp/b.out"; status=1; }
if [ "$(lines "$tmp/a.out" | tail -n 5)" = "$(lines "$tmp/b.out")" ] && "$ckutil" cmp "$tmp/a.h5" "$tmp/b.h5" > /dev/null; then
	echo "ok: 20 steps + --resume to 40: the losses, validation MSE and checkpoint of the uninterrupted run"
else
	echo "FAIL: --resume differs from the uninterrupted run"; diff <(lines "$tmp/a.out" | tail -n 5) <(lines "$tmp/b.out")
	"$ckutil" cmp "$tmp/a.h5" "$tmp/b.h5" | tail -n 3; status=1
fi
grep -q "^checkpoint: $tmp/b.h5 (step 40)\$" "$tmp/b.out" || { echo "FAIL: no checkpoint line"; status=1; }
i1=$(STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" --init "$tmp/a.h5" --steps 5 --log-every 5 --seed 9 2>&1 | lines | head -n 1)
i0=$(STARPU_NCPU=2 STARPU_NCUDA=0 "$mlp" --steps 5 --log-every 5 --seed 9 2>&1 | lines | head -n 1)
[ -n "$i1" ] && [ "$i1" != "$i0" ] && echo "ok: --init: the weights come from the file ($i1, not $i0)" ||
	{ echo "FAIL: --init made no difference ($i1)"; status=1; }
err=$("$mlp" --resume "$tmp/a.h5" --hidden 32 --steps 50 2>&1)
rc=$?
[ $rc = 1 ] && echo "$err" | grep -q "another network: its hidden layers are 64,64" &&
	echo "ok: another network refused: $err" || { echo "FAIL: --hidden 32 on a 64,64 checkpoint: exit $rc: $err"; status=1; }
"$mlp" --cpu-watts -1 > /dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --cpu-watts -1 not refused with status 2"; status=1; }
# Bad options give a message and exit status 2, no crash.
"$mlp" --batch 0 > /dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --batch 0 not refused with status 2"; status=1; }
"$mlp" --optimizer rmsprop 2> /dev/null
[ $? = 2 ] || { echo "FAIL: --optimizer rmsprop not refused"; status=1; }
# The messages a user sees name the problem, not starnn's source lines.
for bad in "--wire-grads foo" "--precision fp8" "--loss-scale 0"; do
	err=$("$mlp" $bad 2>&1 > /dev/null)
	if [ -z "$err" ] || echo "$err" | grep -Eq '[a-z_]+\.c:[0-9]+:'; then
		echo "FAIL: $bad: message '$err' (empty, or with a source location)"; status=1
	fi
done
exit $status
