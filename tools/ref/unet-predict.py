#!/usr/bin/env python3
"""A starnn checkpoint in the PyTorch reference model: its forecast against
starnn's own (`models/unet predict --output`) on the same inputs.

Loads the checkpoint into tools/ref/unet_ref.py's UNet layer by layer, as
the README's "File formats" says (every parameter and batch-norm statistic
by its dataset path, in PyTorch's layouts; the convention from the
`convention` attribute, starnn-v1 when absent), runs it in evaluation mode
(batch norms on their running statistics) in float64 on the prepared
file's `IN` (normalised as starnn does, in float32: (v - 33.44) / 47.54),
turns the output into raw VIL clipped to [0, 254] as starnn writes its
forecasts, and compares it with the forecast file's `OUT`, sample by
sample. starnn computes in float32: the two agree to about 1e-5 of the
range; a wrong layout, convention or statistic is off by whole units.

Usage:
  models/unet predict --checkpoint M.h5 --data PREP.h5 --output F.h5
  PYTHON tools/ref/unet-predict.py --checkpoint M.h5 --data PREP.h5 --forecast F.h5 [--tolerance T]
PREP.h5: a prepared file at the checkpoint's size (predict forecasts the
whole file, in order). Exit status 0 when every value is within T raw VIL
units (default 0.01), 1 otherwise. Needs torch, h5py and numpy (PyPI's or
Debian's); starnn's tests run it when they are there
(tests/models/unet_convention.sh) and skip it otherwise."""
import argparse
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from unet_ref import forward, load_checkpoint  # noqa: E402  (tools/ref/unet_ref.py)

NORM_MEAN = np.float32(33.44)
NORM_SCALE = np.float32(47.54)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--forecast", required=True)
    ap.add_argument("--tolerance", type=float, default=0.01)
    a = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    p, buffers, arch = load_checkpoint(a.checkpoint, torch.float64)
    with h5py.File(a.data, "r") as f:
        xin = np.asarray(f["IN"][()], dtype=np.float32)
    with h5py.File(a.forecast, "r") as f:
        got = np.asarray(f["OUT"][()], dtype=np.float32)
    if xin.shape[1] != arch["size"] or xin.shape[3] != arch["in_frames"]:
        sys.exit("%s: IN is %s, the checkpoint wants %dx%d images of %d frames" %
                 (a.data, xin.shape, arch["size"], arch["size"], arch["in_frames"]))
    x = ((xin - NORM_MEAN) / NORM_SCALE).astype(np.float32).transpose(0, 3, 1, 2)
    with torch.no_grad():
        y = forward(p, torch.tensor(x, dtype=torch.float64), arch["depth"], buffers, arch["convention"],
                    training=False)
    want = np.clip(y.numpy().transpose(0, 2, 3, 1) * 47.54 + 33.44, 0, 254)
    if want.shape != got.shape:
        sys.exit("%s: OUT is %s, the reference forecast %s" % (a.forecast, got.shape, want.shape))
    diff = np.abs(want - got)
    worst = float(diff.max())
    i = np.unravel_index(int(diff.argmax()), diff.shape)
    print("%s (%s, depth %d, filters %d): %d samples of %dx%dx%d, raw VIL %.2f .. %.2f; "
          "largest difference to PyTorch %.3g (sample %d, pixel (%d, %d), lead %d), mean %.3g" %
          (a.checkpoint, arch["convention"], arch["depth"], arch["filters"], got.shape[0], got.shape[1],
           got.shape[2], got.shape[3], float(got.min()), float(got.max()), worst, i[0], i[1], i[2], i[3] + 1,
           float(diff.mean())))
    if not worst <= a.tolerance:
        print("FAIL: beyond %g raw VIL units" % a.tolerance)
        sys.exit(1)
    print("ok: within %g raw VIL units" % a.tolerance)


if __name__ == "__main__":
    main()
