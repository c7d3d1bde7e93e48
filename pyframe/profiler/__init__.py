"""Same as torch.profiler: ``profile`` with activities, a step ``schedule`` and ``on_trace_ready``, over the
op profiler of ``pyframe.autograd.profiler`` (what pyframe's ops run, with self and total CPU time)."""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable, Iterable

from pyframe.autograd import profiler as _autograd_profiler
from pyframe.autograd.profiler import EventList, record_function

_ = record_function  # torch.profiler.record_function

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler"]  # fmt: skip


class ProfilerActivity(enum.Enum):
    """Same as torch.profiler.ProfilerActivity: what to profile. pyframe records CPU activity; naming CUDA is
    accepted and adds nothing."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3


class ProfilerAction(enum.Enum):
    """Same as torch.profiler.ProfilerAction: what a schedule asks for at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:  # fmt: skip
    """Same as torch.profiler.schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle, ``warmup`` and
    ``active`` recorded steps (the last one saves), ``repeat`` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("schedule(): wait, warmup, repeat and skip_first must be >= 0 and active > 0")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if pos == cycle - 1 else ProfilerAction.RECORD

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """Same as torch.profiler.tensorboard_trace_handler: an ``on_trace_ready`` writing each trace as
    ``<dir_name>/<worker>.<time>.pt.trace.json``."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{os.uname().nodename}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json"))

    return handler


class profile(_autograd_profiler.profile):  # noqa: N801 - torch's name
    """Same as torch.profiler.profile: ``with profile(activities=[ProfilerActivity.CPU]) as prof:`` records the
    ops run inside; with ``schedule`` only the steps it marks (``prof.step()`` ends a step), and
    ``on_trace_ready(prof)`` is called at the end of each active cycle."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None):  # fmt: skip
        super().__init__(record_shapes=record_shapes)
        self.activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self._recording = False

    def _action(self) -> ProfilerAction:
        return self.schedule(self.step_num) if self.schedule is not None else ProfilerAction.RECORD

    def start(self) -> None:
        """Open the profile (what ``with`` does)."""
        self._apply(self._action())

    def stop(self) -> None:
        """Close the profile; a recording in progress is handed to ``on_trace_ready``."""
        if self._recording:
            super().__exit__(None, None, None)
            self._recording = False
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _apply(self, action: ProfilerAction) -> None:
        record = action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if record and not self._recording:
            self._events = EventList()
            super().__enter__()
            self._recording = True
        elif not record and self._recording:
            super().__exit__(None, None, None)
            self._recording = False

    def step(self) -> None:
        """End a step: the schedule decides whether the next one is recorded; the end of an active cycle is
        handed to ``on_trace_ready``."""
        before = self._action()
        self.step_num += 1
        if before is ProfilerAction.RECORD_AND_SAVE and self._recording:
            super().__exit__(None, None, None)
            self._recording = False
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        self._apply(self._action())
