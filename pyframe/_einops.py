"""einops on pyframe tensors, with no call from the user.

einops picks a tensor's backend among the subclasses of ``einops._backends.AbstractBackend`` whose
``framework_name`` is a module in ``sys.modules``. Torch code run with ``import pyframe as torch`` never imports
torch, so einops' torch backend is never chosen: ``rearrange(x, ...)`` raised "Tensor type unknown to einops".
pyframe defines its own subclass the moment ``einops._backends`` is executed (an import hook waiting for that
module), or at once when einops was imported before pyframe. The same hook serves ``einops.layers.torch`` while
torch itself has not been imported: einops' ``Rearrange``, ``Reduce`` and ``EinMix`` built on pyframe's
``nn.Module`` from einops' own mixins (einops' file subclasses torch's Module, which pyframe's containers refuse).
pyframe does not import einops itself.
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
_LAYERS = "einops.layers.torch"


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


def _define_layers(module: ModuleType) -> None:
    """einops.layers.torch's three layers, as einops writes them for torch, on pyframe's Module."""
    from einops.layers import RearrangeMixin, ReduceMixin
    from einops.layers._einmix import _EinmixMixin

    from pyframe.nn.modules.module import Module
    from pyframe.nn.parameter import Parameter
    from pyframe.ops.creation import zeros

    class Rearrange(RearrangeMixin, Module):
        def forward(self, input):  # noqa: A002 - einops' name
            return self._apply_recipe(input)

    class Reduce(ReduceMixin, Module):
        def forward(self, input):  # noqa: A002
            return self._apply_recipe(input)

    class EinMix(_EinmixMixin, Module):
        def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
            self.weight = Parameter(zeros(weight_shape).uniform_(-weight_bound, weight_bound))
            self.bias = None if bias_shape is None else Parameter(zeros(bias_shape).uniform_(-bias_bound, bias_bound))

        def _create_rearrange_layers(self, pre_pattern, pre_lengths, post_pattern, post_lengths):
            self.pre_rearrange = None if pre_pattern is None else Rearrange(pre_pattern, **pre_lengths)
            self.post_rearrange = None if post_pattern is None else Rearrange(post_pattern, **post_lengths)

        def forward(self, input):  # noqa: A002
            if self.pre_rearrange is not None:
                input = self.pre_rearrange(input)
            result = einsum(self.einsum_pattern, input, self.weight)
            if self.bias is not None:
                result = result + self.bias
            if self.post_rearrange is not None:
                result = self.post_rearrange(result)
            return result

    for cls in (Rearrange, Reduce, EinMix):
        cls.__module__, cls.__qualname__ = module.__name__, cls.__name__  # where pickle finds them again
        setattr(module, cls.__name__, cls)


class _LayersLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        _define_layers(module)


class _Finder(importlib.abc.MetaPathFinder):
    """einops._backends through the path finder with its loader wrapped; einops.layers.torch, while torch is not
    imported, as pyframe's layers."""

    def find_spec(self, fullname: str, path, target=None):
        if fullname == _LAYERS and "torch" not in sys.modules:
            return importlib.machinery.ModuleSpec(fullname, _LayersLoader())
        if fullname != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


_finder = _Finder()


def install() -> None:
    """Called once by ``import pyframe``."""
    module = sys.modules.get(_MODULE)
    if module is not None:
        _define_backend(module)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
