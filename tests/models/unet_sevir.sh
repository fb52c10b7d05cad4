#!/bin/sh
# models/unet on SEVIR files as the data set's authors' tools write and read
# them (about 30 s on 2 cores; files written by tools/sevir-synth, the
# layouts of the official ones):
#  - a raw file where SEVIR's tree puts it (HOME/vil/2018/NAME.h5 with
#    HOME/CATALOG.csv): every vil row's file_name names, relative to the
#    catalog's directory, a file that exists (what the authors' loaders
#    open: data_home + '/' + file_name), each event once; one event dated
#    2019-06-01 00:00:00 exactly, which is a training event (the authors'
#    rule: training up to that date inclusive, test after);
#  - prepared files as the authors' make_nowcast_dataset.py writes them
#    (IN / OUT uint8, chunked, first dimension unlimited), float32 and
#    contiguous float64: training (per-step losses) and eval (the printed
#    scores) give the same figures on all of them, from memory and
#    (STARNN_DATA_MEMORY_MB=0) from the file;
#  - eval on the raw file's test split equals eval on the prepared file of
#    that split made from it (uint8, official layout);
#  - a prepared file of another type (int16) is refused with exit 1 and a
#    message naming the types accepted; nothing is written;
#  - predict --output writes forecasts clipped to [0, 254] raw VIL (those
#    of a briefly trained model go below 0: some are 0 in the file).
set -u
B=${top_builddir:-.}
unet=$B/models/unet
synth=$B/tools/sevir-synth
poke=$B/tests/models/unet_h5poke
export STARPU_NCPU=${STARPU_NCPU:-2} STARPU_NCUDA=${STARPU_NCUDA:-0} STARPU_SILENT=1 STARNN_QUIET=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }
for p in "$unet" "$synth" "$poke"; do
	[ -x "$p" ] || { echo "FAIL: $p is not built"; exit 1; }
done
# per-step losses of a --log-json (step and loss)
losses() { sed -n 's/^{"step":\([0-9]*\),"epoch":[0-9]*,"loss":\([^,]*\),.*/\1 \2/p' "$1"; }
# the scores eval prints (model and persistence, every lead time; not the
# line naming the data, nor the energy and memory lines)
scores() { grep -v '^evaluating\|^energy\|^  *energy\|joules\|^peak' "$1"; }

M="--depth 2 --filters 4 --batch 4 --micro-batches 2 --seed 5 --eval-every 0 --quiet"

# ------------------------------------------------------------------ the catalog's data home
home=$tmp/sevir
mkdir -p "$home/vil/2018"
raw=$home/vil/2018/SEVIR_VIL_STORMEVENTS_2018_0101_0630.h5
cat=$home/CATALOG.csv
"$synth" raw "$raw" --catalog "$cat" --events 30 --size 32 --seed 3 > /dev/null || fail "sevir-synth raw"
# every vil row: HOME/file_name exists; each id once; the boundary event
awk -F, -v home="$home" 'NR > 1 && $4 == "vil" { n++; if (seen[$1]++) dup++
		if ((getline line < (home "/" $2)) < 0) missing++; close(home "/" $2) }
	END { printf "%d %d %d\n", n, dup + 0, missing + 0 }' "$cat" > "$tmp/rows"
read nvil dup missing < "$tmp/rows"
[ "$nvil" = 30 ] && [ "$dup" = 0 ] && [ "$missing" = 0 ] &&
	ok "catalog: 30 vil rows, each event once, every file_name under the catalog's directory exists" ||
	fail "catalog: $nvil vil rows (30 expected), $dup repeated, $missing naming no file"
grep -q ',vil,2019-06-01 00:00:00,' "$cat" || fail "no event dated 2019-06-01 00:00:00 in the catalog"
"$unet" train --data "$raw" --catalog "$cat" $M --steps 0 --checkpoint "$tmp/init.h5" > "$tmp/t.out" 2>&1 ||
	{ fail "training on the raw file with --catalog"; cat "$tmp/t.out"; }
