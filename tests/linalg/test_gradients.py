"""Gradients of pyframe.linalg: float64 finite-difference checks, and torch's gradients where it is installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import pyframe
import pyframe.linalg as LA
from pyframe.autograd import gradcheck


def leaf(a):
    return pyframe.tensor(np.array(a, dtype=np.float64), requires_grad=True)


def _sym(X):
    return X + X.mT


def _spd(X):
    return X @ X.mT + 4.0 * pyframe.eye(X.shape[-1], dtype=X.dtype)


def _eigh_parts(X):
    L, V = LA.eigh(_sym(X))
    return L, V * V, V[..., 0:1] * V[..., 1:2]


def _svd_parts(A):
    U, S, Vh = LA.svd(A, full_matrices=False)
    return S, U * U, Vh * Vh, U[..., 0:1] * Vh[..., 0:1, :]


def _svd_full_product(A):
    U, _, Vh = LA.svd(A)
    return U @ Vh


def _draw(rng, kind: str, shape: tuple) -> np.ndarray:
    """kind "n": standard normal; "wc": well conditioned (normal + 3 I); "big": 4 x normal."""
    a = rng.standard_normal(shape)
    return a + 3 * np.eye(shape[-1]) if kind == "wc" else (4 * a if kind == "big" else a)


SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])

# (id, function of the inputs, inputs as (kind, shape)); eigenvectors and singular vectors enter through
# sign-invariant expressions (squares, products), since their sign is a free choice
CASES = [
    ("solve", lambda A, B: LA.solve(A, B), [("wc", (2, 3, 3)), ("n", (2, 3, 2))]),
    ("solve_left_false", lambda A, B: LA.solve(A, B, left=False), [("wc", (3, 3)), ("n", (2, 3))]),
    ("solve_triangular_upper", lambda A, B: LA.solve_triangular(A, B, upper=True), [("wc", (3, 3)), ("n", (3, 2))]),
    ("solve_triangular_unit_right", lambda A, B: LA.solve_triangular(A, B, upper=False, left=False, unitriangular=True),
     [("n", (3, 3)), ("n", (2, 3))]),
    ("inv", LA.inv, [("wc", (2, 3, 3))]),
    ("det", LA.det, [("n", (2, 3, 3))]),
    ("det_singular", LA.det, [("singular", ())]),
    ("slogdet", lambda A: LA.slogdet(A).logabsdet, [("n", (2, 3, 3))]),
    ("cholesky", lambda X: LA.cholesky(_spd(X)), [("n", (2, 3, 3))]),
    ("cholesky_upper", lambda X: LA.cholesky(_spd(X), upper=True), [("n", (3, 3))]),
    ("qr_tall", LA.qr, [("n", (4, 3))]),
    ("qr_wide", LA.qr, [("n", (2, 3, 5))]),
    ("qr_square_complete", lambda A: LA.qr(A, mode="complete"), [("n", (3, 3))]),
    ("eigh", _eigh_parts, [("n", (2, 4, 4))]),
    ("eigvalsh", lambda X: LA.eigvalsh(_sym(X)), [("n", (4, 4))]),
    ("svd_tall", _svd_parts, [("n", (5, 3))]),
    ("svd_wide", _svd_parts, [("n", (2, 3, 5))]),
    ("svd_full_square", _svd_full_product, [("n", (3, 3))]),
    ("svdvals", LA.svdvals, [("n", (4, 3))]),
    ("matrix_exp", LA.matrix_exp, [("n", (2, 3, 3))]),
    ("matrix_exp_large_norm", LA.matrix_exp, [("big", (3, 3))]),
    ("vector_norm", lambda x: LA.vector_norm(x, 3, dim=-1), [("n", (2, 4))]),
    ("matrix_norm_nuc", lambda x: LA.matrix_norm(x, "nuc"), [("n", (3, 4))]),
    ("matrix_norm_2", lambda x: LA.matrix_norm(x, 2), [("n", (3, 4))]),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradcheck(case, rng):
    _, fn, specs = case
    inputs = [leaf(SINGULAR if kind == "singular" else _draw(rng, kind, shape)) for kind, shape in specs]
    assert gradcheck(fn, inputs)


def test_second_derivative_through_det_matches_torch(rng):
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    A = leaf(a)
    (g,) = pyframe.autograd.grad(LA.det(A), [A], create_graph=True)
    (gg,) = pyframe.autograd.grad((g * g).sum(), [A])
    assert gg.shape == (3, 3) and bool(pyframe.isfinite(gg).all())
    torch = pytest.importorskip("torch")
    At = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.linalg.det(At), [At], create_graph=True)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), [At])
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-9)


def test_qr_backward_refuses_as_torch():
    A = leaf(np.random.default_rng(0).standard_normal((4, 3)))
    with pytest.raises(RuntimeError, match="mode='r'"):
        LA.qr(A, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="complete"):
        LA.qr(A, mode="complete").Q.sum().backward()


# ---- against torch -------------------------------------------------------------------------------------------


TORCH_CASES = [
    ("det", lambda la, A: la.det(A).sum(), (3, 3)),
    ("slogdet", lambda la, A: la.slogdet(A)[1].sum(), (2, 3, 3)),
    ("inv", lambda la, A: (la.inv(A) ** 2).sum(), (2, 3, 3)),
    ("solve", lambda la, A: la.solve(A, A.sum(-1)).sum(), (3, 3)),
    ("cholesky", lambda la, A: (la.cholesky(A @ A.mT + 3 * eye_like(A)) ** 3).sum(), (2, 3, 3)),
    ("qr", lambda la, A: (la.qr(A)[0] ** 3).sum() + (la.qr(A)[1] ** 3).sum(), (4, 3)),
    ("eigh", lambda la, A: (la.eigh(A + A.mT)[0] ** 3).sum() + (la.eigh(A + A.mT)[1] ** 4).sum(), (4, 4)),
    ("svd", lambda la, A: sum((x**4).sum() for x in la.svd(A, full_matrices=False)), (4, 3)),
    ("matrix_exp", lambda la, A: (la.matrix_exp(A) ** 2).sum(), (3, 3)),
    ("matrix_norm_2", lambda la, A: la.matrix_norm(A, 2), (3, 4)),
]  # fmt: skip


def eye_like(A):
    """The identity in A's own library: pyframe's or torch's."""
    return (pyframe if isinstance(A, pyframe.Tensor) else sys.modules["torch"]).eye(A.shape[-1], dtype=A.dtype)


