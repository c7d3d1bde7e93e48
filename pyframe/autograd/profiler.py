"""The op profiler: torch.autograd.profiler's ``profile``, ``record_function`` and the event tables.

pyframe has no dispatcher to instrument, so the profiler watches Python calls (``sys.setprofile``) and keeps those
of the public ops: every function of ``pyframe``, ``pyframe.nn.functional`` and ``pyframe.linalg`` and every
Tensor method, named ``aten::<name>`` as torch names them; the backward engine reports each node it runs
(``autograd::engine::evaluate_function: MulBackward0`` around ``MulBackward0``); ``record_function`` adds ranges
of your own. An op's total time runs from its call to its return; its self time is that minus the ops it called.
Only the thread that opened the profile is watched.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable

from pyframe.autograd import graph

__all__ = ["profile", "record_function", "FunctionEvent", "FunctionEventAvg", "EventList"]


class FunctionEvent:
    """One profiled call: ``name``, start and end (microseconds since the profile opened), its thread, the
    tensors' shapes when ``record_shapes``, and ``self_cpu_time_total`` (its time minus its children's)."""

    def __init__(self, name: str, start_us: float, thread: int, input_shapes: list | None = None):
        self.name = self.key = name
        self.start_us = start_us
        self.end_us = start_us
        self.thread = thread
        self.input_shapes = input_shapes or []
        self.children_us = 0.0
        self.count = 1

    @property
    def cpu_time_total(self) -> float:
        """Wall time of the call, in microseconds."""
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        """Wall time of the call minus the profiled calls it made, in microseconds."""
        return self.cpu_time_total - self.children_us

    cpu_time = cpu_time_total
    device_time_total = cuda_time_total = self_device_time_total = self_cuda_time_total = 0.0

    def __repr__(self) -> str:
        return f"<FunctionEvent name={self.name} cpu_time_total={self.cpu_time_total:.3f}us>"


class FunctionEventAvg:
    """Same as torch's FunctionEventAvg: the events of one key summed (``count``, total and self time) with
    per-call averages (``cpu_time``, ``self_cpu_time``)."""

    def __init__(self, key: str, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, ev: FunctionEvent) -> FunctionEventAvg:
        self.count += 1
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        return self

    @property
    def cpu_time(self) -> float:
        """Average total time per call, in microseconds."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def self_cpu_time(self) -> float:
        """Average self time per call, in microseconds."""
        return self.self_cpu_time_total / max(self.count, 1)

    device_time_total = cuda_time_total = self_device_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0

    def __repr__(self) -> str:
        return f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us>"


_SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "self_cpu_time", "count", "cuda_time_total",
              "self_cuda_time_total", "device_time_total", "self_device_time_total", "cpu_memory_usage",
              "self_cpu_memory_usage")  # fmt: skip


