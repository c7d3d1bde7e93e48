"""Helpers shared by the families: parameter broadcasting, probabilities <-> logits, the cached ``lazy_property``,
and packing the lower triangle of a matrix into a vector (the names and behaviour of torch.distributions.utils)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any, Final

from pyframe import ops as T
from pyframe._dtype import finfo, get_default_dtype
from pyframe._grad_mode import enable_grad
from pyframe.nn import functional as F
from pyframe.tensor import Size, Tensor

euler_constant: Final[float] = 0.57721566490153286060

__all__ = [
    "broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property", "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]  # fmt: skip


def broadcast_all(*values: Tensor | Number) -> tuple[Tensor, ...]:
    """Broadcast tensors and numbers together. Numbers become tensors of the first tensor's dtype (the default
    dtype when every value is a number), then everything is broadcast as ``pyframe.broadcast_tensors`` does.

    Raises:
        ValueError: if a value is neither a tensor nor a real number.
    """
    for v in values:
        if not isinstance(v, Tensor) and (not isinstance(v, Number) or isinstance(v, complex)):
            raise ValueError(
                "Input arguments must all be instances of Number, Tensor or objects implementing "
                f"__torch_function__; got {type(v).__name__}."
            )
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), get_default_dtype())
    return T.broadcast_tensors(*(v if isinstance(v, Tensor) else T.tensor(v, dtype=dtype) for v in values))


def _standard_normal(shape: Sequence[int], dtype: Any = None) -> Tensor:
    return T.empty(tuple(shape), dtype=dtype).normal_()


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    return value.reshape(value.shape[: value.dim() - dim] + (-1,)).sum(-1) if dim else value


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: the sigmoid of log-odds (``is_binary``), else the softmax over the last
    dimension of unnormalised log-probabilities."""
    return T.sigmoid(logits) if is_binary else F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp probabilities into ``[eps, 1 - eps]`` for the dtype's machine epsilon, so that logs stay finite.

    Example::

        >>> clamp_probs(pyframe.tensor([0.0, 0.5, 1.0]))
        tensor([1.1921e-07, 5.0000e-01, 1.0000e+00])
    """
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (clamped first): log-odds ``log p - log1p(-p)`` when ``is_binary``, else
    ``log p``."""
    p = clamp_probs(probs)
    return T.log(p) - T.log1p(-p) if is_binary else T.log(p)


class lazy_property:
    """A property computed on first access (with gradients recorded, as a parameter would be) and then stored on
    the instance, so that later reads are plain attribute reads. Distributions with two parameterisations
    (``probs``/``logits``) store the one they were given and derive the other this way."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.__name__] = value
        return value


def _tril_mask(n: int, diag: int) -> Tensor:
    i = T.arange(n)
    return i.view(-1, 1) + diag >= i


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle of a (batch of) ``D x D`` matrix, up to diagonal ``diag``, as a vector in row order."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: a (batch of) lower triangular ``D x D`` matrix whose triangle up
    to diagonal ``diag`` is ``vec`` in row order.

    Raises:
        ValueError: if ``vec``'s last size is not the size of such a triangle.
    """
    m = vec.shape[-1]
    count = lambda k: sum(max(0, min(k, i + diag + 1)) for i in range(k))  # noqa: E731 - triangle size of k x k
    n = next(k for k in range(m + abs(diag) + 2) if count(k) >= m)
    if count(n) != m:
        raise ValueError(
            f"The size of last dimension is {m} which cannot be expressed as the lower triangular part of a "
            "square D x D matrix."
        )
    mat = vec.new_zeros(vec.shape[:-1] + Size((n, n)))
    mat[..., _tril_mask(n, diag)] = vec
    return mat
