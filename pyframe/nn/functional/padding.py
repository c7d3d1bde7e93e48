"""pad, in every mode torch has."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _tensor_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops.view import embed
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "pad",
]  # fmt: skip

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """Same as torch.nn.functional.pad: ``pad`` lists (left, right) pairs from the last dim
    backwards. "constant" (negative pads crop), "reflect", "replicate" and "circular" work on
    any dims (torch limits the last three to 2-5 d inputs)."""
    _tensor_arg(input, "pad")
    pad = tuple(pad)
    if len(pad) % 2:
        raise ValueError(f"pad(): padding length must be divisible by 2, got {len(pad)} ({pad})")
    if len(pad) > 2 * input.ndim:
        raise ValueError(
            f"pad(): padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad(): mode {mode!r} is not supported; use one of {_PAD_MODES}")
    pairs = {input.ndim - 1 - i: (pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)}
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise ValueError(f"pad(): padding mode {mode!r} doesn't take in value argument")
        return _pad_by_index(input, pairs, mode)
    shape = list(input._shape)
    src, dst = [slice(None)] * input.ndim, [slice(None)] * input.ndim
    for dim, (lo, hi) in pairs.items():
        size = input._shape[dim]
        new = size + lo + hi
        if new < 0:
            raise ValueError(
                f"pad(): the input size {size}, plus negative padding {lo} and {hi} resulted in a negative output "
                f"size, which is invalid. Check dimension {dim} of your input."
            )
        shape[dim] = new
        kept = max(new - max(lo, 0) - max(hi, 0), 0)
        src[dim] = slice(max(-lo, 0), max(-lo, 0) + kept)
        dst[dim] = slice(max(lo, 0), max(lo, 0) + kept)
    src, dst = tuple(src), tuple(dst)
    with _grad_mode.no_grad():
        out = ew.fill_(empty_tensor(tuple(shape), input.dtype), 0 if value is None else value)
        ew.copy_(out[dst], input[src])
    if needs_grad(input):
        cropped = any(lo < 0 or hi < 0 for lo, hi in pairs.values())

        def backward(g):
            gd = g[dst]
            return (embed(gd, input._shape, src) if cropped else gd.contiguous(),)

        record("ConstantPadNdBackward0", backward, (input,), out)
    return out


def _pad_by_index(x: Tensor, pairs: dict, mode: str) -> Tensor:
    """reflect / replicate / circular: one index_select per padded dim (differentiable)."""
    from pyframe.ops.creation import tensor

    for dim, (lo, hi) in pairs.items():
        if lo == 0 and hi == 0:
            continue
        size = x._shape[dim]
        if lo < 0 or hi < 0:
            raise ValueError(f"pad(): negative padding {(lo, hi)} is only supported in 'constant' mode")
        limit = size - 1 if mode == "reflect" else size
        if max(lo, hi) > limit or size == 0:
            raise ValueError(
                f"pad(): padding {(lo, hi)} for dim {dim} must be at most {limit} (the input size {size}"
                f"{' - 1' if mode == 'reflect' else ''}) in {mode!r} mode (input shape {list(x._shape)})"
            )
        positions = range(-lo, size + hi)
        if mode == "reflect":
            idx = [-i if i < 0 else 2 * (size - 1) - i if i >= size else i for i in positions]
        elif mode == "replicate":
            idx = [min(max(i, 0), size - 1) for i in positions]
        else:
            idx = [i % size for i in positions]
        x = ix.index_select(x, dim, tensor(idx, dtype=_dtype.int64))
    return x
