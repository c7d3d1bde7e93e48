"""``export``: a model traced once on example inputs (``pyframe.fx.capture``), each node of the graph turned
into ONNX nodes by its exporter, parameters as initializers, dynamic axes kept symbolic."""

from __future__ import annotations

import inspect
import operator
from typing import Any

import numpy as np

from pyframe import _dtype, _grad_mode
from pyframe.fx import Tracer, capture
from pyframe.fx.node import Node, map_aggregate
from pyframe.nn.modules.module import Module
from pyframe.onnx import math_ops, nn_ops, sequence_ops, shape_ops  # noqa: F401 - they register the exporters
from pyframe.onnx._context import Context, OnnxExporterError, UnsupportedOperatorError, V, onnx_type
from pyframe.onnx._registry import FUNCTIONS, METHODS, MODULES
from pyframe.tensor import Tensor

__all__ = ["export", "is_in_onnx_export"]

DEFAULT_OPSET = 20  # torch.onnx.export's default
MIN_OPSET, MAX_OPSET = 14, 21
_exporting = [False]


def is_in_onnx_export() -> bool:
    """Same as torch.onnx.is_in_onnx_export: True while ``export`` traces the model."""
    return _exporting[0]


class _ExportTracer(Tracer):
    """Traces through every module except those exported whole (recurrent layers, MultiheadAttention)."""

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return _whole_exporter(m) is not None


def _whole_exporter(m: Module):
    """The exporter of a module exported whole: its class's, or a base class's when forward is the base's."""
    for cls in type(m).__mro__:
        if cls in MODULES:
            return MODULES[cls] if type(m).forward is cls.forward else None
    return None


def _where(root, node: Node) -> str:
    path = node.meta.get("module_path")
    if path is None:
        return f"in the model's own forward (graph node {node.name})"
    try:
        kind = type(root.get_submodule(path)).__name__ if path else type(root).__name__
    except AttributeError:
        kind = "?"
    return f"in module '{path}' ({kind}), graph node {node.name}"


def _describe(node: Node) -> str:
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        return f"module {node.target}"
    from pyframe.fx.node import _target_name

    return _target_name(node.target)


def _check_mutation(root, node: Node, order: dict[Node, int], live: set[Node]) -> None:
    """An in-place op is exported as its out-of-place form only when nothing reads the old value later."""
    method = node.op == "call_method" and node.target.endswith("_") and not node.target.endswith("__")
    setitem = node.op == "call_function" and node.target is operator.setitem
    inplace = method or setitem or node.kwargs.get("inplace") is True
    if not inplace or not node.args or not isinstance(node.args[0], Node):
        return
    if setitem and any(a in live for a in _aliases(node.args[0])):
        raise UnsupportedOperatorError(f"pyframe.onnx.export: writing into a tensor (x[...] = v) has no ONNX "
                                       f"exporter, {_where(root, node)}")  # fmt: skip
    base = node.args[0]
    later = [u for n in _aliases(base) for u in n.users if u is not node and order[u] > order[node] and u in live]
    if later:
        raise UnsupportedOperatorError(
            f"pyframe.onnx.export: in-place {_describe(node)} changes {base.name}, which {later[0].name} reads "
            f"(itself or a view sharing its memory) afterwards; ONNX values are immutable: use the out-of-place "
            f"form ({_where(root, node)})"
        )


# operations whose result may share memory with their first argument
_VIEWS = frozenset(("view", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "expand", "expand_as",
                    "broadcast_to", "narrow", "select", "t", "flatten", "unflatten", "split", "chunk", "unbind",
                    "tensor_split", "getitem", "getattr", "detach", "contiguous", "view_as", "reshape_as",
                    "swapaxes", "movedim", "moveaxis", "diagonal", "as_strided", "unfold", "squeeze_",
                    "unsqueeze_"))  # fmt: skip


def _is_view(n: Node) -> bool:
    name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "") if n.op == "call_function" else ""
    return name in _VIEWS


def _aliases(base: Node) -> set[Node]:
    """``base`` and every node that may share its memory: views of it, what it is a view of, and so on."""
    family, todo = {base}, [base]
    while todo:
        n = todo.pop()
        linked = [u for u in n.users if _is_view(u) and u.args and u.args[0] is n]
        if _is_view(n) and n.args and isinstance(n.args[0], Node):
            linked.append(n.args[0])
        for m in linked:
            if m not in family:
                family.add(m)
                todo.append(m)
    return family


def _bind_inputs(model, args: tuple, kwargs: dict) -> tuple:
    """The inputs as positional arguments of ``forward``, defaults filled in."""
    fn = model.forward if isinstance(model, Module) else model
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(v for k, v in bound.arguments.items() if sig.parameters[k].kind in positional)


