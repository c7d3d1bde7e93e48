"""torch's top-level names for functions pyframe defines elsewhere, and the small torch functions that are
compositions of pyframe's ops (each op computes in the C core, and autograd comes from the composition).

- torch's aliases of ``nn.functional`` and ``linalg`` functions (``torch.conv2d``, ``torch.pinverse``...);
- the identities of a real-only library (``conj``, ``resolve_neg``, ``real``...);
- the ``*_copy`` forms of the view ops (the view, cloned);
- elementwise compositions (``deg2rad``, ``copysign``, ``fmax``, ``heaviside``, ``logaddexp2``...);
- the in-place forms torch has of out-of-place ops (``eq_``, ``cumsum_``, ``addmv_``...): the op, then
  ``copy_`` into the tensor.

``bind()`` adds the Tensor methods; ``pyframe/__init__.py`` calls it after the other ops are bound.
"""

from __future__ import annotations

import math

from pyframe import _dtype, ops
from pyframe import linalg as _linalg
from pyframe.nn import functional as F
from pyframe.nn.functional import normalization as _normalization
from pyframe.ops._common import check_operands
from pyframe.ops._common import result_type as _result_type
from pyframe.ops.elementwise import with_derivative
from pyframe.tensor import Tensor

__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "avg_pool1d", "adaptive_avg_pool1d", "bilinear",
    "cosine_similarity", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "prelu", "hardshrink",
    "constant_pad_nd", "pdist", "channel_shuffle", "pinverse", "cholesky", "qr", "svd", "rsub", "ravel", "real",
    "conj", "conj_physical", "resolve_conj", "resolve_neg", "isreal", "view_copy", "permute_copy", "t_copy",
    "transpose_copy", "unsqueeze_copy", "squeeze_copy", "expand_copy", "diagonal_copy", "unbind_copy", "narrow_copy",
    "alias_copy", "split_with_sizes", "split_with_sizes_copy", "unsafe_split", "unsafe_chunk", "dsplit", "vdot",
    "scalar_tensor", "take", "fill", "zero_", "logspace", "trapezoid", "trapz", "cumulative_trapezoid", "logaddexp2",
    "deg2rad", "rad2deg", "signbit", "isposinf", "isneginf", "copysign", "fmax", "fmin", "heaviside", "sinc",
    "diag_embed", "diagflat", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "BoolTensor",
    "conv3d", "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d", "grid_sampler", "grid_sampler_2d",
    "grid_sampler_3d", "affine_grid_generator",
    "ByteTensor", "CharTensor", "ShortTensor", "BFloat16Tensor", "result_type", "native_layer_norm",
    "native_group_norm", "native_batch_norm", "feature_alpha_dropout", "alpha_dropout", "matrix_power",
    "chain_matmul", "vander", "get_device", "set_warn_always", "is_warn_always_enabled",
]  # fmt: skip

# ---- torch's aliases of nn.functional and linalg -----------------------------------------------------------

