#!/usr/bin/env python3
"""PyTorch side of tools/bench/unet: trains the UNet of models/unet_model.h
(the same architecture, parameter count and loss as `models/unet train`) on
the CPU with Adam (lr 1e-3, PyTorch defaults) and prints its throughput.

  conv_block(c): [Conv2d 3x3 pad 1 -> BatchNorm2d -> ReLU] x 2
  encoder i: conv_block(f*2^i), MaxPool2d(2); centre: conv_block(32*f)
  decoder i: ConvTranspose2d(k 2, s 2) to f*2^i, cat([skip, up]),
             BatchNorm2d -> ReLU, conv_block(f*2^i); out: Conv2d 1x1, linear
  loss: MSELoss (mean)

Data: one batch of normalised random values (N(0,1) inputs and targets),
made once and kept in memory: data loading is not timed. Steps: `--warmup`
untimed steps, then `--steps` timed ones (each ends with loss.item(), as
starnn reads each step's loss).

--precision fp32 (default), or amp-bf16 / amp-fp16: forward and loss under
torch.autocast("cpu", dtype) (fp32 master weights, as models/unet's AMP);
fp16 autocast on the CPU needs a recent torch.

--device cuda: the same on the GPU (tools/dev/device-check's benchmark):
model and batch on the GPU, cuDNN's autotuner on
(torch.backends.cudnn.benchmark), torch.autocast("cuda", dtype) for the
amp precisions, with a GradScaler for amp-fp16 (as models/unet scales
the loss); --threads is then the CPU threads torch may use, and the warm-up
steps also run the autotuner.

--channels-last: the model and the batch in torch.channels_last (NHWC), the
layout oneDNN's CPU convolutions take without reorders: PyTorch's best CPU
setting (with bf16 autocast for amp-bf16) on processors where it pays.

Output, one line: torch=<version> threads=<n> params=<count> size=<S>
filters=<f> batch=<b> layout=<nchw|channels_last> device=<cpu|cuda:NAME>
steps=<n> seconds=<t> samples_per_s=<x>

Usage: python3 tools/bench/unet-torch.py --size 128 --filters 16 --batch 4
       [--depth 4] [--steps 10] [--warmup 3] [--threads 2] [--precision fp32]
       [--channels-last] [--device cpu|cuda]
"""
import argparse
import time

import torch
import torch.nn as nn

BN_EPS = 1e-3  # models/unet's default convention (keras): [skip, up], BatchNorm eps 1e-3


def conv_block(cin, c):
    return nn.Sequential(nn.Conv2d(cin, c, 3, padding=1), nn.BatchNorm2d(c, eps=BN_EPS), nn.ReLU(inplace=True),
                         nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c, eps=BN_EPS), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, depth, f, in_frames, out_frames):
        super().__init__()
        self.enc = nn.ModuleList()
        cin = in_frames
        for i in range(depth):
            self.enc.append(conv_block(cin, f << i))
            cin = f << i
        self.pool = nn.MaxPool2d(2)
        self.centre = conv_block(cin, 32 * f)
        self.up, self.bn0, self.dec = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        below = 32 * f
        for i in reversed(range(depth)):
            c = f << i
            self.up.append(nn.ConvTranspose2d(below, c, 2, stride=2))
            self.bn0.append(nn.Sequential(nn.BatchNorm2d(2 * c, eps=BN_EPS), nn.ReLU(inplace=True)))
            self.dec.append(conv_block(2 * c, c))
            below = c
        self.out = nn.Conv2d(f, out_frames, 1)

    def forward(self, x):
        skips = []
        for e in self.enc:
            x = e(x)
            skips.append(x)
            x = self.pool(x)
        x = self.centre(x)
        for up, bn0, dec, skip in zip(self.up, self.bn0, self.dec, reversed(skips)):
            x = dec(bn0(torch.cat([skip, up(x)], 1)))
        return self.out(x)


def main():
    ap = argparse.ArgumentParser(description="PyTorch UNet training throughput (CPU)")
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--filters", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--in-frames", type=int, default=13)
    ap.add_argument("--out-frames", type=int, default=12)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=("fp32", "amp-bf16", "amp-fp16"), default="fp32")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    a = ap.parse_args()
    if a.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("unet-torch.py: --device cuda: torch %s sees no GPU" % torch.__version__)
        torch.backends.cudnn.benchmark = True
    dev = torch.device(a.device)

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = UNet(a.depth, a.filters, a.in_frames, a.out_frames).to(dev)
    model.train()
    nparams = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    x = torch.randn(a.batch, a.in_frames, a.size, a.size).to(dev)
    y = torch.randn(a.batch, a.out_frames, a.size, a.size).to(dev)
    if a.channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
        y = y.contiguous(memory_format=torch.channels_last)

    dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(a.precision)
    scaler = torch.amp.GradScaler("cuda") if a.device == "cuda" and a.precision == "amp-fp16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        if dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with torch.autocast(a.device, dtype=dtype):
                loss = loss_fn(model(x).float(), y)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss.item()  # (waits for the GPU: each step is timed whole)

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = time.perf_counter() - t0
    where = "cuda:" + torch.cuda.get_device_name().replace(" ", "_") if a.device == "cuda" else "cpu"
    print("torch=%s threads=%d precision=%s params=%d size=%d filters=%d batch=%d layout=%s device=%s steps=%d "
          "seconds=%.3f samples_per_s=%.4g" %
          (torch.__version__, torch.get_num_threads(), a.precision, nparams, a.size, a.filters, a.batch,
           "channels_last" if a.channels_last else "nchw", where, a.steps, dt, a.steps * a.batch / dt), flush=True)


if __name__ == "__main__":
    main()
