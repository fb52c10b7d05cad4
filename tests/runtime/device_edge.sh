#!/bin/bash
# The host <-> device edge, --master host (docs/device-edge.md), on POCL's
# OpenCL CPU devices beside one CPU worker:
#   - bad combinations exit 2 with a message (--master bogus, --master host
#     with --shard-optimizer, --wire-weights without --shard-optimizer or
#     --master host, unet predict --master host);
#   - CPU only: models/mlp (fp32) and models/unet (amp-bf16) with --master
#     host and no compression give the default run's losses bit for bit
#     (the same values through one more copy; the unet's to the 9 digits
#     of its log), and the edge line names main memory; --resume of an awp run
#     gives the uninterrupted run's losses bit for bit (the layers' states
#     in the checkpoint), with the paper's rule and the resolution rule;
#   - models/mlp, amp-bf16 (every kernel of it is the CPU's bits on
#     OpenCL: docs/opencl.md), --wire-weights bf16, int8 with bf16
#     gradients and awp (one device and two; the resolution rule on one), trunc24, rne16, rne24, fp8
#     and fp16 (one device; fp16 alone in a sanitizer build) give the
#     CPU-only run's losses (same options)
#     bit for bit; on two, both devices ran tasks;
#   - models/mlp fp32 with trunc16 weights and bf16 gradients, and a small
#     models/unet (32x32, depth 2, f 4, 5 SGD steps) fp32 with bf16
#     weights, on one device and two: each step's loss within
#     8 times the envelope that the CPU-only run with 1 micro-batch instead
#     of 2 opens, plus 4 ulps (tests/models/unet_opencl.sh says why; fp32
#     gemm on CLBlast and the direct convolutions are not the CPU's bits);
#   - bytes: the edge record's bytes per step (weights to each device,
#     gradient slices back) against StarPU's bus statistics of the same
#     steps (the trainer's transfers record: starpu_bus_get_profiling_info,
#     itself checked against STARPU_BUS_STATS's table by
#     tests/runtime/transfers.sh): on models/mlp fp32 every task of a
#     micro-batch follows its device's copies, so what else crosses a bus is
#     the micro-batch's data alone (x, y and the loss); per bus, the bus
#     bytes minus the edge's are the same with and without compression, on
#     one device and on two, and are exactly the data (x, y, the loss
#     slot); the edge's bytes are the formats' sizes
#     of the 5508 parameters (fp32 22032 B, trunc16 11016 B per device;
#     gradient slices fp32 22032 B, bf16 11016 B each).
# Skips (77) the device parts without OpenCL kernels or an OpenCL CPU device.
set -u
top=${top_builddir:-.}
mlp=$top/models/mlp
unet=$top/models/unet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
export STARNN_QUIET=1 STARPU_SILENT=1 STARNN_MLP_EXACT=1

# expect2 TEXT PROG ARGS...: exit 2 and TEXT on stderr
expect2() {
	local want=$1 out rc
	shift
	out=$(STARPU_HOME="$tmp/home-cpu" "$@" 2>&1)
	rc=$?
	if [ $rc = 2 ] && grep -qF -- "$want" <<< "$out"; then
		echo "refused (exit 2): $(head -n 1 <<< "$out")"
	else
		fail "$* exited $rc, expected 2 and '$want': $out"
	fi
}
expect2 "--master is host" "$mlp" --master bogus
expect2 "--master host and --shard-optimizer exclude each other" "$mlp" --master host --shard-optimizer
expect2 "--wire-weights needs --shard-optimizer or --master host" "$mlp" --wire-weights bf16
expect2 "--master does not apply to 'predict'" "$unet" predict --master host --checkpoint "$tmp/none.h5"

