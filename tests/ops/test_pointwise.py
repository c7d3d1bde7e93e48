"""Pointwise compositions (addcmul, lerp, fmod, nan_to_num, ...) and products (outer, addmm,
tensordot, kron, diag, diagonal, trace, cross, cdist) against torch: values and gradients."""

import numpy as np
import pytest

import pyframe

RNG = np.random.default_rng(3)


def arr(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


# name: (function of the library and the inputs, input arrays)
CASES = {
    "addcmul": (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), (arr(3, 4), arr(3, 4), arr(4))),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c, value=-2), (arr(3, 4), arr(3, 4), arr(3, 4, lo=0.5))),
    "lerp_scalar": (lambda L, a, b: L.lerp(a, b, 0.3), (arr(3, 4), arr(3, 4))),
    "lerp_tensor": (lambda L, a, b, w: L.lerp(a, b, w), (arr(3, 4), arr(3, 4), arr(4, lo=0, hi=1))),
    "clamp_min": (lambda L, a: L.clamp_min(a, 0.1), (arr(3, 4),)),
    "clamp_max": (lambda L, a: a.clamp_max(0.1), (arr(3, 4),)),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b), (arr(3, 4), arr(3, 4))),
    "hypot": (lambda L, a, b: L.hypot(a, b), (arr(3, 4, lo=0.5), arr(3, 4, lo=0.5))),
    "fmod": (lambda L, a: L.fmod(a, 0.7), (arr(3, 4, lo=-3, hi=3),)),
    "fmod_neg": (lambda L, a: L.fmod(a, -0.7), (arr(3, 4, lo=-3, hi=3),)),
    "frac": (lambda L, a: L.frac(a), (arr(3, 4, lo=-3, hi=3),)),
    "xlogy": (lambda L, a, b: L.xlogy(a, b), (arr(3, 4), arr(3, 4, lo=0.5))),
    "outer": (lambda L, a, b: L.outer(a, b), (arr(3), arr(4))),
    "mv": (lambda L, a, b: a.mv(b), (arr(3, 4), arr(4))),
    "addmm": (lambda L, a, b, c: L.addmm(a, b, c, beta=0.5, alpha=2.0), (arr(4), arr(3, 5), arr(5, 4))),
    "addmv": (lambda L, a, b, c: L.addmv(a, b, c), (arr(3), arr(3, 5), arr(5))),
    "baddbmm": (lambda L, a, b, c: L.baddbmm(a, b, c, alpha=0.5), (arr(2, 3, 4), arr(2, 3, 5), arr(2, 5, 4))),
    "addbmm": (lambda L, a, b, c: L.addbmm(a, b, c), (arr(3, 4), arr(2, 3, 5), arr(2, 5, 4))),
    "inner": (lambda L, a, b: L.inner(a, b), (arr(2, 3, 4), arr(5, 4))),
    "kron": (lambda L, a, b: L.kron(a, b), (arr(2, 3), arr(3, 2))),
    "kron_mixed": (lambda L, a, b: L.kron(a, b), (arr(3), arr(2, 2))),
    "tensordot_int": (lambda L, a, b: L.tensordot(a, b, dims=2), (arr(2, 3, 4), arr(3, 4, 5))),
    "tensordot_lists": (lambda L, a, b: L.tensordot(a, b, dims=([0, 2], [2, 0])), (arr(2, 3, 4), arr(4, 5, 2))),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), (arr(4, 3), arr(4, 3))),
    "cdist2": (lambda L, a, b: L.cdist(a, b), (arr(2, 4, 3), arr(2, 5, 3))),
    "cdist1": (lambda L, a, b: L.cdist(a, b, p=1.0), (arr(4, 3), arr(5, 3))),
    "cdist3": (lambda L, a, b: L.cdist(a, b, p=3.0), (arr(4, 3), arr(5, 3))),
    "diag_vec": (lambda L, a: L.diag(a), (arr(4),)),
    "diag_vec_up": (lambda L, a: L.diag(a, 2), (arr(3),)),
    "diag_vec_down": (lambda L, a: L.diag(a, -1), (arr(3),)),
    "diag_mat": (lambda L, a: L.diag(a, 1), (arr(4, 5),)),
    "diagonal": (lambda L, a: a.diagonal(offset=-1, dim1=0, dim2=2), (arr(4, 2, 3),)),
    "trace": (lambda L, a: L.trace(a), (arr(4, 3),)),
}


