"""Export to ONNX. Same as torch.onnx's ``export`` (the TorchScript-style exporter's arguments), built on
``pyframe.fx.capture`` and the ``onnx`` package (``pip install 'pyframe-core[onnx]'``). See docs/onnx.md
for the exportable operations."""

from pyframe import _submodules
from pyframe.onnx._context import OnnxExporterError, UnsupportedOperatorError
from pyframe.onnx.exporter import export, is_in_onnx_export

__all__ = ["OnnxExporterError", "UnsupportedOperatorError", "export", "is_in_onnx_export"]


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
