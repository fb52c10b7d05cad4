#!/usr/bin/env bash
# Long runs keep their memory: the resident set size (VmRSS of
# /proc/PID/status, sampled every 20 ms by this script while the program
# runs) must not grow after the first steps by more than a stated bound.
#  1. models/unet train, 2000 steps (16x16, depth 2, f 4, batch 2 in 2
#     micro-batches, no evaluation): max RSS over steps 1800-1999 minus max
#     RSS over steps 200-400 below UNET_BOUND_KB (512);
#  2. models/unet train with an evaluation after every step, 50 evaluations
#     (32 validation samples: 16 forecast batches each): max RSS after
#     evaluations 41-48 minus max RSS after evaluations 5-12 below
#     EVAL_BOUND_KB (192);
#  3. models/mlp, 6000 steps (the default 16-64-64-4 network): max RSS over
#     steps 5400-5999 minus max RSS over steps 600-1200 below MLP_BOUND_KB
#     (512).
# The last step is left out of the windows: after it the program reports
# and shuts StarPU down, and RSS then jumps by about 1.7 MB once. So is the
# last interval between evaluations (49 to 50, the final evaluation): with
# the window 42-49 CI once counted that jump, a growth of 1520 kB while the
# samples after each evaluation stayed within 4 kB.
# 16-30 s on this 2-core machine (never idle while measured). Skipped in a
# sanitizer build (ASan keeps freed memory in a quarantine of up to 256 MiB,
# so RSS grows there by design; LeakSanitizer checks that build's runs for
# leaks instead).
#
# Measured noise (growth without a leak, over 20 runs of each part on this
# 2-core machine shared with other builds, load average 6 to 23):
# 1. 8-140 kB, 2. 0-56 kB (most runs with the windows 5-10 / 45-49 and
# 50 ms sampling; 12-16 kB in 3 runs of this version), 3. 0-80 kB.
# Deliberate leaks put into the programs for the check (malloc + memset,
# never freed) all fail: 512 B per training step: 1. 856-940 kB,
# 3. 2904-2956 kB; 1 KiB per step: 1. 1816 kB, 3. 4872 kB; 8 KiB per
# evaluation: 2. 284 kB; 512 B per forecast batch (8 KiB per evaluation):
# 2. 292 kB. The bounds are 3.6x (1), 3.4x (2) and 6.4x (3) the largest
# noise seen.
set -u
B=${top_builddir:-.}
unet=$B/models/unet
mlp=$B/models/mlp
if grep -q '^ *sanitizers *: *yes' "$B/config.summary" 2> /dev/null; then
	echo "SKIP: sanitizer build (ASan's quarantine makes RSS grow; LeakSanitizer checks leaks there)"
	exit 77
fi
[ -r /proc/self/status ] || { echo "SKIP: no /proc/PID/status"; exit 77; }
UNET_BOUND_KB=${UNET_BOUND_KB:-512}
EVAL_BOUND_KB=${EVAL_BOUND_KB:-192}
MLP_BOUND_KB=${MLP_BOUND_KB:-512}
export STARPU_NCPU=${STARPU_NCPU:-2} STARPU_NCUDA=0 STARPU_SILENT=1
tmp=$(mktemp -d)
trap '[ -n "${LONGRUN_KEEP:-}" ] && cp -r "$tmp" "$LONGRUN_KEEP"; rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }

# sample NAME KIND CMD...: runs CMD in the background (output in
# $tmp/run.out) and, while it runs, appends "progress rss_kB" every 20 ms to
# $tmp/NAME.rss. KIND says where progress is read: "step" (the step of the
# last --log-json line of $tmp/run.json), "eval" (the number of evaluation
# lines there), "mlp" (the last "step N/M" line of the output). Progress is
# read before RSS, so a sample's RSS is that of its progress or later. The
# loop uses only bash builtins (no process per sample, so it keeps pace on a
# busy machine): the progress file is read on from where the last sample
# stopped, and the 20 ms wait is a read timeout on a FIFO. The programs are
# libtool wrappers that exec the real binary (same PID); samples before the
# first step are dropped.
sample() {
	local name=$1 kind=$2 file line="" partial="" p="" rss k v rc evals=0
	shift 2
	rm -f "$tmp/run.json" "$tmp/fifo"
	: > "$tmp/$name.rss"
	: > "$tmp/run.json"
	: > "$tmp/run.out" # both exist before fd 3 opens one of them
	mkfifo "$tmp/fifo"
	exec 4<> "$tmp/fifo"
	"$@" > "$tmp/run.out" 2>&1 &
	local pid=$!
	[ "$kind" = mlp ] && file=$tmp/run.out || file=$tmp/run.json
	exec 3< "$file"
	while [ -r "/proc/$pid/status" ]; do
		# Complete lines since the last sample; a line still being written
		# is kept in $partial until its end arrives.
		while true; do
			if IFS= read -r -u 3 line; then
				line=$partial$line partial=""
			else
				partial=$partial$line
				break
			fi
			case $kind:$line in
			step:'{"step":'*'"loss":'*) line=${line#'{"step":'}; p=${line%%,*} ;;
			eval:'{"step":'*'"eval":'*) evals=$((evals + 1)); p=$evals ;;
			mlp:step\ *) line=${line#step}; line=${line#"${line%%[0-9]*}"}; p=${line%%/*} ;;
			esac
		done
		rss=""
		while read -r k v _; do
			[ "$k" = VmRSS: ] && rss=$v
		done < "/proc/$pid/status" 2> /dev/null
		[ -n "$p" ] && [ -n "$rss" ] && echo "$p $rss" >> "$tmp/$name.rss"
		read -r -t 0.02 -u 4 _
	done
	exec 3<&- 4<&-
	wait $pid
	rc=$?
	[ $rc = 0 ] || { fail "$name: '$*' exited $rc"; cat "$tmp/run.out"; }
	return $rc
}