# the split: training events are those up to 2019-06-01 00:00:00 inclusive
want_train=$(awk -F, 'NR > 1 && $4 == "vil" && $NF + 0 == 0 && $5 <= "2019-06-01 00:00:00"' "$cat" | wc -l)
want_test=$(awk -F, 'NR > 1 && $4 == "vil" && $NF + 0 == 0 && $5 > "2019-06-01 00:00:00"' "$cat" | wc -l)
"$unet" train --data "$raw" --catalog "$cat" --depth 2 --filters 4 --batch 4 --steps 1 --progress off --eval-every 1 \
	> "$tmp/split.out" 2>&1 ||
	{ fail "a step on the raw file"; cat "$tmp/split.out"; }
grep -q "^data: raw SEVIR events .*(.*, train): $want_train events" "$tmp/split.out" &&
	grep -q "^evaluation: raw SEVIR events .*(.*, test): $want_test events" "$tmp/split.out" &&
	ok "split at 2019-06-01 00:00:00 (inclusive for training): $want_train training events, $want_test test events" ||
	{ fail "the split is not $want_train training / $want_test test events"; grep '^data:\|^evaluation:' "$tmp/split.out"; }

# ------------------------------------------------------------------ prepared layouts
"$synth" prepared "$tmp/f32.h5" --samples 12 --size 32 --seed 4 > /dev/null &&
	"$synth" prepared "$tmp/u8.h5" --samples 12 --size 32 --seed 4 --dtype uint8 --storage official > /dev/null &&
	"$synth" prepared "$tmp/f64.h5" --samples 12 --size 32 --seed 4 --dtype float64 --storage contiguous > /dev/null ||
	fail "sevir-synth prepared"
"$unet" train --data "$tmp/f32.h5" $M --steps 6 --log-json "$tmp/f32.json" --checkpoint "$tmp/m.h5" > /dev/null ||
	fail "training on float32"
