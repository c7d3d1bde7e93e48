"""torch.backends.cuda: CUDA is not built in; the matmul precision and attention-kernel switches programs set are
recorded and read back (pyframe's CPU attention has one fused kernel and the composed path, chosen by its inputs)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace

__all__ = ["is_built", "matmul", "enable_flash_sdp", "flash_sdp_enabled", "enable_math_sdp", "math_sdp_enabled",
           "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled",
           "sdp_kernel", "preferred_linalg_library"]  # fmt: skip

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)  # fmt: skip
_sdp = {"flash": True, "math": True, "mem_efficient": True, "cudnn": True}


def is_built() -> bool:
    """Same as torch.backends.cuda.is_built: False (a CPU build)."""
    return False


def enable_flash_sdp(enabled: bool) -> None:
    """Same as torch.backends.cuda.enable_flash_sdp: recorded."""
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """Same as torch.backends.cuda.flash_sdp_enabled."""
    return _sdp["flash"]


def enable_math_sdp(enabled: bool) -> None:
    """Same as torch.backends.cuda.enable_math_sdp: recorded."""
    _sdp["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    """Same as torch.backends.cuda.math_sdp_enabled."""
    return _sdp["math"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Same as torch.backends.cuda.enable_mem_efficient_sdp: recorded."""
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Same as torch.backends.cuda.mem_efficient_sdp_enabled."""
    return _sdp["mem_efficient"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Same as torch.backends.cuda.enable_cudnn_sdp: recorded."""
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """Same as torch.backends.cuda.cudnn_sdp_enabled."""
    return _sdp["cudnn"]


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> Iterator[None]:  # fmt: skip
    """Same as torch.backends.cuda.sdp_kernel (deprecated there for ``nn.attention.sdpa_kernel``): the switches
    set for the block and restored after it."""
    saved = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(saved)


def preferred_linalg_library(backend=None) -> str:
    """Same call as torch.backends.cuda.preferred_linalg_library: pyframe's linear algebra is its own C code on
    the CPU, so the answer is always ``"default"``."""
    return "default"
