"""``ShapeProp``: run a GraphModule on example inputs and record each node's shape and dtype in
``node.meta["tensor_meta"]``. Same as torch.fx.passes.shape_prop."""

from __future__ import annotations

from typing import Any, NamedTuple

from pyframe.fx.interpreter import Interpreter
from pyframe.fx.node import Node, map_aggregate
from pyframe.tensor import Tensor

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """Same fields as torch.fx.passes.shape_prop.TensorMetadata (no quantized tensors: ``is_quantized`` is
    False and ``qparams`` empty)."""

    shape: tuple
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract(t: Tensor) -> TensorMetadata:
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()), None, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and sets ``meta["tensor_meta"]`` (a TensorMetadata, or
    the same structure of them for a node returning a tuple or list) and ``meta["type"]`` on every node."""

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        return self.run(*args)
