#!/usr/bin/env bash
# tools/trace on a run with devices: models/mlp with two OpenCL workers on
# POCL's CPU device (POCL_DEVICES="pthread pthread", STARPU_NOPENCL=2) beside
# one CPU worker. The trace must load cleanly in ViTE (tools/trace runs
# tools/paje-check and exits 3 otherwise) and show the devices: a worker
# container OPENCL0 and OPENCL1 (each under a memory node of its own), a
# memory node per device beside the RAM's, tasks on both devices, and
# transfers between memory nodes (Paje links F / PF / IF, each start matched
# by its end, to or from each device's node); and tools/trace's per-codelet
# table has its column of tasks run on a device.
# STARPU_SCHED=random: with lws (the default) the devices may run nothing in
# a short run (of 3 runs of 10 steps, one had no transfer at all); random
# hands each task whose codelet has an OpenCL implementation (bias, axpy,
# ...) to a device most of the time (devices rated faster than a CPU): about
# 50 tasks on each device and 240 transfers in 10 steps, in each of 7 runs.
# Skips (77) without a StarPU with FxT (starnn configured against Debian's
# StarPU: config.summary's "StarPU FxT"), without the OpenCL kernels, or
# where two OpenCL workers do not start on POCL. (grep reads here-strings,
# not pipes: under pipefail, grep -q closing a pipe early would fail the
# echo feeding it.)
set -uo pipefail
export LC_ALL=C  # join and sort agree on the order
SRC=$(cd "$(dirname "$0")/../.." && pwd)
top=${top_builddir:-.}
mlp=$top/models/mlp
summary=$top/config.summary
[ -f "$summary" ] || { echo "SKIP: no $summary"; exit 77; }
grep -q '^  StarPU FxT *: yes' "$summary" ||
	{ echo "SKIP: this StarPU has no FxT (tools/setup --starpu=source builds one)"; exit 77; }
grep -q '^  OpenCL kernels: yes' "$summary" || { echo "SKIP: built without the OpenCL kernels"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3 (tools/paje-check)"; exit 77; }
# tools/trace needs the starpu_fxt_tool of the StarPU the programs use.
prefix=$(sed -n 's/^  StarPU *: .* in //p' "$summary")
[ -x "$prefix/bin/starpu_fxt_tool" ] || { echo "SKIP: no $prefix/bin/starpu_fxt_tool"; exit 77; }
export STARNN_STARPU_PREFIX=$prefix
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

devices=(env STARPU_HOME="$tmp/home" POCL_DEVICES="pthread pthread" STARPU_NOPENCL=2 STARPU_OPENCL_ON_CPUS=1
	STARPU_OPENCL_ONLY_ON_CPUS=1 STARPU_NCPU=1 STARPU_SCHED=random STARNN_QUIET=1)
# Do two OpenCL workers start here? (No FxT for the probe.)
if ! out=$(STARPU_FXT_TRACE=0 "${devices[@]}" "$mlp" --steps 1 --quiet 2>&1); then
	echo "SKIP: two OpenCL workers do not start on POCL here: $out"
	exit 77
fi

out=$("${devices[@]}" "$SRC/tools/trace" -o "$tmp/tr" "$mlp" --steps 10 2>&1)
rc=$?
echo "$out" | tail -n 25
[ $rc = 0 ] || fail "tools/trace exited with $rc (3: paje.trace would not load cleanly)"
# tools/trace's per-codelet table counts the tasks the devices ran.
grep -qE '^  codelet +tasks +on device' <<< "$out" || fail "tools/trace's per-codelet table has no 'on device' column"
trace=$tmp/tr/paje.trace
[ -s "$trace" ] || { echo "FAIL: no $trace"; exit 1; }
"$SRC/tools/paje-check" "$trace" || fail "tools/paje-check reports problems"

# The containers (PajeCreateContainer, event 7: time alias type parent name).
containers=$(awk -F'\t' '$1 == 7' "$trace")
workers=$(awk -F'\t' '$4 == "W" { print $6 }' <<< "$containers" | sort | tr '\n' ' ')
echo "worker containers: $workers"
for w in OPENCL0 OPENCL1; do
	grep -qw "$w" <<< "$workers" || fail "no worker container $w"
done
grep -qw CPU0 <<< "$workers" || fail "no worker container CPU0"
nodes=$(awk -F'\t' '$4 == "Mn"' <<< "$containers" | wc -l)
echo "memory nodes: $nodes"
[ "$nodes" -ge 3 ] || fail "$nodes memory node containers, expected 3 (RAM and the two devices)"
# Each OpenCL worker sits in a thread container under a device's node, not RAM's (mn0).
for w in OPENCL0 OPENCL1; do
	thread=$(awk -F'\t' -v w="$w" '$4 == "W" && $6 == w { print $5; exit }' <<< "$containers")
	node=$(awk -F'\t' -v t="$thread" '$4 == "T" && $3 == t { print $5; exit }' <<< "$containers")
	echo "$w: thread $thread on node $node"
	if [ -z "$node" ] || [ "$node" = mn0 ]; then
		fail "$w is not on a device's memory node (thread '$thread', node '$node')"
	fi
	# Its tasks: PajeSetState 20 (a task's state, with its codelet and sizes).
	alias=$(awk -F'\t' -v w="$w" '$4 == "W" && $6 == w { print $3; exit }' <<< "$containers")
	tasks=$(awk -F'\t' -v a="$alias" '$1 == 20 && $3 == a' "$trace" | wc -l)
	echo "$w ($alias): $tasks tasks"
	[ "$tasks" -gt 0 ] || fail "$w ran no task"
	nodes_of_devices="${nodes_of_devices:-} ${node/mn/mm}"
done

# Transfers: PajeStartLink (18: time type container value start-container key)
# and PajeEndLink (19: ... end-container key) of the intra-node link types.
starts=$(awk -F'\t' '$1 == 18 && ($3 == "F" || $3 == "PF" || $3 == "IF") { print $7 "\t" $6 }' "$trace" | sort)
ends=$(awk -F'\t' '$1 == 19 && ($3 == "F" || $3 == "PF" || $3 == "IF") { print $7 "\t" $6 }' "$trace" | sort)
nstart=$(grep -c . <<< "$starts")
nend=$(grep -c . <<< "$ends")
echo "transfers: $nstart started, $nend ended"
[ "$nstart" -gt 0 ] || fail "no transfer (link F, PF or IF) in the trace"
[ "$nstart" = "$nend" ] || fail "$nstart transfers started but $nend ended"
# Join start and end by key: source and destination memory managers.
pairs=$(join -t $'\t' <(cut -f1,2 <<< "$starts") <(cut -f1,2 <<< "$ends") | cut -f2,3 | sort | uniq -c)
echo "transfers by source and destination:"
echo "$pairs"
for mm in $nodes_of_devices; do
	grep -qw "$mm" <<< "$pairs" || fail "no transfer to or from $mm (a device's memory node)"
done
if [ $failures = 0 ]; then echo "PASS"; exit 0; fi
echo "$failures failure(s)"
exit 1
