"""torch._dynamo, the part training scripts touch around ``torch.compile`` (``torch._dynamo.config.suppress_errors =
True``, ``torch._dynamo.reset()``, ``@torch._dynamo.disable``). pyframe compiles nothing, so the config is a plain
namespace of torch's common settings that may be set and read, and the functions are ``pyframe.compiler``'s."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pyframe.compiler import allow_in_graph, disable, is_compiling, reset

__all__ = ["config", "reset", "disable", "allow_in_graph", "is_compiling", "mark_dynamic", "mark_static",
           "optimize"]  # fmt: skip

config = SimpleNamespace(
    suppress_errors=False, verbose=False, cache_size_limit=8, accumulated_cache_size_limit=256,
    optimize_ddp=True, capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False,
    automatic_dynamic_shapes=True, assume_static_by_default=True, recompile_limit=8,
)  # fmt: skip


def mark_dynamic(t: Any, index: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """Same call as torch._dynamo.mark_dynamic: a hint for a compiler; nothing to do here."""


def mark_static(t: Any, index: Any = None) -> None:
    """Same call as torch._dynamo.mark_static: a hint for a compiler; nothing to do here."""


def optimize(backend: Any = "inductor", *, nopython: bool = False, **kwargs: Any) -> Any:
    """Same call as torch._dynamo.optimize (the older spelling of ``torch.compile``): a decorator that returns
    the function itself."""
    return lambda fn: fn
