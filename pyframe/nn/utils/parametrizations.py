"""Ready-made parametrizations built on :mod:`pyframe.nn.utils.parametrize`. Same as
torch.nn.utils.parametrizations: ``orthogonal``, ``weight_norm``, ``spectral_norm``.

``orthogonal`` supports two of torch's maps, both written in pyframe ops so autograd differentiates
them: ``"matrix_exp"`` (scaling and squaring of a Taylor polynomial) and ``"householder"`` (a product of
reflections). ``"cayley"`` needs a linear solve the C core does not have yet. See docs/parametrize.md.
"""

from __future__ import annotations

import functools
import math

from pyframe import _grad_mode
from pyframe.factory import eye, ones, randn, zeros
from pyframe.nn import functional as F
from pyframe.nn.init import _orthonormal_rows
from pyframe.nn.modules.module import Module
from pyframe.nn.utils import parametrize
from pyframe.ops.elementwise import tril
from pyframe.ops.shape import cat
from pyframe.tensor import Tensor

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


# ---- helpers in pyframe ops -----------------------------------------------------------------------------


def _eye_like(n: int, x: Tensor) -> Tensor:
    return eye(n, dtype=x.dtype)


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) of a square matrix (or batch) by scaling and squaring a Taylor polynomial (degree 14 in float64,
    9 otherwise)."""
    n = A.shape[-1]
    with _grad_mode.no_grad():
        norm = float(A.detach().abs().sum(-1).amax()) if A.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    X = A / (2.0**s) if s else A
    Id = _eye_like(n, A)
    result = Id + X
    term = X
    # ||X|| <= 1/2: the remainder after degree d is below 0.5^(d+1)/(d+1)!, under the dtype's epsilon
    degree = 14 if A.dtype.itemsize >= 8 else 9
    for k in range(2, degree + 1):
        term = (term @ X) / float(k)
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product in pyframe ops: H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i the
    i-th column of A below the diagonal with a 1 on it. A: (..., n, k), tau: (..., k); returns (..., n, k)."""
    n, k = A.shape[-2], A.shape[-1]
    Id = _eye_like(n, A)
    Q = None
    below = tril(ones(n, k, dtype=A.dtype), -1)
    for i in range(k):
        v = A.select(-1, i) * below[:, i] + Id[:, i]  # (..., n)
        H = Id - tau.select(-1, i).unsqueeze(-1).unsqueeze(-1) * (v.unsqueeze(-1) * v.unsqueeze(-2))
        Q = H if Q is None else Q @ H
    return Q.narrow(-1, 0, k)


def _orthonormal_columns(a: Tensor) -> Tensor:
    """The Q of a QR decomposition with R's diagonal positive (unique for full-rank inputs), per matrix of
    a batch: Gram-Schmidt with reorthogonalisation in pyframe ops (nn.init's)."""
    flat = a.reshape(-1, a.shape[-2], a.shape[-1])
    qs = [_orthonormal_rows(m.mT.contiguous()).mT for m in flat]
    return cat([q.unsqueeze(0) for q in qs]).reshape(a.shape)


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * (2.0**-52 if Q.dtype.itemsize >= 8 else 2.0**-23)
    return float((Q.mT @ Q - eye(k, dtype=Q.dtype)).abs().amax()) <= eps


# ---- orthogonal ------------------------------------------------------------------------------------------

_MAPS = ("matrix_exp", "cayley", "householder")  # names torch accepts; cayley is refused below


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
        if self.orthogonal_map == "matrix_exp":
            X = X.tril()
            if n != k:
                X = cat([X, zeros(*X.shape[:-1], n - k, dtype=X.dtype)], dim=-1)
            Q = matrix_exp(X - X.mT)
            if n != k:
                Q = Q.narrow(-1, 0, k)
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            with _grad_mode.no_grad():
                diag = (X.detach() * eye(n, k, dtype=X.dtype)).sum(-2)
                sign = diag.to("int64").to(X.dtype)  # 1 or -1: not differentiated
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
            if n < k:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                raise NotImplementedError(
                    "assigning to an orthogonal parametrization with use_trivialization=False needs a Householder "
                    "QR, which pyframe's C core does not have yet; keep use_trivialization=True"
                )
            if n == k:
                base = q.clone() if _is_orthogonal(q) else _orthonormal_columns(q)
            else:
                base = _orthonormal_columns(cat([q, randn(*q.shape[:-2], n, n - k, dtype=q.dtype)], dim=-1))
            self.base = base.to(Q.dtype)
            return (-eye(Q.shape[-2], Q.shape[-1], dtype=Q.dtype)).expand(*Q.shape).contiguous()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:  # fmt: skip
    """Makes ``module.<name>`` (a matrix or batch of matrices) orthogonal. Same as torch's: ``orthogonal_map``
    is "matrix_exp" (default for square matrices) or "householder" (default otherwise; "cayley" is refused);
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
    if orthogonal_map == "householder" and not use_trivialization:
        raise NotImplementedError(
            'orthogonal_map="householder" with use_trivialization=False starts from a Householder QR of the '
            "weight, which pyframe's C core does not have yet; keep use_trivialization=True"
        )
    if orthogonal_map == "cayley":
        raise NotImplementedError(
            'orthogonal_map="cayley" needs a linear solve, which pyframe\'s C core does not have yet; '
            'use "matrix_exp" or "householder"'
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
