#!/bin/sh
# models/unet killed with SIGKILL and resumed, 20 times in a row (about
# 20-40 s on 2 cores): a tiny model (16x16, depth 1, f 2, batch 2), 240
# steps (the kills leave most of them to the last run), --checkpoint-every 5. The moments of the kills are drawn from a
# fixed seed (printed) in three kinds, in turn:
#  - in the middle of a checkpoint write: STARNN_TEST_WRITE_PAUSE_MS=300
#    makes the writer pause half-way through the datasets and between the
#    fsync and the rename; the kill comes 0-400 ms after a new temporary
#    file appears, so while it is written or complete but not renamed;
#  - at a random time 0-300 ms after the start (start-up, loading the
#    checkpoint, the first steps);
#  - 0-40 ms after a random number (1-15) of new steps was logged.
# After every kill the checkpoint, when one exists, opens and every dataset
# reads (h5sum), and its step never goes back. Temporaries left by the kills
# are removed by a later run, which says so. The last run resumes to the end
# undisturbed: its checkpoint equals that of an uninterrupted run bit for
# bit, datasets and attributes (ckpt_util cmp), and no temporary is left.
# Then the removal of stale temporaries itself: a stale one is removed with
# one line on stderr, a live writer's (flock(1) holds it) and files of other
# names are left alone.
set -u
B=${top_builddir:-.}
# STARNN_TEST_WRITE_PAUSE_MS is a test hook (configure --enable-test-hooks,
# on in tools/setup's builds): without it the writes are too quick to be
# killed in the middle, and the test skips (77).
grep -q '^ *test hooks *: *yes' "$B/config.summary" 2> /dev/null ||
	{ echo "SKIP: this build has no test hooks (STARNN_TEST_WRITE_PAUSE_MS): configure --enable-test-hooks"; exit 77; }
h5sum=$B/tests/models/h5sum
ckutil=$B/tests/models/ckpt_util
. "$(dirname "$0")/unet_common.sh" # $unet, $synth, $tmp, fail, ok, expect, losses

S=240
EVERY=5
C="--size 16 --depth 1 --filters 2 --batch 2 --micro-batches 1 --samples 32 --val-samples 4 --eval-every 0 --quiet"
ck=$tmp/ck.h5

# Pseudo-random numbers from a fixed seed: "rand LO HI" prints an integer
# in [LO, HI]; the state is a counter, so that a failing run can be replayed.
SEED=${UNET_KILL_SEED:-20261201}
draws=0
rand() {
	draws=$((draws + 1))
	awk -v s="$SEED" -v n=$draws -v lo="$1" -v hi="$2" \
		'BEGIN { srand(s + n * 7919); print lo + int(rand() * (hi - lo + 1)) }'
}
msleep() { sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"; }
nlines() { if [ -f "$1" ]; then grep -c '"loss"' "$1"; else echo 0; fi; }
temps() { ls "$ck".tmp.* 2> /dev/null; }

# ------------------------------------------------------------------ reference
"$unet" train $C --steps $S --checkpoint "$tmp/ref.h5" --checkpoint-every $EVERY > "$tmp/ref.out" 2>&1 ||
	{ fail "uninterrupted run exited $?"; cat "$tmp/ref.out"; }

# ------------------------------------------------------------------ 20 kills
echo "kill moments from seed $SEED (UNET_KILL_SEED)"
last_step=0 mid_write=0 left=0
for i in $(seq 1 20); do
	if [ -f "$ck" ]; then
		set -- train --resume "$ck" --steps $S --checkpoint "$ck" --checkpoint-every $EVERY --eval-every 0 --quiet
	else
		set -- train $C --steps $S --checkpoint "$ck" --checkpoint-every $EVERY
	fi
	log=$tmp/log.$i
	before=$(temps)
	case $((i % 3)) in
	1) kind="in a checkpoint write"
		STARNN_TEST_WRITE_PAUSE_MS=300 "$unet" "$@" --log-json "$log" > "$tmp/out.$i" 2>&1 &
		pid=$!
		# wait for a temporary that was not there before (ours)
		n=0 new=
		while [ $n -lt 1000 ] && [ -z "$new" ] && kill -0 $pid 2> /dev/null; do
			for f in $(temps); do
				case " $(echo $before) " in *" $f "*) ;; *) new=$f ;; esac
			done
			[ -n "$new" ] || sleep 0.01
			n=$((n + 1))
		done
		msleep "$(rand 0 400)" ;;
	2) kind="at a random time"
		"$unet" "$@" --log-json "$log" > "$tmp/out.$i" 2>&1 &
		pid=$!
		msleep "$(rand 0 300)" ;;
	0) kind="after some steps"
		"$unet" "$@" --log-json "$log" > "$tmp/out.$i" 2>&1 &
		pid=$!
		want=$(rand 1 15) n=0
		while [ $n -lt 1000 ] && [ "$(nlines "$log")" -lt "$want" ] && kill -0 $pid 2> /dev/null; do
			sleep 0.01
			n=$((n + 1))
		done
		msleep "$(rand 0 40)" ;;
	esac
	kill -KILL $pid 2> /dev/null
	{ wait $pid; } 2> /dev/null # (the shell's own "Killed")
	rc=$?
	if [ $rc = 0 ] && [ "$("$ckutil" int "$ck" step 2> /dev/null)" = $S ]; then
		echo "kill $i came too late: the run had reached step $S" # a very fast machine: not a failure
		break
	fi
	[ $rc = 137 ] || { fail "kill $i ($kind): the run was not killed (exit $rc)"; cat "$tmp/out.$i"; }
	now=$(temps | wc -l)
	# the killed run's own temporary (a name that was not there before)
	for f in $(temps); do
		case " $(echo $before) " in
		*" $f "*) ;;
		*) left=$((left + 1)); case $kind in in*) mid_write=$((mid_write + 1)) ;; esac ;;
		esac
	done
	step=none
	if [ -f "$ck" ]; then
		if ! "$h5sum" "$ck" > /dev/null 2>&1 || ! step=$("$ckutil" int "$ck" step 2> /dev/null); then
			fail "kill $i ($kind): the checkpoint does not open or read"
			step=$last_step
		elif [ "$step" -lt "$last_step" ]; then
			fail "kill $i ($kind): the checkpoint went back from step $last_step to $step"
		fi
		last_step=$step
	fi
	echo "kill $i $kind: $(nlines "$log") steps logged, checkpoint at step $step, $now temporaries beside it"
