"""``Timer``: timeit's Timer made aware of pyframe (warm-up, a pinned thread count, replicates). Same as
torch.utils.benchmark.Timer for Python statements; C++ statements and Callgrind are not supported."""

from __future__ import annotations

import enum
import statistics
import textwrap
import timeit
from collections.abc import Callable
from typing import Any

from pyframe.utils.benchmark.utils import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """Same as torch.utils.benchmark.timer: ``timeit.default_timer()`` (pyframe's kernels are synchronous, so
    there is nothing to wait for first)."""
    return timeit.default_timer()


class Language(enum.Enum):
    """Same as torch.utils.benchmark.Language: the statement's language (only ``PYTHON`` runs here)."""

    PYTHON = 0
    CPP = 1


class Timer:
    """Same as torch.utils.benchmark.Timer: measures a Python statement (a string) like ``timeit.Timer``, with a
    warm-up, the thread count pinned to ``num_threads`` (default 1) while it runs, and replicates.

    Args:
        stmt: the code timed in a loop.
        setup: code run once before, defining what ``stmt`` uses.
        global_setup: C++ only in torch; must be empty here.
        timer: the clock (default ``timeit.default_timer``).
        globals: the namespace ``stmt`` runs in; ``torch`` is bound to ``pyframe`` unless given.
        label: the measurement's title, and the table ``Compare`` puts it in.
        sub_label: the row within that table.
        description: the column within that table.
        env: the environment tag (``Compare`` keeps environments apart).
        num_threads: the thread count while measuring (``pyframe.set_num_threads``), restored after.
        language: ``"python"`` (``Language.CPP`` raises ``NotImplementedError``).
    """

    _timer_cls: type = timeit.Timer

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,  # noqa: A002 - torch's name
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            import pyframe

            self._globals.setdefault("torch", pyframe)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(
                    f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply be moved to "
                    "`setup`."
                )
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("Timer: C++ statements (language='cpp') need torch's C++ toolchain")
        else:
            raise ValueError(f"Invalid language `{language}`.")

        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _timeit(self, number: int) -> float:
        # Even calling a timer in C++ takes ~50 ns, so no real operation should take 1 ns (torch's floor)
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Same as torch.utils.benchmark.Timer.timeit: ``stmt`` run ``number`` times after a warm-up of
        ``number // 100`` (at least 2) runs; one measurement of ``number`` runs."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))  # warm-up
            return common.Measurement(
                number_per_run=number, raw_times=[self._timeit(number=number)], task_spec=self._task_spec
            )

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not supported, as in torch: use ``blocked_autorange``."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> None:
        """Not supported, as in torch: use ``blocked_autorange``."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(
        self,
        number: int,
        time_hook: Callable[[], float],
        stop_hook: Callable[[list[float]], bool],
        min_run_time: float,
        max_run_time: float | None = None,
        callback: Callable[[int, float], None] | None = None,
    ) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while (total_time < min_run_time) or (not can_stop):
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        with common.set_torch_threads(self._task_spec.num_threads):
            # Estimate the block size needed for measurement to be negligibly affected by timer overhead
            overhead = statistics.median(self._timeit(0) for _ in range(5))
            number = 1
            while True:
                time_taken = self._timeit(number)
                relative_overhead = overhead / time_taken
                if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time:
                    break
                if number * 10 > 2147483647:  # avoid overflowing the C int number of runs
                    break
                number *= 10
        return number

    def blocked_autorange(
        self, callback: Callable[[int, float], None] | None = None, min_run_time: float = 0.2
    ) -> common.Measurement:
        """Same as torch.utils.benchmark.Timer.blocked_autorange: picks a block size (runs per replicate) until the
        timer's overhead is below 0.01% of a block, then times blocks until ``min_run_time`` seconds have passed.

        Args:
            callback: called as ``callback(number, time)`` after each block.
            min_run_time: the total measured time to reach, in seconds.

        Returns:
            A ``Measurement`` of every block (``median``, ``mean``, ``iqr``, ``times`` per run).
        """
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), lambda times: True, min_run_time=min_run_time, callback=callback
        )
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], None] | None = None,
    ) -> common.Measurement:
        """Same as torch.utils.benchmark.Timer.adaptive_autorange: blocks as ``blocked_autorange`` until the IQR is
        below ``threshold`` times the median (after more than 3 blocks and ``min_run_time`` seconds) or
        ``max_run_time`` seconds have passed."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                return common.Measurement(
                    number_per_run=number, raw_times=times, task_spec=self._task_spec
                ).meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), stop_hook, min_run_time, max_run_time, callback=callback
        )
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)
