#!/bin/bash
# models/unet train --resume across rank counts (runtime/train/dist.h): with the
# same global batch and the same total number of micro-batches (1 rank x 2
# against 2 ranks x 1),
#   - 6 steps on 1 rank, then resumed on 2 ranks up to step 12, and
#   - 6 steps on 2 ranks, then resumed on 1 rank up to step 12,
# give the losses of steps 7..12 of the uninterrupted 1-rank run, bit for
# bit, and its final checkpoint (only the micro_batches attribute differs
# where the rank count does).
# Then a rank killed (SIGKILL) while rank 0 checkpoints every step: the job
# stops within 30 s with a non-zero status naming the rank, no half-written
# checkpoint is left in its place, and the last checkpoint resumes on 1 rank.
# Skips (77) without StarPU-MPI or without mpirun.
set -u
. "$(dirname "$0")/mpi_common.sh"
unet=$top/models/unet
fail() { echo "FAIL: $*"; status=1; }
U="train --size 16 --depth 1 --filters 4 --batch 4 --samples 32 --eval-every 0 --seed 5 --quiet"
losses() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' "$1"; }
# run NP OUT OPTIONS...: models/unet on NP ranks (1: no mpirun), in $tmp.
run() {
	local np=$1 out=$2
	shift 2
	if [ "$np" = 1 ]; then
		(cd "$tmp" && "$unet" "$@") > "$tmp/$out" 2>&1
	else
		(cd "$tmp" && timeout 150 $MPIRUN -np "$np" "$unet" "$@") > "$tmp/$out" 2>&1
	fi
}

run 1 full.txt $U --micro-batches 2 --steps 12 --log-json full.jsonl --checkpoint full.h5 ||
	{ echo "FAIL: the uninterrupted run exited $?"; cat "$tmp/full.txt"; exit 1; }
losses "$tmp/full.jsonl" | awk '$1 > 6' > "$tmp/full.l"

# resume FIRST_NP SECOND_NP
resume() {
	local a=$1 b=$2 name="$1 -> $2 ranks"
	run "$a" first.txt $U --micro-batches $((2 / a)) --steps 6 --checkpoint half.h5 ||
		{ fail "$name: the first 6 steps exited $?"; cat "$tmp/first.txt"; return; }
	rm -f "$tmp/second.jsonl"
	run "$b" second.txt train --resume half.h5 --micro-batches $((2 / b)) --steps 12 --quiet \
		--log-json second.jsonl --checkpoint second.h5 ||
		{ fail "$name: the resumed run exited $?"; cat "$tmp/second.txt"; return; }
	losses "$tmp/second.jsonl" > "$tmp/second.l"
	if [ "$(wc -l < "$tmp/full.l")" != 6 ] || ! cmp -s "$tmp/full.l" "$tmp/second.l"; then
		fail "$name: steps 7..12 differ from the uninterrupted run (step full resumed):"
		join -a 1 "$tmp/full.l" "$tmp/second.l" | awk '$2 != $3'
		return
	fi
	local diff
	diff=$("$top/tests/models/ckpt_util" cmp "$tmp/full.h5" "$tmp/second.h5")
	if [ "$b" = 1 ] && ! echo "$diff" | grep -q "(0 differences)"; then
		fail "$name: the final checkpoint differs from the uninterrupted run's:"; echo "$diff"; return
	elif [ "$b" != 1 ] && { [ "$(echo "$diff" | head -n 1)" != "micro_batches: other values" ] ||
		! echo "$diff" | grep -q "(1 differences)"; }; then
		fail "$name: the final checkpoint differs beyond micro_batches:"; echo "$diff"; return
	fi
	echo "ok: $name: steps 7..12 and the final checkpoint equal the uninterrupted run (last $(tail -n 1 "$tmp/second.l"))"
}
resume 1 2
resume 2 1

# A rank killed while rank 0 checkpoints every step.
(cd "$tmp" && exec $MPIRUN -np 2 "$unet" train --size 16 --depth 1 --filters 4 --batch 4 --samples 32 \
	--eval-every 0 --steps 100000 --checkpoint-every 1 --checkpoint kill.h5 --log-json kill.jsonl \
	--progress off --log-every 1000000) > "$tmp/kill.txt" 2>&1 &
launcher=$!
ranks=
for i in $(seq 1 120); do
	ranks=$(rank_pids "$launcher" unet)
	[ "$(echo $ranks | wc -w)" = 2 ] && [ -f "$tmp/kill.h5" ] && [ "$(losses "$tmp/kill.jsonl" | wc -l)" -ge 5 ] && break
	sleep 0.5
done
victim=
for p in $ranks; do
	tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
if [ -z "$victim" ]; then
	fail "kill: the 2 ranks did not start and checkpoint"; cat "$tmp/kill.txt"; kill "$launcher" 2> /dev/null
else
	kill -9 "$victim"
	start=$(date +%s)
	while kill -0 "$launcher" 2> /dev/null && [ $(($(date +%s) - start)) -lt 30 ]; do sleep 0.2; done
	if kill -0 "$launcher" 2> /dev/null; then
		fail "kill: still running 30 s after rank 1 was killed"; kill -9 "$launcher"
	else
		wait "$launcher"
		rc=$?
		sleep 1 # rank 0 ends after mpirun
		if [ $rc = 0 ] || ! grep -q "rank 1" "$tmp/kill.txt"; then
			fail "kill: exit $rc, or no message naming rank 1:"; cat "$tmp/kill.txt"
		elif ! "$top/tests/models/ckpt_util" cmp "$tmp/kill.h5" "$tmp/kill.h5" > /dev/null 2>&1; then
			fail "kill: kill.h5 is not a readable checkpoint"
		else
			step=$(losses "$tmp/kill.jsonl" | tail -n 1 | cut -d' ' -f1)
			if ! run 1 after.txt train --resume kill.h5 --steps $((step + 2)) --quiet --log-json after.jsonl; then
				fail "kill: resuming the last checkpoint exited $?"; cat "$tmp/after.txt"
			else
				echo "ok: rank 1 killed at about step $step: stopped in $(($(date +%s) - start)) s, exit $rc" \
					"($(grep -m1 -o 'rank 1 with PID.*' "$tmp/kill.txt")); kill.h5 resumes on 1 rank" \
					"($(losses "$tmp/after.jsonl" | wc -l) more steps)"
			fi
		fi
	fi
fi
exit $status
