#!/usr/bin/env bash
# tools/sweep, the design-space sweep, on a tiny grid (16x16, depth 1 and 2,
# f = 4, fp32 and amp-bf16, batch 4, 4 steps, 16 training and 8 held-out
# synthetic samples; each point well under a second):
#   - the four records: status ok, parameters growing with depth, finite
#     held-out MSE / MAE / mean CSI, time per epoch, energy method
#     'not available' with null joules (this VM) or a number with a method;
#   - results.csv (header, a row per point), results.jsonl, results.md (the
#     table), the PNG plots when gnuplot is installed, the headline lines;
#   - resume: the same grid again runs 0 points; other settings for the same
#     directory are refused (exit 2), --force moves the old records aside;
#   - a failing point (--size 20 with depth 3: not a multiple of 2^3) is
#     recorded as failed with its exit status and log tail while the other
#     point succeeds; the sweep exits 1; --retry-failed reruns only it;
#   - SIGTERM during a point: exit 143, that point not recorded, the rerun
#     runs it;
#   - 2 ranks under mpirun (skipped without StarPU-MPI or mpirun);
#   - bad arguments (unknown option, empty list, empty item, not a number,
#     options the sweep sets given after --, --wire on a build without it):
#     exit 2 with a message.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
top=$(cd "${top_builddir:-.}" && pwd)
SWEEP=$SRC/tools/sweep
export UNET=$top/models/unet
command -v python3 > /dev/null || { echo "SKIP: no python3 (tools/sweep needs it)"; exit 77; }
# The tool is bash and python; the programs it runs are checked under the
# sanitizers by the other tests, and a dozen sanitized trainings would
# only add minutes to CI's sanitizer stage.
if grep -q '^ *sanitizers *: *yes' "$top/config.summary" 2> /dev/null; then
	echo "SKIP: sanitizer build (tools/sweep's programs are checked there by the other tests)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

GRID=(--size 16 --depth 1,2 --filters 4 --precision fp32,amp-bf16 --batch 4 --steps 4)
DATA=(-- --samples 16 --val-samples 8)
D=$tmp/grid
out=$("$SWEEP" -o "$D" "${GRID[@]}" "${DATA[@]}" 2>&1)
rc=$?
[ $rc = 0 ] || fail "the grid exited $rc: $out"
grep -q '4 points done\|0 points done, 4 to run' <<< "$out" || fail "no '0 points done, 4 to run' line: $out"
[ "$(grep -c '^\[[1-4]/4\] .* ok (' <<< "$out")" = 4 ] || fail "not four 'ok' point lines: $out"

# The records.
check=$(python3 - "$D" << 'EOF'
import json, math, sys, glob, os
d = sys.argv[1]
recs = {os.path.basename(f)[:-5]: json.load(open(f)) for f in glob.glob(d + "/points/*.json")}
bad = []
want = ["d%d-f4-%s-b4-r1" % (dd, p) for p in ("fp32", "amp-bf16") for dd in (1, 2)]
if sorted(recs) != sorted(want):
    bad.append("records %s, expected %s" % (sorted(recs), sorted(want)))
for n, r in recs.items():
    if r["status"] != "ok" or r["exit_status"] != 0:
        bad.append("%s: status %s exit %s" % (n, r["status"], r["exit_status"]))
    for k in ("mse_norm", "mse", "mae", "mean_csi", "time_per_epoch_s", "samples_per_s", "peak_mib"):
        v = r.get(k)
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            bad.append("%s: %s = %r" % (n, k, v))
    if not (isinstance(r.get("csi"), list) and len(r["csi"]) == len(r.get("thresholds") or [])):
        bad.append("%s: csi %r thresholds %r" % (n, r.get("csi"), r.get("thresholds")))
    if r["steps"] != 4 or r["samples"] != 16 or r["size"] != 16:
        bad.append("%s: steps %r samples %r size %r" % (n, r["steps"], r["samples"], r["size"]))
    m = r["energy_method"]
    if m == "not available":
        if r["joules"] is not None or r["joules_per_epoch"] is not None or not r.get("energy_reason"):
            bad.append("%s: not available but joules %r reason %r" % (n, r["joules"], r.get("energy_reason")))
    elif not (m and isinstance(r["joules_per_epoch"], (int, float))):
        bad.append("%s: energy method %r joules per epoch %r" % (n, m, r["joules_per_epoch"]))
    if r["est_joules"] is not None:
        bad.append("%s: an estimate without a power model" % n)
    if "--depth" not in r["command"] or "models/unet train" not in r["command"]:
        bad.append("%s: command %r" % (n, r["command"]))
for p in ("fp32", "amp-bf16"):
    a, b = recs.get("d1-f4-%s-b4-r1" % p), recs.get("d2-f4-%s-b4-r1" % p)
    if a and b and not (a["parameters"] and b["parameters"] > a["parameters"]):
        bad.append("%s: parameters %r (depth 1) and %r (depth 2)" % (p, a["parameters"], b["parameters"]))
lines = open(d + "/results.jsonl").read().splitlines()
if len(lines) != 4 or any(json.loads(l)["point"] not in recs for l in lines):
    bad.append("results.jsonl: %d lines" % len(lines))
print("\n".join(bad))
EOF
)
[ -z "$check" ] && ok "four records: parameters grow with depth, finite metrics, energy method stated" ||
	fail "records: $check"
