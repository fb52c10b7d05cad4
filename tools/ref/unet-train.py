#!/usr/bin/env python3
"""PyTorch reference of `models/unet train` with SGD, for tests/models/unet_parity.sh.

Builds the UNet of models/unet_model.h in torch (torch.nn.functional, from
tools/ref/unet_ref.py):
  conv_block(c): [conv 3x3 'same' (bias) -> BatchNorm -> ReLU] x 2
  encoder i = 0..depth-1: conv_block(f*2^i) = skip_i, max-pool 2x2/2
  centre: conv_block(32*f)
  decoder i = depth-1..0: ConvTranspose2d 2x2/2 to f*2^i channels (bias),
    cat([skip_i, up], channels) -> BatchNorm -> ReLU -> conv_block(f*2^i)
  output: conv 1x1 to out_frames channels (bias), linear
  loss: MSE, the mean over all output elements (normalised values)
Batch norm in training mode (statistics over the whole batch, biased
variance, eps 1e-3, running statistics updated with momentum 0.1). That is
the checkpoint's convention keras (the default); a checkpoint of
convention starnn-v1 (or without the attribute) concatenates [up, skip]
with eps 1e-5.

The weights come from a starnn checkpoint (models/unet train --steps 0
--checkpoint FILE): one dataset per tensor, named by its path (enc0/conv1/
weight ...), conv weights OIHW, transposed conv IOHW, biases and batch-norm
tensors 1-D; the architecture from the root attributes (depth, filters,
in_frames, out_frames, size, convention). The data are a prepared nowcast file
(tools/sevir-synth prepared): IN (N, H, W, 13) and OUT (N, H, W, 12) float32
raw VIL values, transposed to NCHW and normalised as starnn's loader does, in
float32: (v - 33.44) / 47.54. Samples are taken in file order as
`--shuffle off` does: batch g of the run holds samples
  (g mod (N // batch)) * batch + [0, batch)
(the last incomplete batch of an epoch is dropped; epochs wrap).

Training: torch.optim.SGD (lr, momentum, dampening 0, no weight decay, no
Nesterov), the same semantics as starnn's sgd codelet (the momentum buffer
is the gradient at step 1). Each step's loss is that of the forward before
the update, as models/unet logs it.

By default the network runs in float64 (the weights and normalised inputs
as float32 values, widened), so that the reference is the exact trajectory;
--dtype float32 runs torch in float32 to show how far a float32
implementation drifts from it.

Usage:
  python3 tools/ref/unet-train.py --init INIT.h5 --data PREP.h5 \\
      --steps 20 --batch 4 --lr 0.05 --momentum 0.9 \\
      [--dtype float64|float32] [--write tests/data/unet/sgd20.txt] \\
      [--compare LOG.json]
--compare reads a --log-json of models/unet and prints the relative error of
each step's loss. --write writes the reference file that the test reads:
comment lines (#), then
  init  <count> <sum> <sum of squares>     of every float dataset of INIT.h5
  data  <count> <sum> <sum of squares>     of IN and OUT of PREP.h5
  <step> <loss>                            one line per step (%.17g)
(the sums, in float64 over the float32 values, let the test tell a change of
the generated init weights or data from a change of the numerics; the test
computes them with tests/models/h5sum).
Needs torch and h5py (PyPI's, or Debian's python3-torch and python3-h5py); the test does not.
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from unet_ref import forward, load_checkpoint  # noqa: E402  (tools/ref/unet_ref.py)

NORM_MEAN = np.float32(33.44)
NORM_SCALE = np.float32(47.54)


def load_data(path, in_frames, out_frames):
    """IN, OUT of a prepared file as normalised float32 NCHW arrays."""
    with h5py.File(path, "r") as f:
        xin = np.asarray(f["IN"][()], dtype=np.float32)
        xout = np.asarray(f["OUT"][()], dtype=np.float32)
    if xin.shape[3] != in_frames or xout.shape[3] != out_frames:
        sys.exit("%s: IN %s / OUT %s do not have %d / %d frames" % (path, xin.shape, xout.shape, in_frames,
                                                                    out_frames))
    # float32 arithmetic, as starnn's loader: (v - 33.44f) / 47.54f
    x = ((xin - NORM_MEAN) / NORM_SCALE).astype(np.float32).transpose(0, 3, 1, 2).copy()
    y = ((xout - NORM_MEAN) / NORM_SCALE).astype(np.float32).transpose(0, 3, 1, 2).copy()
    return x, y, xin, xout


def sums(arrays):
    n, s, q = 0, 0.0, 0.0
    for a in arrays:
        a = np.asarray(a, dtype=np.float64).reshape(-1)
        n += a.size
        s += float(a.sum())
        q += float((a * a).sum())
    return n, s, q


def file_sums(path):
    arrays = []
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype == np.float32:
                arrays.append(obj[()])
        f.visititems(visit)
    return sums(arrays)


def read_log(path):
    out = {}
    with open(path) as fh:
        for line in fh:
            o = json.loads(line)
            if "loss" in o and "step" in o:
                out[int(o["step"])] = float(o["loss"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--write")
    ap.add_argument("--compare")
    ap.add_argument("--command", default="", help="the models/unet command line, recorded in --write's header")
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dtype = torch.float64 if a.dtype == "float64" else torch.float32
    p, buffers, arch = load_checkpoint(a.init, dtype, requires_grad=True)
    x, y, _, _ = load_data(a.data, arch["in_frames"], arch["out_frames"])
    n = x.shape[0]
    if x.shape[2] != arch["size"] or x.shape[3] != arch["size"]:
        sys.exit("%s: images of %dx%d, the checkpoint's size is %d" % (a.data, x.shape[2], x.shape[3], arch["size"]))
    bpe = n // a.batch
    if bpe < 1:
        sys.exit("%s: %d samples, fewer than the batch %d" % (a.data, n, a.batch))

    params = list(p.values())  # model order (param_shapes)
    opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum, dampening=0, weight_decay=0, nesterov=False)
    losses = []
    for g in range(a.steps):
        first = (g % bpe) * a.batch
        xb = torch.tensor(x[first:first + a.batch], dtype=dtype)
        yb = torch.tensor(y[first:first + a.batch], dtype=dtype)
        opt.zero_grad()
        loss = F.mse_loss(forward(p, xb, arch["depth"], buffers, arch["convention"]), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())

    cmp = read_log(a.compare) if a.compare else {}
    worst = 0.0
    for i, l in enumerate(losses):
        s = cmp.get(i + 1)
        if s is None:
            print("step %2d  loss %.12g" % (i + 1, l))
        else:
            r = abs(s - l) / abs(l)
            worst = max(worst, r)
            print("step %2d  loss %.12g  starnn %.9g  relative error %.2e" % (i + 1, l, s, r))
    if cmp:
        print("max relative error over %d steps: %.3e" % (len(losses), worst))

    if a.write:
        ni, si, qi = file_sums(a.init)
        with h5py.File(a.data, "r") as f:
            nd, sd, qd = sums([f["IN"][()], f["OUT"][()]])
        with open(a.write, "w") as fh:
            fh.write("# tools/ref/unet-train.py: PyTorch %s, %s, SGD lr %g momentum %g, batch %d, %d steps\n" %
                     (torch.__version__, a.dtype, a.lr, a.momentum, a.batch, a.steps))
            fh.write("# architecture: depth %d, filters %d, %d -> %d frames, %dx%d, convention %s; %d samples in "
                     "file order\n" % (arch["depth"], arch["filters"], arch["in_frames"], arch["out_frames"],
                                       arch["size"], arch["size"], arch["convention"], n))
            if a.command:
                fh.write("# starnn: %s\n" % a.command)
            fh.write("init %d %.17g %.17g\n" % (ni, si, qi))
            fh.write("data %d %.17g %.17g\n" % (nd, sd, qd))
            for i, l in enumerate(losses):
                fh.write("%d %.17g\n" % (i + 1, l))
        print("wrote %s" % a.write)


if __name__ == "__main__":
    main()
