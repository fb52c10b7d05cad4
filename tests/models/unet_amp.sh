#!/bin/sh
# models/unet with mixed precision (--precision amp-fp16 / amp-bf16).
# 1. Quality: synthetic training (16x16, depth 2, f 4, 512 samples, batch 8
#    in 2 micro-batches, Adam: 200 steps at lr 3e-3 with 20 warm-up steps,
#    then --resume with lr 3e-4 to step 250; ~4 epochs) for seeds 1-5 in
#    each precision. The mean over the seeds of the amp / fp32
#    validation-MSE ratio (same seed: same data and initial weights) must be
#    at most 1.02 (at most 2% worse; one-sided) and at least 0.95 (a sanity
#    bound), and every precision's mean validation MSE must be below
#    persistence's (it learned).
#    Why this design: rounding differences move the training trajectory, so
#    one seed's ratio is noisy. Measured on this CPU with exactly this
#    configuration, amp / fp32 ratios of seeds 1-16:
#      amp-fp16  1.0054 1.0005 1.0010 0.9960 1.0051 1.0088 0.9926 0.9820
#                1.0004 1.0015 1.0141 0.9892 0.9968 1.0078 0.9980 0.9669
#                mean 0.9979, sd 0.0114, from 0.967 to 1.014
#      amp-bf16  1.0200 0.9854 0.9980 0.9960 0.9994 1.0047 1.0095 0.9876
#                0.9968 1.0007 0.9970 1.0001 0.9998 1.0209 1.0000 0.9871
#                mean 1.0002, sd 0.0101, from 0.985 to 1.021
#    and fp32 with --micro-batches 1 (only the summation order differs),
#    seeds 1-8: 1.0003 1.0000 0.9951 0.9999 1.0014 1.0030 1.0114 1.0041
#    (sd 0.0047: even fp32 rounding noise moves one seed by 1%). So one seed
#    cannot test a 2% bound (two bf16 seeds are above +2%; in the previous
#    64-step test seed 4 was +4.1%). The mean of 5 seeds has a standard
#    deviation of about 0.0114 / sqrt(5) = 0.5%: the bound is ~4 of them
#    above the measured means. 5-seed means: seeds 1-5 (this test) fp16
#    1.0016, bf16 0.9997; seeds 6-10: 0.9971, 0.9999; 11-15: 1.0012, 1.0036.
#    The low-lr phase matters: with lr 3e-3 to the end (200 steps) single
#    seeds spread from 0.98 to 1.17 (fp16) and 0.98 to 1.06 (bf16).
#    models/unet has no decay schedule: the second phase is a --resume with
#    --lr (which exercises resuming amp runs too).
# 2. Overflow: STARNN_UNET_INJECT_INF_STEP puts an Inf into one gradient at
#    one step: the program compares the weights and optimizer state bit for
#    bit before and after that step (and fails if they changed), a dynamic
#    scale halves, a static one stays, one step is counted as skipped, and
#    training goes on to finite weights.
# 3. The peak memory line is printed, smaller for amp than for fp32.
# 4. Resume: 16 steps uninterrupted vs 8 steps + --resume to 16, with an
#    Inf injected at step 4 (the scale is halved before the checkpoint):
#    amp-fp16 with dynamic scaling (Adam), amp-bf16 with a static scale
#    (SGD): the per-step losses (--log-json text) are identical, the final
#    checkpoints are identical bit for bit (every dataset and every
#    attribute, loss_scale_good_steps included: tests/models/ckpt_util),
#    and the resumed run reports the restored state (scale 32768 / 1024, 4
#    clean steps, 1 skipped, 7 applied). A checkpoint rewritten as format
#    version 1 (no precision attributes) resumes as fp32: the same losses
#    as resuming the original with --precision fp32 --loss-scale none;
#    resuming with another precision works and prints a note; a newer
#    format version is refused.
# 5. eval and predict work on an amp checkpoint: by default in its
#    precision (printed), and in fp32 or another precision when asked.
# 6. Bad options exit with status 2.
# In the sanitizer build, part 1 trains each precision once (seed 1, 40 +
# 10 steps): the programs' memory and undefined behaviour are checked on the
# same code paths, the quality bounds (15 trainings of 250 steps, 4.5
# minutes under ASan) only in the plain builds, where they mean something.
# STARNN_TEST_QUALITY=off does the same in a plain build (CI's second StarPU
# build: the bounds were checked on the same starnn code in its first stage).
set -u
B=${top_builddir:-.}
unet=$B/models/unet
util=$B/tests/models/ckpt_util
export STARPU_NCPU=${STARPU_NCPU:-2} STARPU_NCUDA=0 STARPU_SILENT=1
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Per-step losses of a --log-json file, "step loss" lines.
losses() { sed -n 's/^{"step":\([0-9]*\),"epoch":[0-9]*,"loss":\([^,]*\),.*/\1 \2/p' "$1"; }

