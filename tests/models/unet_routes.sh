#!/bin/sh
# models/unet's layouts and convolution routes (split from
# tests/models/unet.sh so that make -j runs them beside its other parts):
# activations in the blocked layout train as NCHW ones (STARNN_LAYOUT);
# each convolution route trains as oneDNN's (the losses within the
# rounding bounds stated below); the optimizer keeps the packed weights
# current: the losses of packing tasks, and no reorder in a steady step
# (DNNL_VERBOSE).
. "$(dirname "$0")/unet_common.sh"

# ------------------------------------------------------------------ layouts
# Activations in oneDNN's blocked layout (the default where it applies:
# this build's oneDNN, CPU workers) train as NCHW ones (STARNN_LAYOUT=nchw):
# the same per-step losses but for float rounding, and the start-up line
# says which layout ran; an unknown STARNN_LAYOUT is an error. Plain SGD,
# 5 steps: Adam's first steps turn rounding noise in the tiny gradients
# into whole lr-sized steps of either sign, and any optimizer amplifies the
# noise over steps (measured on an Intel Xeon with nChw16c: Adam 1.1e-5
# after 4 steps, 1.1e-4 after 8; SGD at 16 filters 7e-7 after 5 steps, 1.6e-4
# after 10; at 8 filters SGD is bit for bit here and AMD measured 5.6e-8 with
# Adam). A gradient 10% off moves the second loss by 1.7e-3 (measured as
# --lr 0.011 against 0.01), so 1e-5 still catches a wrong pass. Where the
# first layer's forward runs on starnn's direct kernel (nChw8c, below) the
# bound is 1e-4: its sums run in im2col's order, not oneDNN's, and that
# first-layer rounding reaches every later layer (measured on this EPYC:
# 2.0e-5 at step 3 against the NCHW run, whose first layer is oneDNN's).
L="--size 32 --depth 2 --filters 16 --batch 4 --micro-batches 2 --samples 64 --steps 5 --eval-every 0 --optimizer sgd --lr 0.01"
"$unet" train $L --log-json "$tmp/lb.json" > "$tmp/lb.out" 2>&1 || { fail "blocked-layout run exited $?"; cat "$tmp/lb.out"; }
STARNN_LAYOUT=nchw "$unet" train $L --log-json "$tmp/ln.json" > "$tmp/ln.out" 2>&1 ||
	{ fail "NCHW run exited $?"; cat "$tmp/ln.out"; }
want='^activations: nChw\(8\|16\)c'
grep -q '^ *oneDNN.*: yes' "$B/config.summary" 2> /dev/null || want='^activations: NCHW'
grep -q "$want" "$tmp/lb.out" && ok "$(grep '^activations:' "$tmp/lb.out")" ||
	fail "no '$want' line: $(grep '^activations:' "$tmp/lb.out")"
grep -q '^activations: NCHW (STARNN_LAYOUT=nchw)' "$tmp/ln.out" || fail "STARNN_LAYOUT=nchw: $(grep '^activations:' "$tmp/ln.out")"
same_losses "blocked vs NCHW activations" "$tmp/lb.json" "$tmp/ln.json" \
	"$(grep -q '^activations: nChw8c' "$tmp/lb.out" && echo 1e-4 || echo 1e-5)"
# NHWC (STARNN_LAYOUT=nhwc in fp32; oneDNN's own pick for bf16 on AMX,
# where amp-bf16 shows it; measured on an AMX Xeon: fp32 3.5e-8, amp-bf16
# bit for bit), and amp-bf16 in its default layout against NCHW.
STARNN_LAYOUT=nhwc "$unet" train $L --log-json "$tmp/lh.json" > "$tmp/lh.out" 2>&1 ||
	{ fail "NHWC run exited $?"; cat "$tmp/lh.out"; }
