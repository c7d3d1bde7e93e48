"""Embedding, embedding_bag and one_hot."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _tensor_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.ops._common import zeros_of
from pyframe.ops.creation import arange
from pyframe.ops.sparse import sparse_coo_tensor
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "embedding", "embedding_bag", "one_hot",
]  # fmt: skip


def _index_arg(t, fn: str) -> Tensor:
    _tensor_arg(t, fn, "indices")
    if t.dtype is _dtype.int32:
        return t.to(_dtype.int64)
    if t.dtype is not _dtype.int64:
        raise TypeError(f"{fn}(): indices must be an int64 (or int32) tensor, got {t.dtype.name}")
    return t


def _table(fn: str, weight) -> tuple[int, int]:
    _tensor_arg(weight, fn, "weight")
    if weight.ndim != 2:
        raise ShapeError(f"{fn}(): weight must be 2-d [num_embeddings, embedding_dim], got {list(weight._shape)}")
    return weight._shape


def _padding_idx(fn: str, padding_idx, v: int):
    if padding_idx is None:
        return None
    if not -v <= padding_idx < v:
        raise ValueError(f"{fn}(): padding_idx {padding_idx} must be within num_embeddings {v}")
    return padding_idx % v


def _check_range(fn: str, flat: Tensor, weight: Tensor) -> None:
    v = weight._shape[0]
    if flat._numel:
        lo, hi = int(rd.amin(flat)), int(rd.amax(flat))
        if lo < 0 or hi >= v:
            raise IndexError(f"{fn}(): index {lo if lo < 0 else hi} is out of range for an embedding table of {v} "
                             f"rows (weight shape {list(weight._shape)})")  # fmt: skip


def _renorm_(weight: Tensor, flat: Tensor, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: the rows ``flat`` names whose ``norm_type``-norm exceeds ``max_norm`` are
    scaled in place to ``max_norm / (norm + 1e-7)`` of themselves (outside autograd)."""
    if not flat._numel:
        return
    with _grad_mode.no_grad():
        rows = ix.index_select(weight, 0, flat)
        norms = rows.norm(p=norm_type, dim=1, keepdim=True)
        scale = ew.where(ew.gt(norms, max_norm), ew.div(max_norm, ew.add(norms, 1e-7)), 1.0)
        weight[flat] = ew.mul(rows, scale)


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.embedding: rows of ``weight`` gathered in C; the row at ``padding_idx`` gets
    no gradient; ``max_norm`` renormalizes the rows looked up in place first, ``scale_grad_by_freq`` divides
    each row's gradient by how often the batch names it. ``sparse=True`` makes ``weight``'s gradient a sparse
    COO tensor, as torch's: one entry per index looked up (duplicates kept, ``padding_idx`` left out), its
    value that position's gradient row."""
    idx = _index_arg(input, "embedding")
    v, dim = _table("embedding", weight)
    padding_idx = _padding_idx("embedding", padding_idx, v)
    if max_norm is None and idx._contig and weight._contig and not (idx.is_meta or weight.is_meta):
        # the common case in one C call: range check and row copy (the three reductions below cost 7x torch's lookup)
        out = empty_tensor(idx._shape + (dim,), weight.dtype)
        rc = lib.pf_embedding_rows(weight.dtype.code, weight._ptr, v, dim, idx._ptr, idx._numel, out._ptr)
        if rc:
            _check_range("embedding", idx.reshape(-1), weight)  # raises embedding's own message
            check(rc)
        if needs_grad(weight):
            flat = idx.reshape(-1)
    else:
        flat = idx.reshape(-1)
        _check_range("embedding", flat, weight)
        if max_norm is not None:
            _renorm_(weight, flat, float(max_norm), float(norm_type))
        with _grad_mode.no_grad():
            out = ix.index_select(weight, 0, flat)
    if needs_grad(weight) and sparse:
        record("EmbeddingBackward0", lambda g: (_sparse_grad(g.reshape(-1, dim), flat, padding_idx, weight,
                                                              scale_grad_by_freq),), (weight,), out)  # fmt: skip
    elif needs_grad(weight):

        def backward(g):
            rows = g.reshape(-1, dim)
            if scale_grad_by_freq:
                ones = ew.fill_(empty_tensor((flat._numel,), g.dtype), 1.0)
                counts = ix.index_add_(zeros_of((v,), g.dtype), 0, flat, ones)
                rows = ew.div(rows, ix.index_select(counts, 0, flat).unsqueeze(1))
            gw = ix.index_add_(zeros_of(weight._shape, g.dtype), 0, flat, rows)
            if padding_idx is not None:
                gw[padding_idx] = 0
            return (gw,)

        record("EmbeddingBackward0", backward, (weight,), out)
    shape = idx._shape + (dim,)
    return out if out._shape == shape else out.view(shape)


