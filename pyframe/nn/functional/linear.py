"""Linear layers: linear and bilinear."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import NULL, SMALL_BYTES, ShapeError, alloc_large, alloc_small, check, lib
from pyframe.autograd.graph import record
from pyframe.nn.functional._utils import _cached_desc, _cast, _desc_cache, _same_dtype, _tensor_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.products import addmm, matmul
from pyframe.tensor import Tensor, contiguous_strides, fresh

__all__ = [
    "bilinear", "linear",
]  # fmt: skip

_matmul = lib.pf_matmul
_mm_bias = lib.pf_mm_bias
_binary = lib.pf_binary
_binary_contig = lib.pf_binary_contig
_ADD = lib.PF_ADD


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Same as torch.nn.functional.linear: ``input @ weight.T + bias``, one GEMM that reads
    the transposed weight in place."""
    # fast path: 2-d input and weight of one dtype, bias None or [out_features]
    if (
        isinstance(input, Tensor) and isinstance(weight, Tensor) and len(input._shape) == 2
        and len(weight._shape) == 2 and input.dtype is weight.dtype
        and (bias is None or (isinstance(bias, Tensor) and bias.dtype is input.dtype
                             and bias._shape == weight._shape[:1]))
        and input.dtype is not _dtype.float16 and input.dtype is not _dtype.bfloat16
    ):  # fmt: skip
        return _linear2d(input, weight, bias)
    if (
        isinstance(input, Tensor) and isinstance(weight, Tensor) and len(input._shape) > 2 and input._contig
        and len(weight._shape) == 2 and input._shape[-1] == weight._shape[1] and input._shape[-1]
        and (input.dtype is _dtype.float32 or input.dtype is _dtype.float64)
        and input.dtype is weight.dtype and not _grad_mode.enabled
        and (bias is None or (isinstance(bias, Tensor) and bias.dtype is input.dtype
                             and bias._shape == weight._shape[:1]))
    ):  # fmt: skip
        return _linear_rows(input, weight, bias)
    _tensor_arg(input, "linear")
    _tensor_arg(weight, "linear", "weight")
    if weight.ndim != 2:
        raise ShapeError(f"linear(): weight must be 2-d [out_features, in_features], got shape {list(weight._shape)}")
    if bias is not None:
        _tensor_arg(bias, "linear", "bias")
    _same_dtype("linear", input, weight=weight, bias=bias)
    if input.ndim == 0:
        raise ShapeError("linear(): input must have at least 1 dim, got a 0-d tensor")
    if input.dtype is _dtype.float16 or input.dtype is _dtype.bfloat16:
        return _linear_half(input, weight, bias)
    lead = input._shape[:-1]
    plain = bias is None or bias._shape == weight._shape[:1]
    out = _linear2d(input.reshape(-1, input._shape[-1]), weight, bias if plain else None)
    out = out.reshape(lead + (weight._shape[0],))
    # torch's _unsafe_view: the 2-d result is private, so the output is not a view and in-place
    # ops on it (ReLU(inplace=True) after a Linear on 3-d input) are legal under autograd
    out._base = None
    return out if plain else ew.add(out, bias)


