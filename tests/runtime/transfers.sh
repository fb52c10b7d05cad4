#!/bin/bash
# What moves between memory nodes per step (README: Devices), on models/mlp
# with one POCL device beside a CPU worker: the trainer's line
#   transfers per step (mean of steps 2-N): node 0 (NUMA 0) -> node 1 (OpenCL 0) ..., ...; step 1: ...
# and its --log-json record, against StarPU's own table at exit
# (STARPU_BUS_STATS=1). StarPU 1.3 resets its counters when they are read,
# so the run has tests/runtime/bus_tap.so preloaded, which adds what starnn
# read back into that table (every transfer since start-up) and says what
# StarPU counted after starnn's last read (the tail: the final evaluation,
# the data fetched back at exit). For each bus, exactly:
#   table's transfers = record's since_start_transfers + tail transfers
#   record's bytes    = first_step_bytes + bytes_per_step x (steps - 1)
#                       (bytes_per_step printed to 0.1 byte)
#   record's bytes   <= since_start_bytes (the steps are part of the run)
# and in bytes, to the table's precision (4 decimals of GB, 2^30 bytes, and
# of the mean transfer's MB, 2^20 bytes):
#   table's GB x 2^30          = since_start_bytes + tail bytes +- 0.00005 GB
#   table's avg MB x transfers = the same                       +- 0.00005 MB x transfers
# The line's figures are the record's, in its units. A CPU-only run prints
# no such line and writes no such record. dmda places tasks on the device
# (lws leaves most on the CPU). Skips (77) without an OpenCL CPU device.
set -u
top=${top_builddir:-.}
mlp=$top/models/mlp
tap=$top/tests/runtime/.libs/bus_tap.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
export STARNN_QUIET=1

grep -q '^  OpenCL kernels: yes' "$top/config.summary" 2>/dev/null || { echo "no OpenCL in this build: skipped"; exit 77; }
if grep -q '^  sanitizers *: yes' "$top/config.summary" 2>/dev/null; then
	echo "a sanitized build: the preloaded bus_tap.so would come before the sanitizer's runtime: skipped"
	exit 77
fi
[ -e "$tap" ] || { echo "FAIL: $tap is missing (make check builds it)"; exit 1; }

steps=6
common=(--steps $steps --micro-batches 2 --log-every 3 --seed 5)
cpu=$(STARPU_HOME="$tmp/home-cpu" "$mlp" "${common[@]}" --log-json "$tmp/cpu.json" 2>&1) || { echo "$cpu"; fail "the CPU run failed"; }
grep -q 'transfers per step' <<< "$cpu" && fail "a CPU-only run printed a transfers line"
grep -q '"transfers"' "$tmp/cpu.json" && fail "a CPU-only run wrote a transfers record"

if ! out=$(env STARPU_HOME="$tmp/home-dev" STARPU_SCHED=dmda STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 \
	STARPU_OPENCL_ONLY_ON_CPUS=1 STARPU_BUS_STATS=1 LD_PRELOAD="$tap" "$mlp" "${common[@]}" \
	--log-json "$tmp/dev.json" 2>&1); then
	if grep -q "asks for 1 OpenCL worker" <<< "$out"; then
		echo "no OpenCL CPU device here: skipped ($out)"
		exit 77
	fi
	echo "$out"
	fail "the run with an OpenCL worker failed"
	exit 1
fi
echo "$out" | grep -E 'transfers per step|->|bus_tap|Total transfers'
grep '"transfers"' "$tmp/dev.json"

echo "$out" > "$tmp/dev.out"
python3 - "$tmp/dev.json" "$tmp/dev.out" "$steps" <<'PYEOF' || status=1
import json, re, sys
log, outfile, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = open(outfile).read()
recs = [json.loads(l)["transfers"] for l in open(log) if l.startswith('{"transfers"')]
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)
check(len(recs) == 1, "one transfers record, not %d" % len(recs))
rec = recs[0]
check(rec["steps"] == steps and rec["first_step_apart"] and rec["mean_over_steps"] == steps - 1,
      "the record's steps: %r" % {k: rec[k] for k in ("steps", "first_step_apart", "mean_over_steps")})
