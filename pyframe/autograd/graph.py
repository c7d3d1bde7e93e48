"""The recorded graph and the backward engine.

An op whose inputs require grad records one ``Node``: its backward function and one
edge per input (the input's own node and which of its outputs it was, or ``None`` when
that input needs no gradient). Leaves that require grad end in an ``AccumulateGrad``
node, one per leaf, which adds into ``.grad``. ``backward`` walks the graph with
Kahn's algorithm: an explicit queue, no recursion, deterministic order.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
import weakref
from collections.abc import Callable, Sequence

from pyframe import _grad_mode
from pyframe.tensor import Tensor, set_data
from pyframe.utils.hooks import RemovableHandle

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

_object_new = object.__new__
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # pyframe/
_getrefcount = sys.getrefcount


class _Name(str):
    """A node's name: a str (``node.name == "MulBackward0"``) that is also callable, as torch's ``name()``."""

    __slots__ = ()

    def __call__(self) -> str:
        return str(self)


class Node:
    """A recorded op. ``fn(*grads)`` maps the gradients of its outputs to those of its inputs.

    Same as torch.autograd.graph.Node: each op's node is an instance of a class named for it
    (``type(y.grad_fn).__name__ == "MulBackward0"``), with ``name()``, ``next_functions``, hooks and the
    tensors it saved as ``_saved_<name>`` attributes under torch's names (``_saved_self``,
    ``_saved_other``, ``_saved_result``, ...)."""

    # hooks are rare: class-level None until register_hook/register_prehook gives the node its
    # own (in its __dict__, created only then), so recording a node stores two fields fewer
    __slots__ = ("fn", "next", "saved", "versions", "__weakref__", "__dict__")
    name = _Name("Node")
    pre_hooks = None
    hooks = None
    packed = None  # what saved_tensors_hooks' pack made of ``saved``, when hooks were active at recording

    def __repr__(self) -> str:
        return f"<{self.name} object at {id(self):#x}>"

    def __call__(self, *grads):
        return self.fn(*grads)

    def __getattr__(self, attr: str):
        # only reached when ordinary lookup fails: a saved tensor under torch's name
        names = SAVED_NAMES.get(self.name, ())
        if attr in names:
            i = names.index(attr)
            if self.saved is None:
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access saved tensors after they "
                    "have already been freed). Saved intermediate values of the graph are freed when you call "
                    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward a second time "
                    "or if you need to access saved tensors after calling backward."
                )
            if i >= len(self.saved):
                return None
            if self.packed is not None:
                return self.packed[i][1](self.packed[i][0])
            return self.saved[i]
        raise AttributeError(f"'{self.name}' object has no attribute '{attr}'")

    def __dir__(self):
        return sorted({*super().__dir__(), *SAVED_NAMES.get(self.name, ())})

    @property
    def metadata(self) -> dict:
        """Same as torch's Node.metadata: a dict for the user's own annotations, kept with the node."""
        return self.__dict__.setdefault("_metadata", {})

    @property
    def next_functions(self) -> tuple:
        """Same as torch's grad_fn.next_functions: (node, output index) for each input of this node; ``(None, 0)``
        for an input that needs no gradient."""
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next)

    def register_hook(self, hook: Callable):
        """``hook(grad_inputs, grad_outputs)`` after this node ran; may return new grad_inputs."""
        if self.hooks is None:
            self.hooks = {}
        return RemovableHandle(self.hooks, hook)

    def register_prehook(self, hook: Callable):
        """``hook(grad_outputs)`` before this node runs; may return new grad_outputs."""
        if self.pre_hooks is None:
            self.pre_hooks = {}
        return RemovableHandle(self.pre_hooks, hook)


# torch's attribute names of the tensors each kind of node saves, in the order of ``Node.saved``;
# the op tables register theirs (``saved_names``)
SAVED_NAMES: dict[str, tuple] = {}


def saved_names(node_name: str, names: Sequence[str]) -> None:
    """Declare that nodes named ``node_name`` save tensors known as ``names`` (``("_saved_self", ...)``)."""
    SAVED_NAMES[node_name] = tuple(names)


_NODE_CLASSES: dict[str, type] = {}


def node_class(name: str) -> type:
    """The Node subclass of an op's nodes (one per name, made at first use): what ``type(grad_fn)`` is."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (Node,), {"__slots__": (), "name": _Name(name), "__doc__": None,
                                                          "__module__": __name__})  # fmt: skip
    return cls


