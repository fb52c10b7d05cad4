#!/usr/bin/env bash
# tools/trace-occupancy, which tools/trace runs on every tasks.rec it
# writes: on a small tasks.rec in StarPU's format whose answer is worked
# out by hand, the share of the time with 2, 1 and 0 of the workers busy,
# the codelets that ran alone, --last's window (ms, and a share of the
# trace's span), back-to-back tasks counted
# once, and the errors (no file, a bad --last, no tasks). (grep reads
# here-strings, not pipes: under pipefail, grep -q closing a pipe early
# would fail the echo feeding it.)
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OCC=$SRC/tools/trace-occupancy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A task as starpu_fxt_tool writes it (fields it has beside these left out).
task() { # name model worker start end
	printf 'Name: %s\nJobId: %d\n' "$1" "$RANDOM"
	[ -n "$2" ] && printf 'Model: %s\n' "$2"
	printf 'WorkerId: %s\nSubmitTime: 0.5\nStartTime: %s\nEndTime: %s\nParameters: 1x1\n\n' "$3" "$4" "$5"
}
# Worker 0 runs A on [0, 10) then B on [10, 20) (back to back); worker 1
# runs C on [5, 15), then D on [25, 30) after a gap in which nobody works.
# So: [0, 5) A alone; [5, 15) both; [15, 20) B alone; [20, 25) none;
# [25, 30) D alone. Over 30 ms: 2 busy 10, 1 busy 15, 0 busy 5 ms.
{
	task "conv2d_fwd:y[0]" starnn_conv2d_fwd_fp32 0 100.000 110.000
	task "bn_stats:work" starnn_bn_stats_fp32 0 110.000 120.000
	task "relu_fwd:a" starnn_relu_fwd_fp32 1 105.000 115.000
	task "adam:w" starnn_adam_fp32 1 125.000 130.000
	# a record without a worker (a task StarPU did not run) is skipped
	printf 'Name: ghost\nJobId: 9\nSubmitTime: 1\n\n'
} > "$tmp/tasks.rec"

out=$("$OCC" "$tmp/tasks.rec" 2>&1) || fail "a valid tasks.rec: status $?: $out"
grep -q "Occupancy of 2 worker(s) over 30.000 ms" <<<"$out" || fail "2 workers over 30 ms: $out"
grep -Eq "^  2 busy +33\.3% +10\.000 ms" <<<"$out" || fail "2 busy 10 ms of 30: $out"
grep -Eq "^  1 busy +50\.0% +15\.000 ms" <<<"$out" || fail "1 busy 15 ms of 30: $out"
grep -Eq "^  0 busy +16\.7% +5\.000 ms" <<<"$out" || fail "0 busy 5 ms of 30: $out"
# alone: conv2d_fwd 5 (A), bn_stats 5 (B), adam 5 (D); relu (C) never alone,
# though it starts when A's time alone ends
grep -Eq "^  starnn_conv2d_fwd_fp32 +5\.000 +16\.7%" <<<"$out" || fail "conv2d_fwd alone 5 ms: $out"
grep -Eq "^  starnn_bn_stats_fp32 +5\.000 +16\.7%" <<<"$out" || fail "bn_stats alone 5 ms: $out"
grep -Eq "^  starnn_adam_fp32 +5\.000 +16\.7%" <<<"$out" || fail "adam alone 5 ms: $out"
[ "$(grep -c '^  starnn_' <<<"$out")" = 3 ] && ! grep -q relu <<<"$out" || fail "three codelets alone, not relu: $out"

# The last 10 ms: [20, 30): none 5, D alone 5.
out=$("$OCC" --last 10 "$tmp/tasks.rec" 2>&1) || fail "--last 10: status $?: $out"
grep -q "over 10.000 ms (the last 10 ms)" <<<"$out" || fail "--last 10: the window: $out"
grep -Eq "^  2 busy +0\.0% +0\.000 ms" <<<"$out" || fail "--last 10: 2 busy 0: $out"
grep -Eq "^  1 busy +50\.0% +5\.000 ms" <<<"$out" || fail "--last 10: 1 busy 5: $out"
grep -Eq "^  0 busy +50\.0% +5\.000 ms" <<<"$out" || fail "--last 10: 0 busy 5: $out"
[ "$(grep -c '^  starnn_' <<<"$out")" = 1 ] && grep -q "starnn_adam_fp32" <<<"$out" ||
	fail "--last 10: adam alone only: $out"

# The last half of the trace's span (15 ms): [15, 20) bn_stats alone,
# [20, 25) none, [25, 30) adam alone.
out=$("$OCC" --last 50% "$tmp/tasks.rec" 2>&1) || fail "--last 50%: status $?: $out"
grep -q "over 15.000 ms (the last 50% of the trace)" <<<"$out" || fail "--last 50%: the window: $out"
grep -Eq "^  1 busy +66\.7% +10\.000 ms" <<<"$out" || fail "--last 50%: 1 busy 10: $out"
grep -Eq "^  0 busy +33\.3% +5\.000 ms" <<<"$out" || fail "--last 50%: 0 busy 5: $out"

# A task without a model is grouped by its name; one worker: no "alone".
{ task "copy:x" "" 0 0 4; task "copy:y" "" 0 4 6; } > "$tmp/one.rec"
out=$("$OCC" "$tmp/one.rec" 2>&1) || fail "one worker: status $?: $out"
grep -Eq "^  1 busy +100\.0% +6\.000 ms" <<<"$out" || fail "one worker, back to back: busy 6 ms: $out"
grep -q "one worker busy" <<<"$out" && fail "one worker: no table of codelets alone: $out"

# Errors: status and message.
out=$("$OCC" "$tmp/none.rec" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "cannot read" <<<"$out" || fail "a missing file: status $rc: $out"
out=$("$OCC" --last abc "$tmp/tasks.rec" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "expected a positive number" <<<"$out" || fail "--last abc: status $rc: $out"
out=$("$OCC" --last 0 "$tmp/tasks.rec" 2>&1); rc=$?
[ $rc = 2 ] || fail "--last 0: status $rc: $out"
out=$("$OCC" --last 150% "$tmp/tasks.rec" 2>&1); rc=$?
[ $rc = 2 ] || fail "--last 150%: status $rc: $out"
printf 'Name: ghost\nJobId: 9\n\n' > "$tmp/empty.rec"
out=$("$OCC" "$tmp/empty.rec" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no task with a worker" <<<"$out" || fail "no tasks: status $rc: $out"
out=$("$OCC" 2>&1); rc=$?
[ $rc = 2 ] || fail "no argument: status $rc"

[ $failures = 0 ] || exit 1
echo "ok: trace-occupancy on a tasks.rec worked out by hand"
