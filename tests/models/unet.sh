#!/bin/sh
# models/unet end to end (about 25 s on 2 cores):
#  - info: "parameters: 16556044" for --depth 4 --filters 32; --help lists
#    every option the parser knows (the UNet's and the trainer's common ones);
#  - a short synthetic training run (32x32, depth 2, f 4, batch 4 in 2
#    micro-batches, 40 steps): the mean loss of the last 5 steps is below
#    that of the first 5, and the final evaluation prints model and
#    persistence scores;
#  - resume: 10 steps + --resume to 20 give the same per-step losses (the
#    --log-json lines, timing fields aside, compared as text), the same
#    evaluation (printed metrics compared as text) and the same optimizer
#    state (resuming both 20-step checkpoints to 25 steps gives the same
#    losses) as an uninterrupted 20-step run;
#  - a checkpoint of another architecture is refused with a message naming
#    the attribute; --steps 0 --checkpoint saves the initial model, which
#    --init starts from;
#  - (the layouts and the convolution routes: tests/models/unet_routes.sh;
#    both share tests/models/unet_common.sh)
#  - eval, predict (--output, --png) and training on tools/sevir-synth files
#    of both layouts (raw + CATALOG.csv, prepared);
#  - errors: bad options (exit 2; messages without starnn's source
#    locations), a missing file, a NaN in the data, an
#    unwritable output (exit 1, a message, no file left behind);
#  - pipelined steps (step k+1 submitted before step k's loss is read):
#    evaluations and checkpoints every 3 steps leave the losses unchanged and
#    the evaluation at step 6 equals `eval` of a 6-step checkpoint (the loop
#    waits for step 6 before submitting step 7); a diverging run (SGD lr 10)
#    stops with exit 1 naming the first non-finite step, every earlier step
#    logged, no checkpoint written; Ctrl-C finishes the steps in flight, the
#    checkpoint holds the last logged step, and resuming it continues as the
#    uninterrupted run.
. "$(dirname "$0")/unet_common.sh"

# ------------------------------------------------------------------ info, help
n=$("$unet" info --depth 4 --filters 32 | tail -1)
[ "$n" = "parameters: 16556044" ] && ok "info: $n" || fail "info --depth 4 --filters 32: '$n'"
"$unet" --help > "$tmp/help" || fail "--help exited non-zero"
src=${srcdir:-$(dirname "$0")/../..}
nopts=0
# (models/unet takes its own options and every common one of the trainer)
for opt in $(sed -n 's/^[[:space:]]*{"\([a-z-]*\)", [a-z_]*_argument.*/\1/p' "$src/models/unet_options.c" \
	"$src/runtime/train/options.c"); do
	nopts=$((nopts + 1))
	grep -q -- "--$opt" "$tmp/help" || fail "--help does not list --$opt"
done
[ $nopts -gt 30 ] && ok "--help lists all $nopts options" ||
	fail "found only $nopts options in $src/models/unet_options.c and $src/runtime/train/options.c"

# ------------------------------------------------------------------ training
C="--size 32 --depth 2 --filters 4 --batch 4 --micro-batches 2 --samples 64 --val-samples 16"
"$unet" train $C --steps 40 --lr 3e-3 --log-json "$tmp/t.json" --checkpoint "$tmp/t.h5" > "$tmp/t.out" 2>&1 ||
	{ fail "training run exited $?"; cat "$tmp/t.out"; }
losses "$tmp/t.json" > "$tmp/t.loss"
if [ "$(wc -l < "$tmp/t.loss")" != 40 ]; then
	fail "40 step lines expected in --log-json, got $(wc -l < "$tmp/t.loss")"
else
	first=$(head -5 "$tmp/t.loss" | awk '{ s += $2 } END { print s / 5 }')
	last=$(tail -5 "$tmp/t.loss" | awk '{ s += $2 } END { print s / 5 }')
	awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f) }' &&
		ok "loss falls: $first (steps 1-5) -> $last (steps 36-40)" || fail "loss does not fall: $first -> $last"
fi
grep -q '"eval":{' "$tmp/t.json" || fail "no evaluation line in --log-json"
grep -q "^eval at step 40: MSE .*persistence" "$tmp/t.out" && ok "$(grep '^eval at step 40' "$tmp/t.out")" ||
	{ fail "no final evaluation line"; cat "$tmp/t.out"; }

# ------------------------------------------------------------------ energy
# The energy line after the run (measured by a named method, or "not
# available" with the reason; this VM has no /sys/class/powercap), and the
# summary record as the last --log-json line (python3 checks it is JSON of
# the documented shape). A power model adds estimated figures, apart.
e=$(grep '^energy: ' "$tmp/t.out")
if echo "$e" | grep -Eq '^energy: [0-9.]+ J \((rapl|perf|nvml|rapl\+nvml|perf\+nvml): .*J per epoch, .*J per sample$' ||
	echo "$e" | grep -q '^energy: not available (.*)$'; then
	ok "$e"
