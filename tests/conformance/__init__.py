"""Conformance with torch's own test databases: op_db, module_db and optim_db.

`python -m tests.conformance` prints the table by namespace (`make conformance`); `--update` rewrites
`expected_failures.toml` and the generated table in docs/compatibility.md from a fresh run.
`test_conformance.py` runs the same harness in `make test` and fails on any entry whose result differs
from the list: conformance only goes up.
"""
