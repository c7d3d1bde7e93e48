"""Autocasting: ``autocast`` runs the ops of torch's CPU lists in a lower precision or in float32.

Inside ``autocast("cpu", dtype=bfloat16)`` (or float16) the ops torch lists as "lower precision" (``matmul``,
``mm``, ``bmm``, ``baddbmm``, ``addmm``, ``addbmm``, ``linear``, the convolutions, ``prelu``,
``scaled_dot_product_attention``, ``linalg.vecdot``) cast their floating inputs to that dtype, the ops torch lists
as "float32" (the losses, ``prod``, ``quantile``, ``cdist``, ``trace``, the linear-algebra decompositions and
solvers, 3-d pooling, reflection and replication padding, ``grid_sample``, the real FFTs) cast them to float32,
and ``cat``/``stack``/``index_copy`` cast mixed inputs to the widest. float64 tensors, integer tensors and calls
with ``out=`` or ``dtype=`` are left alone; every other op runs in the dtype of its inputs, as torch's. A cast
is an ordinary differentiable op, so the gradients of float32 parameters stay float32; within one autocast
region a parameter (a float32 leaf requiring grad) is cast once and the copy reused.

pyframe has no dispatcher: while an autocast region is open (in any thread), each listed function is replaced,
wherever a module, a layer class or ``Tensor`` holds it, by a wrapper that reads the calling thread's autocast
state; the last region to close puts the functions back, so outside autocast nothing differs (fx and the ONNX
exporter know ops by identity). Opening the outermost region scans the loaded modules once.
Inside a listed op, the ops it calls are not autocast again (torch excludes its autocast key there too).
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

from pyframe import _dtype
from pyframe.tensor import Tensor

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_CONVS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
_LOWER = {
    "pyframe.ops.products": ("matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm"),
    "pyframe.linalg.compose": ("vecdot",),
    "pyframe.nn.functional.linear": ("linear",),
    "pyframe.nn.functional.conv": _CONVS,
    "pyframe.nn.functional.activation": ("prelu",),
    "pyframe.nn.functional.attention": ("scaled_dot_product_attention",),
}
_FP32 = {
    "pyframe.ops.reduce": ("prod",),
    "pyframe.ops.stats": ("quantile", "nanquantile"),
    "pyframe.ops.products": ("cdist", "trace"),
    "pyframe.ops.fft": ("irfft", "irfft2", "irfftn", "hfft"),
    "pyframe._aliases": ("cholesky", "pinverse", "qr", "svd"),
    "pyframe.linalg.solve": ("solve", "inv", "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve"),
    "pyframe.linalg.decomp": ("qr", "geqrf", "householder_product", "ormqr", "eigh", "eigvalsh", "svd", "svdvals"),
    "pyframe.linalg.lu": ("torch_lu", "torch_lu_solve"),
    "pyframe.linalg.derived": ("matrix_rank", "lstsq", "cond"),
    "pyframe.linalg.compose": ("tensorinv", "tensorsolve", "inv_ex", "cholesky_ex"),
    "pyframe.nn.functional.loss": (
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "nll_loss",
        "cross_entropy",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "kl_div",
        "poisson_nll_loss",
        "soft_margin_loss",
        "margin_ranking_loss",
        "hinge_embedding_loss",
        "cosine_embedding_loss",
        "triplet_margin_loss",
        "multi_margin_loss",
        "multilabel_margin_loss",
        "ctc_loss",
    ),  # fmt: skip
    "pyframe.nn.functional.pooling": (
        "avg_pool3d",
        "max_pool3d",
        "adaptive_avg_pool3d",
        "adaptive_max_pool3d",
        "max_unpool2d",
        "max_unpool3d",
        "fractional_max_pool2d",
        "fractional_max_pool3d",
    ),  # fmt: skip
    "pyframe.nn.functional.sample": ("grid_sample",),
    "pyframe.nn.functional.padding": ("pad",),
}
_PROMOTE = {"pyframe.ops.join": ("cat", "stack"), "pyframe.ops.index": ("index_copy",)}


def _pad_in_float32(args: tuple, kwargs: dict) -> bool:
    """F.pad reaches torch's float32 list only as reflection_pad1d/2d (2-d to 4-d input) and replication_pad."""
    mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
    x = args[0] if args else kwargs.get("input")
    return mode == "replicate" or (mode == "reflect" and isinstance(x, Tensor) and 2 <= x.ndim <= 4)


_CONDITIONS: dict[tuple, Callable] = {("pyframe.nn.functional.padding", "pad"): _pad_in_float32}


class _State(threading.local):
    """The calling thread's autocast state: torch's is per thread and per device type."""

    def __init__(self) -> None:
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.inside_op = False  # within a listed op: the ops it calls are not autocast again
        self.cache: dict = {}


_state = _State()
_install_lock = threading.Lock()
_regions = 0  # enabled CPU autocast regions open now, in all threads: the wrappers are in place while > 0
_swapped: list = []  # (namespace dict or class, key, original value) of every swap, to put back


def _cast_to(x: Any, dt) -> Any:
    """``x`` cast to ``dt`` when it is an eligible tensor (floating, not float64); lists and tuples element-wise."""
    if isinstance(x, Tensor):
        if not x.dtype.is_floating_point or x.dtype is _dtype.float64 or x.dtype is dt:
            return x
        cacheable = (dt is _state.dtype["cpu"] and x.dtype is _dtype.float32 and x.requires_grad and x.grad_fn is None
                     and _state.cache_enabled)  # fmt: skip
        if cacheable:
            hit = _state.cache.get(id(x))
            if hit is not None and hit[0] is x:
                return hit[1]
            out = x.to(dt)
            _state.cache[id(x)] = (x, out)
            return out
        return x.to(dt)
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        return type(x)(_cast_to(v, dt) for v in x)
    return x


def _widest(args: tuple, kwargs: dict):
    """The widest floating dtype among the tensors of a promote-list call, or None."""
    best = None
    for v in (*args, *kwargs.values()):
        for t in v if isinstance(v, (list, tuple)) else (v,):
            eligible = isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not _dtype.float64
            if eligible and (best is None or t.dtype.itemsize > best.itemsize):
                best = t.dtype
    return best


def _wrap(fn: Callable, policy: str, condition: Callable | None) -> Callable:
    @functools.wraps(fn)
    def autocast_op(*args, **kwargs):
        st = _state
        if not st.enabled["cpu"] or st.inside_op or kwargs.get("out") is not None or kwargs.get("dtype") is not None:
            return fn(*args, **kwargs)
        if condition is not None and not condition(args, kwargs):
            return fn(*args, **kwargs)
        dt = st.dtype["cpu"] if policy == "lower" else _dtype.float32 if policy == "fp32" else _widest(args, kwargs)
        if dt is not None:
            args = tuple(_cast_to(a, dt) for a in args)
            kwargs = {k: _cast_to(v, dt) for k, v in kwargs.items()}
        st.inside_op = True
        try:
            return fn(*args, **kwargs)
        finally:
            st.inside_op = False

    autocast_op._autocast_original = fn
    return autocast_op


def _acquire() -> None:
    """An enabled CPU region opens: the first one puts the wrappers in place."""
    global _regions
    with _install_lock:
        _regions += 1
        if _regions == 1:
            _install()


def _release() -> None:
    """An enabled CPU region closes: the last one puts the original functions back, so that outside autocast
    every op is the function it was (fx and the ONNX exporter know ops by identity) and costs nothing more."""
    global _regions
    with _install_lock:
        _regions -= 1
        if _regions == 0:
            for where, key, value in reversed(_swapped):
                if isinstance(where, dict):
                    where[key] = value
                else:
                    setattr(where, key, value)
            _swapped.clear()


