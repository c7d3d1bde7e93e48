"""Models as graphs. Same as torch.fx: ``symbolic_trace`` records a module's forward as a ``Graph`` of
``Node``s, held with the generated Python code by a ``GraphModule``; ``Interpreter`` and ``Transformer``
run and rewrite graphs; ``subgraph_rewriter.replace_pattern`` swaps one pattern for another;
``passes.shape_prop.ShapeProp`` records shapes. ``capture(model, args)`` is the same trace on real inputs
(control flow follows their values), which the ONNX exporter builds on."""

from pyframe import _submodules
from pyframe.fx import passes, subgraph_rewriter
from pyframe.fx.graph import Graph
from pyframe.fx.graph_module import GraphModule
from pyframe.fx.interpreter import Interpreter, Transformer
from pyframe.fx.node import Node, map_arg
from pyframe.fx.proxy import Proxy, TraceError
from pyframe.fx.subgraph_rewriter import replace_pattern
from pyframe.fx.tracer import PH, Tracer, capture, symbolic_trace, wrap

__all__ = [
    "Graph", "GraphModule", "Interpreter", "Node", "PH", "Proxy", "TraceError", "Tracer", "Transformer", "capture",
    "map_arg", "passes", "replace_pattern", "subgraph_rewriter", "symbolic_trace", "wrap",
]  # fmt: skip


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
