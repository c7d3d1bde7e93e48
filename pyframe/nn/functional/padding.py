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
    backwards; negative pads crop, in every mode, as torch. "constant", "reflect", "replicate" and
    "circular" work on any dims (torch limits the last three to 2-5 d inputs). Differences: "circular"
    refuses a pad larger than what is left after cropping (torch gives overlapping copies or an error)."""
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


def _source_index(mode: str, size: int, lo: int, hi: int) -> list:
    """The input position each output position of a padded dim reads, by torch's formulas (negative pads
    crop first; circular then wraps around what is left)."""
    skip, out = max(-lo, 0), size + lo + hi
    if mode == "circular":
        kept = out - max(lo, 0) - max(hi, 0)
        return [skip + (j - max(lo, 0)) % kept for j in range(out)]
    idx = []
    for j in range(out):
        if mode == "reflect":
            i = 2 * lo - j if j < lo else j if j < size + lo else 2 * (size + lo - 1) - j
        else:  # replicate
            i = lo if j < lo else j if j < size + lo else size + lo - 1
        idx.append(i - max(lo, 0) + skip)
    return idx


def _pad_by_index(x: Tensor, pairs: dict, mode: str) -> Tensor:
    """reflect / replicate / circular: one index_select per padded dim (a C gather, differentiable)."""
    from pyframe.ops.creation import tensor

    for dim, (lo, hi) in pairs.items():
        if lo == 0 and hi == 0:
            continue
        size = x._shape[dim]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise ValueError(f"pad(): padding size should be less than the corresponding input dimension, but got "
                             f"padding {(lo, hi)} at dimension {dim} of input shape {list(x._shape)} "
                             "('reflect')")  # fmt: skip
        kept = size - max(-lo, 0) - max(-hi, 0)  # what is left after cropping, which circular wraps around
        if mode == "circular" and (max(lo, 0) > kept or max(hi, 0) > kept):
            raise ValueError(f"pad(): padding {(lo, hi)} at dimension {dim} of input shape {list(x._shape)} causes "
                             f"wrapping around more than once ('circular' pads at most the {kept} elements left "
                             "after cropping)")  # fmt: skip
        if size + lo + hi <= 0 or size == 0:
            raise ValueError(f"pad(): input size {size} at dimension {dim} is too small for padding {(lo, hi)}: the "
                             f"output size would be {size + lo + hi} ({mode!r} mode, input shape "
                             f"{list(x._shape)})")  # fmt: skip
        x = ix.index_select(x, dim, tensor(_source_index(mode, size, lo, hi), dtype=_dtype.int64))
    return x