buses = {(b["src"], b["dst"]): b for b in rec["buses"]}
check(any(b["bytes"] > 0 for b in buses.values()), "nothing moved during the steps: the test checks nothing")
# StarPU's table: "\tNUMA 0 -> OpenCL 0\t0.0001 GB\t... (transfers : 12 - avg ...)"
table = {}
for m in re.finditer(r"^\t(.+?) -> (.+?)\t([0-9.]+) GB\t.*\(transfers : ([0-9]+) - avg ([0-9.]+) MB\)", out, re.M):
    table[(m.group(1), m.group(2))] = (float(m.group(3)), int(m.group(4)), float(m.group(5)))
tail = {(int(m.group(1)), int(m.group(2))): (int(m.group(3)), int(m.group(4)))
        for m in re.finditer(r"^bus_tap: bus ([0-9]+) -> ([0-9]+): after starnn's reads ([0-9]+) bytes in ([0-9]+) transfers",
                             out, re.M)}
check(table, "no STARPU_BUS_STATS table in the output")
check(tail, "bus_tap.so said nothing (not preloaded?)")
names = {}
for (s, d), b in buses.items():
    names[s], names[d] = b["src_name"], b["dst_name"]
    key = (b["src_name"], b["dst_name"])
    check(key in table, "bus %s -> %s is not in StarPU's table" % key)
    check((s, d) in tail, "bus_tap.so did not see bus %d -> %d" % (s, d))
    if key not in table or (s, d) not in tail:
        continue
    gb, count, avg = table[key]
    tb, tc = tail[(s, d)]
    check(count == b["since_start_transfers"] + tc,
          "%s -> %s: StarPU's table has %d transfers, starnn %d + %d after its reads" % (key + (count, b["since_start_transfers"], tc)))
    check(abs(gb * 2**30 - (b["since_start_bytes"] + tb)) <= 0.00005 * 2**30 + 1,
          "%s -> %s: StarPU's table has %.4f GB, starnn %d + %d bytes after its reads" % (key + (gb, b["since_start_bytes"], tb)))
    check(abs(avg * count * 2**20 - (b["since_start_bytes"] + tb)) <= 0.00005 * 2**20 * count + 1,
          "%s -> %s: StarPU's table has %d transfers of %.4f MB on average, starnn %d + %d bytes after its reads" % (key + (count, avg, b["since_start_bytes"], tb)))
    check(abs(b["first_step_bytes"] + b["bytes_per_step"] * (steps - 1) - b["bytes"]) <= 0.05 * (steps - 1) + 1e-9,
          "%s -> %s: %d bytes in the first step + %.1f x %d != %d bytes" % (key + (b["first_step_bytes"], b["bytes_per_step"], steps - 1, b["bytes"])))
    check(0 <= b["first_step_bytes"] <= b["bytes"] <= b["since_start_bytes"],
          "%s -> %s: first step %d, steps %d, since start-up %d bytes" % (key + (b["first_step_bytes"], b["bytes"], b["since_start_bytes"])))
# the line: the record's figures in its units
line = [l for l in out.splitlines() if l.startswith("transfers per step")]
check(len(line) == 1, "one transfers line, not %d" % len(line))
def fmt(x):
    return "%.2f MiB" % (x / 2**20) if x >= 2**20 else "%.1f KiB" % (x / 1024) if x >= 1024 else "%.0f B" % x
if line:
    want = "transfers per step (mean of steps 2-%d):" % steps
    for part, field, div in (("steady", "bytes_per_step", 1), ("first", "first_step_bytes", 1)):
        named = set()
        if part == "first":
            want += "; step 1:"
        items = []
        for (s, d) in sorted(buses):
            b = buses[(s, d)]
            t = " node %d" % s + ("" if s in named else " (%s)" % names[s])
            named.add(s)
            t += " -> node %d" % d + ("" if d in named else " (%s)" % names[d])
            named.add(d)
            items.append(t + " " + fmt(b[field]))
        want += ",".join(items) if items else " none"
    check(line[0] == want, "the line is\n  %s\nexpected\n  %s" % (line[0], want))
for b in bad:
    print("FAIL:", b)
if not bad:
    print("PASS: %d bus(es); %s" % (len(buses), "; ".join("%s -> %s: %d bytes in %d steps (%d in the first), %.1f per step after; StarPU's table %.4f GB = %d since start-up + %d after"
          % (b["src_name"], b["dst_name"], b["bytes"], steps, b["first_step_bytes"], b["bytes_per_step"],
             table[(b["src_name"], b["dst_name"])][0], b["since_start_bytes"], tail[k][0]) for k, b in sorted(buses.items()))))
sys.exit(1 if bad else 0)
PYEOF
exit $status
