"""docs/compatibility.md's generated name lists tell the truth: every name listed under a
pyframe namespace exists there (tools/compat_table.py writes the lists from torch and pyframe)."""

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
SECTION = re.compile(r"^### `(pyframe[\w.]*)`\n\n(.*?)\n", re.M | re.S)


def resolve(path: str):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


SECTIONS = SECTION.findall(DOC.read_text())


def test_the_generated_lists_are_there():
    assert len(SECTIONS) >= 15


@pytest.mark.parametrize(("namespace", "names"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_every_listed_name_exists(namespace, names):
    obj = resolve(namespace)
    missing = [n for n in re.findall(r"`(\w+)`", names) if not hasattr(obj, n)]
    assert not missing, f"{namespace} lacks {missing}: rerun tools/compat_table.py"
