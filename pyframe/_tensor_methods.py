"""Tensor's math methods and operators: the ops themselves, bound once. ``x.exp()`` is
``pyframe.exp(x)``, and ``a + b`` is ``pyframe.add(a, b)``, with no wrapper frame."""

from __future__ import annotations

from pyframe import _device, autograd, linalg, ops
from pyframe import _dtype as _dt
from pyframe.linalg.lu import torch_lu, torch_lu_solve
from pyframe.linalg.solve import cholesky_inverse, cholesky_solve, triangular_solve
from pyframe.ops import (
    bitwise,
    compare,
    creation,
    index,
    inplace_view,
    join,
    pointwise,
    products,
    random,
    rearrange,
    reduce,
    scan,
    scattering,
    sorting,
    sparse,
    stats,
    view,
)  # fmt: skip
from pyframe.ops import elementwise as ew
from pyframe.ops import special as special_ops
from pyframe.ops.histogram import bincount, histc, histogram
from pyframe.ops.sparse_csr import to_sparse_csr
from pyframe.tensor import Tensor

# torch binds these as methods too; tensordot, cdist and kron are functions only
_PRODUCT_METHODS = ("outer", "ger", "mv", "addmm", "addmv", "addr", "baddbmm", "addbmm", "inner", "kron", "cross",
                    "diag", "diagonal", "trace")  # fmt: skip


_LAYOUT_METHODS = ("movedim", "moveaxis", "tensor_split", "hsplit", "vsplit", "rot90", "diff", "take_along_dim",
                   "masked_select", "scatter", "index_fill", "index_copy")  # fmt: skip
_STATS_METHODS = ("count_nonzero", "nansum", "nanmean", "median", "nanmedian", "aminmax", "is_floating_point",
                  "is_nonzero")  # fmt: skip


def _inplace(fn):
    """``x.fn_(...)``: ``fn(x, ...)`` written into ``x``."""

    def op(self, *args, **kwargs):
        return ew.write_back(self, fn, *args, **kwargs)

    op.__name__ = op.__qualname__ = fn.__name__ + "_"
    op.__doc__ = f"Same as torch.Tensor.{fn.__name__}_."
    return op


def _swap(fn):
    def reflected(self, other):
        return fn(other, self)

    reflected.__name__ = f"r{fn.__name__}"
    return reflected


def _cast(dt):
    def cast(self, memory_format=None):  # torch's memory_format: every pyframe result is contiguous
        return self.to(dt)

    return cast


def bind() -> None:
    methods = {
        **ew.unary_ops, **ew.binary_ops, **ew.inplace_ops,
        **{name: getattr(pointwise, name) for name in pointwise.__all__},
        **{name: getattr(products, name) for name in _PRODUCT_METHODS},
        "addcmul_": _inplace(pointwise.addcmul), "addcdiv_": _inplace(pointwise.addcdiv),
        "lerp_": _inplace(pointwise.lerp), "clamp_min_": _inplace(pointwise.clamp_min),
        "clamp_max_": _inplace(pointwise.clamp_max), "nan_to_num_": _inplace(pointwise.nan_to_num),
        "addmm_": _inplace(products.addmm), "baddbmm_": _inplace(products.baddbmm),
        "addbmm_": _addbmm_, "addr_": _inplace(products.addr), "fmod_": _inplace(pointwise.fmod),
        "frac_": _inplace(pointwise.frac), "hypot_": _inplace(pointwise.hypot), "xlogy_": _inplace(pointwise.xlogy),
        "div_": pointwise.div_, "divide_": pointwise.div_, "float_power_": pointwise.float_power_,
        **{name: getattr(ops, name) for name in _LAYOUT_METHODS},
        **{name: getattr(stats, name) for name in _STATS_METHODS},
        "scatter_": index.scatter_, "index_fill_": index.index_fill_, "index_copy_": index.index_copy_,
        "nelement": lambda self: self.numel(), "ndimension": lambda self: self.ndim,
        "ravel": lambda self: self.reshape(-1),
        "clamp": ew.clamp, "clip": ew.clamp, "clamp_": ew.clamp_, "where": lambda self, c, o: ew.where(c, self, o),
        "masked_fill": ew.masked_fill, "masked_fill_": ew.masked_fill_, "triu": index.triu, "tril": index.tril,
        "copy_": ew.copy_, "fill_": ew.fill_, "zero_": ew.zero_,
        "sum": reduce.sum, "mean": reduce.mean, "prod": reduce.prod, "var": reduce.var, "std": reduce.std,
        "max": reduce.max, "min": reduce.min, "amax": reduce.amax, "amin": reduce.amin, "argmax": reduce.argmax,
        "argmin": reduce.argmin, "any": reduce.any, "all": reduce.all, "norm": reduce.norm,
        "logsumexp": reduce.logsumexp, "softmax": reduce.softmax, "log_softmax": reduce.log_softmax,
        "matmul": ops.matmul, "mm": ops.mm, "bmm": ops.bmm, "dot": ops.dot,
        "transpose": view.transpose, "swapaxes": view.transpose, "permute": view.permute, "t": view.t,
        "unsqueeze": view.unsqueeze, "squeeze": view.squeeze, "expand": view.expand,
        "expand_as": view.expand_as, "broadcast_to": view.broadcast_to, "narrow": view.narrow,
        "view": view._view, "reshape": view.reshape, "select": view.select, "contiguous": view.contiguous,
        "clone": view.clone, "to": view.to,
        "detach": view.detach, "split": join.split, "chunk": join.chunk, "unbind": join.unbind,
        "index_select": index.index_select, "index_add_": index.index_add_, "gather": index.gather,
        "scatter_add": index.scatter_add, "scatter_add_": index.scatter_add_, "nonzero": index.nonzero,
        "uniform_": random.uniform_, "normal_": random.normal_,
        "exponential_": random.exponential_, "cauchy_": random.cauchy_, "log_normal_": random.log_normal_,
        "geometric_": random.geometric_,
        "__getitem__": index.getitem, "__setitem__": index.setitem,
        # commutative: 2 * b is mul(b, 2), as torch's __rmul__, so grad_fn.next_functions lists b first
        "__add__": ew.plain_add, "__radd__": ew.plain_add, "__iadd__": ew.inplace_ops["add_"],
        "__sub__": ew.plain_sub, "__rsub__": _swap(ew.plain_sub), "__isub__": ew.inplace_ops["sub_"],
        "__mul__": ew.mul, "__rmul__": ew.mul, "__imul__": ew.inplace_ops["mul_"],
        "__truediv__": ew.div, "__rtruediv__": _swap(ew.div), "__itruediv__": ew.inplace_ops["div_"],
        "__rdiv__": _swap(ew.div), "__div__": ew.div,
        "__floordiv__": ew.floor_divide, "__rfloordiv__": _swap(ew.floor_divide),
        "__mod__": ew.remainder, "__rmod__": _swap(ew.remainder),
        "__pow__": ew.pow, "__rpow__": _swap(ew.pow), "__ipow__": ew.inplace_ops["pow_"],
        "__matmul__": ops.matmul, "__rmatmul__": _swap(ops.matmul),
        "__neg__": ew.neg, "__abs__": ew.abs, "__pos__": lambda self: self,
        **bitwise.OPERATORS, **bitwise.INPLACE,
        **{name: getattr(bitwise, name) for name in bitwise.__all__},
        "__eq__": _equality(ew.eq), "__ne__": _equality(ew.ne), "__lt__": ew.lt, "__le__": ew.le,
        "__gt__": ew.gt, "__ge__": ew.ge,
        "float": _cast(_dt.float32), "double": _cast(_dt.float64), "half": _cast(_dt.float16),
        "long": _cast(_dt.int64), "int": _cast(_dt.int32), "bool": _cast(_dt.bool_),
        "byte": _cast(_dt.uint8), "char": _cast(_dt.int8), "short": _cast(_dt.int16),
        "bfloat16": _cast(_dt.bfloat16),
        "type_as": lambda self, other: self.to(other.dtype), "type": _type, "apply_": _apply_,
        "requires_grad_": _requires_grad_,
        **ew.inplace_unary_ops,
        "round_": pointwise.round_,
        **{name: getattr(scattering, name) for name in scattering.__all__ if name != "as_strided_copy"},
        "scatter_reduce_": scattering.scatter_reduce_, "index_reduce_": scattering.index_reduce_,
        "put_": scattering.put_, "masked_scatter_": scattering.masked_scatter_,
        "unfold": scattering.unfold,
        "sort": sorting.sort, "argsort": sorting.argsort, "msort": sorting.msort, "topk": sorting.topk,
        "kthvalue": sorting.kthvalue, "unique": sorting.unique, "cumsum": scan.cumsum, "cumprod": scan.cumprod,
        "logcumsumexp": scan.logcumsumexp, "cummax": scan.cummax, "cummin": scan.cummin, "mode": sorting.mode,
        "unique_consecutive": sorting.unique_consecutive,
        "bincount": bincount, "histc": histc, "histogram": histogram,
        "renorm": reduce.renorm, "renorm_": reduce.renorm_, "sum_to_size": reduce.sum_to_size,
        "quantile": stats.quantile, "nanquantile": stats.nanquantile, "cov": stats.cov, "corrcoef": stats.corrcoef,
        "argwhere": index.argwhere, "nonzero_static": index.nonzero_static,
        "flip": _varargs(rearrange.flip), "fliplr": rearrange.fliplr, "flipud": rearrange.flipud,
        "roll": rearrange.roll, "repeat": rearrange.repeat, "repeat_interleave": rearrange.repeat_interleave,
        "tile": _varargs(rearrange.tile), "unflatten": rearrange.unflatten,
        "isclose": compare.isclose, "allclose": compare.allclose, "equal": compare.equal, "dist": compare.dist,
        "multinomial": random.multinomial, "bernoulli": random.bernoulli, "bernoulli_": random.bernoulli_,
        "new_empty": creation.new_empty, "new_zeros": creation.new_zeros, "new_ones": creation.new_ones,
        "new_full": creation.new_full, "new_tensor": creation.new_tensor,
        "new_empty_strided": creation.new_empty_strided,
        "cpu": lambda self, memory_format=None: self, "cuda": _cuda, "get_device": lambda self: -1,
        "pin_memory": lambda self, device=None: self, "is_pinned": lambda self, device=None: False,
    }  # fmt: skip
    # the in-place shape ops: the tensor takes over a view's metadata (pyframe/ops/inplace_view.py)
    for name in ("unsqueeze_", "squeeze_", "transpose_", "t_", "swapdims_", "resize_", "resize_as_", "as_strided_"):
        methods[name] = getattr(inplace_view, name)
    methods["swapaxes_"] = inplace_view.swapdims_
    methods.update(to_sparse=sparse.to_sparse, to_dense=_to_dense)
    methods.update(to_sparse_csr=to_sparse_csr, sparse_mask=sparse.sparse_mask)
    # torch's linear-algebra methods (pyframe.linalg)
    methods.update(special_ops.methods)  # polygamma, mvlgamma, frexp, ldexp, nextafter, igamma(c)
    methods.update(
        det=linalg.det, inverse=linalg.inv, matrix_exp=linalg.matrix_exp, slogdet=linalg.slogdet, logdet=linalg.logdet
    )
    methods.update(
        geqrf=linalg.geqrf, ormqr=linalg.ormqr, lu=torch_lu, lu_solve=torch_lu_solve, cholesky_solve=cholesky_solve,
        cholesky_inverse=cholesky_inverse,
        triangular_solve=lambda self, A, upper=True, transpose=False, unitriangular=False: triangular_solve(
            self, A, upper, transpose, unitriangular),
    )  # fmt: skip
    methods.update(
        detach_=_detach_, fill_diagonal_=_fill_diagonal_, random_=_random_, map_=_map_, map2_=_map2_,
        is_same_size=lambda self, other: self.shape == other.shape, is_signed=lambda self: self.dtype.is_signed,
        is_complex=lambda self: False, is_conj=lambda self: False, is_neg=lambda self: False,
        is_inference=lambda self: False,
        matrix_power=linalg.matrix_power, dim_order=_dim_order,
        cfloat=_no_complex("cfloat"), cdouble=_no_complex("cdouble"), chalf=_no_complex("chalf"),
    )  # fmt: skip
    for name, fn in methods.items():
        if name in _LAMBDA_DOCS:
            fn.__doc__ = _LAMBDA_DOCS[name]
        setattr(Tensor, name, fn)
    Tensor.itemsize = property(
        lambda self: self.dtype.itemsize, doc="Same as torch.Tensor.itemsize: bytes per element."
    )
    Tensor.nbytes = property(
        lambda self: self._numel * self.dtype.itemsize, doc="Same as torch.Tensor.nbytes: numel * itemsize."
    )
    Tensor.real = property(_real, doc="Same as torch.Tensor.real: for a real tensor, the tensor itself.")
    Tensor.imag = property(
        _imag, doc="Same as torch.Tensor.imag: real tensors have none (pyframe has no complex dtypes)."
    )
    Tensor.backward = autograd.tensor_backward
    Tensor.register_hook = autograd.register_hook
    Tensor.register_post_accumulate_grad_hook = autograd.register_post_accumulate_grad_hook
    Tensor.retain_grad = autograd.retain_grad
    Tensor.retains_grad = property(
        lambda self: self._retains_grad, doc="Same as torch.Tensor.retains_grad: whether retain_grad() was called."
    )
    Tensor.is_cuda = property(lambda self: False, doc="Always False: pyframe runs on the CPU.")
    for name in ("is_xpu", "is_mps", "is_mtia", "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mkldnn",
                 "is_quantized", "is_nested"):  # fmt: skip
        setattr(
            Tensor,
            name,
            property(lambda self: False, doc=f"Same as torch.Tensor.{name}: False on pyframe's CPU tensors."),
        )
    Tensor.is_cpu = property(lambda self: True, doc="Always True: pyframe runs on the CPU.")
    Tensor.layout = _device.strided
    Tensor.T = property(view.reverse_dims)
    Tensor.mT = property(
        lambda self: view.transpose(self, -2, -1), doc="Same as torch.Tensor.mT: the last two dims swapped (a view)."
    )
    Tensor.H = property(
        _conj_transpose,
        doc="Same as torch.Tensor.H: the (conjugate) transpose of a matrix; a 0-d "
        "tensor is itself, other ranks raise (``mH`` transposes the last two dims of any batch).",
    )
    Tensor.mH = property(
        lambda self: view.transpose(self, -2, -1), doc="Same as torch.Tensor.mH: ``mT`` (real tensors only)."
    )


