"""torch's module paths under torch.nn.modules (and torch.nn.common_types) exist in pyframe with the same names,
both by attribute and by import, and hold the same classes as pyframe.nn, whose private bases are real bases."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import pyframe
import pyframe.nn as nn

torch = pytest.importorskip("torch")

# torch's submodules and names pyframe does not have, each with why
NOT_HERE = {
    "_functions": "torch's autograd Functions for SyncBatchNorm and CrossMapLRN2d: internals",
    "linear_cross_entropy": "torch 2.13's chunked linear + cross entropy (issue 23's conform task)",
    "linear_cross_entropy_options": "its options",
}
NAMES_NOT_HERE = {
    "Container": "deprecated since torch 0.4 (warns and asks for Sequential)",
    "_ConvTransposeMixin": "deprecated; torch keeps it for old subclasses",
    "_LazyProtocol": "a typing Protocol",
    "_WrappedHook": "torch's wrapper of weak-referenced hooks",
    "LinearCrossEntropyLoss": "issue 23's conform task",
    "TripletMarginWithDistanceLoss": "issue 23's conform task (with F.triplet_margin_with_distance_loss)",
    "FeatureAlphaDropout": "waits for F.feature_alpha_dropout (conform task)",
    "BackwardHookFunction": "internal",
}


def _torch_submodules():
    return [i.name for i in pkgutil.iter_modules(torch.nn.modules.__path__) if i.name not in NOT_HERE]


@pytest.mark.parametrize("name", _torch_submodules())
def test_torch_submodule_path_holds_torchs_names(name):
    tmod = importlib.import_module(f"torch.nn.modules.{name}")
    pmod = importlib.import_module(f"pyframe.nn.modules.{name}")
    assert getattr(pyframe.nn.modules, name) is pmod
    wanted = [
        k
        for k, v in vars(tmod).items()
        if getattr(v, "__module__", None) == tmod.__name__
        and (inspect.isclass(v) or (inspect.isfunction(v) and name == "utils"))
        and k not in NAMES_NOT_HERE
    ]
    missing = [k for k in wanted if not hasattr(pmod, k)]
    assert not missing, f"pyframe.nn.modules.{name} lacks {missing}"
    for k in wanted:  # a public class is the very object pyframe.nn exports
        if not k.startswith("_") and hasattr(torch.nn, k):
            assert getattr(pmod, k) is getattr(nn, k), k


def test_private_bases_are_real_bases_and_import_statements_work():
    from pyframe.nn.modules.batchnorm import _BatchNorm, _NormBase
    from pyframe.nn.modules.instancenorm import _InstanceNorm
    from pyframe.nn.modules.utils import _ntuple, _pair, consume_prefix_in_state_dict_if_present

    from pyframe.nn.modules.conv import _ConvNd, _ConvTransposeNd
    from pyframe.nn.modules.loss import _Loss, _WeightedLoss
    from pyframe.nn.modules.padding import _ReflectionPadNd
    from pyframe.nn.modules.pooling import _AvgPoolNd, _LPPoolNd, _MaxPoolNd

    cases = [(nn.BatchNorm2d(3), _BatchNorm), (nn.BatchNorm1d(3), _NormBase), (nn.InstanceNorm2d(3), _InstanceNorm),
             (nn.InstanceNorm1d(3), _NormBase), (nn.Conv2d(1, 1, 1), _ConvNd), (nn.ConvTranspose2d(1, 1, 1), _ConvNd),
             (nn.ConvTranspose1d(1, 1, 1), _ConvTransposeNd), (nn.CrossEntropyLoss(), _WeightedLoss),
             (nn.MSELoss(), _Loss), (nn.ReflectionPad2d(1), _ReflectionPadNd), (nn.AvgPool2d(2), _AvgPoolNd),
             (nn.LPPool2d(2, 2), _LPPoolNd), (nn.MaxPool1d(2), _MaxPoolNd)]  # fmt: skip
    for module, base in cases:
        tmodule = getattr(torch.nn, type(module).__name__)
        tbase = getattr(importlib.import_module(f"torch.nn.modules.{base.__module__.rpartition('.')[2]}"),
                        base.__name__, None)  # fmt: skip
        assert isinstance(module, base), (module, base)
        if tbase is not None:  # the same relation in torch
            assert issubclass(tmodule, tbase)
    assert not isinstance(nn.ReplicationPad2d(1), _ReflectionPadNd)
    assert _pair(3) == (3, 3) and _pair([1, 2]) == (1, 2) and _ntuple(3, "t")(4) == (4, 4, 4)
    state = {"module.a": 1, "module.b.c": 2, "d": 3}
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert state == {"a": 1, "b.c": 2, "d": 3}
    assert pyframe.nn.modules.batchnorm.SyncBatchNorm is nn.SyncBatchNorm


def test_common_types_names_match_torch():
    import torch.nn.common_types as theirs

    import pyframe.nn.common_types as ours

    wanted = [k for k in vars(theirs) if k.startswith("_") and k.endswith("_t")]
    assert len(wanted) > 15 and all(hasattr(ours, k) for k in wanted)
    assert ours._size_2_t == (int | tuple[int, int])