class EventList(list):
    """Same as torch's EventList: a list of events with ``table``, ``key_averages``, ``total_average`` and
    ``export_chrome_trace``."""

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events grouped by name (and input shapes), one ``FunctionEventAvg`` each, in first-seen order."""
        groups: dict = {}
        for ev in self:
            key = (ev.key, str(ev.input_shapes)) if group_by_input_shape else ev.key
            if key not in groups:
                groups[key] = FunctionEventAvg(ev.key, ev.input_shapes if group_by_input_shape else None)
            groups[key].add(ev)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one ``FunctionEventAvg`` (key ``Total``)."""
        total = FunctionEventAvg("Total")
        for ev in self:
            total.count += ev.count
            total.cpu_time_total += ev.cpu_time_total
            total.self_cpu_time_total += ev.self_cpu_time_total
        return total

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self times, in microseconds (the profiled time, each call counted once)."""
        return sum(ev.self_cpu_time_total for ev in self)

    def __str__(self) -> str:
        """The table (``print(prof.function_events)`` prints it in torch)."""
        return self.table()

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              header: str | None = None, top_level_events_only: bool = False, **kwargs) -> str:  # fmt: skip
        """The events as torch's text table: name, self and total CPU time (with percentages), averages and
        call counts, sorted by ``sort_by`` (descending; ``None`` keeps their order)."""
        if sort_by is not None and sort_by not in _SORT_KEYS:
            raise ValueError(f"table(): sort_by must be one of {', '.join(_SORT_KEYS)}; got {sort_by!r}")
        rows = list(self)
        if sort_by is not None:
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total_self = self.self_cpu_time_total or 1.0
        shapes = any(getattr(e, "input_shapes", None) for e in rows)
        cols = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        if shapes:
            cols.append("Input Shapes")
        width = max([len(c) for c in cols[1:]] + [12])
        name_w = min(max([len(e.key) for e in rows] + [len("Name")]), max_name_column_width)
        line = "-" * name_w + ("  " + "-" * width) * (len(cols) - 1)
        out = [line, _row(cols, name_w, width), line]
        for e in rows:
            count = e.count
            cells = [e.key[:name_w], f"{100 * e.self_cpu_time_total / total_self:.2f}%", _us(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total_self:.2f}%", _us(e.cpu_time_total),
                     _us(e.cpu_time_total / max(count, 1)), str(count)]  # fmt: skip
            if shapes:
                cells.append(str(e.input_shapes or ""))
            out.append(_row(cells, name_w, width))
        out += [line, f"Self CPU time total: {_us(self.self_cpu_time_total)}", ""]
        return ((header + "\n") if header else "") + "\n".join(out)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): one complete event per call."""
        events = [
            {"ph": "X", "cat": "cpu_op", "name": e.name, "pid": os.getpid(), "tid": e.thread, "ts": e.start_us,
             "dur": e.cpu_time_total, "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
            for e in self if isinstance(e, FunctionEvent)
        ]  # fmt: skip
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


def _us(t: float) -> str:
    if t >= 1e6:
        return f"{t / 1e6:.3f}s"
    if t >= 1e3:
        return f"{t / 1e3:.3f}ms"
    return f"{t:.3f}us"


def _row(cells, name_w: int, width: int) -> str:
    return f"{cells[0]:<{name_w}}" + "".join(f"  {c:>{width}}" for c in cells[1:])


# ---- which calls are ops ------------------------------------------------------------------------------------


@functools.cache
def _op_codes() -> dict:
    """code object -> op name, or -> (closure variable, {id(value): name}) where several ops share one code
    object (the table-made unary and binary ops): the variable whose value tells them apart."""
    # the package as loaded (no import: pyframe and its ops sit above autograd, and all exist once a profile opens)
    pyframe = sys.modules["pyframe"]
    linalg, functional = pyframe.linalg, pyframe.nn.functional
    found: dict = {}  # code -> {name: function}
    sources = [(n, v) for n, v in vars(pyframe.Tensor).items()]
    sources += [(n, getattr(ns, n, None)) for ns in (linalg, functional, pyframe) for n in getattr(ns, "__all__", ())]
    for name, fn in sources:
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or not name or name.startswith("_") and not name.startswith("__"):
            continue
        if name.startswith("__"):
            name = _DUNDERS.get(name)
        if name is None or name.startswith(_NOT_OPS):
            continue
        found.setdefault(code, {}).setdefault(name, fn)
    codes: dict = {}
    for code, named in found.items():
        fns: dict = {}  # one function under several names (mul, multiply, __mul__): its own __name__, else the first
        for n, f in named.items():
            if id(f) not in fns or n == f.__name__:
                fns[id(f)] = (n, f)
        if len(fns) == 1:
            codes[code] = "aten::" + next(iter(fns.values()))[0]
            continue
        for i, var in enumerate(code.co_freevars):
            values = {}
            for n, f in fns.values():
                values[id(f.__closure__[i].cell_contents)] = "aten::" + n
            if len(values) == len(fns):
                codes[code] = (var, values)
                break
    return codes


# queries and settings, not ops
_NOT_OPS = ("get_", "set_", "is_", "manual_seed", "seed", "initial_seed", "use_deterministic", "are_deterministic",
            "promote_types", "can_cast", "result_type", "element_size", "dim", "size", "stride", "numel", "data_ptr",
            "storage_offset", "ndimension", "nelement", "tolist", "item", "numpy")  # fmt: skip
_DUNDERS = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__rsub__": "rsub", "__mul__": "mul",
            "__rmul__": "mul", "__truediv__": "div", "__rtruediv__": "div", "__matmul__": "matmul",
            "__getitem__": "index", "__setitem__": "index_put_", "__neg__": "neg", "__pow__": "pow"}  # fmt: skip


# ---- the profile ---------------------------------------------------------------------------------------------