# the docstrings of the one-line methods bound above as lambdas
_LAMBDA_DOCS = {
    "is_same_size": "Same as torch.Tensor.is_same_size: whether ``other`` has this tensor's shape.",
    "is_signed": "Same as torch.Tensor.is_signed: whether the dtype holds negative numbers.",
    "is_complex": "Same as torch.Tensor.is_complex: always False (pyframe has no complex dtypes).",
    "is_conj": "Same as torch.Tensor.is_conj: always False (no conjugate views of real tensors).",
    "is_neg": "Same as torch.Tensor.is_neg: always False (no lazily negated views).",
    "is_inference": "Same as torch.Tensor.is_inference: False (inference mode makes ordinary tensors here).",
    "triangular_solve": "Same as torch.Tensor.triangular_solve: ``pyframe.triangular_solve(self, A, ...)``.",
    "nelement": "Same as torch.Tensor.nelement: the number of elements (``numel``).",
    "ndimension": "Same as torch.Tensor.ndimension: the number of dims (``ndim``).",
    "ravel": "Same as torch.Tensor.ravel: ``self.reshape(-1)`` (a view when the strides allow it).",
    "where": "Same as torch.Tensor.where: ``pyframe.where(condition, self, other)``.",
    "float": "Same as torch.Tensor.float: ``self.to(pyframe.float32)``.",
    "double": "Same as torch.Tensor.double: ``self.to(pyframe.float64)``.",
    "half": "Same as torch.Tensor.half: ``self.to(pyframe.float16)``.",
    "long": "Same as torch.Tensor.long: ``self.to(pyframe.int64)``.",
    "int": "Same as torch.Tensor.int: ``self.to(pyframe.int32)``.",
    "bool": "Same as torch.Tensor.bool: ``self.to(pyframe.bool)``.",
    "byte": "Same as torch.Tensor.byte: ``self.to(pyframe.uint8)``.",
    "char": "Same as torch.Tensor.char: ``self.to(pyframe.int8)``.",
    "short": "Same as torch.Tensor.short: ``self.to(pyframe.int16)``.",
    "bfloat16": "Same as torch.Tensor.bfloat16: ``self.to(pyframe.bfloat16)``.",
    "type_as": "Same as torch.Tensor.type_as: ``self.to(other.dtype)``.",
    "cpu": "Same as torch.Tensor.cpu: the tensor itself (it is in CPU memory already).",
    "get_device": "Same as torch.Tensor.get_device for a CPU tensor: -1.",
    "pin_memory": "The tensor itself: pinned memory is a CUDA notion.",
    "is_pinned": "Always False: pinned memory is a CUDA notion.",
}


