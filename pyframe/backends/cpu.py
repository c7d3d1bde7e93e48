"""torch.backends.cpu: the vector instruction set the kernels use."""

from __future__ import annotations

from pyframe._backend import gemm_path

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """Same as torch.backends.cpu.get_cpu_capability: ``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``, the GEMM path in
    use (``PYFRAME_GEMM`` can force a lower one)."""
    return {"avx512": "AVX512", "avx2": "AVX2"}.get(gemm_path(), "DEFAULT")
