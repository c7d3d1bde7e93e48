"""Reductions and softmax. The reduced dims are moved last by a strided view (no copy),
so one C entry point serves any set of dims."""

from __future__ import annotations

import builtins
import math
from functools import partial
from typing import NamedTuple

from pyframe import _grad_mode
from pyframe._backend import SMALL_BYTES, ShapeError, alloc_large, alloc_small, check, ffi, lib
from pyframe._dtype import as_dtype, bfloat16, bool_, float16, float32, float64, int64
from pyframe.autograd.graph import SavedOutput, record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import cast, zeros_of
from pyframe.ops.index import scatter_add
from pyframe.ops.join import cat
from pyframe.ops.rearrange import flip
from pyframe.ops.scan import cumprod
from pyframe.tensor import Tensor, empty_tensor, fresh, normalize_dim

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "any", "all", "norm",
    "logsumexp", "softmax", "log_softmax", "renorm",
]  # fmt: skip


class ValuesIndices(NamedTuple):
    """``max(dim)``/``min(dim)`` result, as torch.return_types.max."""

    values: Tensor
    indices: Tensor

    def __repr__(self) -> str:  # torch.return_types.max's layout
        name = "min" if isinstance(self, MinResult) else "max"
        return f"pyframe.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"


class MinResult(ValuesIndices):
    """``min(dim)``'s result (a ValuesIndices that prints as torch.return_types.min)."""

    __slots__ = ()


