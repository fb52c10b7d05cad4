#!/bin/bash
# models/unet train --shard-optimizer (runtime/train/dist.h, the parameter-owner
# mode) and --wire-weights (Study 2's weight compression on the rank edge):
#   - sharded, fp32 weights: 2 ranks give the same 12 losses as the plain
#     all-reduce (gradients reduced to each owner in the same order: a sum
#     of two is commutative) and as one rank;
#   - --wire-weights awp: 2 ranks = 1 rank bit for bit (one rank sends
#     nothing but computes with the weights through the same formats);
#     the formats climb (int8 first, then trunc16 ...) in the log; the
#     weights' bytes are fewer than their fp32 size;
#   - resumed from a checkpoint of step 14 (adaptive state, the owners'
#     exact masters and optimizer state gathered by rank 0) = the
#     uninterrupted 30 steps: losses, format log and final checkpoint;
#   - each rank keeps the optimizer state of its share only: lower peak
#     memory than the plain all-reduce;
#   - --awp-rule resolution: 2 ranks = 1 rank, resumed = uninterrupted;
#   - usage errors: --wire-weights without --shard-optimizer, --awp-*
#     without awp.
# Skips (77) without StarPU-MPI or without mpirun.
set -u
. "$(dirname "$0")/mpi_common.sh"
unet=$top/models/unet
U="train --size 16 --depth 1 --filters 4 --batch 4 --samples 32 --eval-every 0 --seed 3 --quiet"
losses() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' "$1"; }
run2() { (cd "$tmp" && timeout 150 $MPIRUN -np 2 "$unet" "$@") > "$tmp/out.txt" 2>&1 ||
	{ echo "FAIL: 2 ranks ($*) exited $?"; cat "$tmp/out.txt"; exit 1; }; }
same() { # what file-a file-b
	if [ "$(wc -l < "$2")" -lt 12 ] || ! cmp -s "$2" "$3"; then
		echo "FAIL: $1 (step a b):"; join "$2" "$3" | awk '$2 != $3' | head; status=1
	else
		echo "ok: $1 ($(wc -l < "$2") losses, last $(tail -n 1 "$2"))"
	fi
}

# fp32 weights: sharded = plain all-reduce = one rank.
"$unet" $U --steps 12 --micro-batches 2 --log-json "$tmp/one.jsonl" > "$tmp/one.txt" 2>&1 ||
	{ echo "FAIL: one rank exited $?"; cat "$tmp/one.txt"; exit 1; }
run2 $U --steps 12 --micro-batches 1 --log-json plain.jsonl
grep -o 'peak memory node 0: [0-9.]*' "$tmp/out.txt" | awk '{print $5}' > "$tmp/plain.mem"
run2 $U --steps 12 --micro-batches 1 --shard-optimizer --log-json shard.jsonl
grep -o 'peak memory node 0: [0-9.]*' "$tmp/out.txt" | awk '{print $5}' > "$tmp/shard.mem"
losses "$tmp/one.jsonl" > "$tmp/one.l"; losses "$tmp/plain.jsonl" > "$tmp/plain.l"; losses "$tmp/shard.jsonl" > "$tmp/shard.l"
same "--shard-optimizer on 2 ranks = the plain all-reduce" "$tmp/plain.l" "$tmp/shard.l"
same "--shard-optimizer on 2 ranks = one rank" "$tmp/one.l" "$tmp/shard.l"
pm=$(cat "$tmp/plain.mem") sm=$(cat "$tmp/shard.mem")
if awk -v p="$pm" -v s="$sm" 'BEGIN { exit !(s + 0 > 0 && s + 0 < p + 0) }'; then
	echo "ok: rank 0's peak memory $sm MiB sharded < $pm MiB with the whole optimizer state"
else
	echo "FAIL: rank 0's peak memory sharded ($sm MiB) is not below the plain all-reduce's ($pm MiB)"; status=1
fi

# awp: 2 ranks = 1 rank; formats climb; fewer bytes.
A="--shard-optimizer --wire-weights awp --awp-interval 3"
"$unet" $U --steps 30 --micro-batches 2 $A --log-json "$tmp/a1.jsonl" > "$tmp/a1.txt" 2>&1 ||
	{ echo "FAIL: one rank with awp exited $?"; cat "$tmp/a1.txt"; exit 1; }
run2 $U --steps 30 --micro-batches 1 $A --log-json a2.jsonl --checkpoint a2.h5
losses "$tmp/a1.jsonl" > "$tmp/a1.l"; losses "$tmp/a2.jsonl" > "$tmp/a2.l"
same "--wire-weights awp: 2 ranks = one rank" "$tmp/a1.l" "$tmp/a2.l"
if ! cmp -s <(grep wire_weights "$tmp/a1.jsonl") <(grep wire_weights "$tmp/a2.jsonl"); then
	echo "FAIL: the format changes of 2 ranks differ from one rank's"; status=1
fi
first=$(grep -m1 '"wire_weights"' "$tmp/a2.jsonl")
if ! echo "$first" | grep -q '^{"step":0,"wire_weights":{"enc0/conv1/weight":"int8"' ||
	! grep -q '"trunc16"' "$tmp/a2.jsonl" || ! grep -q '"trunc24"' "$tmp/a2.jsonl"; then
	echo "FAIL: the log does not show the formats climbing from int8: $(grep wire_weights "$tmp/a2.jsonl" | head -n 3)"
	status=1
