"""torch's global switches whose work pyframe already does, so ported code runs unchanged:
``compile`` (pyframe runs eagerly; the model is returned as it is), ``use_deterministic_algorithms``
(every pyframe kernel is deterministic, whatever the thread count), ``set_float32_matmul_precision``
(float32 products always compute in float32)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "compile", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "set_float32_matmul_precision", "get_float32_matmul_precision",
]  # fmt: skip

_deterministic = [False]
_matmul_precision = ["highest"]
_PRECISIONS = ("highest", "high", "medium")


def compile(model: Any = None, **options: Any) -> Any:  # noqa: A001 - torch's name
    """Same call as torch.compile; pyframe has no graph compiler, so ``model`` (a Module or a
    function) is returned unchanged and runs eagerly with the same results. Used as a decorator
    with options (``@compile(mode=...)``) it returns the function itself."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise TypeError(f"compile(): expected a Module or a function, got {type(model).__name__}")
    return model


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