want='^activations: NHWC'
grep -q '^ *oneDNN.*: yes' "$B/config.summary" 2> /dev/null || want='^activations: NCHW'
grep -q "$want" "$tmp/lh.out" || fail "STARNN_LAYOUT=nhwc: $(grep '^activations:' "$tmp/lh.out")"
# (NHWC's first layer is the direct kernel's too, into NHWC, where
# oneDNN's fp32 layout is nChw8c: the same 1e-4.)
same_losses "NHWC vs NCHW activations" "$tmp/lh.json" "$tmp/ln.json" \
	"$(grep -q '^activations: nChw8c' "$tmp/lb.out" && echo 1e-4 || echo 1e-5)"
# (The transposed convolutions, the 1x1 output layer and the first layer's
# forward on oneDNN in both: on nChw8c they would otherwise run on
# starnn's own kernels, which sum in another order, and a bf16 rounding
# that flips moves the loss by ~1e-4; the fp32 runs above and below
# compare the routes.)
export STARNN_CONVT2D=dnnl STARNN_CONV2D_1X1=dnnl STARNN_CONV2D_NCHW_IN=dnnl
"$unet" train $L --precision amp-bf16 --log-json "$tmp/mb.json" > "$tmp/mb.out" 2>&1 ||
	{ fail "amp-bf16 run exited $?"; cat "$tmp/mb.out"; }
STARNN_LAYOUT=nchw "$unet" train $L --precision amp-bf16 --log-json "$tmp/mn.json" > "$tmp/mn.out" 2>&1 ||
	{ fail "amp-bf16 NCHW run exited $?"; cat "$tmp/mn.out"; }
unset STARNN_CONVT2D STARNN_CONV2D_1X1 STARNN_CONV2D_NCHW_IN
same_losses "amp-bf16, $(sed -n 's/^activations: \([^ ]*\).*/\1/p' "$tmp/mb.out") vs NCHW activations" "$tmp/mb.json" "$tmp/mn.json"
# NHWC has no channel-split tasks: with fewer batch parts than CPU workers
# (batch 1 here) amp-bf16 takes the fp32 blocked layout, cut by channel
# blocks, says why, and trains as on NCHW (the same routes: the bf16 rounding
# of the same sums).
if grep -q '^activations: NHWC' "$tmp/mb.out"; then
	export STARNN_CONVT2D=dnnl STARNN_CONV2D_1X1=dnnl STARNN_CONV2D_NCHW_IN=dnnl
	"$unet" train $L --precision amp-bf16 --batch 1 --micro-batches 1 --log-json "$tmp/m1.json" > "$tmp/m1.out" 2>&1 ||
		{ fail "amp-bf16 batch 1 exited $?"; cat "$tmp/m1.out"; }
	STARNN_LAYOUT=nchw "$unet" train $L --precision amp-bf16 --batch 1 --micro-batches 1 --log-json "$tmp/m1n.json" \
		> "$tmp/m1n.out" 2>&1 || { fail "amp-bf16 batch 1 NCHW exited $?"; cat "$tmp/m1n.out"; }
	unset STARNN_CONVT2D STARNN_CONV2D_1X1 STARNN_CONV2D_NCHW_IN
	grep -q '^activations: nChw[0-9]*c .*(NHWC, .*channel-split tasks' "$tmp/m1.out" &&
		ok "$(grep '^activations:' "$tmp/m1.out")" || fail "amp-bf16 batch 1: $(grep '^activations:' "$tmp/m1.out")"
	same_losses "amp-bf16 batch 1, blocked vs NCHW activations" "$tmp/m1.json" "$tmp/m1n.json"
fi
expect 1 "STARNN_LAYOUT" env STARNN_LAYOUT=sideways "$unet" train $L
# The fp32 weight gradient's three routes on the oneDNN backend
# (codelets/conv2d.h: STARNN_CONV2D_WGRAD; auto takes im2col + sgemm for
# wide layers at <= 8x8, and the direct kernel on AVX2 for the other 3x3
# layers, on AVX-512 for the first only): every 3x3 layer
# forced onto each, the same losses but for rounding; an unknown value is an
# error.
STARNN_CONV2D_WGRAD=gemm "$unet" train $L --log-json "$tmp/wg.json" > "$tmp/wg.out" 2>&1 ||
	{ fail "STARNN_CONV2D_WGRAD=gemm run exited $?"; cat "$tmp/wg.out"; }
