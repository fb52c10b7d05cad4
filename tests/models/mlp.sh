#!/bin/sh
# models/mlp learns: in 1000 steps (validation MSE about 0.013 here), with 1 and with 2 CPU
# workers, the validation MSE falls below a stated bound, far under the
# "predict the mean" baseline (about 0.5 on this data; the noise floor is
# 0.0004). Runs take a few seconds each.
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
# Bad options give a message and exit status 2, no crash.
"$mlp" --batch 0 > /dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --batch 0 not refused with status 2"; status=1; }
"$mlp" --optimizer rmsprop 2> /dev/null
[ $? = 2 ] || { echo "FAIL: --optimizer rmsprop not refused"; status=1; }
exit $status
