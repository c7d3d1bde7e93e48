# The parametrizations tutorial: a symmetric weight, a skew-symmetric one mapped through the
# Cayley map and matrix_exp, caching, right_inverse, removal; then a short training run.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize


def symmetric(X):
    return X.triu() + X.triu(1).transpose(-1, -2)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)


class CayleyMap(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("Id", torch.eye(n))

    def forward(self, X):
        # (I + X)(I - X)^{-1}
        return torch.linalg.solve(self.Id - X, self.Id + X)


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)


def seeded(layer, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
    return layer


results = {}
layer = seeded(nn.Linear(3, 3), 0)
parametrize.register_parametrization(layer, "weight", Symmetric())
A = layer.weight
assert torch.allclose(A, A.T)
results["symmetric"] = A.tolist()
results["original_is_triu"] = bool(torch.equal(layer.parametrizations.weight.original.tril(-1), torch.zeros(3, 3)))

layer_orthogonal = seeded(nn.Linear(3, 3), 1)
parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
parametrize.register_parametrization(layer_orthogonal, "weight", CayleyMap(3))
X = layer_orthogonal.weight
results["cayley_orthogonal_error"] = float(torch.dist(X.T @ X, torch.eye(3)))
results["cayley"] = X.tolist()

layer_spd = seeded(nn.Linear(3, 3), 2)
parametrize.register_parametrization(layer_spd, "weight", Symmetric())
parametrize.register_parametrization(layer_spd, "weight", MatrixExponential())
results["expm_symmetric"] = layer_spd.weight.tolist()
results["expm_eigvals"] = torch.linalg.eigvalsh(layer_spd.weight).tolist()
assert (torch.linalg.eigvalsh(layer_spd.weight) > 0.0).all()

with parametrize.cached():
    W1 = layer.weight
    W2 = layer.weight
    results["cached_same_object"] = W1 is W2

layer.weight = symmetric(torch.from_numpy(np.arange(9, dtype=np.float32).reshape(3, 3)))
results["assigned"] = layer.weight.tolist()
print(layer)

# train the Cayley-parametrised layer: the weight stays orthogonal every step
opt = torch.optim.SGD(layer_orthogonal.parameters(), lr=0.1)
x = torch.from_numpy(np.random.default_rng(3).normal(0, 1, (16, 3)).astype(np.float32))
target = x.flip(1)
losses = []
for _ in range(20):
    loss = (layer_orthogonal(x) - target).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
W = layer_orthogonal.weight
results["still_orthogonal"] = bool(torch.allclose(W.T @ W, torch.eye(3), atol=1e-4))
results["losses"] = losses[::4]

parametrize.remove_parametrizations(layer_orthogonal, "weight", leave_parametrized=True)
assert not parametrize.is_parametrized(layer_orthogonal)
results["after_remove"] = layer_orthogonal.weight.tolist()
print("RESULT", json.dumps(results))
