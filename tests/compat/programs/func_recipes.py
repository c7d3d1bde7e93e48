# The torch.func and torch.autograd.functional recipes: per-example gradients with vmap(grad(...)) over
# functional_call, Jacobians by jacrev and jacfwd, a Hessian, Hessian-vector products (autograd.functional.hvp
# and the forward-over-reverse jvp(grad) form), vjp/jvp, and a Newton step on a small logistic regression.
# compat-tolerance: 1e-4 1e-6
import json

import numpy as np
import torch
import torch.nn as nn
from torch.autograd.functional import hessian as af_hessian
from torch.autograd.functional import hvp, jacobian
from torch.func import functional_call, grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(5)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape))))
params = {k: v.detach() for k, v in model.named_parameters()}
x = torch.from_numpy(rng.normal(size=(5, 3)))
y = torch.from_numpy(rng.normal(size=(5, 1)))


def loss_fn(p, xb, yb):
    out = functional_call(model, p, (xb.unsqueeze(0),))
    return ((out - yb.unsqueeze(0)) ** 2).mean()


per_example = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)


def f(v):
    return torch.stack([v[0] * v[1].sin(), v[1] ** 3 + v[2], (v**2).sum().log()])


v = torch.tensor([0.5, -1.2, 2.0])
jr, jf = jacrev(f)(v), jacfwd(f)(v)
scalar = lambda v: (v.sin() * v.exp()).sum() + v.prod()  # noqa: E731
h = hessian(scalar)(v)
u = torch.tensor([1.0, 0.0, -1.0])
_, hv = hvp(scalar, v, u)
hv_fwd = jvp(grad(scalar), (v,), (u,))[1]
out, vjp_fn = vjp(f, v)
(vjp_v,) = vjp_fn(torch.ones(3))
jac_af = jacobian(f, v)
h_af = af_hessian(scalar, v)

# Newton's method on logistic regression, the Hessian from torch.func
X = torch.from_numpy(np.c_[np.ones(50), rng.normal(size=(50, 2))])
t = torch.from_numpy((rng.random(50) < 0.5).astype(np.float64))
nll = lambda w: torch.nn.functional.binary_cross_entropy_with_logits(X @ w, t, reduction="sum") + 0.5 * (w**2).sum()  # noqa: E731
w = torch.zeros(3)
newton = []
for it in range(6):
    w = w - torch.linalg.solve(hessian(nll)(w), grad(nll)(w))
    newton.append(nll(w).item())
assert torch.allclose(jr, jf) and torch.allclose(hv, hv_fwd) and newton[-1] <= newton[0]
print("RESULT", json.dumps({
    "per_example": {k: g.tolist() for k, g in per_example.items()}, "jacrev": jr.tolist(), "jacfwd": jf.tolist(),
    "hessian": h.tolist(), "hvp": hv.tolist(), "vjp": vjp_v.tolist(), "jacobian_af": jac_af.tolist(),
    "hessian_af": h_af.tolist(), "newton": newton, "w": w.tolist(),
}))  # fmt: skip
