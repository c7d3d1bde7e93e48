"""einops on pyframe tensors, with no call from the user.

einops picks a tensor's backend among the subclasses of ``einops._backends.AbstractBackend`` whose
``framework_name`` is a module in ``sys.modules``. Torch code run with ``import pyframe as torch`` never imports
torch, so einops' torch backend is never chosen: ``rearrange(x, ...)`` raised "Tensor type unknown to einops".
pyframe defines its own subclass the moment ``einops._backends`` is executed (an import hook that waits for that
one module and then leaves ``sys.meta_path``), or at once when einops was imported before pyframe. pyframe does not
import einops itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

from pyframe._dtype import bfloat16, float16, float32, float64, int64
from pyframe.ops.creation import arange
from pyframe.ops.join import cat, stack
from pyframe.ops.products import einsum
from pyframe.tensor import Tensor, from_numpy

_MODULE = "einops._backends"


def _define_backend(backends: ModuleType) -> None:
    """The pyframe backend, a subclass of einops' AbstractBackend (einops finds it by subclass walk)."""
    defined = getattr(backends, "_pyframe_backend", None)
    if defined is not None and issubclass(defined, backends.AbstractBackend):  # a reload makes a new base class
        return

    class PyframeBackend(backends.AbstractBackend):
        framework_name = "pyframe"

        def is_appropriate_type(self, tensor: Any) -> bool:
            return isinstance(tensor, Tensor)

        def from_numpy(self, x):
            t = from_numpy(x)
            if t.is_floating_point():
                t.requires_grad_(True)
            return t

        def to_numpy(self, x):
            return x.detach().cpu().numpy()

        def arange(self, start: int, stop: int):
            return arange(start, stop, dtype=int64)

        def reduce(self, x, operation: str, reduced_axes):
            if operation in ("min", "max"):
                return getattr(x, "a" + operation)(dim=tuple(reduced_axes))
            if operation in ("sum", "mean"):
                return getattr(x, operation)(dim=tuple(reduced_axes))
            if operation in ("any", "all", "prod"):  # one dim at a time, as torch's reductions take
                for i in sorted(reduced_axes)[::-1]:
                    x = getattr(x, operation)(dim=i)
                return x
            raise NotImplementedError(f"einops reduction {operation!r} is not one pyframe has")

        def transpose(self, x, axes):
            return x.permute(axes)

        def stack_on_zeroth_dimension(self, tensors: list):
            return stack(tensors)

        def add_axes(self, x, n_axes: int, pos2len: dict):
            repeats = [-1] * n_axes
            for axis_position, axis_length in pos2len.items():
                x = x.unsqueeze(axis_position)
                repeats[axis_position] = axis_length
            return x.expand(repeats)

        def tile(self, x, repeats):
            return x.repeat(repeats)

        def concat(self, tensors, axis: int):
            return cat(tensors, dim=axis)

        def add_axis(self, x, new_position: int):
            return x.unsqueeze(new_position)

        def is_float_type(self, x) -> bool:
            return x.dtype in (float16, float32, float64, bfloat16)

        def einsum(self, pattern: str, *x):
            return einsum(pattern, *x)

    backends._pyframe_backend = PyframeBackend


class _Loader(importlib.abc.Loader):
    """einops' own loader for einops._backends, then the pyframe backend defined in the new module."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _define_backend(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... as the wrapped loader has them
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the path finder for einops._backends and wraps its loader."""

    def find_spec(self, fullname: str, path, target=None):
        if fullname != _MODULE:
            return None
        _uninstall()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


_finder = _Finder()


def _uninstall() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def install() -> None:
    """Called once by ``import pyframe``."""
    module = sys.modules.get(_MODULE)
    if module is not None:
        _define_backend(module)
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
