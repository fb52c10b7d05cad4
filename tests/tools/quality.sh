#!/usr/bin/env bash
# tools/bench/quality, the precision-quality benchmark, on a tiny recipe
# (16x16, depth 2, f = 4, 4 steps, 16 training and 8 held-out synthetic
# samples; fp32 and amp-bf16, seeds 1 and 2; each run well under a second):
#   - exit 0, four run records with finite MSE / MAE / mean CSI and the
#     exact command, a table with a row per precision;
#   - the arithmetic: results.json's means, standard deviations, paired
#     differences, their standard errors and relative figures recomputed
#     here from the run records, and the table's cells match them;
#   - resume: the same command runs 0 runs; another recipe reruns them;
#   - --eval-every: the last evaluation unchanged, the late evaluations' column;
#   - failed runs (UNET=/bin/false): exit 1, recorded as failed;
#   - bad arguments: exit 2 with a message, nothing run.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
top=$(cd "${top_builddir:-.}" && pwd)
Q=$SRC/tools/bench/quality
export UNET=$top/models/unet
command -v python3 > /dev/null || { echo "SKIP: no python3 (tools/bench/quality needs it)"; exit 77; }
# A bash + python tool: its program is checked under the sanitizers by the other tests.
if grep -q '^ *sanitizers *: *yes' "$top/config.summary" 2> /dev/null; then
	echo "SKIP: sanitizer build (models/unet is checked there by the other tests)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

RECIPE=(--size 16 --depth 2 --filters 4 --samples 16 --val-samples 8 --steps 4 --warmup 2 --seeds 1-2
	--precision fp32,amp-bf16 --no-plot)
D=$tmp/q
out=$(STARPU_NCPU=1 "$Q" -o "$D" "${RECIPE[@]}" 2>&1)
rc=$?
[ $rc = 0 ] && grep -q '0 runs done, 4 to run' <<< "$out" && [ "$(grep -c '^\[[1-4]/4\] .* seed [12]: MSE ' <<< "$out")" = 4 ] &&
	ok "4 runs" || fail "exit $rc: $out"

check=$(python3 - "$D" << 'EOF'
import glob, json, math, os, re, sys
d = sys.argv[1]
runs = {os.path.basename(f)[:-5]: json.load(open(f)) for f in glob.glob(d + "/runs/*.json")}
bad = []
if sorted(runs) != ["amp-bf16-s1", "amp-bf16-s2", "fp32-s1", "fp32-s2"]:
    bad.append("run records %s" % sorted(runs))
for n, r in runs.items():
    if r["status"] != "ok" or r["exit_status"] != 0 or "models/unet train" not in r["command"]:
        bad.append("%s: status %s exit %s command %s" % (n, r["status"], r["exit_status"], r["command"]))
    for k in ("mse_norm", "mae", "mean_csi", "train_tail"):
        if not (isinstance(r.get(k), float) and math.isfinite(r[k]) and r[k] >= 0):
            bad.append("%s: %s = %r" % (n, k, r.get(k)))
    if "--seed %d" % r["seed"] not in r["command"] or "--precision %s" % r["precision"] not in r["command"]:
        bad.append("%s: command %s" % (n, r["command"]))
# the table's arithmetic, by hand
res = json.load(open(d + "/results.json"))
rows = {row["precision"]: row for row in res["table"]}
if sorted(rows) != ["amp-bf16", "fp32"]:
    bad.append("table rows %s" % sorted(rows))
close = lambda a, b: abs(a - b) <= 1e-12 * max(1.0, abs(b))
for k in ("mse_norm", "mae", "mean_csi", "train_tail"):
    f = [runs["fp32-s1"][k], runs["fp32-s2"][k]]
    b = [runs["amp-bf16-s1"][k], runs["amp-bf16-s2"][k]]
    mf, mb = (f[0] + f[1]) / 2, (b[0] + b[1]) / 2
    sdb = abs(b[0] - b[1]) / math.sqrt(2)              # n = 2: sqrt(((x1-m)^2 + (x2-m)^2) / 1)
    d1, d2 = b[0] - f[0], b[1] - f[1]
    dm = (d1 + d2) / 2
    se = abs(d1 - d2) / math.sqrt(2) / math.sqrt(2)    # sd of the differences / sqrt(n)
    m = rows["amp-bf16"]["metrics"][k]
    want = {"mean": mb, "sd": sdb, "diff": dm, "diff_se": se, "diff_pct": 100 * dm / mf, "diff_se_pct": 100 * se / mf}
    for key, v in want.items():
        if not close(m[key], v):
            bad.append("amp-bf16 %s %s: %r, by hand %r" % (k, key, m[key], v))
    if not close(rows["fp32"]["metrics"][k]["mean"], mf) or "diff" in rows["fp32"]["metrics"][k]:
        bad.append("fp32 %s: %r" % (k, rows["fp32"]["metrics"][k]))
    if m["paired"] != 2:
        bad.append("amp-bf16 %s: paired %r" % (k, m["paired"]))
# the printed table shows those numbers
md = open(d + "/results.md").read()
m = rows["amp-bf16"]["metrics"]["mse_norm"]
cell = "%.4f ± %.4f | %+.1f%% ± %.1f%% (%+.4f, n 2)" % (m["mean"], m["sd"], m["diff_pct"], m["diff_se_pct"], m["diff"])
if not re.search(r"^\| amp-bf16 \| 2 \| " + re.escape(cell), md, re.M):
    bad.append("results.md has no row '| amp-bf16 | 2 | %s': %s" % (cell, md))
if not re.search(r"^\| fp32 \| 2 \| [0-9.]+ ± [0-9.]+ \| baseline \|", md, re.M):
    bad.append("results.md: no fp32 baseline row: %s" % md)
print("\n".join(bad))
EOF
)
[ -z "$check" ] && ok "records, means, sds, paired differences and their standard errors by hand" || fail "$check"
grep -q '^| amp-bf16 | 2 |' <<< "$out" || fail "the table is not printed: $out"

