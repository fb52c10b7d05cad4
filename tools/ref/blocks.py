#!/usr/bin/env python3
"""Reference numerics of one UNet encoder block and one decoder block,
forward and backward, from PyTorch, for tests/models/blocks.c.

  encoder:  x [N,C,H,W] -> conv3x3(C->F, bias) -> BatchNorm2d -> ReLU
            -> conv3x3(F->F, bias) -> BatchNorm2d -> ReLU = skip
            -> MaxPool2d(2) = pool
  decoder:  coarse [N,2F,h,w] -> ConvTranspose2d(2F->F, k2, s2, bias) = up
            cat([skip, up], dim=1) -> BatchNorm2d(2F) -> ReLU
            -> conv3x3(2F->F, bias) -> BatchNorm2d -> ReLU
            -> conv3x3(F->F, bias) -> BatchNorm2d -> ReLU = out

In the UNet's default convention, the study's Keras model's (the
concatenation [skip, up], BatchNorm eps 1e-3); --convention starnn-v1 gives
starnn's first models' ([up, skip], eps 1e-5). The files record it: the
one-element tensors bn.eps and cat.skip_first (1: [skip, up], 0: [up,
skip]), which tests/models/blocks.c follows.
Training mode (batch statistics, momentum 0.1, eps as above), float32, CPU,
deterministic algorithms. Weights: PyTorch's default initialisation; BN
gamma / beta and the running statistics are drawn too (so that none is the
trivial 1 / 0). One step: loss = sum(skip * g_skip) + sum(pool * g_pool) for
the encoder, sum(out * g_out) for the decoder; backward; the running
statistics after the step are recorded.

Output: tests/data/blocks/encoder.bin and decoder.bin, each a text header
then raw little-endian float32 data:
  starnn-ref 1
  # free text (torch version, sizes)
  <name> <ndim> <d0> ... <d(ndim-1)>      one line per tensor, in data order
  end
  <the tensors' elements, dense row-major (NCHW), one after the other>

Names: inputs and parameters as they are called below; "d<name>" is the
gradient of the loss with respect to <name>; "<bn>.rm1" / "<bn>.rv1" are the
running statistics after the step (".rm0" / ".rv0" before). Intermediate
forward activations (the input of each BN) are included to localise a
disagreement. Run with a Python that has torch (PyPI's, or Debian's
python3-torch):
  python3 tools/ref/blocks.py [--fp64] [--convention keras|starnn-v1] [outdir]
With --fp64 the same weights and inputs (drawn in float32) go through the
blocks in float64 and the results are rounded to float32 once: running the
test against such files (tests/models/blocks DIR) measures how far both
starnn and torch's float32 results are from the exact values.
"""
import os
import struct
import sys

import torch

# Small but not trivial: odd channel counts, non-square and (encoder) odd
# images (the pooling drops the last row).
N = 3
ENC = dict(C=5, F=7, H=11, W=14)
DEC = dict(F=7, h=6, w=5)  # coarse [N, 2F, h, w], skip [N, F, 2h, 2w]
DTYPE = torch.float32  # --fp64: the same draws, computed in float64
CONVENTIONS = {"keras": (1e-3, True), "starnn-v1": (1e-5, False)}  # (eps, skip first)
BN_EPS, SKIP_FIRST = CONVENTIONS["keras"]


def writer(path, comment):
    tensors = []

    def add(name, t):
        t = t.detach().to(torch.float32).clone()  # a snapshot: running stats change in place
        tensors.append((name, t))

    def close():
        with open(path, "wb") as f:
            head = ["starnn-ref 1", "# " + comment]
            for name, t in tensors:
                head.append("%s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
            head.append("end")
            f.write(("\n".join(head) + "\n").encode("ascii"))
            for _, t in tensors:
                vals = t.reshape(-1).tolist()
                f.write(struct.pack("<%df" % len(vals), *vals))

    return add, close


def bn_layer(channels):
    bn = torch.nn.BatchNorm2d(channels, momentum=0.1, eps=BN_EPS)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.3, 0.3)
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    bn.train()
    return bn


def add_bn_before(add, name, bn):
    add(name + ".gamma", bn.weight)
    add(name + ".beta", bn.bias)
    add(name + ".rm0", bn.running_mean)
    add(name + ".rv0", bn.running_var)


def add_bn_after(add, name, bn):
    add("d" + name + ".gamma", bn.weight.grad)
    add("d" + name + ".beta", bn.bias.grad)
    add(name + ".rm1", bn.running_mean)
    add(name + ".rv1", bn.running_var)


