"""pyframe: a deep-learning framework with a C core. Names mirror PyTorch's."""

from __future__ import annotations

from pyframe import _backend
from pyframe.tensor import Size, Tensor  # first: the ops modules build on it

from pyframe import _tensor_methods  # noqa: I001
from pyframe._backend import ShapeError
from pyframe._dtype import bool_ as bool  # noqa: A001 - PyTorch's name
from pyframe._dtype import dtype, float16, float32, float64, int32, int64
from pyframe._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from pyframe.factory import *  # noqa: F403
from pyframe.ops import *  # noqa: F403

__version__ = "0.1.0"

half, float, double, long, int = float16, float32, float64, int64, int32  # noqa: A001
_tensor_methods.bind()


def set_num_threads(n: int) -> None:
    """Threads used by the C core's parallel kernels (at least 1)."""
    if not isinstance(n, type(1)) or n < 1:
        raise ValueError(f"set_num_threads expects a positive int, got {n!r}")
    _backend.lib.pf_set_num_threads(n)


def get_num_threads() -> int:
    return _backend.lib.pf_get_num_threads()


def show_config() -> str:
    """Prints and returns the build and runtime configuration of the C core."""
    lib, ffi = _backend.lib, _backend.ffi
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
