"""Neural-network building blocks: ``Module``, ``Parameter``, layers, losses, containers, and
the ``functional``, ``init`` and ``utils`` submodules. Same as torch.nn."""

from pyframe.nn import functional, init  # isort: skip - the layers are built on these
from pyframe import _submodules
from pyframe.nn import utils
from pyframe.nn.modules import *  # noqa: F403
from pyframe.nn.modules import __all__ as _modules_all
from pyframe.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer", "functional", "init", "utils",
    *_modules_all,
]  # fmt: skip


def __getattr__(name: str):
    # torch.nn.parallel (and nn.SyncBatchNorm and nn.DataParallel, which live there): imported on first use
    if name in ("parallel", "SyncBatchNorm", "DataParallel"):
        import importlib

        parallel = importlib.import_module("pyframe.nn.parallel")
        return parallel if name == "parallel" else getattr(parallel, name)
    module = _submodules.submodule(__name__, name)  # nn.attention, nn.common_types... on first use
    if module is None:
        raise AttributeError(f"module 'pyframe.nn' has no attribute {name!r}")
    return module
