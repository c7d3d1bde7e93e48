"""Checkpoints: ``pyframe.save`` and ``pyframe.load``. ``format`` is pyframe's byte layout (encode, decode,
validate); ``files`` the file work (paths, atomic writes, metadata hooks); ``torch_reader`` and ``unpickler``
read files written by ``torch.save`` without running them."""

from pyframe import _submodules
from pyframe.serialization.files import load, read_metadata, register_metadata_hook, save
from pyframe.serialization.format import FORMAT_VERSION, MAGIC, CheckpointError
from pyframe.serialization.unpickler import (
    WeightsOnlyError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = [
    "save", "load", "read_metadata", "register_metadata_hook", "CheckpointError", "WeightsOnlyError", "MAGIC",
    "FORMAT_VERSION", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
]  # fmt: skip


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
