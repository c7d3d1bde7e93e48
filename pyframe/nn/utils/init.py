"""``skip_init``: a module built without running its parameter initialization. Same as torch.nn.utils.init."""

from __future__ import annotations

import inspect
from typing import Any

from pyframe.nn.modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """Same as torch.nn.utils.skip_init: ``module_cls(*args, **kwargs)`` built on the meta device (no memory, no
    initialization) and then given uninitialized memory on ``device`` (default "cpu") by ``to_empty``, for code
    that fills the parameters itself. The class must take a ``device`` argument."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
