"""Helpers the layer families share: torch's ``_single``/``_pair`` (``_tuple``), its repr of the
arguments not at their default (``_changed``), and two bases: ``_Layer`` for layers whose forward
is one call of a functional form, ``_ArgsModule`` for layers whose state is their constructor's
arguments; and torch.nn.modules.utils' helpers (``_pair``, ``_ntuple`` ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

from pyframe.nn.modules.module import Module


def _tuple(v, n: int, what: str) -> tuple:
    """torch's ``_single``/``_pair``: an int repeated ``n`` times, or a sequence of ``n`` kept as a tuple."""
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"{what} must be an int or a sequence of {n} ints, got {v!r}")
        return tuple(v)
    return (v,) * n


def _changed(module: Module, head: str, **defaults) -> str:
    """torch's repr style: ``head``, then ``, name=value`` for each attribute not at its default."""
    parts = [head]
    for name, default in defaults.items():
        value = getattr(module, name)
        if (value is not default) if isinstance(default, bool) or default is None else (value != default):
            parts.append(f"{name}={value}")
    return ", ".join(parts)


class _Layer(Module):
    """A layer whose ``forward`` is one call of its functional form ``_fn``, named in the class
    statement (``class Tanh(_NoArgs, fn=F.tanh)``), so a family's base writes that call once."""

    _fn = None

    def __init_subclass__(cls, fn=None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if fn is not None:
            cls._fn = staticmethod(fn)


class _ArgsModule(_Layer):
    """A layer whose state is its constructor's arguments (activations, pools, fold/unfold, pixel shuffles):
    ``__init__(**args)`` stores them as attributes under torch's names, and ``extra_repr`` shows
    those named in ``_shown`` as torch's reprs do (``name=value``, strings quoted), then
    ``inplace=True`` when that flag is set. Each class keeps torch's signature."""

    _shown: tuple[str, ...] = ()

    def __init__(self, **args) -> None:
        super().__init__()
        for name, value in args.items():
            setattr(self, name, value)

    def extra_repr(self) -> str:
        parts = []
        for name in self._shown:
            value = getattr(self, name)
            parts.append(f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}")
        if getattr(self, "inplace", False):
            parts.append("inplace=True")
        return ", ".join(parts)


# torch.nn.modules.utils' helpers, which model code imports by those paths (``from torch.nn.modules.utils import
# _pair``); torch_paths.py registers them there
def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """torch's ``_ntuple``: a function making an iterable a tuple and anything else a tuple of ``n`` copies."""

    def parse(x: Any) -> tuple:
        return tuple(x) if isinstance(x, Iterable) else tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: Sequence, n: int) -> tuple:
    """torch's: ``t`` reversed with each element repeated ``n`` times (a module's padding as ``F.pad`` takes it)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: Sequence[int]) -> Any:
    """torch's: ``out_size`` with each None replaced by the matching trailing entry of ``defaults``."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :], strict=False)]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Same as torch.nn.modules.utils.consume_prefix_in_state_dict_if_present: ``prefix`` stripped from the keys
    that start with it (and from the ``_metadata`` keys), in place: a DataParallel/DDP checkpoint's "module."."""
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix) :]] = metadata.pop(key)