STARNN_CONV2D_WGRAD=dnnl "$unet" train $L --log-json "$tmp/wd.json" > "$tmp/wd.out" 2>&1 ||
	{ fail "STARNN_CONV2D_WGRAD=dnnl run exited $?"; cat "$tmp/wd.out"; }
STARNN_CONV2D_WGRAD=direct "$unet" train $L --log-json "$tmp/wk.json" > "$tmp/wk.out" 2>&1 ||
	{ fail "STARNN_CONV2D_WGRAD=direct run exited $?"; cat "$tmp/wk.out"; }
same_losses "weight gradients on im2col + sgemm vs oneDNN" "$tmp/wg.json" "$tmp/wd.json"
same_losses "weight gradients on the direct kernel vs oneDNN" "$tmp/wk.json" "$tmp/wd.json"
if grep -q '^ *oneDNN.*: yes' "$B/config.summary" 2> /dev/null; then
	grep -q '^convolutions: fp32 on oneDNN, every weight gradient on im2col' "$tmp/wg.out" &&
		ok "$(grep '^convolutions:' "$tmp/wg.out")" || fail "STARNN_CONV2D_WGRAD=gemm: no start-up line saying so"
	grep -q '^convolutions:' "$tmp/wd.out" && fail "STARNN_CONV2D_WGRAD=dnnl: $(grep '^convolutions:' "$tmp/wd.out")"
	# the direct kernel needs AVX2 (every x86-64 CI machine has it)
	if grep -q ' avx2 ' /proc/cpuinfo 2> /dev/null; then
		grep -q '^convolutions: fp32 on oneDNN, the 3x3 weight gradients on starnn.s direct AVX2 kernel (STARNN_CONV2D_WGRAD=direct)' \
			"$tmp/wk.out" && ok "$(grep '^convolutions:' "$tmp/wk.out")" ||
			fail "STARNN_CONV2D_WGRAD=direct: no start-up line saying so: $(grep '^convolutions:' "$tmp/wk.out")"
	fi
fi
# bf16's gemm route (im2col + a bf16 matmul of oneDNN, where oneDNN has
# native bf16 kernels) forced against oneDNN's convolution in amp-bf16:
# the same losses but for a bf16 rounding that flips (measured on an AMX
# Xeon: bit for bit), and the start-up line.
export STARNN_CONVT2D=dnnl STARNN_CONV2D_1X1=dnnl STARNN_CONV2D_NCHW_IN=dnnl
STARNN_CONV2D_WGRAD=gemm "$unet" train $L --precision amp-bf16 --log-json "$tmp/bg.json" > "$tmp/bg.out" 2>&1 ||
	{ fail "amp-bf16 STARNN_CONV2D_WGRAD=gemm run exited $?"; cat "$tmp/bg.out"; }
STARNN_CONV2D_WGRAD=dnnl "$unet" train $L --precision amp-bf16 --log-json "$tmp/bd.json" > "$tmp/bd.out" 2>&1 ||
	{ fail "amp-bf16 STARNN_CONV2D_WGRAD=dnnl run exited $?"; cat "$tmp/bd.out"; }
unset STARNN_CONVT2D STARNN_CONV2D_1X1 STARNN_CONV2D_NCHW_IN
same_losses "amp-bf16 weight gradients on im2col + a bf16 matmul vs oneDNN" "$tmp/bg.json" "$tmp/bd.json" 1e-4
if grep -q '^convolutions: bf16 native' "$tmp/bd.out"; then
	grep -q '^convolutions: bf16 native.*every weight gradient on im2col + a bf16 matmul' "$tmp/bg.out" &&
		ok "amp-bf16, STARNN_CONV2D_WGRAD=gemm: said" || fail "amp-bf16 STARNN_CONV2D_WGRAD=gemm: $(grep '^convolutions:' "$tmp/bg.out")"
