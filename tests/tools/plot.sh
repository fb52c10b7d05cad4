#!/usr/bin/env bash
# tools/plot, the training-curve picture, on the logs of tiny runs of
# models/unet train (16x16, depth 2, f = 4, 20 steps, evaluated every 10;
# each well under a second):
#   - two runs in one picture: exit 0, a PNG (signature, IHDR) of the
#     --size asked, the default size 1200x900, a line per log on stdout;
#   - one log without -o: LOG.png beside it; --label, --title accepted;
#   - a run stopped at step 10 and resumed twice (once from an older
#     checkpoint, so that steps 11..20 are logged twice): its merged losses
#     equal those of the uninterrupted run of 30 steps, its evaluations are
#     those at steps 10 and 30 (the one at 20 was run again), 3 segments said;
#   - an incomplete last line (a killed run) is dropped with a note;
#   - errors, each with a message and no picture left (an existing one
#     unchanged, no temporary file beside it): a missing log, an empty one,
#     a malformed line (file and line named), a JSON line that is not an
#     object, a log of models/unet eval (no training records), gnuplot
#     missing, gnuplot failing after writing half a file (exit 1); no log,
#     several logs without -o, a bad --size, more labels than logs, an
#     unknown option (exit 2).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
top=$(cd "${top_builddir:-.}" && pwd)
PLOT=$SRC/tools/plot
UNET=$top/models/unet
command -v python3 > /dev/null || { echo "SKIP: no python3 (tools/plot needs it)"; exit 77; }
command -v gnuplot > /dev/null || { echo "SKIP: no gnuplot (Debian: gnuplot-nox)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

TINY=(--size 16 --depth 2 --filters 4 --batch 2 --samples 16 --val-samples 8 --progress off --quiet)
train() { "$UNET" train "${TINY[@]}" "$@" > "$tmp/train.out" 2>&1 || { fail "models/unet train $*: $(cat "$tmp/train.out")"; }; }
train --steps 20 --eval-every 10 --log-json "$tmp/a.jsonl"
train --steps 20 --eval-every 10 --lr 3e-3 --seed 2 --log-json "$tmp/b.jsonl"
grep -q '"eval"' "$tmp/a.jsonl" || fail "no evaluation record in the log: $(head -c 300 "$tmp/a.jsonl")"

# PNG: signature, IHDR first, width and height (big-endian) -> "W H"
png_size() {
	python3 - "$1" << 'EOF'
import struct, sys
try:
    b = open(sys.argv[1], "rb").read()
except OSError as e:
    print("unreadable: %s" % e); sys.exit(0)
if b[:8] != b"\x89PNG\r\n\x1a\n" or b[12:16] != b"IHDR" or struct.unpack(">I", b[8:12])[0] != 13:
    print("not a PNG"); sys.exit(0)
w, h = struct.unpack(">II", b[16:24])
# and the file ends with its IEND chunk: not cut short
print("%d %d%s" % (w, h, "" if b[-12:-8] == b"\0\0\0\0" and b[-8:-4] == b"IEND" else " truncated"))
EOF
}
# no PLOT temporaries left in DIR
no_tmp() { ! ls "$1" | grep -q '\.tmp\.'; }

# ---------------------------------------------------------------- pictures
out=$("$PLOT" -o "$tmp/ab.png" --size 900x700 "$tmp/a.jsonl" "$tmp/b.jsonl" 2>&1)
rc=$?
[ $rc = 0 ] || fail "two logs: exit $rc: $out"
[ "$(png_size "$tmp/ab.png")" = "900 700" ] && ok "two logs: a 900x700 PNG" || fail "two logs: $(png_size "$tmp/ab.png")"
grep -q 'a.jsonl: 20 steps, 2 evaluations' <<< "$out" && grep -q 'b.jsonl: 20 steps, 2 evaluations' <<< "$out" ||
	fail "two logs: no per-log line: $out"
no_tmp "$tmp" || fail "a temporary file left: $(ls "$tmp")"

out=$("$PLOT" --label 'run A' --title "it's a title" "$tmp/a.jsonl" 2>&1)
[ $? = 0 ] && [ "$(png_size "$tmp/a.png")" = "1200 900" ] && ok "one log: a.png beside it, 1200x900" ||
	fail "one log: $out; $(png_size "$tmp/a.png")"

# ---------------------------------------------------------------- resume
train --steps 10 --checkpoint "$tmp/r.h5" --log-json "$tmp/r.jsonl"
cp "$tmp/r.h5" "$tmp/r10.h5"
train --resume "$tmp/r.h5" --steps 20 --checkpoint "$tmp/r.h5" --log-json "$tmp/r.jsonl"
train --resume "$tmp/r10.h5" --steps 30 --checkpoint "$tmp/r.h5" --log-json "$tmp/r.jsonl"
train --steps 30 --log-json "$tmp/u.jsonl"
[ "$(grep -c '"loss"' "$tmp/r.jsonl")" = 40 ] || fail "resumed log: $(grep -c '"loss"' "$tmp/r.jsonl") step records, expected 40"
out=$("$PLOT" -o "$tmp/r.png" "$tmp/r.jsonl" 2>&1)
[ $? = 0 ] && grep -q 'r.jsonl: 30 steps, 2 evaluations, 3 segments (resumed)' <<< "$out" ||
	fail "resumed log: $out"
cmp=$(python3 - "$PLOT" "$tmp/r.jsonl" "$tmp/u.jsonl" << 'EOF'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("plot", sys.argv[1])
spec = importlib.util.spec_from_loader("plot", loader)
plot = importlib.util.module_from_spec(spec)
loader.exec_module(plot)
r, u = plot.read_log(sys.argv[2]), plot.read_log(sys.argv[3])
if [s for s, _ in r["steps"]] != list(range(1, 31)):
    print("steps %s" % [s for s, _ in r["steps"]])
elif r["steps"] != u["steps"]:
    print("losses differ: %s vs %s" % (r["steps"][8:14], u["steps"][8:14]))
elif [e[0] for e in r["evals"]] != [10, 30] or r["evals"][1:] != u["evals"]:
    print("evaluations %s vs %s" % (r["evals"], u["evals"]))
else:
    print("same")
EOF
)
[ "$cmp" = same ] && ok "resumed twice (steps 11..20 logged twice): the losses of the uninterrupted run" ||
	fail "resumed log against the uninterrupted run: $cmp"

# an incomplete last line: dropped with a note
{ cat "$tmp/a.jsonl"; printf '{"step":21,"epoch":3,"lo'; } > "$tmp/killed.jsonl"
out=$("$PLOT" -o "$tmp/k.png" "$tmp/killed.jsonl" 2>&1)
[ $? = 0 ] && grep -q 'killed.jsonl:24: incomplete last line' <<< "$out" && grep -q '20 steps' <<< "$out" &&
	ok "an incomplete last line: dropped with a note" || fail "incomplete last line: $out"

# ---------------------------------------------------------------- errors
cp "$tmp/ab.png" "$tmp/keep.png"
# CASE STATUS WORD ARGS...: exit STATUS, stderr holds WORD, keep.png unchanged
expect() {
	local what=$1 want=$2 word=$3
	shift 3
	local msg rc
	msg=$("$@" 2>&1 > /dev/null)
	rc=$?
	if [ $rc != "$want" ]; then
		fail "$what: exit $rc, expected $want: $msg"
	elif ! grep -qF -- "$word" <<< "$msg"; then
		fail "$what: message lacks '$word': $msg"
	elif ! cmp -s "$tmp/ab.png" "$tmp/keep.png"; then
		fail "$what: the existing picture changed"
	elif ! no_tmp "$tmp"; then
		fail "$what: a temporary file left: $(ls "$tmp")"
	else
		ok "$what -> $msg"
	fi
}
: > "$tmp/empty.jsonl"
{ head -n 3 "$tmp/a.jsonl"; echo '{"step":4,"loss":0.5,'; tail -n +5 "$tmp/a.jsonl"; } > "$tmp/bad.jsonl"
{ head -n 2 "$tmp/a.jsonl"; echo '[1, 2]'; } > "$tmp/array.jsonl"
"$UNET" eval --checkpoint "$tmp/r.h5" --val-samples 8 --log-json "$tmp/eval.jsonl" > /dev/null 2>&1 ||
	fail "models/unet eval failed"
expect "a missing log" 1 "$tmp/nope.jsonl: cannot read" "$PLOT" -o "$tmp/ab.png" "$tmp/a.jsonl" "$tmp/nope.jsonl"
expect "an empty log" 1 "empty.jsonl: no records" "$PLOT" -o "$tmp/ab.png" "$tmp/empty.jsonl"
expect "a malformed line" 1 "bad.jsonl:4: not a JSON record" "$PLOT" -o "$tmp/ab.png" "$tmp/a.jsonl" "$tmp/bad.jsonl"
expect "a line that is not an object" 1 "array.jsonl:3: not a JSON object" "$PLOT" -o "$tmp/ab.png" "$tmp/array.jsonl"
expect "a log of models/unet eval" 1 "a log of models/unet eval, not train" "$PLOT" -o "$tmp/ab.png" "$tmp/eval.jsonl"
expect "no log" 2 "no LOG.jsonl given" "$PLOT" -o "$tmp/ab.png"
expect "several logs without -o" 2 "-o OUT.png" "$PLOT" "$tmp/a.jsonl" "$tmp/b.jsonl"
expect "a bad --size" 2 "--size: '12xx' is not WxH" "$PLOT" -o "$tmp/ab.png" --size 12xx "$tmp/a.jsonl"
expect "more labels than logs" 2 "2 --label for 1 logs" "$PLOT" -o "$tmp/ab.png" --label x --label y "$tmp/a.jsonl"
expect "an unknown option" 2 "unknown option '--colour'" "$PLOT" -o "$tmp/ab.png" --colour "$tmp/a.jsonl"
expect "an output directory that does not exist" 1 "no directory" "$PLOT" -o "$tmp/no/where.png" "$tmp/a.jsonl"

# gnuplot missing: a PATH with python3 only; gnuplot failing half-way: a
# fake one that writes half a PNG to the script's output, then exits 1
mkdir -p "$tmp/bin1" "$tmp/bin2"
pyexe=$(python3 -c 'import sys; print(sys.executable)')
ln -s "$pyexe" "$tmp/bin1/python3"
ln -s "$pyexe" "$tmp/bin2/python3"
cat > "$tmp/bin2/gnuplot" << 'EOF'
#!/bin/sh
if [ "$1" = -e ]; then echo "      pngcairo  png terminal based on cairo"; exit 0; fi
out=$(sed -n "s/^set output '\(.*\)'$/\1/p")
printf '\211PNG\r\n\032\n\0\0\0\rIHDR' > "$out"
echo "gnuplot: fake failure" >&2
exit 1
EOF
chmod +x "$tmp/bin2/gnuplot"
expect "gnuplot missing" 1 "gnuplot is not installed" env PATH="$tmp/bin1" "$PLOT" -o "$tmp/ab.png" "$tmp/a.jsonl"
expect "gnuplot failing after half a file" 1 "gnuplot failed (exit 1): gnuplot: fake failure" \
	env PATH="$tmp/bin2:/usr/bin:/bin" "$PLOT" -o "$tmp/ab.png" "$tmp/a.jsonl"

out=$("$PLOT" --help)
[ $? = 0 ] && grep -q 'Usage: tools/plot' <<< "$out" && ok "--help" || fail "--help: $out"

if [ $failures = 0 ]; then
	echo "PASS: tools/plot"
	exit 0
fi
echo "FAIL: $failures checks"
exit 1