def _addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """Same as torch.Tensor.addbmm_: ``addbmm`` written into the tensor. As torch's (whose kernel writes through
    an ``out=`` that may be resized), a tensor of a shape that broadcasts to the result (``()`` or ``(1,)``) is
    resized to the result's shape first."""
    out = products.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)
    if self.shape != out.shape:
        inplace_view.resize_(self, out.shape)
    return ew.copy_(self, out)


def _conj_transpose(self: Tensor) -> Tensor:
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got a {self.ndim}-D tensor; use "
                           f"mH to transpose the last two dims of a batch")  # fmt: skip
    return view.t(self)


def _to_dense(self, dtype=None, *, masked_grad=None):
    """Same as torch.Tensor.to_dense: a dense tensor is returned as is (converted to ``dtype`` if given)."""
    return self if dtype is None else self.to(dtype)


def _varargs(fn):
    """``x.flip(0, 1)`` as well as ``x.flip((0, 1))``: torch's methods take dims either way."""

    def method(self, *dims, **kwargs):
        if not dims:  # dims by keyword, or none (the function says what is missing)
            return fn(self, **kwargs)
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = dims[0]  # one sequence, even an empty one: x.tile(()) is x.tile with no repeats
        return fn(self, dims, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _cuda(self: Tensor, device=None, non_blocking: bool = False) -> Tensor:
    """Raises pyframe's device error: there is no GPU."""
    _device.device("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)
    return self


def _equality(fn):
    """``==``/``!=`` against a non-number defers to Python (``x == None`` is False), as torch."""

    def op(self, other):
        if not isinstance(other, (Tensor, int, float)):
            return NotImplemented
        return fn(self, other)

    op.__name__ = f"__{fn.__name__}__"
    return op


def _requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    """Same as torch.Tensor.requires_grad_: turns recording on (floating tensors only) or off (leaves only); returns
    the tensor.
    """
    if requires_grad and not self.dtype.is_floating_point:
        raise RuntimeError(f"only tensors of floating point dtype can require gradients, got {self.dtype.name}")
    if not requires_grad and self.grad_fn is not None:
        raise RuntimeError("you can only change requires_grad flags of leaf variables.")
    self.requires_grad = requires_grad
    return self


_TYPE_NAMES = {
    _dt.float32: "FloatTensor", _dt.float64: "DoubleTensor", _dt.float16: "HalfTensor",
    _dt.int64: "LongTensor", _dt.int32: "IntTensor", _dt.bool_: "BoolTensor",
    _dt.uint8: "ByteTensor", _dt.int8: "CharTensor", _dt.int16: "ShortTensor", _dt.bfloat16: "BFloat16Tensor",
}  # fmt: skip
_BY_TYPE_NAME = {name: dt for dt, name in _TYPE_NAMES.items()}


def _type(self: Tensor, dtype=None, non_blocking: bool = False):
    """Same as torch.Tensor.type: no argument gives the type's name (``"pyframe.FloatTensor"``);
    a dtype, a legacy type (``pyframe.LongTensor``) or a type name (``"torch.LongTensor"`` too, for ported code)
    gives a cast."""
    if dtype is None:
        return "pyframe." + _TYPE_NAMES[self.dtype]
    if isinstance(dtype, str) and dtype.rpartition(".")[2] in _BY_TYPE_NAME:
        dtype = _BY_TYPE_NAME[dtype.rpartition(".")[2]]
    elif dtype is Tensor:  # x.type(torch.Tensor): the default tensor type
        dtype = _dt.get_default_dtype()
    elif isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), _dt.dtype):
        dtype = dtype.dtype  # the legacy types: x.type(torch.FloatTensor)
    return self.to(dtype)