# The same command a record gives reproduces the run (it is shell-quoted).
cmd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["command"])' "$D/points/d1-f4-fp32-b4-r1.json")
eval "${cmd/--log-json */--log-json $tmp/again.jsonl --samples 16 --val-samples 8}" > /dev/null 2>&1 ||
	fail "the recorded command does not run: $cmd"

header=$(head -n 1 "$D/results.csv")
for c in point status exit_status depth filters precision batch parameters time_per_epoch_s samples_per_s \
	energy_method energy_reason joules_per_epoch joules_per_sample est_joules_per_epoch peak_mib mse_norm mse mae \
	mean_csi csi_16 csi_219 command; do
	grep -q "\(^\|,\)$c\(,\|$\)" <<< "$header" || fail "results.csv: no column $c: $header"
done
[ "$(wc -l < "$D/results.csv")" = 5 ] || fail "results.csv: $(wc -l < "$D/results.csv") lines, expected 5"
python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); sys.exit(not (len(r)==4 and all(x["status"]=="ok" and float(x["mse_norm"])>=0 for x in r)))' \
	"$D/results.csv" || fail "results.csv does not parse as CSV with 4 ok rows"
grep -q '^| point | params | time/epoch (s) |' "$D/results.md" || fail "results.md: no table header"
[ "$(grep -c '^| d[12]-f4-.*| ok |$' "$D/results.md")" = 4 ] || fail "results.md: not 4 ok rows: $(cat "$D/results.md")"
if command -v gnuplot > /dev/null; then
	for p in time_per_epoch mse mean_csi; do
		[ "$(head -c 4 "$D/$p.png" 2> /dev/null | tail -c 3)" = PNG ] || fail "no PNG $p.png"
	done
	if grep -q '"energy_method": "not available"' "$D/points/d1-f4-fp32-b4-r1.json"; then
		[ ! -e "$D/energy_per_epoch.png" ] || fail "an energy plot without any energy figure"
	fi
	ok "plots"
else
	echo "note: no gnuplot: plots not checked"
	grep -q 'gnuplot is not installed' <<< "$out" || fail "no note that gnuplot is missing: $out"
fi
for p in fp32 amp-bf16; do
	grep -q "^$p: +[0-9.]*% parameters (.*) cost [+-][0-9.]*% time per epoch .*energy" <<< "$out" ||
		fail "no headline for $p: $out"
done
grep -q 'energy was not measured here\|% energy (' <<< "$out" || fail "the headline says nothing of energy: $out"

# Resume: nothing to run, same results.
out=$("$SWEEP" -o "$D" "${GRID[@]}" "${DATA[@]}" 2>&1)
rc=$?
[ $rc = 0 ] || fail "the rerun exited $rc: $out"
grep -q '4 points done, 0 to run' <<< "$out" && ! grep -q '^\[' <<< "$out" && ok "resume: 0 points run" ||
	fail "resume ran points: $out"
# Other settings: refused; --force moves the old sweep aside.
out=$("$SWEEP" -o "$D" "${GRID[@]}" -- --samples 32 --val-samples 8 2>&1)
rc=$?
[ $rc = 2 ] && grep -q 'other settings' <<< "$out" && ok "other settings refused" ||
	fail "other settings for the same DIR: exit $rc: $out"
F=$tmp/force
"$SWEEP" -o "$F" --size 16 --depth 1 --filters 4 --steps 2 -- --samples 8 --val-samples 4 > /dev/null 2>&1 ||
	fail "the one-point sweep failed"
out=$("$SWEEP" -o "$F" --size 16 --depth 1 --filters 4 --steps 3 --force -- --samples 8 --val-samples 4 2>&1)
rc=$?
[ $rc = 0 ] && ls -d "$F"/superseded-*/points > /dev/null 2>&1 && grep -q '0 points done, 1 to run' <<< "$out" &&
	grep -q '"steps": 3' "$F/points/d1-f4-fp32-b4-r1.json" && ok "--force" || fail "--force: exit $rc: $out"

# A failing point among succeeding ones.
X=$tmp/fail
out=$("$SWEEP" -o "$X" --size 20 --depth 1,3 --filters 4 --steps 2 -- --samples 8 --val-samples 4 2>&1)
rc=$?
[ $rc = 1 ] || fail "a sweep with a failed point exited $rc, expected 1: $out"
grep -q 'd1-f4-fp32-b4-r1 \.\.\. ok' <<< "$out" || fail "the good point did not succeed: $out"
grep -q 'd3-f4-fp32-b4-r1 \.\.\. failed (exit 2).*multiple of' <<< "$out" || fail "the bad point is not reported failed: $out"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(not (r["status"] == "failed" and r["exit_status"] == 2 and r["log_tail"] and r["parameters"] and r["mse"] is None))' \
	"$X/points/d3-f4-fp32-b4-r1.json" || fail "the failed record: $(cat "$X/points/d3-f4-fp32-b4-r1.json")"
