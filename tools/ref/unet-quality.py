#!/usr/bin/env python3
"""PyTorch anchor of tools/bench/quality: trains the UNet of models/unet_model.h
(tools/ref/unet_ref.py's functional form) from a starnn checkpoint's initial
weights (models/unet train --steps 0 --checkpoint INIT.h5 --seed S) with Adam
as `models/unet train` does (betas 0.9 0.999, eps 1e-8, no weight decay,
learning rate rising linearly over --warmup steps: lr * step / warmup, step
from 1, then constant), batches of --batch samples of a prepared file
(tools/sevir-synth prepared) shuffled each epoch (torch.Generator seeded by
--seed; an incomplete last batch dropped), then evaluates once on the held-out
prepared file with batch norm's running statistics and prints and writes the
scores as models/unet computes them: MSE in normalised units, MAE in raw VIL
units, CSI pooled over lead times at the six VIL thresholds (16, 74, 133,
160, 181, 219; an event is a value >= the threshold), mean_csi their mean.

--precision fp32 | bf16 | fp16:
  bf16  forward and loss under torch.autocast("cpu", torch.bfloat16), weights,
        gradients and Adam in fp32 (PyTorch's AMP)
  fp16  autocast to float16 with dynamic loss scaling as torch.cuda.amp's
        GradScaler does it (start 2^16, x0.5 and the step skipped on Inf/NaN
        gradients, x2 after 2000 clean steps), written out here because
        GradScaler is CUDA-only in older torch; exit 3 when this torch has no
        CPU fp16 autocast (Debian's 1.13 has only bf16)

Usage: unet-quality.py --init INIT.h5 --data TRAIN.h5 --val-data VAL.h5
         [--batch 4] [--steps 1200] [--lr 2e-3] [--warmup 50] [--seed 1]
         [--threads 1] [--precision fp32] [--result OUT.json]
Needs torch, h5py and numpy (PyPI's, or Debian's python3-torch, python3-h5py).
"""
import argparse
import json
import math
import os
import sys
import warnings

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from unet_ref import forward, load_checkpoint  # noqa: E402

NORM_MEAN = 33.44
NORM_SCALE = 47.54
THRESHOLDS = (16, 74, 133, 160, 181, 219)


def load(path, arch):
    with h5py.File(path, "r") as f:
        xin = np.asarray(f["IN"][()], dtype=np.float32)
        xout = np.asarray(f["OUT"][()], dtype=np.float32)
    if xin.shape[3] != arch["in_frames"] or xout.shape[3] != arch["out_frames"] or xin.shape[1] != arch["size"]:
        sys.exit("%s: IN %s / OUT %s do not fit the model (%d -> %d frames, %dx%d)" %
                 (path, xin.shape, xout.shape, arch["in_frames"], arch["out_frames"], arch["size"], arch["size"]))
    n = lambda v: torch.from_numpy(((v - np.float32(NORM_MEAN)) / np.float32(NORM_SCALE)).transpose(0, 3, 1, 2).copy())
    return n(xin), n(xout)


