"""Seed 002: ``pyframe.nn.utils.parametrize.register_parametrization``: ``module.weight`` becomes a function of an
unconstrained ``original`` (here: symmetric matrices), assignable through ``right_inverse``, trained as usual."""

import pyframe
import pyframe.nn as nn
import pyframe.nn.utils.parametrize as P


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).T  # a symmetric matrix

    def right_inverse(self, A):
        return A.triu()


def close(a, b) -> bool:
    return (a - b).abs().max().item() < 1e-5


pyframe.manual_seed(0)
m = nn.Linear(4, 4)
P.register_parametrization(m, "weight", Symmetric())
assert P.is_parametrized(m, "weight")
print(m.parametrizations.weight)  # a ParametrizationList holding Symmetric; .original is the trained tensor

A = pyframe.randn(4, 4)
A = A + A.T
m.weight = A  # runs right_inverse: original = A.triu()
assert close(m.weight, A)

# training keeps the weight symmetric: gradients reach `original` through the parametrization
opt = pyframe.optim.SGD(m.parameters(), lr=0.1)
x, y = pyframe.randn(16, 4), pyframe.randn(16, 4)
for _ in range(20):
    opt.zero_grad()
    nn.functional.mse_loss(m(x), y).backward()
    opt.step()
assert close(m.weight, m.weight.T)

with P.cached():  # the weight is computed once inside the block
    assert m.weight is m.weight

P.remove_parametrizations(m, "weight", leave_parametrized=True)
assert not P.is_parametrized(m) and isinstance(m.weight, nn.Parameter)
print("seed 002: ok")
