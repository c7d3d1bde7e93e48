"""The hook-based spectral normalization that GAN code uses. Same as torch.nn.utils.spectral_norm and
torch.nn.utils.remove_spectral_norm: the module's ``<name>`` becomes ``<name>_orig`` (the trained parameter), two
buffers ``<name>_u`` and ``<name>_v`` hold the power iteration's vectors, and a forward pre-hook sets
``<name> = <name>_orig / sigma`` before every call, sigma the largest singular value estimated by
``n_power_iterations`` steps per call in training mode (none in eval). The parametrization form is
``nn.utils.parametrizations.spectral_norm``; like torch, pyframe keeps both."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe.nn import functional as F
from pyframe.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter, UninitializedParameter
from pyframe.ops import random
from pyframe.tensor import Tensor

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


class SpectralNorm:
    """The forward pre-hook (torch's class of the same name): which parameter, over which dim, how many power
    iteration steps per call and the ``eps`` of their normalizations."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """The weight as a matrix: dim ``self.dim`` first, the others flattened."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``<name>_orig / sigma``; the power iteration (when asked) updates the ``_u``/``_v`` buffers in place."""
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with _grad_mode.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(weight_mat.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(weight_mat.mv(v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()  # the buffers change in later calls; backward reads these
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Make ``<name>`` a plain parameter holding the current normalized weight."""
        with _grad_mode.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        """Install the reparametrization on ``module`` (what ``spectral_norm`` calls)."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None or absent")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying spectral normalization")  # fmt: skip
        if not -weight.ndim <= dim < max(weight.ndim, 1):
            raise IndexError(f"spectral_norm(): dim {dim} is out of range for a {weight.ndim}-d parameter")
        with _grad_mode.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(random.randn(h, dtype=weight.dtype), dim=0, eps=eps)
            v = F.normalize(random.randn(w, dtype=weight.dtype), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.data)  # a plain attribute until the first call replaces it
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:  # fmt: skip
    """Same as torch.nn.utils.spectral_norm: ``module.<name>`` divided by its spectral norm before every call
    (``dim`` defaults to 1 for the transposed convolutions, whose output channels are dim 1, and 0 otherwise).
    Returns the module."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Same as torch.nn.utils.remove_spectral_norm: ``<name>`` becomes a plain parameter again (holding the
    normalized weight), the buffers and the hook go."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