# losses FILE: every step's loss, all digits
losses() { grep -E '^step .*loss' "$1" | sed 's/.*loss //; s/ .*//'; }
# run NAME ENV... -- PROG ARGS...: $tmp/NAME.out, .json, .loss
run() {
	local name=$1 env=()
	shift
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	if ! env STARPU_HOME="$tmp/home-${name%%-*}" STARPU_WORKER_STATS=1 "${env[@]}" "$@" --log-json "$tmp/$name.json" \
		> "$tmp/$name.out" 2>&1; then
		tail -n 20 "$tmp/$name.out"
		fail "$name: exit status not 0"
		return 1
	fi
	if [ "$(basename "$1")" = unet ]; then
		grep -o '"step":[0-9]*,"epoch":[0-9]*,"loss":[^,]*' "$tmp/$name.json" | sed 's/.*"loss"://' > "$tmp/$name.loss"
	else
		losses "$tmp/$name.out" > "$tmp/$name.loss"
	fi
	[ -s "$tmp/$name.loss" ] || fail "$name: no losses"
}
# same A B: the losses bit for bit
same() {
	if cmp -s "$tmp/$1.loss" "$tmp/$2.loss"; then
		echo "[$2] the losses of $1 bit for bit ($(wc -l < "$tmp/$2.loss") steps, last $(tail -n 1 "$tmp/$2.loss"))"
	else
		paste "$tmp/$1.loss" "$tmp/$2.loss" | head -n 5
		fail "$2: the losses differ from $1's"
	fi
}
# within CPU CPU1MB DEV: each DEV loss within 8 times the envelope plus 4 ulps
within() {
	local v
	if v=$(paste "$tmp/$1.loss" "$tmp/$2.loss" "$tmp/$3.loss" | awk '
		function abs(x) { return x < 0 ? -x : x }
		{ e = abs($2 - $1); if (e > env) env = e
		  b = 8 * env + abs($1) * 4.76837158203125e-07; d = abs($3 - $1)
		  if (d > b) bad = 1; if (b > 0 && d / b > worst) worst = d / b; n++ }
		END { printf "%d steps, at most %.3f of the bound%s\n", n, worst, worst == 0 ? " (bit for bit)" : ""
		      exit (bad || n == 0) }'); then
		echo "[$3] the losses within the envelope of $1: $v"
	else
		paste "$tmp/$1.loss" "$tmp/$2.loss" "$tmp/$3.loss"
		fail "$3: a loss outside the envelope of $1 ($v)"
	fi
}
# busy NAME N: N OpenCL devices ran tasks
busy() {
	local n
	n=$(grep -A1 '^OpenCL [01] ' "$tmp/$1.out" | grep -cE '^[[:space:]]*[1-9][0-9]* task')
	echo "[$1] $n of $2 OpenCL devices ran tasks: $(grep -A1 '^OpenCL [01] ' "$tmp/$1.out" | grep -oE '[0-9]+ task' |
		paste -sd, -)"
	[ "$n" = "$2" ] || fail "$1: $n of $2 OpenCL devices ran tasks"
}

m=(--steps 6 --micro-batches 2 --log-every 1 --seed 5)
amp_bf16=("${m[@]}" --precision amp-bf16 --master host --wire-weights bf16)
amp_int8=("${m[@]}" --precision amp-bf16 --master host --wire-weights int8 --wire-grads bf16)
fp32_t16=("${m[@]}" --master host --wire-weights trunc16 --wire-grads bf16)
fp32_none=("${m[@]}" --master host)
u=(train --size 32 --depth 2 --filters 4 --batch 4 --samples 32 --steps 5 --optimizer sgd --lr 0.01 --eval-every 0
	--progress off --log-every 1 --master host --wire-weights bf16)

# CPU only
run cpu-default STARPU_NCPU=2 -- "$mlp" "${m[@]}"
run cpu-none STARPU_NCPU=2 -- "$mlp" "${fp32_none[@]}"
same cpu-default cpu-none
grep -q '^edge per step .*host -> node 0 (.*no device: the same tasks within main memory' "$tmp/cpu-none.out" ||
	fail "the CPU-only run's edge line: $(grep '^edge' "$tmp/cpu-none.out")"
grep -q '^edge' "$tmp/cpu-default.out" && fail "a run without --master host printed an edge line"
uc=(train --size 32 --depth 2 --filters 4 --batch 4 --samples 32 --steps 4 --optimizer sgd --lr 0.01 --eval-every 0
	--progress off --log-every 1 --micro-batches 2 --precision amp-bf16)
run unetcpu-default STARPU_NCPU=2 -- "$unet" "${uc[@]}"
run unetcpu-none STARPU_NCPU=2 -- "$unet" "${uc[@]}" --master host
same unetcpu-default unetcpu-none
# resumed NAME ARGS...: models/mlp ARGS for 12 steps (NAME), for 6 with a
# checkpoint (NAME6), resumed from it up to 12 (NAME-resume): the losses of
# the 6 and the resumed 6 are NAME's bit for bit
resumed() {
	local name=$1
	shift
	run "$name" STARPU_NCPU=2 -- "$mlp" "$@"
	run "${name}6" STARPU_NCPU=2 -- "$mlp" "$@" --steps 6 --checkpoint "$tmp/$name.h5"
	run "$name-resume" STARPU_NCPU=2 -- "$mlp" --resume "$tmp/$name.h5" --steps 12 --log-every 1
	cat "$tmp/${name}6.loss" "$tmp/$name-resume.loss" > "$tmp/$name-resumed.loss"
	same "$name" "$name-resumed"
	grep '^edge' "$tmp/${name}6.out" "$tmp/$name-resume.out" | sed 's/^[^:]*://'
}
# --resume continues an awp run bit for bit, taking --master host, the
# format and the layers' adaptive states from the checkpoint
awp=(--steps 12 --micro-batches 2 --log-every 1 --seed 5 --precision amp-bf16 --master host --wire-weights awp
	--awp-interval 2 --awp-rel-res 1e-2)
