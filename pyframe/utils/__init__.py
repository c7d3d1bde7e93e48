"""Utilities shared across pyframe; ``pyframe.utils.data`` as torch.utils.data."""

from pyframe.utils import data

__all__ = ["data"]