def _sparse_grad(rows: Tensor, flat: Tensor, padding_idx, weight: Tensor, scale_grad_by_freq: bool):
    """torch's sparse embedding gradient: the indices looked up (those equal to ``padding_idx`` left out) with
    their gradient rows as values, uncoalesced."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    if padding_idx is not None:
        keep = ew.ne(flat, padding_idx).nonzero().reshape(-1)
        flat, rows = ix.index_select(flat, 0, keep), ix.index_select(rows, 0, keep)
    return sparse_coo_tensor(flat.reshape(1, -1), rows, weight._shape, check_invariants=False)


def _bags(offs: Tensor, n: int) -> Tensor:
    """Each of the ``n`` indices' bag (offsets ``offs`` sorted), int64 [n]."""
    marks = zeros_of((n + 1,), _dtype.int64)
    ones = ew.fill_(empty_tensor((offs._shape[0],), _dtype.int64), 1)
    return ew.sub(ix.index_add_(marks, 0, offs, ones)[:-1].cumsum(0), 1)


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None, norm_type=2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx=None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.embedding_bag: each bag's rows of ``weight`` summed (times
    ``per_sample_weights``), averaged or maxed in one C pass, without the [n, D] gather; a 2-d ``input`` is one
    bag per row, a 1-d one is split at ``offsets``. Entries equal to ``padding_idx`` are skipped (an empty bag
    gives zeros). Gradients flow to ``weight`` and ``per_sample_weights``; ``scale_grad_by_freq`` divides each
    row's gradient by how often the indices name it ("sum" and "mean", as torch documents it; torch's CPU
    kernel divides some rows by another row's count). ``sparse=True`` ("sum" and "mean") makes ``weight``'s
    gradient a sparse COO tensor, as torch's: one entry per index (``padding_idx`` left out), its value the
    gradient of its bag (divided by the bag's size for "mean", times its weight)."""
    fn = "embedding_bag"
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if mode not in _BAG_MODES:
        raise ValueError(f"{fn}(): mode has to be one of sum, mean or max, got {mode!r}")
    idx = _index_arg(input, fn)
    v, dim = _table(fn, weight)
    if not weight.dtype.is_floating_point or weight.dtype is _dtype.float16:
        raise TypeError(f"{fn}(): weight must be float32 or float64, got {weight.dtype.name}")
    psw = per_sample_weights
    if psw is not None:
        _tensor_arg(psw, fn, "per_sample_weights")
        if mode != "sum":
            raise NotImplementedError(f"{fn}(): per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}')")  # fmt: skip
        if psw._shape != idx._shape:
            raise ValueError(f"{fn}(): if per_sample_weights ({list(psw._shape)}) is not None, then it must have "
                             f"the same shape as the input ({list(idx._shape)})")  # fmt: skip
        if psw.dtype is not weight.dtype:
            raise TypeError(f"{fn}(): per_sample_weights is {psw.dtype.name} but weight is {weight.dtype.name}")
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{fn}(): if input is 2D, then offsets has to be None, as input is treated is a "
                             f"mini-batch of fixed length sequences. However, found offsets of type "
                             f"{type(offsets).__name__}")  # fmt: skip
        b, length = idx._shape
        offs = arange(0, b * length, length if length else 1, dtype=_dtype.int64) if length else zeros_of(
            (b,), _dtype.int64)  # fmt: skip
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError(f"{fn}(): offsets has to be a 1D Tensor but got None")
        offs = _index_arg(offsets, fn)
        if offs.ndim != 1:
            raise ValueError(f"{fn}(): offsets has to be a 1D Tensor, got shape {list(offs._shape)}")
    else:
        raise ValueError(f"{fn}(): input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    flat = idx.reshape(-1).contiguous()
    psw = psw.reshape(-1) if psw is not None else None
    offs = offs.contiguous()
    if include_last_offset:
        if offs._numel == 0:
            raise ValueError(f"{fn}(): include_last_offset=True needs at least one offset")
        end = int(offs[-1])
        if not 0 <= end <= flat._numel:
            raise ValueError(f"{fn}(): the last offset {end} must be within the {flat._numel} indices")
        flat, offs = flat[:end], offs[:-1].contiguous()
        psw = psw[:end] if psw is not None else None
    pad = _padding_idx(fn, padding_idx, v)
    if max_norm is not None:
        _check_range(fn, flat, weight)
        _renorm_(weight, flat, float(max_norm), float(norm_type))
    code, b = _BAG_MODES[mode], offs._shape[0]
    out = empty_tensor((b, dim), weight.dtype)
    maxi = empty_tensor((b, dim), _dtype.int64) if mode == "max" else None
    args = (flat._d(), offs._d(), psw._d() if psw is not None else ffi.NULL, code, -1 if pad is None else pad)
    check(lib.pf_embedding_bag(weight._d(), *args, out._d(), maxi._d() if maxi is not None else ffi.NULL))
    if needs_grad(weight, psw):

        def backward(g):
            gw = gp = None
            if weight.requires_grad and sparse:  # torch's: each index's bag row (over its size), times its weight
                bag = _bags(offs, flat._numel)
                rows = ix.index_select(g, 0, bag)
                if mode == "mean":
                    kept = ew.ne(flat, pad).to(g.dtype) if pad is not None else ew.fill_(empty_tensor(
                        (flat._numel,), g.dtype), 1.0)  # fmt: skip
                    sizes = ix.index_add_(zeros_of((b,), g.dtype), 0, bag, kept)
                    rows = ew.div(rows, ew.clamp(ix.index_select(sizes, 0, bag), min=1.0).unsqueeze(1))
                if psw is not None:
                    rows = ew.mul(rows, psw.detach().unsqueeze(1))
                gw = _sparse_grad(rows, flat, pad, weight, scale_grad_by_freq)
            elif weight.requires_grad:
                gw = empty_tensor(weight._shape, g.dtype)
                check(lib.pf_embedding_bag_backward(g._d(), *args[:2], args[2], maxi._d() if maxi is not None
                                                    else ffi.NULL, *args[3:], gw._d()))  # fmt: skip
                if scale_grad_by_freq and mode != "max" and flat._numel:
                    ones = ew.fill_(empty_tensor((flat._numel,), g.dtype), 1.0)
                    counts = ix.index_add_(zeros_of((v,), g.dtype), 0, flat, ones)
                    gw = ew.div(gw, ew.clamp(counts, min=1.0).unsqueeze(1))
            if psw is not None and psw.requires_grad:  # d out[bag] / d psw[i] = weight[flat[i]]
                bag = _bags(offs, flat._numel)
                rows = ix.index_select(weight, 0, flat)
                gp = rd.sum(ew.mul(rows, ix.index_select(g, 0, bag)), 1)
                if pad is not None:
                    gp = ew.where(ew.eq(flat, pad), 0.0, gp)
            return gw, gp

        record("EmbeddingBagBackward0", backward, (weight, psw), out)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Same as torch.nn.functional.one_hot: int64 [..., num_classes]."""
    _tensor_arg(tensor, "one_hot", "tensor")
    if tensor.dtype is not _dtype.int64:
        raise TypeError(f"one_hot(): is only applicable to index tensors of dtype int64, got {tensor.dtype.name}")
    if tensor._numel == 0:
        if num_classes == -1:
            raise RuntimeError("one_hot(): can not infer the total number of classes from an empty tensor")
    else:
        lo, hi = int(rd.amin(tensor)), int(rd.amax(tensor))
        if lo < 0:
            raise RuntimeError(f"one_hot(): class values must be non-negative, got {lo}")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"one_hot(): class values must be smaller than num_classes={num_classes}, got {hi}")
    return ew.eq(tensor.unsqueeze(-1), arange(num_classes)).to(_dtype.int64)
