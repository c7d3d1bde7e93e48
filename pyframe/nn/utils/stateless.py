"""``functional_call`` under its old path. Same as torch.nn.utils.stateless (deprecated there since torch 2.0 in
favour of ``torch.func.functional_call``, which this calls after torch's warning)."""

from __future__ import annotations

import warnings
from typing import Any

from pyframe import func as _func
from pyframe.nn.modules.module import Module

__all__ = ["functional_call"]


def functional_call(module: Module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:  # fmt: skip
    """Same as torch.nn.utils.stateless.functional_call: ``module`` called with the given parameters and buffers in
    place of its own (``pyframe.func.functional_call``); deprecated, it warns as torch does."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)  # fmt: skip
    return _func.functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                                 strict=strict)  # fmt: skip