conv1d, conv2d, conv_transpose1d, conv_transpose2d = F.conv1d, F.conv2d, F.conv_transpose1d, F.conv_transpose2d
avg_pool1d, adaptive_avg_pool1d, bilinear = F.avg_pool1d, F.adaptive_avg_pool1d, F.bilinear
cosine_similarity, pairwise_distance = F.cosine_similarity, F.pairwise_distance
pixel_shuffle, pixel_unshuffle, prelu, hardshrink = F.pixel_shuffle, F.pixel_unshuffle, F.prelu, F.hardshrink
pdist, channel_shuffle = F.pdist, F.channel_shuffle
conv3d, conv_transpose3d = F.conv3d, F.conv_transpose3d
max_pool1d, max_pool2d, max_pool3d = F.max_pool1d, F.max_pool2d, F.max_pool3d
native_layer_norm, native_group_norm = _normalization.native_layer_norm, _normalization.native_group_norm
native_batch_norm = _normalization.native_batch_norm
feature_alpha_dropout, alpha_dropout = F.feature_alpha_dropout, F.alpha_dropout


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:  # fmt: skip
    """Same as torch.grid_sampler: ``F.grid_sample`` with the modes as torch's integer codes."""
    modes, pads = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")
    if interpolation_mode not in range(3) or padding_mode not in range(3):
        raise ValueError(f"grid_sampler(): interpolation_mode and padding_mode must be 0, 1 or 2, got "
                         f"{interpolation_mode!r} and {padding_mode!r}")  # fmt: skip
    return F.grid_sample(input, grid, modes[interpolation_mode], pads[padding_mode], align_corners)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:  # fmt: skip
    """Same as torch.grid_sampler_2d: grid_sampler on 4-d input."""
    if input.ndim != 4:
        raise ValueError(f"grid_sampler_2d(): expected a 4-d input, got shape {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:  # fmt: skip
    """Same as torch.grid_sampler_3d: grid_sampler on 5-d input."""
    if input.ndim != 5:
        raise ValueError(f"grid_sampler_3d(): expected a 5-d input, got shape {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """Same as torch.affine_grid_generator: ``F.affine_grid``."""
    return F.affine_grid(theta, size, align_corners)


def constant_pad_nd(input: Tensor, pad, value: float = 0) -> Tensor:
    """Same as torch.constant_pad_nd: ``F.pad(input, pad, value=value)``."""
    return F.pad(input, list(pad), mode="constant", value=value)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Same as torch.pinverse: ``linalg.pinv`` with singular values below ``rcond`` times the largest cut."""
    return _linalg.pinv(input, rtol=rcond)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """Same as torch.cholesky (deprecated in torch for ``linalg.cholesky``)."""
    L = _linalg.cholesky(input)
    return L.mT if upper else L


def qr(input: Tensor, some: bool = True):
    """Same as torch.qr: ``linalg.qr`` in mode 'reduced' (``some``) or 'complete'."""
    return _linalg.qr(input, mode="reduced" if some else "complete")


def svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """Same as torch.svd: (U, S, V) with V (not its transpose), reduced when ``some``."""
    U, S, Vh = _linalg.svd(input, full_matrices=not some)
    if not compute_uv:
        return ops.zeros_like(U), S, ops.zeros_like(Vh)
    return U, S, Vh.mT


def rsub(input: Tensor, other, alpha=1) -> Tensor:
    """Same as torch.rsub: ``other - alpha * input``."""
    check_operands("rsub", input, other, "other")
    return ops.sub(other, input, alpha=alpha) if isinstance(other, Tensor) else ops.sub(input * -alpha, -other)


def ravel(input: Tensor) -> Tensor:
    """Same as torch.ravel: the elements as one dim (a view when it can be)."""
    return input.reshape(-1)


# ---- a real-only library's identities ------------------------------------------------------------------------


def real(input: Tensor) -> Tensor:
    """Same as torch.real on a real tensor: the tensor itself."""
    return input


conj = resolve_conj = resolve_neg = real


def conj_physical(input: Tensor) -> Tensor:
    """Same as torch.conj_physical on a real tensor: a copy."""
    return input.clone()


def isreal(input: Tensor) -> Tensor:
    """Same as torch.isreal: every element of a real tensor is real."""
    return ops.ones(input.shape, dtype=_dtype.bool_)


# ---- the *_copy forms of the views -------------------------------------------------------------------------


def _copy_of(name: str):
    def copy(input: Tensor, *args, **kwargs):
        got = getattr(input, name)(*args, **kwargs)
        return tuple(t.clone() for t in got) if isinstance(got, tuple) else got.clone()

    copy.__name__ = f"{name}_copy"
    copy.__doc__ = f"Same as torch.{name}_copy: ``input.{name}(...)``, cloned."
    return copy


view_copy, permute_copy, t_copy, transpose_copy = (_copy_of(n) for n in ("view", "permute", "t", "transpose"))
unsqueeze_copy, squeeze_copy, expand_copy = (_copy_of(n) for n in ("unsqueeze", "squeeze", "expand"))
diagonal_copy, unbind_copy, narrow_copy, split_with_sizes_copy = (
    _copy_of(n) for n in ("diagonal", "unbind", "narrow", "split")
)


def alias_copy(input: Tensor) -> Tensor:
    """Same as torch.alias_copy: a copy."""
    return input.clone()


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Same as torch.split_with_sizes: ``split`` with a list of sizes."""
    return ops.split(input, list(split_sizes), dim)


unsafe_split, unsafe_chunk = ops.split, ops.chunk


def dsplit(input: Tensor, indices_or_sections) -> tuple:
    """Same as torch.dsplit: ``tensor_split`` along dim 2 (the input needs 3 dims)."""
    if input.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")  # fmt: skip
    if isinstance(indices_or_sections, int) and input.shape[2] % indices_or_sections:
        raise RuntimeError(f"torch.dsplit attempted to split along dimension 2, but the size of the dimension "
                           f"{input.shape[2]} is not divisible by the split_size {indices_or_sections}!")  # fmt: skip
    return ops.tensor_split(input, indices_or_sections, 2)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Same as torch.vdot on real vectors: ``dot``."""
    return ops.dot(input, other)


def scalar_tensor(s, dtype=None, **kwargs) -> Tensor:
    """Same as torch.scalar_tensor: a 0-d tensor of the default dtype (or ``dtype``)."""
    return ops.tensor(s, dtype=dtype or _dtype.get_default_dtype())


def take(input: Tensor, index: Tensor) -> Tensor:
    """Same as torch.take: ``input`` read as 1-d at ``index`` (negative indices count from the end)."""
    return input.reshape(-1)[index]


def fill(input: Tensor, value) -> Tensor:
    """Same as torch.fill: a tensor like ``input`` holding ``value``. As torch's, the result depends on ``input``
    with a zero gradient, and a tensor ``value`` gets the sum of the gradient."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fill(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill(): only supports a 0-d value tensor, got {value.ndim}-d")
        return with_derivative(
            "FillBackward1", lambda x, v: v.to(x.dtype).expand(x.shape).clone(),
            lambda g, x, v: (ops.zeros_like(g), g.sum().to(v.dtype)), input, value)  # fmt: skip
    return with_derivative("FillBackward0", lambda x: ops.full_like(x, value), lambda g, x: ops.zeros_like(g),
                               input)  # fmt: skip


def zero_(input: Tensor) -> Tensor:
    """Same as torch.zero_: every element of ``input`` set to 0, in place; returns ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"zero_(): argument 'input' must be a Tensor, not {type(input).__name__}")
    return input.zero_()


def logspace(start, end, steps: int, base: float = 10.0, dtype=None, **kwargs) -> Tensor:
    """Same as torch.logspace: ``base ** linspace(start, end, steps)``, computed in float64."""
    dt = dtype or _dtype.get_default_dtype()
    exps = ops.linspace(float(start), float(end), steps, dtype=_dtype.float64)
    return ops.pow(float(base), exps).to(dt)


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """Same as torch.trapezoid: the trapezoidal rule along ``dim``, with sample points ``x`` or spacing ``dx``."""
    n = y.shape[dim]
    if n == 0:
        return ops.sum(y, dim)
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if isinstance(x, Tensor):
        d = ops.diff(x, dim=dim if x.ndim == y.ndim else -1)
        return ops.sum((left + right) * d, dim) / 2
    step = 1 if x is None and dx is None else (x if dx is None else dx)
    return ops.sum(left + right, dim) * (step / 2)


def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """Same as torch.trapz: ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """Same as torch.cumulative_trapezoid: the running trapezoidal rule along ``dim``."""
    n = y.shape[dim]
    left, right = y.narrow(dim, 0, max(n - 1, 0)), y.narrow(dim, min(1, n), max(n - 1, 0))
    if isinstance(x, Tensor):
        return ops.cumsum((left + right) * ops.diff(x, dim=dim if x.ndim == y.ndim else -1) / 2, dim)
    step = 1 if x is None and dx is None else (x if dx is None else dx)
    return ops.cumsum((left + right) * (step / 2), dim)


# ---- elementwise compositions -------------------------------------------------------------------------------


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """Same as torch.logaddexp2: ``log2(2**a + 2**b)``, from the larger term."""
    return ops.logaddexp(input * math.log(2), other * math.log(2)) / math.log(2)


def deg2rad(input: Tensor) -> Tensor:
    """Same as torch.deg2rad: degrees to radians (integers become the default dtype)."""
    return (
        input * (math.pi / 180)
        if input.dtype.is_floating_point
        else input.to(_dtype.get_default_dtype()) * (math.pi / 180)
    )


def rad2deg(input: Tensor) -> Tensor:
    """Same as torch.rad2deg: radians to degrees (integers become the default dtype)."""
    return (
        input * (180 / math.pi)
        if input.dtype.is_floating_point
        else input.to(_dtype.get_default_dtype()) * (180 / math.pi)
    )


def signbit(input: Tensor) -> Tensor:
    """Same as torch.signbit: true for negative numbers and -0.0."""
    if not input.dtype.is_floating_point:
        return ops.lt(input, 0)
    return ops.logical_or(ops.lt(input, 0), ops.logical_and(ops.eq(input, 0), ops.lt(ops.reciprocal(input), 0)))


def isposinf(input: Tensor) -> Tensor:
    """Same as torch.isposinf."""
    return ops.eq(input, math.inf) if input.dtype.is_floating_point else ops.zeros(input.shape, dtype=_dtype.bool_)


def isneginf(input: Tensor) -> Tensor:
    """Same as torch.isneginf."""
    return ops.eq(input, -math.inf) if input.dtype.is_floating_point else ops.zeros(input.shape, dtype=_dtype.bool_)


def _float(t):
    return t if not isinstance(t, Tensor) or t.dtype.is_floating_point else t.to(_dtype.get_default_dtype())


def copysign(input: Tensor, other) -> Tensor:
    """Same as torch.copysign: ``|input|`` with the sign bit of ``other``."""
    input = _float(input)
    neg = signbit(other) if isinstance(other, Tensor) else math.copysign(1.0, other) < 0
    if isinstance(neg, bool):
        return -ops.abs(input) if neg else ops.abs(input)
    return ops.where(neg, -ops.abs(input), ops.abs(input))


def _tensors(name, *args) -> None:
    if not all(isinstance(a, Tensor) for a in args):
        raise TypeError(f"{name}(): arguments must be Tensors, got {', '.join(type(a).__name__ for a in args)}")


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Same as torch.fmax: the larger, ignoring a NaN."""
    _tensors("fmax", input, other)
    m = ops.maximum(input, other)
    if not m.dtype.is_floating_point:
        return m
    return ops.where(ops.isnan(input), other, ops.where(ops.isnan(other), input, m)).to(m.dtype)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Same as torch.fmin: the smaller, ignoring a NaN."""
    _tensors("fmin", input, other)
    m = ops.minimum(input, other)
    if not m.dtype.is_floating_point:
        return m
    return ops.where(ops.isnan(input), other, ops.where(ops.isnan(other), input, m)).to(m.dtype)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """Same as torch.heaviside: 0 below zero, 1 above, ``values`` at zero."""
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    return ops.where(ops.eq(input, 0), values, ops.gt(input, 0).to(input.dtype)).to(input.dtype)


def sinc(input: Tensor) -> Tensor:
    """Same as torch.sinc: ``sin(pi x) / (pi x)``, 1 at 0."""
    x = _float(input)
    px = x * math.pi
    safe = ops.where(ops.eq(x, 0), ops.ones_like(px), px)
    return ops.where(ops.eq(x, 0), ops.ones_like(px), ops.sin(safe) / safe)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Same as torch.diag_embed: the last dim of ``input`` on diagonal ``offset`` of new dims ``dim1``, ``dim2``."""
    k, off = input.shape[-1], abs(offset)
    n = k + off
    mask = ops.eye(k, n, dtype=_dtype.bool_)
    if offset > 0:
        mask = ops.roll(mask, offset, 1)
    rows = ops.where(mask, input.unsqueeze(-1), ops.zeros((), dtype=input.dtype))  # (..., k, n)
    pad = ops.zeros((*input.shape[:-1], off, n), dtype=input.dtype)
    full = ops.cat([rows, pad] if offset >= 0 else [pad, rows], -2)
    nd = full.ndim
    for d in (dim1, dim2):
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    if dim1 % nd == dim2 % nd:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return ops.movedim(full, (nd - 2, nd - 1), (dim1 % nd, dim2 % nd))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """Same as torch.diagflat: the flattened input on diagonal ``offset`` of a square matrix."""
    return diag_embed(input.reshape(-1), offset)


def result_type(tensor, other) -> _dtype.dtype:
    """Same as torch.result_type: the dtype an arithmetic op on ``tensor`` and ``other`` (tensors or numbers)
    computes in, by torch's promotion (dimensioned tensors, then 0-d tensors, then numbers)."""
    return _result_type(tensor, other)


# ---- the legacy constructors: torch.Tensor(data or sizes), torch.FloatTensor, torch.LongTensor... ----------


def _legacy_new(dtype, args, kwargs) -> Tensor:
    """torch's legacy constructor: no argument (an empty tensor), sizes (``Tensor(2, 3)``: torch leaves the
    memory uninitialized, pyframe gives zeros), or one sequence or array of values (copied)."""
    kwargs = dict(kwargs)
    kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}")
    if not args:
        return ops.empty((0,), dtype=dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0] if args[0].dtype is dtype else args[0].to(dtype)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or (
        len(args) == 1 and isinstance(args[0], tuple) and type(args[0]).__name__ == "Size"
    ):
        return ops.zeros(tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args, dtype=dtype)
    if len(args) == 1:
        return ops.tensor(args[0], dtype=dtype)
    raise TypeError(f"Tensor(): expected sizes or one sequence of values, got {len(args)} arguments")


