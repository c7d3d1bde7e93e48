"""torch's global switches whose work pyframe already does, so ported code runs unchanged:
``compile`` (pyframe runs eagerly; the model is returned as it is), ``use_deterministic_algorithms``
(every pyframe kernel is deterministic, whatever the thread count), ``set_printoptions``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "compile", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
]  # fmt: skip

_deterministic = [False]


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
