"""torch's global switches whose work pyframe already does, so ported code runs unchanged:
``use_deterministic_algorithms``
(every pyframe kernel is deterministic, whatever the thread count), ``set_float32_matmul_precision``
(float32 products always compute in float32)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "set_num_interop_threads",
    "get_num_interop_threads", "set_flush_denormal", "set_default_tensor_type", "typename", "is_storage",
]  # fmt: skip

_deterministic = [False]
_matmul_precision = ["highest"]
_interop_threads = [1]
_PRECISIONS = ("highest", "high", "medium")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Same as torch.use_deterministic_algorithms. Every pyframe kernel (reductions and the
    random streams included) is already deterministic, so this only records the flag."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): mode must be a bool, got {type(mode).__name__}")
    _deterministic[0] = mode


def are_deterministic_algorithms_enabled() -> bool:
    """Same as torch.are_deterministic_algorithms_enabled."""
    return _deterministic[0]


def set_float32_matmul_precision(precision: str) -> None:
    """Same call as torch.set_float32_matmul_precision (``"highest"``, ``"high"`` or ``"medium"``). torch may then
    compute float32 products in TF32 or bfloat16 on hardware that has them; pyframe's float32 products always
    compute in float32, so the setting is recorded (``get_float32_matmul_precision``) and results do not change."""
    if precision not in _PRECISIONS:
        raise RuntimeError(
            f"set_float32_matmul_precision(): expected one of {', '.join(_PRECISIONS)}, got {precision!r}"
        )
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    """Same as torch.get_float32_matmul_precision: the last value set (``"highest"`` at start)."""
    return _matmul_precision[0]


def set_num_interop_threads(n: int) -> None:
    """Same call as torch.set_num_interop_threads. torch runs independent ops of a graph on a pool of that many
    threads; pyframe runs ops one after another (each op's kernel uses ``set_num_threads`` threads), so the
    count is checked and recorded (``get_num_interop_threads``) and nothing else changes."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RuntimeError(f"set_num_interop_threads: number of threads must be positive, got {n!r}")
    _interop_threads[0] = n


def get_num_interop_threads() -> int:
    """Same as torch.get_num_interop_threads: the count last set (1: pyframe runs ops one after another)."""
    return _interop_threads[0]


def set_flush_denormal(mode: bool) -> bool:
    """Same call as torch.set_flush_denormal; returns False, torch's answer where it cannot: pyframe keeps IEEE
    denormals (its kernels never switch the CPU's flush-to-zero mode), so results do not depend on the call."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): mode must be a bool, got {type(mode).__name__}")
    return False


def set_default_tensor_type(t: Any) -> None:
    """Same as torch.set_default_tensor_type (deprecated there for ``set_default_dtype``): a legacy type or its
    name (``pyframe.DoubleTensor``, ``"torch.FloatTensor"``) sets the default floating dtype."""
    from pyframe import _dtype
    from pyframe._tensor_methods import _BY_TYPE_NAME  # the legacy type names, as Tensor.type reads them

    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    dt = getattr(t, "dtype", None) if not isinstance(t, str) else None
    dt = dt if isinstance(dt, _dtype.dtype) else _BY_TYPE_NAME.get(name.rpartition(".")[2])
    if dt is None or not dt.is_floating_point:
        raise TypeError(f"set_default_tensor_type(): expected a floating tensor type (FloatTensor, DoubleTensor, "
                        f"HalfTensor, BFloat16Tensor) or its name, got {t!r}")  # fmt: skip
    _dtype.set_default_dtype(dt)


def typename(obj: Any) -> str:
    """Same as torch.typename: a tensor's type name (``"pyframe.FloatTensor"``), else the object's class as
    ``module.qualname``."""
    from pyframe.tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def is_storage(obj: Any) -> bool:
    """Same as torch.is_storage: False: pyframe has no storage objects in its public API (a tensor's memory is
    reached through the tensor, ``data_ptr`` and ``numpy()``)."""
    return False
