"""Every differentiable op at the points where it switches, ties and NaNs, against torch (float64).

The probes are the edge rows of tests/ops_db.py (``GRAD_EDGES``): the op table's unary and binary rows over a grid
of every family's switching points, the nn.functional activations and losses at their kinks and margins, and the
reductions and selecting ops over ties, NaN in each place and all-NaN rows. Each probe compares the forward values
and the gradient of a weighted sum of the result (weights 1, 2, 3, ... so a misrouted gradient shows) with torch's,
NaN equal to NaN. ``python -m tests.autograd.test_edge_gradients`` prints the count of disagreements per op.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests.ops_db import GRAD_EDGES, Edge

torch = pytest.importorskip("torch")


def _run(M, edge: Edge, arrays):
    """(forward values, gradients) of ``edge`` on ``arrays`` in library ``M``, or the exception raised."""
    xs = [M.tensor(a, dtype=M.float64, requires_grad=True) for a in arrays]
    try:
        out = edge.fn(M, *xs)
        y = out[0] if isinstance(out, tuple) else out
        w = M.arange(1, y.numel() + 1, dtype=M.float64).reshape(y.shape)
        (y * w).sum().backward()
    except Exception as e:  # noqa: BLE001 - a refusal is an answer to compare
        return e
    grads = [np.zeros(a.shape) if x.grad is None else _numpy(M, x.grad) for a, x in zip(arrays, xs, strict=True)]
    return _numpy(M, y), grads


def _numpy(M, t) -> np.ndarray:
    return np.array((t.detach().clone() if M is torch else t.detach()).numpy())


def disagreements(edge: Edge) -> list[str]:
    """Where pyframe's values or gradients differ from torch's on the probes of ``edge``."""
    found = []
    for arrays in edge.inputs:
        want, got = _run(torch, edge, arrays), _run(pyframe, edge, arrays)
        if isinstance(want, Exception):
            continue  # torch refuses the probe: nothing to compare (the error tests cover refusals)
        if isinstance(got, Exception):
            found.append(f"{edge.name}{_show(arrays)}: pyframe raised {type(got).__name__}: {got}")
            continue
        (ty, tg), (py, pg) = want, got
        if ty.shape != py.shape or not np.allclose(py, ty, rtol=1e-10, atol=1e-12, equal_nan=True):
            found.append(f"{edge.name}{_show(arrays)}: value {py.tolist()} != torch {ty.tolist()}")
        for i, (t, p) in enumerate(zip(tg, pg, strict=True)):
            if edge.ties:
                if not _same_routing(arrays[i], p, t):
                    found.append(f"{edge.name}{_show(arrays)} grad {i}: {p.tolist()} routes differently from torch "
                                 f"{t.tolist()}")  # fmt: skip
                continue
            bad = ~np.isclose(p, t, rtol=edge.rtol, atol=1e-12, equal_nan=True)
            if bad.any():
                where = [tuple(float(a[idx]) for a in arrays) if arrays[0].ndim == 1 else idx
                         for idx in zip(*np.nonzero(bad), strict=True)][:6]  # fmt: skip
                found.append(f"{edge.name}{_show(arrays)} grad {i}: at {where}: {p[bad].tolist()[:6]} != torch "
                             f"{t[bad].tolist()[:6]}")  # fmt: skip
    return found


def _same_routing(x, p, t) -> bool:
    """Per last-dim row: each group of equal values (NaNs one group) receives the same total, and the gradients
    are the same multiset (one output's gradient per selected element, never a share of it)."""
    for xr, pr, tr in zip(x.reshape(-1, x.shape[-1]), p.reshape(-1, x.shape[-1]), t.reshape(-1, x.shape[-1]),
                          strict=True):  # fmt: skip
        keys = [("nan" if np.isnan(v) else v) for v in xr.tolist()]
        for k in set(keys):
            at = [j for j, v in enumerate(keys) if v == k]
            if not np.isclose(pr[at].sum(), tr[at].sum(), equal_nan=True):
                return False
        if not np.allclose(np.sort(pr), np.sort(tr), equal_nan=True):
            return False
    return True


def _show(arrays) -> str:
    return "" if arrays[0].size > 12 else "(" + ", ".join(str(a.tolist()) for a in arrays) + ")"


@pytest.mark.parametrize("edge", GRAD_EDGES, ids=lambda e: e.name)
def test_edge_gradients_match_torch(edge):
    found = disagreements(edge)
    assert not found, "\n".join(found)


def test_every_differentiable_op_of_the_table_is_walked():
    from tests.ops_db import OPS

    walked = {e.name for e in GRAD_EDGES}
    missing = [op.name for op in OPS if op.result != "bool" and "float64" in op.dtypes and op.name not in walked]
    assert missing == []


if __name__ == "__main__":
    total = bad_ops = 0
    for e in GRAD_EDGES:
        f = disagreements(e)
        total += len(f)
        bad_ops += bool(f)
        for line in f:
            print(line[:400])
    print(
        f"edge walk: {len(GRAD_EDGES)} ops, {sum(len(e.inputs) for e in GRAD_EDGES)} probes, "
        f"{total} disagreements in {bad_ops} ops"
    )
