#!/usr/bin/env bash
# tools/paje-check, which tools/trace runs on every paje.trace it writes:
# a small trace in StarPU's format passes, and each kind of breakage seen
# (or possible) in StarPU's output is reported with its line and a failing
# status: a task name with a space in an unquoted field (what made ViTE
# report thousands of errors), a missing field, an unclosed quote, a date
# that is not a number, an unknown type or container, a transfer (link)
# to an unknown memory manager. (grep reads
# here-strings, not pipes: under pipefail, grep -q closing a pipe early
# would fail the echo feeding it.)
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHECK=$SRC/tools/paje-check
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The header and first lines of a real StarPU 1.3.10 paje.trace (fields
# tab-separated), with one task state of the name "conv2d_fwd:enc0/conv1.y[0]".
header() {
	printf '%s\n' \
		'%EventDef	PajeDefineContainerType	1' '%	Alias	string' '%	Type	string' '%	Name	string' '%EndEventDef' \
		'%EventDef	PajeDefineStateType	3' '%	Alias	string' '%	Type	string' '%	Name	string' '%EndEventDef' \
		'%EventDef	PajeDefineEntityValue	6' '%	Alias	string' '%	Type	string' '%	Name	string' '%	Color	color' '%EndEventDef' \
		'%EventDef	PajeCreateContainer	7' '%	Time	date' '%	Alias	string' '%	Type	string' '%	Container	string' '%	Name	string' '%EndEventDef' \
		'%EventDef PajeSetState 10' '%	Time	date' '%	Container	string' '%	Type	string' '%	Value	string' '%EndEventDef' \
		'%EventDef PajeSetState 20' '%	Time	date' '%	Container	string' '%	Type	string' '%	Value	string' '%	Size	string' \
		'%	Params	string' '%	Footprint	string' '%	Tag	string' '%	JobId	string' '%	SubmitOrder	string' '%	GFlop	string' \
		'%	X	string' '%	Y	string' '%	Iteration	string' '%	Subiteration	string' '%EndEventDef' \
		'1	P	0	Program' '1	W	P	Worker' '3	WS	W	"Worker State"' \
		'6	I	WS	Idle	".9 .1 .0"' \
		'7	0.0	p	P	0	program' '7	0.0	w0	W	p	CPU0'
}
# $1: the task name as StarPU would write it.
task() {
	printf '6\t%s\tWS\t%s\t"0.130000 0.420000 0.440000" \n' "$1" "$1"
	printf '10\t0.250000000\tw0\tWS\t"%s"\n' "$1"
	printf '20\t0.250000000\tw0\tWS\t%s\t65536\t16x4096x4_16x144x16\t1a2b3c4d\t0000000000000000\t12\t7\t0.075497\t4096\t16\t-1\t-1\n' "$1"
}

# A clean trace passes, with status 0.
{ header; task "conv2d_fwd:enc0/conv1.y[0]"; } > "$tmp/good.trace"
out=$("$CHECK" "$tmp/good.trace" 2>&1) || fail "a clean trace is reported: $out"
grep -q "all well-formed" <<< "$out" || fail "no 'all well-formed' line: $out"
[ -z "$("$CHECK" --quiet "$tmp/good.trace")" ] || fail "--quiet printed something on a clean trace"

# Each broken trace: status 1 and a message naming the problem.
expect_bad() { # name, pattern of the message, file
	local out rc
	out=$("$CHECK" "$3" 2>&1)
	rc=$?
	[ "$rc" = 1 ] || fail "$1: status $rc, expected 1 (output: $out)"
	grep -q -- "$2" <<< "$out" || fail "$1: no message matching '$2': $out"
	grep -q "would not load it cleanly" <<< "$out" || fail "$1: no summary line: $out"
}
{ header; task "copy y[0]"; } > "$tmp/space.trace"
expect_bad "a name with a space" "PajeDefineEntityValue takes 4 fields, this line has 6" "$tmp/space.trace"
out=$("$CHECK" "$tmp/space.trace")
grep -q "space.trace:$(( $(header | wc -l) + 1 )):" <<< "$out" || fail "the line number of the first bad line is not given: $out"
grep -q "2 malformed line" <<< "$out" || fail "both unquoted lines (6 and 20) are counted: $out"

{ header; printf '10\t0.5\tw0\tWS\n'; } > "$tmp/short.trace"
expect_bad "a missing field" "PajeSetState takes 4 fields, this line has 3" "$tmp/short.trace"

{ header; printf '10\t0.5\tw0\tWS\t"unclosed\n'; } > "$tmp/quote.trace"
expect_bad "an unclosed quote" "unclosed quote" "$tmp/quote.trace"

{ header; printf '10\tsoon\tw0\tWS\tI\n'; } > "$tmp/date.trace"
expect_bad "a date that is no number" "date field is not a number" "$tmp/date.trace"

{ header; printf '10\t0.5\tw0\tXS\tI\n'; } > "$tmp/type.trace"
expect_bad "an unknown type" "unknown type 'XS'" "$tmp/type.trace"

{ header; printf '10\t0.5\tw9\tWS\tI\n'; } > "$tmp/container.trace"
expect_bad "an unknown container" "unknown container 'w9'" "$tmp/container.trace"

{ header; printf '99\t0.5\n'; } > "$tmp/event.trace"
expect_bad "an undeclared event" "event 99 has no %EventDef" "$tmp/event.trace"

# A transfer between memory nodes (a link from RAM's memory manager to a
# device's, as on a run with OpenCL workers): clean when both ends exist,
# reported when an end does not.
links() {
	printf '%s\n' \
		'%EventDef	PajeDefineLinkType	4' '%	Alias	string' '%	Type	string' '%	StartContainerType	string' \
		'%	EndContainerType	string' '%	Name	string' '%EndEventDef' \
		'%EventDef	PajeStartLink	18' '%	Time	date' '%	Type	string' '%	Container	string' '%	Value	string' \
		'%	StartContainer	string' '%	Key	string' '%EndEventDef' \
		'%EventDef	PajeEndLink	19' '%	Time	date' '%	Type	string' '%	Container	string' '%	Value	string' \
		'%	EndContainer	string' '%	Key	string' '%EndEventDef' \
		'1	Mn	P	"Memory Node"' '1	Mm	Mn	"Memory Manager"' '4	F	P	Mm	Mm	"Intra-node data Fetch"' \
		'7	0.1	mn0	Mn	p	MEMNODE0' '7	0.1	mm0	Mm	mn0	MEMMANAGER0' \
		'7	0.1	mn1	Mn	p	MEMNODE1' '7	0.1	mm1	Mm	mn1	MEMMANAGER1'
}
{ header; links; printf '18\t0.5\tF\tp\t4096\tmm0\tcom_0\n19\t0.6\tF\tp\t4096\tmm1\tcom_0\n'; } > "$tmp/link.trace"
out=$("$CHECK" "$tmp/link.trace" 2>&1) || fail "a trace with a transfer between memory nodes is reported: $out"
{ header; links; printf '18\t0.5\tF\tp\t4096\tmm0\tcom_0\n19\t0.6\tF\tp\t4096\tmm2\tcom_0\n'; } > "$tmp/linkend.trace"
expect_bad "a link to an unknown memory manager" "unknown EndContainer 'mm2'" "$tmp/linkend.trace"

# Not a Paje trace at all: status 2.
echo "hello" > "$tmp/plain.txt"
"$CHECK" "$tmp/plain.txt" > /dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "a file without %EventDef: status $rc, expected 2"
"$CHECK" "$tmp/missing.trace" > /dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "a missing file: status $rc, expected 2"

if [ "$failures" = 0 ]; then echo "PASS: paje-check"; else echo "FAIL: $failures check(s)"; fi
[ "$failures" = 0 ]