# ------------------------------------------------------------------ 1. quality
Q="--size 16 --depth 2 --filters 4 --samples 512 --val-samples 64 --batch 8 --micro-batches 2 --warmup 20"
SEEDS="1 2 3 4 5" STEPS1=200 STEPS2=250
sanitized=0
if grep -q '^ *sanitizers *: *yes' "$B/config.summary" 2> /dev/null || [ "${STARNN_TEST_QUALITY:-on}" = off ]; then
	sanitized=1 SEEDS=1 STEPS1=40 STEPS2=50
	echo "note: sanitizer build or STARNN_TEST_QUALITY=off: one seed of 50 steps per precision, no quality bounds"
fi
quality() { # quality PRECISION SEED: "MSE persistence" in $res, peak in $peak
	p=$1 s=$2
	out=$("$unet" train $Q --seed "$s" --precision "$p" --steps $STEPS1 --lr 3e-3 --eval-every 0 \
		--checkpoint "$tmp/q.h5" --quiet 2>&1) || { echo "$out"; fail "quality $p seed $s: phase 1 exited $?"; }
	out=$("$unet" train --resume "$tmp/q.h5" --steps $STEPS2 --lr 3e-4 --checkpoint "$tmp/q.h5" --quiet 2>&1)
	rc=$?
	[ $rc = 0 ] || { echo "$out"; fail "quality $p seed $s: phase 2 exited $rc"; }
	res=$(echo "$out" | sed -n 's/^eval at step '$STEPS2': MSE \([0-9.e+-]*\) (persistence \([0-9.e+-]*\)).*/\1 \2/p')
	peak=$(echo "$out" | sed -n 's/^peak memory node 0: \([0-9.]*\) MiB.*/\1/p')
	[ -n "$res" ] || { echo "$out"; fail "quality $p seed $s: no validation MSE at step $STEPS2"; res="nan nan"; }
	[ -n "$peak" ] || fail "quality $p seed $s: no 'peak memory node 0' line"
	echo "[quality $p seed $s] MSE, persistence: $res; peak $peak MiB"
}
for s in $SEEDS; do
	for p in fp32 amp-fp16 amp-bf16; do
		quality $p $s
		echo "$s $p $res $peak" >> "$tmp/quality"
		[ "$s $p" = "1 amp-fp16" ] && cp "$tmp/q.h5" "$tmp/amp-fp16.h5"
	done
