"""The op profiler: which ops ran (names, counts), self and total time, record_function ranges, backward nodes,
tables, Chrome traces and torch.profiler's schedule."""

import json

import pytest

import pyframe
from pyframe.autograd.profiler import profile, record_function


def _counts(prof) -> dict:
    return {e.key: e.count for e in prof.key_averages()}


def test_records_the_ops_that_ran():
    a, b = pyframe.ones(4, 4), pyframe.ones(4, 4)
    with profile() as prof:
        for _ in range(3):
            c = pyframe.mm(a, b)
        d = (c + 1).relu()
    counts = _counts(prof)
    assert counts["aten::mm"] == 3 and counts["aten::add"] == 1 and counts["aten::relu"] == 1
    assert d.shape == (4, 4)
    _ = pyframe.mm(a, b)  # after the profile closed: nothing recorded
    assert _counts(prof)["aten::mm"] == 3


def test_self_time_excludes_nested_ops():
    lin = pyframe.nn.Linear(8, 4)
    x = pyframe.randn(2, 8)
    with profile() as prof, record_function("my_block"):
        lin(x)
    events = {e.key: e for e in prof.key_averages()}
    block = events["my_block"]
    assert block.count == 1 and block.self_cpu_time_total <= block.cpu_time_total
    inner = sum(e.cpu_time_total for e in prof.events() if e.key != "my_block" and e.start_us >= 0)
    assert block.cpu_time_total > 0 and inner > 0
    lin_ev = events["aten::linear"]
    assert lin_ev.self_cpu_time_total <= lin_ev.cpu_time_total
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in prof.events()))


def test_backward_nodes_are_profiled():
    x = pyframe.randn(3, requires_grad=True)
    with profile() as prof:
        (x * 2).sum().backward()
    counts = _counts(prof)
    assert counts["MulBackward0"] == 1 and counts["autograd::engine::evaluate_function: SumBackward0"] == 1


def test_table_and_trace(tmp_path):
    with profile(record_shapes=True) as prof:
        pyframe.ones(2, 3).exp()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    assert "aten::exp" in table and "Self CPU time total" in table and "# of Calls" in table
    assert "[2, 3]" in prof.key_averages(group_by_input_shape=True).table()
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="speed")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]]
    assert "aten::exp" in names


def test_record_function_outside_a_profile_and_as_decorator():
    with record_function("nothing"):
        pyframe.ones(1)

    @record_function("decorated")
    def f():
        return pyframe.ones(2) * 3

    with profile() as prof:
        f()
    assert _counts(prof)["decorated"] == 1


def test_torch_profiler_schedule():
    traces = []
    sched = pyframe.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    acts = [sched(i) for i in range(6)]
    A = pyframe.profiler.ProfilerAction
    assert acts == [A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    with pyframe.profiler.profile(
        activities=[pyframe.profiler.ProfilerActivity.CPU], schedule=sched, on_trace_ready=traces.append
    ) as prof:
        for step in range(6):
            for _ in range(step + 1):
                pyframe.ones(2).neg()
            prof.step()
    assert len(traces) == 1 and _counts(traces[0])["aten::neg"] == 3 + 4  # steps 2 and 3 recorded


def test_names_match_torch():
    torch = pytest.importorskip("torch")
    got = {}
    for lib in (torch, pyframe):
        a = lib.ones(3, 3)
        with lib.autograd.profiler.profile() as prof:
            lib.mm(a, a).relu().sum()
        got[lib.__name__] = {k: v for k, v in _counts(prof).items() if k in ("aten::mm", "aten::relu", "aten::sum")}
    assert got["torch"] == got["pyframe"]