def encoder(outdir, comment):
    C, F, H, W = ENC["C"], ENC["F"], ENC["H"], ENC["W"]
    conv1 = torch.nn.Conv2d(C, F, 3, padding=1, bias=True)
    bn1 = bn_layer(F)
    conv2 = torch.nn.Conv2d(F, F, 3, padding=1, bias=True)
    bn2 = bn_layer(F)
    pool = torch.nn.MaxPool2d(2)
    x = torch.randn(N, C, H, W)
    g_skip = torch.randn(N, F, H, W)
    g_pool = torch.randn(N, F, H // 2, W // 2)
    for m in (conv1, bn1, conv2, bn2):
        m.to(DTYPE)
    x, g_skip, g_pool = (t.to(DTYPE) for t in (x, g_skip, g_pool))
    x.requires_grad_(True)

    add, close = writer(os.path.join(outdir, "encoder.bin"),
                        "%s; encoder N=%d C=%d F=%d H=%d W=%d" % (comment, N, C, F, H, W))
    add("bn.eps", torch.tensor([BN_EPS]))
    add("x", x)
    add("conv1.w", conv1.weight)
    add("conv1.b", conv1.bias)
    add_bn_before(add, "bn1", bn1)
    add("conv2.w", conv2.weight)
    add("conv2.b", conv2.bias)
    add_bn_before(add, "bn2", bn2)
    add("g_skip", g_skip)
    add("g_pool", g_pool)

    h1 = conv1(x)
    a1 = torch.relu(bn1(h1))
    h2 = conv2(a1)
    skip = torch.relu(bn2(h2))
    pooled = pool(skip)
    loss = (skip * g_skip).sum() + (pooled * g_pool).sum()
    loss.backward()

    add("h1", h1)
    add("h2", h2)
    add("skip", skip)
    add("pool", pooled)
    add("dx", x.grad)
    add("dconv1.w", conv1.weight.grad)
    add("dconv1.b", conv1.bias.grad)
    add_bn_after(add, "bn1", bn1)
    add("dconv2.w", conv2.weight.grad)
    add("dconv2.b", conv2.bias.grad)
    add_bn_after(add, "bn2", bn2)
    close()


def decoder(outdir, comment):
    F, h, w = DEC["F"], DEC["h"], DEC["w"]
    upconv = torch.nn.ConvTranspose2d(2 * F, F, 2, stride=2, bias=True)
    bn0 = bn_layer(2 * F)
    conv1 = torch.nn.Conv2d(2 * F, F, 3, padding=1, bias=True)
    bn1 = bn_layer(F)
    conv2 = torch.nn.Conv2d(F, F, 3, padding=1, bias=True)
    bn2 = bn_layer(F)
    coarse = torch.randn(N, 2 * F, h, w)
    skip = torch.randn(N, F, 2 * h, 2 * w).relu_()  # a ReLU output, as in the UNet
    g_out = torch.randn(N, F, 2 * h, 2 * w)
    for m in (upconv, bn0, conv1, bn1, conv2, bn2):
        m.to(DTYPE)
    coarse, skip, g_out = (t.to(DTYPE) for t in (coarse, skip, g_out))
    coarse.requires_grad_(True)
    skip.requires_grad_(True)

    add, close = writer(os.path.join(outdir, "decoder.bin"),
                        "%s; decoder N=%d F=%d coarse %dx%d" % (comment, N, F, h, w))
    add("bn.eps", torch.tensor([BN_EPS]))
    add("cat.skip_first", torch.tensor([1.0 if SKIP_FIRST else 0.0]))
    add("coarse", coarse)
    add("skip", skip)
    add("up.w", upconv.weight)
    add("up.b", upconv.bias)
    add_bn_before(add, "bn0", bn0)
    add("conv1.w", conv1.weight)
    add("conv1.b", conv1.bias)
    add_bn_before(add, "bn1", bn1)
    add("conv2.w", conv2.weight)
    add("conv2.b", conv2.bias)
    add_bn_before(add, "bn2", bn2)
    add("g_out", g_out)

    up = upconv(coarse)
    cat = torch.cat([skip, up] if SKIP_FIRST else [up, skip], dim=1)
    a0 = torch.relu(bn0(cat))
    h1 = conv1(a0)
    a1 = torch.relu(bn1(h1))
    h2 = conv2(a1)
    out = torch.relu(bn2(h2))
    loss = (out * g_out).sum()
    loss.backward()

    add("cat", cat)
    add("h1", h1)
    add("h2", h2)
    add("out", out)
    add("dcoarse", coarse.grad)
    add("dskip", skip.grad)
    add("dup.w", upconv.weight.grad)
    add("dup.b", upconv.bias.grad)
    add_bn_after(add, "bn0", bn0)
    add("dconv1.w", conv1.weight.grad)
    add("dconv1.b", conv1.bias.grad)
    add_bn_after(add, "bn1", bn1)
    add("dconv2.w", conv2.weight.grad)
    add("dconv2.b", conv2.bias.grad)
    add_bn_after(add, "bn2", bn2)
    close()


def main():
    global DTYPE, BN_EPS, SKIP_FIRST
    args = sys.argv[1:]
    convention = "keras"
    while args and args[0].startswith("--"):
        if args[0] == "--fp64":
            DTYPE = torch.float64
            args = args[1:]
        elif args[0] == "--convention" and len(args) > 1 and args[1] in CONVENTIONS:
            convention = args[1]
            args = args[2:]
        else:
            sys.exit("usage: blocks.py [--fp64] [--convention keras|starnn-v1] [outdir]")
    BN_EPS, SKIP_FIRST = CONVENTIONS[convention]
    outdir = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "blocks")
    os.makedirs(outdir, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    comment = "tools/ref/blocks.py, torch %s, %s CPU, seed 0, convention %s" % (
        torch.__version__, "float64 (stored as float32)" if DTYPE == torch.float64 else "float32", convention)
    torch.manual_seed(0)
    encoder(outdir, comment)
    torch.manual_seed(1)
    decoder(outdir, comment)


if __name__ == "__main__":
    main()
