"""Helpers the layer families share: torch's ``_single``/``_pair`` (``_tuple``), its repr of the
arguments not at their default (``_changed``), and two bases: ``_Layer`` for layers whose forward
is one call of a functional form, ``_ArgsModule`` for layers whose state is their constructor's
arguments."""

from __future__ import annotations

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