fi
expect 1 "STARNN_CONV2D_WGRAD" env STARNN_CONV2D_WGRAD=sideways "$unet" train $L
# The weight gradients taken once on the whole batch rather than per
# micro-batch (codelets/conv2d.h: STARNN_CONV2D_WGRAD_WHOLE; auto takes the
# layers whose weights are at least half their activations, here the
# centre's two): every layer and none against auto, the same losses but for
# the order of the sums; the start-up lines; an unknown value refused.
STARNN_CONV2D_WGRAD=dnnl STARNN_CONV2D_WGRAD_WHOLE=on "$unet" train $L --log-json "$tmp/won.json" > "$tmp/won.out" 2>&1 ||
	{ fail "STARNN_CONV2D_WGRAD_WHOLE=on run exited $?"; cat "$tmp/won.out"; }
STARNN_CONV2D_WGRAD=dnnl STARNN_CONV2D_WGRAD_WHOLE=off "$unet" train $L --log-json "$tmp/woff.json" > "$tmp/woff.out" 2>&1 ||
	{ fail "STARNN_CONV2D_WGRAD_WHOLE=off run exited $?"; cat "$tmp/woff.out"; }
same_losses "weight gradients on the whole batch vs per micro-batch, every layer" "$tmp/won.json" "$tmp/woff.json"
same_losses "weight gradients on the whole batch vs per micro-batch, the wide layers" "$tmp/wd.json" "$tmp/woff.json"
for w in "wd:2 of 13 convolutions on the whole batch (the wide ones)" \
	"won:11 of 13 convolutions on the whole batch (STARNN_CONV2D_WGRAD_WHOLE=on)" \
	"woff:0 of 13 convolutions on the whole batch (STARNN_CONV2D_WGRAD_WHOLE=off)"; do
	grep -qF "weight gradients: ${w#*:}, the others per micro-batch" "$tmp/${w%%:*}.out" &&
		ok "$(grep '^weight gradients:' "$tmp/${w%%:*}.out")" ||
		fail "${w%%:*}: no 'weight gradients: ${w#*:}' line: $(grep '^weight gradients:' "$tmp/${w%%:*}.out")"
done
expect 1 "STARNN_CONV2D_WGRAD_WHOLE" env STARNN_CONV2D_WGRAD_WHOLE=sideways "$unet" train $L
# The transposed convolutions on oneDNN against starnn's direct kernels
# (codelets/convt2d.h: STARNN_CONVT2D; auto takes the direct kernels where
# oneDNN runs its AVX2 kernels, as in the run above): the same losses but
# for rounding, the start-up line, an unknown value refused.
STARNN_CONV2D_WGRAD=direct STARNN_CONVT2D=dnnl "$unet" train $L --log-json "$tmp/td.json" > "$tmp/td.out" 2>&1 ||
	{ fail "STARNN_CONVT2D=dnnl run exited $?"; cat "$tmp/td.out"; }
same_losses "transposed convolutions on oneDNN vs the default" "$tmp/td.json" "$tmp/wk.json"
grep -q '^transposed convolutions:' "$tmp/td.out" && fail "STARNN_CONVT2D=dnnl: $(grep '^transposed' "$tmp/td.out")"
if grep -q '^ *oneDNN.*: yes' "$B/config.summary" 2> /dev/null && grep -q ' avx2 ' /proc/cpuinfo 2> /dev/null &&
	grep -q '^activations: nChw8c' "$tmp/wk.out"; then
	grep -q "^transposed convolutions: fp32 on starnn's direct AVX2 kernels, forward and backward" "$tmp/wk.out" &&
		ok "$(grep '^transposed convolutions:' "$tmp/wk.out")" ||
		fail "the default run on nChw8c: no 'transposed convolutions:' line: $(grep '^transposed' "$tmp/wk.out")"
fi
expect 1 "STARNN_CONVT2D" env STARNN_CONVT2D=sideways "$unet" train $L
# The output layer (1x1, nChw8c -> NCHW) on oneDNN against the sgemm
# kernels (codelets/conv2d.h: STARNN_CONV2D_1X1; auto takes them where
# oneDNN runs its AVX2 kernels): the same losses but for rounding, an
# unknown value refused.
STARNN_CONV2D_WGRAD=direct STARNN_CONV2D_1X1=dnnl "$unet" train $L --log-json "$tmp/od.json" > "$tmp/od.out" 2>&1 ||
	{ fail "STARNN_CONV2D_1X1=dnnl run exited $?"; cat "$tmp/od.out"; }