def _linear_half(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """16-bit floats have no GEMM kernel: ``addmm(bias, x, w.T)`` over the flattened leading dims, which
    accumulates in float32 and rounds once, as torch's CPU linear."""
    flat = x.reshape(-1, x._shape[-1])
    out = matmul(flat, w.mT) if b is None else addmm(b, flat, w.mT)
    return out.reshape(x._shape[:-1] + (w._shape[0],))


def _linear2d(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    m, k = x._shape
    n, k2 = w._shape
    if k != k2:
        raise ShapeError(
            f"linear(): input of shape {list(x._shape)} has {k} features but weight of shape {list(w._shape)} "
            f"expects {k2} (mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}))"
        )
    dt = x.dtype
    code = dt.code
    numel = m * n
    nbytes = numel * dt.itemsize
    data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
    shape, strides = (m, n), (n, 1)
    out = fresh(data, nbytes, shape, strides, numel, dt)
    if dt is _dtype.float32 or dt is _dtype.float64:  # pointers and strides, the bias added in the same pass
        xs, ws = x._strides, w._strides
        rc = _mm_bias(code, m, n, k, x._ptr, xs[0], xs[1], w._ptr, ws[1], ws[0],
                      NULL if b is None else b._ptr, 0 if b is None else b._strides[0], data)  # fmt: skip
        if rc:
            check(rc)
        _record_linear(x, w, b, out)
        return out
    # the descriptor cache, inlined: this path is benchmarked per call
    key = (_cast("char *", data), code, shape, strides)
    od = _desc_cache.get(key) or _cached_desc(data, code, shape, strides)
    out._desc = od
    ws = w._strides
    key = (_cast("char *", w._ptr), code, (k, n), (ws[1], ws[0]))
    wd = _desc_cache.get(key) or _cached_desc(w._ptr, code, (k, n), (ws[1], ws[0]))
    rc = _matmul(x._desc or x._d(), wd, od)
    if rc:
        check(rc)
    if b is not None:
        if m == 1 and b._contig:
            rc = _binary_contig(_ADD, code, data, b._ptr, data, n)
        else:
            rc = _binary(_ADD, od, _cached_desc(b._ptr, code, shape, (0, b._strides[0])), od)
        if rc:
            check(rc)
    _record_linear(x, w, b, out)
    return out


def _linear_rows(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """A dense float input of 3 or more dims outside autograd: its rows are one [m, k] matrix read
    in place, one GEMM (bias in the same pass) into the result's final shape, with no reshapes."""
    k = x._shape[-1]
    m, n = x._numel // k, w._shape[0]
    dt = x.dtype
    numel = m * n
    nbytes = numel * dt.itemsize
    data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
    shape = x._shape[:-1] + (n,)
    out = fresh(data, nbytes, shape, contiguous_strides(shape), numel, dt)
    ws = w._strides
    rc = _mm_bias(dt.code, m, n, k, x._ptr, k, 1, w._ptr, ws[1], ws[0],
                  NULL if b is None else b._ptr, 0 if b is None else b._strides[0], data)  # fmt: skip
    if rc:
        check(rc)
    return out


def _record_linear(x: Tensor, w: Tensor, b: Tensor | None, out: Tensor) -> None:
    if _grad_mode.enabled and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)):

        def backward(g):
            return (
                matmul(g, w) if x.requires_grad else None,
                matmul(g.mT, x) if w.requires_grad else None,
                rd.sum(g, 0).reshape(b._shape) if b is not None and b.requires_grad else None,
            )

        record("AddmmBackward0", backward, (x, w, b), out, (x, w))


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Same as torch.nn.functional.bilinear: ``y_k = x1 W_k x2 + b_k``, as two matmuls."""
    if input1.ndim < 1 or input1.ndim > 7 or input2.ndim != input1.ndim:
        raise ShapeError(
            f"bilinear(): inputs must have the same number of dims, from 1 to 7 (one is added inside), got shapes "
            f"{list(input1._shape)} and {list(input2._shape)}"
        )
    if weight.ndim != 3 or input1._shape[-1] != weight._shape[1] or input2._shape[-1] != weight._shape[2]:
        raise ShapeError(
            f"bilinear(): weight [out, in1, in2] of shape {list(weight._shape)} does not fit inputs of shapes "
            f"{list(input1._shape)} and {list(input2._shape)}"
        )
    o, i1, i2 = weight._shape
    t = matmul(input1, weight.permute(1, 0, 2).reshape(i1, o * i2))  # [..., o * i2]
    t = t.reshape(input1._shape[:-1] + (o, i2))
    out = rd.sum(ew.mul(t, input2.unsqueeze(-2)), -1)
    return ew.add(out, bias) if bias is not None else out
