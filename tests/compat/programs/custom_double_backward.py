# Custom autograd Functions that support double backward (saving inputs, outputs, or intermediates returned as
# outputs; a backward that is itself a Function), gradcheck and gradgradcheck on each, once_differentiable and
# the setup_context form; saved-tensor hooks whose pack hook computes; the optimizer step fused into backward by
# register_post_accumulate_grad_hook, against the usual loop.
# compat-tolerance: 1e-7 1e-9
import json

import numpy as np
import torch
import torch.nn as nn
from torch.autograd.function import once_differentiable

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(7)


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        (result,) = ctx.saved_tensors
        return result * grad_out


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx, expnegx = torch.exp(x), torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_exp, grad_negexp):
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx + expnegx) / 2 + grad_exp * expx - grad_negexp * expnegx


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return grad_out * 3 * x**2

    @staticmethod
    def backward(ctx, gg):
        x, grad_out = ctx.saved_tensors
        return gg * 3 * x**2, gg * grad_out * 6 * x


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return g * ctx.k, None


x = torch.from_numpy(rng.uniform(0.1, 1.0, (3, 3))).requires_grad_()
sinh = lambda t: Sinh.apply(t)[0]  # noqa: E731
checks = []
for f in (Exp.apply, sinh, Cube.apply):
    checks.append(torch.autograd.gradcheck(f, x) and torch.autograd.gradgradcheck(f, x))
second = {}
for name, f in (("exp", Exp.apply), ("sinh", sinh), ("cube", Cube.apply)):
    (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    second[name] = [g.tolist(), gg.tolist()]
(g_scale,) = torch.autograd.grad(Scale.apply(x, 2.5).sum(), x)

w = torch.from_numpy(rng.normal(size=(5,))).requires_grad_()
with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 4, lambda t: t / 4):
    y = torch.pow(w, 3)
y.sum().backward()
hooked = w.grad.tolist()


def make():
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
    with torch.no_grad():
        for p, v in zip(m.parameters(), start):
            p.copy_(v)
    return m


start = [torch.from_numpy(rng.uniform(-0.5, 0.5, s)) for s in ((6, 4), (6,), (1, 6), (1,))]
fused, plain = make(), make()
opts = {p: torch.optim.Adam([p], lr=0.01) for p in fused.parameters()}


def step_hook(p):
    opts[p].step()
    opts[p].zero_grad()


for p in fused.parameters():
    p.register_post_accumulate_grad_hook(step_hook)
opt = torch.optim.Adam(plain.parameters(), lr=0.01)
batches = [torch.from_numpy(rng.normal(size=(8, 4))) for _ in range(3)]
for b in batches:
    fused(b).pow(2).mean().backward()
    plain(b).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
assert all(p.grad is None for p in fused.parameters())
assert all(torch.allclose(a, b) for a, b in zip(fused.parameters(), plain.parameters()))
print("RESULT", json.dumps({
    "checks": checks, "second": second, "scale": g_scale.tolist(), "hooked": hooked,
    "fused": [p.tolist() for p in fused.parameters()],
}))  # fmt: skip