class AccumulateGrad(Node):
    """The end of a leaf tensor's edge: adds the incoming gradient into ``leaf.grad``."""

    __slots__ = ("leaf",)
    name = _Name("AccumulateGrad")

    @property
    def variable(self) -> Tensor | None:
        """Same as torch's AccumulateGrad.variable: the leaf this node accumulates into."""
        return self.leaf()


def _accumulate(node: AccumulateGrad, grad: Tensor):
    leaf = node.leaf()
    if leaf is None:
        return ()
    if grad._shape != leaf._shape:
        raise RuntimeError(f"gradient of shape {list(grad._shape)} does not match the leaf's shape {list(leaf._shape)}")
    if grad.dtype is not leaf.dtype:  # e.g. a custom Function's float64 gradient for a float32 leaf (torch casts)
        grad = grad.to(leaf.dtype)
    if leaf.grad is None:
        # a tensor the leaf owns: the incoming one is taken as is when nothing else can see it
        # (torch's "steal" of a gradient with use_count 1), else cloned, as it may be shared with
        # other nodes; under create_graph the clone keeps the gradient's graph
        if _grad_mode.enabled and grad.requires_grad:
            leaf.grad = grad.clone()
        elif grad.is_sparse:  # sparse grads are summed by rebinding, never written: kept unless shared or strided
            leaf.grad = grad if _getrefcount(grad) <= 4 and grad._vals.is_contiguous() else grad.detach().clone()
        elif _sole_owner(grad):
            leaf.grad = grad
        else:
            leaf.grad = grad.detach().clone()
    elif (_grad_mode.enabled and grad.requires_grad) or (leaf.grad.is_sparse and not grad.is_sparse):
        leaf.grad = _add(leaf.grad, grad)  # create_graph keeps the graph of the sum; sparse + dense is dense
    else:
        with _grad_mode.no_grad():
            leaf.grad.add_(grad)
    return ()


def _sole_owner(grad: Tensor) -> bool:
    """Whether ``grad`` is referenced only by the engine's buffer and ``_accumulate`` (three
    references with getrefcount's own) and owns its C memory alone: then no other tensor,
    node, hook or user variable can see a later in-place ``.grad`` update."""
    return (
        _getrefcount(grad) <= 4 and grad.grad_fn is None and not grad._requires_grad and grad._base is None
        and grad._offset == 0 and grad._contig and grad._storage.owner is None and _getrefcount(grad._storage) <= 2
    )  # fmt: skip


def _grad_accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, created once and kept on the leaf as its edge (the node
    holds the leaf weakly, so there is no cycle and it dies with the leaf)."""
    e = leaf._grad_edge
    if e is not None:
        return e[0]
    acc = _object_new(AccumulateGrad)
    acc.leaf = weakref.ref(leaf)
    acc.fn = None
    acc.next = ()
    acc.saved = None
    acc.versions = None
    leaf._grad_edge = (acc, 0)
    return acc


def edge(t: Tensor):
    """The edge an op records for input ``t``: (node, output index), or None."""
    if not t.requires_grad:
        return None
    fn = t.grad_fn
    if fn is None:
        return t._grad_edge or (_grad_accumulator(t), 0)
    if t._base is not None and t._storage.version != t._grad_version:
        # the view's history predates an in-place write to its base: its gradient would be wrong
        raise RuntimeError(
            f"a view of shape {list(t._shape)} is used after its base was modified in place; pyframe does not "
            "replay views, so take the view again after the in-place operation"
        )
    return (fn, t._output_nr)


class SavedOutput:
    """An op's output as its backward reads it, without a reference cycle: a backward closure that held the
    output itself would make output -> grad_fn -> backward -> output, which only the cyclic GC frees when the
    graph is dropped without a backward. This holds a history-free alias of the output's memory (same storage,
    so the version check still catches in-place changes) and, once ``record`` got it in ``saved``, a weak
    reference to the node. Called in the backward it gives the alias, or under ``create_graph`` a fresh alias
    whose ``grad_fn`` is that node (which the engine is running, so it is alive), so higher derivatives flow
    through the output as torch's SavedVariable of an output does."""

    __slots__ = ("data", "node", "nr")

    def __init__(self, output: Tensor, nr: int = 0) -> None:
        self.data = output._view(output._shape, output._strides)
        self.node = None
        self.nr = nr  # which output of the op it is

    def _bind(self, node: Node) -> Tensor:
        self.node = weakref.ref(node)
        return self.data

    def __call__(self) -> Tensor:
        data = self.data
        node = self.node() if _grad_mode.enabled and self.node is not None else None
        if node is None:
            return data
        t = data._view(data._shape, data._strides)
        t.grad_fn, t._requires_grad, t._output_nr, t._grad_version = node, True, self.nr, data._storage.version
        return t


