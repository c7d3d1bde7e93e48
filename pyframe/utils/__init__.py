"""Utilities shared across pyframe: ``hooks`` (RemovableHandle) and ``data`` (as torch.utils.data, imported by
``import pyframe``). Nothing is imported here, so the autograd engine can use ``hooks`` without the data loader."""