same_losses "the 1x1 output layer on oneDNN vs the default" "$tmp/od.json" "$tmp/wk.json"
expect 1 "STARNN_CONV2D_1X1" env STARNN_CONV2D_1X1=sideways "$unet" train $L
# The first layer's forward (13 frames in NCHW into blocked activations) on
# oneDNN against the direct kernel (codelets/conv2d.h: STARNN_CONV2D_NCHW_IN;
# auto takes it where oneDNN runs its AVX2 kernels): the same losses but
# for rounding, an unknown value refused. The bound is 1e-4 here: the
# first layer's rounding reaches every layer after it, and SGD amplifies
# it (measured on this EPYC: 3e-8 at step 1, 2.0e-5 at step 3; the direct
# kernel's run and one with every convolution on im2col + sgemm,
# STARNN_CONV2D_CPU=im2col, agree within 6e-8 over the 5 steps).
STARNN_CONV2D_WGRAD=direct STARNN_CONV2D_NCHW_IN=dnnl "$unet" train $L --log-json "$tmp/nd.json" > "$tmp/nd.out" 2>&1 ||
	{ fail "STARNN_CONV2D_NCHW_IN=dnnl run exited $?"; cat "$tmp/nd.out"; }
same_losses "the first layer's forward on oneDNN vs the default" "$tmp/nd.json" "$tmp/wk.json" 1e-4
expect 1 "STARNN_CONV2D_NCHW_IN" env STARNN_CONV2D_NCHW_IN=sideways "$unet" train $L
# fp32 3x3 convolutions on oneDNN's Winograd kernel (codelets/conv2d.h:
# STARNN_CONV2D_ALGO; auto takes it on AVX-512 for some passes of the 16x16
# layers here), every 3x3 pass asked to, against the direct kernels only:
# the same losses but for rounding (Zen 4: 4.6e-6 over the 5 steps), the
# 3x3 convolutions: line, an unknown value refused.
STARNN_CONV2D_ALGO=winograd "$unet" train $L --log-json "$tmp/ww.json" > "$tmp/ww.out" 2>&1 ||
	{ fail "STARNN_CONV2D_ALGO=winograd run exited $?"; cat "$tmp/ww.out"; }
STARNN_CONV2D_ALGO=direct "$unet" train $L --log-json "$tmp/wdi.json" > "$tmp/wdi.out" 2>&1 ||
	{ fail "STARNN_CONV2D_ALGO=direct run exited $?"; cat "$tmp/wdi.out"; }
same_losses "3x3 convolutions on Winograd vs direct" "$tmp/ww.json" "$tmp/wdi.json" 1e-4
if grep -q '^ *oneDNN.*: yes' "$B/config.summary" 2> /dev/null; then
	grep -q '^3x3 convolutions: 0 of [1-9][0-9]* fp32 passes.*(STARNN_CONV2D_ALGO=direct)' "$tmp/wdi.out" &&
		grep -q '^3x3 convolutions: \([1-9][0-9]*\) of \1 fp32 passes.*(STARNN_CONV2D_ALGO=winograd)' "$tmp/ww.out" &&
		ok "$(grep '^3x3' "$tmp/ww.out")" || fail "the 3x3 convolutions: lines: $(grep -h '^3x3' "$tmp/ww.out" "$tmp/wdi.out")"
