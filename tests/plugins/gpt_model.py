"""The GPT of tests/compat/programs/gpt.py (its classes, without its training run), ported as a user would: only the
import lines change (``as_pyframe``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

from tests.compat.test_compat import as_pyframe

PROGRAM = Path(__file__).resolve().parents[1] / "compat" / "programs" / "gpt.py"


def gpt_module() -> types.ModuleType:
    """A module holding the program's ``GPT``, ``GPTConfig``, ``Block``, ... (defined afresh on each call)."""
    source = PROGRAM.read_text()
    source = source[: source.index("torch.manual_seed(1337)")]
    module = types.ModuleType("compat_gpt")
    module.__file__ = str(PROGRAM)
    sys.modules["compat_gpt"] = module
    exec(compile(as_pyframe(source), str(PROGRAM), "exec"), module.__dict__)
    return module


def make_gpt(**config):
    """A GPT built with ``GPTConfig(**config)`` (pyframe's RNG decides the initial weights)."""
    m = gpt_module()
    return m.GPT(m.GPTConfig(**config))