else
	fail "no energy line: '$e'"
fi
[ -d /sys/class/powercap ] || echo "$e" | grep -q '^energy: not available (no RAPL: /sys/class/powercap is absent' ||
	fail "no /sys/class/powercap here, but the energy line does not say so: '$e'"
# summary FILE STEPS EPOCHS SAMPLES ESTIMATED(0|1): checks the last line's record
summary() {
	python3 - "$@" << 'EOF'
import json, sys
path, steps, epochs, samples, est = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
s = json.loads(open(path).read().splitlines()[-1])["summary"]
assert (s["steps"], s["epochs"], s["samples"]) == (steps, epochs, samples), s
assert s["elapsed"] > 0 and abs(s["samples_per_s"] - samples / s["elapsed"]) < 1e-6 * s["samples_per_s"], s
e = s["energy"]
assert e["method"] in ("rapl", "perf", "nvml", "rapl+nvml", "perf+nvml", "not available"), e
if e["method"] == "not available":
    assert e["reason"] and e["joules"] is None and e["joules_per_sample"] is None and e["domains"] == {}, e
else:
    assert "reason" not in e and e["joules"] > 0 and abs(sum(e["domains"].values()) - e["joules"]) < 1e-6 * e["joules"], e
assert (e["estimated"] is not None) == est, e
if est:
    assert e["estimated"]["joules"] > 0 and e["estimated"]["cpu_busy_s"] > 0, e
print(e["method"], e.get("reason", e["joules"]))
EOF
}
if ! command -v python3 > /dev/null; then
	echo "note: no python3: the summary records are not checked"
else
	r=$(summary "$tmp/t.json" 40 2.5 160 0) && ok "--log-json ends with the summary record ($r)" ||
		fail "summary record: $(tail -n 1 "$tmp/t.json")"
	"$unet" train $C --steps 3 --eval-every 0 --cpu-watts 10 --idle-watts 20 --log-json "$tmp/w.json" > "$tmp/w.out" 2>&1 ||
		fail "--cpu-watts run exited $?"
	grep -q '^energy estimated: [0-9.]* J (power model, not measured: [0-9.]* s busy CPU workers x 10 W, [0-9.]* s x 20 W idle)' \
		"$tmp/w.out" && ok "$(grep '^energy estimated' "$tmp/w.out")" || { fail "no estimated energy line"; cat "$tmp/w.out"; }
	r=$(summary "$tmp/w.json" 3 0.1875 12 1) && ok "estimated figures in the summary record" ||
		fail "summary record with a power model: $(tail -n 1 "$tmp/w.json")"
	"$unet" eval --checkpoint "$tmp/t.h5" --val-samples 16 --log-json "$tmp/e.json" > "$tmp/e.out" 2>&1 ||
		fail "eval exited $?"
	grep -q '^energy: ' "$tmp/e.out" || fail "eval: no energy line"
	r=$(summary "$tmp/e.json" 0 0 16 0) && ok "eval: the summary record (steps 0, 16 samples)" ||
		fail "eval summary record: $(tail -n 1 "$tmp/e.json")"
fi
expect 2 "--cpu-watts wants a number" "$unet" train $C --cpu-watts -1
expect 2 "--idle-watts does not apply to 'predict'" "$unet" predict --checkpoint "$tmp/t.h5" --png "$tmp" --idle-watts 5

# ------------------------------------------------------------------ resume
R="$C --eval-every 0 --quiet"
"$unet" train $R --steps 20 --checkpoint "$tmp/a.h5" --log-json "$tmp/a.json" || fail "20-step run"
"$unet" train $R --steps 10 --checkpoint "$tmp/b.h5" --log-json "$tmp/b.json" || fail "10-step run"
"$unet" train --resume "$tmp/b.h5" --steps 20 --checkpoint "$tmp/b.h5" --log-json "$tmp/b.json" --eval-every 0 \
	--quiet || fail "resumed run"
identical_losses "resume vs the uninterrupted run" 20 "$tmp/a.json" "$tmp/b.json"
"$unet" eval --checkpoint "$tmp/a.h5" --val-samples 16 --quiet > "$tmp/a.eval" 2>&1 || fail "eval a"
"$unet" eval --checkpoint "$tmp/b.h5" --val-samples 16 --quiet > "$tmp/b.eval" 2>&1 || fail "eval b"
cmp -s "$tmp/a.eval" "$tmp/b.eval" && grep -q persistence "$tmp/a.eval" &&
	ok "resume: final checkpoints give identical metrics" || fail "resume: metrics differ"