done
for p in amp-fp16 amp-bf16; do
	# mean over the seeds of amp / fp32, mean MSEs, mean persistence, peaks
	line=$(awk -v p=$p '$2 == "fp32" { f[$1] = $3; fp[$1] = $5 }
		$2 == p { a[$1] = $3; ap[$1] = $5; per[$1] = $4 }
		END { for (s in a) { n++; r += a[s] / f[s]; ma += a[s]; mf += f[s]; mp += per[s] }
		      printf "%.4f %.5f %.5f %.5f %d %s %s", r / n, ma / n, mf / n, mp / n, n, ap[1], fp[1] }' "$tmp/quality")
	set -- $line
	ratio=${1:-} ma=${2:-} mf=${3:-} mp=${4:-} n=${5:-0} pa=${6:-} pf=${7:-} # short when runs failed
	if [ $sanitized = 1 ]; then
		echo "note: $p: amp / fp32 validation MSE ratio $ratio after $STEPS2 steps (not bounded here)"
	elif [ "$n" = 5 ] && awk -v r="$ratio" 'BEGIN { exit !(r <= 1.02 && r >= 0.95) }'; then
		ok "$p: mean amp / fp32 validation MSE ratio over seeds $SEEDS: $ratio (mean MSE $ma vs $mf; bound 0.95 .. 1.02)"
	else
		fail "$p: mean amp / fp32 validation MSE ratio over seeds $SEEDS: $ratio (mean MSE $ma vs $mf over $n seeds; bound 0.95 .. 1.02)"
	fi
	if [ $sanitized = 0 ]; then
		awk -v a="$ma" -v f="$mf" -v q="$mp" 'BEGIN { exit !(a < q && f < q) }' &&
			ok "$p and fp32 beat persistence on average: $ma, $mf < $mp" ||
			fail "$p or fp32 does not beat persistence on average: $ma, $mf vs $mp"
	fi
	awk -v a="$pa" -v f="$pf" 'BEGIN { exit !(a < f) }' && ok "$p peak memory $pa MiB < fp32's $pf MiB" ||
		fail "$p peak memory $pa MiB not below fp32's $pf MiB"
done

# ------------------------------------------------------------------ 2. overflow
small="--size 32 --depth 2 --filters 4 --samples 128 --val-samples 32 --batch 4"
inject() { # inject NAME EXPECTED_SCALE ARGS...
	name=$1 scale=$2; shift 2
	out=$(STARNN_UNET_INJECT_INF_STEP=5 "$unet" train $small --steps 12 --seed 2 --eval-every 0 --quiet "$@" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/[$name] /"
	[ $rc = 0 ] || fail "$name: unet exited $rc"
	echo "$out" | grep -q "^inject: Inf in a gradient at step 5: weights and optimizer state unchanged bit for bit, scale [0-9]* -> $scale\$" ||
		fail "$name: step 5 not skipped with scale $scale"
	echo "$out" | grep -q "^loss scale: $scale, 1 steps skipped (Inf/NaN gradients), 11 applied\$" ||
		fail "$name: expected 1 skipped and 11 applied steps, scale $scale"
	echo "$out" | grep -q "^inject: 0 of [0-9]* final weights" || fail "$name: non-finite weights at the end"
}
# (STARNN_UNET_INJECT_INF_STEP is a test hook: builds configured with
# --enable-test-hooks, as tools/setup's, only; the resumed runs of part 4
# take their loss-scale state from it)
hooks=no
grep -q '^ *test hooks *: *yes' "$B/config.summary" 2> /dev/null && hooks=yes
if [ $hooks = yes ]; then
	inject "inject amp-fp16" 32768 --precision amp-fp16
	inject "inject amp-bf16 sgd" 32768 --precision amp-bf16 --loss-scale dynamic --optimizer sgd
	inject "inject fp16 static 1024" 1024 --precision amp-fp16 --loss-scale 1024
else
	echo "note: no test hooks in this build (configure --enable-test-hooks): the overflow and the resumed loss-scale state are not checked"
fi

# ------------------------------------------------------------------ 4. resume
if [ $hooks = yes ]; then
R="$small --seed 2 --eval-every 0 --quiet"
resume() { # resume NAME EXPECTED_SCALE ARGS...
	name=$1 scale=$2; shift 2
	d=$tmp/$name
	mkdir -p "$d"
	export STARNN_UNET_INJECT_INF_STEP=4
	"$unet" train $R "$@" --steps 16 --checkpoint "$d/a.h5" --log-json "$d/a.json" > "$d/a.out" 2>&1 ||
		{ cat "$d/a.out"; fail "$name: 16-step run"; }
	"$unet" train $R "$@" --steps 8 --checkpoint "$d/b8.h5" --log-json "$d/b.json" > "$d/b.out" 2>&1 ||
		{ cat "$d/b.out"; fail "$name: 8-step run"; }
	cp "$d/b8.h5" "$d/b.h5"
	# not --quiet: the restored state is printed
	"$unet" train --resume "$d/b.h5" --steps 16 --checkpoint "$d/b.h5" --log-json "$d/b.json" > "$d/r.out" 2>&1 ||
		{ cat "$d/r.out"; fail "$name: resumed run"; }
	unset STARNN_UNET_INJECT_INF_STEP
	grep "^loss scale" "$d/r.out" | sed "s/^/[$name resumed] /"
	grep -q "^loss scale resumed: $scale, 4 clean steps toward doubling, 1 skipped, 7 applied\$" "$d/r.out" &&
		ok "$name: the resumed run restored scale $scale, 4 clean steps, 1 skipped, 7 applied" ||
		fail "$name: loss-scale state not restored (scale $scale, 4 clean, 1 skipped, 7 applied expected)"
	losses "$d/a.json" > "$d/a.loss"
	losses "$d/b.json" > "$d/b.loss"
	if [ "$(wc -l < "$d/a.loss")" = 16 ] && cmp -s "$d/a.loss" "$d/b.loss"; then
		ok "$name: 16 per-step losses of 8 + resumed 8 identical to the uninterrupted run"
	else
		fail "$name: resumed losses differ from the uninterrupted run"
		diff "$d/a.loss" "$d/b.loss" | head
	fi
	"$util" cmp "$d/a.h5" "$d/b.h5" | sed "s/^/[$name cmp] /"
	"$util" cmp "$d/a.h5" "$d/b.h5" > /dev/null && ok "$name: final checkpoints identical bit for bit" ||
		fail "$name: final checkpoints differ"
}
# (fp16-dynamic in the starnn-v1 convention: its checkpoint is made a
# version-1 file below, and such a file is a starnn-v1 model)
resume fp16-dynamic 32768 --precision amp-fp16 --convention starnn-v1
resume bf16-static 1024 --precision amp-bf16 --loss-scale 1024 --optimizer sgd

# An older checkpoint (format version 1: no precision attributes) resumes as
# fp32 without loss scaling: as the original does when told so.
d=$tmp/fp16-dynamic
cp "$d/b8.h5" "$d/v1.h5"
"$util" version "$d/v1.h5" 1 || fail "cannot make a version-1 checkpoint"
"$unet" train --resume "$d/v1.h5" --steps 12 --log-json "$d/v1.json" --eval-every 0 > "$d/v1.out" 2>&1 ||
	{ cat "$d/v1.out"; fail "resuming a version-1 checkpoint"; }
"$unet" train --resume "$d/b8.h5" --precision fp32 --loss-scale none --steps 12 --log-json "$d/f32.json" \
	--eval-every 0 > "$d/f32.out" 2>&1 || { cat "$d/f32.out"; fail "resuming amp-fp16 as fp32"; }
grep -q "^precision: fp32$" "$d/v1.out" && [ "$(losses "$d/v1.json" | wc -l)" = 4 ] &&
	[ "$(losses "$d/v1.json")" = "$(losses "$d/f32.json")" ] &&
	ok "a version-1 checkpoint resumes as fp32 (same 4 losses as --precision fp32 --loss-scale none)" ||
	fail "a version-1 checkpoint does not resume as fp32"
grep -q "note: .*b8.h5 was trained with --precision amp-fp16, dynamic loss scaling; continuing with fp32, no loss scaling" \
	"$d/f32.out" && ok "another precision on resume: $(grep note "$d/f32.out" | cut -c1-110)..." ||
	{ cat "$d/f32.out"; fail "resuming with another precision printed no note"; }
"$unet" train --resume "$d/b8.h5" --precision amp-bf16 --steps 10 --eval-every 0 --quiet || fail "resume amp-fp16 as amp-bf16"
"$unet" train --resume "$d/v1.h5" --precision amp-fp16 --steps 10 --eval-every 0 > "$d/up.out" 2>&1 &&
	grep -q "^loss scale resumed: 65536, 0 clean steps toward doubling, 0 skipped, 8 applied$" "$d/up.out" &&
	ok "an fp32 checkpoint resumes in amp-fp16 with a fresh scale, its 8 steps counted as applied" ||
	{ cat "$d/up.out"; fail "resuming an fp32 checkpoint in amp-fp16"; }
cp "$d/b8.h5" "$d/v9.h5"
"$util" version "$d/v9.h5" 9 || fail "cannot set a format version"
"$unet" train --resume "$d/v9.h5" --steps 10 --quiet > "$d/v9.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "format_version 9" "$d/v9.out" && ok "a newer format version is refused: $(cat "$d/v9.out")" ||
	{ cat "$d/v9.out"; fail "format version 9 not refused with status 1 (got $rc)"; }
STARNN_UNET_INJECT_INF_STEP=10 "$unet" train --resume "$d/v1.h5" --steps 12 --quiet > /dev/null 2>&1
[ $? = 2 ] || fail "an injected Inf on a resumed run without loss scaling not refused with status 2"
fi

# ------------------------------------------------------------------ 5. eval, predict
for p in default fp32 amp-bf16; do
	opt="--precision $p"
	[ $p = default ] && opt=
	out=$("$unet" eval --checkpoint "$tmp/amp-fp16.h5" --val-samples 16 $opt 2>&1)
	rc=$?
	want=$p
	[ $p = default ] && want=amp-fp16
	if [ $rc = 0 ] && echo "$out" | grep -q "^evaluating .*, precision $want$" && echo "$out" | grep -q persistence; then
		ok "eval ${opt:-(checkpoint's precision)} of an amp-fp16 checkpoint: $(echo "$out" | grep -m1 "^evaluating")"
	else
		echo "$out"
		fail "eval ${opt:-(default)} of an amp-fp16 checkpoint (exit $rc, precision $want expected)"
	fi
done
out=$("$unet" predict --checkpoint "$tmp/amp-fp16.h5" --val-samples 4 --output "$tmp/f.h5" 2>&1)
[ $? = 0 ] && [ -s "$tmp/f.h5" ] && echo "$out" | grep -q "precision amp-fp16$" &&
	ok "predict with an amp-fp16 checkpoint in its precision" || { echo "$out"; fail "predict with an amp checkpoint"; }

# How the CPU workers run the 16-bit convolutions is said at start-up: fp16
# is always widened (oneDNN 2.6 has no fp16 convolution), bf16 is native
# exactly where the oneDNN probe says so; fp32 has such a line only where
# weight gradients leave oneDNN for starnn's kernels (STARNN_CONV2D_WGRAD).
small2="--size 16 --depth 1 --filters 2 --samples 8 --val-samples 4 --batch 2 --steps 1 --eval-every 0"
out=$("$unet" train $small2 --precision amp-fp16 2>&1)
echo "$out" | grep -q "^convolutions: fp16 widened to fp32 on CPU workers (oneDNN 2.6 has no fp16 convolution)" &&
	ok "amp-fp16: the widened CPU convolutions are said" || { echo "$out"; fail "amp-fp16: no 'convolutions:' line"; }
out=$("$unet" train $small2 --precision amp-bf16 2>&1)
echo "$out" | grep -q "^convolutions: bf16 \(native\|widened to fp32\) on CPU workers" &&
	ok "amp-bf16: $(echo "$out" | grep '^convolutions:' | cut -c1-60)..." || { echo "$out"; fail "amp-bf16: no 'convolutions:' line"; }
# the bf16 weight gradients' gemm route is said where auto takes it (native
# bf16 with oneDNN's NHWC pick: AMX), and the whole gemm route when forced
if echo "$out" | grep -q "^convolutions: bf16 native"; then
	gout=$(STARNN_CONV2D_WGRAD=gemm "$unet" train $small2 --precision amp-bf16 2>&1) || { echo "$gout"; fail "amp-bf16 with STARNN_CONV2D_WGRAD=gemm failed"; }
	echo "$gout" | grep -q "^convolutions: bf16 native.*every weight gradient on im2col + a bf16 matmul" &&
		ok "amp-bf16, STARNN_CONV2D_WGRAD=gemm: said" || { echo "$gout"; fail "amp-bf16: the forced gemm route is not said"; }
	if echo "$out" | grep -q "^activations: NHWC"; then
		echo "$out" | grep -q "^convolutions: bf16 native.*>= 64 -> >= 128 channels at <= 8x8 pixels on im2col + a bf16 matmul" &&
			ok "amp-bf16 (NHWC): the wide layers' gemm route is said" ||
			fail "amp-bf16 (NHWC): the gemm route is not said: $(echo "$out" | grep '^convolutions:')"
	fi
fi
out=$(STARNN_CONV2D_CPU=im2col "$unet" train $small2 --precision amp-bf16 2>&1)
echo "$out" | grep -q "^convolutions: bf16 widened to fp32 on CPU workers (the im2col route" &&
	ok "amp-bf16 with STARNN_CONV2D_CPU=im2col: widened, said" || { echo "$out"; fail "im2col amp-bf16: no route line"; }
out=$(STARNN_CONV2D_WGRAD=dnnl "$unet" train $small2 2>&1)
echo "$out" | grep -q "^convolutions:" && fail "fp32 run printed a 'convolutions:' line" || ok "fp32: no route line"
out=$("$unet" train $small2 2>&1)
echo "$out" | grep "^convolutions:" | grep -qv "^convolutions: fp32 on oneDNN, the \(3x3 \)\{0,1\}weight gradients" &&
	fail "fp32 run printed another 'convolutions:' line: $(echo "$out" | grep '^convolutions:')" ||
	ok "fp32: $(echo "$out" | grep '^convolutions:' | cut -c1-70)"

# ------------------------------------------------------------------ 6. bad options
"$unet" train --precision fp8 > /dev/null 2>&1
[ $? = 2 ] || fail "--precision fp8 not refused with status 2"
"$unet" train --loss-scale 0 > /dev/null 2>&1
[ $? = 2 ] || fail "--loss-scale 0 not refused with status 2"
"$unet" eval --checkpoint x.h5 --loss-scale dynamic > /dev/null 2>&1
[ $? = 2 ] || fail "--loss-scale with eval not refused with status 2"
if [ $hooks = yes ]; then
	STARNN_UNET_INJECT_INF_STEP=3 "$unet" train --precision amp-bf16 > /dev/null 2>&1
	[ $? = 2 ] || fail "an injected Inf without loss scaling not refused with status 2"
fi
exit $status
