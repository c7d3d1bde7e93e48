"""docs/onnx.md's table of exportable operations, generated from the exporters' registry
(tests/onnx/test_ops.py checks the page against it, and rewrites it when run as a script)."""

from __future__ import annotations

from pyframe.onnx import exporter  # noqa: F401 - importing it registers every exporter
from pyframe.onnx._registry import ENTRIES

__all__ = ["markdown_table"]


def markdown_table() -> str:
    rows = ["| operation | pyframe functions | Tensor methods | modules | ONNX operators |", "|---|---|---|---|---|"]
    for e in sorted(ENTRIES, key=lambda e: e.name.lower()):
        cells = [", ".join(f"`{x}`" for x in xs) for xs in (e.functions, e.methods, e.modules)]
        rows.append(f"| {e.name} | {' | '.join(cells)} | {e.onnx} |")
    return "\n".join(rows) + "\n"
