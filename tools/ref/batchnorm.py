#!/usr/bin/python3
"""Reference outputs of torch.nn.BatchNorm2d (training mode, then one
evaluation step) for the small fixed input of tests/codelets/batchnorm.c,
printed as C initialisers to paste into that test.

Input (N, C, H, W) = (2, 3, 2, 3), element i of the flattened NCHW tensor:
  x[i]  = float32(2*sin(0.7*i) + 0.5*c)      c = channel of i
  dy[i] = float32(cos(0.3*i))
  gamma = (1.5, -0.5, 0.75), beta = (0.1, 0.2, -0.3)
  running_mean = (0.2, -0.1, 0.0), running_var = (1.0, 0.5, 2.0)
momentum 0.1, eps 1e-5. Outputs: y, dx, dgamma, dbeta, running stats, for
plain BN and for BN followed by ReLU; then the evaluation-mode y of the plain
BN with the updated running stats. Run with Debian's python3-torch:
  /usr/bin/python3 tools/ref/batchnorm.py
"""
import math

import torch

N, C, H, W = 2, 3, 2, 3


def inputs():
    n = N * C * H * W
    x = [2 * math.sin(0.7 * i) + 0.5 * ((i // (H * W)) % C) for i in range(n)]
    dy = [math.cos(0.3 * i) for i in range(n)]
    return (torch.tensor(x, dtype=torch.float32).reshape(N, C, H, W),
            torch.tensor(dy, dtype=torch.float32).reshape(N, C, H, W))


def carray(name, t):
    vals = ", ".join("%.9g" % v for v in t.detach().reshape(-1).tolist())
    return "static const float %s[] = {%s};" % (name, vals)


def run(relu):
    torch.manual_seed(0)
    x, dy = inputs()
    x.requires_grad_(True)
    bn = torch.nn.BatchNorm2d(C, momentum=0.1, eps=1e-5)
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.5, -0.5, 0.75]))
        bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
        bn.running_mean.copy_(torch.tensor([0.2, -0.1, 0.0]))
        bn.running_var.copy_(torch.tensor([1.0, 0.5, 2.0]))
    bn.train()
    y = bn(x)
    if relu:
        y = torch.relu(y)
    y.backward(dy)
    p = "torch_relu_" if relu else "torch_"
    print(carray(p + "y", y))
    print(carray(p + "dx", x.grad))
    print(carray(p + "dgamma", bn.weight.grad))
    print(carray(p + "dbeta", bn.bias.grad))
    print(carray(p + "running_mean", bn.running_mean))
    print(carray(p + "running_var", bn.running_var))
    if not relu:
        bn.eval()
        with torch.no_grad():
            print(carray(p + "eval_y", bn(x)))


if __name__ == "__main__":
    print("/* tools/ref/batchnorm.py, torch %s */" % torch.__version__)
    run(False)
    run(True)