class _Whole(Module):
    """A module exported whole (an LSTM, MultiheadAttention) given as the model itself."""

    def __init__(self, module: Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args):
        return self.module(*args)


def _value_info(helper, name: str, val: Tensor, axes: dict[int, str], dynamic: bool):
    dims = [axes.get(i, None if dynamic else s) for i, s in enumerate(val.shape)]
    return helper.make_tensor_value_info(name, onnx_type(val.dtype), dims)


def _normalise_axes(dynamic_axes: dict | None) -> dict[str, dict[int, str]]:
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(k): str(v) for k, v in axes.items()}
        else:
            out[name] = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
    return out


def export(model, args: Any = (), f=None, *, kwargs: dict | None = None, export_params: bool = True,
           verbose: bool | None = None, input_names: list[str] | None = None, output_names: list[str] | None = None,
           opset_version: int | None = None, dynamic_axes: dict | None = None,
           keep_initializers_as_inputs: bool = False, do_constant_folding: bool = True, training=None,
           dynamo: bool = False, **unused):  # fmt: skip
    """Same as torch.onnx.export (the TorchScript-style exporter's arguments): trace ``model`` once on
    ``args`` (in eval mode), build the ONNX graph with the ``onnx`` package, check it with
    ``onnx.checker`` and write it to ``f`` (a path or a binary file; None writes nothing). Returns the
    ``onnx.ModelProto``.

    ``dynamic_axes`` maps input and output names to the axes that may change (a list, or a dict naming
    them); sizes read from those axes stay symbolic in the graph. An operation without an exporter raises
    ``UnsupportedOperatorError`` naming it and the module it was called in; the exportable operations are
    listed in docs/onnx.md. Differs from torch: ``export_params=False``, ``dynamic_shapes`` and
    ``custom_opsets`` are not supported, and ``dynamo`` is ignored (there is one exporter)."""
    try:
        import onnx
        from onnx import helper
    except ImportError as e:  # pragma: no cover - the onnx extra
        raise ImportError("pyframe.onnx.export needs the onnx package: pip install 'pyframe-core[onnx]'") from e
    for key in ("dynamic_shapes", "custom_opsets", "custom_translation_table"):
        if unused.get(key):
            raise NotImplementedError(f"pyframe.onnx.export: {key} is not supported")
    if not export_params:
        raise NotImplementedError("pyframe.onnx.export: export_params=False is not supported")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxExporterError(f"opset_version {opset} is not supported; use {MIN_OPSET} to {MAX_OPSET}")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    inputs = _bind_inputs(model, args, kwargs or {})
    root = _Whole(model) if isinstance(model, Module) and _whole_exporter(model) is not None else model

    modes = [(m, m.training) for m in model.modules()] if isinstance(model, Module) else []
    if isinstance(model, Module) and training not in ("TRAINING", True) and getattr(training, "name", "") != "TRAINING":
        model.eval()
    _exporting[0] = True
    try:
        tracer = _ExportTracer()
        with _grad_mode.no_grad():
            try:
                gm = capture(root, inputs, tracer=tracer)
            except Exception as e:
                e.add_note("(raised while pyframe.onnx.export traced the model's forward on the example inputs: "
                           "see docs/fx.md for what a trace follows)")  # fmt: skip
                raise
            _check_specialized(
                gm, root, tracer.specialized, _input_axes(gm, input_names, _normalise_axes(dynamic_axes))
            )
        proto = _build(gm, root, opset, do_constant_folding, input_names, output_names,
                       _normalise_axes(dynamic_axes), keep_initializers_as_inputs, helper)  # fmt: skip
    finally:
        _exporting[0] = False
        for m, mode in modes:
            m.training = mode
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        onnx.save_model(proto, f)
    return proto


def _input_axes(gm, input_names, axes: dict) -> dict[Node, Any]:
    """Placeholder -> its dynamic axes (a list of them for a tuple of tensors), inputs named as ``_build`` does."""
    names, count, out = list(input_names or []), 0, {}
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op != "placeholder" or val is None:
            continue
        group = isinstance(val, (tuple, list))
        found = []
        for j, t in enumerate(val if group else [val]):
            if isinstance(t, Tensor):
                name = names[count] if count < len(names) else (f"{node.name}.{j}" if group else node.name)
                count += 1
                found.append(axes.get(name, {}))
            else:
                found.append({})
        out[node] = found if group else found[0]
    return out


