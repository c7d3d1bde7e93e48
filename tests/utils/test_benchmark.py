"""pyframe.utils.benchmark: Timer runs the statement as often as it says, pins and restores the thread count,
and its Measurement statistics, repr and Compare table are torch's on the same raw times."""

from __future__ import annotations

import re

import pytest

import pyframe
from pyframe.utils import benchmark


def test_timeit_runs_the_statement_number_times_after_a_warmup():
    calls = []
    m = benchmark.Timer(stmt="f()", globals={"f": lambda: calls.append(1)}).timeit(300)
    assert len(calls) == 300 + 3  # warm-up of number // 100, then the measured runs
    assert m.number_per_run == 300 and len(m.raw_times) == 1 and m.times[0] == m.raw_times[0] / 300 > 0


def test_blocked_autorange_blocks_and_threads_restored():
    pyframe.set_num_threads(2)
    seen = []
    try:
        t = benchmark.Timer(stmt="f()", globals={"f": lambda: seen.append(pyframe.get_num_threads())}, num_threads=1)
        m = t.blocked_autorange(min_run_time=0.01)
        assert set(seen) == {1} and pyframe.get_num_threads() == 2  # pinned while measuring, restored after
    finally:
        pyframe.set_num_threads(1)
    assert sum(m.raw_times) >= 0.01 and all(r > 0 for r in m.raw_times)
    assert m.median > 0 and m.number_per_run >= 1 and len(m.times) == len(m.raw_times)


def test_torch_is_pyframe_in_the_statement_namespace():
    m = benchmark.Timer(stmt="torch.ones(2).sum()", setup="assert torch.__name__ == 'pyframe'").timeit(5)
    assert m.task_spec.stmt == "torch.ones(2).sum()"


def test_timer_errors():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        benchmark.Timer(stmt=lambda: None)
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        benchmark.Timer().repeat()
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        benchmark.Timer(global_setup="#include <x>")
    with pytest.raises(ValueError, match="num_threads"):
        benchmark.Timer(num_threads=0)


RAW = [2.1e-3, 2.0e-3, 2.4e-3, 1.9e-3, 2.2e-3, 5.0e-3, 2.05e-3]


def _strip_address(s: str) -> str:
    return re.sub(r"<\S+ object at 0x[0-9a-f]+>", "<Measurement>", s)


@pytest.mark.parametrize("raw", [RAW, RAW[:1], RAW[:3]], ids=["seven", "one", "three"])
def test_measurement_matches_torch(raw):
    tb = pytest.importorskip("torch.utils.benchmark")
    kw = dict(stmt="x @ x", setup="x = torch.ones(4, 4)", label="matmul", sub_label="4x4", description="d")
    t = tb.Measurement(number_per_run=100, raw_times=list(raw), task_spec=tb.TaskSpec(**kw))
    p = benchmark.Measurement(number_per_run=100, raw_times=list(raw), task_spec=benchmark.TaskSpec(**kw))
    assert _strip_address(repr(p)) == _strip_address(repr(t))
    for attr in ("median", "mean", "iqr", "significant_figures", "has_warnings", "title"):
        assert getattr(p, attr) == pytest.approx(getattr(t, attr)), attr
    others = [
        (benchmark, benchmark.TaskSpec(**{**kw, "description": "e"})),
        (tb, tb.TaskSpec(**{**kw, "description": "e"})),
    ]
    pm = [p, benchmark.Measurement(100, [r * 2 for r in raw], others[0][1])]
    tm = [t, tb.Measurement(100, [r * 2 for r in raw], others[1][1])]
    assert str(benchmark.Compare(pm)) == str(tb.Compare(tm))
