#!/bin/sh
# models/unet's conventions (models/unet_convention.h; about 10 s on 2 cores):
#  - a new model follows the study's Keras UNet by default (decoder
#    concatenation [skip, up], BatchNorm eps 1e-3): info and the start-up
#    lines say so, and its checkpoint records it (format_version 3,
#    convention keras, concat skip,up, bn_eps 0.001); --convention starnn-v1
#    gives starnn's first models ([up, skip], eps 1e-5); another value is
#    refused (exit 2);
#  - an old checkpoint: tests/data/unet/starnn-v1.h5 was written by
#    models/unet before conventions were recorded (2aa8658: format_version 2,
#    no convention attribute; `train --size 16 --depth 2 --filters 1 --batch
#    2 --samples 16 --steps 4 --seed 5`), and
#    tests/data/unet/starnn-v1-forecast.h5 is what that code's `predict
#    --val-samples 4 --output` wrote from it, clipped to [0, 254] as
#    forecasts now are (numpy.clip, exact). Today's predict of that
#    checkpoint gives that file bit for bit (on another processor than the
#    one it was made on, an Intel Xeon with AVX-512, kernels may round in
#    another order: there the sums of the two agree to 1e-6, with a note);
#    it reads as starnn-v1, and the same weights read as keras forecast
#    otherwise;
#  - a checkpoint keeps its convention: --resume continues in it (the
#    resumed checkpoint says starnn-v1), --convention keras with a
#    starnn-v1 checkpoint is refused (exit 1, the message names both);
#    the same weights rewritten as version 2 (ckpt_util version 2: a file
#    as written before conventions) forecast as starnn-v1, not as keras;
#  - with torch, h5py and numpy (STARNN_TORCH_PYTHON, default python3),
#    tools/ref/unet-predict.py loads a keras and the old starnn-v1
#    checkpoint into the PyTorch reference model and its forecasts equal
#    starnn's predict --output within 0.01 raw VIL; skipped without them.
set -u
B=${top_builddir:-.}
src=${srcdir:-$(dirname "$0")/../..}
unet=$B/models/unet
synth=$B/tools/sevir-synth
util=$B/tests/models/ckpt_util
h5sum=$B/tests/models/h5sum
old=$src/tests/data/unet/starnn-v1.h5
old_fc=$src/tests/data/unet/starnn-v1-forecast.h5
export STARPU_NCPU=${STARPU_NCPU:-2} STARPU_NCUDA=${STARPU_NCUDA:-0} STARPU_SILENT=1 STARNN_QUIET=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }
for p in "$unet" "$synth" "$util" "$h5sum"; do
	[ -x "$p" ] || { echo "FAIL: $p is not built"; exit 1; }
done
attrs() { for a in format_version convention concat bn_eps; do "$util" attr "$1" $a 2>&1; done | tr '\n' ' '; }

# ------------------------------------------------------------------ new models
"$unet" info --depth 2 --filters 4 --size 32 | head -1 | grep -q "convention keras (concat \[skip, up\], BatchNorm eps 0.001)" &&
	"$unet" info --depth 2 --filters 4 --size 32 --convention starnn-v1 | head -1 |
	grep -q "convention starnn-v1 (concat \[up, skip\], BatchNorm eps 1e-05)" &&
	ok "info: keras by default, starnn-v1 on request" || fail "info does not name the convention"
"$unet" info --convention torch > /dev/null 2> "$tmp/err"
[ $? = 2 ] && grep -q "keras or starnn-v1" "$tmp/err" || fail "--convention torch not refused with exit 2"
M="--size 16 --depth 2 --filters 1 --batch 2 --samples 16 --seed 5 --eval-every 0"
"$unet" train $M --steps 4 --progress off --checkpoint "$tmp/k.h5" > "$tmp/k.out" 2>&1 || fail "training a keras model"
"$unet" train $M --steps 4 --quiet --convention starnn-v1 --checkpoint "$tmp/v1.h5" > /dev/null || fail "starnn-v1"
grep -q "^convention: keras (decoder concatenation \[skip, up\], BatchNorm eps 0.001)$" "$tmp/k.out" ||
	fail "the start-up lines do not name the convention"
[ "$(attrs "$tmp/k.h5")" = "3 keras skip,up 0.001 " ] && [ "$(attrs "$tmp/v1.h5")" = "3 starnn-v1 up,skip 1.0000000000000001e-05 " ] &&
	ok "checkpoints record the convention: $(attrs "$tmp/k.h5")/ $(attrs "$tmp/v1.h5")" ||
	fail "checkpoint attributes: $(attrs "$tmp/k.h5")/ $(attrs "$tmp/v1.h5")"

