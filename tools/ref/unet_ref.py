"""The UNet of models/unet_model.h in torch.nn.functional form, shared by
the reference scripts (tools/ref/unet-train.py, tests/models/unet_reference.py):
parameter paths and shapes in starnn's checkpoint order and layouts (conv
OIHW, transposed conv IOHW, 1-D biases), and the training-mode forward pass.
Works with Debian's torch 1.13 and with current PyPI torch.
(tools/bench/unet-torch.py writes the same network with torch.nn modules on
purpose: that is the idiomatic PyTorch a speed baseline should be.)"""
import torch
import torch.nn.functional as F

CENTRE_MULT = 32
BN_EPS = 1e-5
BN_MOMENTUM = 0.1


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


def forward(p, x, depth, buffers=None):
    """Training-mode forward pass: p maps parameter paths to tensors;
    buffers (optional) maps '<bn path>/running_mean' and '/running_var' to
    the running statistics, which batch norm then updates (momentum 0.1)."""
    def bnrelu(path, z):
        rm = buffers[path + "/running_mean"] if buffers is not None else None
        rv = buffers[path + "/running_var"] if buffers is not None else None
        return F.relu(F.batch_norm(z, rm, rv, p[path + "/weight"], p[path + "/bias"], training=True,
                                   momentum=BN_MOMENTUM, eps=BN_EPS))

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
        a = bnrelu("dec%d/bn0" % i, torch.cat([up, skips[i]], 1))
        a = block("dec%d" % i, a)
    return F.conv2d(a, p["out/weight"], p["out/bias"])