def autocast(precision):
    if precision == "fp32":
        return None
    dt = torch.bfloat16 if precision == "bf16" else torch.float16
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            ctx = torch.autocast("cpu", dtype=dt)
            ctx.__enter__()
            ok = torch.is_autocast_cpu_enabled()
            probe = F.conv2d(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 1, 1)).dtype == dt
            ctx.__exit__(None, None, None)
        except (RuntimeError, AssertionError):
            ok, probe = False, False
    if not (ok and probe):
        print("torch %s has no CPU %s autocast%s" % (torch.__version__, precision,
                                                    (": " + str(w[0].message)) if w else ""), file=sys.stderr)
        sys.exit(3)
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--init", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--val-data", required=True)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32")
    ap.add_argument("--result")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dt = autocast(a.precision)
    p, buffers, arch = load_checkpoint(a.init, torch.float32, requires_grad=True)
    conv = arch["convention"]
    x, y = load(a.data, arch)
    vx, vy = load(a.val_data, arch)
    bpe = x.shape[0] // a.batch
    if bpe < 1:
        sys.exit("%s: %d samples, fewer than the batch %d" % (a.data, x.shape[0], a.batch))
    params = list(p.values())
    opt = torch.optim.Adam(params, lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
    gen = torch.Generator().manual_seed(a.seed)
    scale, good, skipped = (65536.0 if a.precision == "fp16" else 1.0), 0, 0
    order = None
    loss_v = None
    losses = []
    for step in range(1, a.steps + 1):
        g = (step - 1) % bpe
        if g == 0:
            order = torch.randperm(x.shape[0], generator=gen)
        idx = order[g * a.batch:(g + 1) * a.batch]
        for group in opt.param_groups:
            group["lr"] = a.lr * min(1.0, step / a.warmup) if a.warmup > 0 else a.lr
        opt.zero_grad(set_to_none=True)
        if dt is None:
            loss = F.mse_loss(forward(p, x[idx], arch["depth"], buffers, conv), y[idx])
        else:
            with torch.autocast("cpu", dtype=dt):
                pred = forward(p, x[idx], arch["depth"], buffers, conv)
                loss = F.mse_loss(pred, y[idx])  # autocast runs mse_loss in fp32
        loss_v = loss.item()
        losses.append(loss_v)
        if not math.isfinite(loss_v):
            sys.exit("step %d: the loss is %g" % (step, loss_v))
        if a.precision != "fp16":
            loss.backward()
            opt.step()
            continue
        (loss * scale).backward()
        if all(torch.isfinite(q.grad).all() for q in params if q.grad is not None):
            for q in params:
                if q.grad is not None:
                    q.grad.mul_(1.0 / scale)
            opt.step()
            good += 1
            if good == 2000:
                scale, good = min(scale * 2, 2.0 ** 24), 0
        else:
            skipped += 1
            scale, good = max(scale / 2, 1.0), 0

    # held-out evaluation, batch norm in evaluation mode (running statistics), fp32 sums
    sse = sae = 0.0
    count = 0
    th = [(t - NORM_MEAN) / NORM_SCALE for t in THRESHOLDS]
    hmf = np.zeros((len(th), 3))
    with torch.no_grad():
        for i in range(0, vx.shape[0], a.batch):
            xb, yb = vx[i:i + a.batch], vy[i:i + a.batch]
            if dt is None:
                pred = forward(p, xb, arch["depth"], buffers, conv, training=False)
            else:
                with torch.autocast("cpu", dtype=dt):
                    pred = forward(p, xb, arch["depth"], buffers, conv, training=False)
            pred = pred.float()
            e = (pred - yb).double()
            sse += float((e * e).sum())
            sae += float(e.abs().sum())
            count += e.numel()
            for k, t in enumerate(th):
                o, f = yb >= t, pred >= t
                hmf[k] += [int((o & f).sum()), int((o & ~f).sum()), int((~o & f).sum())]
    csi = [h / (h + m + f) if h + m + f else None for h, m, f in hmf]
    got = [c for c in csi if c is not None]
    r = {"torch": torch.__version__, "precision": a.precision, "seed": a.seed, "steps": a.steps,
         "final_loss": loss_v, "train_tail": sum(losses[-max(1, a.steps // 10):]) / max(1, a.steps // 10),
         "mse_norm": sse / count, "mse": sse / count * NORM_SCALE ** 2,
         "mae": sae / count * NORM_SCALE, "csi": csi, "mean_csi": sum(got) / len(got) if got else None,
         "skipped_steps": skipped, "loss_scale": scale}
    print(json.dumps(r))
    if a.result:
        tmp = a.result + ".tmp"
        with open(tmp, "w") as f:
            json.dump(r, f)
        os.replace(tmp, a.result)


if __name__ == "__main__":
    main()
