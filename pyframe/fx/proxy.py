"""``Proxy``: what a traced program computes with. Every operation on one (an operator, a Tensor method, an
attribute, or a pyframe function while a tracer is active) records a node in the tracer's graph and returns
a new Proxy. Same as torch.fx.Proxy.

torch reaches its functions through ``__torch_function__``; pyframe's ops are plain Python functions with
no dispatch point, so a tracer instead swaps them, for the length of the trace only, for wrappers that
record a node when an argument is a Proxy (``_Patcher``). Nothing in pyframe pays for this when no
trace runs. A Proxy made outside any trace (``Proxy(graph.placeholder("x"))``, a graph built or edited by hand)
installs the same swaps until the last such Proxy is gone, so ``torch.cat([y, z])`` records a node there too, as
torch's ``__torch_function__`` would; pyframe's functions pay for the check only while one lives."""

from __future__ import annotations

import dis
import functools
import inspect
import math
import operator
import sys
import types
import weakref
from typing import Any

from pyframe.fx.graph import BINARY, UNARY, Graph, _unwrapped
from pyframe.fx.node import Node, map_aggregate

__all__ = ["Proxy", "Attribute", "TraceError", "GraphAppendingTracer"]


class TraceError(RuntimeError):
    """A traced program used a Proxy where a concrete value is needed (control flow, ``len``, ``int``)."""


class Proxy:
    """Same as torch.fx.Proxy. With a concrete-value tracer (the ONNX exporter's), a Proxy also carries the
    value the node computed (``node.meta["val"]``), so control flow on values follows the traced inputs."""

    def __init__(self, node: Node, tracer=None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node
        if not _active or _active[-1] is _loose.patcher:
            _loose.hold(self)

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        static = self.tracer.static_attr(self, k)
        if static is not _NOT_STATIC:
            return static
        return Attribute(self, k)

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        value = self.tracer.concrete_value(self)
        if value is not _NO_VALUE:
            return iter([self[i] for i in range(len(value))])
        frame = inspect.currentframe().f_back
        insts = list(dis.get_instructions(frame.f_code))
        inst = next((i for i in insts if i.offset == frame.f_lasti), None)
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return iter([self[i] for i in range(inst.argval)])
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        return self.tracer.to_concrete(self, "len()", len)

    def __int__(self) -> int:
        return self.tracer.to_concrete(self, "int()", int)

    def __index__(self) -> int:
        return self.tracer.to_concrete(self, "an index", operator.index)

    def __float__(self) -> float:
        return self.tracer.to_concrete(self, "float()", float)

    def keys(self):
        """What ``**proxy`` calls: a TraceError, as ``**`` on a traced value is not supported."""
        return self.tracer.keys(self)


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node made only when the attribute is used as a value; called, it is
    a ``call_method`` node instead."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Any:
        static = self.tracer.static_method(self.root, self.attr, args, kwargs)
        if static is not _NOT_STATIC:
            return static
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


_NOT_STATIC = object()
_NO_VALUE = object()


def _binary(fn, reflected: bool = False):
    def impl(self, other):
        a, b = (other, self) if reflected else (self, other)
        return self.tracer.create_proxy("call_function", fn, (a, b), {})

    return impl


for _fn in (*BINARY, operator.getitem):
    _name = _fn.__name__.rstrip("_")
    setattr(Proxy, f"__{_name}__", _binary(_fn))
    if _fn in BINARY and _fn not in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
        setattr(Proxy, f"__r{_name}__", _binary(_fn, reflected=True))


def _unary(fn):
    return lambda self: self.tracer.create_proxy("call_function", fn, (self,), {})


for _fn in (*UNARY, operator.abs):
    setattr(Proxy, f"__{_fn.__name__}__", _unary(_fn))
Proxy.__setitem__ = lambda self, k, v: self.tracer.create_proxy("call_function", operator.setitem, (self, k, v), {})


def has_proxy(args: Any, kwargs: Any = None) -> Proxy | None:
    """The first Proxy among (nested) arguments, or None."""
    found: list[Proxy] = []

    def look(x):
        if not found and isinstance(x, Proxy):
            found.append(x)
        return x

    map_aggregate((args, kwargs), look)
    return found[0] if found else None


class _Patcher:
    """Attribute swaps undone in reverse order (the Tracer's and ``GraphAppendingTracer``'s). Installed patchers
    form a stack (``_active``): each undoes only what it swapped, so they are undone last-in first-out."""

    def __init__(self) -> None:
        self.undo: list[tuple[Any, str, Any, bool]] = []
        _active.append(self)

    def set(self, owner: Any, name: str, value: Any, is_dict: bool = False) -> None:
        if is_dict:
            self.undo.append((owner, name, owner[name], True))
            owner[name] = value
        else:
            self.undo.append((owner, name, owner.__dict__[name], False))
            type.__setattr__(owner, name, value) if isinstance(owner, type) else setattr(owner, name, value)

    def restore(self) -> None:
        if self in _active:
            _active.remove(self)
        self._undo()
        _loose.release_if_idle()

    def _undo(self) -> None:
        while self.undo:
            owner, name, old, is_dict = self.undo.pop()
            if is_dict:
                owner[name] = old
            elif isinstance(owner, type):
                type.__setattr__(owner, name, old)
            else:
                setattr(owner, name, old)


_active: list[_Patcher] = []


class _LooseProxies:
    """The swaps that Proxies made outside any trace rely on, held while at least one of them lives."""

    def __init__(self) -> None:
        self.patcher: _Patcher | None = None
        self.count = 0

    def hold(self, p: Proxy) -> None:
        if self.patcher is None:
            self.patcher = activate(None, None)
        self.count += 1
        weakref.finalize(p, self._drop).atexit = False

    def _drop(self) -> None:
        self.count -= 1
        self.release_if_idle()

    def release_if_idle(self) -> None:
        """Undo the swaps once no loose Proxy lives, when nothing installed later still sits above them."""
        if self.count == 0 and self.patcher is not None and _active and _active[-1] is self.patcher:
            patcher, self.patcher = self.patcher, None
            patcher.restore()


_loose = _LooseProxies()


class GraphAppendingTracer:
    """A tracer that appends to ``graph``: what a Proxy built by hand (``Proxy(graph.placeholder("x"))``)
    records into. As a context manager it also lets pyframe functions record nodes when given Proxies
    (torch does this through ``__torch_function__`` at all times)."""

    concrete = False

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.root = None
        self._patcher: _Patcher | None = None

    def create_arg(self, a: Any) -> Any:
        def arg(x):
            if isinstance(x, Proxy):
                return x.node
            return x

        return map_aggregate(a, arg)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict, name=None, type_expr=None) -> Proxy:
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)), name,
                                type_expr)  # fmt: skip
        return self.proxy(node)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    # concrete values: none in a symbolic trace
    def concrete_value(self, p: Proxy) -> Any:
        return _NO_VALUE

    def static_attr(self, p: Proxy, k: str) -> Any:
        return _NOT_STATIC

    def static_method(self, p: Proxy, k: str, args, kwargs) -> Any:
        return _NOT_STATIC

    def to_bool(self, p: Proxy) -> bool:
        raise TraceError(f"symbolically traced variables cannot be used as inputs to control flow ({p.node.name}); "
                         "pass the value in concrete_args, or make the code a leaf module")  # fmt: skip

    def to_concrete(self, p: Proxy, what: str, fn) -> Any:
        raise TraceError(f"'{what}' is not supported on a symbolically traced value ({p.node.name})")

    def iter(self, p: Proxy):
        raise TraceError(f"proxy {p.node.name} cannot be iterated: only unpacking into a fixed number of names is "
                         "traced (a, b = x.shape)")  # fmt: skip

    def keys(self, p: Proxy):
        raise TraceError(f"proxy {p.node.name} has no keys: ** on a traced value is not supported")

    def __enter__(self):
        self._patcher = activate(self, None)
        return self

    def __exit__(self, *exc) -> None:
        self._patcher.restore()
        self._patcher = None