def record(name: str, fn: Callable, inputs: Sequence, outputs, saved: Sequence[Tensor] = (), *,
           jvp: Callable | None = None) -> None:  # fmt: skip
    """Attach a node computing ``fn(*output_grads) -> input grads`` to ``outputs``.

    ``saved`` are tensors ``fn`` reads: their versions are checked at backward time, so an
    in-place change after the forward raises instead of giving a wrong gradient. An output ``fn`` reads is given
    as a ``SavedOutput`` (there and in ``fn``), never as the output itself. Inside a forward-AD dual level,
    the outputs get their tangents (from ``jvp(*input_tangents)`` if given, else from ``fn``)."""
    node = _object_new(_NODE_CLASSES.get(name) or node_class(name))
    node.fn = fn
    # list comprehensions: a generator's frame costs more than these loops themselves; a leaf
    # that was recorded before has its edge at hand (edge() checks the rest)
    node.next = tuple(
        [
            ((t.grad_fn is None and t._grad_edge) or edge(t)) if isinstance(t, Tensor) and t.requires_grad else None
            for t in inputs
        ]
    )
    if saved:
        # an output is saved as its SavedOutput's alias (see SavedOutput), which learns its node here
        node.saved = saved = tuple([t._bind(node) if t.__class__ is SavedOutput else t for t in saved])
        node.versions = tuple([0 if t is None else t._storage.version for t in saved])
        if _saved_hooks:
            _pack(node)
    else:
        node.saved = node.versions = ()
    if anomaly:
        _remember_forward(node)
    if isinstance(outputs, Tensor):
        outputs.grad_fn = node
        outputs._requires_grad = True
        outputs._output_nr = 0
        outputs._grad_version = outputs._storage.version
    else:
        for i, out in enumerate(outputs):
            if out is not None and out.dtype.is_floating_point:
                out.grad_fn = node
                out._requires_grad = True
                out._output_nr = i
                out._grad_version = out._storage.version
    if forward_hook is not None:
        forward_hook(node, inputs, outputs, jvp)
    return node


def record_pair(name: str, fn: Callable, a, b, output: Tensor, saved: tuple | None) -> None:
    """``record(name, fn, (a, b), output, saved or ())`` for the binary ops, the commonest recording: the
    same node, built without the general loops. ``saved`` is a pair in which None stands for an operand
    the backward does not read (torch's ``_saved_self`` is None then). ``output`` is the op's new result
    (from ``fresh``/``empty_tensor``), whose output index and recorded version are already 0."""
    node = _object_new(_NODE_CLASSES.get(name) or node_class(name))
    node.fn = fn
    ea = eb = None
    if isinstance(a, Tensor) and a._requires_grad:
        ea = (a.grad_fn is None and a._grad_edge) or edge(a)
    if isinstance(b, Tensor) and b._requires_grad:
        eb = (b.grad_fn is None and b._grad_edge) or edge(b)
    node.next = (ea, eb)
    if saved:
        sa, sb = node.saved = saved
        node.versions = (0 if sa is None else sa._storage.version, 0 if sb is None else sb._storage.version)
        if _saved_hooks:
            _pack(node)
    else:
        node.saved = node.versions = ()
    if anomaly:
        _remember_forward(node)
    output.grad_fn = node
    output._requires_grad = True
    if forward_hook is not None:
        forward_hook(node, (a, b), output, None)


