#!/usr/bin/env python3
"""PyTorch (float64) reference for tests/models/unet_model.c.

The test, run with UNET_DUMP=DIR, writes the parameters of its tiny UNets
(depth 1: f 2, 8x8; depth 2: f 2, 16x16; 3 -> 2 frames; batch 2), in each
convention (keras, starnn-v1), their gradients from starnn, x, y and the
prediction as raw fp32 files DIR/<convention>.d<depth>.<path>.bin. This
script builds the same networks with torch.nn.functional in float64
(tools/ref/unet_ref.py: training-mode batch norm; keras: concatenation
[skip, up], eps 1e-3; starnn-v1: [up, skip], eps 1e-5), and
  - prints the largest gradient differences (checking starnn directly), and
  - with --write FILE, writes the reference the test compares against:
    per convention and depth the loss, then for every parameter tensor a
    few elements (index and float64 gradient) chosen as the test chooses
    them.

Usage: UNET_DUMP=/tmp/ud tests/models/unet_model; \
       PYTHON tests/models/unet_reference.py /tmp/ud [--write tests/models/unet_model.ref]
Needs torch (PyPI's, or Debian's python3-torch); the C test does not.
"""
import os
import sys

from array import array
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "ref"))
from unet_ref import CONVENTIONS, forward, param_shapes  # noqa: E402  (tools/ref/unet_ref.py: the network)

CONFIGS = {1: dict(f=2, size=8), 2: dict(f=2, size=16)}
IN, OUT, B = 3, 2, 2
SAMPLES = 8  # elements per tensor in the reference file


def raw(d, conv, depth, name):
    a = array("f")
    with open(os.path.join(d, "%s.d%d.%s.bin" % (conv, depth, name.replace("/", "."))), "rb") as fh:
        a.frombytes(fh.read())
    return torch.tensor(a.tolist(), dtype=torch.float64)


def load(d, conv, depth, name, shape):
    return raw(d, conv, depth, name).reshape(shape).clone().requires_grad_(True)


def main():
    d = sys.argv[1]
    write = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--write" else None
    lines = []
    for conv in CONVENTIONS:
        for depth, c in CONFIGS.items():
            f, size = c["f"], c["size"]
            shapes = [(path, shape) for path, shape, _ in param_shapes(depth, f, IN, OUT)]
            p = {path: load(d, conv, depth, path, shape) for path, shape in shapes}
            x = load(d, conv, depth, "x", (B, IN, size, size))
            y = load(d, conv, depth, "y", (B, OUT, size, size))
            pred = forward(p, x, depth, convention=conv)
            loss = F.mse_loss(pred, y)
            loss.backward()
            pred_c = raw(d, conv, depth, "pred")
            print("%s depth %d: loss %.9f, prediction max |diff| %.3g" %
                  (conv, depth, loss.item(), (pred.detach().reshape(-1) - pred_c).abs().max().item()))
            lines.append("%s depth %d loss %.17g" % (conv, depth, loss.item()))
            for i, (path, shape) in enumerate(shapes):
                g = p[path].grad.reshape(-1)
                gc = raw(d, conv, depth, path + ".grad")
                err = (g - gc).abs().max().item()
                gmax = g.abs().max().item()
                print("  %-22s max |grad| %.3e, max |diff| %.3e (%.2e relative)" %
                      (path, gmax, err, err / max(gmax, 1e-30)))
                n = g.numel()
                for s in range(SAMPLES):
                    k = (s * 7919 + i * 104729) % n
                    lines.append("%s %d %s %d %.17g" % (conv, depth, path, k, g[k].item()))
    if write:
        with open(write, "w") as fh:
            fh.write("# tests/models/unet_reference.py (PyTorch %s, float64): convention depth path index gradient\n"
                     % torch.__version__)
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
