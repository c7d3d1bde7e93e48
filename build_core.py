"""cffi build script for pyframe._core (API mode, out of line), run by setuptools.

The public header is the cdef: cffi reads the same file the compiler does.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent
CORE = ROOT / "core_c"
HEADER = CORE / "include" / "pyframe_api.h"


def _openmp_flags() -> list[str]:
    """-fopenmp when the compiler accepts it; a serial build otherwise."""
    if os.environ.get("PYFRAME_NO_OPENMP") == "1":
        return []
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "probe.c")
        src.write_text("#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n")
        probe = subprocess.run([cc, "-fopenmp", str(src), "-o", str(Path(tmp, "probe"))], capture_output=True)
    if probe.returncode != 0:
        print("pyframe: compiler lacks OpenMP, building the core serial", file=sys.stderr)
        return []
    return ["-fopenmp"]


def _up_to_date(obj: str, src: str, flags: str) -> bool:
    """Whether ``obj`` was compiled from ``src`` as it is now, with these flags: distutils recompiles every file of
    an extension whenever any of them changed, minutes of a one-file edit. An object counts only when it is newer
    than its source and every header of the core (a header edit rebuilds all), and the stamp beside it records the
    flags it was built with (the sanitizer and native builds share nothing with the plain one). The stamp is removed
    before a compile and written after it succeeds, so it never vouches for an object it did not see built."""
    try:
        fresh = os.path.getmtime(obj) > max(os.path.getmtime(src), *(h.stat().st_mtime for h in _HEADERS))
        return fresh and Path(obj + ".flags").read_text() == flags
    except OSError:
        return False


_HEADERS = sorted(CORE.glob("**/*.h"))


def _compile_in_parallel() -> None:
    """One compiler process per usable core for the core's sources: distutils compiles an extension's files one by
    one, and the core is some sixty files (a fresh `make demo` spent minutes here). Where distutils lacks the
    internals this relies on, it stays serial."""
    from concurrent.futures import ThreadPoolExecutor

    try:
        import distutils.ccompiler  # setuptools' copy (Python 3.12 has none of its own)
    except ImportError:
        return

    cls = distutils.ccompiler.CCompiler
    if getattr(cls.compile, "_pyframe_parallel", False) or not all(
        hasattr(cls, n) for n in ("_setup_compile", "_get_cc_args", "_compile")
    ):
        return
    jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    def compile(self, sources, output_dir=None, macros=None, include_dirs=None, debug=False, extra_preargs=None,
                extra_postargs=None, depends=None):  # fmt: skip
        macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs
        )
        cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)
        flags = "\n".join([*getattr(self, "compiler_so", []), *cc_args, *(extra_postargs or []), *pp_opts])
        todo = [(obj, *build[obj]) for obj in objects if obj in build]
        if not getattr(self, "force", False):
            todo = [t for t in todo if not _up_to_date(t[0], t[1], flags)]

        def one(obj: str, src: str, ext: str) -> None:
            Path(obj + ".flags").unlink(missing_ok=True)
            self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)
            Path(obj + ".flags").write_text(flags)

        with ThreadPoolExecutor(max(1, min(jobs, len(todo)))) as pool:
            for done in [pool.submit(one, *t) for t in todo]:
                done.result()  # a compiler error stops the build with its message
        return objects

    compile._pyframe_parallel = True
    cls.compile = compile


def make_builder(sources: list[str], extra: tuple[str, ...] = ()) -> FFI:
    """``extra``: more compile and link flags (the fuzzer's AddressSanitizer build passes -fsanitize=address)."""
    omp = _openmp_flags()
    native = ["-march=native"] if os.environ.get("PYFRAME_NATIVE") == "1" else []
    # No trapping math: the core reads no FP exception flags, and with traps gcc keeps every loop with a select
    # (pf_expf's range checks, NaN-propagating max) scalar in the AVX2 clones; exp, sigmoid and tanh over 1e7
    # float32 ran 6-7x slower than vectorized on a Zen 3. Results are the same bits (no contraction, no reordering).
    flags = ["-std=c11", "-O3", "-fno-math-errno", "-fno-trapping-math", "-Wall", "-Wextra"]
    builder = FFI()
    builder.cdef(HEADER.read_text())
    builder.set_source(
        "pyframe._core",
        '#include <stddef.h>\n#include <stdint.h>\n#include "pyframe_api.h"\n',
        sources=sources,
        include_dirs=[str(CORE / "include"), str(CORE / "src")],
        extra_compile_args=[*flags, *omp, *native, *extra],
        extra_link_args=[*omp, "-lm", *extra],
    )
    return builder


_compile_in_parallel()
# setuptools wants sources relative to setup.py's folder
ffibuilder = make_builder(sorted(str(p.relative_to(ROOT)) for p in (CORE / "src").glob("*.c")))

if __name__ == "__main__":
    # a development build in place: cffi compiles in a temporary folder, so absolute paths
    make_builder(sorted(str(p) for p in (CORE / "src").glob("*.c"))).compile(tmpdir=str(ROOT / "build" / "cffi"))
    for so in (ROOT / "build" / "cffi" / "pyframe").glob("_core*.so"):
        so.replace(ROOT / "pyframe" / so.name)