# ---- the swaps a trace makes ----------------------------------------------------------------------
# The swaps a trace makes for its length: pyframe's functions (wherever a module, a class or an instance holds
# them) become wrappers that record a node when given a Proxy; Tensor's operators step aside for a Proxy operand;
# a tracer's ``Module.__call__`` and ``Module.__getattr__`` see module calls and parameter reads. Everything is
# undone when the trace ends, so pyframe pays nothing when no trace runs.

_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)
_wrappers: dict[int, tuple[Any, Any]] = {}  # id(original) -> (original, wrapper)
_math_wrappers: dict[int, tuple[Any, Any]] = {}
# (globals dict, name) pairs registered by pyframe.fx.wrap
_user_wrapped: list[tuple[dict, str]] = []

_OWN = ("pyframe.fx", "pyframe.onnx")  # the tracers themselves call the originals
_TENSOR_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lt",
                  "le", "gt", "ge", "eq", "ne")  # fmt: skip


def _wrap(orig):
    def wrapped(*args, **kwargs):
        p = has_proxy(args, kwargs)
        if p is None:
            return orig(*args, **kwargs)
        return p.tracer.create_proxy("call_function", orig, args, kwargs)

    functools.update_wrapper(wrapped, orig)
    wrapped.__fx_original__ = orig
    return wrapped


def _collect(table: dict, candidates) -> None:
    for v in candidates:
        if isinstance(v, _FUNCTION_TYPES) and id(v) not in table:
            table[id(v)] = (v, _wrap(v))


