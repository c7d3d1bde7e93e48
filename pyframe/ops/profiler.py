"""``torch.ops.profiler``: the profiler's named ranges as a pair of calls, for code that opens and closes a
``record_function`` range without a ``with`` block (FX graphs that keep profiler ranges emit these calls)."""

from __future__ import annotations

from pyframe.autograd.profiler import record_function

__all__ = ["_record_function_enter", "_record_function_enter_new", "_record_function_exit"]


def _record_function_enter(name: str, args: str | None = None) -> record_function:
    """Open the range ``name`` in the running profile (nothing outside one) and return its handle."""
    return record_function(name, args).__enter__()


def _record_function_exit(handle: record_function) -> None:
    """Close the range ``handle`` (from ``_record_function_enter``) and the ranges still open inside it."""
    if not isinstance(handle, record_function):
        raise TypeError(f"_record_function_exit: expected the handle _record_function_enter returned, got "
                        f"{type(handle).__name__}")  # fmt: skip
    handle.__exit__(None, None, None)


_record_function_enter_new = _record_function_enter
