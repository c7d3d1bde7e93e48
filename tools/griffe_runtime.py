"""A griffe extension for the API reference: document what Python really binds under a public name.

griffe reads pyframe's source without running it, so it misses what pyframe binds at import time: the ops made by
table rows (``exp, exp_ = _unary("exp", ...)``), the Tensor methods bound by ``pyframe._tensor_methods.bind()``,
constants assigned in tuples (``pi, e, inf, nan = ...``). Without this extension mkdocstrings cannot render
``pyframe.exp`` or ``pyframe.Tensor.exp`` at all. For every module's ``__all__`` and every class of pyframe, this
adds (or replaces a bare attribute by) the object Python really has under that name: its signature from
``inspect.signature`` and its ``__doc__``.

mkdocs.yml loads it with ``extensions: [tools/griffe_runtime.py:RuntimeMembers]``.
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any

import griffe

os.environ.setdefault("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")  # document pyframe, not what plugins change


def _runtime(path: str) -> Any:
    """The runtime object at a griffe path (``pyframe.tensor.Tensor``), or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _parameters(obj: Any) -> griffe.Parameters:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return griffe.Parameters()
    params = []
    for p in signature.parameters.values():
        annotation = None if p.annotation is p.empty else p.annotation
        if annotation is not None and not isinstance(annotation, str):
            annotation = getattr(annotation, "__name__", repr(annotation))
        default = None if p.default is p.empty else repr(p.default)
        params.append(griffe.Parameter(p.name, annotation=annotation, kind=griffe.ParameterKind(p.kind.description),
                                       default=default))  # fmt: skip
    return griffe.Parameters(*params)


def _docstring(obj: Any, agent: Any) -> griffe.Docstring | None:
    doc = obj.__doc__ if isinstance(obj, property) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    return griffe.Docstring(
        inspect.cleandoc(doc), parser=agent.docstring_parser, parser_options=agent.docstring_options
    )


def _member(name: str, value: Any, agent: Any, assigned: bool) -> griffe.Object | None:
    """A griffe object for a runtime value: a function, a property, a constant, or (when the source only assigns
    the name: ``assigned``) a class."""
    if isinstance(value, property):
        attr = griffe.Attribute(name, value=None)
        attr.labels.add("property")
        attr.docstring = _docstring(value, agent)
        return attr
    if inspect.isclass(value):
        if not assigned:
            return None  # a class statement or an import: griffe sees it (an import is resolved as an alias)
        # a class made by a factory (``CircularPad1d = _make(...)``): griffe sees only an assignment
        cls = griffe.Class(name, bases=[b.__name__ for b in value.__bases__])
        cls.docstring = _docstring(value, agent) if "__doc__" in vars(value) else None
        cls.set_member("__init__", griffe.Function("__init__", parameters=_parameters(value.__init__)))
        return cls
    if callable(value):
        fn = griffe.Function(name, parameters=_parameters(value))
        fn.docstring = _docstring(value, agent)
        return fn
    if inspect.ismemberdescriptor(value):  # a slot: its docstring is the value in a dict __slots__, if any
        slots = getattr(value.__objclass__, "__slots__", None)
        attr = griffe.Attribute(name, value=None)
        doc = slots.get(name) if isinstance(slots, dict) else None
        if doc:
            attr.docstring = griffe.Docstring(
                doc, parser=agent.docstring_parser, parser_options=agent.docstring_options
            )
        return attr
    return griffe.Attribute(name, value=repr(value))


def _needs(member: griffe.Object | griffe.Alias | None) -> bool:
    """A member griffe does not know, or knows only as a bare attribute: let the runtime say what it is."""
    if member is None:
        return True
    return not member.is_alias and member.is_attribute and member.docstring is None


class RuntimeMembers(griffe.Extension):
    """Fill in what pyframe binds at import time (see the module docstring)."""

    def _fill(self, obj: griffe.Object, names: list[str], runtime: Any, agent: Any, static: bool = False) -> None:
        for name in names:
            if _needs(obj.members.get(name)):
                value = inspect.getattr_static(runtime, name) if static else getattr(runtime, name, None)
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if inspect.ismodule(value):
                    continue
                # a class griffe did not see but this module made (``IntTensor, BoolTensor = _legacy_type(...),
                # ...``) is written here; one defined elsewhere reaches here by an import griffe resolves
                made_here = inspect.isclass(value) and getattr(value, "__module__", None) == obj.path
                member = _member(name, value, agent, assigned=name in obj.members or made_here)
                if member is not None:
                    # an op defined in another module is written where this one imported it from
                    obj.set_member(name, member)

    def on_module_members(self, *, mod: griffe.Module, agent: Any, **kwargs: Any) -> None:
        if not mod.path.startswith("pyframe"):
            return
        runtime = _runtime(mod.path)
        names = getattr(runtime, "__all__", None)
        if runtime is None or names is None:
            return
        # `__all__ = [*unary_ops, ...]` is only known at run time; wildcard imports of this module use it
        mod.exports = list(names)
        self._fill(mod, list(names), runtime, agent)

    def on_class_members(self, *, cls: griffe.Class, agent: Any, **kwargs: Any) -> None:
        if not cls.path.startswith("pyframe"):
            return
        runtime = _runtime(cls.path)
        if not inspect.isclass(runtime):
            return
        names = [n for n in vars(runtime) if not n.startswith("_")]
        self._fill(cls, names, runtime, agent, static=True)
        for name in list(cls.members):
            member = cls.members[name]
            if member.is_alias or member.docstring is not None:
                continue
            # an instance attribute set in __init__ without a docstring (``self.in_features = ...``) is the
            # constructor's argument kept: the class docstring and signature say it, a bare heading adds nothing
            if member.is_attribute and "instance-attribute" in member.labels:
                del cls.members[name]
                continue
            # a method replaced at import (Tensor.is_floating_point bound by _tensor_methods) has the runtime
            # function's docstring; an override without one (a layer's ``forward``) the contract it overrides
            value = vars(runtime).get(name)
            own = getattr(value, "__doc__", None) if callable(value) and not inspect.isclass(value) else None
            doc = own or _inherited_doc(runtime, name)
            if doc:
                member.docstring = griffe.Docstring(
                    inspect.cleandoc(doc), parser=agent.docstring_parser, parser_options=agent.docstring_options
                )


def _inherited_doc(cls: type, name: str) -> str | None:
    """The docstring of the nearest pyframe base class's ``name`` (what ``inspect.getdoc`` would show)."""
    for base in cls.__mro__[1:]:
        if name in vars(base) and str(base.__module__).startswith("pyframe"):
            value = vars(base)[name]
            value = getattr(value, "__func__", value)
            doc = value.__doc__ if isinstance(value, property) else getattr(value, "__doc__", None)
            if doc:
                return doc
    return None