def _apply_(self: Tensor, callable):  # noqa: A002 - torch's name
    """Same as torch.Tensor.apply_: ``callable`` (a Python function of one number) replaces each element in
    place. It runs in Python once per element, so it is slow, as torch warns; it does not record gradients."""
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("apply_ on a leaf tensor that requires grad: a leaf's values cannot change in place")
    if self.is_complex():
        raise TypeError("apply_ is defined for real tensors (as torch's)")
    values = [callable(v) for v in self.reshape(-1).tolist()]
    with autograd.no_grad():
        self.copy_(ops.tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def _detach_(self: Tensor) -> Tensor:
    """Same as torch.Tensor.detach_: the tensor itself becomes a leaf that does not require grad."""
    if self._base is not None and self.requires_grad:
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    self.grad_fn = self._grad_edge = None
    self._requires_grad = False
    self._output_nr = 0
    return self


def _fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Same as torch.Tensor.fill_diagonal_: the main diagonal (every dim equal past 2-D) set to ``fill_value``;
    ``wrap`` continues the diagonal of a tall matrix below row N, every N + 1 rows, as torch (and NumPy)."""
    if self.ndim < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must be larger than 1, got {self.ndim}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, got {tuple(self.shape)}")
    rows, cols = self.shape[0], self.shape[1]
    if self.ndim == 2 and wrap and rows > cols + 1:
        flat = self.contiguous()
        n = (rows * cols + cols) // (cols + 1)  # positions k * (cols + 1) inside rows * cols
        flat.as_strided((n,), (cols + 1,)).fill_(fill_value)
        if flat is not self:
            self.copy_(flat)
        return self
    n = min(self.shape)
    self.as_strided((n,), (sum(self.stride()),), self.storage_offset()).fill_(fill_value)
    return self


def _random_(self: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """Same as torch.Tensor.random_: ``random_(to)`` integers in [0, to), ``random_(from, to)`` in [from, to);
    without bounds [0, 2**mantissa] for floating dtypes (every integer the dtype holds exactly) and [0, max) for
    integer dtypes."""
    low, high = kwargs.pop("from", 0), kwargs.pop("to", None)
    if kwargs:
        raise TypeError(f"random_(): unexpected keyword arguments {sorted(kwargs)}")
    if len(args) == 1:
        high = args[0]
    elif len(args) == 2:
        low, high = args
    elif args:
        raise TypeError(f"random_(): expected at most 2 bounds, got {len(args)}")
    if high is None:
        if self.dtype.is_floating_point:
            high = 2 ** {_dt.float16: 11, _dt.bfloat16: 8, _dt.float32: 24}.get(self.dtype, 53) + 1
        elif self.dtype is _dt.bool_:
            high = 2
        else:
            high = _dt.iinfo(self.dtype).max
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    draw = random.randint(int(low), int(high), tuple(self.shape), dtype=_dt.int64, generator=generator)
    with autograd.no_grad():
        return self.copy_(draw)


def _map_(self: Tensor, tensor: Tensor, callable) -> Tensor:  # noqa: A002 - torch's name
    """Same as torch.Tensor.map_: ``self[i] = callable(self[i], tensor[i])`` for each element (``tensor``
    broadcast to this shape), in Python, so slow, as torch's."""
    other = tensor.expand(self.shape).reshape(-1).tolist()
    values = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other, strict=True)]
    with autograd.no_grad():
        return self.copy_(ops.tensor(values, dtype=self.dtype).reshape(self.shape))


def _map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:  # noqa: A002 - torch's name
    """Same as torch.Tensor.map2_: ``self[i] = callable(self[i], x[i], y[i])``, ``x`` and ``y`` broadcast."""
    xs, ys = (t.expand(self.shape).reshape(-1).tolist() for t in (x, y))
    values = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys, strict=True)]
    with autograd.no_grad():
        return self.copy_(ops.tensor(values, dtype=self.dtype).reshape(self.shape))


def _dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """Same as torch.Tensor.dim_order: the dims from outermost to innermost in memory (largest stride first)."""
    return tuple(sorted(range(self.ndim), key=lambda d: -self.stride(d)))


def _no_complex(name: str):
    def method(self: Tensor, memory_format=None):
        raise TypeError(f"Tensor.{name}(): pyframe has no complex dtypes")

    method.__doc__ = f"Same call as torch.Tensor.{name}; raises TypeError: pyframe has no complex dtypes."
    return method


def _real(self: Tensor) -> Tensor:
    return self


def _imag(self: Tensor) -> Tensor:
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