def _install() -> None:
    """Replace every listed function, wherever a loaded module or ``Tensor`` holds it, by its wrapper."""
    swaps: dict[int, tuple] = {}
    for policy, table in (("lower", _LOWER), ("fp32", _FP32), ("promote", _PROMOTE)):
        for mod_name, names in table.items():
            mod = importlib.import_module(mod_name)
            for name in names:
                fn = getattr(mod, name)
                if id(fn) not in swaps:
                    swaps[id(fn)] = (fn, _wrap(fn, policy, _CONDITIONS.get((mod_name, name))))
    classes = {id(Tensor): Tensor}
    for mod_name, mod in list(sys.modules.items()):
        namespace = getattr(mod, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        ours = mod_name == "pyframe" or mod_name.startswith("pyframe.")
        for key, value in list(namespace.items()):
            hit = swaps.get(id(value))
            if hit is not None and hit[0] is value:
                _swapped.append((namespace, key, value))
                namespace[key] = hit[1]
            elif ours and isinstance(value, type) and vars(value).get("__module__") == mod_name:
                classes[id(value)] = value
    for cls in classes.values():  # methods bound to a listed function, and layers' ``_fn = staticmethod(F.x)``
        for key, value in list(vars(cls).items()):
            fn = value.__func__ if isinstance(value, staticmethod) else value
            hit = swaps.get(id(fn))
            if hit is not None and hit[0] is fn:
                _swapped.append((cls, key, value))
                setattr(cls, key, staticmethod(hit[1]) if isinstance(value, staticmethod) else hit[1])


def is_autocast_available(device_type: str) -> bool:
    """Same as torch.amp.is_autocast_available: whether autocast knows ``device_type`` ("cpu" and "cuda"; CUDA
    autocast disables itself with a warning, as torch's on a machine without a GPU)."""
    return device_type in ("cpu", "cuda")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Same as torch.is_autocast_enabled: whether autocast is on for ``device_type`` in this thread (without an
    argument, torch's legacy meaning: CUDA's, always False here)."""
    return _state.enabled.get("cuda" if device_type is None else device_type, False)


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """Same as torch.get_autocast_dtype: the dtype autocast casts to on ``device_type`` (bfloat16 for the CPU by
    default, float16 for CUDA)."""
    if device_type not in _state.dtype:
        raise RuntimeError(f"unsupported autocast device_type '{device_type}'")
    return _state.dtype[device_type]


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Same as torch.set_autocast_enabled: turns autocast on or off for ``device_type`` in this thread (outside
    an ``autocast`` region, turning CPU autocast on keeps the wrappers in place until it is turned off)."""
    was = _state.enabled.get(device_type, False)
    _state.enabled[device_type] = bool(enabled)
    if device_type == "cpu" and bool(enabled) != was:
        _acquire() if enabled else _release()


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    """Same as torch.set_autocast_dtype: the dtype autocast casts to on ``device_type``."""
    _state.dtype[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    """Same as torch.is_autocast_cache_enabled: whether casts of parameters are reused within a region."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Same as torch.set_autocast_cache_enabled."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Same as torch.clear_autocast_cache: forget the cached casts of parameters."""
    _state.cache.clear()


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """torch's deprecated spelling of ``is_autocast_enabled("cpu")`` (with its DeprecationWarning)."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """torch's deprecated spelling of ``set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> _dtype.dtype:
    """torch's deprecated spelling of ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: _dtype.dtype) -> None:
    """torch's deprecated spelling of ``set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> _dtype.dtype:
    """torch's deprecated spelling of ``get_autocast_dtype("cuda")`` (float16 unless set)."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


class autocast:  # noqa: N801 - torch's name
    """Same as torch.autocast (torch.amp.autocast): a context manager (or decorator) inside which the ops of
    torch's CPU lists run in ``dtype`` (bfloat16 by default, or float16) or in float32.

    Args:
        device_type: "cpu", or "cuda" (on which, as torch without a GPU, autocast warns and stays off).
        dtype: the lower-precision dtype; a dtype other than bfloat16/float16 warns and disables autocast,
            as torch.
        enabled: False makes the region an autocast-free one (also inside another autocast).
        cache_enabled: reuse the casts of parameters within the outermost region (default: the current
            setting, True).

    Raises:
        ValueError: ``device_type`` is not a string.
        RuntimeError: ``device_type`` names a device autocast does not know.
    """

    def __init__(self, device_type: str, dtype: _dtype.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:  # fmt: skip
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
                warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
                              "Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                              stacklevel=2)  # fmt: skip
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = _state.cache_enabled
        self.prev = _state.enabled[self.device]
        self.prev_fastdtype = _state.dtype[self.device]
        self._counted = self.device == "cpu" and self._enabled
        if self._counted:
            _acquire()
        _state.enabled[self.device] = self._enabled
        _state.dtype[self.device] = self.fast_dtype
        _state.nesting += 1
        _state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, *exc: object) -> bool:
        _state.nesting -= 1
        if _state.nesting == 0:
            _state.cache.clear()
        _state.enabled[self.device] = self.prev
        _state.dtype[self.device] = self.prev_fastdtype
        _state.cache_enabled = self.prev_cache_enabled
        if self._counted:
            _release()
        return False

    def __call__(self, func: Callable) -> Callable:
        """Used as a decorator: each call of ``func`` runs inside a fresh copy of this region."""
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            "use autocast as a context manager? For example:\n    with torch.autocast("
                            "device_type=...):\n        output = model(input)")  # fmt: skip

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorate_autocast


def _cast_inputs(value: Any, dt) -> Any:
    if isinstance(value, Tensor):
        return value.to(dt) if value.dtype.is_floating_point and value.dtype is not _dtype.float64 else value
    if isinstance(value, dict):
        return {k: _cast_inputs(v, dt) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, dt) for v in value)
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: _dtype.dtype | None = None):
    """Same as torch.amp.custom_fwd: decorates a custom ``Function.forward``. With ``cast_inputs``, inside an
    autocast region its floating inputs are cast to that dtype and it runs with autocast off; without, it runs
    under the current autocast state, which ``custom_bwd`` then restores for ``backward``."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        on = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = on and cast_inputs is None
        if cast_inputs is None or not on:
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast_inputs(args, cast_inputs), **_cast_inputs(kwargs, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str):
    """Same as torch.amp.custom_bwd: decorates a custom ``Function.backward`` so that it runs under the autocast
    state its ``forward`` (decorated with ``custom_fwd``) ran under."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
