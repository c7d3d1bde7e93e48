"""RemovableHandle: what every hook registration returns. Same as torch.utils.hooks.RemovableHandle."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count()


class RemovableHandle:
    """Removes one hook from the dict it was added to (and the same key from ``extra_dicts``,
    e.g. per-hook flags). Usable as a context manager; removing twice is harmless."""

    __slots__ = ("id", "_dicts")

    def __init__(self, hooks: dict, hook: Any = None, *, extra_dicts: tuple = ()):
        self.id = next(_ids)
        self._dicts = (hooks, *extra_dicts)
        if hook is not None:
            hooks[self.id] = hook

    def remove(self) -> None:
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<RemovableHandle id={self.id}>"