@pytest.mark.parametrize("case", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_gradients_match_torch(case, rng):
    torch = pytest.importorskip("torch")
    _, loss, shape = case
    a = rng.standard_normal(shape) + (2 * np.eye(shape[-1]) if shape[-1] == shape[-2] else 0)
    A = leaf(a)
    loss(LA, A).backward()
    At = torch.tensor(a, requires_grad=True)
    loss(torch.linalg, At).backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_det_gradient_of_singular_matrix_is_the_adjugate():
    # d det / dA is the cofactor matrix, also where det = 0 (torch 2.13 returns zeros for this exactly
    # singular input; the finite-difference check above agrees with pyframe)
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    A = leaf(a)
    LA.det(A).backward()
    cof = np.array(
        [[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(3)] for i in range(3)]
    )
    np.testing.assert_allclose(A.grad.numpy(), cof, atol=1e-12)


@pytest.mark.parametrize(
    "fn, shape",
    [
        (LA.pinv, (4, 3)),
        (lambda A: LA.lstsq(A, A[..., :2] * 2.0 + 1.0).solution, (5, 3)),
        (LA.cond, (3, 3)),
        (lambda A: LA.multi_dot([A, A.mT, A]), (3, 2)),
        (lambda X: pyframe.logdet(_spd(X)), (3, 3)),
    ],
    ids=["pinv", "lstsq", "cond", "multi_dot", "logdet"],
)
def test_gradcheck_derived(fn, shape, rng):
    assert gradcheck(fn, [leaf(rng.standard_normal(shape))])