# ------------------------------------------------------------------ the old checkpoint
[ "$("$util" attr "$old" format_version)" = 2 ] && ! "$util" attr "$old" convention > /dev/null 2>&1 ||
	fail "$old is not a version-2 file without a convention"
"$unet" predict --checkpoint "$old" --val-samples 4 --output "$tmp/old-fc.h5" --quiet || fail "predict from $old"
if "$util" cmp "$old_fc" "$tmp/old-fc.h5" > "$tmp/cmp"; then
	ok "the old checkpoint forecasts as the code that wrote it did, bit for bit"
else
	a=$("$h5sum" "$old_fc" OUT) b=$("$h5sum" "$tmp/old-fc.h5" OUT)
	if echo "$a $b" | awk '{ if ($1 != $4) exit 1; for (i = 2; i <= 3; i++) { d = $i - $(i + 3); if (d < 0) d = -d
			m = $(i + 3) < 0 ? -$(i + 3) : $(i + 3); if (d > 1e-6 * m) exit 1 } }'; then
		ok "the old checkpoint forecasts as that code did, within 1e-6 (note: not bit for bit on this processor: $(tail -1 "$tmp/cmp"))"
	else
		fail "the old checkpoint forecasts otherwise than the code that wrote it ($a there, $b here)"
	fi
fi

cp "$old" "$tmp/resumed.h5"
"$unet" train --resume "$tmp/resumed.h5" --steps 6 --quiet --checkpoint "$tmp/resumed.h5" > /dev/null ||
	fail "--resume of the old checkpoint"
[ "$("$util" attr "$tmp/resumed.h5" convention)" = starnn-v1 ] && ok "--resume of the old checkpoint continues in starnn-v1" ||
	fail "the resumed old checkpoint is $("$util" attr "$tmp/resumed.h5" convention)"
"$unet" train --resume "$old" --convention keras --steps 6 --quiet > /dev/null 2> "$tmp/err"
[ $? = 1 ] && grep -q "holds a model of convention starnn-v1, --convention asks for keras" "$tmp/err" &&
	ok "--convention keras with a starnn-v1 checkpoint: $(cat "$tmp/err")" ||
	{ fail "--convention keras with a starnn-v1 checkpoint not refused with exit 1"; cat "$tmp/err"; }
"$unet" eval --checkpoint "$old" --convention keras --val-samples 4 > /dev/null 2>&1
[ $? = 1 ] || fail "eval --convention keras of a starnn-v1 checkpoint not refused with exit 1"

# a keras checkpoint rewritten as version 2 is read as starnn-v1: another forecast
cp "$tmp/k.h5" "$tmp/k2.h5"
"$util" version "$tmp/k2.h5" 2 || fail "ckpt_util version 2"
"$unet" predict --checkpoint "$tmp/k.h5" --val-samples 4 --output "$tmp/k.fc.h5" --quiet &&
	"$unet" predict --checkpoint "$tmp/k2.h5" --val-samples 4 --output "$tmp/k2.fc.h5" --quiet || fail "predict"
! "$util" cmp "$tmp/k.fc.h5" "$tmp/k2.fc.h5" > /dev/null && [ "$("$util" attr "$tmp/k2.h5" convention 2>&1 | grep -c keras)" = 0 ] &&
	ok "the conventions are different models: a keras checkpoint without its attribute forecasts otherwise" ||
	fail "a keras checkpoint read as starnn-v1 forecasts the same"

# ------------------------------------------------------------------ PyTorch
py=${STARNN_TORCH_PYTHON:-python3}
if "$py" -c "import torch, h5py, numpy" > /dev/null 2>&1; then
	"$synth" prepared "$tmp/p16.h5" --samples 6 --size 16 --seed 9 > /dev/null || fail "sevir-synth prepared"
	for ck in "$tmp/k.h5" "$old"; do
		"$unet" predict --checkpoint "$ck" --data "$tmp/p16.h5" --output "$tmp/t.fc.h5" --quiet || fail "predict"
		"$py" "$src/tools/ref/unet-predict.py" --checkpoint "$ck" --data "$tmp/p16.h5" --forecast "$tmp/t.fc.h5" \
			> "$tmp/torch.out" 2>&1 && ok "PyTorch reference: $(head -1 "$tmp/torch.out")" ||
			{ fail "PyTorch's forecast of $ck differs"; cat "$tmp/torch.out"; }
	done
else
	echo "note: no torch, h5py and numpy in $py (STARNN_TORCH_PYTHON): the PyTorch cross-check is skipped"
fi
exit $status
