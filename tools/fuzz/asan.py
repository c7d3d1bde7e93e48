"""The AddressSanitizer build of pyframe's core for ``python -m tools.fuzz --asan``.

The cffi extension is compiled again with ``-fsanitize=address`` into ``build/asan`` (only when a core
source changed), and the walk's children load it in place of ``pyframe._core`` (see
``tools/fuzz/__init__.py``), with libasan preloaded into the Python interpreter, which is not itself
built with ASan. The core's caching allocator is compiled out under ASan, so a use after free is seen.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "asan"
FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer", "-g")


def build() -> Path:
    """The path of the ASan-built core, compiling it when it is missing or older than a source."""
    sources = sorted((ROOT / "core_c" / "src").glob("*.c"))
    inputs = [*sources, *sorted((ROOT / "core_c" / "src").glob("*.h")), ROOT / "core_c" / "include" / "pyframe_api.h"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in inputs) + repr(FLAGS).encode()).hexdigest()
    stamp = OUT / "sources.sha256"  # by content: a checkout or rebase can leave older mtimes behind
    built = sorted((OUT / "pyframe").glob("_core*.so"))
    if built and stamp.exists() and stamp.read_text() == digest:
        return built[0]
    sys.path.insert(0, str(ROOT))
    from build_core import make_builder

    print("fuzz: compiling the core with AddressSanitizer into build/asan ...", flush=True)
    make_builder([str(p) for p in sources], FLAGS).compile(tmpdir=str(OUT), verbose=False)
    stamp.write_text(digest)
    return sorted((OUT / "pyframe").glob("_core*.so"))[0]


def libasan() -> str:
    path = subprocess.run(["cc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not path or not Path(path).exists():
        raise RuntimeError("fuzz --asan: the C compiler has no libasan.so (install the compiler's ASan runtime)")
    return path


def asan_env() -> dict:
    """Environment for a child that runs pyframe over the ASan core. Leaks are not checked (CPython's
    own allocations would drown them); a huge allocation returns NULL (a MemoryError) instead of aborting."""
    return {
        "PYFRAME_FUZZ_CORE": str(build()),
        "LD_PRELOAD": libasan(),
        "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:abort_on_error=0",
    }
