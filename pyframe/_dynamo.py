"""torch._dynamo, the part training scripts touch around ``torch.compile`` (``torch._dynamo.config.suppress_errors =
True``, ``torch._dynamo.reset()``, ``@torch._dynamo.disable``) and ``optimize``, the older spelling of
``torch.compile``. The config is a plain namespace of torch's common settings that may be set and read
(``pyframe.compile`` reads ``cache_size_limit``); the functions are ``pyframe.compiler``'s."""

from __future__ import annotations

from typing import Any

from pyframe._dynamo_config import config
from pyframe.compiler import allow_in_graph, disable, is_compiling, reset

__all__ = ["config", "reset", "disable", "allow_in_graph", "is_compiling", "mark_dynamic", "mark_static",
           "optimize", "explain"]  # fmt: skip


def mark_dynamic(t: Any, index: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """Same call as torch._dynamo.mark_dynamic: a hint for a compiler; nothing to do here."""


def mark_static(t: Any, index: Any = None) -> None:
    """Same call as torch._dynamo.mark_static: a hint for a compiler; nothing to do here."""


def optimize(backend: Any = "inductor", *, nopython: bool = False, **kwargs: Any) -> Any:
    """Same call as torch._dynamo.optimize (the older spelling of ``torch.compile``): a decorator that compiles
    as ``pyframe.compile(fn, backend=backend, fullgraph=nopython)`` does (a backend name returns ``fn`` itself)."""
    from pyframe._compile import compile as _compile

    return lambda fn: _compile(fn, backend=backend, fullgraph=nopython)


def explain(fn: Any, *extra_args: Any, **extra_kwargs: Any) -> Any:
    """Same call as torch._dynamo.explain: ``explain(fn)(*args)`` gives an ``ExplainOutput`` (``graphs``,
    ``graph_count``, ``graph_break_count``, ``break_reasons``, ``op_count``) of ``fn`` captured on the arguments;
    a break is control flow on a tensor's value, where torch splits the graph."""
    from pyframe._compile import explain as _explain

    return _explain(fn, *extra_args, **extra_kwargs)
