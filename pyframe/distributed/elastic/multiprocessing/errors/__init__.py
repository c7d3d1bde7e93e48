"""torch.distributed.elastic.multiprocessing.errors: ``@record`` on a script's ``main`` writes an uncaught exception
to the file named by ``TORCHELASTIC_ERROR_FILE`` (the launcher sets it, one per worker) as torch's JSON, so the
launcher can name the failing rank and show its traceback; the exception is then raised as before. Without the
variable the exception is only raised (and printed by Python, as usual)."""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["record", "ErrorHandler", "get_error_handler"]

F = TypeVar("F", bound=Callable[..., Any])


class ErrorHandler:
    """Same as torch's ErrorHandler: ``record_exception`` writes the error file if one is named."""

    def initialize(self) -> None:
        """Nothing to set up: Python's default handler already prints an uncaught exception."""

    def record_exception(self, e: BaseException) -> None:
        """Writes ``e``'s message, traceback and time to ``$TORCHELASTIC_ERROR_FILE`` (if set) in torch's format."""
        path = os.environ.get("TORCHELASTIC_ERROR_FILE")
        if not path:
            return
        data = {"message": {"message": f"{type(e).__name__}: {e}", "extraInfo": {
            "py_callstack": "".join(traceback.format_exception(type(e), e, e.__traceback__)),
            "timestamp": str(int(time.time()))}}}  # fmt: skip
        with open(path, "w") as f:
            json.dump(data, f)


def get_error_handler() -> ErrorHandler:
    """Same as torch's get_error_handler."""
    return ErrorHandler()


def record(fn: F, error_handler: ErrorHandler | None = None) -> F:
    """Same as torch.distributed.elastic.multiprocessing.errors.record: ``fn`` wrapped so that an exception it
    raises is written to the launcher's error file before it propagates (``SystemExit`` passes untouched)."""
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit:
            raise
        except BaseException as e:
            handler.record_exception(e)
            raise

    return wrapper  # type: ignore[return-value]