else
	echo "ok: formats climb in the log ($(grep -c wire_weights "$tmp/a2.jsonl") records, from int8)"
fi
w=$(sed -n 's/.*"weights":{"bytes":\([0-9]*\),"raw_bytes":\([0-9]*\).*/\1 \2/p' "$tmp/a2.jsonl")
if [ -z "$w" ] || ! awk -v a="${w% *}" -v b="${w#* }" 'BEGIN { exit !(a > 0 && a < b) }'; then
	echo "FAIL: no exchange record with the weights' bytes below their fp32 size: $(grep exchange "$tmp/a2.jsonl")"
	status=1
else
	echo "ok: weights sent ${w% *} bytes for ${w#* } fp32 bytes"
fi

# Resume at step 14 = uninterrupted.
run2 $U --steps 14 --micro-batches 1 $A --log-json r.jsonl --checkpoint r.h5
run2 train --resume r.h5 --steps 30 --log-json r.jsonl --checkpoint r.h5 --quiet
losses "$tmp/r.jsonl" > "$tmp/r.l"
same "--wire-weights awp: resumed at step 14 = uninterrupted" "$tmp/a2.l" "$tmp/r.l"
diff=$("$top/tests/models/ckpt_util" cmp "$tmp/a2.h5" "$tmp/r.h5")
if ! echo "$diff" | grep -q "(0 differences)"; then
	echo "FAIL: the resumed run's final checkpoint differs:"; echo "$diff"; status=1
else
	echo "ok: resumed final checkpoint = uninterrupted one bit for bit ($(echo "$diff" | tail -n 1))"
fi
# the resumed log: the formats at step 14, then the same changes as the uninterrupted run's
if ! cmp -s <(grep wire_weights "$tmp/a2.jsonl" | awk -F'[:,]' '$2 > 14') \
	<(grep wire_weights "$tmp/r.jsonl" | awk -F'[:,]' '$2 > 14'); then
	echo "FAIL: the resumed run's format changes after step 14 differ"; status=1
fi

# The resolution rule (runtime/train/awp.h): the owner's step norms go with
# the weights; 2 ranks = 1 rank, and resumed at step 20 = uninterrupted:
# a layer changes format at step 21 on the observation pending at the save
# (a resumed run that did not restore it from the checkpoint differs).
A="--shard-optimizer --wire-weights awp --awp-rule resolution --awp-interval 3 --awp-res-factor 1"
"$unet" $U --steps 30 --micro-batches 2 $A --log-json "$tmp/s1.jsonl" > "$tmp/s1.txt" 2>&1 ||
	{ echo "FAIL: one rank with the resolution rule exited $?"; cat "$tmp/s1.txt"; exit 1; }
run2 $U --steps 30 --micro-batches 1 $A --log-json s2.jsonl
run2 $U --steps 20 --micro-batches 1 $A --log-json sr.jsonl --checkpoint sr.h5
run2 train --resume sr.h5 --steps 30 --log-json sr.jsonl --quiet
losses "$tmp/s1.jsonl" > "$tmp/s1.l"; losses "$tmp/s2.jsonl" > "$tmp/s2.l"; losses "$tmp/sr.jsonl" > "$tmp/sr.l"
same "--awp-rule resolution: 2 ranks = one rank" "$tmp/s1.l" "$tmp/s2.l"
same "--awp-rule resolution: resumed at step 20 = uninterrupted" "$tmp/s2.l" "$tmp/sr.l"
late=$(grep wire_weights "$tmp/s2.jsonl" | awk -F'[:,]' '$2 > 20' | wc -l)
if [ "$late" -lt 1 ] || ! cmp -s <(grep wire_weights "$tmp/s2.jsonl" | awk -F'[:,]' '$2 > 20') \
	<(grep wire_weights "$tmp/sr.jsonl" | awk -F'[:,]' '$2 > 20'); then
	echo "FAIL: the resolution rule's format changes after step 20: $late, or the resumed run's differ"; status=1
else
	echo "ok: the resolution rule's $late format change(s) after step 20, the same in the resumed run"
fi

# Usage errors.
"$unet" $U --steps 1 --wire-weights int8 > "$tmp/e.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "--wire-weights needs --shard-optimizer" "$tmp/e.txt" ||
	{ echo "FAIL: --wire-weights without --shard-optimizer: exit $rc, $(cat "$tmp/e.txt")"; status=1; }
"$unet" $U --steps 1 --shard-optimizer --awp-interval 5 > "$tmp/e.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "need --wire-weights awp" "$tmp/e.txt" ||
	{ echo "FAIL: --awp-interval without awp: exit $rc, $(cat "$tmp/e.txt")"; status=1; }
"$unet" $U --steps 1 --shard-optimizer --wire-weights awp --awp-start-bits 12 > "$tmp/e.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "--awp-start-bits" "$tmp/e.txt" ||
	{ echo "FAIL: --awp-start-bits 12: exit $rc, $(cat "$tmp/e.txt")"; status=1; }
[ $status = 0 ] && echo "ok: usage errors"
exit $status
