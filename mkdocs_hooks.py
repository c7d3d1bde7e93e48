"""MkDocs hooks for pyframe's documentation site (``hooks:`` in mkdocs.yml).

Pages that other parts of the project add as they land (``OPTIONAL_PAGES``) are named in the nav ahead of time; while
one does not exist its entry is dropped, so ``mkdocs build --strict`` passes before and after it lands. Any other
missing page stays in the nav and fails the strict build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

OPTIONAL_PAGES = {"linalg.md", "distributions.md", "reliability.md", "compatibility.md", "distributed.md", "data.md"}


def _prune(nav: list[Any], docs: Path) -> list[Any]:
    out = []
    for item in nav:
        if isinstance(item, dict):
            (title, value), *_ = item.items()
            if isinstance(value, list):
                value = _prune(value, docs)
                if value:
                    out.append({title: value})
            elif not (value in OPTIONAL_PAGES and not (docs / value).is_file()):
                out.append({title: value})
        elif not (item in OPTIONAL_PAGES and not (docs / item).is_file()):
            out.append(item)
    return out


def on_config(config: Any) -> Any:
    config["nav"] = _prune(config["nav"], Path(config["docs_dir"]))
    return config