# ---- saved tensor hooks ---------------------------------------------------------------

# the (pack, unpack) pairs of the saved_tensors_hooks contexts open now, innermost last
_saved_hooks: list = []
# why saved_tensors_hooks may not be used now (disable_saved_tensors_hooks), or None
_hooks_disabled: str | None = None
# ``hook(node, inputs, outputs, jvp)`` forward_ad installs while a dual level is open, or None
forward_hook = None
# a callable ``observer(node, run)`` the profiler installs to time each node's backward, or None
observer = None
# anomaly detection (autograd.anomaly_mode sets these): nodes keep the stack of the forward call that recorded
# them, and backward checks each node's gradients for NaN and names that call when a node fails
anomaly = False
anomaly_check_nan = True


def _pack(node: Node) -> None:
    """Apply the innermost pack hook to each tensor ``node`` saves, keeping ``(packed, unpack)``. The hook runs
    under ``no_grad``, as torch's: an op inside it (``lambda x: x * 4``) records nothing and saves nothing."""
    pack, unpack = _saved_hooks[-1]
    with _grad_mode.no_grad():
        node.packed = tuple([(None, _none) if t is None else (pack(t), unpack) for t in node.saved])


def _none(_):
    return None


def _remember_forward(node: Node) -> None:
    """Anomaly mode: keep the stack of the forward call that recorded ``node`` (without the frames inside
    pyframe's own ops), under torch's metadata key."""
    frames = traceback.extract_stack()[:-2]
    while len(frames) > 1 and frames[-1].filename.startswith(_PACKAGE_DIR):
        frames.pop()
    node.metadata["traceback_"] = "".join(traceback.format_list(frames))


def _run_anomalous(node: Node, buf: list) -> tuple:
    """Anomaly mode: run ``node`` and check its gradients for NaN; on any error, warn with the forward call's
    stack (torch's "Error detected in ..." warning) before the error propagates."""
    try:
        in_grads = _run_observed(node, buf)
        if not isinstance(in_grads, tuple):
            in_grads = (in_grads,)
        if anomaly_check_nan:
            for i, g in enumerate(in_grads):
                if isinstance(g, Tensor) and g.dtype.is_floating_point and g.isnan().any():
                    raise RuntimeError(f"Function '{node.name}' returned nan values in its {i}th output.")
        return in_grads
    except Exception:
        trace = node.__dict__.get("_metadata", {}).get("traceback_")
        if trace is None:
            warnings.warn(f"Error detected in {node.name}. No forward pass information available. Enable detect "
                          "anomaly during forward pass for more information.", stacklevel=2)  # fmt: skip
        else:
            warnings.warn(f"Error detected in {node.name}. Traceback of forward call that caused the error:\n{trace}",
                          stacklevel=2)  # fmt: skip
        raise


def _run_observed(node: Node, buf: list):
    if observer is not None:
        return observer(node, lambda: _run_unpacked(node, buf))
    return _run_unpacked(node, buf)


