"""The UNet of models/unet_model.h in torch.nn.functional form, shared by
the reference scripts (tools/ref/unet-train.py, tools/ref/unet-predict.py,
tests/models/unet_reference.py): parameter paths and shapes in starnn's
checkpoint order and layouts (conv OIHW, transposed conv IOHW, 1-D
biases), the forward pass (batch norm in training or evaluation mode) in
either convention, and a starnn checkpoint loader.
Works with Debian's torch 1.13 and with current PyPI torch.
(tools/bench/unet-torch.py writes the same network with torch.nn modules on
purpose: that is the idiomatic PyTorch a speed baseline should be.)

Conventions (models/unet_convention.h; a checkpoint's `convention`
attribute, absent from files written before it: starnn-v1):
  keras      the study's Keras UNet: the decoder concatenates [skip, up],
             BatchNormalization eps 1e-3 (the default for new models)
  starnn-v1  starnn's first models: [up, skip], eps 1e-5 (PyTorch's)
Batch norm momentum is PyTorch's 0.1 in both (starnn's)."""
import sys

import torch
import torch.nn.functional as F

CENTRE_MULT = 32
BN_MOMENTUM = 0.1
CONVENTIONS = {
    "keras": {"concat": "skip,up", "bn_eps": 1e-3},
    "starnn-v1": {"concat": "up,skip", "bn_eps": 1e-5},
}


def param_shapes(depth, f, in_frames, out_frames):
    """(path, shape, kind) of every parameter, in starnn's model order;
    kind is the layer's: conv, bn or convt."""
    out = []

    def conv(path, cin, cout, k):
        out.append((path + "/weight", (cout, cin, k, k), "conv"))
        out.append((path + "/bias", (cout,), "conv"))

    def bn(path, c):
        out.append((path + "/weight", (c,), "bn"))
        out.append((path + "/bias", (c,), "bn"))

    def block(prefix, cin, c):
        conv(prefix + "/conv1", cin, c, 3)
        bn(prefix + "/bn1", c)
        conv(prefix + "/conv2", c, c, 3)
        bn(prefix + "/bn2", c)

    cin = in_frames
    for i in range(depth):
        block("enc%d" % i, cin, f << i)
        cin = f << i
    block("centre", cin, CENTRE_MULT * f)
    below = CENTRE_MULT * f
    for i in reversed(range(depth)):
        c = f << i
        out.append(("dec%d/up/weight" % i, (below, c, 2, 2), "convt"))  # IOHW
        out.append(("dec%d/up/bias" % i, (c,), "convt"))
        bn("dec%d/bn0" % i, 2 * c)
        block("dec%d" % i, 2 * c, c)
        below = c
    conv("out", f, out_frames, 1)
    return out


def forward(p, x, depth, buffers=None, convention="keras", training=True):
    """The forward pass: p maps parameter paths to tensors; buffers
    (optional in training mode) maps '<bn path>/running_mean' and
    '/running_var' to the running statistics, which a training-mode batch
    norm then updates (momentum 0.1) and an evaluation-mode one uses."""
    eps = CONVENTIONS[convention]["bn_eps"]
    skip_first = CONVENTIONS[convention]["concat"] == "skip,up"

    def bnrelu(path, z):
        rm = buffers[path + "/running_mean"] if buffers is not None else None
        rv = buffers[path + "/running_var"] if buffers is not None else None
        return F.relu(F.batch_norm(z, rm, rv, p[path + "/weight"], p[path + "/bias"], training=training,
                                   momentum=BN_MOMENTUM, eps=eps))

    def block(prefix, a):
        a = bnrelu(prefix + "/bn1", F.conv2d(a, p[prefix + "/conv1/weight"], p[prefix + "/conv1/bias"], padding=1))
        return bnrelu(prefix + "/bn2", F.conv2d(a, p[prefix + "/conv2/weight"], p[prefix + "/conv2/bias"], padding=1))

    skips = []
    a = x
    for i in range(depth):
        s = block("enc%d" % i, a)
        skips.append(s)
        a = F.max_pool2d(s, 2)
    a = block("centre", a)
    for i in reversed(range(depth)):
        up = F.conv_transpose2d(a, p["dec%d/up/weight" % i], p["dec%d/up/bias" % i], stride=2)
        cat = [skips[i], up] if skip_first else [up, skips[i]]
        a = bnrelu("dec%d/bn0" % i, torch.cat(cat, 1))
        a = block("dec%d" % i, a)
    return F.conv2d(a, p["out/weight"], p["out/bias"])


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load_checkpoint(path, dtype=torch.float64, requires_grad=False):
    """(params, buffers, arch) of a starnn UNet checkpoint: the parameters
    (tensors in model order, leaf tensors requiring grad if asked), the BN
    running statistics, and the root attributes depth, filters, in_frames,
    out_frames, size, convention (starnn-v1 when absent: a file written
    before conventions were recorded). Shapes are checked against the
    architecture."""
    import h5py
    import numpy as np
    params, buffers = {}, {}
    with h5py.File(path, "r") as f:
        if _text(f.attrs.get("format")) != "starnn-unet":
            sys.exit("%s: not a starnn UNet checkpoint (format attribute %r)" % (path, f.attrs.get("format")))
        arch = {k: int(f.attrs[k]) for k in ("depth", "filters", "in_frames", "out_frames", "size")}
        arch["convention"] = _text(f.attrs["convention"]) if "convention" in f.attrs else "starnn-v1"
        if arch["convention"] not in CONVENTIONS:
            sys.exit("%s: unknown convention %r" % (path, arch["convention"]))
        for name, shape, kind in param_shapes(arch["depth"], arch["filters"], arch["in_frames"], arch["out_frames"]):
            a = np.asarray(f[name][()], dtype=np.float32)
            if tuple(a.shape) != shape:
                sys.exit("%s: %s has shape %s, expected %s" % (path, name, tuple(a.shape), shape))
            params[name] = torch.tensor(a, dtype=dtype).requires_grad_(requires_grad)
            if kind == "bn" and name.endswith("/weight"):
                layer = name[:-len("/weight")]
                for n in ("running_mean", "running_var"):
                    a = np.asarray(f[layer + "/" + n][()], dtype=np.float32)
                    buffers[layer + "/" + n] = torch.tensor(a, dtype=dtype)
    return params, buffers, arch
