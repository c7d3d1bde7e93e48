"""Same as torch.multiprocessing: Python's ``multiprocessing`` with tensors that travel through queues and
process arguments as shared memory, not copies, plus ``spawn``.

Sending a tensor (``queue.put(t)``, ``Process(args=(model,))`` under the spawn start method) moves its storage into
shared memory first (``Tensor.share_memory_``) and sends a duplicate of its file descriptor; the receiver maps the
same pages, so
writes on either side are seen by both. ``Module.share_memory()`` shares every parameter and buffer, as Hogwild
training needs. Under the fork start method children inherit the mappings.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.reduction
import sys
import traceback
from collections.abc import Callable
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports the standard module

from pyframe.multiprocessing.reductions import init_reductions

__all__ = [
    "spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
    "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
]  # and, through the star import, every name of Python's multiprocessing  # fmt: skip

init_reductions()

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    """Same as torch.multiprocessing.get_all_sharing_strategies: both names are accepted; pyframe shares through
    file descriptors (torch's ``file_descriptor``) under either."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """Same as torch.multiprocessing.get_sharing_strategy."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Same as torch.multiprocessing.set_sharing_strategy; ``file_system`` is accepted and shares through file
    descriptors too."""
    global _strategy
    if new_strategy not in ("file_system", "file_descriptor"):
        raise ValueError(f"sharing strategy must be 'file_system' or 'file_descriptor', got {new_strategy!r}")
    _strategy = new_strategy


class ProcessException(Exception):
    """A process started by ``spawn`` failed."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid


class ProcessRaisedException(ProcessException):
    """Same as torch's: the function of process ``error_index`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """Same as torch's: process ``error_index`` exited with ``exit_code`` without raising in Python."""

    def __init__(self, msg: str, error_index: int, pid: int, exit_code: int):
        super().__init__(msg, error_index, pid)
        self.exit_code = exit_code


def _wrap(fn: Callable, i: int, args: tuple, errors) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        errors.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """Same as torch.multiprocessing.ProcessContext: the processes ``spawn`` started; ``join()`` waits."""

    def __init__(self, processes: list, error_queues: list):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self) -> list[int]:
        """The processes' ids."""
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every process; True when all ended. A failed process raises ProcessRaisedException (its
        traceback in the message) or ProcessExitedException, after the others are terminated."""
        for p in self.processes:
            p.join(timeout)
        for i, p in enumerate(self.processes):
            if p.exitcode not in (None, 0):
                for q in self.processes:
                    if q.is_alive():
                        q.terminate()
                if not self.error_queues[i].empty():
                    tb = self.error_queues[i].get()
                    raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n{tb}",
                                                 i, p.pid)  # fmt: skip
                raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                                             p.exitcode)  # fmt: skip
        return all(p.exitcode is not None for p in self.processes)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:  # fmt: skip
    """Same as torch.multiprocessing.start_processes: run ``fn(i, *args)`` in ``nprocs`` processes started
    with ``start_method``."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    context.join()
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:  # fmt: skip
    """Same as torch.multiprocessing.spawn: ``fn(i, *args)`` in ``nprocs`` new processes (spawn start method);
    with ``join`` waits and raises ProcessRaisedException when one of them raised."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
