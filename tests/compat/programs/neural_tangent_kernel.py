# torch.func for ensembles and neural tangent kernels: stack_module_state + vmap over functional_call runs
# several models at once; the empirical NTK of a small CNN by Jacobian contraction (vmap of jacrev over a
# parameter dict, einsum) and by NTK-vector products (vjp then jvp over the dict, vmap over the basis).
# compat-tolerance: 1e-6 1e-8
import copy
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import vmap
from torch.func import functional_call, jacrev, jvp, stack_module_state, vjp

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(3)


def init(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.4, 0.4, tuple(p.shape))))
    return module


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


models = [init(MLP()) for _ in range(4)]
data = torch.from_numpy(rng.normal(size=(4, 5, 6)))
params, buffers = stack_module_state(models)


def make_fmodel():
    # a stateless copy (meta: no values, kept out of the globals a checkpoint of this program would save)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(p, b, x):
        return functional_call(base, (p, b), (x,))

    return fmodel


fmodel = make_fmodel()
ens_diff = vmap(fmodel)(params, buffers, data)
ens_same = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data[0])
assert torch.allclose(ens_diff, torch.stack([m(d) for m, d in zip(models, data)]))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 3, 3)
        self.conv2 = nn.Conv2d(3, 3, 3)
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        return self.fc(self.conv2(self.conv1(x).relu()).flatten(1))


net = init(CNN())
net_params = {k: v.detach() for k, v in net.named_parameters()}
x1 = torch.from_numpy(rng.normal(size=(3, 2, 6, 6)))
x2 = torch.from_numpy(rng.normal(size=(2, 2, 6, 6)))


def fnet_single(p, x):
    return functional_call(net, p, (x.unsqueeze(0),)).squeeze(0)


def ntk_contraction(p, a, b):
    ja = [j.flatten(2) for j in vmap(jacrev(fnet_single), (None, 0))(p, a).values()]
    jb = [j.flatten(2) for j in vmap(jacrev(fnet_single), (None, 0))(p, b).values()]
    return torch.stack([torch.einsum("Naf,Mbf->NMab", u, w) for u, w in zip(ja, jb)]).sum(0)


def ntk_vps(p, a, b):
    def get_ntk(xa, xb):
        out, vjp_fn = vjp(lambda q: fnet_single(q, xa), p)

        def ntk_slice(vec):
            return jvp(lambda q: fnet_single(q, xb), (p,), vjp_fn(vec))[1]

        return vmap(ntk_slice)(torch.eye(out.numel()))

    return vmap(vmap(get_ntk, (None, 0)), (0, None))(a, b)


k1 = ntk_contraction(net_params, x1, x2)
k2 = ntk_vps(net_params, x1, x2)
assert torch.allclose(k1, k2)
print("RESULT", json.dumps({
    "ensemble_diff": ens_diff.tolist(), "ensemble_same": ens_same.tolist(), "ntk": k1.tolist(),
    "ntk_vps": k2.tolist(), "ntk_trace": torch.einsum("NMKK->NM", k2).tolist(),
}))  # fmt: skip