def _check_specialized(gm, root, specialized: list, axes: dict[Node, Any]) -> None:
    """A size along a dynamic axis that became a Python number while tracing (``int(x.size(0))``, a loop over
    ``range(T)``) fixes the graph to the traced size. The graph is run again with every dynamic axis one longer:
    a value computed from sizes that changes, or a graph that no longer runs, is such a fixed size: refused."""
    if not specialized or not any(a for v in axes.values() for a in (v if isinstance(v, list) else [v])):
        return
    from pyframe.fx import Interpreter
    from pyframe.ops import creation

    reads = {n for n in gm.graph.nodes if (n.op == "call_function" and getattr(n.target, "__name__", "") in
             ("getattr", "numel") and (n.target.__name__ == "numel" or n.args[1] == "shape")) or
             (n.op == "call_method" and n.target in ("size", "numel", "nelement"))}  # fmt: skip
    from_sizes: set[Node] = set()
    for n in gm.graph.nodes:
        if n in reads or any(a in from_sizes for a in n.all_input_nodes):
            from_sizes.add(n)
    watched = {n: what for n, what in specialized if n in from_sizes}
    if not watched:
        return

    def longer(t: Any, ax: dict) -> Any:
        if not isinstance(t, Tensor) or not ax:
            return t
        arr = t.numpy()
        for i in ax:
            arr = np.concatenate([arr, arr.take([-1], axis=i)], axis=i)
        return creation.tensor(arr)

    args = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val, ax = node.meta.get("val"), axes.get(node, {})
            if isinstance(val, (tuple, list)):
                args.append(type(val)(longer(t, a) for t, a in zip(val, ax, strict=True)))
            else:
                args.append(longer(val, ax) if val is not None else (node.args[0] if node.args else None))
    seen: dict[Node, Any] = {}

    class Watch(Interpreter):
        def run_node(self, n: Node) -> Any:
            out = super().run_node(n)
            if n in watched:
                seen[n] = out
            return out

    first = next(iter(watched))
    hint = "keep sizes as tensors or size values (x.view(x.size(0), -1)), or leave that axis out of dynamic_axes"
    try:
        Watch(gm, garbage_collect_values=False).run(*args)
    except Exception as e:  # noqa: BLE001 - any failure means the graph is fixed to the traced sizes
        raise OnnxExporterError(
            f"pyframe.onnx.export: a size along a dynamic axis became a Python number while "
            f"tracing ({watched[first]} of {first.name}, {_where(root, first)}), and the graph "
            f"does not run at another size ({type(e).__name__}: {e}); {hint}"
        ) from None
    for n, what in watched.items():
        if n in seen and not _same(seen[n], n.meta.get("val")):
            raise OnnxExporterError(
                f"pyframe.onnx.export: {what} of {n.name} ({_where(root, n)}) depends on a "
                f"dynamic axis, but the exported graph would keep its traced value; {hint}"
            )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and bool((a == b).all())
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return False
    return a == b


