"""Checkpoints: ``pyframe.save`` and ``pyframe.load``. ``format`` is the byte layout (encode, decode,
validate); ``files`` the file work (paths, atomic writes, metadata hooks)."""

from pyframe.serialization.files import load, read_metadata, register_metadata_hook, save
from pyframe.serialization.format import FORMAT_VERSION, MAGIC, CheckpointError

__all__ = ["save", "load", "read_metadata", "register_metadata_hook", "CheckpointError", "MAGIC", "FORMAT_VERSION"]
