"""lgamma, digamma, polygamma, mvlgamma, erfinv, i0 and torch.special's i0e, i1, i1e, ndtr, ndtri, log_ndtr, erfcx,
entr, xlog1py, zeta, the Bessel, Airy and modified Bessel K functions and the orthogonal polynomials
(pyframe/ops/special.py, core_c/src/special*.c), and frexp, ldexp, nextafter: values against torch over the branches
of each approximation, float32 and float64, and float64 gradients where torch has them (and digamma's poles,
erfinv's ends, the argument checks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

X = np.concatenate([np.linspace(-12, 12, 97), [0.0, 1e-3, 7.99, 8.0, 8.01, 30.0]])
CASES = [
    ("lgamma", X), ("digamma", X), ("erfinv", np.linspace(-0.999, 0.999, 41)), ("i0", X),
    ("special.i0e", X), ("special.i1", X), ("special.i1e", X), ("special.ndtr", X), ("special.log_ndtr", X),
    ("special.entr", np.abs(X)), ("special.spherical_bessel_j0", X), ("special.ndtri", np.linspace(0, 1, 61)),
    ("special.erfcx", np.concatenate([X, [-30.0, -26.0, -6.0, 49.0, 51.0, 1e8]])), ("special.airy_ai", X),
    ("special.bessel_j0", X), ("special.bessel_j1", X), ("special.bessel_y0", X), ("special.bessel_y1", X),
    ("special.modified_bessel_k0", X), ("special.modified_bessel_k1", X), ("special.scaled_modified_bessel_k0", X),
    ("special.scaled_modified_bessel_k1", X),
]  # fmt: skip
# torch differentiates none of these (nor its compositions log_ndtr, entr, spherical_bessel_j0)
NO_GRAD = {
    "special.log_ndtr", "special.entr", "special.spherical_bessel_j0", "special.airy_ai", "special.bessel_j0",
    "special.bessel_j1", "special.bessel_y0", "special.bessel_y1", "special.modified_bessel_k0",
    "special.modified_bessel_k1", "special.scaled_modified_bessel_k0", "special.scaled_modified_bessel_k1",
}  # fmt: skip


def _get(lib, name):
    for part in name.split("."):
        lib = getattr(lib, part)
    return lib


@pytest.mark.parametrize(("name", "x"), CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, x):
    for pdt, rtol, atol in ((pf.float64, 1e-12, 1e-12), (pf.float32, 2e-6, 1e-6)):
        xs = x.astype(np.float64 if pdt is pf.float64 else np.float32)
        ours = _get(pf, name)(pf.tensor(xs)).numpy()
        theirs = _get(torch, name)(torch.tensor(xs)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{name} {pdt}")
    if name in NO_GRAD:
        return
    keep = np.abs(x - np.round(x)) > 1e-3 if name in ("lgamma", "digamma") else np.ones(len(x), bool)
    if name == "special.ndtri":
        keep = (x > 0) & (x < 1)
    p = pf.tensor(x[keep], requires_grad=True)
    t = torch.tensor(x[keep], requires_grad=True)
    (gp,) = pf.autograd.grad(_get(pf, name)(p).sum(), p)
    (gt,) = torch.autograd.grad(_get(torch, name)(t).sum(), t)
    np.testing.assert_allclose(gp.numpy(), gt.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"{name} gradient")


def test_poles_and_ends():
    assert pf.digamma(pf.tensor([0.0, -0.0, -2.0])).tolist()[:2] == [-math.inf, math.inf]
    assert math.isnan(pf.digamma(pf.tensor([-2.0])).item())
    assert pf.erfinv(pf.tensor([-1.0, 1.0])).tolist() == [-math.inf, math.inf]
    assert math.isnan(pf.erfinv(pf.tensor([1.5])).item())
    assert pf.lgamma(pf.tensor([1.0, 2.0])).tolist() == [0.0, 0.0]
    t = pf.tensor([0.5, 1.5])
    assert t.lgamma_() is t


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_polygamma_matches_torch_with_gradients(n):
    x = np.concatenate([np.linspace(-5.5, 9.5, 31), [0.25, 20.0, 1e3]])
    for pdt in (np.float64, np.float32):
        ours, theirs = pf.polygamma(n, pf.tensor(x.astype(pdt))), torch.polygamma(n, torch.tensor(x.astype(pdt)))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5 if pdt is np.float32 else 1e-12)
    np.testing.assert_array_equal(pf.tensor(x).polygamma(n).numpy(), pf.special.polygamma(n, pf.tensor(x)).numpy())
    p, t = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (gp,) = pf.autograd.grad(pf.polygamma(n, p).sum(), p)
    (gt,) = torch.autograd.grad(torch.polygamma(n, t).sum(), t)
    np.testing.assert_allclose(gp.numpy(), gt.numpy(), rtol=1e-10)
    y = pf.tensor(x)
    assert y.polygamma_(n) is y
    np.testing.assert_allclose(y.numpy(), torch.polygamma(n, torch.tensor(x)).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="negative n"):
        pf.polygamma(-1, pf.tensor(x))


@pytest.mark.parametrize("p", [1, 3, 5])
def test_mvlgamma_matches_torch_and_checks_its_domain(p):
    x = np.linspace(p / 2 + 0.01, 9.0, 17)
    pt, tt = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = pf.mvlgamma(pt, p), torch.mvlgamma(tt, p)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    (gp,) = pf.autograd.grad(ours.sum(), pt)
    (gt,) = torch.autograd.grad(theirs.sum(), tt)
    np.testing.assert_allclose(gp.numpy(), gt.numpy(), rtol=1e-10)
    assert pf.special.multigammaln(pf.tensor(x), p).tolist() == ours.tolist()
    with pytest.raises(RuntimeError, match=r"greater than \(p-1\)/2"):
        pf.mvlgamma(pf.tensor([(p - 1) / 2]), p)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        pf.mvlgamma(pf.tensor(x), 0)


POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]  # fmt: skip


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials_match_torch(name):
    # every branch: |x| = 1, inside and outside [-1, 1], low and high degree (the trigonometric forms), n < 0,
    # non-integer n (truncated), NaN and infinite n, and the degrees past Hermite's limits
    x = np.array([-4.0, -1.0, -0.7, -0.2, 0.0, 0.3, 0.5, 0.9, 1.0, 1.5, 3.7644825])
    n = np.array([-2.0, 0.0, 1.0, 2.0, 3.5, 5.0, 7.0, 7.958866, 9.0, 12.0, 30.0, 200.0, 600.0, np.nan, np.inf])
    for pdt in (np.float64, np.float32):
        xs, ns = x.astype(pdt)[:, None], n.astype(pdt)[None, :]
        ours = getattr(pf.special, name)(pf.tensor(xs), pf.tensor(ns)).numpy()
        theirs = getattr(torch.special, name)(torch.tensor(xs), torch.tensor(ns)).numpy()
        rtol = 2e-6 if pdt is np.float32 else 1e-12
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-30, equal_nan=True, err_msg=f"{name} {pdt}")
    fn = getattr(pf.special, name)
    np.testing.assert_array_equal(fn(pf.tensor(x), n=3).numpy(), fn(pf.tensor(x), 3).numpy())


def test_zeta_matches_torch():
    x = np.array([1.0, 0.5, 1.5, 2.0, 3.0, 4.5, 10.0, 30.0])[:, None]
    q = np.array([-2.0, -1.5, 0.0, 0.1, 1.0, 2.5, 9.0, 50.0])[None, :]
    for pdt in (np.float64, np.float32):
        ours = pf.special.zeta(pf.tensor(x.astype(pdt)), pf.tensor(q.astype(pdt))).numpy()
        theirs = torch.special.zeta(torch.tensor(x.astype(pdt)), torch.tensor(q.astype(pdt))).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12 if pdt is np.float64 else 1e-6, equal_nan=True)
    assert pf.special.zeta(2.0, pf.tensor([1.0], dtype=pf.float64)).item() == pytest.approx(math.pi**2 / 6, rel=1e-15)


def test_frexp_ldexp_nextafter_match_torch():
    x = np.array([0.0, -0.0, 1.0, -3.5, 0.75, 1e-310, 1e38, np.inf, -np.inf, np.nan])
    for pdt in (np.float64, np.float32):
        m, e = pf.frexp(pf.tensor(x.astype(pdt)))
        tm, te = torch.frexp(torch.tensor(x.astype(pdt)))
        np.testing.assert_array_equal(m.numpy(), tm.numpy())
        np.testing.assert_array_equal(e.numpy(), te.numpy())
        assert e.dtype == pf.int32
        to = np.array([1.0, -1.0, 0.0, 5.0, 0.0, 0.0, np.inf, 0.0, 0.0, 1.0], dtype=pdt)
        ours = pf.nextafter(pf.tensor(x.astype(pdt)), pf.tensor(to)).numpy()
        np.testing.assert_array_equal(ours, torch.nextafter(torch.tensor(x.astype(pdt)), torch.tensor(to)).numpy())
    np.testing.assert_array_equal(pf.ldexp(pf.tensor([1.5, -2.0]), pf.tensor([3, -1])).numpy(), [12.0, -1.0])
    a = pf.tensor([0.3, 5.0], dtype=pf.float64, requires_grad=True)
    m, _ = a.frexp()
    (g,) = pf.autograd.grad(m.sum(), a)
    assert g.tolist() == [2.0, 0.125]  # 1 / 2**exponent
    with pytest.raises(TypeError, match="floating-point"):
        pf.frexp(pf.tensor([1, 2]))
    with pytest.raises(TypeError, match="float32 and float64"):
        pf.nextafter(pf.tensor([1, 2]), pf.tensor([1, 2]))
    with pytest.raises(TypeError, match="must be Tensor"):
        pf.ldexp(2, pf.tensor([1]))


# ---- igamma / igammac (special.gammainc / gammaincc) ---------------------------------------------------------
def _incomplete_gamma_grid(rng, n=400):
    """Shapes over every method's region (small a, the series, the continued fraction, Temme's a >= 20)."""
    a = np.concatenate([rng.uniform(0, 1, n), rng.uniform(0, 30, n), rng.uniform(20, 3000, n), [1e-9, 0.5, 1e5]])
    x = a * np.exp(rng.normal(0, 0.8, len(a)))
    x[::4] = rng.uniform(0, 50, len(x[::4]))
    return a, x


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_matches_torch(name):
    a, x = _incomplete_gamma_grid(np.random.default_rng(0))
    for pdt, tol in ((pf.float64, 1e-9), (pf.float32, 2e-6)):
        npdt = np.float64 if pdt is pf.float64 else np.float32
        pa, px = pf.tensor(a.astype(npdt)), pf.tensor(x.astype(npdt))
        theirs = getattr(torch, name)(torch.tensor(a.astype(npdt)), torch.tensor(x.astype(npdt))).numpy()
        special = {"igamma": "gammainc", "igammac": "gammaincc"}[name]
        out = pf.empty(0, dtype=pdt)
        for ours in (getattr(pf, name)(pa, px), getattr(pa, name)(px), getattr(pf.special, special)(pa, px),
                     getattr(pa.clone(), name + "_")(px), getattr(pf, name)(pa, px, out=out)):  # fmt: skip
            assert ours.dtype is pdt
            np.testing.assert_allclose(ours.numpy(), theirs, rtol=tol, atol=tol, err_msg=f"{name} {pdt}")


def test_incomplete_gamma_closed_forms():
    # P(1, x) = 1 - e^-x, P(1/2, x) = erf(sqrt(x)), and for an integer a = n the Poisson sum
    # Q(n, x) = e^-x sum_{k < n} x^k / k!; n = 200 near x = n is Temme's region, n = 15 the fraction's
    x = np.array([1e-6, 0.3, 1.0, 4.0, 30.0])
    np.testing.assert_allclose(pf.igamma(pf.ones(5, dtype=pf.float64), pf.tensor(x)).numpy(), -np.expm1(-x), 1e-14)
    erf = np.array([math.erf(math.sqrt(v)) for v in x])
    np.testing.assert_allclose(pf.igamma(pf.full((5,), 0.5, dtype=pf.float64), pf.tensor(x)).numpy(), erf, 1e-14)
    for n, xs in ((200, [150.0, 190.0, 200.0, 215.0, 260.0]), (15, [20.0, 40.0, 90.0])):
        ref = [math.fsum(math.exp(k * math.log(v) - v - math.lgamma(k + 1)) for k in range(n)) for v in xs]
        ours = pf.igammac(pf.full((len(xs),), float(n), dtype=pf.float64), pf.tensor(xs)).numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-12)
        lower = pf.igamma(pf.full((len(xs),), float(n), dtype=pf.float64), pf.tensor(xs)).numpy()
        np.testing.assert_allclose(lower + ours, 1.0, rtol=1e-14)


def test_incomplete_gamma_edges_and_half_dtypes_match_torch():
    a = [-1.0, 0, 0, 1, 1, 2, math.inf, math.inf, 1, math.nan, 0, 2, 3]
    x = [1.0, 0, 1, 0, -1, math.inf, 1, math.inf, math.nan, 1, -1, 0, 1e-300]
    for name in ("igamma", "igammac"):
        ours = getattr(pf, name)(pf.tensor(a, dtype=pf.float64), pf.tensor(x, dtype=pf.float64)).numpy()
        theirs = getattr(torch, name)(torch.tensor(a, dtype=torch.float64), torch.tensor(x, dtype=torch.float64))
        np.testing.assert_array_equal(ours, theirs.numpy())
        for pdt, tdt in ((pf.float16, torch.float16), (pf.bfloat16, torch.bfloat16)):
            sa, sx = [0.5, 2.0, 3.0, 10.0, 40.0], [0.3, 1.0, 5.0, 12.0, 38.0]
            ours = getattr(pf, name)(pf.tensor(sa, dtype=pdt), pf.tensor(sx, dtype=pdt))
            theirs = getattr(torch, name)(torch.tensor(sa, dtype=tdt), torch.tensor(sx, dtype=tdt))
            assert ours.dtype is pdt
            np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
    # an integer tensor beside a floating one is promoted, as torch's
    mixed = pf.igamma(pf.tensor([2, 3]), pf.tensor([1.5, 2.5]))
    assert mixed.dtype is pf.float32
    theirs = torch.igamma(torch.tensor([2, 3]), torch.tensor([1.5, 2.5]))
    np.testing.assert_allclose(mixed.numpy(), theirs.numpy(), 2e-6)


def test_incomplete_gamma_gradient_is_torchs():
    a = np.array([0.5, 2.0, 7.5, 30.0, 250.0])
    x = np.array([0.2, 3.0, 6.0, 33.0, 240.0])
    for name in ("igamma", "igammac"):
        p, t = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yp, yt = getattr(pf, name)(pf.tensor(a), p), getattr(torch, name)(torch.tensor(a), t)
        (gp,) = pf.autograd.grad(yp.sum(), p, create_graph=True)
        (gt,) = torch.autograd.grad(yt.sum(), t, create_graph=True)
        np.testing.assert_allclose(gp.detach().numpy(), gt.detach().numpy(), rtol=1e-10)
        (ggp,) = pf.autograd.grad(gp.sum(), p)  # differentiable again, as torch's
        (ggt,) = torch.autograd.grad(gt.sum(), t)
        np.testing.assert_allclose(ggp.numpy(), ggt.numpy(), rtol=1e-9)
        fn = getattr(pf, name)
        assert pf.autograd.gradcheck(lambda v, fn=fn: fn(pf.tensor(a), v), (pf.tensor(x, requires_grad=True),))
        # torch has no derivative with respect to the shape: asking for it raises as torch's does
        pa = pf.tensor(a, requires_grad=True)
        with pytest.raises(NotImplementedError, match=f"derivative for '{name}: input' is not implemented"):
            getattr(pf, name)(pa, pf.tensor(x)).sum().backward()


def test_incomplete_gamma_argument_checks():
    with pytest.raises(NotImplementedError, match="floating-point"):
        pf.igamma(pf.tensor([2, 3]), pf.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="floating-point"):
        pf.igammac(pf.tensor([True]), pf.tensor([False]))
    with pytest.raises(TypeError, match="both Tensors"):
        pf.igamma(pf.tensor([2.0]), 3.0)
    with pytest.raises(TypeError, match="both Tensors"):
        pf.special.gammaincc(2.0, pf.tensor([3.0]))
    with pytest.raises(RuntimeError):  # in place cannot grow self to the broadcast shape
        pf.tensor([2.0]).igamma_(pf.tensor([[3.0, 4.0]]))