def _run(lib, name, dtype):
    fn, arrays = CASES[name]
    inputs = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]
    out = fn(lib, *inputs)
    weights = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=getattr(lib, dtype))
    (out * weights).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in inputs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_values_and_gradients(name):
    torch = pytest.importorskip("torch")
    out, grads = _run(pyframe, name, "float64")
    tout, tgrads = _run(torch, name, "float64")
    np.testing.assert_allclose(out, tout, rtol=1e-10, atol=1e-12)
    for g, tg in zip(grads, tgrads, strict=True):
        np.testing.assert_allclose(g, tg, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_gradients_by_finite_differences(name):
    fn, arrays = CASES[name]
    inputs = tuple(pyframe.tensor(a, dtype=pyframe.float64, requires_grad=True) for a in arrays)
    assert pyframe.autograd.gradcheck(lambda *xs: fn(pyframe, *xs), inputs)


def test_inplace_forms_and_aliases():
    x = pyframe.tensor([1.0, 2.0])
    assert x.lerp_(pyframe.tensor([3.0, 6.0]), 0.5) is x and x.tolist() == [2.0, 4.0]
    x.addcmul_(x, x, value=0.5)
    assert x.tolist() == [4.0, 12.0]
    x.clamp_max_(5.0)
    assert x.tolist() == [4.0, 5.0]
    assert pyframe.arctan2 is pyframe.atan2 and pyframe.absolute is pyframe.abs
    assert pyframe.nan_to_num(pyframe.tensor([float("nan"), float("inf"), -float("inf")]), posinf=9.0).tolist() == [
        0.0, 9.0, -3.4028234663852886e38,
    ]  # fmt: skip
    assert pyframe.logaddexp(pyframe.tensor([-float("inf")]), pyframe.tensor([-float("inf")])).item() == -float("inf")
    assert pyframe.diag(pyframe.tensor([1.0, -1.0]), 1).tolist() == [[0, 1, 0], [0, 0, -1], [0, 0, 0]]


def test_bad_input_is_refused_clearly():
    with pytest.raises(RuntimeError, match="mv\\(\\): vec must be a 1-D"):
        pyframe.mv(pyframe.zeros(2, 2), pyframe.zeros(2, 2))
    with pytest.raises(RuntimeError, match="size 3"):
        pyframe.cross(pyframe.zeros(2, 4), pyframe.zeros(2, 4))
    with pytest.raises(RuntimeError, match="do not match"):
        pyframe.tensordot(pyframe.zeros(2, 3), pyframe.zeros(2, 3), dims=([1], [1 - 1]))
    with pytest.raises(RuntimeError, match="same dimension"):
        pyframe.zeros(2, 2).diagonal(dim1=1, dim2=1)
    with pytest.raises(RuntimeError, match="1-D or 2-D"):
        pyframe.diag(pyframe.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="integer division"):
        pyframe.addcdiv(pyframe.zeros(2), pyframe.tensor([1, 2]), pyframe.tensor([1, 2]))


def _f64(*values):
    return pyframe.tensor(list(values), dtype=pyframe.float64)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("hypot", (_f64(0.5, 1.0),)), ("xlogy", (_f64(1.5, 2.0),)), ("addcmul", (_f64(0.5, 1.0), _f64(2.0, 3.0))),
        ("lerp", (_f64(3.0, 1.0), 0.25)), ("fmod", (0.7,)), ("clamp_max", (2.0,)), ("frac", ()), ("nan_to_num", ()),
    ],
)  # fmt: skip
def test_composed_inplace_forms_backpropagate_like_out_of_place(name, args):
    """The in-place form overwrites a tensor its own graph may have saved (hypot squares its
    input): backward must still give the out-of-place gradients."""
    grads = []
    for inplace in (False, True):
        w = pyframe.tensor([1.5, 2.5], dtype=pyframe.float64, requires_grad=True)
        h = w * 2
        out = getattr(h, name + "_")(*args) if inplace else getattr(pyframe, name)(h, *args)
        (out * out).sum().backward()
        grads.append(w.grad.numpy().copy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