def _tensor_new(cls, *args, **kwargs):
    if cls is not Tensor:
        raise TypeError("create tensors with pyframe.tensor(), pyframe.zeros() and the other factories")
    return _legacy_new(_dtype.get_default_dtype(), args, kwargs)


class _LegacyType(type):
    """torch.FloatTensor and its kin: calling one builds a tensor of its dtype (as ``Tensor(...)``), and
    ``isinstance(t, FloatTensor)`` asks for a tensor of that dtype."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, **kwargs) -> Tensor:
        return _legacy_new(cls.dtype, args, kwargs)


class FloatTensor(metaclass=_LegacyType):
    """Same as torch.FloatTensor: ``FloatTensor(data)`` or ``FloatTensor(*sizes)`` makes a float32 tensor, and
    ``isinstance(t, FloatTensor)`` asks whether ``t`` is one."""

    dtype = _dtype.float32


class DoubleTensor(metaclass=_LegacyType):
    """Same as torch.DoubleTensor: float64 tensors (see ``FloatTensor``)."""

    dtype = _dtype.float64


class HalfTensor(metaclass=_LegacyType):
    """Same as torch.HalfTensor: float16 tensors (see ``FloatTensor``)."""

    dtype = _dtype.float16


class LongTensor(metaclass=_LegacyType):
    """Same as torch.LongTensor: int64 tensors (see ``FloatTensor``)."""

    dtype = _dtype.int64


class IntTensor(metaclass=_LegacyType):
    """Same as torch.IntTensor: int32 tensors (see ``FloatTensor``)."""

    dtype = _dtype.int32


class BoolTensor(metaclass=_LegacyType):
    """Same as torch.BoolTensor: bool tensors (see ``FloatTensor``)."""

    dtype = _dtype.bool_


class ByteTensor(metaclass=_LegacyType):
    """Same as torch.ByteTensor: uint8 tensors (see ``FloatTensor``)."""

    dtype = _dtype.uint8


class CharTensor(metaclass=_LegacyType):
    """Same as torch.CharTensor: int8 tensors (see ``FloatTensor``)."""

    dtype = _dtype.int8


class ShortTensor(metaclass=_LegacyType):
    """Same as torch.ShortTensor: int16 tensors (see ``FloatTensor``)."""

    dtype = _dtype.int16


class BFloat16Tensor(metaclass=_LegacyType):
    """Same as torch.BFloat16Tensor: bfloat16 tensors (see ``FloatTensor``)."""

    dtype = _dtype.bfloat16


# ---- torch's top-level forms of Tensor methods: torch.clamp_(x, 0, 1) is x.clamp_(0, 1) -------------------------

_METHOD_FORMS = (
    "clamp_", "clamp_min_", "clamp_max_", "clip_", "fill_", "detach_", "frac_", "gcd_", "lcm_", "xlogy_",
    "nan_to_num_", "sinc_", "deg2rad_", "rad2deg_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "negative_", "fix_", "addmv_", "conj_physical_", "is_same_size", "is_signed", "is_conj", "is_neg",
    "is_inference",
)  # fmt: skip


def _method_form(name: str):
    def form(input: Tensor, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    form.__name__ = form.__qualname__ = name
    form.__doc__ = f"Same as torch.{name}: ``input.{name}(...)``."
    return form


for _name in _METHOD_FORMS:
    globals()[_name] = _method_form(_name)
__all__ += list(_METHOD_FORMS)


def matrix_power(input: Tensor, n: int) -> Tensor:
    """Same as torch.matrix_power: ``linalg.matrix_power``."""
    return _linalg.matrix_power(input, n)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """Same as torch.chain_matmul (deprecated there for ``linalg.multi_dot``): the product of the matrices, in
    the cheapest order."""
    if len(matrices) == 1:
        return matrices[0].clone()
    return _linalg.multi_dot(list(matrices))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Same as torch.vander: columns ``x**(N-1), ..., x**0``, or increasing powers with ``increasing``."""
    v = _linalg.vander(x, N=N)
    return v if increasing else v.flip(-1)


