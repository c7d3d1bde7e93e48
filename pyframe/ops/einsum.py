"""einsum as permutes, reshapes, sums and one batched GEMM per pair of operands (left to right),
so the arithmetic runs in the C core and the gradient is that of the composed ops."""

from __future__ import annotations

import math
import string

from pyframe._backend import ShapeError
from pyframe.tensor import Tensor

__all__ = ["einsum"]

_LETTERS = set(string.ascii_letters)


def _parse(equation: str, operands: tuple) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = eq, "", False
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the equation has {len(terms)} operands but {len(operands)} tensors were given")
    # an ellipsis becomes fresh upper-case-free labels, right-aligned across operands
    used = set(eq) & _LETTERS
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in used]
    ell_ndim = 0
    for t, x in zip(terms, operands, strict=True):
        if "..." in t:
            ell_ndim = max(ell_ndim, x.ndim - (len(t) - 3))
    if len(spare) < ell_ndim:
        raise ValueError("einsum(): too many dims under '...'")
    ell = "".join(spare[:ell_ndim])
    labels = []
    for t, x in zip(terms, operands, strict=True):
        if "..." in t:
            k = x.ndim - (len(t) - 3)
            if k < 0:
                raise ShapeError(f"einsum(): term {t!r} has more labels than the operand's {x.ndim} dims")
            t = t.replace("...", ell[ell_ndim - k :])
        if set(t) - _LETTERS:
            raise ValueError(f"einsum(): invalid subscript in {t!r}; use letters and '...'")
        if len(t) != x.ndim:
            raise ShapeError(f"einsum(): term {t!r} names {len(t)} dims but the operand has {x.ndim}")
        labels.append(t)
    if explicit:
        out = out.replace("...", ell)
        if set(out) - _LETTERS or len(set(out)) != len(out):
            raise ValueError(f"einsum(): invalid output subscripts {out!r}")
        for c in out:
            if not any(c in t for t in labels):
                raise ValueError(f"einsum(): output label {c!r} appears in no operand")
    else:  # implicit output: the ellipsis dims, then every label seen once, in alphabetical order
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return labels, out


def _diagonal(x: Tensor, t: str) -> tuple[Tensor, str]:
    """A repeated label within one term ("ii") takes the diagonal: advanced indexing, a C gather."""
    from pyframe.factory import arange

    while len(set(t)) != len(t):
        c = next(c for c in t if t.count(c) > 1)
        i, j = t.index(c), t.index(c, t.index(c) + 1)
        if x._shape[i] != x._shape[j]:
            raise ShapeError(f"einsum(): label {c!r} has sizes {x._shape[i]} and {x._shape[j]}")
        perm = [i, j] + [k for k in range(x.ndim) if k not in (i, j)]
        x = x.permute(*perm)
        r = arange(x._shape[0])
        x = x[r, r]
        t = c + "".join(t[k] for k in perm[2:])
    return x, t


def _sum_out(x: Tensor, t: str, keep: set) -> tuple[Tensor, str]:
    dims = tuple(i for i, c in enumerate(t) if c not in keep)
    if not dims:
        return x, t
    return x.sum(dims), "".join(c for c in t if c in keep)


def _contract(a: Tensor, ta: str, b: Tensor, tb: str, keep: set) -> tuple[Tensor, str]:
    """a (labels ta) times b (labels tb), summed over shared labels not in ``keep``."""
    batch = [c for c in ta if c in tb and c in keep]
    summed = [c for c in ta if c in tb and c not in keep]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    size = {}
    for x, t in ((a, ta), (b, tb)):
        for c, n in zip(t, x._shape, strict=True):
            if c in size and size[c] != n and 1 not in (size[c], n):
                raise ShapeError(f"einsum(): label {c!r} has sizes {size[c]} and {n}")
            size[c] = max(size.get(c, n), n)
    am = a.permute(*[ta.index(c) for c in batch + a_only + summed]) if ta else a
    bm = b.permute(*[tb.index(c) for c in batch + summed + b_only]) if tb else b
    nb = [size[c] for c in batch]
    m, k, n = (math.prod(size[c] for c in g) for g in (a_only, summed, b_only))
    am = am.expand(*[size[c] for c in batch + a_only + summed]).reshape(*nb, m, k)
    bm = bm.expand(*[size[c] for c in batch + summed + b_only]).reshape(*nb, k, n)
    out = (am @ bm).reshape(*nb, *[size[c] for c in a_only], *[size[c] for c in b_only])
    return out, "".join(batch + a_only + b_only)


def einsum(equation: str, *operands) -> Tensor:
    """Same as torch.einsum (explicit and implicit output, '...', repeated labels for diagonals).
    Operands are contracted left to right; ``opt_einsum`` path optimisation is not done."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a string, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands or not all(isinstance(x, Tensor) for x in operands):
        raise TypeError("einsum(): operands must be one or more Tensors")
    labels, out = _parse(equation, operands)
    xs = []
    for x, t in zip(operands, labels, strict=True):
        xs.append(_diagonal(x, t))
    # sum out what no later operand and not the output needs, then contract pairwise
    acc, tacc = xs[0]
    rest_labels = [t for _, t in xs[1:]]
    acc, tacc = _sum_out(acc, tacc, set(out).union(*rest_labels))
    for i, (b, tb) in enumerate(xs[1:]):
        later = set(out).union(*rest_labels[i + 1 :])
        b, tb = _sum_out(b, tb, later | set(tacc))
        acc, tacc = _contract(acc, tacc, b, tb, later)
    acc, tacc = _sum_out(acc, tacc, set(out))
    if tacc != out:
        acc = acc.permute(*[tacc.index(c) for c in out])
    return acc if acc is not operands[0] else acc.clone()
