"""torch's paths into ``torch.optim`` for code that imports an optimizer by its file (``from torch.optim.adamw import
AdamW``): pyframe keeps the adaptive methods in one file (``adaptive.py``) and AdamW beside Adam, so each torch file
name with no file here is registered as an alias module holding the same class objects."""

from __future__ import annotations

import sys
import types

from pyframe.optim import adam, adaptive

__all__ = ["TORCH_PATHS"]

# torch.optim.<key>: (pyframe module, class name)
TORCH_PATHS = {
    "adamw": (adam, "AdamW"), "adagrad": (adaptive, "Adagrad"), "adadelta": (adaptive, "Adadelta"),
    "rmsprop": (adaptive, "RMSprop"), "adamax": (adaptive, "Adamax"), "nadam": (adaptive, "NAdam"),
    "radam": (adaptive, "RAdam"),
}  # fmt: skip


def _apply() -> None:
    package = sys.modules[__name__.rpartition(".")[0]]
    for torch_name, (module, name) in TORCH_PATHS.items():
        full = f"{package.__name__}.{torch_name}"
        alias = types.ModuleType(full, f"torch.optim.{torch_name}'s {name}, from {module.__name__}.")
        setattr(alias, name, getattr(module, name))
        alias.__all__ = [name]
        sys.modules[full] = alias
        setattr(package, torch_name, alias)


_apply()