resumed cpu-awp "${awp[@]}"
grep -q '^edge.*weights as fp32 x6' "$tmp/cpu-awp-resume.out" ||
	fail "the resumed awp run did not end with every layer at fp32: $(grep '^edge' "$tmp/cpu-awp-resume.out")"
# the same with the resolution rule, whose observation pending at the save
# (the step of step 6) goes into the checkpoint; one layer gains bits
# before step 6 (int8 -> trunc24), one after it
awpr=(--steps 12 --micro-batches 2 --log-every 1 --seed 5 --precision amp-bf16 --master host --wire-weights awp
	--awp-rule resolution --awp-interval 2 --awp-res-factor 4)
resumed cpu-awpr "${awpr[@]}"
grep -q '^edge.*weights as trunc24 x1, int8 x5' "$tmp/cpu-awpr6.out" &&
	grep -q '^edge.*weights as trunc24 x2, int8 x4' "$tmp/cpu-awpr-resume.out" ||
	fail "the resolution rule's layers: not 1 then 2 at trunc24: $(grep -h '^edge' "$tmp/cpu-awpr6.out" "$tmp/cpu-awpr-resume.out")"

grep -q '^  OpenCL kernels: yes' "$top/config.summary" 2>/dev/null || { echo "SKIP: built without OpenCL"; exit $((status ? 1 : 77)); }
if ! out=$(env STARPU_HOME="$tmp/home-probe" STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 \
	"$mlp" --steps 1 --quiet 2>&1); then
	echo "SKIP: no OpenCL CPU device here ($out)"
	exit $((status ? 1 : 77))
fi
one=(STARPU_NCPU=1 STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1)
two=(STARPU_NCPU=1 STARPU_NOPENCL=2 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 POCL_DEVICES="pthread pthread")

# losses: amp-bf16 bit for bit
run cpu-bf16 STARPU_NCPU=2 -- "$mlp" "${amp_bf16[@]}"
run one-bf16 "${one[@]}" -- "$mlp" "${amp_bf16[@]}" && same cpu-bf16 one-bf16 && busy one-bf16 1
run two-bf16 "${two[@]}" -- "$mlp" "${amp_bf16[@]}" && same cpu-bf16 two-bf16 && busy two-bf16 2
run one-awp "${one[@]}" -- "$mlp" "${awp[@]}" && same cpu-awp one-awp
run cpu-int8 STARPU_NCPU=2 -- "$mlp" "${amp_int8[@]}"
run one-int8 "${one[@]}" -- "$mlp" "${amp_int8[@]}" && same cpu-int8 one-int8
run two-int8 "${two[@]}" -- "$mlp" "${amp_int8[@]}" && same cpu-int8 two-int8 && busy two-int8 2
run two-awp "${two[@]}" -- "$mlp" "${awp[@]}" && same cpu-awp two-awp && busy two-awp 2
run one-awpr "${one[@]}" -- "$mlp" "${awpr[@]}" && same cpu-awpr one-awpr
# the other wire formats of the weights (bf16, int8, trunc16 above), one
# device; in a sanitizer build only fp16 (their kernels run under the
# sanitizers in tests/codelets/wire and wire_opencl, and the edge's path is
# the same for every format: these 10 runs took a fifth of the test's
# 127 s there)
formats="trunc24 rne16 rne24 fp8 fp16"
grep -q '^ *sanitizers *: *yes' "$top/config.summary" 2> /dev/null && formats=fp16
for f in $formats; do
	run cpu-$f STARPU_NCPU=2 -- "$mlp" "${m[@]}" --precision amp-bf16 --master host --wire-weights $f
	run one-$f "${one[@]}" -- "$mlp" "${m[@]}" --precision amp-bf16 --master host --wire-weights $f && same cpu-$f one-$f
done

# losses: fp32 within the envelope
run cpu-t16 STARPU_NCPU=2 -- "$mlp" "${fp32_t16[@]}"
run cpu1-t16 STARPU_NCPU=2 -- "$mlp" "${fp32_t16[@]}" --micro-batches 1
run one-t16 "${one[@]}" -- "$mlp" "${fp32_t16[@]}" && within cpu-t16 cpu1-t16 one-t16
run two-t16 "${two[@]}" -- "$mlp" "${fp32_t16[@]}" && within cpu-t16 cpu1-t16 two-t16 && busy two-t16 2
run unetcpu-bf16 STARPU_NCPU=2 -- "$unet" "${u[@]}" --micro-batches 2
run unetcpu1-bf16 STARPU_NCPU=2 -- "$unet" "${u[@]}" --micro-batches 1
run unetone-bf16 "${one[@]}" -- "$unet" "${u[@]}" --micro-batches 2 &&
	within unetcpu-bf16 unetcpu1-bf16 unetone-bf16 && busy unetone-bf16 1
