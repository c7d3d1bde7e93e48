# Forward-mode AD as torch's tutorial teaches it: dual tensors through plain ops, through a module whose
# parameters are swapped for dual tensors, and through functional_call; a custom Function with a jvp (checked
# by gradcheck's forward mode); torch.func.jvp as the functional form, all compared with each other.
# compat-tolerance: 1e-6 1e-8
import json

import numpy as np
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import functional_call, jvp

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(11)
primal = torch.from_numpy(rng.normal(size=(4, 4)))
tangent = torch.from_numpy(rng.normal(size=(4, 4)))
other = torch.from_numpy(rng.normal(size=(4, 4)))


def fn(x, y):
    return x**2 + (x * y).sin()


with fwAD.dual_level():
    dual = fwAD.make_dual(primal, tangent)
    assert fwAD.unpack_dual(dual).tangent is tangent
    out_dual = fn(dual, other)
    jvp_plain = fwAD.unpack_dual(out_dual).tangent
assert fwAD.unpack_dual(out_dual).tangent is None  # the level has exited
_, jvp_func = jvp(fn, (primal, other), (tangent, torch.zeros_like(other)))
assert torch.allclose(jvp_plain, jvp_func)

model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape))))
params = {name: p.detach().clone() for name, p in model.named_parameters()}
tangents = {name: torch.from_numpy(rng.normal(size=tuple(p.shape))) for name, p in params.items()}
x = torch.from_numpy(rng.normal(size=(5, 4)))

with fwAD.dual_level():
    duals = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
    jvp_call = fwAD.unpack_dual(functional_call(model, duals, (x,))).tangent

linear = nn.Linear(4, 3)
with torch.no_grad():
    linear.weight.copy_(params["0.weight"])
    linear.bias.copy_(params["0.bias"])
with fwAD.dual_level():
    for name in ("weight", "bias"):
        p = getattr(linear, name)
        delattr(linear, name)
        setattr(linear, name, fwAD.make_dual(p.detach(), tangents["0." + name]))
    jvp_setattr = fwAD.unpack_dual(linear(x)).tangent


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gx):
        return gx * ctx.result


z = torch.from_numpy(rng.normal(size=(3,))).requires_grad_()
v = torch.from_numpy(rng.normal(size=(3,)))
with fwAD.dual_level():
    jvp_exp = fwAD.unpack_dual(Exp.apply(fwAD.make_dual(z, v))).tangent
assert torch.autograd.gradcheck(Exp.apply, (z,), check_forward_ad=True, check_backward_ad=False,
                                check_undefined_grad=False, check_batched_grad=False)  # fmt: skip
print("RESULT", json.dumps({
    "jvp_plain": jvp_plain.tolist(), "jvp_call": jvp_call.tolist(), "jvp_setattr": jvp_setattr.tolist(),
    "jvp_exp": jvp_exp.tolist(),
}))  # fmt: skip
