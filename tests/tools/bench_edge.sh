#!/usr/bin/env bash
# tools/bench/edge, the host <-> device edge benchmark, on its smallest
# setting (the test configuration, 32x32, one POCL device, 2 timed steps):
#   - a row per setting (none, bf16, int8+bf16) with the edge's bytes per
#     step, the bus bytes and a step time; the weights sent per step as
#     bf16 are exactly half of fp32's (none) and as int8 about a quarter
#     (one block scale per 32 values on top: between 1/4 and 1/4 + 1/16),
#     gradients back as bf16 exactly half; the bytes ratios against none
#     follow from them;
#   - bad arguments exit 2 with a message.
# Skips without OpenCL kernels or an OpenCL CPU device (POCL), and in the
# sanitizer build (the programs it runs are checked there by
# tests/runtime/device_edge.sh).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
top=$(cd "${top_builddir:-.}" && pwd)
BENCH=$SRC/tools/bench/edge
export UNET=$top/models/unet SYNTH=$top/tools/sevir-synth
if grep -q '^ *sanitizers *: *yes' "$top/config.summary" 2> /dev/null; then
	echo "SKIP: sanitizer build (the programs are checked there by tests/runtime/device_edge.sh)"; exit 77
fi
grep -q '^  OpenCL kernels: yes' "$top/config.summary" 2> /dev/null || { echo "SKIP: no OpenCL kernels in this build"; exit 77; }
export STARNN_QUIET=1 STARPU_SILENT=1
if ! STARPU_HOME=$(mktemp -d) STARPU_NCPU=1 STARPU_NOPENCL=1 STARPU_OPENCL_ON_CPUS=1 STARPU_OPENCL_ONLY_ON_CPUS=1 \
	"$top/models/mlp" --steps 1 --quiet > /dev/null 2>&1; then
	echo "SKIP: no OpenCL CPU device here (POCL)"; exit 77
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

out=$("$BENCH" --configs test --counts 1 --settings none,bf16,int8+bf16 --steps 2 --warmup 1 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "tools/bench/edge exited $rc"
row() { awk -v s="$1" '$1 == s { print; exit }' <<< "$out"; }
read -r _ n_down n_up n_ratio _ <<< "$(row none)"
read -r _ b_down b_up b_ratio _ <<< "$(row bf16)"
read -r _ i_down i_up i_ratio _ <<< "$(row int8+bf16)"
for v in "$n_down" "$n_up" "$b_down" "$b_up" "$i_down" "$i_up"; do
	[[ $v =~ ^[0-9]+\.[0-9]+$ ]] || { fail "a row without bytes: '$v'"; break; }
done
if [ $failures = 0 ]; then
	# (MiB with 3 decimals: the halves to within one unit of the last digit)
	awk -v n="$n_down" -v b="$b_down" 'BEGIN { exit !(b * 2 - n <= 0.002 && n - b * 2 <= 0.002) }' &&
		ok "weights as bf16: $b_down MiB per step, half of fp32's $n_down" ||
		fail "weights as bf16: $b_down MiB per step, not half of fp32's $n_down"
	awk -v n="$n_down" -v i="$i_down" 'BEGIN { exit !(i >= n / 4 - 0.001 && i <= n * (1 / 4 + 1 / 16) + 0.001) }' &&
		ok "weights as int8: $i_down MiB per step, a quarter of fp32's $n_down and the scales" ||
		fail "weights as int8: $i_down MiB per step against fp32's $n_down"
	[ "$b_up" = "$n_up" ] && ok "gradients back as fp32 with bf16 weights: $b_up MiB, as none's" ||
		fail "gradients back with bf16 weights: $b_up MiB, none's $n_up"
	awk -v n="$n_up" -v i="$i_up" 'BEGIN { exit !(i * 2 - n <= 0.002 && n - i * 2 <= 0.002) }' &&
		ok "gradients back as bf16: $i_up MiB, half of $n_up" || fail "gradients back as bf16: $i_up MiB, not half of $n_up"
	want=$(awk -v a="$n_down" -v b="$n_up" -v c="$b_down" -v d="$b_up" 'BEGIN { printf "%.2f", (a + b) / (c + d) }')
	# (the tool divides the exact bytes, the MiB shown are rounded)
	awk -v w="$want" -v r="$b_ratio" 'BEGIN { exit !(r - w <= 0.01 && w - r <= 0.01) }' &&
		ok "bf16's bytes ratio $b_ratio = (edge bytes of none) / (of bf16)" || fail "bf16's bytes ratio $b_ratio, expected $want"
fi

bad() {
	local want=$1 o r
	shift
	o=$("$BENCH" "$@" 2>&1)
	r=$?
	[ $r = 2 ] && grep -qF -- "$want" <<< "$o" && ok "refused: $*" || fail "$* exited $r: $o"
}
bad "unknown setting" --settings nope
bad "device count" --counts 3
bad "unknown configuration" --configs 64
bad "is not a count" --steps x
bad "unknown --devices" --devices tpu
bad "unknown option" --frobnicate
echo "$failures failure(s)"
[ $failures = 0 ]
