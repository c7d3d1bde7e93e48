"""The legacy hook-based weight normalization. Same as torch.nn.utils.weight_norm and
torch.nn.utils.remove_weight_norm: the module gets parameters ``<name>_g`` and ``<name>_v`` and a
forward pre-hook that recomputes ``<name> = g * v / ||v||`` before every call. Torch deprecates it in
favour of ``nn.utils.parametrizations.weight_norm``; like torch, pyframe keeps both (without the warning)."""

from __future__ import annotations

from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.nn.utils.parametrizations import _norm_except_dim
from pyframe.tensor import Tensor

__all__ = ["weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook: holds which parameter it computes and over which dim."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Same as torch.nn.utils.weight_norm (``dim=None``: the norm of the whole tensor)."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    weight = getattr(module, name, None)
    if not isinstance(weight, Parameter):
        raise ValueError(f"weight_norm(): module has no parameter named '{name}'")
    dim = -1 if dim is None else dim
    if not -weight.ndim <= dim < max(weight.ndim, 1) and dim != -1:
        raise IndexError(f"weight_norm(): dim {dim} is out of range for a {weight.ndim}-d parameter")
    fn = WeightNorm(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Same as torch.nn.utils.remove_weight_norm: ``<name>`` becomes a plain parameter again."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            weight = hook.compute_weight(module).detach()
            delattr(module, name)
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.register_parameter(name, Parameter(weight))
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
