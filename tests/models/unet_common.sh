# What tests/models/unet.sh and unet_routes.sh share: the programs, a
# temporary directory, the status and how they report, per-step losses.
# Sourced (POSIX sh).
set -u
B=${top_builddir:-.}
unet=$B/models/unet
synth=$B/tools/sevir-synth
poke=$B/tests/models/unet_h5poke
export STARPU_NCPU=${STARPU_NCPU:-2} STARPU_NCUDA=${STARPU_NCUDA:-0} STARPU_SILENT=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }

# Runs a command expecting exit status $1 and a message matching $2 on stderr.
expect() {
	want=$1 pattern=$2
	shift 2
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ $rc != "$want" ]; then
		fail "'$*' exited $rc, expected $want"
		cat "$tmp/err"
	elif ! grep -qi -- "$pattern" "$tmp/err"; then
		fail "'$*': no message matching '$pattern':"
		cat "$tmp/err"
	elif grep -Eq '[a-z_]+\.c:[0-9]+:' "$tmp/err"; then
		fail "'$*': the message shows a source location of starnn:"
		cat "$tmp/err"
	else
		ok "'$*' -> exit $rc: $(head -1 "$tmp/err")"
	fi
}

# Per-step losses of a --log-json file, "step loss" lines.
losses() { sed -n 's/^{"step":\([0-9]*\),"epoch":[0-9]*,"loss":\([^,]*\),.*/\1 \2/p' "$1"; }

# identical_losses WHAT N A.json B.json: N per-step losses each, the same text
identical_losses() {
	losses "$3" > "$tmp/a.loss"
	losses "$4" > "$tmp/b.loss"
	if [ "$(wc -l < "$tmp/a.loss")" = "$2" ] && cmp -s "$tmp/a.loss" "$tmp/b.loss"; then
		ok "$1: $2 per-step losses identical"
	else
		fail "$1: losses differ"
		diff "$tmp/a.loss" "$tmp/b.loss" | head
	fi
}
# same_losses WHAT A.json B.json [BOUND]: 5 losses each, within BOUND
# (default 1e-5) relative
same_losses() {
	losses "$2" > "$tmp/a.loss"
	losses "$3" > "$tmp/b.loss"
	d=$(paste "$tmp/a.loss" "$tmp/b.loss" | awk '
		{ n++; r = ($2 - $4) / $4; if (r < 0) r = -r; if (r > m) m = r }
		END { if (n != 5) print "n=" n; else printf "%.3g\n", m }')
	case $d in n=*) fail "$1: 5 losses each expected ($d)" ;;
	*) awk -v d="$d" -v b="${4:-1e-5}" 'BEGIN { exit !(d <= b) }' && ok "$1: losses within $d relative over 5 SGD steps" ||
		fail "$1: losses differ by $d relative (bound ${4:-1e-5})" ;;
	esac
}
