"""Conformance can only go up: every entry of torch's op_db, module_db and optim_db must give the result
that expected_failures.toml lists for it (pass when it is not listed), and docs/compatibility.md must
show the table of that list. `python -m tests.conformance --update` rewrites both after a change."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")

from . import report  # noqa: E402


@pytest.fixture(scope="module")
def expected():
    return report.load_expected()


@pytest.mark.parametrize("db", report.DATABASES)
def test_results_match_the_list(db, expected):
    from . import modules, ops, optims

    results = {"ops": ops, "modules": modules, "optims": optims}[db].run()
    diffs = report.differences(db, results, expected)
    assert not diffs, f"{len(diffs)} {db} entries differ from expected_failures.toml:\n" + "\n".join(diffs)


def test_listed_categories_are_known(expected):
    from .convert import CATEGORIES, SCOPE

    for db in report.DATABASES:
        for eid, entry in expected[db].items():
            assert entry.get("category") in CATEGORIES[1:], (db, eid, entry)
            assert entry.get("reason"), f"{db}/{eid} has no reason"
            if entry["category"] == "out-of-scope":
                assert entry["reason"].split(":")[0] in SCOPE, f"{db}/{eid}: out of scope for no listed reason"


def test_docs_table_is_current(expected):
    from . import modules, ops, optims

    ids = {
        "ops": {eid: ops.namespace(op.name) for eid, op, _kind in ops.entries()},
        "modules": {eid: "torch.nn (modules)" for eid, _info in modules.entries()},
        "optims": {eid: "torch.optim" for eid, _info in optims.entries()},
    }
    want = report.table(report.from_expected(ids, expected))
    assert report.doc_block() == want, (
        "docs/compatibility.md's conformance table is stale: python -m tests.conformance --update"
    )


def test_a_disputed_gradient_is_settled_by_finite_differences():
    # torch's as_strided_scatter gradient ignores storage_offset (its own gradcheck fails): finite differences of
    # its forward tell the right gradient from torch's
    import torch

    from .ops import _finite_differences

    x = torch.arange(1.0, 10.0, dtype=torch.float64).reshape(3, 3).requires_grad_()
    src = torch.ones(2, 2, dtype=torch.float64)
    cot = torch.arange(9.0, dtype=torch.float64).reshape(3, 3)

    def fn(a, s):
        return torch.as_strided_scatter(a, s, (2, 2), (1, 2), storage_offset=1)

    class Sample:
        output_process_fn_grad = None

    (fd,) = _finite_differences(fn, (x, (src,), {}), Sample, [x], [cot])
    want = torch.tensor([[0.0, 0, 0], [0, 0, 5], [6, 7, 8]], dtype=torch.float64)
    torch.testing.assert_close(fd, want)
    (theirs,) = torch.autograd.grad(fn(x, src), x, cot)
    assert not torch.allclose(theirs, want)


def test_a_float32_result_as_close_to_float64_as_torchs_agrees():
    import torch

    from .ops import _as_accurate

    class Sample:
        def __init__(self, t):
            self.input, self.args, self.kwargs = t, (), {}

        def transform(self, f):
            return Sample(f(self.input))

    t = torch.tensor([1e8, 1.0, -1e8], dtype=torch.float32)
    pf = pytest.importorskip("pyframe")
    exact = float(t.double().sum())  # 1.0: float32 sums lose it one way or another
    near, far = pf.tensor(exact - 1.0), pf.tensor(exact + 64.0)
    assert _as_accurate(torch.sum, Sample(t), near, torch.sum(t))
    assert not _as_accurate(torch.sum, Sample(t), far, torch.sum(t))