fi
expect 1 "STARNN_CONV2D_ALGO" env STARNN_CONV2D_ALGO=sideways "$unet" train $L
# Packed weights kept current by the optimizer (codelets/conv2d.h:
# STARNN_CONV2D_PACK; codelets/copy.h): Adam and SGD write the fp32 copies
# in oneDNN's blocked layouts as they update the weights. The losses are bit
# for bit those of packing tasks (STARNN_CONV2D_PACK=tasks: the same values
# in the same layout), for both optimizers, amp-bf16 and amp-fp16 (where
# 16-bit passes are widened to fp32, the convert from the masters writes
# the widened copies); and DNNL_VERBOSE
# counts oneDNN's reorders between 2 and 4 steps: where its layouts are the
# AVX2 kernels' (nChw8c activations) none at all (the first layer's input
# is read by the direct kernel above), and no weight reorder (a blocked
# first dimension: "blocked:A..."); elsewhere no more weight reorders than
# with packing tasks.
for o in "--optimizer sgd" "--optimizer adam --lr 1e-3" "--optimizer adam --lr 1e-3 --precision amp-bf16" \
	"--optimizer sgd --precision amp-fp16"; do
	"$unet" train $L $o --log-json "$tmp/pk1.json" > "$tmp/pk1.out" 2>&1 || { fail "packing ($o) exited $?"; cat "$tmp/pk1.out"; }
	STARNN_CONV2D_PACK=tasks "$unet" train $L $o --log-json "$tmp/pk2.json" > "$tmp/pk2.out" 2>&1 ||
		{ fail "STARNN_CONV2D_PACK=tasks ($o) exited $?"; cat "$tmp/pk2.out"; }
	identical_losses "packed weights written by the optimizer vs packing tasks ($o)" 5 "$tmp/pk1.json" "$tmp/pk2.json"
done
L1="--size 64 --depth 3 --filters 16 --batch 1 --micro-batches 1 --samples 16 --steps 5 --eval-every 0 --optimizer sgd --lr 0.01"
"$unet" train $L1 --log-json "$tmp/pb1.json" > "$tmp/pb1.out" 2>&1 || { fail "batch-1 packing exited $?"; cat "$tmp/pb1.out"; }
STARNN_CONV2D_PACK=tasks "$unet" train $L1 --log-json "$tmp/pb2.json" > "$tmp/pb2.out" 2>&1 ||
	{ fail "batch-1 STARNN_CONV2D_PACK=tasks exited $?"; cat "$tmp/pb2.out"; }