for x in a b; do
	"$unet" train --resume "$tmp/$x.h5" --steps 25 --log-json "$tmp/$x.25.json" --eval-every 0 --quiet ||
		fail "resume $x to 25"
	losses "$tmp/$x.25.json" > "$tmp/$x.25.loss"
done
[ "$(wc -l < "$tmp/a.25.loss")" = 5 ] && cmp -s "$tmp/a.25.loss" "$tmp/b.25.loss" &&
	ok "resume: both checkpoints continue identically (optimizer state)" || fail "resume to 25 steps differs"

# Another architecture: refused, the message names the attribute.
expect 1 "depth" "$unet" train --resume "$tmp/a.h5" --depth 3 --steps 30 --quiet
expect 1 "filters" "$unet" eval --checkpoint "$tmp/a.h5" --filters 8 --quiet
expect 1 "optimizer" "$unet" train --resume "$tmp/a.h5" --optimizer sgd --steps 30 --quiet

# --steps 0 saves the initial model; --init starts from its weights.
"$unet" train $R --steps 0 --checkpoint "$tmp/init.h5" && [ -s "$tmp/init.h5" ] &&
	ok "--steps 0 --checkpoint wrote the initial model" || fail "--steps 0 --checkpoint"
"$unet" train $R --init "$tmp/init.h5" --seed 9 --steps 2 --log-json "$tmp/i.json" || fail "--init run"
"$unet" train $R --seed 9 --steps 2 --log-json "$tmp/j.json" || fail "seed 9 run"
# Same data order (seed 9) and weights of seed 1: the first loss is that of
# the seed-1 weights on seed-9 batches, not of the seed-9 weights.
if [ "$(losses "$tmp/i.json" | head -1)" != "$(losses "$tmp/j.json" | head -1)" ]; then
	ok "--init: the weights come from the file"
else
	fail "--init made no difference"
fi

# ------------------------------------------------------------------ pipelining
"$unet" train $C --steps 9 --eval-every 3 --checkpoint-every 3 --checkpoint "$tmp/p.h5" --log-json "$tmp/p.json" \
	--quiet > /dev/null 2>&1 || fail "run with --eval-every 3 --checkpoint-every 3"
"$unet" train $R --steps 9 --log-json "$tmp/p0.json" || fail "9-step run"
[ "$(losses "$tmp/p.json" | wc -l)" = 9 ] && [ "$(losses "$tmp/p.json")" = "$(losses "$tmp/p0.json")" ] &&
	ok "evaluations and checkpoints between pipelined steps leave the 9 losses unchanged" ||
	fail "losses with --eval-every 3 --checkpoint-every 3 differ from a plain run"
"$unet" train $R --steps 6 --checkpoint "$tmp/p6.h5" || fail "6-step run"
# (eval at the training run's batch: with im2col + sgemm, in a build
# without oneDNN, a batch of 8 rounds the metrics 1 ulp differently)
"$unet" eval --checkpoint "$tmp/p6.h5" --val-samples 16 --batch 4 --quiet --log-json "$tmp/p6.eval" > /dev/null 2>&1 ||
	fail "eval of the 6-step checkpoint"
m6=$(sed -n 's/^{"step":6,"epoch":[0-9]*,"eval":\(.*\)}$/\1/p' "$tmp/p.json")
[ -n "$m6" ] && [ "$m6" = "$(head -n 1 "$tmp/p6.eval")" ] &&
	ok "the evaluation at step 6 during training equals eval of a 6-step checkpoint" ||
	fail "evaluation at step 6: '$(echo "$m6" | cut -c1-80)' vs '$(head -n 1 "$tmp/p6.eval" | cut -c1-80)'"

# (the default convention's run diverges at step 8; starnn-v1's did at 9)
expect 1 "step 8: the loss is" "$unet" train $R --steps 30 --optimizer sgd --lr 10 --log-json "$tmp/d.json" \
	--checkpoint "$tmp/d.h5"
[ "$(losses "$tmp/d.json" | cut -d' ' -f1 | tr '\n' ' ')" = "1 2 3 4 5 6 7 " ] &&
	ok "divergence: steps 1-7 logged, then the error" || fail "divergence: logged steps: $(losses "$tmp/d.json")"
[ -e "$tmp/d.h5" ] && fail "a diverged run wrote its checkpoint"

