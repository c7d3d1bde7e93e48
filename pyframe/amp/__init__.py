"""Same as torch.amp: automatic mixed precision on the CPU. ``autocast`` runs torch's lists of ops in
bfloat16/float16 or float32 (see ``pyframe.amp.autocast_mode``), ``GradScaler`` scales the loss and unscales the
gradients (``pyframe.amp.grad_scaler``). ``pyframe.cpu.amp`` and ``pyframe.cuda.amp`` are torch's older paths
to the same classes; CUDA autocast and CUDA scalers disable themselves with a warning, as torch's without a GPU."""

from __future__ import annotations

from pyframe.amp import autocast_mode, grad_scaler
from pyframe.amp.autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from pyframe.amp.grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler", "is_autocast_available", "autocast_mode",
           "grad_scaler"]  # fmt: skip