"$unet" eval --checkpoint "$tmp/m.h5" --data "$tmp/f32.h5" > "$tmp/e.f32" 2>&1 || fail "eval on float32"
for run in u8 u8:0 f64; do
	f=${run%%:*}
	mem=${run#*:}
	[ "$mem" = "$run" ] && mem=256
	STARNN_DATA_MEMORY_MB=$mem "$unet" train --data "$tmp/$f.h5" $M --steps 6 --log-json "$tmp/$f.json" > /dev/null ||
		fail "training on $f"
	STARNN_DATA_MEMORY_MB=$mem "$unet" eval --checkpoint "$tmp/m.h5" --data "$tmp/$f.h5" > "$tmp/e.$f.$mem" 2>&1 ||
		fail "eval on $f"
	[ "$(losses "$tmp/f32.json" | wc -l)" = 6 ] && [ "$(losses "$tmp/$f.json")" = "$(losses "$tmp/f32.json")" ] &&
		[ "$(scores "$tmp/e.$f.$mem")" = "$(scores "$tmp/e.f32")" ] &&
		ok "$f (memory limit $mem MiB): the 6 losses and the eval scores of the float32 file" ||
		{ fail "$f (memory limit $mem MiB) trains or evaluates otherwise than float32"; diff "$tmp/e.f32" "$tmp/e.$f.$mem" | head; }
done
grep -q "(in memory)" "$tmp/e.u8.256" && ! grep -q "(in memory)" "$tmp/e.u8.0" ||
	fail "the uint8 file: not in memory by default or in memory with STARNN_DATA_MEMORY_MB=0: $(head -1 "$tmp/e.u8.256")"

# ------------------------------------------------------------------ raw test split = its prepared file
"$synth" prepared "$tmp/test-u8.h5" --from "$raw" --catalog "$cat" --split test --dtype uint8 --storage official \
	> /dev/null || fail "sevir-synth prepared --from"
"$unet" train --data "$raw" --catalog "$cat" $M --steps 4 --checkpoint "$tmp/r.h5" > /dev/null ||
	fail "training on the raw file"
"$unet" eval --checkpoint "$tmp/r.h5" --data "$raw" --catalog "$cat" --log-json "$tmp/raw.json" > "$tmp/e.raw" 2>&1 &&
	"$unet" eval --checkpoint "$tmp/r.h5" --data "$tmp/test-u8.h5" --log-json "$tmp/prep.json" > "$tmp/e.prep" 2>&1 ||
	fail "eval on the raw file or its prepared test file"
[ "$(scores "$tmp/e.raw")" = "$(scores "$tmp/e.prep")" ] && [ "$(head -1 "$tmp/raw.json")" = "$(head -1 "$tmp/prep.json")" ] &&
	ok "eval on the raw file's test split = eval on its prepared test file (uint8, official layout), every score" ||
	{ fail "eval on the raw test split differs from eval on its prepared file"; diff "$tmp/e.raw" "$tmp/e.prep" | head; }

# sevir-synth's usage errors: exit 2, nothing written
for args in "--dtype int16" "--storage packed" "--from $raw --split dev" "--from $raw --samples 3" "--catalog $cat"; do
	"$synth" prepared "$tmp/bad.h5" $args > /dev/null 2>&1
	rc=$?
	[ $rc = 2 ] && [ ! -e "$tmp/bad.h5" ] || fail "sevir-synth prepared $args: exit $rc, $(ls "$tmp"/bad.h5* 2>&1)"
done

# ------------------------------------------------------------------ another type
cp "$tmp/f32.h5" "$tmp/i16.h5"
"$poke" "$tmp/i16.h5" IN int16 || fail "cannot rewrite IN as int16"
"$unet" train --data "$tmp/i16.h5" $M --steps 2 --checkpoint "$tmp/i16.ckpt.h5" > "$tmp/o" 2> "$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q "holds int16 values; a prepared file holds uint8 .*, float32 or float64" "$tmp/err" &&
	[ ! -e "$tmp/i16.ckpt.h5" ] && ok "int16 refused (exit 1): $(cat "$tmp/err")" ||
	{ fail "an int16 file: exit $rc, checkpoint $(ls "$tmp"/i16.ckpt.h5 2>&1)"; cat "$tmp/err"; }
"$unet" eval --checkpoint "$tmp/m.h5" --data "$tmp/i16.h5" > "$tmp/o" 2> "$tmp/err"
[ $? = 1 ] && grep -q "uint8" "$tmp/err" || fail "eval on an int16 file not refused with exit 1"
"$unet" train --data "$tmp/f32.h5" --val-data "$tmp/i16.h5" $M --eval-every 1 --steps 2 > "$tmp/o" 2> "$tmp/err"
[ $? = 1 ] && grep -q "uint8" "$tmp/err" || fail "--val-data of int16 not refused with exit 1"

# ------------------------------------------------------------------ forecasts' range
# a model trained 30 steps forecasts below 0 (many synthetic pixels are 0)
# and above 254: the file holds them as 0 and 254
"$unet" train --data "$tmp/f32.h5" $M --steps 30 --lr 0.01 --checkpoint "$tmp/m30.h5" > /dev/null || fail "30 steps"
"$unet" predict --checkpoint "$tmp/m30.h5" --data "$tmp/f32.h5" --output "$tmp/fc.h5" --quiet ||
	fail "predict --output"
"$B/tests/models/h5sum" --range "$tmp/fc.h5" OUT > "$tmp/range" || fail "h5sum --range"
read lo hi < "$tmp/range"
awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(lo == 0 && hi <= 254) }' &&
	ok "predict --output: forecasts in [$lo, $hi] (clipped to [0, 254])" ||
	fail "predict --output: forecasts in [$lo, $hi], not clipped to [0, 254] with some at 0"
exit $status
