"""torch's paths into ``torch.nn.modules``, for code that imports a class by them (``from
torch.nn.modules.batchnorm import _BatchNorm``, ``isinstance(m, nn.modules.conv._ConvNd)``).

pyframe files its layers by family (batch and instance norm both in ``normalization.py``, ``Fold`` beside the
convolutions), so some of torch's submodules have no file here. ``TORCH_PATHS`` names, for each such submodule,
the pyframe modules and names it holds; importing ``pyframe.nn.modules`` registers an alias module under the torch
name (``pyframe.nn.modules.batchnorm``, in ``sys.modules`` and as an attribute, so both the import statement and
attribute access work). Where pyframe has a file of torch's name but keeps one of torch's names elsewhere
(``MultiheadAttention`` is in ``attention.py``, torch has it in ``activation``), the name is added to that file's
module. The classes are the same objects either way, so the private bases are real bases: ``BatchNorm2d`` is an
instance of ``nn.modules.batchnorm._BatchNorm``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

from pyframe.nn.modules import (  # noqa: F401 - the modules the table names, imported before it is applied
    _utils,
    activation,
    attention,
    container,
    conv,
    dropout,
    lazy,
    linear,
    linear_cross_entropy,
    loss,
    normalization,
    padding,
    pooling,
    upsampling,
)

__all__ = ["TORCH_PATHS", "LATE"]

_NORM = "_NormBase _BatchNorm _InstanceNorm _LazyNormBase"

# torch.nn.modules.<key>: {pyframe.nn.modules.<file>: "the names it takes from there"}
TORCH_PATHS: dict[str, dict[str, str]] = {
    "activation": {"attention": "MultiheadAttention"},
    "adaptive": {"loss": "AdaptiveLogSoftmaxWithLoss _ASMoutput", "container": "ModuleList Sequential",
                 "linear": "Linear"},
    "batchnorm": {"normalization": f"{_NORM} BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d "
                                   "LazyBatchNorm3d", "lazy": "LazyModuleMixin"},
    "instancenorm": {"normalization": f"{_NORM} InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d "
                                      "LazyInstanceNorm2d LazyInstanceNorm3d"},
    "channelshuffle": {"upsampling": "ChannelShuffle"},
    "pixelshuffle": {"upsampling": "PixelShuffle PixelUnshuffle"},
    "fold": {"conv": "Fold Unfold"},
    "linear_cross_entropy_options": {"linear_cross_entropy": "LinearCrossEntropyOptions"},
    "utils": {"_utils": "_ntuple _single _pair _triple _quadruple _reverse_repeat_tuple _list_with_default "
                        "consume_prefix_in_state_dict_if_present"},
}  # fmt: skip

# names that live above nn.modules (SyncBatchNorm is nn.parallel's): the alias module looks them up in pyframe.nn
# when first asked, as pyframe.nn itself imports nn.parallel on first use
LATE: dict[str, tuple[str, ...]] = {"batchnorm": ("SyncBatchNorm",)}


def _late_getattr(torch_name: str):
    def __getattr__(name: str):
        if name in LATE[torch_name]:
            return getattr(sys.modules["pyframe.nn"], name)
        raise AttributeError(f"module 'pyframe.nn.modules.{torch_name}' has no attribute {name!r}")

    return __getattr__


def _apply() -> None:
    package = sys.modules[__name__.rpartition(".")[0]]
    for torch_name, sources in TORCH_PATHS.items():
        full = f"{package.__name__}.{torch_name}"
        if full in sys.modules:
            target = sys.modules[full]
        elif importlib.util.find_spec(full) is not None:  # pyframe has a file of this name: add to it
            target = importlib.import_module(full)
        else:
            target = types.ModuleType(full, f"torch.nn.modules.{torch_name}'s names, from pyframe's modules.")
            sys.modules[full] = target
            if torch_name in LATE:
                target.__getattr__ = _late_getattr(torch_name)
        for source, names in sources.items():
            module = sys.modules[f"{package.__name__}.{source}"]
            for name in names.split():
                setattr(target, name, getattr(module, name))
        setattr(package, torch_name, target)


_apply()
