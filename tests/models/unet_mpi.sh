#!/bin/bash
# models/unet train under mpirun -np 2 (data-distributed, runtime/train/dist.h),
# one CPU worker per rank, against one rank with the same global batch and
# the same total number of micro-batches (2 x 1 against 1 x 2):
#   - BatchNorm statistics over all ranks (the default): every step's loss
#     equal, and rank 0's checkpoint equal bit for bit to the one-rank
#     checkpoint (weights, BN running statistics, Adam state; only the
#     micro_batches attribute differs);
#   - amp-bf16: the 12 losses equal too;
#   - --bn-sync local: trains, with finite losses (another model: per-rank
#     statistics);
#   - only rank 0 writes the checkpoint and the log; eval under mpirun is
#     refused; a global batch smaller than the ranks is refused.
# A tiny UNet (depth 1, 16x16): on 2 busy cores the exchange's latency
# dominates. Skips (77) without StarPU-MPI or without mpirun.
set -u
. "$(dirname "$0")/mpi_common.sh"
unet=$top/models/unet
U="train --size 16 --depth 1 --filters 4 --batch 4 --steps 12 --samples 32 --eval-every 0 --seed 3 --quiet"
losses() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' "$1"; }

"$unet" $U --micro-batches 2 --log-json "$tmp/one.jsonl" --checkpoint "$tmp/one.h5" > "$tmp/one.txt" 2>&1 ||
	{ echo "FAIL: one rank exited $?"; cat "$tmp/one.txt"; exit 1; }
(cd "$tmp" && timeout 150 $MPIRUN -np 2 "$unet" $U --micro-batches 1 --log-json two.jsonl --checkpoint two.h5) \
	> "$tmp/two.txt" 2>&1 || { echo "FAIL: 2 ranks exited $?"; cat "$tmp/two.txt"; exit 1; }
losses "$tmp/one.jsonl" > "$tmp/one.l"
losses "$tmp/two.jsonl" > "$tmp/two.l"
if [ "$(wc -l < "$tmp/one.l")" != 12 ] || ! cmp -s "$tmp/one.l" "$tmp/two.l"; then
	echo "FAIL: 12 losses of 2 ranks differ from one rank's (step one two):"
	join "$tmp/one.l" "$tmp/two.l" | awk '$2 != $3'
	status=1
else
	echo "ok: 2 ranks x 1 micro-batch = 1 rank x 2: 12 losses equal (last $(tail -n 1 "$tmp/one.l"))"
fi
diff=$("$top/tests/models/ckpt_util" cmp "$tmp/one.h5" "$tmp/two.h5")
if [ "$(echo "$diff" | head -n 1)" != "micro_batches: other values" ] || ! echo "$diff" | grep -q "(1 differences)"; then
	echo "FAIL: rank 0's checkpoint differs from one rank's beyond micro_batches:"; echo "$diff"; status=1
else
	echo "ok: rank 0's checkpoint = one rank's bit for bit ($(echo "$diff" | tail -n 1))"
fi
n=$(grep -c '^{"step":' "$tmp/two.jsonl")
[ "$n" = 12 ] || { echo "FAIL: the log has $n step lines, not 12 (rank 0 alone writes it)"; status=1; }
# The energy summary (read on every rank, summed over them) ends the log, once.
[ "$(grep -c '^{"summary":' "$tmp/two.jsonl")" = 1 ] && tail -n 1 "$tmp/two.jsonl" | grep -q '^{"summary":{"steps":12,' ||
	{ echo "FAIL: no single summary record at the end of the log: $(tail -n 1 "$tmp/two.jsonl")"; status=1; }

# amp-bf16 (16-bit activations, fp32 masters): the same bits too.
"$unet" $U --micro-batches 2 --precision amp-bf16 --log-json "$tmp/b1.jsonl" > "$tmp/b1.txt" 2>&1 &&
	(cd "$tmp" && timeout 150 $MPIRUN -np 2 "$unet" $U --micro-batches 1 --precision amp-bf16 --log-json b2.jsonl) \
	> "$tmp/b2.txt" 2>&1 || { echo "FAIL: amp-bf16 runs exited $?"; cat "$tmp/b1.txt" "$tmp/b2.txt"; status=1; }
