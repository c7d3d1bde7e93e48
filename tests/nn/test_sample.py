"""grid_sample and affine_grid against torch: every mode, padding mode and align_corners in 2-d and 3-d,
float32 and float64, values and gradients to the input and the grid; gradchecks, strided inputs, the C core's
checks and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe._backend import ShapeError, check, lib
from tests._oracle import gc, leaf

torch = pytest.importorskip("torch")
TF = torch.nn.functional

CASES = [(nd, m, p, a) for nd, m, p, a in itertools.product((2, 3), ("bilinear", "nearest", "bicubic"),
         ("zeros", "border", "reflection"), (False, True)) if nd == 2 or m != "bicubic"]  # fmt: skip


def _case(rng, nd, dtype):
    shape, gshape = ((2, 3, 5, 6), (2, 4, 7, 2)) if nd == 2 else ((2, 3, 4, 5, 6), (2, 3, 4, 5, 3))
    # points up to 30% outside [-1, 1], so every padding mode matters
    return rng.standard_normal(shape).astype(dtype), rng.uniform(-1.3, 1.3, gshape).astype(dtype)


@pytest.mark.parametrize("nd, mode, padding_mode, align", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grid_sample_matches_torch(rng, nd, mode, padding_mode, align, dtype):
    x, g = _case(rng, nd, dtype)
    px, pg = pf.tensor(x, requires_grad=True), pf.tensor(g, requires_grad=True)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    out = F.grid_sample(px, pg, mode, padding_mode, align)
    tout = TF.grid_sample(tx, tg, mode, padding_mode, align)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    cot = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    out.backward(pf.tensor(cot))
    tout.backward(torch.tensor(cot))
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(pg.grad.numpy(), tg.grad.numpy(), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("mode, padding_mode, align", [("bilinear", "zeros", False), ("bicubic", "reflection", True),
                                                       ("bilinear", "border", True)])  # fmt: skip
def test_grid_sample_gradcheck(rng, mode, padding_mode, align):
    x = leaf(rng.standard_normal((1, 2, 4, 5)))
    g = leaf(rng.uniform(-0.9, 0.9, (1, 3, 2, 2)))  # away from the kinks of clipping and reflection
    gc(lambda x, g: F.grid_sample(x, g, mode, padding_mode, align), x, g)


def test_grid_sample_strided_inputs_and_unused_gradients(rng):
    x, g = _case(rng, 2, np.float64)
    px = pf.tensor(x.transpose(0, 1, 3, 2).copy()).transpose(2, 3)  # a non-contiguous view of the same values
    pg = pf.tensor(g[:, ::-1].copy()).flip(1)
    out = F.grid_sample(px, pg, align_corners=False)
    np.testing.assert_allclose(out.numpy(), TF.grid_sample(torch.tensor(x), torch.tensor(g), align_corners=False),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    pg = pf.tensor(g, requires_grad=True)  # only the grid needs a gradient
    F.grid_sample(px, pg, align_corners=True).sum().backward()
    tg = torch.tensor(g, requires_grad=True)
    TF.grid_sample(torch.tensor(x), tg, align_corners=True).sum().backward()
    np.testing.assert_allclose(pg.grad.numpy(), tg.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("size", [(2, 3, 5, 6), (2, 3, 4, 5, 6), (1, 1, 2, 4)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(rng, size, align):
    theta = rng.standard_normal((size[0], len(size) - 2, len(size) - 1))
    p, t = leaf(theta), torch.tensor(theta, requires_grad=True)
    out, tout = F.affine_grid(p, size, align), TF.affine_grid(t, size, align)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = rng.standard_normal(tuple(tout.shape))
    out.backward(pf.tensor(cot))
    tout.backward(torch.tensor(cot))
    np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_spatial_transformer_round_trip():
    """The identity transform samples the input back exactly (align_corners=False, pixel centres)."""
    x = pf.randn(2, 3, 5, 7)
    theta = pf.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2)
    out = F.grid_sample(x, F.affine_grid(theta, (2, 3, 5, 7), False), align_corners=False)
    np.testing.assert_allclose(out.numpy(), x.numpy(), rtol=1e-5, atol=1e-6)


def test_grid_sample_and_affine_grid_bad_input():
    x, g = pf.randn(1, 2, 4, 4), pf.rand(1, 3, 3, 2)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, g, mode="area")
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(x, g, padding_mode="wrap")
    with pytest.raises(ShapeError, match="size 2 in last dimension"):
        F.grid_sample(x, pf.rand(1, 3, 3, 3))
    with pytest.raises(ShapeError, match="same batch size"):
        F.grid_sample(x, pf.rand(2, 3, 3, 2))
    with pytest.raises(ValueError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(pf.randn(1, 2, 3, 3, 3), pf.rand(1, 2, 2, 2, 3), mode="bicubic")
    with pytest.raises(TypeError, match="same dtype"):
        F.grid_sample(x, g.double())
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(pf.randn(1, 3, 4), (1, 2, 4, 4))
    with pytest.raises(ValueError, match="non-zero, positive output size"):
        F.affine_grid(pf.randn(1, 2, 3), (1, 2, 0, 4))
    out = pf.empty(1, 2, 3, 4)  # the C core checks the shapes it is given
    with pytest.raises(ValueError, match="does not match grid"):
        check(lib.pf_grid_sample(x._d(), g._d(), out._d(), 0, 0, 0))
    with pytest.raises(ValueError, match="mode 5 or padding mode 0 is unknown"):
        check(lib.pf_grid_sample(x._d(), g._d(), pf.empty(1, 2, 3, 3)._d(), 5, 0, 0))