# growth NAME LO1 HI1 LO2 HI2 BOUND_KB WHAT: max RSS of the samples with
# progress in [LO2, HI2] minus that of [LO1, HI1], below BOUND_KB; at least 3
# samples in each window. The verdict's line goes to $tmp/growth.
growth() {
	name=$1
	awk -v lo1="$2" -v hi1="$3" -v lo2="$4" -v hi2="$5" -v bound="$6" -v what="$7" -v name="$name" '
		$1 >= lo1 && $1 <= hi1 { n1++; if ($2 > a) a = $2 }
		$1 >= lo2 && $1 <= hi2 { n2++; if ($2 > b) b = $2 }
		END {
			if (n1 < 3 || n2 < 3) {
				printf "%s: too few samples (%d in %s %d-%d, %d in %d-%d)\n", name, n1, what, lo1, hi1, n2, lo2, hi2
				exit 1
			}
			printf "%s: max RSS %d kB over %s %d-%d (%d samples), %d kB over %s %d-%d (%d samples): growth %d kB (bound %d kB)\n",
				name, a, what, lo1, hi1, n1, b, what, lo2, hi2, n2, b - a, bound
			exit !(b - a < bound)
		}' "$tmp/$name.rss" > "$tmp/growth"
}

# check NAME KIND LO1 HI1 LO2 HI2 BOUND_KB WHAT CMD...: runs CMD (sample) and
# checks its growth (growth). Over the bound, CMD runs once more, and the
# part fails only when that run is over the bound too: a leak grows in
# every run by the same amount, while the rare jump of a run without one
# does not repeat (a CI run, 7 Dec 2026, machine loaded by the suite's other
# tests: part 2 at 240 kB, its RSS after the first evaluation 400 kB below
# that of other runs and level from evaluation 42 on; 0-12 kB in the 6 runs
# here since, 3 of them beside two busy loops).
check() {
	local name=$1 kind=$2 lo1=$3 hi1=$4 lo2=$5 hi2=$6 bound=$7 what=$8 try
	shift 8
	for try in 1 2; do
		sample "$name" "$kind" "$@" || return 1
		if growth "$name" "$lo1" "$hi1" "$lo2" "$hi2" "$bound" "$what"; then
			[ $try = 1 ] && ok "$(cat "$tmp/growth")" || ok "$(cat "$tmp/growth") (the second run)"
			return 0
		fi
		echo "run $try: $(cat "$tmp/growth")"
		awk 'NR % 10 == 1' "$tmp/$name.rss" | tr '\n' ' '
		echo
	done
	fail "$name: over the bound in two runs"
	return 1
}

U="--size 16 --depth 2 --filters 4 --batch 2 --micro-batches 2 --samples 64 --quiet --progress off"

# 1. 2000 training steps.
check train step 200 400 1800 1999 "$UNET_BOUND_KB" steps \
	"$unet" train $U --steps 2000 --eval-every 0 --log-json "$tmp/run.json"

# 2. 50 evaluations (after steps 1-49 and at the end).
check eval eval 5 12 41 48 "$EVAL_BOUND_KB" evaluations \
	"$unet" train $U --val-samples 32 --steps 50 --eval-every 1 --log-json "$tmp/run.json" &&
	{ n=$(grep -c '"eval":' "$tmp/run.json"); [ "$n" = 50 ] || fail "eval: $n evaluations, 50 expected"; }

# 3. models/mlp, 6000 steps (its loss printed every 10: the step waits for
# it). Its output is a file here, so stdio would buffer it in 4 KiB blocks
# (70 lines): stdbuf makes it line-buffered.
linebuf=
command -v stdbuf > /dev/null && linebuf="stdbuf -oL"
check mlp mlp 600 1200 5400 5999 "$MLP_BOUND_KB" steps $linebuf "$mlp" --steps 6000 --log-every 10
exit $status
