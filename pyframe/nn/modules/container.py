"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``. Same as
torch.nn's.

Every child they add goes through ``Module._register`` (so the global registration hooks see it).
A child registered as None (a blocked registration, API.md) keeps its index (``len``, indexing)
but iterating a ``Sequential`` or ``ModuleList`` skips it, so ``Sequential.forward`` and the
usual ``for layer in self.layers: x = layer(x)`` treat it as the identity.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any, Self

from pyframe.nn.modules.module import Module, _addindent
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor

__all__ = [
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
]  # fmt: skip


def _renumber(module: Module) -> None:
    """Keys "0".."n-1" again after a deletion; the children were registered already."""
    object.__setattr__(module, "_modules", {str(i): m for i, m in enumerate(module._modules.values())})


def _insert(module: Module, index: int, child: Module) -> None:
    n = len(module._modules)
    if not -n <= index <= n:
        raise IndexError(f"Index out of range: {index}")
    if index < 0:
        index += n
    child = module._prepare("module", str(index), child)  # checked and hooked before anything moves
    mods = module._modules
    for i in range(n, index, -1):
        mods[str(i)] = mods[str(i - 1)]
    mods[str(index)] = child


class _Numbered(Module):
    """What Sequential and ModuleList share: children keyed "0", "1", ... in order, renumbered after a
    delete, indexed like a list."""

    def _key(self, idx: int) -> str:
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return next(islice(iter(self._modules), idx % size, None))

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key(idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return (m for m in self._modules.values() if m is not None)  # a blocked child is skipped

    def __dir__(self) -> list:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> Self:
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v


class Sequential(_Numbered):
    """Same as torch.nn.Sequential: ``Sequential(*modules)`` or ``Sequential(OrderedDict)``."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(other)

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        combined = Sequential()
        for i, module in enumerate(m for _ in range(other) for m in self):
            combined.add_module(str(i), module)
        return combined

    __rmul__ = __mul__

    def insert(self, index: int, module: Module) -> Sequential:
        """Same as torch.nn.Sequential.insert: ``module`` inserted before position ``index``; returns the Sequential."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        _insert(self, index, module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Same as torch.nn.Sequential.extend: every module of ``sequential`` appended; returns the Sequential."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input: Any) -> Any:  # noqa: A002 - torch's name
        for module in self:
            input = module(input)
        return input


class ModuleList(_Numbered):
    """Same as torch.nn.ModuleList: a list of submodules, indexed like a list."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._key(idx)]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __repr__(self) -> str:
        """torch's: runs of identical children are shown once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self._modules.values()]
        if not reprs:
            return self._get_name() + "()"
        blocks = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = []
        for start, end, r in blocks:
            text = f"({start}): {r}" if start == end else f"({start}-{end}): {end - start + 1} x {r}"
            lines.append(_addindent(text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index: int, module: Module) -> None:
        """Same as torch.nn.ModuleList.insert: ``module`` inserted before position ``index``."""
        _insert(self, index, module)

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Same as torch.nn.ModuleList.extend: every module of the iterable appended; returns the ModuleList."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """Same as torch.nn.ModuleDict: submodules by name, in insertion order."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Same as torch.nn.ModuleDict.clear: removes every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Same as torch.nn.ModuleDict.pop: removes the module under ``key`` and returns it (KeyError if absent)."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """Same as torch.nn.ModuleDict.keys: the names, in insertion order."""
        return self._modules.keys()

    def items(self):
        """Same as torch.nn.ModuleDict.items: (name, module) pairs, in insertion order."""
        return self._modules.items()

    def values(self):
        """Same as torch.nn.ModuleDict.values: the modules, in insertion order."""
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        """Same as torch.nn.ModuleDict.update: adds (or replaces) the modules of a mapping, a ModuleDict, or an iterable
        of (name, module) pairs.
        """
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is {type(m).__name__}")
            if len(m) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(m)}; 2 is required")
            self[m[0]] = m[1]


def _as_registered(value: Any) -> Any:
    """What ParameterList and ParameterDict store: a tensor that is not a Parameter becomes one (torch's rule);
    a Parameter, None or any other object is kept as it is."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _parameter_lines(items: Iterable[tuple[Any, Any]], dtype_name: Callable[[Tensor], str]) -> str:
    """torch's extra_repr of the parameter containers: one line per entry, tensors by kind, dtype and size."""
    lines = []
    for key, p in items:
        if isinstance(p, Tensor):
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            size = "x".join(str(s) for s in p.shape)
            lines.append(f"  ({key}): {kind} containing: [{dtype_name(p)} of size {size}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


class ParameterList(Module):
    """Same as torch.nn.ParameterList: a list whose tensors are registered as parameters under the names
    "0", "1", ... (so ``parameters()``, ``state_dict()``, ``.to()`` and the registration hooks see them). A tensor
    that is not a Parameter is made one on the way in; other objects are kept as plain attributes."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _abs_name(self, idx: int) -> str:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._abs_name(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, self._abs_name(idx), _as_registered(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> Self:
        return self.extend(parameters)

    def __dir__(self) -> list:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> Self:
        """Same as torch.nn.ParameterList.append: ``value`` added at the end (a tensor as a Parameter)."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> Self:
        """Same as torch.nn.ParameterList.extend: every value of an iterable appended (a tensor is no iterable
        here)."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(enumerate(self), lambda p: str(p.dtype))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """Same as torch.nn.ParameterDict: an ordered dict from string keys to parameters, each registered under its
        key (so ``state_dict()`` has the keys themselves). A tensor that is not a Parameter is made one; other objects
        are kept as plain attributes. ``update`` with a plain dict takes its keys sorted, as torch does. A missing key
    raises KeyError, as a dict's (torch's raises the AttributeError of its attribute lookup)."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'); ParameterDict keys are strings"
            )
        return key

    def __getitem__(self, key: str) -> Any:
        if self._attr(key) not in self._keys:  # torch raises the AttributeError of getattr; a dict's KeyError here
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._attr(key)
        setattr(self, attr, _as_registered(value))
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """Same as torch.nn.ParameterDict.copy: a new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any | None = None) -> Any:
        """Same as torch.nn.ParameterDict.setdefault: ``self[key]``, set to ``default`` first if absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Same as torch.nn.ParameterDict.clear: removes every entry."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        """Same as torch.nn.ParameterDict.pop: removes ``key`` and returns its value (KeyError if absent)."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Same as torch.nn.ParameterDict.popitem: removes and returns the last inserted ``(key, value)``."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any | None = None) -> Any:
        """Same as torch.nn.ParameterDict.get: ``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default  # noqa: SIM401 - self.get is this method

    def fromkeys(self, keys: Iterable[str], default: Any | None = None) -> ParameterDict:
        """Same as torch.nn.ParameterDict.fromkeys: a new ParameterDict with every key set to ``default``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """Same as torch.nn.ParameterDict.keys: the keys, in insertion order."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        """Same as torch.nn.ParameterDict.items: ``(key, value)`` pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        """Same as torch.nn.ParameterDict.values: the values, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters: Mapping[str, Any] | Iterable) -> None:
        """Same as torch.nn.ParameterDict.update: entries of an OrderedDict, a ParameterDict or an iterable of
        ``(key, value)`` pairs in their order, of another mapping sorted by key; existing keys are overwritten."""
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                + type(parameters).__name__
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is "
                                    f"{type(p).__name__}")  # fmt: skip
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                pairs.append(tuple(p))
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return _parameter_lines(self.items(), lambda p: p.type())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> Self:
        self.update(other)
        return self