def _dims(x: Tensor, dim) -> list:
    if dim is None:
        return list(range(x.ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    norm = [normalize_dim(d, x.ndim) for d in dims]
    if len(set(norm)) != len(norm):
        raise ShapeError(f"dim {list(dims)} appears multiple times in the list of dims")
    return sorted(norm) if x.ndim else []


def _reduce(
    op: int,
    x: Tensor,
    dim,
    keepdim: bool,
    out_dtype,
    want_values=True,
    want_index=False,
    correction: float = 0.0,
    deriv=None,
):
    """Reduce ``x`` over ``dim``. ``deriv(g, x, y, index, dims)`` gives the gradient from
    ``g`` and the result ``y`` (and ``index``), all shaped as with keepdim=True."""
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    dims = _dims(x, dim)
    keep = [i for i in range(x.ndim) if i not in dims]
    order = keep + dims
    if order == list(range(x.ndim)):  # the reduced dims are already last: x's own descriptor
        moved = x
    else:
        moved = x._view(tuple(x._shape[i] for i in order), tuple(x._strides[i] for i in order))
    out_shape = tuple(x._shape[i] for i in keep)
    values = empty_tensor(out_shape, out_dtype) if want_values else None
    index = empty_tensor(out_shape, int64) if want_index else None
    if moved is x and x._contig:  # rows of x's memory: no descriptors
        n = math.prod(x._shape[i] for i in dims)
        rc = lib.pf_reduce_rows(
            op,
            x.dtype.code,
            x._ptr,
            x._numel // n if n else math.prod(out_shape),
            n,
            values._ptr if values is not None else ffi.NULL,
            out_dtype.code if values is not None else 0,
            index._ptr if index is not None else ffi.NULL,
            correction,
        )
    else:
        rc = lib.pf_reduce(
            op,
            moved._d(),
            len(dims),
            values._d() if values is not None else ffi.NULL,
            index._d() if index is not None else ffi.NULL,
            correction,
        )
    if rc:
        check(rc)
    kept = tuple(1 if i in dims else n for i, n in enumerate(x._shape))
    if keepdim:
        values = values.reshape(kept) if values is not None else None
        index = index.reshape(kept) if index is not None else None
    if deriv is not None and x.requires_grad and _grad_mode.enabled:
        if deriv is _d_sum or deriv is _d_mean:  # x's shape is all they read: the node must not keep x
            backward = partial(_sum_back, kept, x._shape, float(_count(x, dims)) if deriv is _d_mean else None)
            saved = ()
        elif op == lib.PF_VAR or index is not None:  # var reads x; max/min along a dim x and the indices
            ix = index

            def backward(g):
                return (deriv(g.reshape(kept), x, None, None if ix is None else ix.reshape(kept), dims),)

            saved = (x,)
        else:  # prod and full/amax-style max and min also read their result (a SavedOutput: no cycle through it)
            ys = SavedOutput(values)

            def backward(g):
                return (deriv(g.reshape(kept), x, ys().reshape(kept), None, dims),)

            saved = (x, ys)
        name = _REDUCE_NAMES[op]
        if dim is None and name[-1] == "1":  # torch's node of a full sum, mean or prod: ...Backward0
            name = name[:-1] + "0"
        node = record(name, backward, (x,), values, saved)
        node.__dict__["_saved_self_sym_sizes"] = x._shape
        if dim is not None:
            node.__dict__.update(_saved_dim=tuple(dims), _saved_keepdim=keepdim)
    return values, index


_SUM, _MEAN = lib.PF_SUM, lib.PF_MEAN

_REDUCE_NAMES = {
    lib.PF_SUM: "SumBackward1", lib.PF_MEAN: "MeanBackward1", lib.PF_PROD: "ProdBackward1",
    lib.PF_VAR: "VarBackward0", lib.PF_MAX: "MaxBackward0", lib.PF_MIN: "MinBackward0",
}  # fmt: skip


def _count(x: Tensor, dims: list) -> int:
    return math.prod(x._shape[d] for d in dims)


def _sum_back(kept: tuple, shape: tuple, count: float | None, g: Tensor) -> tuple:
    """The gradient of a sum (``count`` None) or mean over ``count`` elements of an input of ``shape``."""
    g = g.reshape(kept)
    return ((g if count is None else ew.div(g, count)).expand(*shape),)


def _d_sum(g, x, y, ix, dims):
    return g.expand(*x._shape)


def _d_mean(g, x, y, ix, dims):
    return ew.div(g, float(_count(x, dims))).expand(*x._shape)


def _d_prod(g, x, y, ix, dims):
    """g * y / x where no input is zero; otherwise, as torch, each element's gradient is the
    product of the others, from exclusive cumulative products both ways (y / x is 0 / 0
    there)."""
    if not dims or x._numel == 0:
        return g.expand(*x._shape) if not dims else zeros_of(x._shape, g.dtype)
    if not any(ew.eq(x, 0)).item():
        return ew.div(ew.mul(g, y), x)
    keep = [d for d in range(x.ndim) if d not in dims]
    perm = keep + list(dims)
    rows = x.permute(*perm).reshape(*(x._shape[d] for d in keep), -1)
    one = empty_tensor(rows._shape[:-1] + (1,), x.dtype)
    check(lib.pf_fill(one._d(), 1.0, 0))

    def exclusive(t):
        return cat([one, cumprod(t, -1).narrow(-1, 0, t._shape[-1] - 1)], -1)

    others = ew.mul(exclusive(rows), flip(exclusive(flip(rows, [-1])), [-1]))
    gp = g.permute(*perm).reshape(*(x._shape[d] for d in keep), 1)
    inverse = [perm.index(d) for d in range(x.ndim)]
    return ew.mul(gp, others).reshape(*(x._shape[d] for d in perm)).permute(*inverse)


def _d_extreme(g, x, y, ix, dims):
    """amax/amin: ties share the gradient evenly; a NaN result matches no element, so the gradient is NaN
    (torch's). max/min along one dim: the gradient goes to the returned index."""
    if ix is not None:
        if not dims:  # a 0-d input is its own maximum
            return g.reshape(x._shape)
        return scatter_add(zeros_of(x._shape, g.dtype), dims[0], ix, g)
    mask = cast(ew.eq(x, y), g.dtype)
    return ew.div(ew.mul(g, mask), sum(mask, dims, keepdim=True))


def evenly_distributed(g, x, y, dims=None):
    """The gradient of a full reduction that selects a value (max(), min(), median(), nanmedian()), as torch:
    shared evenly among the elements equal to the result, or among the NaNs when the result is NaN."""
    mask = cast(ew.where(ew.isnan(y), ew.isnan(x), ew.eq(x, y)), g.dtype)
    return ew.div(ew.mul(g, mask), sum(mask, dims, keepdim=True))


def _d_evenly(g, x, y, ix, dims):
    return evenly_distributed(g, x, y, dims)


def _d_var(correction: float):
    def deriv(g, x, y, ix, dims):
        n = _count(x, dims) - correction
        centred = ew.sub(x, mean(x, dims, keepdim=True))
        return ew.mul(g, ew.mul(centred, 2.0 / n if n > 0 else math.nan))

    return deriv


def _full_if_empty(dim):
    """torch.sum/mean/var/std/norm reduce every dim for ``dim=()`` (any/all reduce none)."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


def _sum_dtype(x: Tensor, dtype):
    if dtype is not None:
        return as_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point else int64


def _lean(op: int, x, dim, keepdim: bool):
    """sum/mean of a contiguous float tensor over everything or its last dim, outside
    autograd: one allocation and one C call. None when the general path is needed."""
    if (
        type(x) is not Tensor
        or not x._contig
        or not x.dtype.is_floating_point
        or (x.requires_grad and _grad_mode.enabled)
    ):
        return None
    shape, dt = x._shape, x.dtype
    if dim is None and not keepdim:  # a scalar: its layout is known, no lookup
        data = alloc_small("char[]", dt.itemsize)
        rc = lib.pf_reduce_rows(op, dt.code, x._ptr, 1, x._numel, data, dt.code, ffi.NULL, 0.0)
        if rc:
            check(rc)
        return fresh(data, dt.itemsize, (), (), 1, dt)
    if dim is None:
        n = x._numel
        shape = (1,) * len(shape)
    elif type(dim) is int and shape and (dim == -1 or dim == len(shape) - 1):
        n = shape[-1]
        shape = shape[:-1] + (1,) if keepdim else shape[:-1]
    else:
        return None
    out = empty_tensor(shape, dt)
    rc = lib.pf_reduce_rows(op, dt.code, x._ptr, out._numel, n, out._ptr, dt.code, ffi.NULL, 0.0)
    if rc:
        check(rc)
    return out


def sum(input: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """Same as torch.sum; integer and bool inputs sum to int64."""
    if dtype is None and (out := _lean(_SUM, input, dim, keepdim)) is not None:
        return out
    dt = _sum_dtype(input, dtype)
    if dt is not input.dtype and dt.is_floating_point:
        input = input.to(dt)
    return _reduce(lib.PF_SUM, input, _full_if_empty(dim), keepdim, dt, deriv=_d_sum)[0]


def prod(input: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Same as torch.prod (its gradient at zero inputs is the product of the other elements, as torch)."""
    return _reduce(lib.PF_PROD, input, dim, keepdim, _sum_dtype(input, dtype), deriv=_d_prod)[0]


def _require_float(x: Tensor, name: str, dtype=None) -> Tensor:
    if dtype is not None:
        return x.to(as_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise TypeError(
            f"{name}(): could not infer output dtype. Input dtype must be a floating point dtype, got {x.dtype.name}"
        )
    return x


def mean(input: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Same as torch.mean: the mean over ``dim`` (a dim, a tuple of dims, or None for all).

    Args:
        input: a floating tensor (or an integer one with ``dtype=`` a floating dtype; otherwise RuntimeError,
            as torch).
        dim: the dims to reduce; None reduces all.
        keepdim: keep the reduced dims with size 1.
        dtype: compute and return in this dtype.

    Returns:
        The means. The mean of no elements is nan.
    """
    if dtype is None and (out := _lean(_MEAN, input, dim, keepdim)) is not None:
        return out
    input = _require_float(input, "mean", dtype)
    return _reduce(lib.PF_MEAN, input, _full_if_empty(dim), keepdim, input.dtype, deriv=_d_mean)[0]


def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Same as torch.var: ``correction`` (default 1, Bessel) or the older ``unbiased`` flag (also torch's
    ``var(input, unbiased)`` overload, a bool in ``dim``'s place)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if isinstance(unbiased, bool) is False and unbiased is not None:
        raise TypeError("var: unbiased must be a bool")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    input = _require_float(input, "var")
    if input.dtype is float16 or input.dtype is bfloat16:  # deviations and squares in float32, rounded once
        return var(input.to(float32), dim, unbiased, keepdim, correction=correction).to(input.dtype)
    c = float(correction)
    return _reduce(lib.PF_VAR, input, _full_if_empty(dim), keepdim, input.dtype, correction=c, deriv=_d_var(c))[0]


def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Same as torch.std; float16 and float32 are computed in float64 and rounded once: the variance alone
    may overflow where the deviation does not (torch: std of [3e38, 0, 0] is 1.7e38, not inf)."""
    if isinstance(dim, bool):  # torch's std(input, unbiased) overload
        dim, unbiased = None, dim
    if input.dtype is float16 or input.dtype is bfloat16 or input.dtype is float32:
        return std(input.to(float64), dim, unbiased, keepdim, correction=correction).to(input.dtype)
    return _sqrt0(var(input, dim, unbiased, keepdim, correction=correction))


def _sqrt0(v: Tensor) -> Tensor:
    """sqrt whose gradient is 0 where the result is 0, as torch's std and norm backward (plain sqrt gives
    inf * 0 = nan there: the norm of a zero vector, the std of a constant)."""
    with _grad_mode.no_grad():
        out = ew.sqrt(v)
    if v.requires_grad and _grad_mode.enabled:
        ys = SavedOutput(out)

        def backward(g):
            y = ys()
            return (ew.where(ew.eq(y, 0.0), 0.0, ew.div(g, ew.mul(y, 2.0))),)

        record("SqrtBackward0", backward, (v,), out, (ys,))
    return out


def _extreme(op: int, name: str, x: Tensor, dim=None, keepdim: bool = False):
    if isinstance(dim, Tensor):  # max(a, b) is maximum
        return ew.maximum(x, dim) if name == "max" else ew.minimum(x, dim)
    if dim is None:
        if x._numel == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return _reduce(op, x, None, False, x.dtype, deriv=_d_evenly)[0]
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(dim) takes a single dim; use amax/amin for several")
    values, index = _reduce(op, x, dim, keepdim, x.dtype, want_index=True, deriv=_d_extreme)
    return MinResult(values, index) if name == "min" else ValuesIndices(values, index)


def max(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """Same as torch.max: the overall maximum, or (values, indices) along ``dim``."""
    return _extreme(lib.PF_MAX, "max", input, dim, keepdim)


def min(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """Same as torch.min: the overall minimum, or (values, indices) along ``dim``; ``min(a, b)`` is ``minimum``."""
    return _extreme(lib.PF_MIN, "min", input, dim, keepdim)


def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Same as torch.amax: the maximum over ``dim`` (a dim or a tuple; default all), values only.

    The gradient is spread evenly over the elements equal to the maximum, as torch.
    """
    return _reduce(lib.PF_MAX, input, None if dim == () else dim, keepdim, input.dtype, deriv=_d_extreme)[0]


def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Same as torch.amin: the minimum over ``dim`` (a dim or a tuple; default all), values only.

    The gradient is spread evenly over the elements equal to the minimum, as torch.
    """
    return _reduce(lib.PF_MIN, input, None if dim == () else dim, keepdim, input.dtype, deriv=_d_extreme)[0]


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Same as torch.argmax; with dim=None, an index into the flattened tensor."""
    if dim is None:
        out = _reduce(lib.PF_ARGMAX, input.reshape(-1), 0, False, None, False, True)[1]
        return out.reshape((1,) * input.ndim) if keepdim else out  # torch: keepdim keeps every dim as 1
    return _reduce(lib.PF_ARGMAX, input, dim, keepdim, None, False, True)[1]


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Same as torch.argmin; with dim=None, an index into the flattened tensor."""
    if dim is None:
        out = _reduce(lib.PF_ARGMIN, input.reshape(-1), 0, False, None, False, True)[1]
        return out.reshape((1,) * input.ndim) if keepdim else out
    return _reduce(lib.PF_ARGMIN, input, dim, keepdim, None, False, True)[1]


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Same as torch.any: whether any element (over ``dim``, or all) is nonzero; a bool tensor."""
    return _reduce(lib.PF_ANY, input, dim, keepdim, bool_)[0]


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Same as torch.all: whether every element (over ``dim``, or all) is nonzero; a bool tensor."""
    return _reduce(lib.PF_ALL, input, dim, keepdim, bool_)[0]


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False) -> Tensor:
    """Same as torch.norm: the vector norm for p = 2/"fro", 1, inf, -inf, 0 or any other number (a negative
    one too: ``sum(|x|**p) ** (1/p)``), and the nuclear norm for p = "nuc" (the sum of the singular values
    over the two dims ``dim``, the last two by default)."""
    if p == "nuc":
        return _nuclear_norm(input, dim, keepdim)
    if not input.dtype.is_floating_point:
        raise TypeError(f"norm(): input dtype should be floating point, got {input.dtype.name}")
    if input.dtype is float16 or input.dtype is bfloat16:  # squares and sums in float32, rounded once
        return norm(input.to(float32), p, dim, keepdim).to(input.dtype)
    if p in ("fro", 2, 2.0):
        if dim is None and not keepdim and input._contig and not (input.requires_grad and _grad_mode.enabled):
            # the whole tensor outside autograd (clip_grad_norm_'s norms): one pass of pf_dot, no tensor of squares
            out = empty_tensor((), input.dtype)
            check(lib.pf_dot(input.dtype.code, input._ptr, 1, input._ptr, 1, input._numel, out._ptr))
            return _no_overflow(ew.sqrt(out), input, p, dim, keepdim)
        return _no_overflow(_sqrt0(sum(ew.mul(input, input), dim, keepdim)), input, p, dim, keepdim)
    if p == 1:
        return sum(ew.abs(input), dim, keepdim)
    if p == math.inf or p == -math.inf:
        pick = amax if p == math.inf else amin
        d = () if dim is None else dim
        return ew.with_derivative(
            "NormBackward1",
            lambda t: pick(ew.abs(t), d, keepdim),
            lambda g, t, y: _d_norm_inf(g, t, y, dim, keepdim),
            input,
            saves_output=True,
        )
    if p == 0:  # the count of nonzeros: a function of the input with a zero gradient, as torch's
        return ew.with_derivative("NormBackward1", lambda t: sum(cast(ew.ne(t, 0), t.dtype), dim, keepdim),
                                  lambda g, t: zeros_of(t._shape, g.dtype), input)  # fmt: skip
    if isinstance(p, (int, float)) and not isinstance(p, bool):
        return _no_overflow(ew.pow(sum(ew.pow(ew.abs(input), float(p)), dim, keepdim), 1.0 / p), input, p, dim,
                            keepdim)  # fmt: skip
    raise ValueError(f"norm: unsupported p={p!r}; use 'fro', 'nuc', a number, inf or -inf")


def _nuclear_norm(input: Tensor, dim, keepdim: bool) -> Tensor:
    """The sum of the singular values of the matrices over ``dim`` (two dims); the SVD is pyframe.linalg's,
    reached through the Tensor method (linalg sits above ops)."""
    dims = (-2, -1) if dim is None else tuple(dim) if not isinstance(dim, int) else (dim,)
    if dim is None and input.ndim != 2 or len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {list(dims) if dim is not None else dim}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"norm(): input dtype should be floating point, got {input.dtype.name}")
    d0, d1 = (d % input.ndim for d in dims)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    out = sum(input.movedim((d0, d1), (-2, -1)).svd()[1], -1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def _no_overflow(out: Tensor, input: Tensor, p, dim, keepdim: bool) -> Tensor:
    """A float32 norm whose powers overflowed (|x| near 1e20 and up: the sum of squares is inf where the norm
    is not) is computed again in float64 and rounded once, as torch accumulates it; only then, so the common
    case pays one check of the (small) result."""
    if input.dtype is float32 and out._numel and bool(ew.isinf(out).any().item()):
        return norm(input.to(float64), p, dim, keepdim).to(float32)
    return out


def _d_norm_inf(g, x, y, dim, keepdim):
    """torch's: sign(x) g shared evenly among the elements whose |x| is the norm or NaN (sign(NaN) = 0: a NaN
    norm gives no gradient)."""
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(normalize_dim(d, x.ndim) for d in dims) if x.ndim else ()
    if not keepdim and x.ndim:
        for d in sorted(dims):
            g, y = g.unsqueeze(d), y.unsqueeze(d)
    a = ew.abs(x)
    mask = cast(ew.logical_or(ew.eq(a, y), ew.isnan(a)), g.dtype)
    return ew.mul(ew.sign(x), ew.mul(ew.div(g, sum(mask, dims, keepdim=True) if dims else mask), mask))


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) along dim, computed stably; over an empty dim -inf (log of an empty sum), as torch."""
    if input._numel == 0:  # no maximum to shift by: the sum of no exponentials is 0
        return ew.log(sum(ew.exp(input), dim, keepdim))
    m = amax(input, dim, True)
    m = ew.where(ew.isfinite(m), m, ew.scalar_tensor(0.0, input.dtype))
    out = ew.add(ew.log(sum(ew.exp(ew.sub(input, m)), dim, True)), m)
    return out if keepdim else out.squeeze(dim)


def _softmax(x: Tensor, dim: int, log: bool, dtype=None) -> Tensor:
    shape = x._shape if type(x) is Tensor else None
    if (
        shape and dtype is None and x._contig and x.dtype.is_floating_point and type(dim) is int
        and (dim == -1 or dim == len(shape) - 1)
    ):  # fmt: skip
        # the lean case: rows of x's memory, no descriptors; the result shares x's layout
        dt, numel, n = x.dtype, x._numel, shape[-1]
        nbytes = numel * dt.itemsize
        data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
        rc = lib.pf_softmax_rows(dt.code, x._ptr, data, numel // n if n else 0, n, log)
        if rc:
            check(rc)
        out = fresh(data, nbytes, shape, x._strides, numel, dt)
        if x._requires_grad and _grad_mode.enabled:
            _record_softmax(x, out, len(shape) - 1, log)
        return out
    if dtype is not None:
        x = x.to(as_dtype(dtype))
    elif not isinstance(x, Tensor):
        raise TypeError(f"{'log_softmax' if log else 'softmax'}: expected a Tensor, got {type(x).__name__}")
    elif not x.dtype.is_floating_point:
        raise TypeError(f"{'log_softmax' if log else 'softmax'}: expected a floating point input, got {x.dtype.name}")
    d = normalize_dim(dim, x.ndim)
    out = empty_tensor(x._shape, x.dtype)
    order = [i for i in range(x.ndim) if i != d] + ([d] if x.ndim else [])

    def last(t: Tensor) -> Tensor:
        return t._view(tuple(t._shape[i] for i in order), tuple(t._strides[i] for i in order))

    if d == x.ndim - 1:  # already last: no views
        check(lib.pf_softmax(x._d(), out._d(), int(log)))
    else:
        check(lib.pf_softmax(last(x)._d(), last(out)._d(), int(log)))
    if x.requires_grad and _grad_mode.enabled:
        _record_softmax(x, out, d, log)
    return out


def _softmax_backward_rows(g: Tensor, y: Tensor, d: int, log: bool) -> Tensor | None:
    """The gradient in one C pass per row when ``g`` and ``y`` are contiguous float32/float64 rows along ``d``;
    None otherwise (the composition below then)."""
    shape = y._shape
    if not (type(g) is Tensor and g._contig and y._contig and g.dtype is y.dtype and g._shape == shape
            and (y.dtype is float32 or y.dtype is float64) and d == len(shape) - 1):  # fmt: skip
        return None
    n = shape[-1]
    gx = empty_tensor(shape, y.dtype)
    check(lib.pf_softmax_backward_rows(y.dtype.code, g._ptr, y._ptr, gx._ptr, y._numel // n if n else 0, n, log))
    return gx


def _recorded(g: Tensor, y: Tensor) -> bool:
    """Whether the gradient is itself recorded (create_graph): then the composition, which autograd can
    differentiate."""
    return _grad_mode.enabled and (g.requires_grad or y.requires_grad)


def _record_softmax(x: Tensor, out: Tensor, d: int, log: bool) -> None:
    ys = SavedOutput(out)
    if log:  # d log_softmax: g - softmax * sum(g)

        def backward(g):
            y = ys()
            gx = None if _recorded(g, y) else _softmax_backward_rows(g, y, d, True)
            return (gx if gx is not None else ew.sub(g, ew.mul(ew.exp(y), sum(g, d, keepdim=True))),)

    else:  # d softmax: y * (g - sum(g * y))

        def backward(g):
            y = ys()
            gx = None if _recorded(g, y) else _softmax_backward_rows(g, y, d, False)
            return (gx if gx is not None else ew.mul(y, ew.sub(g, sum(ew.mul(g, y), d, keepdim=True))),)

    record("LogSoftmaxBackward0" if log else "SoftmaxBackward0", backward, (x,), out, (ys,))


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Same as torch.softmax."""
    return _softmax(input, dim, False, dtype)


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Same as torch.log_softmax."""
    return _softmax(input, dim, True, dtype)


_ = float32


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:  # noqa: A002
    """Same as torch.renorm: each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as torch); the others unchanged."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        got = input.ndim if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"renorm(): input needs at least 2 dimensions, got {got} dimensions")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm(): expected a floating point input, got {input.dtype.name}")
    if isinstance(p, (int, float)) and p <= 0:
        raise RuntimeError(f"renorm(): non-positive norm not supported, got p = {p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm(): expected maxnorm to be >= 0 but got {maxnorm}")
    d = normalize_dim(dim, input.ndim)
    n = norm(input, p, [k for k in range(input.ndim) if k != d], keepdim=True)
    factor = ew.where(ew.gt(n, maxnorm), ew.div(maxnorm, ew.add(n, 1e-7)), 1.0)
    return ew.mul(input, factor)


def renorm_(input: Tensor, p, dim: int, maxnorm) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.renorm_."""
    return ew.write_back(input, renorm, p, dim, maxnorm)


def sum_to_size(input: Tensor, *size) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.sum_to_size: summed down to ``size``, which must broadcast to the tensor's shape."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = input._shape
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s not in (1, n) for s, n in zip(size, shape[lead:], strict=True)):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(shape)}")
    dims = list(range(lead)) + [lead + k for k, s in enumerate(size) if s == 1 and shape[lead + k] != 1]
    out = sum(input, dims, keepdim=True) if dims else input
    return out.reshape(size)
