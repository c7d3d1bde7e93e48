"""Cost of a parametrization: a Linear forward+backward with its weight parametrized vs the plain one,
pyframe and torch side by side (torch's column is left out when it is not installed).

Each case is a training-style call: ``model(x).sum().backward()`` at batch 64. The parametrized rows pay
for evaluating the parametrization on every access of ``weight`` (and, for ``cached``, once per block).
"""

from _harness import best_time, table, torch

import pyframe as pf
import pyframe.nn as nn
from pyframe.nn.utils import parametrizations, parametrize


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).T


def make(lib, kind, n):
    lin = lib.nn.Linear(n, n)
    if kind == "symmetric":
        if lib is pf:
            parametrize.register_parametrization(lin, "weight", Symmetric())
        else:

            class TSym(torch.nn.Module):
                def forward(self, X):
                    return X.triu() + X.triu(1).T

            torch.nn.utils.parametrize.register_parametrization(lin, "weight", TSym())
    elif kind != "plain":
        mod = parametrizations if lib is pf else torch.nn.utils.parametrizations
        getattr(mod, kind)(lin)
    return lin


def case(kind, n, batch=64):
    pf.manual_seed(0)
    lin, x = make(pf, kind, n), pf.randn(batch, n)

    def step():
        lin.zero_grad()
        lin(x).sum().backward()

    r = {"pyframe": best_time(step, min_time=0.5) * 1e6}
    if torch is not None:
        tlin, tx = make(torch, kind, n), torch.randn(batch, n)

        def tstep():
            tlin.zero_grad()
            tlin(tx).sum().backward()

        r["torch"] = best_time(tstep, min_time=0.5) * 1e6
    return r


def main() -> None:
    for n in (64, 256):
        rows = [
            (f"{kind} Linear({n}, {n})", case(kind, n))
            for kind in ("plain", "symmetric", "weight_norm", "spectral_norm", "orthogonal")
        ]
        table(f"Linear({n}, {n}) forward+backward, batch 64 (lower is better)", "us", rows, higher_is_better=False)
    lin, x = make(pf, "weight_norm", 256), pf.randn(64, 256)

    def cached_step():
        with parametrize.cached():
            for _ in range(4):
                lin(x)

    def uncached_step():
        for _ in range(4):
            lin(x)

    with pf.no_grad():
        rows = [
            ("4 forwards, uncached", {"pyframe": best_time(uncached_step) * 1e6}),
            ("4 forwards, cached()", {"pyframe": best_time(cached_step) * 1e6}),
        ]
    table("weight_norm Linear(256, 256) under no_grad (lower is better)", "us", rows, higher_is_better=False)


if __name__ == "__main__":
    main()