_active: list = []  # the open profiles (nested profiles each record)


class profile:  # noqa: N801 - torch's name
    """Same as torch.autograd.profiler.profile: ``with profile() as prof:`` records the ops run inside;
    ``prof.key_averages().table(sort_by="self_cpu_time_total")`` summarises them, ``prof.events()`` lists
    them, ``prof.export_chrome_trace(path)`` writes a trace. CPU only (``use_cuda`` and friends are
    accepted and record nothing more); ``record_shapes`` keeps each op's input shapes."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False, custom_trace_id_callback=None):  # fmt: skip
        self.enabled = enabled
        self.record_shapes = record_shapes
        self._events: EventList = EventList()
        self._stack: list = []
        self._t0 = 0.0
        self._previous = None
        self._thread = threading.get_ident()

    def __enter__(self):
        if not self.enabled:
            return self
        if _active:
            raise RuntimeError("profiler is already enabled on this thread: profiles do not nest")
        _op_codes()
        self._t0 = time.perf_counter_ns()
        self._thread = threading.get_ident()
        _active.append(self)
        self._previous = sys.getprofile()
        sys.setprofile(self._trace)
        graph.observer = self._observe
        return self

    def __exit__(self, *exc) -> None:
        if not self.enabled or self not in _active:
            return
        sys.setprofile(self._previous)
        graph.observer = None
        _active.remove(self)
        now = self._now()
        while self._stack:  # calls still open (the profile closed inside them): end them here
            self._close(now)

    def _now(self) -> float:
        return (time.perf_counter_ns() - self._t0) / 1000.0

    def _open(self, name: str, key, args=None) -> None:
        shapes = None
        if self.record_shapes and args is not None:
            shapes = [list(a._shape) if hasattr(a, "_shape") else [] for a in args]
        ev = FunctionEvent(name, self._now(), self._thread, shapes)
        self._events.append(ev)
        self._stack.append((key, ev))

    def _close(self, now: float) -> None:
        _, ev = self._stack.pop()
        ev.end_us = now
        if self._stack:
            self._stack[-1][1].children_us += ev.cpu_time_total

    def _trace(self, frame, event: str, arg) -> None:
        if event == "call":
            op = _op_codes().get(frame.f_code)
            if op is None:
                return
            if type(op) is tuple:
                cell = frame.f_locals.get(op[0])
                op = op[1].get(id(cell))
                if op is None:
                    return
            args = None
            if self.record_shapes:
                code = frame.f_code
                args = [frame.f_locals.get(v) for v in code.co_varnames[: code.co_argcount]]
            self._open(op, frame, args)
        elif event == "return" and self._stack and self._stack[-1][0] is frame:
            self._close(self._now())

    def _observe(self, node, run: Callable):
        """The engine's call of one node, timed (``graph.observer``)."""
        name = str(node.name)
        self._open("autograd::engine::evaluate_function: " + name, None)
        self._open(name, None)
        try:
            return run()
        finally:
            now = self._now()
            self._close(now)
            self._close(now)

    def events(self) -> EventList:
        """Every recorded call, in the order they started."""
        return self._events

    function_events = property(events)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """Same as torch's: the events grouped by name (and input shapes when ``group_by_input_shape``)."""
        return self._events.key_averages(group_by_input_shape)

    def total_average(self) -> FunctionEventAvg:
        """All events summed."""
        return self._events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The profiled time, in microseconds."""
        return self._events.self_cpu_time_total

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        """``events().table(...)``."""
        return self._events.table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def __str__(self) -> str:
        """The events' table, as ``print(prof)`` shows it in torch."""
        return self._events.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace JSON file."""
        self._events.export_chrome_trace(path)


class record_function:  # noqa: N801 - torch's name
    """Same as torch.autograd.profiler.record_function: a named range in the open profile (a context manager or
    a decorator); outside a profile it does nothing."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self._prof = None

    def __enter__(self):
        if _active and _active[-1]._thread == threading.get_ident():
            self._prof = _active[-1]
            self._prof._open(self.name, self)
        return self

    def __exit__(self, *exc) -> None:
        prof, self._prof = self._prof, None
        if prof is not None:
            while prof._stack:  # ops left open inside the range end with it
                key = prof._stack[-1][0]
                prof._close(prof._now())
                if key is self:
                    break

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapper
