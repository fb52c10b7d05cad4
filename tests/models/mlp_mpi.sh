#!/bin/bash
# models/mlp under mpirun (data-distributed, runtime/train/dist.h), one CPU
# worker per rank: the losses of 20 steps (all their digits,
# STARNN_MLP_EXACT=1) and the validation MSE equal, bit for bit, those of
# one rank with the same global batch and the same total number of
# micro-batches (the all-reduce sums in the order of the micro-batch
# tree, runtime/train/dist.h), also with the gradients cut into chunks. Then the faults: a global batch smaller than the
# ranks, ranks started with other options, a rank killed. Skips (77)
# without StarPU-MPI or without mpirun.
set -u
. "$(dirname "$0")/mpi_common.sh"
mlp=$top/models/mlp
export STARNN_MLP_EXACT=1

losses() { sed -n 's/^step *\([0-9]*\)\/.*loss \([0-9.e+-]*\).*/\1 \2/p; s/^final:.*validation MSE \([0-9.e+-]*\).*/val \1/p' "$1"; }

# compare NAME NP MICRO_PER_RANK OPTIONS...: -np NP against one rank with NP x MICRO micro-batches.
# (STARNN_MLP_EXACT and STARNN_DIST_CHUNK are test hooks, in builds
# configured with --enable-test-hooks only, as tools/setup's: without
# them the printed losses have 6 digits, too few to compare bit for bit,
# and the comparisons are skipped)
hooks=no
grep -q '^ *test hooks *: *yes' "$top/config.summary" 2> /dev/null && hooks=yes
[ $hooks = yes ] || echo "note: no test hooks in this build (configure --enable-test-hooks): the bit-for-bit comparisons are skipped"
compare() {
	[ $hooks = yes ] || return 0
	name=$1 np=$2 micro=$3
	shift 3
	"$mlp" --steps 20 --log-every 1 --micro-batches $((np * micro)) "$@" > "$tmp/one.txt" 2>&1 ||
		{ echo "FAIL: $name: one rank exited $?"; cat "$tmp/one.txt"; status=1; return; }
	timeout 120 $MPIRUN -np "$np" "$mlp" --steps 20 --log-every 1 --micro-batches "$micro" "$@" > "$tmp/many.txt" 2>&1 ||
		{ echo "FAIL: $name: $np ranks exited $?"; cat "$tmp/many.txt"; status=1; return; }
	losses "$tmp/one.txt" > "$tmp/one.l"
	losses "$tmp/many.txt" > "$tmp/many.l"
	if [ "$(wc -l < "$tmp/one.l")" != 21 ]; then
		echo "FAIL: $name: expected 20 losses and a validation MSE"; cat "$tmp/one.txt"; status=1
	elif ! cmp -s "$tmp/one.l" "$tmp/many.l"; then
		echo "FAIL: $name: $np ranks differ from one rank (step loss / loss):"
		paste "$tmp/one.l" "$tmp/many.l" | awk '$2 != $4'
		status=1
	else
		echo "ok: $name: $np ranks x $micro micro-batches = one rank x $((np * micro)), 20 losses and the validation MSE bit for bit (last: $(tail -n 2 "$tmp/one.l" | head -n 1))"
	fi
	grep -h '^starnn: rank' "$tmp/many.txt"
}

compare "adam fp32" 2 1 --batch 64
compare "sgd, batch 63 (uneven shares)" 3 1 --batch 63 --optimizer sgd
compare "adam, 2 micro-batches per rank" 2 2 --batch 64 --hidden 32,48
compare "amp-fp16, dynamic loss scale" 2 1 --batch 64 --precision amp-fp16
# Gradients cut into chunks (300 x 200 weights in chunks of 1000 elements
# along their rows: 60 trees each): the same bits.
export STARNN_DIST_CHUNK=1000
compare "chunked all-reduce" 2 1 --batch 64 --hidden 300,200
unset STARNN_DIST_CHUNK
# The parameter-owner mode (--shard-optimizer): with 2 ranks each gradient
# is reduced to its owner in the order of one rank (a sum of two), and one
# rank puts the weights through the same formats: the same bits; with
# amp-fp16 the overflow flag is OR-ed over the owners.
compare "sharded optimizer, adaptive weights" 2 1 --batch 64 --shard-optimizer --wire-weights awp --awp-interval 3
compare "sharded optimizer, amp-fp16, int8 weights" 2 1 --batch 64 --precision amp-fp16 --shard-optimizer --wire-weights int8

# Compressed gradients (--wire-grads): 20 steps train as the uncompressed
# run does (the validation MSE within 5% of it), the gradients' bytes on
# the wire shrink by the format's ratio, and a bad format is refused.
timeout 120 $MPIRUN -np 2 "$mlp" --steps 20 --batch 64 --hidden 512,512 > "$tmp/w32.txt" 2>&1 ||
	{ echo "FAIL: wire: uncompressed run exited $?"; status=1; }
mse() { sed -n 's/^final:.*validation MSE \([0-9.e+-]*\).*/\1/p' "$1"; }
gmib() { sed -n 's/^exchange:.*(gradients \([0-9.]*\) MiB.*/\1/p' "$1"; }
for w in bf16:2 trunc24:1.333 int8:3.9 fp8:3.9; do
	f=${w%:*} ratio=${w#*:}
	if ! timeout 120 $MPIRUN -np 2 "$mlp" --steps 20 --batch 64 --hidden 512,512 --wire-grads "$f" > "$tmp/w.txt" 2>&1; then
		echo "FAIL: --wire-grads $f exited $?"; cat "$tmp/w.txt"; status=1; continue
	fi
	if awk -v a="$(mse "$tmp/w32.txt")" -v b="$(mse "$tmp/w.txt")" -v m32="$(gmib "$tmp/w32.txt")" \
		-v m="$(gmib "$tmp/w.txt")" -v r="$ratio" \
		'BEGIN { exit !(a > 0 && b > 0 && (b - a) ^ 2 <= (0.05 * a) ^ 2 && m > 0 && m32 / m >= r * 0.97) }'; then
		echo "ok: --wire-grads $f: validation MSE $(mse "$tmp/w.txt") (fp32 exchange: $(mse "$tmp/w32.txt")), gradients $(gmib "$tmp/w.txt") MiB per step (fp32: $(gmib "$tmp/w32.txt"))"
	else
		echo "FAIL: --wire-grads $f: MSE $(mse "$tmp/w.txt") vs $(mse "$tmp/w32.txt"), $(gmib "$tmp/w.txt") vs $(gmib "$tmp/w32.txt") MiB"
		grep -E "^final|^exchange" "$tmp/w.txt"; status=1
	fi
done
out=$("$mlp" --wire-grads bf15 2>&1)
rc=$?
if [ $rc != 2 ] || ! echo "$out" | grep -q "wire-grads is none, bf16"; then
	echo "FAIL: --wire-grads bf15: exit $rc"; echo "$out"; status=1
else
	echo "ok: --wire-grads bf15 refused (exit 2)"
fi

# A global batch smaller than the ranks: usage error (2) with a message.
out=$(timeout 60 $MPIRUN -np 2 "$mlp" --batch 1 --val-size 8 2>&1)
rc=$?
if [ $rc = 0 ] || ! echo "$out" | grep -q "cannot be split over 2 ranks"; then
	echo "FAIL: --batch 1 on 2 ranks: exit $rc"; echo "$out"; status=1
else
	echo "ok: --batch 1 on 2 ranks refused (exit $rc)"
fi
# Ranks started with other options (MPMD): refused on every rank at start.
out=$(timeout 60 $MPIRUN -np 1 "$mlp" --steps 5 : -np 1 "$mlp" --steps 6 2>&1)
rc=$?
if [ $rc = 0 ] || ! echo "$out" | grep -q "rank 1 was started with other options than rank 0"; then
	echo "FAIL: different options: exit $rc"; echo "$out"; status=1
else
	echo "ok: ranks with different options refused (exit $rc)"
fi
# A rank killed (SIGKILL) in the middle of training: the others stop within
# 30 s with a non-zero status and a message naming the rank.
$MPIRUN -np 2 "$mlp" --steps 1000000 --log-every 100000 > "$tmp/kill.txt" 2>&1 &
launcher=$!
ranks=""
for i in $(seq 1 60); do
	ranks=$(rank_pids "$launcher" mlp)
	[ "$(echo $ranks | wc -w)" = 2 ] && grep -q "^mlp:" "$tmp/kill.txt" && break
	sleep 0.5
done
victim=$(echo $ranks | awk '{print $2}')
if [ -z "$victim" ]; then
	echo "FAIL: kill: the 2 ranks did not start"; cat "$tmp/kill.txt"; kill "$launcher"; status=1
else
	sleep 1
	kill -9 "$victim"
	start=$(date +%s)
	while kill -0 "$launcher" 2> /dev/null && [ $(($(date +%s) - start)) -lt 30 ]; do sleep 0.5; done
	if kill -0 "$launcher" 2> /dev/null; then
		echo "FAIL: kill: still running 30 s after a rank was killed"; kill "$launcher"; status=1
	else
		wait "$launcher"
		rc=$?
		if [ $rc = 0 ] || ! grep -q "rank 1" "$tmp/kill.txt"; then
			echo "FAIL: kill: exit $rc"; cat "$tmp/kill.txt"; status=1
		else
			echo "ok: rank 1 killed: stopped in $(($(date +%s) - start)) s, exit $rc: $(grep -m1 'rank 1 with PID' "$tmp/kill.txt")"
		fi
	fi
fi
exit $status
