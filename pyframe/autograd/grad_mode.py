"""Same as torch.autograd.grad_mode: the grad-mode context managers at torch's module path (they are
``pyframe.no_grad`` and friends)."""

from __future__ import annotations

from pyframe._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
