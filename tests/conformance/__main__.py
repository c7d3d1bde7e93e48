"""`python -m tests.conformance [--update] [--only REGEX] [--show CATEGORY]`: run the harness, print the table.

`--update` rewrites expected_failures.toml and the generated table of docs/compatibility.md from the run;
`--only` limits the run to entry ids matching a regular expression (no update then); `--show` lists the
entries of one category with their reasons.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

os.environ.setdefault("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.conformance")
    ap.add_argument("--update", action="store_true", help="rewrite expected_failures.toml and the docs table")
    ap.add_argument("--only", help="entry ids matching this regular expression")
    ap.add_argument("--show", help="list the entries of this category (or 'all' for every non-passing one)")
    args = ap.parse_args(argv)

    from . import modules, ops, optims, report

    select = re.compile(args.only).search if args.only else None
    start = time.perf_counter()
    results = {"ops": ops.run(select), "modules": modules.run(select), "optims": optims.run(select)}
    took = time.perf_counter() - start
    expected = report.load_expected()
    print(report.table(results))
    print(f"\n({sum(len(r) for r in results.values())} entries in {took:.1f} s)")
    if args.show:
        for db in report.DATABASES:
            for eid, (_ns, cat, reason) in results[db].items():
                if cat == args.show or (args.show == "all" and cat != "pass"):
                    print(f"{cat:22} {eid:45} {reason}")
    diffs = [f"{db}/{d}" for db in report.DATABASES for d in report.differences(db, results[db], expected)]
    if args.update and not select:
        report.write_expected(results, expected)
        report.write_doc(report.table(results))
        print(f"wrote {report.EXPECTED} and the table in {report.DOC}")
        return 0
    if diffs and not select:
        print(f"\n{len(diffs)} entries differ from expected_failures.toml:", *diffs[:60], sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
