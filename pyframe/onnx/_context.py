"""The ONNX graph under construction: values, initializers, and the small helpers every exporter uses
(constants, casts, shapes that stay symbolic along dynamic axes, reductions across opset changes)."""

from __future__ import annotations

from typing import Any

import numpy as np

import pyframe
from pyframe import _dtype
from pyframe.nn import functional as F  # noqa: N812 - torch's spelling
from pyframe.tensor import Tensor

__all__ = ["V", "Context", "OnnxExporterError", "UnsupportedOperatorError", "get", "out_dtype"]

INT64_MAX = 2**63 - 1


class OnnxExporterError(RuntimeError):
    """The model cannot be exported as asked. Same role as torch.onnx.errors.OnnxExporterError."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operation has no ONNX exporter; the message names the op and the module path it was called in."""


def onnx_type(dt) -> int:
    from onnx import TensorProto

    return {
        "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
        "int64": TensorProto.INT64, "int32": TensorProto.INT32, "bool": TensorProto.BOOL,
    }[dt.name]  # fmt: skip


class V:
    """An ONNX value: its name, and what the trace knows of it (dtype, the traced shape, whether its shape
    depends on a dynamic axis, whether it is computed from initializers alone)."""

    __slots__ = ("name", "dtype", "shape", "dynamic", "const")

    def __init__(self, name: str, dtype=None, shape: tuple | None = None, dynamic: bool = False, const=False):
        self.name, self.dtype, self.shape, self.dynamic, self.const = name, dtype, shape, dynamic, const

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"V({self.name})"


class Context:
    """Collects nodes and initializers; ``op`` adds a node and returns its output value(s)."""

    def __init__(self, opset: int, fold: bool) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.opset = opset
        self.fold = fold
        self.nodes: list = []
        self.initializers: list = []
        self.prefix = "n"
        self._names: set[str] = set()
        self._consts: dict[tuple, V] = {}
        self._params: dict[int, V] = {}
        self._shapes: dict[str, V] = {}
        self.dynamic = False  # the current node reads a value whose shape follows a dynamic axis
        self.arrays: dict[str, np.ndarray] = {}  # initializer name -> its data
        # the node being exported: its traced value, kind and target's name
        self.val: Any = None
        self.kind = ""
        self.target_name = ""

    # ---- names and nodes -------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    def op(self, op_type: str, inputs: list, n_out: int = 1, **attrs) -> Any:
        """Append one node; inputs are values, numbers or arrays (made constants) or None (absent)."""
        names = [("" if x is None else self.v(x).name) for x in inputs]
        while names and names[-1] == "":
            names.pop()
        outs = [self.fresh(f"/{self.prefix}/{op_type}_out{i}" if n_out > 1 else f"/{self.prefix}/{op_type}")
                for i in range(n_out)]  # fmt: skip
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, names, outs, name=self.fresh(f"/{self.prefix}/{op_type}_node"),
                                                **attrs))  # fmt: skip
        vals = [V(o, dynamic=self.dynamic) for o in outs]
        return vals[0] if n_out == 1 else vals

    # ---- constants ---------------------------------------------------------------------------------
    def v(self, x: Any, dtype=None) -> V:
        """``x`` as a value: values pass through; Tensors, arrays and numbers become initializers."""
        if isinstance(x, V):
            return x if dtype is None else self.cast(x, dtype)
        if isinstance(x, Tensor):
            arr = x.detach().numpy()
            dt = x.dtype
        else:
            arr = np.asarray(x)
            dt = dtype or (_dtype.bool_ if arr.dtype == np.bool_ else _dtype.int64 if arr.dtype.kind in "iu"
                           else _dtype.float32)  # fmt: skip
        if dtype is not None:
            dt = dtype
        arr = np.array(arr, dtype=dt.np, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        key = (dt.name, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        name = self.fresh(f"onnx::Constant_{len(self._consts) + len(self.initializers)}")
        self.initializers.append(self.numpy_helper.from_array(arr, name))
        self.arrays[name] = arr
        out = V(name, dt, arr.shape, False, True)
        if key is not None:
            self._consts[key] = out
        return out

    def param(self, t: Tensor, name: str) -> V:
        """A parameter or buffer as an initializer named by its path (shared tensors once)."""
        if id(t) in self._params:
            return self._params[id(t)]
        arr = np.array(t.detach().numpy(), order="C")
        out = V(self.fresh(name), t.dtype, tuple(t.shape), False, True)
        self.initializers.append(self.numpy_helper.from_array(arr, out.name))
        self.arrays[out.name] = arr
        self._params[id(t)] = out
        return out

    def value_of(self, x: V) -> np.ndarray:
        """The data of an initializer."""
        return self.arrays[x.name]

    def squeeze_scalar(self, x: Any, dt) -> V:
        """A 0-d value of dtype ``dt`` from a number or a traced size."""
        if isinstance(x, V):
            x = x if len(x.shape or ()) == 0 else self.squeeze(x, [0])
            return self.cast(x, dt)
        return self.v(np.array(x, dt.np), dt)

    # ---- helpers ------------------------------------------------------------------------------------
    def cast(self, x: Any, dt) -> V:
        if isinstance(x, V):
            if x.dtype is dt:
                return x
            out = self.op("Cast", [x], to=onnx_type(dt))
            out.dtype, out.shape = dt, x.shape
            return out
        return self.v(x, dt)

    def shape(self, x: V) -> Any:
        """``x``'s shape: a tuple when it cannot change with a dynamic axis, else a 1-d int64 value."""
        if not x.dynamic:
            return tuple(x.shape)
        if x.name not in self._shapes:
            s = self.op("Shape", [x])
            s.dtype, s.shape, s.dynamic = _dtype.int64, (x.rank,), True
            self._shapes[x.name] = s
        return self._shapes[x.name]

    def dim(self, x: V, i: int) -> Any:
        s = self.shape(x)
        if isinstance(s, tuple):
            return s[i]
        out = self.op("Gather", [s, np.array(i if i >= 0 else i + x.rank, np.int64)], axis=0)
        out.dtype, out.shape, out.dynamic = _dtype.int64, (), True
        return out

    def make_shape(self, items: list) -> Any:
        """A shape from ints and 0-d/1-d int64 values: a list of ints when all are known, else one value."""
        if not any(isinstance(i, V) for i in items):
            return [int(i) for i in items]
        parts = [self.unsqueeze(i, [0]) if isinstance(i, V) and len(i.shape or ()) == 0 else
                 i if isinstance(i, V) else np.array([int(i)], np.int64) for i in items]  # fmt: skip
        out = self.op("Concat", parts, axis=0)
        out.dtype, out.shape, out.dynamic = _dtype.int64, (len(items),), True
        return out

    def shape_v(self, s: Any) -> V:
        return self.v(np.array(s, np.int64)) if not isinstance(s, V) else s

    def unsqueeze(self, x: Any, axes: list[int]) -> V:
        out = self.op("Unsqueeze", [x, np.array(axes, np.int64)])
        if isinstance(x, V):
            out.dtype = x.dtype
            out.shape = None if x.shape is None else _insert_dims(x.shape, axes)
        return out

    def squeeze(self, x: V, axes: list[int]) -> V:
        out = self.op("Squeeze", [x, np.array(axes, np.int64)])
        out.dtype = x.dtype
        return out

    def reduce(self, op_type: str, x: V, axes: list[int] | None, keepdims: bool) -> V:
        """Reduce* with axes as an input (opset 18+; ReduceSum since 13) or an attribute before."""
        as_input = self.opset >= 18 or op_type == "ReduceSum"
        if axes is None:
            return self.op(op_type, [x], keepdims=int(keepdims))
        if as_input:
            return self.op(op_type, [x, np.array(axes, np.int64)], keepdims=int(keepdims))
        return self.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))


