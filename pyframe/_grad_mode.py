"""Grad mode: whether ops record the autograd graph. Same as torch.no_grad and friends."""

from __future__ import annotations

from contextlib import ContextDecorator

enabled = True


def is_grad_enabled() -> bool:
    return enabled


class set_grad_enabled(ContextDecorator):  # noqa: N801 - PyTorch's name
    """Sets grad mode at once; as a context manager, restores the previous mode on exit."""

    def __init__(self, mode: bool):
        global enabled
        self.prev = enabled
        enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global enabled
        enabled = self.prev
        return False


class no_grad(ContextDecorator):  # noqa: N801
    def __enter__(self):
        global enabled
        self.prev, enabled = enabled, False
        return self

    def __exit__(self, *exc):
        global enabled
        enabled = self.prev
        return False


class enable_grad(ContextDecorator):  # noqa: N801
    def __enter__(self):
        global enabled
        self.prev, enabled = enabled, True
        return self

    def __exit__(self, *exc):
        global enabled
        enabled = self.prev
        return False
