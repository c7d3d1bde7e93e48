"""The only module that touches cffi: the compiled core, its error codes, memory and descriptors."""

from __future__ import annotations

import os

from pyframe._version import __version__

# libgomp's idle threads spin about 3 ms (GOMP_SPINCOUNT=300000) before sleeping; with a
# second busy process on the machine those spinning threads take the cores its work
# needs, and both collapse (100x measured). A bounded spin still bridges the gaps between
# a training step's kernels. libgomp reads the variable once, when it is loaded by the
# import below, so it is set for that moment only: child processes see the user's
# environment, and a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
_SPIN = "GOMP_SPINCOUNT"
_set_spin = _SPIN not in os.environ and "OMP_WAIT_POLICY" not in os.environ
if _set_spin:
    os.environ[_SPIN] = "20000"
try:
    from pyframe._core import ffi, lib
finally:
    if _set_spin:
        del os.environ[_SPIN]

__all__ = [
    "set_num_threads",
    "get_num_threads",
    "show_config",
    "ffi",
    "lib",
    "check",
    "alloc",
    "desc",
    "ShapeError",
    "NULL",
    "empty_cache",
    "memory_cached",
    "memory_stats",
    "reset_peak_memory",
]

NULL = ffi.NULL  # for optional pointer arguments


class ShapeError(ValueError, RuntimeError):
    """Shapes that do not fit together: a ValueError, and a RuntimeError as PyTorch raises."""


_ERRORS = {
    lib.PF_ERR_VALUE: ShapeError,
    lib.PF_ERR_INDEX: IndexError,
    lib.PF_ERR_TYPE: TypeError,
    lib.PF_ERR_RUNTIME: RuntimeError,
    lib.PF_ERR_NOMEM: MemoryError,
}


def raise_error(rc: int) -> None:
    raise _ERRORS.get(rc, RuntimeError)(ffi.string(lib.pf_last_error()).decode())


def check(rc: int) -> None:
    """Turn a core return code into the matching Python exception."""
    if rc:
        raise_error(rc)


# Small blocks come from Python's allocator (a third of pf_alloc + ffi.gc's cost per call);
# kernels need no alignment. Large ones from pf_alloc: 64-byte aligned, huge pages.
SMALL_BYTES = 1 << 16
alloc_small = ffi.new_allocator(should_clear_after_alloc=False)
alloc_large = ffi.new_allocator(lib.pf_alloc, lib.pf_free, should_clear_after_alloc=False)


def alloc(nbytes: int):
    """Uninitialised tensor memory, freed when the returned cdata dies."""
    try:
        return (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
    except MemoryError:
        raise MemoryError(f"cannot allocate {nbytes} bytes for a tensor") from None


def empty_cache() -> None:
    """Return the memory of freed tensors that the caching allocator keeps for reuse to the system.
    Same intent as torch.cuda.empty_cache, for pyframe's CPU cache (bounded by ``memory_cached()[1]``)."""
    lib.pf_empty_cache()


def memory_cached() -> tuple[int, int]:
    """(bytes the caching allocator holds now, the most it will hold: 1 GiB or 1/16 of RAM)."""
    return int(lib.pf_cached_bytes()), int(lib.pf_cache_limit())


def memory_stats() -> tuple[int, int, int]:
    """(bytes of tensor memory in use, the most in use since ``reset_peak_memory()``, bytes cached): the
    core allocator's counters, in its blocks' size-class bytes. Blocks under 64 KiB come from Python's
    allocator and are not counted; under AddressSanitizer (no cache) all three are 0."""
    out = ffi.new("int64_t[3]")
    lib.pf_memory_stats(out)
    return int(out[0]), int(out[1]), int(out[2])


def reset_peak_memory() -> None:
    """Start ``memory_stats()``'s peak afresh from the bytes in use now."""
    lib.pf_reset_peak()


def desc(ptr, code: int, shape: tuple, strides: tuple):
    """A pf_tensor descriptor for the given data pointer and element strides."""
    try:
        return ffi.new("pf_tensor *", (ptr, code, len(shape), shape, strides))
    except OverflowError:  # the one place shapes and strides enter the core: name them, not cffi's int64
        raise ValueError(
            f"shape {list(shape)} with strides {list(strides)} does not fit the core's int64 sizes"
        ) from None


# a bad PYFRAME_GEMM: raised by ``import pyframe`` once the package is complete (the CLI prints it instead)
startup_error: ValueError | None = None


def _select_gemm() -> None:
    global startup_error
    path = os.environ.get("PYFRAME_GEMM", "auto")
    if lib.pf_gemm_select(path.encode()):  # name the variable, not a shape
        reason = ffi.string(lib.pf_last_error()).decode()
        startup_error = ValueError(f"environment variable PYFRAME_GEMM={path!r}: {reason} (or unset it)")


_select_gemm()


MAX_THREADS = 1024


def set_num_threads(n: int) -> None:
    """Threads used by the C core's parallel kernels (1 to 1024). Same as torch.set_num_threads, which
    accepts any count; past 1024 kernels' per-thread scratch would not fit, so pyframe refuses it here."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_threads expects a positive int, got {n!r}")
    if n > MAX_THREADS:
        raise ValueError(f"set_num_threads: at most {MAX_THREADS} threads (this machine has {os.cpu_count()} "
                         f"cores), got {n}")  # fmt: skip
    lib.pf_set_num_threads(n)


def get_num_threads() -> int:
    """Same as torch.get_num_threads: the number of OpenMP threads the C core's kernels use."""
    return lib.pf_get_num_threads()


def openmp_enabled() -> bool:
    """Whether the C core was built with OpenMP (its kernels parallel)."""
    return bool(lib.pf_openmp_enabled())


def gemm_path() -> str:
    """The GEMM kernel set in use: "avx512", "avx2" or "portable"."""
    return ffi.string(lib.pf_gemm_path()).decode()


def show_config() -> str:
    """Prints and returns the build and runtime configuration of the C core."""
    paths = [p for p in ("avx512", "avx2", "portable") if lib.pf_cpu_supports(p.encode())]
    text = "\n".join([
        f"pyframe {__version__}",
        f"  compiler: {ffi.string(lib.pf_compiler()).decode()}",
        f"  OpenMP: {'on' if lib.pf_openmp_enabled() else 'off'}",
        f"  threads: {lib.pf_get_num_threads()}",
        f"  GEMM path: {ffi.string(lib.pf_gemm_path()).decode()} (this CPU supports: {', '.join(paths)}; "
        "set PYFRAME_GEMM to force one)",
    ])  # fmt: skip
    print(text)
    return text