identical_losses "batch 1, sliced copies written by the optimizer vs packing tasks" 5 "$tmp/pb1.json" "$tmp/pb2.json"
# reorders of steps 3 and 4 (a run of 4 steps less one of 2): weights
# (REORDERS=weights), or all of them
weight_reorders() {
	local n2 n4 re='exec,cpu,reorder,'
	[ "${REORDERS:-weights}" = weights ] && re='exec,cpu,reorder,.*dst_f32:[^ ]*:blocked:A'
	n2=$(env "$@" DNNL_VERBOSE=1 "$unet" train ${ARGS:-$L} --steps 2 2>&1 | grep -c "$re")
	n4=$(env "$@" DNNL_VERBOSE=1 "$unet" train ${ARGS:-$L} --steps 4 2>&1 | grep -c "$re")
	echo $((n4 - n2))
}
expect 1 "STARNN_CONV2D_PACK" env STARNN_CONV2D_PACK=sideways "$unet" train $L
if grep -q '^ *oneDNN.*: yes' "$B/config.summary" 2> /dev/null; then
	r_on=$(weight_reorders STARNN_CONV2D_PACK=on)
	r_tasks=$(weight_reorders STARNN_CONV2D_PACK=tasks)
	if grep -q '^activations: nChw8c' "$tmp/lb.out"; then
		[ "$r_on" = 0 ] && [ "$r_tasks" -gt 0 ] &&
			ok "no weight reorder in steps 3-4 (packing tasks: $r_tasks)" ||
			fail "weight reorders in steps 3-4: $r_on (packing tasks: $r_tasks), expected none"
		r_all=$(REORDERS=all weight_reorders STARNN_CONV2D_PACK=on)
		r_dnnl=$(REORDERS=all weight_reorders STARNN_CONV2D_NCHW_IN=dnnl)
		[ "$r_all" = 0 ] && [ "$r_dnnl" -gt 0 ] &&
			ok "no reorder at all in steps 3-4 (the first layer on oneDNN: $r_dnnl)" ||
			fail "reorders in steps 3-4: $r_all (the first layer on oneDNN: $r_dnnl), expected none"
		# batch 1: the forwards split over output channels, each task
		# reading its slice of one whole blocked copy of w (conv2d_fwd_sliced)
		r_b1=$(ARGS="$L1" REORDERS=all weight_reorders STARNN_CONV2D_PACK=on)
		r_b1t=$(ARGS="$L1" REORDERS=all weight_reorders STARNN_CONV2D_PACK=tasks)
		[ "$r_b1" = 0 ] && [ "$r_b1t" -gt 0 ] &&
			ok "batch 1 (channel-split forwards): no reorder in steps 3-4 (packing tasks: $r_b1t)" ||
			fail "batch 1: reorders in steps 3-4: $r_b1 (packing tasks: $r_b1t), expected none"
		# amp-bf16 (widened to fp32 on these processors: no native bf16)
		r_amp=$(ARGS="$L --precision amp-bf16" REORDERS=all weight_reorders STARNN_CONV2D_PACK=on)
		r_ampo=$(ARGS="$L --precision amp-bf16" REORDERS=all weight_reorders STARNN_CONV2D_PACK=off)
		[ "$r_amp" = 0 ] && [ "$r_ampo" -gt 0 ] &&
			ok "amp-bf16 (widened): no reorder in steps 3-4 (packing off: $r_ampo)" ||
			fail "amp-bf16: reorders in steps 3-4: $r_amp (packing off: $r_ampo), expected none"
		# ... and at batch 1 (the channel-split forwards' whole copy of the
		# widened weights, kept current by the convert from the masters)
		r_amp1=$(ARGS="$L1 --precision amp-bf16" REORDERS=all weight_reorders STARNN_CONV2D_PACK=on)
		[ "$r_amp1" = 0 ] && ok "amp-bf16 (widened), batch 1: no reorder in steps 3-4" ||
			fail "amp-bf16, batch 1: reorders in steps 3-4: $r_amp1, expected none"
	else
		[ "$r_on" -le "$r_tasks" ] && ok "weight reorders in steps 3-4: $r_on (packing tasks: $r_tasks)" ||
			fail "weight reorders in steps 3-4: $r_on, more than packing tasks' $r_tasks"
	fi
	# AVX-512 (nChw16c): no reorder at all either (the weight gradients
	# in oneDNN's layouts, read by the optimizer; the transposed
	# convolutions' weights from whole copies; the output layer on sgemm),
	# at batch 4 and 1, in fp32, in amp-fp16 (widened to fp32: the
	# transposed convolutions' copies of the widened weights) and, where
	# bf16 is native in nChw16c (AVX512-BF16 without AMX), in amp-bf16;
	# packing off has some
	if grep -q '^activations: nChw16c' "$tmp/lb.out"; then
		precs="fp32"
		"$unet" train $L --precision amp-fp16 --steps 1 > "$tmp/nh.out" 2>&1
		grep -q '^activations: nChw16c' "$tmp/nh.out" && precs="$precs amp-fp16"
		"$unet" train $L --precision amp-bf16 --steps 1 > "$tmp/nb.out" 2>&1
		grep -q '^activations: nChw16c' "$tmp/nb.out" && grep -q '^convolutions: bf16 native' "$tmp/nb.out" &&
			precs="$precs amp-bf16"
		for p in $precs; do
			for a in "$L" "$L1"; do
				r=$(ARGS="$a --precision $p" REORDERS=all weight_reorders STARNN_CONV2D_PACK=on)
				ro=$(ARGS="$a --precision $p" REORDERS=all weight_reorders STARNN_CONV2D_PACK=off)
				bs=$(echo "$a" | sed 's/.*--batch \([0-9]*\).*/\1/')
				[ "$r" = 0 ] && [ "$ro" -gt 0 ] &&
					ok "$p, batch $bs: no reorder in steps 3-4 (packing off: $ro)" ||
					fail "$p, ${a}: reorders in steps 3-4: $r (packing off: $ro), expected none"
			done
		done
	fi
fi

exit $status