def _run_unpacked(node: Node, buf: list):
    """``node.fn(*buf)`` reading what the unpack hooks return: each saved tensor object (the one the
    backward closure holds) is rebound to its unpacked tensor's memory for the call, and back after."""
    if node.packed is None:
        return node.fn(*buf)
    unpacked = [unpack(packed) for packed, unpack in node.packed]  # all before any rebinding: a tensor saved twice
    swapped, seen = [], set()
    try:
        for t, u in zip(node.saved, unpacked, strict=True):
            if u is t or id(t) in seen:  # (None, for what a node does not keep, unpacks to None)
                continue
            if not isinstance(u, Tensor):
                raise TypeError(f"the unpack hook of saved_tensors_hooks must return a Tensor, got {type(u).__name__}")
            if u._shape != t._shape or u.dtype is not t.dtype:
                raise RuntimeError(
                    f"the unpack hook returned a tensor of shape {list(u._shape)} and dtype {u.dtype.name} for a saved "
                    f"tensor of shape {list(t._shape)} and dtype {t.dtype.name} (saved by {node.name}); it must "
                    "match"
                )
            seen.add(id(t))
            swapped.append((t, t.data))
            set_data(t, u)
        return node.fn(*buf)
    finally:
        for t, old in reversed(swapped):
            set_data(t, old)


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Same as torch.autograd.graph.saved_tensors_hooks: while the context is open, every tensor a recorded
    node saves for backward goes through ``pack_hook(tensor) -> anything``, and ``unpack_hook(packed) -> tensor``
    gives it back when backward (or a ``grad_fn._saved_*`` attribute) reads it. Contexts nest; the innermost
    applies. pyframe's backward closures hold the saved tensors themselves, so packing does not free memory:
    the unpacked tensor (same shape and dtype) is what backward computes with."""

    def __init__(self, pack_hook: Callable, unpack_hook: Callable):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks_disabled is not None:
            raise RuntimeError(_hooks_disabled)
        _saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        _saved_hooks.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Same as torch.autograd.graph.save_on_cpu: saved tensors are packed into CPU memory (with ``pin_memory``,
    a copy; pyframe's tensors are in CPU memory already, so without it the tensor itself) and moved back to
    their device when backward reads them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t: Tensor):
            return (t.device, t.detach().clone() if pin_memory else t)

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Same as torch.autograd.graph.disable_saved_tensors_hooks: opening a saved_tensors_hooks context inside
    raises RuntimeError with ``error_message``."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        global _hooks_disabled
        self._before, _hooks_disabled = _hooks_disabled, self.error_message
        return self

    def __exit__(self, *exc) -> None:
        global _hooks_disabled
        _hooks_disabled = self._before


def needs_grad(*tensors) -> bool:
    """Whether an op on these inputs should record: grad mode on and any input requires grad."""
    return _grad_mode.enabled and any(isinstance(t, Tensor) and t.requires_grad for t in tensors)


# ---- the engine -----------------------------------------------------------------------


def _check_saved(node: Node) -> None:
    if node.saved is None:
        raise RuntimeError(
            "Trying to backward through the graph a second time (or directly access saved tensors after they "
            "have already been freed). Specify retain_graph=True if you need to backward a second time."
        )
    for t, v in zip(node.saved, node.versions, strict=True):
        if t is not None and t._storage.version != v:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{t.dtype.name} {list(t._shape)}] is at version {t._storage.version}; expected version {v} "
                f"instead (the tensor was saved by {node.name})"
            )


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if a.is_sparse and not b.is_sparse:  # as torch's: dense + sparse (sparse + dense has no sparse form)
        return b + a
    return a + b


def _add_into(cb: list, nr: int, g: Tensor) -> None:
    """``cb[nr] += g``: in place when the buffer's tensor is the engine's alone (no other reference: not a
    gradient handed to two inputs, not a view, not under create_graph), else a new sum."""
    a = cb[nr]
    if a is None:
        cb[nr] = g
    elif (
        not _grad_mode.enabled and type(a) is Tensor and type(g) is Tensor and a._shape == g._shape
        and a.dtype is g.dtype and _getrefcount(a) <= 3 and a.grad_fn is None and a._base is None and a._contig
        and a._offset == 0 and a._storage.owner is None and _getrefcount(a._storage) <= 2
    ):  # fmt: skip
        a.add_(g)
    else:
        cb[nr] = a + g


def _leading(nodes: dict, targets: set) -> set:
    """The ids of the nodes with a wanted node strictly below them (those autograd.grad must run)."""
    order, state = [], {}
    for start in nodes.values():
        if id(start) in state:
            continue
        stack = [(start, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if id(n) in state:
                continue
            state[id(n)] = True
            stack.append((n, True))
            stack.extend((e[0], False) for e in n.next if e is not None and id(e[0]) not in state)
    leads: set = set()
    for n in order:  # children first
        if any(e is not None and (id(e[0]) in targets or id(e[0]) in leads) for e in n.next):
            leads.add(id(n))
    return leads


def run_backward(
    roots: Sequence[Tensor],
    grads: Sequence[Tensor],
    retain_graph: bool,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
):
    """Propagate ``grads`` from ``roots``. With ``inputs``, return their gradients instead
    of accumulating into leaves (``autograd.grad``)."""
    root_edges = []
    for t, g in zip(roots, grads, strict=True):
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        root_edges.append((edge(t), g))

    # which (node, output) pairs the caller wants back, for autograd.grad
    wanted = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            e = edge(t)
            if e is None:
                raise RuntimeError(f"input {i} of autograd.grad does not require grad")
            wanted.setdefault((id(e[0]), e[1]), []).append(i)

    # count, per node, the edges that lead into it from nodes reachable from the roots (each root node once:
    # two outputs of one op are two roots of one node)
    deps: dict[int, int] = {}
    nodes: dict[int, Node] = {}
    for e, _ in root_edges:
        nodes[id(e[0])] = e[0]
    stack = list(nodes.values())
    seen = set(nodes)
    while stack:
        n = stack.pop()
        for e in n.next:
            if e is None:
                continue
            child = e[0]
            deps[id(child)] = deps.get(id(child), 0) + 1
            if id(child) not in seen:
                seen.add(id(child))
                nodes[id(child)] = child
                stack.append(child)
    # autograd.grad runs only the nodes on a path to an input, as torch: the graph behind a non-leaf
    # input is neither run nor freed, so a later backward through it still works
    runs = None
    if inputs is not None:
        runs = _leading(nodes, {k[0] for k in wanted})
        deps = {}
        for n in nodes.values():
            if id(n) in runs:
                for e in n.next:
                    if e is not None:
                        deps[id(e[0])] = deps.get(id(e[0]), 0) + 1

    buffers: dict[int, list] = {}
    for (node, nr), g in root_edges:
        buf = buffers.setdefault(id(node), [None] * max(nr + 1, 1))
        if len(buf) <= nr:
            buf.extend([None] * (nr + 1 - len(buf)))
        buf[nr] = _add(buf[nr], g)
    results = [None] * (len(inputs) if inputs is not None else 0)
    # a root reachable from another root waits for its dependencies like any node
    ready = []
    for e, _ in root_edges:
        if deps.get(id(e[0]), 0) == 0 and all(n is not e[0] for n in ready):
            ready.append(e[0])

    with _grad_mode.set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            buf = buffers.pop(id(node), [None])
            if node.pre_hooks:
                for hook in list(node.pre_hooks.values()):
                    new = hook(tuple(buf))
                    if new is not None:
                        buf = list(new)
            if inputs is not None:  # after the hooks: autograd.grad returns what a tensor hook made of it, as torch
                for nr, g in enumerate(buf):
                    for i in wanted.get((id(node), nr), ()):
                        results[i] = g
            if runs is not None and id(node) not in runs:
                continue  # an input's own node (or one off every path to an input): its gradient is taken above
            if isinstance(node, AccumulateGrad):
                if inputs is None and buf[0] is not None:
                    _accumulate(node, buf[0])
                    if node.hooks:  # torch's AccumulateGrad hooks: after .grad holds the sum (DDP's bucket trigger)
                        for hook in list(node.hooks.values()):
                            hook((), tuple(buf))
                in_grads = ()
            else:
                _check_saved(node)
                if all(g is None for g in buf):  # nothing flows through this node
                    in_grads = (None,) * len(node.next)
                else:
                    if anomaly:
                        in_grads = _run_anomalous(node, buf)
                    elif node.packed is None and observer is None:
                        in_grads = node.fn(*buf)
                    else:
                        in_grads = _run_observed(node, buf)
                    if not isinstance(in_grads, tuple):
                        in_grads = (in_grads,)
                if node.hooks:
                    for hook in list(node.hooks.values()):
                        new = hook(in_grads, tuple(buf))
                        if new is not None:
                            in_grads = tuple(new)
                if not retain_graph:  # free what backward needed: the closure holds the saved tensors too
                    node.saved = None
                    node.fn = None
                    if node.packed is not None:
                        node.packed = None
            for e, g in zip(node.next, in_grads, strict=False):
                if e is None:
                    continue
                child, nr = e
                cb = buffers.get(id(child))
                if cb is None:
                    cb = buffers[id(child)] = [None] * (nr + 1)
                elif len(cb) <= nr:
                    cb.extend([None] * (nr + 1 - len(cb)))
                if g is not None:
                    _add_into(cb, nr, g)
                deps[id(child)] -= 1
                if deps[id(child)] == 0:
                    ready.append(child)
            in_grads = g = None  # the buffers alone hold the gradients: _accumulate may take one as is
    return results
