"""The optional C extension ``pyframe_mpi._direct`` (``direct.c``): a checked all-reduce in one C call.

It is compiled when the plugin is installed, against the MPI of the compiler wrapper found then (``setup.py``), and
used only when that is the very library mpi4py started in this process: ``attach`` asks the extension's MPI whether
it is initialised (a second copy of the library never is), whether mpi4py's communicator has the size mpi4py says,
and for its library version, which must equal mpi4py's. Otherwise (not built, another MPI, an ABI mpi4py cannot
share, ``PYFRAME_MPI_DIRECT=0``) the backend makes the same calls through mpi4py, and ``why_not()`` says why.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["attach", "why_not", "CODES", "OPS"]

# numpy dtype name -> direct.h's PF_* dtype code; reduce op name -> PF_* op code
CODES = {"float32": 1, "float64": 2, "int8": 3, "uint8": 4, "int16": 5, "int32": 6, "int64": 7}
OPS = {"sum": 1, "product": 2, "max": 3, "min": 4, "band": 5, "bor": 6, "bxor": 7}

_why: str | None = "not attached yet"


def why_not() -> str | None:
    """Why the C path is not used in this process (None when it is)."""
    return _why


def attach(MPI, comm) -> tuple[Any, Any] | None:
    """``(ffi, lib)`` of the extension when it drives the MPI mpi4py started (checked on ``comm``), else None."""
    global _why
    if os.environ.get("PYFRAME_MPI_DIRECT", "1") == "0":
        _why = "PYFRAME_MPI_DIRECT=0"
        return None
    try:
        from pyframe_mpi._direct import ffi, lib
    except ImportError as e:
        _why = f"the extension was not built when the plugin was installed ({e})"
        return None
    version = ffi.new("char[]", 8192)
    if not lib.pf_mpi_attached(MPI._handleof(comm), comm.Get_size(), version, len(version)):
        _why = "the extension's MPI library is not the one mpi4py started"
        return None
    mine = ffi.string(version).decode(errors="replace").rstrip("\0 \n")
    if mine != MPI.Get_library_version().rstrip("\0 \n"):  # (mpi4py's may keep the C string's NUL)
        _why = "the extension was built against another MPI library version than mpi4py's"
        return None
    _why = None
    return ffi, lib
