"""Argument checks and C descriptor helpers shared by the functional families."""

from __future__ import annotations

import functools

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, ffi
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor


def _tensor_arg(x, fn: str, name: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, got {type(x).__name__}")
    return x


def _float_arg(x, fn: str, name: str = "input") -> Tensor:
    _tensor_arg(x, fn, name)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{fn}(): {name} must be a floating point tensor, got {x.dtype.name}")
    return x


def nonempty_spatial(fn: str, input: Tensor, sizes: tuple = ()) -> None:
    """The empty-input rule of the ops with spatial dims (interpolate, conv_transpose, the rnn sequence):
    only the batch and channel dims may be 0, as torch; an empty spatial dim (or output ``sizes``) is refused
    here, in the op's own name, instead of in a helper it calls."""
    spatial = input._shape[2:]
    if 0 in spatial or 0 in sizes:
        raise ValueError(f"{fn}(): input and output sizes should be greater than 0 (only the batch and channel "
                         f"dims may be empty), got input shape {list(input._shape)}"
                         + (f" and output size {list(sizes)}" if sizes else ""))  # fmt: skip


def _same_dtype(fn: str, ref: Tensor, **others) -> None:
    for name, t in others.items():
        if t is not None and t.dtype is not ref.dtype:
            raise TypeError(f"{fn}(): input is {ref.dtype.name} but {name} is {t.dtype.name}; convert one of them")


def _pair(v, fn: str, name: str, minimum: int) -> tuple:
    """An int or a pair of ints as (h, w), each at least ``minimum``."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v, v)
    elif isinstance(v, (tuple, list)) and len(v) == 1:
        v = (v[0], v[0])
    if not (
        isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(n, int) and not isinstance(n, bool) for n in v)
    ):
        raise TypeError(f"{fn}(): {name} must be an int or a pair of ints, got {v!r}")
    if v[0] < minimum or v[1] < minimum:
        raise ValueError(f"{fn}(): {name} must be >= {minimum}, got {tuple(v)}")
    if v[0] > _INT32_MAX or v[1] > _INT32_MAX:  # the core takes geometry as C ints
        raise ValueError(f"{fn}(): {name} must be at most {_INT32_MAX}, got {tuple(v)}")
    return (v[0], v[1])


_INT32_MAX = 2**31 - 1


_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str, fn: str, allowed: tuple = _REDUCTIONS) -> None:
    if reduction not in allowed:
        names = [repr(r) for r in allowed]
        raise ValueError(f"{fn}(): {reduction!r} is not a valid value for reduction; use "
                         f"{', '.join(names[:-1])} or {names[-1]}")  # fmt: skip


def _reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return rd.mean(loss)
    if reduction == "sum":
        return rd.sum(loss)
    return loss


def _regrad(composite, inputs: tuple, grads) -> tuple:
    """Gradients of ``composite(*inputs)`` with a graph of their own (``create_graph=True``):
    dedicated backwards compute on values saved without history, so a double backward
    differentiates the op's composition of differentiable ops instead."""
    from pyframe.autograd import grad

    with _grad_mode.enable_grad():
        out = composite(*inputs)
    wanted = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    got = iter(grad(out, wanted, grads, retain_graph=True, create_graph=True, allow_unused=True))
    return tuple(next(got) if isinstance(t, Tensor) and t.requires_grad else None for t in inputs)


_new_desc = ffi.new


def _desc(ptr, code: int, shape: tuple, strides: tuple):
    """A pf_tensor descriptor (whole-array assignment is about twice as fast as _backend.desc)."""
    d = _new_desc("pf_tensor *")
    d.data = ptr
    d.dtype = code
    d.ndim = len(shape)
    d.shape = shape
    d.strides = strides
    return d


# Descriptors for linear's hot path (transposed weights, broadcast biases, outputs), keyed by
# everything they hold (address, dtype, shape, strides), so an entry can never describe other
# memory than its key says. The key holds a non-owning pointer: caching never keeps memory alive.
_desc_cache: dict = {}
_cast = ffi.cast


def _cached_desc(ptr, code: int, shape: tuple, strides: tuple):
    key = (_cast("char *", ptr), code, shape, strides)
    d = _desc_cache.get(key)
    if d is None:
        if len(_desc_cache) > 512:
            _desc_cache.clear()
        d = _desc_cache[key] = _desc(ptr, code, shape, strides)
    return d


def _single(v, fn: str, name: str) -> int:
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{fn}(): {name} must be an int or a 1-tuple of ints, got {v!r}")
    return v


def _as_2d(fn: str, x: Tensor, name: str = "input") -> tuple[Tensor, bool]:
    """(N, C, 1, L) view of an (N, C, L) or unbatched (C, L) input, and whether it was batched."""
    _tensor_arg(x, fn, name)
    if x.ndim == 3:
        return x.unsqueeze(2), True
    if x.ndim == 2:
        return x.unsqueeze(0).unsqueeze(2), False
    raise ShapeError(f"{fn}(): expected a 2-d (C, L) or 3-d (N, C, L) {name}, got shape {list(x._shape)}")


def _back(out: Tensor, batched: bool) -> Tensor:
    out = out.squeeze(2)
    return out if batched else out.squeeze(0)


_HALF = ("float16", "bfloat16")


def in_float32(fn):
    """``fn`` (a conv or pooling function whose C kernels take float32/float64) for float16 and bfloat16 too,
    as torch's CPU kernels compute them: the 16-bit operands are widened to float32 by the core's cast
    kernels, ``fn`` runs (accumulating in float32) and its floating results are rounded back once; autograd
    goes through the casts, so gradients come back in the 16-bit dtype. Operands of mixed floating dtypes are
    passed through unchanged, for ``fn``'s own dtype check to refuse."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        floats = {a.dtype for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and a.dtype.is_floating_point}
        if len(floats) != 1 or next(iter(floats)).name not in _HALF:
            return fn(*args, **kwargs)
        half = floats.pop()

        def widen(a):
            return a.to(_dtype.float32) if isinstance(a, Tensor) and a.dtype is half else a

        def narrow(r):
            if isinstance(r, Tensor):
                return r.to(half) if r.dtype is _dtype.float32 else r
            if isinstance(r, tuple):
                return type(r)(*map(narrow, r)) if hasattr(r, "_fields") else tuple(map(narrow, r))
            return r

        return narrow(fn(*map(widen, args), **{k: widen(v) for k, v in kwargs.items()}))

    return wrapper
