"""``DataParallel`` as torch has it on a machine without accelerators, which is every machine pyframe runs on:
torch's wrapper then holds the module and calls it on the caller's thread (``device_ids`` is empty), so scripts
that wrap unconditionally run unchanged and save ``module.``-prefixed checkpoints. For more cores or machines use
:class:`~pyframe.nn.parallel.DistributedDataParallel`."""

from __future__ import annotations

from typing import Any

from pyframe.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Same as torch.nn.DataParallel without CUDA: ``forward`` calls ``module``; ``device_ids`` is ``[]``.

    Args:
        module: the module to wrap; registered as the submodule ``module`` (state_dict keys ``module.*``).
        device_ids: accepted and unused, as in torch when no accelerator is present.
        output_device: likewise.
        dim: likewise.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps an nn.Module, got {type(module).__name__}")
        self.module = module
        self.device_ids: list[int] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """Same as torch.nn.parallel.data_parallel on a machine without accelerators: it raises, as torch's does there
    (the function form, unlike the ``DataParallel`` module, needs a device).

    Raises:
        RuntimeError: always; call ``module(*inputs)`` directly or wrap it in :class:`DataParallel`.
    """
    raise RuntimeError("device type could not be determined")