run unettwo-bf16 "${two[@]}" -- "$unet" "${u[@]}" --micro-batches 2 &&
	within unetcpu-bf16 unetcpu1-bf16 unettwo-bf16 && busy unettwo-bf16 2
grep -h '^edge' "$tmp/unetone-bf16.out" "$tmp/unettwo-bf16.out"

# bytes: the edge's against the buses'
run one-none "${one[@]}" -- "$mlp" "${fp32_none[@]}"
run two-none "${two[@]}" -- "$mlp" "${fp32_none[@]}"
for n in one-none one-t16 two-none two-t16; do grep -E '^(transfers|edge)' "$tmp/$n.out" | sed "s/^/[$n] /"; done
python3 - "$tmp" <<'PYEOF' || status=1
import json, sys
tmp = sys.argv[1]
bad = []
def record(name, key):
    recs = [json.loads(l)[key] for l in open("%s/%s.json" % (tmp, name)) if l.startswith('{"%s"' % key)]
    if len(recs) != 1:
        bad.append("%s: %d %s records" % (name, len(recs), key))
        return None
    return recs[0]
numel, micro = 5508, 2
size = {"fp32": 4, "trunc16": 2, "bf16": 2}
def residual(name, wfmt, gfmt, ndev):
    edge, moved = record(name, "edge"), record(name, "transfers")
    if edge is None or moved is None:
        return None
    if len(edge["devices"]) != ndev:
        bad.append("%s: %d devices in the edge record, expected %d" % (name, len(edge["devices"]), ndev))
        return None
    buses = {(b["src"], b["dst"]): b for b in moved["buses"]}
    out = {}
    for d in edge["devices"]:
        node, slices = d["node"], micro // ndev
        want = {"down_bytes_per_step": numel * size[wfmt], "down_raw_bytes_per_step": numel * 4,
                "up_bytes_per_step": slices * numel * size[gfmt], "up_raw_bytes_per_step": slices * numel * 4}
        for k, v in want.items():
            if d[k] != v:
                bad.append("%s node %d: %s %r, expected %r" % (name, node, k, d[k], v))
        if d["down_messages"] != 6 * edge["steps"] or d["up_messages"] != 6 * slices * edge["steps"]:
            bad.append("%s node %d: %d / %d messages down / up" % (name, node, d["down_messages"], d["up_messages"]))
        for way, bus, key in (("down", (0, node), "down_bytes_per_step"), ("up", (node, 0), "up_bytes_per_step")):
            b = buses.get(bus)
            if b is None:
                bad.append("%s: nothing on bus %r" % (name, bus))
                continue
            first = d["first_step_%s_bytes" % way]
            if not (b["bytes_per_step"] >= d[key] and b["first_step_bytes"] >= first):
                bad.append("%s bus %r: %r bytes per step, fewer than the edge's %r" % (name, bus, b["bytes_per_step"], d[key]))
            out[bus] = (b["bytes_per_step"] - d[key], b["first_step_bytes"] - first)
            print("[%s] bus %d -> %d: %.1f B per step (step 1: %d), the edge's %.1f (step 1: %d), the rest %.1f (step 1: %d)"
                  % (name, bus[0], bus[1], b["bytes_per_step"], b["first_step_bytes"], d[key], first,
                     out[bus][0], out[bus][1]))
    return out
for a, b, ndev in (("one-none", "one-t16", 1), ("two-none", "two-t16", 2)):
    ra, rb = residual(a, "fp32", "fp32", ndev), residual(b, "trunc16", "bf16", ndev)
    if ra is None or rb is None:
        continue
    # the rest is the micro-batches' data: x [32, 16] and y [32, 4] fp32 per
    # micro-batch to its device, its loss (4 bytes) each way (the loss slot
    # is read-write), every step alike
    data = {}
    for node in range(1, ndev + 1):
        data[(0, node)] = ((micro // ndev) * (32 * (16 + 4) * 4 + 4),) * 2
        data[(node, 0)] = ((micro // ndev) * 4,) * 2
    if ra != rb:
        bad.append("%s / %s: the buses' bytes beside the edge's differ: %r / %r" % (a, b, ra, rb))
    elif ra != data:
        bad.append("%s: the buses' bytes beside the edge's are not the data's: %r, expected %r" % (a, ra, data))
    else:
        print("[%s, %s] the buses carried the edge's bytes and the micro-batches' data (x, y, loss), nothing else"
              % (a, b))
for m in bad:
    print("FAIL: " + m)
sys.exit(1 if bad else 0)
PYEOF
[ $status = 0 ] && echo "PASS"
exit $status