"$unet" train $R --steps 100000 --checkpoint "$tmp/int.h5" --log-json "$tmp/int.json" > "$tmp/int.out" 2>&1 &
pid=$!
i=0
while [ $i -lt 600 ] && [ "$(losses "$tmp/int.json" 2> /dev/null | wc -l)" -lt 5 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -INT $pid
wait $pid
rc=$?
n=$(losses "$tmp/int.json" | wc -l)
if [ $rc = 130 ] && grep -q "interrupted at step $n" "$tmp/int.out" && [ "$(losses "$tmp/int.json" | tail -1 |
	cut -d' ' -f1)" = "$n" ]; then
	ok "Ctrl-C: exit 130 at step $n, every step up to it logged"
else
	fail "Ctrl-C: exit $rc, $n steps logged:"
	cat "$tmp/int.out"
fi
"$unet" train --resume "$tmp/int.h5" --steps $((n + 3)) --log-json "$tmp/int.json" --eval-every 0 --quiet ||
	fail "resume after Ctrl-C"
"$unet" train $R --steps $((n + 3)) --log-json "$tmp/full.json" || fail "$((n + 3))-step run"
[ "$(losses "$tmp/int.json")" = "$(losses "$tmp/full.json")" ] &&
	ok "Ctrl-C at step $n + resume: the $((n + 3)) losses of the uninterrupted run" ||
	fail "Ctrl-C at step $n + resume differs from the uninterrupted run"

# ------------------------------------------------------------------ files
if [ -x "$synth" ]; then
	"$synth" raw "$tmp/raw.h5" --events 12 --size 32 --seed 3 > /dev/null || fail "sevir-synth raw"
	"$synth" prepared "$tmp/prep.h5" --samples 10 --size 32 --seed 4 > /dev/null || fail "sevir-synth prepared"
	for f in raw prep; do
		"$unet" eval --checkpoint "$tmp/a.h5" --data "$tmp/$f.h5" > "$tmp/e.out" 2>&1 &&
			grep -q persistence "$tmp/e.out" && ok "eval on the $f file" || { fail "eval on $f"; cat "$tmp/e.out"; }
		"$unet" predict --checkpoint "$tmp/a.h5" --data "$tmp/$f.h5" --output "$tmp/$f.out.h5" --png "$tmp/png.$f" \
			--png-samples 2 --quiet > "$tmp/p.out" 2>&1 || { fail "predict on $f"; cat "$tmp/p.out"; }
		npng=$(ls "$tmp/png.$f" 2> /dev/null | grep -c '\.png$')
		[ -s "$tmp/$f.out.h5" ] && [ "$npng" = 2 ] && [ -s "$tmp/png.$f/sample1.png" ] &&
			ok "predict on the $f file: HDF5 + $npng pictures" ||
			fail "predict on $f: output $(ls -l "$tmp/$f.out.h5" 2>&1), $npng pictures (2 expected: sample0.png, sample1.png)"
		"$unet" train $R --data "$tmp/$f.h5" --batch 2 --micro-batches 2 --steps 3 || fail "training on $f"
	done
	# A NaN in the data: refused with a message.
	cp "$tmp/prep.h5" "$tmp/nan.h5"
	if "$poke" "$tmp/nan.h5" IN 100 nan; then
		expect 1 "nan\|not finite\|finite" "$unet" eval --checkpoint "$tmp/a.h5" --data "$tmp/nan.h5"
		expect 1 "nan\|not finite\|finite" "$unet" predict --checkpoint "$tmp/a.h5" --data "$tmp/nan.h5" \
			--output "$tmp/nan.out.h5"
		[ -e "$tmp/nan.out.h5" ] && fail "a failed predict left $tmp/nan.out.h5"
		expect 1 "nan\|not finite\|finite" "$unet" train $R --data "$tmp/nan.h5" --steps 2
	else
		fail "cannot poke a NaN into a prepared file"
	fi
else
	fail "$synth is missing: the file layouts are not tested"
fi

# ------------------------------------------------------------------ errors
expect 2 "unknown command" "$unet" fly
expect 2 "optimizer" "$unet" train --optimizer rmsprop
expect 2 "batch" "$unet" train --batch 0
expect 2 "depth" "$unet" train --depth 9
expect 2 "checkpoint" "$unet" eval
expect 2 "output" "$unet" predict --checkpoint "$tmp/a.h5"
expect 2 "unknown option .--no-such-option" "$unet" train --no-such-option
expect 2 "needs a value" "$unet" train --steps
expect 2 "wire-grads is none" "$unet" train --wire-grads foo
expect 2 "awp-interval" "$unet" train --awp-interval 0
expect 2 "multiple of" "$unet" train $R --size 34 --steps 1
expect 1 "missing.h5" "$unet" train --data "$tmp/missing.h5" --steps 1
expect 1 "missing.h5" "$unet" eval --checkpoint "$tmp/missing.h5"
echo "not hdf5" > "$tmp/junk.h5"
expect 1 "junk.h5" "$unet" eval --checkpoint "$tmp/junk.h5"
expect 1 "no-such-dir" "$unet" predict --checkpoint "$tmp/a.h5" --val-samples 4 --output "$tmp/no-such-dir/f.h5"
expect 1 "no-such-dir" "$unet" train $R --steps 1 --checkpoint "$tmp/no-such-dir/c.h5"
[ -e "$tmp/no-such-dir" ] && fail "a failed run created $tmp/no-such-dir"
exit $status
