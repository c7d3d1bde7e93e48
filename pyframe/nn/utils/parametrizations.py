"""Ready-made parametrizations built on :mod:`pyframe.nn.utils.parametrize`. Same as
torch.nn.utils.parametrizations: ``orthogonal``, ``weight_norm``, ``spectral_norm``.

``orthogonal`` has torch's three maps: ``"matrix_exp"`` and ``"cayley"`` of a skew-symmetric matrix
(``pyframe.linalg.matrix_exp`` and ``linalg.solve``) and ``"householder"`` (a product of reflections), with or
without trivialization, computed as torch's implementation does so the numbers agree. See docs/parametrize.md.
"""

from __future__ import annotations

import functools

from pyframe import _grad_mode, linalg
from pyframe.nn import functional as F
from pyframe.nn.modules.module import Module
from pyframe.nn.utils import parametrize
from pyframe.ops.creation import eye, zeros
from pyframe.ops.join import cat
from pyframe.ops.random import randn
from pyframe.tensor import Tensor

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


# ---- orthogonal ------------------------------------------------------------------------------------------

_MAPS = ("matrix_exp", "cayley", "householder")


def _diag(X: Tensor) -> Tensor:
    """The main diagonal (..., min(n, k)) of (..., n, k) matrices."""
    n, k = X.shape[-2], X.shape[-1]
    return (X * eye(n, k, dtype=X.dtype)).sum(-2).narrow(-1, 0, min(n, k))


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * (2.0**-52 if Q.dtype.itemsize >= 8 else 2.0**-23)
    return float((Q.mT @ Q - eye(k, dtype=Q.dtype)).abs().amax()) <= eps


def _make_orthogonal(A: Tensor) -> Tensor:
    """torch's _make_orthogonal: the Q of A = QR with R's diagonal made non-negative (A tall)."""
    Q, R = linalg.qr(A)
    return Q * _diag(R).sign().unsqueeze(-2)


class _Orthogonal(Module):
    """torch's _Orthogonal: maps a (..., n, k) tensor to a matrix with orthonormal columns (or rows)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            # n k - k (k - 1) / 2 parameters: the lower triangle, embedded in a square skew-symmetric matrix
            X = X.tril()
            if n != k:
                X = cat([X, zeros(*X.shape[:-1], n - k, dtype=X.dtype)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^-1, as torch computes it
                Id = eye(n, dtype=A.dtype)
                Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q.narrow(-1, 0, k)
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # X's diagonal holds the signs (1 or -1); torch casts it to int, so it is not differentiated
            with _grad_mode.no_grad():
                sign = _diag(X.detach()).to("int64").to(X.dtype)
            Q = Q * sign.unsqueeze(-2)
        if "base" in self._buffers and self._buffers["base"] is not None:
            Q = self._buffers["base"] @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {tuple(Q.shape)}."
            )
        with _grad_mode.no_grad():
            q = Q.detach()
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley parametrizations "
                        "when use_trivialization=False."
                    )
                # householder: the compact QR's reflectors, and R's signs on the diagonal (flipped where
                # geqrf made no reflection: forward's tau = 2 reflects there), as torch
                A, tau = linalg.geqrf(q)
                d = _diag(A).sign()
                d = d * (1.0 - 2.0 * (tau == 0.0).to(A.dtype))
                I_nk = eye(n, k, dtype=A.dtype)
                A = A * (1.0 - I_nk) + d.unsqueeze(-2) * I_nk
                return A.mT if transpose else A
            if n == k:
                base = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:  # complete Q to a square orthogonal matrix with random columns, as torch
                base = _make_orthogonal(cat([q, randn(*q.shape[:-2], n, n - k, dtype=q.dtype)], dim=-1))
            self.base = base
            # -I: householder(0) with diagonal -1 is then the identity, as torch
            return (-eye(Q.shape[-2], Q.shape[-1], dtype=Q.dtype)).expand(*Q.shape).contiguous()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:  # fmt: skip
    """Makes ``module.<name>`` (a matrix or batch of matrices) orthogonal. Same as torch's: ``orthogonal_map``
    is "matrix_exp" (default for square matrices), "cayley" or "householder" (default otherwise);
    ``use_trivialization`` keeps a ``base`` buffer so the map is evaluated around the current point. The
    tensor's current value is projected to the nearest orthogonal matrix (QR) at registration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(
            f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm ------------------------------------------------------------------------------------------


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    if dim == -1:
        return v.norm()
    dims = [d for d in range(v.ndim) if d != dim]
    return v.norm(2, dim=dims, keepdim=True) if dims else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def _weight_norm_compat_hook(name, module, state_dict, prefix, *args) -> None:
    g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
    if g_key in state_dict and v_key in state_dict:
        state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
        state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalization: ``weight = g * v / ||v||`` (norm over every dim but ``dim``; ``dim=None`` the
    whole tensor). Same as torch's: ``original0`` is g, ``original1`` is v; a checkpoint of the old
    ``weight_g``/``weight_v`` form loads too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module.register_load_state_dict_pre_hook(functools.partial(_weight_norm_compat_hook, name))
    return module


# ---- spectral_norm -----------------------------------------------------------------------------------------


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with _grad_mode.no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight.detach())
                h, w = weight_mat.shape
                u = zeros(h, dtype=weight.dtype).normal_(0, 1)
                v = zeros(w, dtype=weight.dtype).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
                self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with _grad_mode.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mT @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat @ v)
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:  # fmt: skip
    """Spectral normalization: ``weight / sigma(weight)``, sigma estimated by power iteration (buffers ``_u``
    and ``_v``, ``n_power_iterations`` steps on every access in training mode, none in eval). Same as
    torch's; ``dim`` defaults to 1 for ConvTranspose modules and 0 otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if parametrize.type_before_parametrizations(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
