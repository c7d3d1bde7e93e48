"""``repr(tensor)`` in PyTorch's layout: one number format for the whole tensor, right-aligned,
80 columns, and ``...`` summaries past 1000 elements."""

from __future__ import annotations

import math

import numpy as np

from pyframe import _dtype

PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_options(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None) -> None:
    """torch.set_printoptions: a profile first, then the values given. ``sci_mode`` is accepted
    and left to the automatic choice."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):  # fmt: skip
        if value is not None and (not isinstance(value, int | float) or value < 0):
            raise ValueError(f"set_printoptions(): {name} must be a non-negative number, got {value!r}")
    PRECISION = PRECISION if precision is None else int(precision)
    THRESHOLD = THRESHOLD if threshold is None else threshold
    EDGEITEMS = EDGEITEMS if edgeitems is None else int(edgeitems)
    LINEWIDTH = LINEWIDTH if linewidth is None else int(linewidth)


def _formatter(values: np.ndarray, dt) -> callable:
    if dt is _dtype.bool_:
        return lambda v: str(bool(v))
    if not dt.is_floating_point:
        return lambda v: str(int(v))
    finite = np.abs(values[np.isfinite(values)].astype(np.float64))
    nonzero = finite[finite != 0]
    if nonzero.size == 0:
        return lambda v: _special(v) or f"{v:.0f}."  # keeps the sign of -0.
    lo, hi = nonzero.min(), nonzero.max()
    if np.all(np.floor(finite) == finite):  # whole numbers: "3." unless huge or far apart
        if hi / lo > 1000 or hi > 1e8:
            return lambda v: _special(v) or f"{v:.{PRECISION}e}"
        return lambda v: _special(v) or f"{v:.0f}."
    if hi / lo > 1000 or hi > 1e8 or lo < 1e-4:
        return lambda v: _special(v) or f"{v:.{PRECISION}e}"
    return lambda v: _special(v) or f"{v:.{PRECISION}f}"


def _special(v) -> str | None:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements that are shown (edge items only once summarized), for sizing the format."""
    if arr.ndim == 0:
        return arr.reshape(1)
    if arr.shape[0] > 2 * EDGEITEMS:
        arr = np.concatenate([arr[:EDGEITEMS], arr[-EDGEITEMS:]])
    return np.concatenate([_summarized(a).reshape(-1) for a in arr]) if arr.ndim > 1 else arr


def _body(arr: np.ndarray, fmt, width: int, indent: int, summarize: bool) -> str:
    if arr.ndim == 0:
        return fmt(arr.item()).rjust(width)
    n = arr.shape[0]
    idx = list(range(n))
    if summarize and n > 2 * EDGEITEMS:
        idx = list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n))
    if arr.ndim == 1:
        items = [" ..." if i is None else fmt(arr[i].item()).rjust(width) for i in idx]  # torch's " ..."
        per_line = max(1, (LINEWIDTH - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    parts = ["..." if i is None else _body(arr[i], fmt, width, indent + 1, summarize) for i in idx]
    return "[" + sep.join(parts) + "]"


def format_tensor(t) -> str:
    # bfloat16 is shown through float32, which holds each of its values exactly
    arr = (t.detach().to(_dtype.float32) if t.dtype is _dtype.bfloat16 else t.detach()).numpy()
    prefix = "tensor("
    suffix = []
    if arr.size == 0:  # as torch: an empty tensor shows every dtype but the default one, and its size unless 1-d
        body = "[]"
        if arr.ndim != 1:
            suffix.append(f"size={tuple(arr.shape)}")
        if t.dtype is not _dtype.get_default_dtype():
            suffix.append(f"dtype=pyframe.{t.dtype.name}")
    else:
        if t.dtype not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_):
            suffix.append(f"dtype=pyframe.{t.dtype.name}")
        summarize = arr.size > THRESHOLD
        shown = _summarized(arr) if summarize else arr.reshape(-1)
        fmt = _formatter(shown.astype(np.float64) if t.dtype is not _dtype.bool_ else shown, t.dtype)
        # as torch: a float's width comes from its nonzero finite values only
        sized = shown[np.isfinite(shown) & (shown != 0)] if t.dtype.is_floating_point else shown
        width = max([1] + [len(fmt(v.item())) for v in sized])
        body = _body(arr, fmt, width, len(prefix), summarize)
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffix, len(prefix))


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    """torch's layout: a suffix that would pass the line width goes on a new line."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    return "".join(parts) + ")"


__all__ = [
    "set_printoptions",
]  # fmt: skip


def set_printoptions(
    precision: int | None = None,
    threshold: int | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Same as torch.set_printoptions, for what pyframe's repr uses: precision, threshold,
    edgeitems, linewidth and profile ("default", "short", "full")."""
    set_options(
        precision=precision,
        threshold=threshold,
        edgeitems=edgeitems,
        linewidth=linewidth,
        profile=profile,
        sci_mode=sci_mode,
    )