def _build(gm, root, opset: int, fold: bool, input_names, output_names, axes: dict, keep_inits: bool, helper):
    from pyframe._version import __version__

    ctx = Context(opset, fold)
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    live: set[Node] = set()
    for node in reversed(graph.nodes):
        if node.op == "output" or node in live:
            live.add(node)
            live.update(node.all_input_nodes)
    for node in graph.nodes:  # a write into a value the graph reads, even from a node nothing else reads
        _check_mutation(root, node, order, live)
    env: dict[Node, Any] = {}
    graph_inputs = []
    names = list(input_names or [])

    def graph_input(val: Tensor, default: str) -> V:
        name = names[len(graph_inputs)] if len(graph_inputs) < len(names) else default
        v = V(ctx.fresh(name), val.dtype, tuple(val.shape), dynamic=bool(axes.get(name)))
        graph_inputs.append(_value_info(helper, v.name, val, axes.get(name, {}), False))
        return v

    for node in graph.nodes:  # tensors, and tuples of them (an LSTM's (h, c)), flattened as torch does
        val = node.meta.get("val")
        if node.op != "placeholder":
            continue
        if isinstance(val, Tensor):
            env[node] = graph_input(val, node.name)
        elif isinstance(val, (tuple, list)) and any(isinstance(t, Tensor) for t in val):
            env[node] = type(val)(graph_input(t, f"{node.name}.{i}") if isinstance(t, Tensor) else t
                                  for i, t in enumerate(val))  # fmt: skip
    unknown = set(axes) - {gi.name for gi in graph_inputs} - set(output_names or [])
    if unknown:
        raise OnnxExporterError(f"dynamic_axes names {sorted(unknown)}, which are neither input nor output names")
    for node in graph.nodes:
        if node not in live or node in env:
            continue
        if node.op == "placeholder":
            env[node] = node.args[0] if node.args else None
            continue
        if node.op == "output":
            out_node = node
            continue
        val = node.meta.get("val")
        if node.op == "get_attr":
            env[node] = ctx.param(val, node.target) if isinstance(val, Tensor) else val
            continue
        args = map_aggregate(node.args, lambda a: env[a] if isinstance(a, Node) else a)
        kwargs = map_aggregate(node.kwargs, lambda a: env[a] if isinstance(a, Node) else a)
        flat = _values_in((args, kwargs))
        if not any(isinstance(a, V) and not a.const for a in flat) and (fold or not flat):
            env[node] = val  # computed from constants alone: the traced value is the answer
            continue
        ctx.dynamic = any(a.dynamic for a in flat)
        ctx.val, ctx.kind = val, node.op
        ctx.prefix = node.meta.get("module_path", "") + "/" + node.name if node.meta.get("module_path") else node.name
        env[node] = _export_node(ctx, root, node, args, kwargs)
        _annotate(env[node], val, ctx.dynamic, all(isinstance(a, V) and a.const for a in flat) and bool(flat))
    outputs, out_infos = [], []
    leaves: list[tuple[Any, Any]] = []  # (exported value, traced value), nested outputs flattened as torch does

    def flatten(value: Any, val: Any) -> None:
        if isinstance(val, (tuple, list)):
            for a, b in zip(value if isinstance(value, (tuple, list)) else val, val, strict=True):
                flatten(a, b)
        elif val is not None:
            leaves.append((value, val))

    def leaf_of(a: Any) -> Any:
        if isinstance(a, Node):
            flatten(env[a], a.meta.get("val"))
        elif a is not None:
            flatten(a, a)
        return a

    map_aggregate(out_node.args[0], leaf_of)
    names = list(output_names or [])
    for i, (value, val) in enumerate(leaves):
        if not isinstance(val, Tensor):
            raise OnnxExporterError(f"the model's output {i} is a {type(val).__name__}, not a tensor")
        name = names[i] if i < len(names) else ("output" if len(leaves) == 1 else f"output_{i}")
        ctx.prefix = "output"
        v = ctx.v(value)
        ctx.nodes.append(helper.make_node("Identity", [v.name], [name], name=ctx.fresh(f"/output/Identity_{i}")))
        dynamic = v.dynamic if isinstance(v, V) else False
        out_infos.append(_value_info(helper, name, val, axes.get(name, {}), dynamic))
        outputs.append(name)
    inits = ctx.initializers
    if keep_inits:
        graph_inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits]
    g = helper.make_graph(ctx.nodes, type(root).__name__ if isinstance(root, Module) else "main", graph_inputs,
                          out_infos, initializer=inits)  # fmt: skip
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(g, opset_imports=opsets, producer_name="pyframe", producer_version=__version__,
                             ir_version=helper.find_min_ir_version_for(opsets))  # fmt: skip


def _values_in(a: Any) -> list[V]:
    found: list[V] = []
    map_aggregate(a, lambda x: found.append(x) if isinstance(x, V) else x)
    return found


def _annotate(value: Any, val: Any, dynamic: bool, const: bool) -> None:
    """Give the exporter's result values the traced dtype and shape."""
    if isinstance(value, V) and isinstance(val, Tensor):
        value.dtype, value.shape, value.dynamic = val.dtype, tuple(val.shape), dynamic
        value.const = const
    elif isinstance(value, (tuple, list)) and isinstance(val, (tuple, list)) and len(value) == len(val):
        for a, b in zip(value, val, strict=True):
            _annotate(a, b, dynamic, const)
    elif isinstance(value, V) and isinstance(val, (tuple, list)):  # a traced shape
        value.dtype, value.shape, value.dynamic = value.dtype, (len(val),), dynamic
    elif isinstance(value, V) and isinstance(val, (int, float)):
        value.shape, value.dynamic = (), dynamic
        value.dtype = (
            _dtype.bool_ if isinstance(val, bool) else _dtype.int64 if isinstance(val, int) else _dtype.float32
        )


def _export_node(ctx: Context, root, node: Node, args: tuple, kwargs: dict) -> Any:
    fn = None
    if node.op == "call_function":
        fn = FUNCTIONS.get(node.target) or FUNCTIONS.get(getattr(node.target, "__fx_original__", None))
        ctx.target_name = getattr(node.target, "__name__", "")
    elif node.op == "call_method":
        fn = METHODS.get(node.target)
        ctx.target_name = node.target
    elif node.op == "call_module":
        mod = root.get_submodule(node.target)
        mfn = _whole_exporter(mod)
        if mfn is not None:
            return mfn(ctx, mod, node.target, args, kwargs)
    if fn is None:
        raise UnsupportedOperatorError(f"pyframe.onnx.export: no ONNX exporter for {_describe(node)}, "
                                       f"{_where(root, node)}")  # fmt: skip
    try:
        return fn(ctx, args, kwargs)
    except OnnxExporterError as e:
        raise type(e)(f"pyframe.onnx.export: {_describe(node)}: {e} ({_where(root, node)})") from None