done

# ------------------------------------------------------------------ the end
"$unet" train --resume "$ck" --steps $S --checkpoint "$ck" --checkpoint-every $EVERY --eval-every 0 --quiet \
	> "$tmp/last.out" 2>&1 || { fail "the last resumed run exited $?"; cat "$tmp/last.out"; }
if "$ckutil" cmp "$tmp/ref.h5" "$ck" > "$tmp/cmp.out" 2>&1; then
	ok "$i kills + resume: the final checkpoint equals the uninterrupted run's bit for bit ($(tail -1 "$tmp/cmp.out"))"
else
	fail "$i kills + resume: the final checkpoint differs from the uninterrupted run's:"
	cat "$tmp/cmp.out"
fi
[ $mid_write -ge 1 ] && ok "$mid_write kills in the middle of a checkpoint write left their temporary ($left in all)" ||
	fail "no kill landed in the middle of a checkpoint write"
removed=$(cat "$tmp"/out.* "$tmp/last.out" | grep -c "removed [0-9]* stale temporar")
[ -z "$(temps)" ] && [ "$removed" -ge 1 ] &&
	ok "the temporaries of killed writers were removed by later runs ($removed runs said so), none left" ||
	fail "temporaries: $(temps | wc -l) left, $removed removal lines for the $left left by kills"

# ------------------------------------------------------------------ stale temporaries
# A stale temporary (nobody holds it), a live one (flock(1) holds it, as a
# writer would), and names that are not temporaries of this checkpoint.
d=$tmp/stale
mkdir "$d"
echo stale > "$d/m.h5.tmp.Ab3xYz"
for f in m.h5.tmp.abc m.h5.tmp.abcdefg m.h5.tmp.ab-def other.h5.tmp.abcdef m.h5.tmpXabcdef; do
	echo keep > "$d/$f"
done
if command -v flock > /dev/null; then
	# -o: only flock(1) holds the lock, its child has no descriptor; the
	# child (and so the holder) ends when $d/hold is removed
	touch "$d/hold"
	flock -o "$d/m.h5.tmp.LiVe42" sh -c "while [ -e '$d/hold' ]; do sleep 0.05; done" > /dev/null 2>&1 &
	holder=$!
	n=0
	while [ ! -e "$d/m.h5.tmp.LiVe42" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
else
	holder=
	echo "(no flock(1): the live temporary is not tested)"
fi
"$unet" train $C --steps 1 --checkpoint "$d/m.h5" > "$tmp/st.out" 2>&1 || { fail "run beside stale temporaries"; cat "$tmp/st.out"; }
lines=$(grep -c "stale temporar" "$tmp/st.out")
if [ ! -e "$d/m.h5.tmp.Ab3xYz" ] && [ "$lines" = 1 ] && grep -q "m.h5: removed 1 stale temporary file" "$tmp/st.out"; then
	ok "a stale temporary is removed, one line: $(grep "stale temporar" "$tmp/st.out")"
else
	fail "stale temporary: $(ls "$d" | tr '\n' ' '), $lines lines:"
	cat "$tmp/st.out"
fi
kept=0
for f in m.h5.tmp.abc m.h5.tmp.abcdefg m.h5.tmp.ab-def other.h5.tmp.abcdef m.h5.tmpXabcdef; do
	[ -e "$d/$f" ] && kept=$((kept + 1)) || fail "$f was removed"
done
[ $kept = 5 ] && ok "files of other names are left alone"
if [ -n "$holder" ]; then
	[ -e "$d/m.h5.tmp.LiVe42" ] && ok "a temporary someone holds locked is left alone" ||
		fail "the live temporary was removed"
	rm -f "$d/hold"
	wait $holder
	"$unet" train $C --steps 1 --checkpoint "$d/m.h5" > "$tmp/st2.out" 2>&1 || fail "second run beside temporaries"
	[ ! -e "$d/m.h5.tmp.LiVe42" ] && grep -q "removed 1 stale" "$tmp/st2.out" &&
		ok "once its holder is gone, the next write removes it" || fail "the released temporary was not removed"
fi
exit $status