losses "$tmp/b1.jsonl" > "$tmp/b1.l"
losses "$tmp/b2.jsonl" > "$tmp/b2.l"
if [ "$(wc -l < "$tmp/b1.l")" != 12 ] || ! cmp -s "$tmp/b1.l" "$tmp/b2.l"; then
	echo "FAIL: amp-bf16: 2 ranks differ from one rank (step one two):"; join "$tmp/b1.l" "$tmp/b2.l" | awk '$2 != $3'
	status=1
else
	echo "ok: amp-bf16: 2 ranks x 1 = 1 rank x 2, 12 losses equal (last $(tail -n 1 "$tmp/b1.l"))"
fi

(cd "$tmp" && timeout 150 $MPIRUN -np 2 "$unet" $U --micro-batches 1 --bn-sync local --log-json local.jsonl) \
	> "$tmp/local.txt" 2>&1 || { echo "FAIL: --bn-sync local exited $?"; cat "$tmp/local.txt"; status=1; }
losses "$tmp/local.jsonl" > "$tmp/local.l"
if [ "$(wc -l < "$tmp/local.l")" != 12 ] || awk '$2 != $2 + 0 || $2 == "nan" || $2 == "inf" { bad = 1 } END { exit !bad }' "$tmp/local.l"; then
	echo "FAIL: --bn-sync local: no 12 finite losses"; cat "$tmp/local.txt"; status=1
else
	echo "ok: --bn-sync local: 12 finite losses (last $(tail -n 1 "$tmp/local.l"); global statistics: $(tail -n 1 "$tmp/one.l"))"
fi

# Evaluation during training, spread over the ranks (each scores its share
# of the 30 held-out samples, the sums are combined): the contingency
# counts give the same CSI, the error sums agree to 1e-9 relative (another
# order of the double sums).
E="train --size 16 --depth 1 --filters 4 --batch 4 --steps 6 --samples 32 --val-samples 30 --seed 3 --quiet"
evalrec() { grep '"eval"' "$1" | tail -n 1 | sed 's/,"per_lead".*//'; }
"$unet" $E --micro-batches 2 --log-json "$tmp/e1.jsonl" > "$tmp/e1.txt" 2>&1 &&
	(cd "$tmp" && timeout 150 $MPIRUN -np 2 "$unet" $E --micro-batches 1 --log-json e2.jsonl) > "$tmp/e2.txt" 2>&1 ||
	{ echo "FAIL: the evaluation runs exited $?"; cat "$tmp/e1.txt" "$tmp/e2.txt"; status=1; }
r1=$(evalrec "$tmp/e1.jsonl") r2=$(evalrec "$tmp/e2.jsonl")
field() { echo "$1" | sed -n "s/.*\"$2\":\([^,]*\),.*/\1/p"; }
csi() { echo "$1" | sed -n 's/.*"csi":\(\[[^]]*\]\).*/\1/p'; }
if [ -z "$r1" ] || [ "$(csi "$r1")" != "$(csi "$r2")" ] ||
	! awk -v a="$(field "$r1" mse)" -v b="$(field "$r2" mse)" -v c="$(field "$r1" mae)" -v d="$(field "$r2" mae)" \
		'BEGIN { exit !(a > 0 && (a - b) ^ 2 <= (1e-9 * a) ^ 2 && (c - d) ^ 2 <= (1e-9 * c) ^ 2) }'; then
	echo "FAIL: the evaluation on 2 ranks differs from one rank's:"; echo "$r1"; echo "$r2"; status=1
else
	echo "ok: evaluation spread over 2 ranks = one rank's (MSE $(field "$r2" mse), CSI $(csi "$r2"))"
fi

out=$(timeout 60 $MPIRUN -np 2 "$unet" eval --checkpoint "$tmp/one.h5" 2>&1)
rc=$?
if [ $rc = 0 ] || ! echo "$out" | grep -q "runs on one rank"; then
	echo "FAIL: eval under mpirun: exit $rc"; echo "$out"; status=1
else
	echo "ok: eval under mpirun refused (exit $rc)"
fi
# A global batch smaller than the ranks: refused on every rank, the job ends (exit 2).
out=$(timeout 60 $MPIRUN -np 3 "$unet" train --size 16 --depth 1 --filters 4 --batch 2 --steps 2 --samples 8 --eval-every 0 2>&1)
rc=$?
if [ $rc = 0 ] || [ $rc = 124 ] || ! echo "$out" | grep -q "cannot be split over 3 ranks"; then
	echo "FAIL: --batch 2 on 3 ranks: exit $rc"; echo "$out"; status=1
else
	echo "ok: --batch 2 on 3 ranks refused (exit $rc)"
fi
exit $status