def _pyframe_functions() -> dict[int, tuple[Any, Any]]:
    """pyframe's public functions: its top level, ops, nn.functional and linalg, and the profiler's range calls
    (``torch.ops.profiler``), which a tracer keeps in the graph."""
    if not _wrappers:
        import pyframe
        import pyframe.nn.functional as F  # noqa: N812 - torch's spelling

        for mod, names in ((pyframe, dir(pyframe)), (pyframe.ops, pyframe.ops.__all__), (F, F.__all__),
                           (pyframe.linalg, dir(pyframe.linalg))):  # fmt: skip
            _collect(_wrappers, (getattr(mod, n, None) for n in names if not n.startswith("_")))
        _collect(_wrappers, (getattr(pyframe.ops.profiler, n) for n in pyframe.ops.profiler.__all__))
        for orig, _ in list(_wrappers.values()):
            if not (getattr(orig, "__module__", "") or "").startswith("pyframe"):
                del _wrappers[id(orig)]
    return _wrappers


def _math_functions() -> dict[int, tuple[Any, Any]]:
    if not _math_wrappers:
        _collect(_math_wrappers, (v for k, v in vars(math).items() if not k.startswith("_")))
    return _math_wrappers


def _swap_in(patcher: _Patcher, namespace: dict, table: dict, is_dict: bool, owner: Any = None) -> None:
    for k, v in list(namespace.items()):
        entry = table.get(id(v))
        if entry is not None and entry[0] is v:
            if is_dict:
                patcher.set(namespace, k, entry[1], is_dict=True)
            else:
                patcher.set(owner, k, entry[1])


def _tensor_operator(orig):
    """A Tensor operator that steps aside for a Proxy operand, so Python asks the Proxy's reflected one."""

    def op(self, other):
        if isinstance(other, Proxy):
            return NotImplemented
        return orig(self, other)

    return op


def _tensor_getitem(orig):
    def getitem(self, key):
        p = has_proxy(key)
        if p is None:
            return orig(self, key)
        return p.tracer.create_proxy("call_function", operator.getitem, (self, key), {})

    return getitem


def activate(tracer, root: Any, *, autowrap_math: bool = False, extra_globals: tuple = ()) -> _Patcher:
    """Install the swaps for ``tracer`` (``root``: the module or function traced, None for a hand-built graph)."""
    from pyframe.tensor import Tensor

    table = dict(_pyframe_functions())
    if autowrap_math:
        table.update(_math_functions())
    patcher = _Patcher()
    try:
        for name, mod in list(sys.modules.items()):
            ours = name == "pyframe" or name.startswith("pyframe.") and not name.startswith(_OWN)
            if ours and mod is not None:
                _swap_in(patcher, mod.__dict__, table, is_dict=True)
        if autowrap_math:
            _swap_in(patcher, math.__dict__, table, is_dict=True)
        for g in extra_globals:
            _swap_in(patcher, g, table, is_dict=True)
        _swap_in(patcher, dict(Tensor.__dict__), table, is_dict=False, owner=Tensor)
        for name in _TENSOR_BINARY:
            for dunder in (f"__{name}__", f"__r{name}__"):
                if dunder in Tensor.__dict__:
                    patcher.set(Tensor, dunder, _tensor_operator(Tensor.__dict__[dunder]))
        patcher.set(Tensor, "__getitem__", _tensor_getitem(Tensor.__dict__["__getitem__"]))
        for g, name in _user_wrapped:
            if name in g:
                orig = _unwrapped(g[name])  # not a wrapper of the hand-built proxies' swaps
                patcher.set(g, name, _wrap(orig), is_dict=True)
        if root is not None:
            tracer._install(patcher, table)
    except BaseException:
        patcher.restore()
        raise
    return patcher


def swap_in_module_instances(patcher: _Patcher, modules, table: dict) -> None:
    """Functions held by module instances (``self.activation = F.relu``) and by their classes' modules."""
    seen: set[int] = set()
    classes: set[type] = set()
    for m in modules:
        _swap_in(patcher, m.__dict__, table, is_dict=True)
        for cls in type(m).__mro__:
            if cls not in classes:  # functions a class holds as static methods (``_fn = staticmethod(F.relu)``)
                classes.add(cls)
                for k, v in list(cls.__dict__.items()):
                    if isinstance(v, staticmethod) and table.get(id(v.__func__), (None,))[0] is v.__func__:
                        patcher.set(cls, k, staticmethod(table[id(v.__func__)][1]))
            mod = sys.modules.get(cls.__module__)
            if mod is not None and id(mod) not in seen and not cls.__module__.startswith("pyframe"):
                seen.add(id(mod))
                _swap_in(patcher, mod.__dict__, table, is_dict=True)