def get_device(input: Tensor) -> int:
    """Same as torch.get_device for a CPU tensor: -1."""
    return -1


_warn_always = [False]


def set_warn_always(b: bool) -> None:
    """Same as torch.set_warn_always: recorded; pyframe's warnings use Python's ``warnings`` filters, which
    decide how often each shows."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Same as torch.is_warn_always_enabled."""
    return _warn_always[0]


# ---- in-place forms ---------------------------------------------------------------------------------------------


def _inplace(name: str, fn):
    def inplace(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))

    inplace.__name__ = name
    inplace.__doc__ = f"Same as torch.Tensor.{name}: ``{fn.__name__}`` of the tensor, written into it."
    return inplace


def _conj_physical_(self: Tensor) -> Tensor:
    """Same as torch.Tensor.conj_physical_ on a real tensor: the tensor, unchanged."""
    return self


_INPLACE = {
    "eq_": ops.eq, "ne_": ops.ne, "lt_": ops.lt, "le_": ops.le, "gt_": ops.gt, "ge_": ops.ge,
    "logical_and_": ops.logical_and, "logical_or_": ops.logical_or, "logical_xor_": ops.logical_xor,
    "logical_not_": ops.logical_not, "atan2_": ops.atan2, "sgn_": ops.sgn,
    "floor_divide_": ops.floor_divide, "true_divide_": ops.div, "cumsum_": ops.cumsum, "cumprod_": ops.cumprod,
    "addmv_": ops.addmv, "tril_": ops.tril, "triu_": ops.triu, "deg2rad_": deg2rad,
    "rad2deg_": rad2deg, "copysign_": copysign, "heaviside_": heaviside, "sinc_": sinc,
}  # fmt: skip