def _insert_dims(shape: tuple, axes: list[int]) -> tuple:
    out = list(shape)
    n = len(shape) + len(axes)
    for a in sorted(a % n for a in axes):
        out.insert(a, 1)
    return tuple(out)


# ---- reading an exporter's arguments ------------------------------------------------------------
def get(args: tuple, kwargs: dict, i: int, name: str, default: Any = None) -> Any:
    """The argument at position ``i`` or keyword ``name``."""
    if name in kwargs:
        return kwargs[name]
    return args[i] if i < len(args) else default


def fns(*names: str, f: bool = False) -> tuple:
    ns = F if f else pyframe
    return tuple(getattr(ns, n) for n in names if getattr(ns, n, None) is not None)


def size_args(args: tuple, start: int) -> list:
    """``x.view(2, 3)`` and ``x.view((2, 3))`` alike."""
    rest = args[start:]
    if len(rest) == 1 and isinstance(rest[0], (tuple, list, V)) and not (isinstance(rest[0], V) and
                                                                           rest[0].shape == ()):  # fmt: skip
        return rest[0] if isinstance(rest[0], V) else list(rest[0])
    return list(rest)


def out_dtype(ctx: Context):
    """The traced result's dtype; a Python number computed from traced sizes is int64 (or float32/bool)."""
    v = ctx.val
    if isinstance(v, Tensor):
        return v.dtype
    if isinstance(v, bool):
        return _dtype.bool_
    return _dtype.int64 if isinstance(v, int) else _dtype.float32 if isinstance(v, float) else None


def norm_axes(dim: Any, rank: int) -> list[int] | None:
    if dim is None or dim == ():
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % rank if rank else 0 for d in dims]
