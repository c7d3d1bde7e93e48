"""torch.compiler: pyframe has no graph compiler (``pyframe.compile`` returns the model as it is), so nothing is ever
being compiled; the decorators that exclude code from compilation return the code itself."""

from __future__ import annotations

from typing import Any

__all__ = ["is_compiling", "is_dynamo_compiling", "disable", "reset", "allow_in_graph", "assume_constant_result"]


def is_compiling() -> bool:
    """Same as torch.compiler.is_compiling: False, pyframe runs every op eagerly."""
    return False


def is_dynamo_compiling() -> bool:
    """Same as torch.compiler.is_dynamo_compiling: False."""
    return False


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Same as torch.compiler.disable: ``fn`` itself (as a decorator with arguments, a decorator returning it)."""
    return (lambda f: f) if fn is None else fn


def reset() -> None:
    """Same as torch.compiler.reset: there are no compiled graphs or caches to clear."""


def allow_in_graph(fn: Any) -> Any:
    """Same as torch.compiler.allow_in_graph: ``fn`` itself."""
    return fn


def assume_constant_result(fn: Any) -> Any:
    """Same as torch.compiler.assume_constant_result: ``fn`` itself."""
    return fn
