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
