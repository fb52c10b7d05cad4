#!/bin/sh
# models/unet stopped by signals and by a full disk (about 8 s on 2 cores;
# a tiny model: 16x16, depth 1, f 2, batch 2):
#  - SIGTERM during training: the steps in flight finish, the checkpoint
#    holds the last logged step, exit 143 with a line naming the signal and
#    one giving the status; resuming continues as the uninterrupted run;
#  - SIGINT without --checkpoint: exit 130, "no --checkpoint to save";
#  - a second SIGTERM while the checkpoint is being written (held open by
#    STARNN_TEST_WRITE_PAUSE_MS): exit 143 at once, the previous checkpoint
#    unchanged; the temporary it leaves is removed by the next write;
#  - a full disk, made with a file size limit (ulimit -f / prlimit; the
#    program ignores SIGXFSZ, so writes fail with EFBIG) at several sizes so
#    that the write fails at its start, in a dataset, and in the last
#    metadata: a checkpoint, a forecast file (predict --output) and PNG
#    pictures all fail with exit 1 and "File too large", leave the previous
#    file byte for byte as it was and no temporary beside it.
set -u
B=${top_builddir:-.}
ckutil=$B/tests/models/ckpt_util
. "$(dirname "$0")/unet_common.sh" # $unet, $synth, $tmp, fail, ok, expect, losses

C="--size 16 --depth 1 --filters 2 --batch 2 --micro-batches 1 --samples 32 --val-samples 4 --eval-every 0 --quiet"
nsteps() { losses "$1" 2> /dev/null | wc -l; }
# Waits (at most 20 s) until command "$2..." succeeds, while process $1 lives.
wait_for() {
	p=$1
	shift
	n=0
	while [ $n -lt 2000 ] && ! "$@" && kill -0 "$p" 2> /dev/null; do
		sleep 0.01
		n=$((n + 1))
	done
}
at_least() { [ "$(nsteps "$1")" -ge "$2" ]; }
has_temp() { ls "$1".tmp.* > /dev/null 2>&1; }
ms() { date +%s%N | cut -c1-13; }

# ------------------------------------------------------------------ SIGTERM
"$unet" train $C --steps 100000 --checkpoint "$tmp/t.h5" --log-json "$tmp/t.json" > "$tmp/t.out" 2>&1 &
pid=$!
wait_for $pid at_least "$tmp/t.json" 5
kill -TERM $pid
wait $pid
rc=$?
n=$(nsteps "$tmp/t.json")
step=$("$ckutil" int "$tmp/t.h5" step 2> /dev/null)
if [ $rc = 143 ] && grep -q "interrupted at step $n (SIGTERM): saving the checkpoint" "$tmp/t.out" &&
	grep -q "stopped by SIGTERM: exit status 143" "$tmp/t.out" && [ "$step" = "$n" ]; then
	ok "SIGTERM: exit 143 at step $n, the checkpoint holds step $step: $(grep interrupted "$tmp/t.out")"
else
	fail "SIGTERM: exit $rc, $n steps logged, checkpoint at step $step:"
	cat "$tmp/t.out"
fi
"$unet" train --resume "$tmp/t.h5" --steps $((n + 3)) --log-json "$tmp/t2.json" --eval-every 0 --quiet > /dev/null ||
	fail "resume after SIGTERM"
"$unet" train $C --steps $((n + 3)) --log-json "$tmp/full.json" > /dev/null || fail "$((n + 3))-step run"
[ "$( (losses "$tmp/t.json"; losses "$tmp/t2.json"))" = "$(losses "$tmp/full.json")" ] &&
	ok "SIGTERM at step $n + resume: the $((n + 3)) losses of the uninterrupted run" ||
	fail "SIGTERM at step $n + resume differs from the uninterrupted run"

# ------------------------------------------------------------------ SIGINT, no checkpoint
"$unet" train $C --steps 100000 --log-json "$tmp/i.json" > "$tmp/i.out" 2>&1 &
pid=$!
wait_for $pid at_least "$tmp/i.json" 3
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && grep -q "(SIGINT): no --checkpoint to save" "$tmp/i.out" &&
	grep -q "stopped by SIGINT: exit status 130" "$tmp/i.out" && ok "SIGINT without --checkpoint: exit 130" ||
	{ fail "SIGINT without --checkpoint: exit $rc"; cat "$tmp/i.out"; }

# ------------------------------------------------------------------ a second signal
# (STARNN_TEST_WRITE_PAUSE_MS holds the write open: a test hook, in builds
# configured with --enable-test-hooks only)
if ! grep -q '^ *test hooks *: *yes' "$B/config.summary" 2> /dev/null; then
	echo "note: no test hooks in this build (configure --enable-test-hooks): the second signal is not checked"
else
"$unet" train $C --steps 3 --checkpoint "$tmp/s.h5" > /dev/null || fail "3-step run"
cp "$tmp/s.h5" "$tmp/s.before"
STARNN_TEST_WRITE_PAUSE_MS=5000 "$unet" train --resume "$tmp/s.h5" --steps 100000 --checkpoint "$tmp/s.h5" \
	--log-json "$tmp/s.json" --eval-every 0 --quiet > "$tmp/s.out" 2>&1 &
pid=$!
wait_for $pid at_least "$tmp/s.json" 3
kill -TERM $pid
wait_for $pid has_temp "$tmp/s.h5" # the final write has begun, and pauses
t0=$(ms)
kill -TERM $pid
wait $pid
rc=$?
dt=$(($(ms) - t0))
if [ $rc = 143 ] && [ $dt -lt 4000 ] && grep -q "second signal: exiting at once" "$tmp/s.out" &&
	cmp -s "$tmp/s.h5" "$tmp/s.before" && has_temp "$tmp/s.h5"; then
	ok "a second SIGTERM during the checkpoint write: exit 143 after $dt ms, the previous checkpoint unchanged"
else
	fail "second SIGTERM: exit $rc after $dt ms, checkpoint $(cmp -s "$tmp/s.h5" "$tmp/s.before" && echo unchanged ||
		echo changed), temporaries: $(ls "$tmp"/s.h5.tmp.* 2> /dev/null):"
	cat "$tmp/s.out"
fi
"$unet" train --resume "$tmp/s.h5" --steps 4 --checkpoint "$tmp/s.h5" --eval-every 0 --quiet > "$tmp/s2.out" 2>&1 ||
	fail "the run after the second signal"
! has_temp "$tmp/s.h5" && grep -q "removed 1 stale temporary" "$tmp/s2.out" &&
	ok "the next write removed the temporary left by the second signal" ||
	{ fail "temporary after the second signal: $(ls "$tmp"/s.h5.tmp.* 2> /dev/null)"; cat "$tmp/s2.out"; }
fi

# ------------------------------------------------------------------ full disk
# Runs "$@" with files limited to $1 bytes. prlimit counts in bytes; the
# shell's ulimit -f in 512-byte blocks (POSIX; dash).
limited() {
	bytes=$1
	shift
	if command -v prlimit > /dev/null; then
		prlimit --fsize="$bytes" "$@"
	else
		(ulimit -f $((bytes / 512)) && exec "$@")
	fi
}
# Expects "$@" under a limit of $1 bytes to fail with exit 1 and "File too
# large", leaving file $2 as $2.before (or absent if that is absent) and no
# temporary beside it.
full() {
	bytes=$1 file=$2 what=$3
	shift 3
	limited "$bytes" "$@" > "$tmp/f.out" 2>&1
	rc=$?
	if [ -e "$file.before" ]; then same=$(cmp -s "$file" "$file.before" && echo yes); else same=$([ -e "$file" ] || echo yes); fi
	left=$(ls "$file".tmp.* 2> /dev/null)
	if [ $rc = 1 ] && grep -q "File too large" "$tmp/f.out" && [ "$same" = yes ] && [ -z "$left" ]; then
		ok "$what, $bytes bytes allowed: exit 1, $(grep -c . "$tmp/f.out") line: $(grep "File too large" "$tmp/f.out")"
	else
		fail "$what, $bytes bytes allowed: exit $rc, file $([ "$same" = yes ] && echo intact || echo changed), temporaries '$left':"
		cat "$tmp/f.out"
	fi
}

ck=$tmp/d.h5
"$unet" train $C --steps 3 --checkpoint "$ck" > /dev/null || fail "3-step run for the full disk"
cp "$ck" "$ck.before"
size=$(wc -c < "$ck")
for bytes in 1024 $((size / 8)) $((size / 2)) $((size * 9 / 10)) $((size - 600)); do
	full $bytes "$ck" "checkpoint of $size bytes" \
		"$unet" train --resume "$ck" --steps 6 --checkpoint "$ck" --checkpoint-every 1 --eval-every 0 --quiet
done

fc=$tmp/f.h5
"$unet" predict --checkpoint "$ck" --val-samples 16 --output "$fc" --quiet > /dev/null || fail "predict"
cp "$fc" "$fc.before"
size=$(wc -c < "$fc")
for bytes in 1024 $((size / 2)) $((size - 600)); do
	full $bytes "$fc" "forecast file of $size bytes" "$unet" predict --checkpoint "$ck" --val-samples 16 --output "$fc" --quiet
done
rm -f "$fc" "$fc.before"
full $((size / 2)) "$fc" "new forecast file" "$unet" predict --checkpoint "$ck" --val-samples 16 --output "$fc" --quiet

full 200 "$tmp/png/sample0.png" "PNG pictures" "$unet" predict --checkpoint "$ck" --val-samples 4 \
	--png "$tmp/png" --png-samples 1 --quiet
[ -z "$(ls "$tmp/png" 2> /dev/null)" ] && ok "no picture or temporary left" ||
	fail "left in the picture directory: $(ls "$tmp/png")"
exit $status