[ -s "$X/logs/d3-f4-fp32-b4-r1.log" ] || fail "no log of the failed point"
grep -q 'd3-f4-fp32-b4-r1.*failed (exit 2)' "$X/results.md" || fail "results.md does not show the failure"
grep -q '^d3-f4-fp32-b4-r1,failed,2,' "$X/results.csv" || fail "results.csv does not show the failure"
out=$("$SWEEP" -o "$X" --size 20 --depth 1,3 --filters 4 --steps 2 -- --samples 8 --val-samples 4 2>&1)
grep -q '2 points done, 0 to run (1 failed' <<< "$out" || fail "rerun with a failed point: $out"
out=$("$SWEEP" -o "$X" --size 20 --depth 1,3 --filters 4 --steps 2 --retry-failed -- --samples 8 --val-samples 4 2>&1)
rc=$?
[ $rc = 1 ] && grep -q '1 points done, 1 to run' <<< "$out" && grep -q '^\[1/1\] d3-' <<< "$out" &&
	ok "failed point recorded, the sweep goes on, --retry-failed reruns it" || fail "--retry-failed: exit $rc: $out"

# SIGTERM during a point (a long one: 16x16 steps take a few ms).
S=$tmp/stop
"$SWEEP" -o "$S" --size 16 --depth 1 --filters 4 --steps 100000 -- --samples 16 --val-samples 8 > "$tmp/stop.out" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$S/logs/d1-f4-fp32-b4-r1.jsonl" ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 143 ] && [ ! -e "$S/points/d1-f4-fp32-b4-r1.json" ] && grep -q 'interrupted: not recorded' "$tmp/stop.out" &&
	ok "SIGTERM: exit 143, the point not recorded" || fail "SIGTERM: exit $rc: $(cat "$tmp/stop.out")"
pgrep -f "$S/logs" > /dev/null && fail "models/unet still running after the sweep stopped"
out=$("$SWEEP" -o "$S" --size 16 --depth 1 --filters 4 --steps 100000 --dry-run -- --samples 16 --val-samples 8 2>&1)
grep -q '0 done in .*, 1 to run' <<< "$out" || fail "after SIGTERM the point is not left to run: $out"

# 2 ranks.
if "$top/tests/runtime/allreduce" --has-mpi > /dev/null 2>&1 && command -v mpirun > /dev/null; then
	R=$tmp/ranks
	out=$(STARPU_NCPU=2 "$SWEEP" -o "$R" --size 16 --depth 1 --filters 4 --ranks 2 --wire bf16 --steps 2 -- --samples 8 --val-samples 4 2>&1)
	rc=$?
	P=$(ls "$R/points/"d1-f4-fp32-b4-r2*.json 2> /dev/null | head -n 1)
	[ $rc = 0 ] && [ -n "$P" ] && grep -q 'STARPU_NCPU=1 .*mpirun -np 2 --bind-to none --oversubscribe' "$P" &&
		grep -q -- '--wire-grads bf16' "$P" &&
		ok "2 ranks under mpirun, gradients as bf16" || fail "2 ranks: exit $rc: $out $(cat "$R/logs/"*.log 2> /dev/null | tail -n 20)"
else
	echo "note: no StarPU-MPI or mpirun: --ranks 2 not checked"
fi

# Bad arguments: exit 2 and a message.
bad() { # pattern, arguments...
	local pat=$1 out rc
	shift
	out=$("$SWEEP" "$@" 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q -- "$pat" <<< "$out" || fail "'$*': exit $rc, output: $out"
}
bad "unknown option '--bogus'" -o "$tmp/b" --bogus
bad "empty list" -o "$tmp/b" --depth ''
bad "empty item" -o "$tmp/b" --depth 1,,2
bad "'x' is not a whole number" -o "$tmp/b" --filters 4,x
bad "'0' is not a whole number" -o "$tmp/b" --steps 0
bad "give one of them" -o "$tmp/b" --steps 2 --epochs 1
bad "unknown precision 'fp8'" -o "$tmp/b" --precision fp32,fp8
bad "-o DIR is required" --depth 1
bad "needs a value" -o "$tmp/b" --depth
bad "the sweep sets it" -o "$tmp/b" -- --depth 3
bad "not allowed in a sweep" -o "$tmp/b" -- --log-json x
if ! "$UNET" --help 2>&1 | grep -- --wire-grads > /dev/null; then
	bad "no wire compression yet" -o "$tmp/b" --wire fp16
fi
[ ! -e "$tmp/b/points" ] || fail "a refused sweep made its directory's records"
"$SWEEP" --help | grep -q '^Usage: tools/sweep' || fail "--help prints no usage"

[ $failures = 0 ] && echo "PASS: tools/sweep" && exit 0
echo "$failures failure(s)"
exit 1
