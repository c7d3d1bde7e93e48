"""The parts of torch.backends that CPU training code reads: ``mps.is_available()`` is False and the
``cudnn`` flags may be set and read (they change nothing here)."""

from __future__ import annotations

from types import SimpleNamespace

__all__ = ["mps", "cuda", "cudnn"]


def _false(*args, **kwargs) -> bool:
    return False


mps = SimpleNamespace(is_available=_false, is_built=_false)
cuda = SimpleNamespace(is_built=_false, matmul=SimpleNamespace(allow_tf32=False))
cudnn = SimpleNamespace(is_available=_false, enabled=True, benchmark=False, deterministic=False, allow_tf32=True)