# Resume: nothing to run; another recipe reruns.
out=$(STARPU_NCPU=1 "$Q" -o "$D" "${RECIPE[@]}" 2>&1)
rc=$?
[ $rc = 0 ] && grep -q '4 runs done, 0 to run' <<< "$out" && ok "resume runs nothing" || fail "resume: exit $rc: $out"
out=$(STARPU_NCPU=1 "$Q" -o "$D" "${RECIPE[@]}" --seeds 2 --precision fp32 --dry-run 2>&1)
rc=$?
[ $rc = 0 ] && [ -z "$out" ] || fail "--dry-run of runs done printed '$out' (exit $rc)"
out=$(STARPU_NCPU=1 "$Q" -o "$D" "${RECIPE[@]}" --steps 3 --dry-run 2>&1)
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'models/unet train .*--steps 3 ' <<< "$out")" = 4 ] &&
	ok "another recipe: every run again (dry run)" || fail "another recipe --dry-run: exit $rc: $out"

# --eval-every: the evaluations in between change nothing (the last one's scores are the same bits) and
# add the column of the second half's evaluations.
out=$(STARPU_NCPU=1 "$Q" -o "$tmp/e" "${RECIPE[@]}" --seeds 1 --eval-every 1 2>&1)
rc=$?
late=$(python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
print(a["mse_norm"] == b["mse_norm"] and a["mae"] == b["mae"] and b["late_evals"] == 2 and
      abs(b["mse_late"] - b["mse_norm"]) < 1)' "$D/runs/amp-bf16-s1.json" "$tmp/e/runs/amp-bf16-s1.json" 2>&1)
[ $rc = 0 ] && [ "$late" = True ] && grep -q 'MSE, evals of the 2nd half mean' <<< "$out" &&
	ok "--eval-every: the same last evaluation, a column of the late ones" || fail "--eval-every: exit $rc, $late: $out"

# Failed runs: recorded, exit 1.
out=$(UNET=/bin/false "$Q" -o "$tmp/f" "${RECIPE[@]}" --seeds 1 --precision fp32 2>&1)
rc=$?
[ $rc = 1 ] && grep -q '"status": "failed"' "$tmp/f/runs/fp32-s1.json" && grep -q 'failed (exit 1)' <<< "$out" &&
	ok "a failed run: recorded, exit 1" || fail "failed run: exit $rc: $out"

# Bad arguments: exit 2 and a message.
bad() {
	local pat=$1 out rc
	shift
	out=$("$Q" "$@" 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q -- "$pat" <<< "$out" || fail "'$*': exit $rc, output: $out"
}
bad "unknown option '--bogus'" -o "$tmp/b" --bogus
bad "'3-1' is not a seed" -o "$tmp/b" --seeds 3-1
bad "'x' is not a seed" -o "$tmp/b" --seeds 1,x
bad "names a seed twice" -o "$tmp/b" --seeds 1-3,2
bad "'fp64' is not one of" -o "$tmp/b" --precision fp32,fp64
bad "0 is not positive" -o "$tmp/b" --jobs 0
bad "'x' is not an integer" -o "$tmp/b" --steps x
bad "not a positive number" -o "$tmp/b" --lr -1
bad "needs a value" -o "$tmp/b" --seeds
bad "not a multiple of 2^depth" -o "$tmp/b" --size 20 --depth 3
bad "the tool sets it" -o "$tmp/b" -- --seed 3
[ ! -e "$tmp/b" ] || fail "a refused command made its directory"
"$Q" --help > "$tmp/help" && grep -q "^Usage: tools/bench/quality" "$tmp/help" || fail "--help prints no usage"

[ $failures = 0 ] && echo "PASS: tools/bench/quality" && exit 0
echo "$failures failure(s)"
exit 1