_METHODS = {
    "true_divide": ops.div, "deg2rad": deg2rad, "rad2deg": rad2deg, "signbit": signbit, "isposinf": isposinf,
    "isneginf": isneginf, "isreal": isreal, "copysign": copysign, "fmax": fmax, "fmin": fmin, "heaviside": heaviside,
    "logaddexp2": logaddexp2, "vdot": vdot, "take": take, "ravel": ravel, "conj": conj, "conj_physical": conj_physical,
    "conj_physical_": _conj_physical_, "resolve_conj": resolve_conj, "resolve_neg": resolve_neg,
    "split_with_sizes": split_with_sizes, "unsafe_split": unsafe_split, "unsafe_chunk": unsafe_chunk,
    "dsplit": dsplit, "pinverse": pinverse, "cholesky": cholesky, "qr": qr, "svd": svd, "narrow_copy": narrow_copy,
    "sinc": sinc, "diag_embed": diag_embed, "diagflat": diagflat,
}  # fmt: skip


# torch's other names of methods Tensor has (bound last: some of the methods are bound above)
_OTHER_NAMES = {
    "absolute_": "abs_", "arccos_": "acos_", "arccosh_": "acosh_", "arcsin_": "asin_", "arcsinh_": "asinh_",
    "arctan_": "atan_", "arctanh_": "atanh_", "arctan2_": "atan2_", "clip_": "clamp_", "fix_": "trunc_",
    "negative_": "neg_", "multiply": "mul", "multiply_": "mul_", "subtract": "sub", "subtract_": "sub_",
    "greater": "gt", "greater_": "gt_", "greater_equal": "ge", "greater_equal_": "ge_", "less": "lt",
    "less_": "lt_", "less_equal": "le", "less_equal_": "le_", "not_equal": "ne", "not_equal_": "ne_",
    "swapdims": "transpose",
}  # fmt: skip


def bind() -> None:
    """The Tensor methods of the functions above (those Tensor does not have already)."""
    for name, fn in {**_METHODS, **{k: _inplace(k, v) for k, v in _INPLACE.items()}}.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    for alias, name in _OTHER_NAMES.items():
        setattr(Tensor, alias, getattr(Tensor, name))
    Tensor.__new__ = _tensor_new  # torch.Tensor(data) / torch.Tensor(*sizes); pyframe makes its own without it
