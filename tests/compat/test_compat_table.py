"""docs/compatibility.md's generated name lists tell the truth: every name listed under a
pyframe namespace exists there (tools/compat_table.py writes the lists from torch and pyframe)."""

import re

import pytest

from tools.compat_table import DOC, resolve

SECTION = re.compile(r"^### `(pyframe[\w.]*)`\n\n(.*?)\n", re.M | re.S)


SECTIONS = SECTION.findall(DOC.read_text())


def test_the_generated_lists_are_there():
    assert len(SECTIONS) >= 15


@pytest.mark.parametrize(("namespace", "names"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_every_listed_name_exists(namespace, names):
    obj = resolve(namespace, "pyframe")
    assert obj is not None, f"{namespace} does not exist"
    missing = [n for n in re.findall(r"`(\w+)`", names) if not hasattr(obj, n)]
    assert not missing, f"{namespace} lacks {missing}: rerun tools/compat_table.py"
