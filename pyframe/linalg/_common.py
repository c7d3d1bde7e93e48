"""What every pyframe.linalg function shares: LinAlgError, argument checks and the C call."""

from __future__ import annotations

from pyframe import _dtype
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.creation import eye
from pyframe.tensor import Tensor


class LinAlgError(RuntimeError):
    """Same as torch.linalg.LinAlgError: a singular or non positive-definite matrix, NaN or Inf in the input,
    or an iteration that did not converge. The message names the batch element that failed."""


def call(fn: str, rc: int) -> None:
    """Raise the exception a core return code stands for; linear-algebra failures as LinAlgError."""
    if rc == lib.PF_ERR_LINALG:
        raise LinAlgError(f"{fn}: {ffi.string(lib.pf_last_error()).decode()}")
    check(rc)


def check_matrix(A, fn: str, square: bool = True, name: str = "A") -> None:
    """A float32/float64 tensor of at least 2 dims (square matrices when ``square``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn}: {name} must be a Tensor, got {type(A).__name__}")
    if A.dtype not in (_dtype.float32, _dtype.float64):
        raise TypeError(f"{fn}: {name} must be float32 or float64, got {A.dtype.name}")
    if A.ndim < 2:
        raise ShapeError(f"{fn}: {name} must have at least 2 dimensions, got shape {list(A.shape)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise ShapeError(
            f"{fn}: {name} must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]}"
        )


def check_same_dtype(A: Tensor, B, fn: str) -> None:
    if not isinstance(B, Tensor):
        raise TypeError(f"{fn}: B must be a Tensor, got {type(B).__name__}")
    if B.dtype is not A.dtype:
        raise TypeError(
            f"{fn}: expected A and B to have the same dtype, but got A of {A.dtype.name} and B of {B.dtype.name}"
        )


def identity_like(A: Tensor) -> Tensor:
    return eye(A.shape[-1], dtype=A.dtype)


def diag_embed(v: Tensor) -> Tensor:
    """(..., n) -> (..., n, n) with v on the diagonal, differentiable."""
    return ew.mul(v.unsqueeze(-1), eye(v.shape[-1], dtype=v.dtype))


def diagonal(X: Tensor) -> Tensor:
    """The main diagonal (..., n) of square (..., n, n) matrices, differentiable."""
    return rd.sum(ew.mul(X, eye(X.shape[-1], dtype=X.dtype)), -1)
